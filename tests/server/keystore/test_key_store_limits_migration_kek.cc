// KeyStore tests for per-owner key ids, paging, quotas, the memlock rule, legacy migration (from a
// directory written by the previous release), the sealed manifest (no resurrection of deleted
// records), the KEK file mode check and KEK rotation (resumable after a crash).
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "key_store_test_support.h"
#include "keystore/key_store.h"
#include "keystore/record_codec.h"
#include "keystore/secret_bytes_testing.h"
#include "openssl/sha.h"

#ifndef PQCD_KEYSTORE_FIXTURES
#error "PQCD_KEYSTORE_FIXTURES must name tests/server/keystore/fixtures"
#endif

namespace pqcd::server {
namespace {

namespace fs = std::filesystem;
using testing::RandomBytes;
using testing::Secret;
using testing::ToVec;
using testing::WriteFile;

std::string Sha256Hex(const std::vector<uint8_t>& v) {
  uint8_t d[SHA256_DIGEST_LENGTH];
  SHA256(v.data(), v.size(), d);
  std::string out;
  for (uint8_t b : d) {
    static const char* digits = "0123456789abcdef";
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::set<std::string> FileNames(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

std::vector<uint8_t> ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

class KeyStoreV2Test : public testing::KeyStoreDirTest {
 protected:
  KeyStoreV2Test() : KeyStoreDirTest('c') {}
  fs::path KeysDir() const { return root_ / "data" / "keys"; }
  fs::path KeyFile(const std::string& owner, const std::string& id, uint32_t v) const {
    return KeysDir() / internal::MakeKeyFileName(owner, id, v);
  }
  // Copies the legacy fixture (made by the previous release, see its README.txt) into data/.
  void CopyLegacyFixture() {
    const fs::path fixture = fs::path(PQCD_KEYSTORE_FIXTURES) / "legacy-v1";
    fs::create_directories(KeysDir());
    for (const auto& e : fs::directory_iterator(fixture / "keys")) {
      fs::copy_file(e.path(), KeysDir() / e.path().filename());
    }
    fs::copy_file(fixture / "kek.hex", kek_path_, fs::copy_options::overwrite_existing);
    fs::permissions(kek_path_, fs::perms::owner_read | fs::perms::owner_write);
    options_.migrate_owner = [](const std::string& owner) {
      return owner == "local" ? std::string("unix:uid:1000") : owner;
    };
  }
};

// ---- paging, quota, memlock --------------------------------------------------------------------

TEST(KeyStoreListTest, PagesAreStableAndTokensAreChecked) {
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  const auto sk = RandomBytes(32, 1);
  for (const char* owner : {"bob", "alice"}) {
    for (int i = 0; i < 7; ++i) {
      std::map<std::string, std::string> labels;
      if (i % 2 == 0) labels["even"] = "yes";
      ASSERT_TRUE(ks->Create(owner, "k" + std::to_string(i), 1, {}, Secret(sk), labels).ok());
    }
  }
  // Every owner, pages of 3: alice/k0..k6 then bob/k0..k6, each once.
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto page = ks->List(nullptr, {}, 3, token);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_LE(page->keys.size(), 3u);
    for (const auto& r : page->keys) seen.push_back(r.owner + "/" + r.key_id);
    token = page->next_page_token;
    ASSERT_LT(++pages, 10);
  } while (!token.empty());
  EXPECT_EQ(pages, 5);
  ASSERT_EQ(seen.size(), 14u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.front(), "alice/k0");
  EXPECT_EQ(seen.back(), "bob/k6");
  // One owner with a selector; an exact fit gives no extra empty page.
  const std::string bob = "bob";
  auto even = ks->List(&bob, {{"even", "yes"}}, 4, "");
  ASSERT_TRUE(even.ok());
  EXPECT_EQ(even->keys.size(), 4u);
  EXPECT_TRUE(even->next_page_token.empty());
  auto first = ks->List(&bob, {}, 2, "");
  ASSERT_TRUE(first.ok());
  ASSERT_FALSE(first->next_page_token.empty());
  auto second = ks->List(&bob, {}, 2, first->next_page_token);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->keys.front().key_id, "k2");
  // Page size: 0 -> 100; above 1000 -> 1000.
  EXPECT_EQ(ks->List(nullptr, {}, 0, "")->keys.size(), 14u);
  EXPECT_EQ(ks->List(nullptr, {}, 5000, "")->keys.size(), 14u);
  // Bad tokens: INVALID_ARGUMENT; a token of another owner's listing too.
  const std::string alice = "alice";
  for (const std::string& bad :
       {std::string("zz"), std::string("0"), std::string("ffffffff"), std::string(5000, 'a')}) {
    EXPECT_EQ(ks->List(nullptr, {}, 0, bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(ks->List(&alice, {}, 2, first->next_page_token).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KeyStoreQuotaTest, MaxVersionsPerKeyBoundsRotation) {
  KeyStoreOptions o;
  o.max_versions_per_key = 2;
  auto ks = std::move(*KeyStore::Open(o));
  const auto sk = RandomBytes(32, 3);
  ASSERT_TRUE(ks->Create("a", "k", 1, {}, Secret(sk), {}).ok());
  ASSERT_TRUE(ks->AddVersion("a", "k", {}, Secret(sk)).ok());
  auto third = ks->AddVersion("a", "k", {}, Secret(sk));
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("--max-versions-per-key"), std::string::npos)
      << third.status();
  EXPECT_EQ(ks->counters().quota_refusals, 1u);
  EXPECT_EQ(ks->Versions("a", "k"), (std::vector<uint32_t>{1, 2}));
  ASSERT_TRUE(ks->Create("a", "other", 1, {}, Secret(sk), {}).ok());  // per key
  ASSERT_TRUE(ks->AddVersion("a", "other", {}, Secret(sk)).ok());
  ASSERT_TRUE(ks->Delete("a", "k", 1).ok());
  auto v3 = ks->AddVersion("a", "k", {}, Secret(sk));
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ(v3->version, 3u);
}

TEST(KeyStoreQuotaTest, LockedBytesPerOwnerLeaveRoomForOthers) {
  KeyStoreOptions o;
  o.max_locked_bytes_per_owner = 3 * 64;  // three 64-byte keys
  auto ks = std::move(*KeyStore::Open(o));
  const auto sk = RandomBytes(64, 4);
  ASSERT_TRUE(ks->Create("a", "k1", 1, {}, Secret(sk), {}).ok());
  ASSERT_TRUE(ks->AddVersion("a", "k1", {}, Secret(sk)).ok());  // versions count too
  ASSERT_TRUE(ks->Create("a", "k2", 1, {}, Secret(sk), {}).ok());
  auto fourth = ks->AddVersion("a", "k2", {}, Secret(sk));
  EXPECT_EQ(fourth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(fourth.status().message().find("--locked-memory-per-owner"), std::string::npos)
      << fourth.status();
  EXPECT_EQ(ks->Create("a", "k3", 1, {}, Secret(sk), {}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ks->counters().quota_refusals, 2u);
  // Another owner has its own budget, and deleting makes room again.
  EXPECT_TRUE(ks->Create("b", "k1", 1, {}, Secret(sk), {}).ok());
  ASSERT_TRUE(ks->Delete("a", "k1", 1).ok());
  EXPECT_TRUE(ks->AddVersion("a", "k2", {}, Secret(sk)).ok());
}

TEST(KeyStoreQuotaTest, LabelsAndPublicKeysCountPerOwner) {
  KeyStoreOptions o;
  o.max_plain_bytes_per_owner = 8 << 10;
  auto ks = std::move(*KeyStore::Open(o));
  const auto sk = RandomBytes(32, 5);
  const std::map<std::string, std::string> labels = {{"note", std::string(2000, 'x')}};
  ASSERT_TRUE(ks->Create("a", "k", 1, RandomBytes(1184, 6), Secret(sk), labels).ok());
  ASSERT_TRUE(ks->AddVersion("a", "k", RandomBytes(1184, 7), Secret(sk)).ok());
  // Each version carries the labels: the third passes 8 KiB.
  auto third = ks->AddVersion("a", "k", RandomBytes(1184, 8), Secret(sk));
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("--key-memory-per-owner"), std::string::npos)
      << third.status();
  EXPECT_TRUE(ks->Create("b", "k", 1, RandomBytes(1184, 9), Secret(sk), labels).ok());
}

TEST(KeyStoreQuotaTest, MaxKeysPerOwnerCountsKeysNotVersions) {
  KeyStoreOptions o;
  o.max_keys_per_owner = 2;
  auto ks = std::move(*KeyStore::Open(o));
  const auto sk = RandomBytes(32, 2);
  ASSERT_TRUE(ks->Create("a", "k1", 1, {}, Secret(sk), {}).ok());
  ASSERT_TRUE(ks->Create("a", "k2", 1, {}, Secret(sk), {}).ok());
  ASSERT_TRUE(ks->AddVersion("a", "k2", {}, Secret(sk)).ok());  // versions do not count
  auto third = ks->Create("a", "k3", 1, {}, Secret(sk), {});
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("--max-keys-per-owner"), std::string::npos);
  EXPECT_NE(third.status().message().find("(2,"), std::string::npos) << third.status();
  EXPECT_EQ(ks->counters().quota_refusals, 1u);
  EXPECT_TRUE(ks->Create("b", "k3", 1, {}, Secret(sk), {}).ok());  // per owner
  ASSERT_TRUE(ks->Delete("a", "k1", 0).ok());
  EXPECT_TRUE(ks->Create("a", "k3", 1, {}, Secret(sk), {}).ok());
  EXPECT_EQ(ks->KeyCount("a"), 2u);
  EXPECT_EQ(ks->counters().memlock_refusals, 0u);
}

// A key whose buffer could not be mlock'ed is refused, never held in swappable memory.
TEST(KeyStoreMemlockTest, UnlockedPrivateKeyIsRefused) {
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  const auto sk = RandomBytes(32, 3);
  ASSERT_TRUE(ks->Create("a", "k", 1, {}, Secret(sk), {}).ok());
  testing::SetMlockFailureForTesting(true);
  SecretBytes unlocked = Secret(sk);
  SecretBytes unlocked2 = Secret(sk);
  testing::SetMlockFailureForTesting(false);
  EXPECT_FALSE(unlocked.locked());
  auto c = ks->Create("a", "k2", 1, {}, std::move(unlocked), {});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("mlock"), std::string::npos);
  auto v = ks->AddVersion("a", "k", {}, std::move(unlocked2));
  EXPECT_EQ(v.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ks->counters().memlock_refusals, 2u);
  EXPECT_EQ(ks->size(), 1u);
  SecretBytes locked = Secret(sk);
  EXPECT_TRUE(locked.locked());
}

// The real thing: RLIMIT_MEMLOCK at 0 and CAP_IPC_LOCK dropped, in a child process.
TEST(KeyStoreMemlockTest, ExhaustedRlimitMemlockRefusesCreate) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizer runtimes turn mlock into a no-op";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
    struct rlimit lim = {0, 0};
    if (setrlimit(RLIMIT_MEMLOCK, &lim) != 0) _exit(10);
    __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2] = {};
    if (syscall(SYS_capget, &hdr, caps) != 0) _exit(13);
    caps[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    if (syscall(SYS_capset, &hdr, caps) != 0) _exit(13);
    const auto sk = RandomBytes(32, 4);
    auto c = ks->Create("a", "k", 1, {}, Secret(sk), {});
    if (c.status().code() != absl::StatusCode::kResourceExhausted) _exit(11);
    if (ks->counters().memlock_refusals != 1 || ks->size() != 0) _exit(12);
    _exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0)
      << "10: setrlimit, 11: not RESOURCE_EXHAUSTED, 12: counter/size, 13: capget/capset";
}

// ---- KEK file mode -----------------------------------------------------------------------------

TEST_F(KeyStoreV2Test, KekFileWithGroupOrOtherBitsIsRefused) {
  for (fs::perms extra : {fs::perms::group_read, fs::perms::others_read, fs::perms::group_write,
                          fs::perms::others_exec}) {
    fs::permissions(kek_path_, fs::perms::owner_read | fs::perms::owner_write | extra);
    auto s = KeyStore::Open(options_);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
    const std::string msg(s.status().message());
    EXPECT_NE(msg.find(kek_path_.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("chmod 600"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--allow-shared-kek-file"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("cccccccc"), std::string::npos) << msg;  // no contents
  }
  options_.allow_shared_kek_file = true;
  EXPECT_TRUE(KeyStore::Open(options_).ok());
}

// ---- legacy migration --------------------------------------------------------------------------

constexpr int kMlKem512 = 1, kMlDsa44 = 10;

TEST_F(KeyStoreV2Test, LegacyDirectoryMigratesAndKeepsEveryPublicKey) {
  CopyLegacyFixture();
  const std::string owner = "unix:uid:1000";
  {
    LoadReport rep;
    auto ks = OpenStore(&rep);
    ASSERT_TRUE(ks);
    EXPECT_EQ(rep.loaded, 5u);
    EXPECT_EQ(rep.migrated, 5u);
    EXPECT_TRUE(rep.problems.empty()) << Join(rep.problems);
    EXPECT_EQ(rep.manifest_counter, 1u);
  }
  // The old names are gone (records and the marker); the new ones and the manifest are there.
  std::set<std::string> expect = {internal::MakeManifestShardName(owner)};
  for (auto [id, v] : std::vector<std::pair<std::string, uint32_t>>{
           {"kem-a", 1}, {"dsa-b", 1}, {"dsa-b", 2}, {"kem-c", 2}, {"dsa-d", 1}}) {
    expect.insert(internal::MakeKeyFileName(owner, id, v));
  }
  EXPECT_EQ(FileNames(KeysDir()), expect);

  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 5u);
  EXPECT_EQ(rep.migrated, 0u);
  EXPECT_TRUE(rep.problems.empty()) << Join(rep.problems);
  struct Want {
    const char* id;
    uint32_t version;
    int algorithm;
    std::map<std::string, std::string> labels;
    const char* pk_sha256;  // from fixtures/legacy-v1/README.txt
  };
  const std::vector<Want> want = {
      {"kem-a",
       1,
       kMlKem512,
       {{"env", "test"}},
       "8367d9122193583dccad37dc3e3c0335d75f69a8158a5f4eca5fba739d936ade"},
      {"dsa-b",
       1,
       kMlDsa44,
       {},
       "34f9a34efa21ddd744e62a83c126f2652c459a63a290af00a3131da57a339c25"},
      {"dsa-b",
       2,
       kMlDsa44,
       {},
       "9b02f9eae795eeae1825855ec9fd526d874d091b9077e0ec8a93aa10a22d4a06"},
      {"kem-c",
       2,
       kMlKem512,
       {{"team", "x"}},
       "10fb8445acf488e623fbceaa3ae55173ff695abb5178e0a359aa8fa6b7f84ccf"},
      {"dsa-d",
       1,
       kMlDsa44,
       {},
       "a697433bb609d9b503f4c8ae6382c38931d326bf5c2f8f03a332d30fac39048c"},
  };
  for (const Want& w : want) {
    auto r = ks->Get(owner, w.id, w.version);
    ASSERT_TRUE(r.ok()) << w.id << " v" << w.version << ": " << r.status();
    EXPECT_EQ(r->owner, owner);
    EXPECT_EQ(r->algorithm, w.algorithm) << w.id;
    EXPECT_EQ(r->labels, w.labels) << w.id;
    EXPECT_EQ(Sha256Hex(r->public_key), w.pk_sha256) << w.id << " v" << w.version;
    // Seed form: ML-KEM 64 bytes, ML-DSA 32 bytes.
    EXPECT_EQ(r->private_key->size(), w.algorithm == kMlKem512 ? 64u : 32u);
  }
  EXPECT_EQ(ks->Get("local", "kem-a", 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ks->Versions(owner, "kem-c"), (std::vector<uint32_t>{2}));
  EXPECT_EQ(ks->KeyCount(owner), 4u);
  // dsa-d v2 was deleted (legacy marker dsa-d.v2.retired): its number is not reused.
  auto v = ks->AddVersion(owner, "dsa-d", {1}, Secret(RandomBytes(32, 5)));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->version, 3u);
  EXPECT_EQ(ks->AddVersion(owner, "dsa-b", {1}, Secret(RandomBytes(32, 6)))->version, 3u);
}

// A migration interrupted after the new files were written (no manifest yet, old files still
// there): the new forms win, the old ones go, nothing is duplicated.
TEST_F(KeyStoreV2Test, InterruptedMigrationIsFinishedByTheNextOpen) {
  CopyLegacyFixture();
  const fs::path saved = root_ / "migrated";
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
  }
  fs::copy(KeysDir(), saved);
  fs::remove_all(KeysDir());
  CopyLegacyFixture();
  for (const auto& e : fs::directory_iterator(saved)) {
    if (!internal::ParseManifestShardName(e.path().filename().string())) {
      fs::copy_file(e.path(), KeysDir() / e.path().filename());
    }
  }
  // One record's new form never made it: it is migrated now.
  fs::remove(KeysDir() / internal::MakeKeyFileName("unix:uid:1000", "kem-a", 1));
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 5u);
  EXPECT_EQ(rep.migrated, 1u);
  EXPECT_TRUE(rep.problems.empty()) << Join(rep.problems);
  std::set<std::string> names = FileNames(KeysDir());
  EXPECT_EQ(names.size(), 6u);  // five records + the owner's manifest
  for (const auto& n : names) EXPECT_EQ(n.find("retired"), std::string::npos) << n;
  EXPECT_TRUE(names.contains(internal::MakeManifestShardName("unix:uid:1000")));
  EXPECT_FALSE(names.contains("dsa-b.v1.key"));
  EXPECT_EQ(ks->AddVersion("unix:uid:1000", "dsa-d", {1}, Secret(RandomBytes(32, 7)))->version, 3u);
}

// ---- manifest: no resurrection -----------------------------------------------------------------

TEST_F(KeyStoreV2Test, DeletedRecordRestoredFromBackupIsNotLoaded) {
  const auto sk1 = RandomBytes(32, 10), sk2 = RandomBytes(32, 11), sk3 = RandomBytes(32, 12);
  const fs::path backup = root_ / "backup";
  fs::create_directories(backup);
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "k", 1, {1}, Secret(sk1), {}).ok());
    ASSERT_TRUE(ks->AddVersion("o", "k", {2}, Secret(sk2)).ok());
    ASSERT_TRUE(ks->Create("o", "gone", 1, {3}, Secret(sk3), {}).ok());
    for (const auto& e : fs::directory_iterator(KeysDir())) {
      fs::copy_file(e.path(), backup / e.path().filename());
    }
    ASSERT_TRUE(ks->Delete("o", "k", 2).ok());
    ASSERT_TRUE(ks->Delete("o", "gone", 0).ok());
    EXPECT_FALSE(fs::exists(KeyFile("o", "k", 2)));
  }
  // Put the deleted records back.
  for (auto [id, v] : std::vector<std::pair<std::string, uint32_t>>{{"k", 2}, {"gone", 1}}) {
    const std::string name = internal::MakeKeyFileName("o", id, v);
    fs::copy_file(backup / name, KeysDir() / name);
  }
  {
    LoadReport rep;
    auto ks = OpenStore(&rep);
    ASSERT_TRUE(ks);
    EXPECT_EQ(rep.loaded, 1u);
    ASSERT_EQ(rep.unlisted.size(), 2u) << Join(rep.problems);
    EXPECT_NE(Join(rep.problems).find("not in the manifest"), std::string::npos);
    EXPECT_EQ(ks->Versions("o", "k"), (std::vector<uint32_t>{1}));
    EXPECT_EQ(ks->Get("o", "gone", 0).status().code(), absl::StatusCode::kNotFound);
    // Reported, not deleted.
    EXPECT_TRUE(fs::exists(KeyFile("o", "k", 2)));
    EXPECT_TRUE(fs::exists(KeyFile("o", "gone", 1)));
    fs::remove(KeyFile("o", "gone", 1));
    // "gone" is created afresh; then the old copy of its v1 replaces the new file.
    ASSERT_TRUE(ks->Create("o", "gone", 1, {4}, Secret(sk1), {}).ok());
  }
  fs::copy_file(backup / internal::MakeKeyFileName("o", "gone", 1), KeyFile("o", "gone", 1),
                fs::copy_options::overwrite_existing);
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(ks->Get("o", "gone", 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(rep.unlisted.size(), 2u);
  EXPECT_EQ(rep.missing.size(), 1u);  // the manifest's "gone" v1
  EXPECT_NE(Join(rep.problems).find("older copy"), std::string::npos) << Join(rep.problems);
  // Restoring an old MANIFEST copy along with the records is not caught here (it would need state
  // outside the directory); the counter is reported for that.
  EXPECT_GE(rep.manifest_counter, 6u);
}

TEST_F(KeyStoreV2Test, MissingOrUnreadableManifestFailsOpen) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "k", 1, {}, Secret(RandomBytes(32, 20)), {}).ok());
  }
  const fs::path manifest = KeysDir() / internal::MakeManifestShardName("o");
  const fs::path aside = root_ / "manifest.saved";
  fs::rename(manifest, aside);
  auto s = KeyStore::Open(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("manifest (MANIFEST.<owner tag> files) is missing"),
            std::string::npos)
      << s.status();
  // Unreadable (here: not a regular file): a hard error, not an empty or unfiltered store.
  fs::create_directory(manifest);
  s = KeyStore::Open(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot read MANIFEST"), std::string::npos) << s.status();
  fs::remove(manifest);
  // Corrupted: a hard error too.
  fs::copy_file(aside, manifest);
  {
    std::fstream f(manifest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x42');
  }
  s = KeyStore::Open(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("authentication failed"), std::string::npos) << s.status();
  fs::copy_file(aside, manifest, fs::copy_options::overwrite_existing);
  EXPECT_TRUE(KeyStore::Open(options_).ok());
}

// ---- manifest: one file per owner ---------------------------------------------------------------

// A change rewrites only its owner's manifest file: another owner's file is not touched (same
// inode and bytes), whatever the first owner creates, rotates or deletes.
TEST_F(KeyStoreV2Test, ChangeRewritesOnlyItsOwnersManifest) {
  auto ks = OpenStore();
  ASSERT_TRUE(ks);
  ASSERT_TRUE(ks->Create("bystander", "b", 1, {1}, Secret(RandomBytes(32, 30)), {}).ok());
  const fs::path theirs = KeysDir() / internal::MakeManifestShardName("bystander");
  const fs::path mine = KeysDir() / internal::MakeManifestShardName("busy");
  ASSERT_TRUE(fs::exists(theirs));
  const auto inode = [](const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? st.st_ino : ino_t{0};
  };
  const ino_t before = inode(theirs);
  const auto bytes = ReadBytes(theirs);
  for (int i = 0; i < 5; ++i) {
    const std::string id = "k" + std::to_string(i);
    ASSERT_TRUE(ks->Create("busy", id, 1, {1}, Secret(RandomBytes(32, 31 + i)), {}).ok());
    ASSERT_TRUE(ks->AddVersion("busy", id, {2}, Secret(RandomBytes(32, 41 + i))).ok());
  }
  const ino_t mine_after_creates = inode(mine);
  ASSERT_TRUE(ks->Delete("busy", "k0", 0).ok());
  EXPECT_NE(inode(mine), mine_after_creates);  // the busy owner's file was replaced
  EXPECT_EQ(inode(theirs), before);
  EXPECT_EQ(ReadBytes(theirs), bytes);
  // Both owners' keys load again from their own files.
  ks.reset();
  LoadReport rep;
  ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 9u);
  EXPECT_TRUE(rep.problems.empty()) << Join(rep.problems);
}

