// Unit tests of typed identities, legacy owner migration, key-use rights, audit quoting and the
// aggregated key-use audit (no daemon).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "audit.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pqcd/server/config.h"
#include "pqcd/server/identity.h"

namespace pqcd::server {
namespace {

TEST(TypedIdentity, AcceptsTheTypedFormsOnly) {
  for (const char* ok :
       {"tls:dns:client-a", "tls:dns:a.example.org", "tls:uri:spiffe://example.org/a", "unix:uid:0",
        "unix:uid:4294967295", "unix:user:alice", "unix:user:svc_1.x-y"}) {
    EXPECT_TRUE(ValidateTypedIdentity(ok).ok()) << ok;
  }
  for (const char* bad :
       {"ops", "local", "anonymous", "", "tls:dns:", "tls:uri:", "tls:dns:a b", "tls:ftp:x",
        "unix:uid:", "unix:uid:-1", "unix:uid:4294967296", "unix:uid:12a",
        "unix:user:", "unix:user:a/b", "unix:user:a b", "TLS:dns:x"}) {
    EXPECT_FALSE(ValidateTypedIdentity(bad).ok()) << bad;
  }
  EXPECT_FALSE(ValidateTypedIdentity(std::string("tls:dns:a\nb")).ok());
  EXPECT_FALSE(ValidateTypedIdentity(std::string("tls:dns:a\x7f", 10)).ok());
  EXPECT_FALSE(ValidateTypedIdentity("tls:uri:" + std::string(kMaxSanBytes + 1, 'a')).ok());
  EXPECT_TRUE(ValidateTypedIdentity("tls:uri:" + std::string(kMaxSanBytes, 'a')).ok());
  // The error explains the typed forms.
  const std::string message(ValidateTypedIdentity("ops").message());
  EXPECT_NE(message.find("tls:dns:"), std::string::npos) << message;
  EXPECT_NE(message.find("unix:uid:"), std::string::npos) << message;
}

TEST(TypedIdentity, SanValues) {
  EXPECT_TRUE(ValidSanValue("client-a"));
  EXPECT_TRUE(ValidSanValue("spiffe://example.org/ns/a"));
  EXPECT_FALSE(ValidSanValue(""));
  EXPECT_FALSE(ValidSanValue("a b"));
  EXPECT_FALSE(ValidSanValue(std::string("a\0b", 3)));
  EXPECT_FALSE(ValidSanValue("caf\xc3\xa9"));
  EXPECT_FALSE(ValidSanValue(std::string(kMaxSanBytes + 1, 'a')));
}

TEST(TypedIdentity, UnixIdentityUsesTheNameMap) {
  IdentityPolicy policy;
  EXPECT_EQ(UnixIdentity(1001, policy), "unix:uid:1001");
  policy.unix_user_names[1001] = "alice";
  EXPECT_EQ(UnixIdentity(1001, policy), "unix:user:alice");
  EXPECT_EQ(UnixIdentity(1002, policy), "unix:uid:1002");
}

TEST(MigrateLegacyOwner, MapsOldOwnersToTypedOnes) {
  const std::string local = "unix:uid:999";
  EXPECT_EQ(MigrateLegacyOwner("local", local), "unix:uid:999");
  EXPECT_EQ(MigrateLegacyOwner("anonymous", local), "anonymous");
  EXPECT_EQ(MigrateLegacyOwner("client-one", local), "tls:dns:client-one");
  EXPECT_EQ(MigrateLegacyOwner("ops.example.org", local), "tls:dns:ops.example.org");
  EXPECT_EQ(MigrateLegacyOwner("spiffe://example.org/a", local), "tls:uri:spiffe://example.org/a");
  EXPECT_EQ(MigrateLegacyOwner("https://x.example/y", local), "tls:uri:https://x.example/y");
  // Already typed: unchanged (also idempotent on its own output).
  for (const char* typed :
       {"tls:dns:a", "tls:uri:spiffe://example.org/a", "unix:uid:7", "unix:user:alice"}) {
    EXPECT_EQ(MigrateLegacyOwner(typed, local), typed);
    EXPECT_EQ(MigrateLegacyOwner(MigrateLegacyOwner(typed, local), local), typed);
  }
  EXPECT_EQ(MigrateLegacyOwner(MigrateLegacyOwner("client-one", local), local),
            "tls:dns:client-one");
}

TEST(MayUseKey, OwnerAlwaysAdminOnlyWithTheFlag) {
  IdentityPolicy policy;
  Caller owner{"tls:dns:a", true, false};
  Caller other{"tls:dns:b", true, false};
  Caller admin{"tls:dns:ops", true, true};
  Caller no_rights{"anonymous", false, false};
  EXPECT_TRUE(MayUseKey(owner, "tls:dns:a", policy));
  EXPECT_FALSE(MayUseKey(other, "tls:dns:a", policy));
  EXPECT_FALSE(MayUseKey(admin, "tls:dns:a", policy));
  EXPECT_TRUE(MayUseKey(admin, "tls:dns:ops", policy));
  EXPECT_FALSE(MayUseKey(no_rights, "anonymous", policy));
  policy.allow_admin_key_use = true;
  EXPECT_TRUE(MayUseKey(admin, "tls:dns:a", policy));
  EXPECT_FALSE(MayUseKey(other, "tls:dns:a", policy));
}

TEST(AuditValue, QuotesEscapesAndTruncates) {
  EXPECT_EQ(AuditValue("signer-1"), "\"signer-1\"");
  EXPECT_EQ(AuditValue("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(AuditValue("x\ny who=\"root\""), "\"x\\x0ay who=\\\"root\\\"\"");
  EXPECT_EQ(AuditValue(std::string("\0\x7f\xff", 3)), "\"\\x00\\x7f\\xff\"");
  const std::string long_value(300, 'k');
  EXPECT_EQ(AuditValue(long_value), "\"" + std::string(128, 'k') + "...[300 bytes]\"");
  EXPECT_EQ(AuditValue(long_value, 10), "\"kkkkkkkkkk...[300 bytes]\"");
  // Nothing outside printable ASCII survives, and the only unescaped quotes are the outer ones.
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string q = AuditValue(all, 1000);
  for (size_t i = 0; i < q.size(); ++i) {
    const auto u = static_cast<unsigned char>(q[i]);
    EXPECT_TRUE(u >= 0x20 && u < 0x7f) << i;
    if (q[i] == '"' && i != 0 && i + 1 != q.size()) {
      EXPECT_EQ(q[i - 1], '\\') << i;
    }
  }
}

class FakeClock {
 public:
  std::chrono::steady_clock::time_point now{};
  KeyUseAuditor::Clock fn() {
    return [this] { return now; };
  }
  void Advance(std::chrono::steady_clock::duration d) { now += d; }
};

size_t Count(const std::vector<std::string>& lines, const std::string& needle) {
  size_t n = 0;
  for (const auto& l : lines) n += l.find(needle) != std::string::npos;
  return n;
}

TEST(KeyUseAuditor, FirstUseAtOnceRepeatsSummarisedAtWindowEnd) {
  FakeClock clock;
  std::vector<std::string> lines;
  KeyUseAuditor auditor([&](const std::string& l) { lines.push_back(l); }, std::chrono::seconds(10),
                        100, clock.fn());
  auditor.Record("tls:dns:b", "tls:dns:a", "k1", 1, "sign");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "who=\"tls:dns:b\" action=use op=\"sign\" key_id=\"k1\" version=1 "
            "owner=\"tls:dns:a\"");
  for (int i = 0; i < 99; ++i) {
    clock.Advance(std::chrono::milliseconds(50));
    auditor.Record("tls:dns:b", "tls:dns:a", "k1", i < 50 ? 1 : 2, "sign");
  }
  auditor.Record("tls:dns:b", "tls:dns:a", "k1", 1, "decaps");  // another op: its own first line
  auditor.Record("tls:dns:c", "tls:dns:a", "k1", 1, "sign");    // another user: likewise
  EXPECT_EQ(lines.size(), 3u);
  auditor.MaybeFlush();  // the window has not ended yet
  EXPECT_EQ(lines.size(), 3u);