// A directory of the layout with one MANIFEST for every owner is converted at Open: one file per
// owner listing exactly what MANIFEST listed, then MANIFEST goes. Per-owner files left beside a
// MANIFEST (an interrupted conversion) are replaced, since MANIFEST is the one that was written
// last.
TEST_F(KeyStoreV2Test, SingleManifestIsConvertedToOneFilePerOwner) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("a", "ka", 1, {1}, Secret(RandomBytes(32, 50)), {}).ok());
    ASSERT_TRUE(ks->Create("b", "kb", 1, {2}, Secret(RandomBytes(32, 51)), {}).ok());
    ASSERT_TRUE(ks->AddVersion("b", "kb", {3}, Secret(RandomBytes(32, 52))).ok());
  }
  auto kek = internal::LoadKek(options_.kek_file);
  ASSERT_TRUE(kek.ok());
  internal::RecordSealer sealer(*kek);
  // The single MANIFEST of the older layout, made from the per-owner files.
  internal::Manifest all;
  for (const std::string owner : {"a", "b"}) {
    const auto raw = ReadBytes(KeysDir() / internal::MakeManifestShardName(owner));
    std::vector<uint8_t> plain;
    std::string reason, got_owner;
    ASSERT_EQ(
        sealer.OpenBlob(internal::kManifestShardMagic, raw.data(), raw.size(), &plain, &reason),
        internal::OpenFailure::kNone)
        << reason;
    internal::Manifest part;
    ASSERT_TRUE(internal::DecodeManifestShard(plain.data(), plain.size(), &got_owner, &part));
    EXPECT_EQ(got_owner, owner);
    all.counter = std::max(all.counter, part.counter);
    for (auto& [id, k] : part.keys) all.keys.emplace(id, k);
  }
  // A version MANIFEST lists that never got its record: still listed (reported missing) after
  // the conversion, as it was before.
  all.keys[{"a", "ka"}].high_water = 2;
  all.keys[{"a", "ka"}].versions[2] = std::string(internal::kUidBytes, 'x');
  auto sealed = sealer.SealBlob(internal::kManifestMagic, internal::EncodeManifestPayload(all));
  ASSERT_TRUE(sealed.ok());
  WriteBytes(KeysDir() / "MANIFEST", *sealed);
  // A stale per-owner file of an interrupted conversion: b's, before its second version.
  fs::remove(KeysDir() / internal::MakeManifestShardName("a"));
  {
    LoadReport rep;
    auto ks = OpenStore(&rep);
    ASSERT_TRUE(ks);
    EXPECT_EQ(rep.loaded, 3u);
    EXPECT_EQ(rep.missing.size(), 1u) << Join(rep.problems);
    EXPECT_EQ(ks->Versions("b", "kb"), (std::vector<uint32_t>{1, 2}));
  }
  const std::set<std::string> names = FileNames(KeysDir());
  EXPECT_FALSE(names.contains("MANIFEST"));
  EXPECT_TRUE(names.contains(internal::MakeManifestShardName("a")));
  EXPECT_TRUE(names.contains(internal::MakeManifestShardName("b")));
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 3u);
  EXPECT_EQ(rep.missing.size(), 1u) << Join(rep.problems);  // still listed until a's next change
  ASSERT_TRUE(ks->AddVersion("a", "ka", {4}, Secret(RandomBytes(32, 53))).ok());
  EXPECT_EQ(ks->Versions("a", "ka"), (std::vector<uint32_t>{1, 3}));  // 2 is never reused
}