  clock.Advance(std::chrono::seconds(10));
  auditor.MaybeFlush();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[3].find("action=use_repeated"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("further_uses=99"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("versions=1-2"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("who=\"tls:dns:b\""), std::string::npos) << lines[3];

  // A new window: the first use is written at once again.
  auditor.Record("tls:dns:b", "tls:dns:a", "k1", 2, "sign");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[4].find("action=use "), std::string::npos) << lines[4];
  // Nothing repeated in this window: flushing writes nothing.
  auditor.Flush();
  EXPECT_EQ(lines.size(), 5u);
}

TEST(KeyUseAuditor, NextCallEndsAnExpiredWindow) {
  FakeClock clock;
  std::vector<std::string> lines;
  KeyUseAuditor auditor([&](const std::string& l) { lines.push_back(l); }, std::chrono::seconds(10),
                        100, clock.fn());
  auditor.Record("u", "o", "k", 1, "sign");
  auditor.Record("u", "o", "k", 1, "sign");
  auditor.Record("u", "o", "k", 1, "sign");
  clock.Advance(std::chrono::seconds(11));
  auditor.Record("u", "o", "k", 1, "sign");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find("further_uses=2"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("action=use "), std::string::npos) << lines[2];
}

TEST(KeyUseAuditor, CapsTheTuplesPerWindow) {
  FakeClock clock;
  std::vector<std::string> lines;
  KeyUseAuditor auditor([&](const std::string& l) { lines.push_back(l); }, std::chrono::seconds(10),
                        3, clock.fn());
  for (int i = 0; i < 1000; ++i) auditor.Record("u", "o", "key-" + std::to_string(i), 1, "sign");
  EXPECT_EQ(lines.size(), 3u);                   // the first three tuples only
  auditor.Record("u", "o", "key-0", 1, "sign");  // an itemised tuple is still counted
  auditor.Flush();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(Count(lines, "action=use_repeated"), 1u);
  EXPECT_EQ(Count(lines, "action=use_not_itemised further_uses=997"), 1u) << lines[4];
}

// The refusal flavour (ServiceContext::refusals): the first of each kind per window is the caller's
// full line, the repeats one refusal_repeated line.
TEST(KeyUseAuditor, RefusalsWriteTheirFirstLineAndSummariseRepeats) {
  FakeClock clock;
  std::vector<std::string> lines;
  KeyUseAuditor auditor([&](const std::string& l) { lines.push_back(l); }, std::chrono::seconds(10),
                        100, clock.fn(), false, "refusal");
  for (int i = 0; i < 500; ++i) {
    auditor.Record("u", "u", "gone", 0, "delete NOT_FOUND", "the full line of the first refusal");
  }
  auditor.Record("u", "u", "gone", 0, "rotate NOT_FOUND", "another kind: its own first line");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "the full line of the first refusal");
  EXPECT_EQ(lines[1], "another kind: its own first line");
  clock.Advance(std::chrono::seconds(10));
  auditor.MaybeFlush();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2].rfind("who=\"u\" action=refusal_repeated op=\"delete NOT_FOUND\"", 0), 0u)
      << lines[2];
  EXPECT_NE(lines[2].find("further_refusals=499"), std::string::npos) << lines[2];
}

TEST(KeyUseAuditor, HostileValuesCannotForgeLines) {
  FakeClock clock;
  std::vector<std::string> lines;
  {
    KeyUseAuditor auditor([&](const std::string& l) { lines.push_back(l); },
                          std::chrono::seconds(10), 10, clock.fn());
    auditor.Record("tls:uri:x\" action=delete\nwho=\"root", "o", std::string(1000, 'k'), 1, "sign");
    auditor.Record("tls:uri:x\" action=delete\nwho=\"root", "o", std::string(1000, 'k'), 1, "sign");
  }  // the destructor writes the summary
  ASSERT_EQ(lines.size(), 2u);
  // The hostile identity stays inside its quoted field; the line goes on with the real fields.
  const std::string quoted_user = "who=\"tls:uri:x\\\" action=delete\\x0awho=\\\"root\" ";
  EXPECT_EQ(lines[0].rfind(quoted_user + "action=use op=", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind(quoted_user + "action=use_repeated op=", 0), 0u) << lines[1];
  for (const auto& l : lines) {
    EXPECT_EQ(l.find('\n'), std::string::npos);
    EXPECT_LT(l.size(), 512u) << l;
  }
}

// The start-up log's effective configuration holds every flag --help lists (read back from the
// parser, not listed again), typed, and without key file paths or the database password.
TEST(Config, EffectiveJsonHasEveryFlagAndNoSecrets) {
  std::vector<const char*> args = {"pqcd",
                                   "--workers",
                                   "3",
                                   "--kek-file",
                                   "/k/kek",
                                   "--key-store",
                                   "postgres://u:hunter2@db/pqcd",
                                   "--admin",
                                   "tls:dns:a",
                                   "--admin",
                                   "tls:dns:b"};
  auto parsed = ParseConfig(static_cast<int>(args.size()), args.data());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const auto j = nlohmann::json::parse(parsed->effective_json);
  EXPECT_EQ(j["workers"], 3);
  EXPECT_EQ(j["allow_insecure_tcp"], false);
  EXPECT_EQ(j["inline_crypto"], true);
  EXPECT_EQ(j["listen"], "127.0.0.1:50051");
  EXPECT_EQ(j["admin"], nlohmann::json::array({"tls:dns:a", "tls:dns:b"}));
  EXPECT_EQ(j["kek_file"], "<set>");
  EXPECT_EQ(parsed->effective_json.find("hunter2"), std::string::npos) << parsed->effective_json;
  EXPECT_EQ(parsed->effective_json.find("/k/kek"), std::string::npos);
  std::vector<const char*> help = {"pqcd", "--help"};
  auto h = ParseConfig(2, help.data());
  ASSERT_TRUE(h.ok());
  std::regex flag("--([a-z0-9-]+)");
  size_t n = 0;
  for (std::sregex_iterator it(h->output.begin(), h->output.end(), flag), end; it != end; ++it) {
    std::string key = (*it)[1];
    if (key == "help" || key == "version") continue;
    std::replace(key.begin(), key.end(), '-', '_');
    EXPECT_TRUE(j.contains(key)) << key;
    ++n;
  }
  EXPECT_GT(n, 50u);
}

// server/README.md's flag list names every flag --help lists.
TEST(Config, ReadmeListsEveryFlag) {
  std::ifstream in(PQCD_SERVER_README);
  ASSERT_TRUE(in) << PQCD_SERVER_README;
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<const char*> help = {"pqcd", "--help"};
  auto h = ParseConfig(2, help.data());
  ASSERT_TRUE(h.ok());
  std::regex flag("--([a-z0-9-]+)");
  for (std::sregex_iterator it(h->output.begin(), h->output.end(), flag), end; it != end; ++it) {
    const std::string name = (*it)[0];
    EXPECT_TRUE(std::regex_search(readme, std::regex(name + "([^a-z0-9-]|$)")))
        << name << " is not in server/README.md";
  }
}

TEST(Config, AdminMustBeTyped) {
  auto parse = [](std::vector<const char*> args) {
    args.insert(args.begin(), "pqcd");
    return ParseConfig(static_cast<int>(args.size()), args.data());
  };
  auto bad = parse({"--admin", "ops"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tls:dns:"), std::string::npos) << bad.status();
  EXPECT_FALSE(parse({"--admin", "anonymous"}).ok());
  EXPECT_FALSE(parse({"--admin", "local"}).ok());
  auto good = parse({"--admin", "tls:dns:ops", "--admin", "unix:uid:0", "--admin",
                     "tls:uri:spiffe://example.org/ops"});
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->config.admins.size(), 3u);
  EXPECT_FALSE(good->config.allow_admin_key_use);
  EXPECT_FALSE(good->config.audit_key_use);
  EXPECT_EQ(good->config.legacy_local_owner, "unix:uid:" + std::to_string(::geteuid()));

  auto users = parse({"--unix-user", "alice=1001", "--unix-user", "bob=1002"});
  ASSERT_TRUE(users.ok()) << users.status();
  EXPECT_EQ(users->config.unix_user_names.at(1001), "alice");
  EXPECT_EQ(users->config.unix_user_names.at(1002), "bob");
  EXPECT_FALSE(parse({"--unix-user", "alice"}).ok());
  EXPECT_FALSE(parse({"--unix-user", "alice=x"}).ok());
  EXPECT_FALSE(parse({"--unix-user", "a/b=1"}).ok());
  EXPECT_FALSE(parse({"--unix-user", "alice=1", "--unix-user", "bob=1"}).ok());
  EXPECT_FALSE(parse({"--legacy-local-owner", "local"}).ok());
  EXPECT_FALSE(parse({"--tls-min-version", "1.1"}).ok());
  EXPECT_TRUE(parse({"--tls-min-version", "1.3", "--allow-admin-key-use", "--audit-key-use"}).ok());
}

}  // namespace
}  // namespace pqcd::server