// One owner's manifest file missing while its records are there fails Open, naming the file, as
// a missing MANIFEST did; one owner's file under another owner's name fails Open too. An owner
// whose keys were all deleted keeps an empty file until the next Open finds no records of it.
TEST_F(KeyStoreV2Test, PerOwnerManifestFilesAreCheckedAtOpen) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("a", "ka", 1, {1}, Secret(RandomBytes(32, 60)), {}).ok());
    ASSERT_TRUE(ks->Create("b", "kb", 1, {2}, Secret(RandomBytes(32, 61)), {}).ok());
    ASSERT_TRUE(ks->Create("gone", "kg", 1, {3}, Secret(RandomBytes(32, 62)), {}).ok());
    ASSERT_TRUE(ks->Delete("gone", "kg", 0).ok());
  }
  const fs::path a = KeysDir() / internal::MakeManifestShardName("a");
  const fs::path b = KeysDir() / internal::MakeManifestShardName("b");
  const fs::path gone = KeysDir() / internal::MakeManifestShardName("gone");
  EXPECT_TRUE(fs::exists(gone));
  const fs::path aside = root_ / "a.saved";
  fs::rename(a, aside);
  auto s = KeyStore::Open(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(internal::MakeManifestShardName("a") + " is missing"),
            std::string::npos)
      << s.status();
  fs::copy_file(b, a);
  s = KeyStore::Open(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not the manifest of the owner its name says"),
            std::string::npos)
      << s.status();
  fs::copy_file(aside, a, fs::copy_options::overwrite_existing);
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 2u);
  EXPECT_TRUE(rep.problems.empty()) << Join(rep.problems);
  EXPECT_FALSE(fs::exists(gone));
}

// ---- KEK rotation ------------------------------------------------------------------------------

TEST_F(KeyStoreV2Test, KekRotationIsResumableAfterACrash) {
  std::map<std::string, std::vector<uint8_t>> keys;
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    for (int i = 0; i < 5; ++i) {
      const std::string id = "k" + std::to_string(i);
      keys[id] = RandomBytes(64, 30 + i);
      ASSERT_TRUE(ks->Create("o", id, 1, {static_cast<uint8_t>(i)}, Secret(keys[id]), {}).ok());
    }
  }
  const fs::path new_kek = root_ / "new-kek.hex";
  WriteFile(new_kek, std::string(64, 'd'));
  // A rotation killed after re-sealing 2 of the 5 records (test hook: _exit(137)).
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("PQCD_TEST_ROTATE_ABORT_AFTER", "2", 1);
    (void)KeyStore::RotateKek(options_, new_kek.string());
    _exit(3);  // not reached when the hook works
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 137);
  EXPECT_TRUE(fs::exists(KeysDir() / "ROTATION"));

  // The directory is refused until the rotation is finished, with either KEK.
  auto s = KeyStore::Open(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--rotate-kek-to"), std::string::npos) << s.status();
  KeyStoreOptions with_new = options_;
  with_new.kek_file = new_kek.string();
  EXPECT_FALSE(KeyStore::Open(with_new).ok());
  // A rerun to a different KEK is refused.
  const fs::path other_kek = root_ / "other-kek.hex";
  WriteFile(other_kek, std::string(64, 'e'));
  EXPECT_FALSE(KeyStore::RotateKek(options_, other_kek.string()).ok());

  LoadReport rep;
  absl::Status st = KeyStore::RotateKek(options_, new_kek.string(), &rep);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(rep.loaded, 5u);
  EXPECT_EQ(rep.resealed, 3u);  // the other two were done before the crash
  EXPECT_TRUE(rep.problems.empty()) << Join(rep.problems);
  EXPECT_FALSE(fs::exists(KeysDir() / "ROTATION"));

  // Only the new KEK opens the directory now.
  s = KeyStore::Open(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("wrong KEK?"), std::string::npos) << s.status();
  {
    auto ks = KeyStore::Open(with_new, &rep);
    ASSERT_TRUE(ks.ok()) << ks.status();
    EXPECT_EQ(rep.loaded, 5u);
    EXPECT_TRUE(rep.problems.empty()) << Join(rep.problems);
    for (const auto& [id, sk] : keys) {
      auto r = (*ks)->Get("o", id, 0);
      ASSERT_TRUE(r.ok()) << id;
      EXPECT_EQ(ToVec(*r->private_key), sk);
    }
  }
  // Every record is sealed under the new KEK: each one alone is refused with the old KEK.
  for (const auto& e : fs::directory_iterator(KeysDir())) {
    const std::string name = e.path().filename().string();
    if (internal::ParseManifestShardName(name)) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::vector<uint8_t> raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto old_kek = internal::LoadKek(options_.kek_file);
    ASSERT_TRUE(old_kek.ok());
    internal::RecordSealer old_sealer(*old_kek);
    EXPECT_EQ(old_sealer.Open(raw.data(), raw.size()).failure, internal::OpenFailure::kWrongKek)
        << name;
  }
  // Rerunning the finished rotation is harmless: nothing left to re-seal.
  st = KeyStore::RotateKek(options_, new_kek.string(), &rep);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(rep.resealed, 0u);
  EXPECT_EQ(rep.loaded, 5u);
  EXPECT_FALSE(fs::exists(KeysDir() / "ROTATION"));
  EXPECT_FALSE(KeyStore::Open(options_).ok());
}

}  // namespace
}  // namespace pqcd::server
