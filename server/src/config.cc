#include "pqcd/server/config.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "keystore/pg_conn.h"
#include "nlohmann/json.hpp"
#include "pqcd/kernels/isa.h"
#include "pqcd/server/identity.h"

namespace pqcd::server {
namespace {

// --isa: every backend the kernels know (kernels::Isa, by IsaName), plus "auto". Whether the CPU
// supports the one asked for is checked at start-up (server.cc), with the best supported named.
std::vector<std::string> IsaChoices() {
  std::vector<std::string> choices;
  for (const kernels::Isa isa : kernels::kAllIsas) choices.emplace_back(kernels::IsaName(isa));
  choices.emplace_back("auto");
  return choices;
}

std::string EnvName(std::string_view flag) {
  std::string name = "PQCD_";
  for (char c : flag) name += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return name;
}

// The check column of a row that has none.
struct NoCheck {};
constexpr NoCheck kNoCheck;

// Registers one row of PQCD_SERVER_FLAGS: its option, environment variable and check.
template <FlagKind kKind, typename T, typename Check>
void AddFlag(CLI::App& app, std::string_view name, T& target, const std::string& help,
             const Check& check) {
  const std::string flag = "--" + std::string(name);
  CLI::Option* opt = nullptr;
  if constexpr (kKind == FlagKind::kSwitch) {
    static_assert(std::is_same_v<T, bool>, "a Switch row is a bool");
    opt = app.add_flag(flag, target, help);
  } else {
    opt = app.add_option(flag, target, help)->capture_default_str();
    if constexpr (kKind == FlagKind::kList) {
      static_assert(std::is_same_v<T, std::vector<std::string>>, "a List row is a vector");
      opt->take_all();
    }
  }
  opt->envname(EnvName(name));
  if constexpr (!std::is_same_v<Check, NoCheck>) opt->check(check);
}

// The number of members of the aggregate T: the most initializers T{...} takes.
struct AnyMember {
  template <typename T>
  operator T() const;  // never defined: only asked about in requires
};
template <typename T, typename... Members>
consteval size_t MemberCount() {
  if constexpr (requires { T{Members{}..., AnyMember{}}; }) {
    return MemberCount<T, Members..., AnyMember>();
  } else {
    return sizeof...(Members);
  }
}
// A Config member written by hand instead of as a row of PQCD_SERVER_FLAGS would be a setting
// without a flag, or a flag outside the table (not in the effective-config log check, the README
// check, ...): add a row, or, for a member that is truly not a flag, count it in
// kConfigMembersNotFlags.
static_assert(MemberCount<Config>() == std::size(kFlags) + kConfigMembersNotFlags,
              "every Config member is a row of PQCD_SERVER_FLAGS (config.h) or counted in "
              "kConfigMembersNotFlags");

FlagLog LogOf(std::string_view name) {
  for (const FlagInfo& info : kFlags) {
    if (info.name == name) return info.log;
  }
  return FlagLog::kShown;  // --config
}

bool IsFlagName(std::string_view name) {
  for (const FlagInfo& info : kFlags) {
    if (info.name == name) return true;
  }
  return false;
}

// "; did you mean \"tls-client-ca\"?" for the flag whose name is closest to `name` (edit
// distance at most 3), else "".
std::string NearestFlagHint(std::string_view name) {
  size_t best = 4;
  std::string_view best_name;
  for (const FlagInfo& info : kFlags) {
    const std::string_view f = info.name;
    std::vector<size_t> row(f.size() + 1);
    for (size_t j = 0; j <= f.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= name.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= f.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (name[i - 1] == f[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    if (row[f.size()] < best) {
      best = row[f.size()];
      best_name = f;
    }
  }
  if (best_name.empty()) return "";
  return "; did you mean \"" + std::string(best_name) + "\"?";
}

// --config files are JSON objects whose keys are flag names without the dashes ("listen",
// "unix-mode" or "unix_mode"). Arrays give repeatable flags (--admin).
class JsonConfig : public CLI::Config {
 public:
  std::string to_config(const CLI::App*, bool, bool, std::string) const override { return "{}"; }

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    nlohmann::json j;
    try {
      input >> j;
    } catch (const std::exception& e) {
      throw CLI::ConversionError(std::string("config file is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) throw CLI::ConversionError("config file must hold a JSON object");
    std::vector<CLI::ConfigItem> items;
    for (auto& [key, value] : j.items()) {
      CLI::ConfigItem item;
      item.name = key;
      std::replace(item.name.begin(), item.name.end(), '_', '-');
      // A key that names no flag is a typo (or a flag of another version): refused, not ignored,
      // so that a misspelt "tls_client_ca" cannot leave mTLS off unnoticed.
      if (!IsFlagName(item.name)) {
        throw CLI::ConversionError("config file: unknown key \"" + key +
                                   "\" (keys are the flag names of pqcd --help without the "
                                   "dashes, e.g. \"listen\" or \"unix_mode\")" +
                                   NearestFlagHint(item.name));
      }
      // Precedence: the environment beats the config file (the command line beats both).
      if (std::getenv(EnvName(item.name).c_str()) != nullptr) continue;
      auto to_string = [](const nlohmann::json& v) {
        if (v.is_string()) return v.get<std::string>();
        if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
        return v.dump();
      };
      if (value.is_array()) {
        for (auto& v : value) item.inputs.push_back(to_string(v));
      } else {
        item.inputs.push_back(to_string(value));
      }
      items.push_back(std::move(item));
    }
    return items;
  }
};

// The effective configuration, read back from the parser itself so that every flag appears
// without being listed again: each option under its JSON config key (the flag name with '_'),
// with the value given (command line, environment or config file) or its default. Typed as the
// option is (flags as booleans, numbers as numbers); paths of key files and the database URI's
// password are not shown.
std::string EffectiveConfigJson(const CLI::App& app) {
  nlohmann::json j = nlohmann::json::object();
  for (const CLI::Option* opt : app.get_options()) {
    const std::string flag = opt->get_name(false, true);
    if (flag.rfind("--", 0) != 0 || flag == "--help" || flag == "--version") continue;
    const std::string name = flag.substr(2);
    std::string key = name;
    std::replace(key.begin(), key.end(), '-', '_');
    const bool repeatable = opt->get_expected_max() > 1;
    std::vector<std::string> values = opt->results();
    if (values.empty() && !repeatable && !opt->get_default_str().empty()) {
      values = {opt->get_default_str()};
    }
    const std::string type = opt->get_type_name();
    auto typed = [&](const std::string& v) -> nlohmann::json {
      if (opt->get_expected_min() == 0 || type.rfind("BOOLEAN", 0) == 0) {
        return v == "true" || v == "1" || v == "on" || v == "yes";
      }
      try {
        if (type.rfind("UINT", 0) == 0 || type.rfind("INT", 0) == 0) return std::stoll(v);
        if (type.rfind("FLOAT", 0) == 0) return std::stod(v);
      } catch (const std::exception&) {
      }
      return v;
    };
    if (repeatable) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& v : values) arr.push_back(typed(v));
      j[key] = std::move(arr);
    } else if (opt->get_expected_min() == 0) {
      j[key] = !values.empty() && typed(values.back()).get<bool>();
    } else {
      const std::string v = values.empty() ? std::string() : values.back();
      const FlagLog log = LogOf(name);
      if (log == FlagLog::kPresence) {
        j[key] = v.empty() ? "" : "<set>";
      } else if (log == FlagLog::kRedacted) {
        j[key] = v.empty() ? "" : pqcd::server::internal::RedactDsn(v);
      } else {
        j[key] = typed(v);
      }
    }
  }
  return j.dump();
}

}  // namespace

std::string DefaultLegacyLocalOwner() {
  return "unix:uid:" + std::to_string(::geteuid());
}

absl::StatusOr<ParseResult> ParseConfig(int argc, const char* const* argv) {
  ParseResult result;
  Config& c = result.config;
  CLI::App app{
      "pqcd: post-quantum cryptography daemon (ML-KEM, the hybrid KEMs X25519MLKEM768, "
      "SecP256r1MLKEM768, SecP384r1MLKEM1024 and X-Wing, ML-DSA, SLH-DSA, SHA-3/SHAKE, SM3, "
      "SHA-2) over gRPC",
      "pqcd"};
  app.get_formatter()->column_width(36);
  app.footer(
      "Every flag can also be set with the environment variable PQCD_<FLAG> (upper snake case, "
      "e.g.\n"
      "PQCD_LISTEN) or in a JSON --config file ({\"listen\": \"0.0.0.0:50051\", \"admin\": "
      "[\"tls:dns:ops\"]}).\n"
      "Precedence: command line > environment > config file > default.\n"
      "Identities (key owners, --admin values) are typed:\n"
      "  tls:uri:<URI SAN>   mTLS client certificate with a URI SAN (e.g. a SPIFFE id)\n"
      "  tls:dns:<DNS SAN>   mTLS client certificate with a DNS SAN (the first one)\n"
      "  unix:uid:<uid>      Unix socket caller (SO_PEERCRED)\n"
      "  unix:user:<name>    Unix socket caller whose uid is mapped by --unix-user NAME=UID\n"
      "  anonymous           plain TCP, TLS without client certificate, or a certificate without\n"
      "                      URI/DNS SAN; may use given keys always, held keys only with\n"
      "                      --allow-insecure-tcp (never for a certificate without SAN).\n"
      "SIGHUP re-reads --tls-cert, --tls-key and --tls-client-ca (kept if the new set is bad).");
  app.set_version_flag("--version", std::string("pqcd ") + PQCD_VERSION);
  app.config_formatter(std::make_shared<JsonConfig>());
  app.set_config("--config", "", "JSON config file")->envname("PQCD_CONFIG");

#define PQCD_REGISTER_FLAG(kind, flag, member, type, default_value, log, help, check) \
  AddFlag<FlagKind::k##kind>(app, flag, c.member, help, check);
  PQCD_SERVER_FLAGS(PQCD_REGISTER_FLAG)
#undef PQCD_REGISTER_FLAG

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    result.exit_now = true;
    result.exit_code = 0;
    result.output = app.help();
    return result;
  } catch (const CLI::CallForVersion& e) {
    result.exit_now = true;
    result.exit_code = 0;
    result.output = app.version() + "\n";
    return result;
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  c.config_file = app.get_config_ptr()->as<std::string>();
  result.effective_json = EffectiveConfigJson(app);

  if (c.listen == "none") c.listen.clear();
  if (c.metrics_listen == "none") c.metrics_listen.clear();
  if (c.listen.empty() && c.unix_socket.empty()) {
    return absl::InvalidArgumentError("nothing to listen on: give --listen and/or --unix");
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (!c.tls_client_ca.empty() && c.tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  for (const auto& admin : c.admins) {
    if (auto s = ValidateTypedIdentity(admin); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--admin: ", s.message()));
    }
  }
  if (auto s = ValidateTypedIdentity(c.legacy_local_owner); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--legacy-local-owner: ", s.message()));
  }
  for (const auto& entry : c.unix_users) {
    const size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    uint32_t uid = 0;
    const char* digits = eq == std::string::npos ? nullptr : entry.c_str() + eq + 1;
    const char* end = entry.c_str() + entry.size();
    if (digits == nullptr || digits == end || std::from_chars(digits, end, uid).ptr != end ||
        !ValidUnixUserName(name)) {
      return absl::InvalidArgumentError(
          "--unix-user takes NAME=UID (NAME: 1-64 of [A-Za-z0-9._-], UID: a number), got '" +
          entry + "'");
    }
    for (const auto& [other_uid, other_name] : c.unix_user_names) {
      if (other_uid == uid || other_name == name) {
        return absl::InvalidArgumentError("--unix-user: uid or name given twice: '" + entry + "'");
      }
    }
    c.unix_user_names.emplace(uid, name);
  }
  if (!c.data_dir.empty() && c.kek_file.empty()) {
    return absl::InvalidArgumentError("--data-dir needs --kek-file (the key-encryption key)");
  }
  if (!c.key_store.empty()) {
    if (!pqcd::server::internal::IsPostgresUri(c.key_store)) {
      return absl::InvalidArgumentError(
          "--key-store must be a postgres:// or postgresql:// URI (the file store is --data-dir)");
    }
    if (c.kek_file.empty()) {
      return absl::InvalidArgumentError(
          "--key-store needs --kek-file (records are sealed before they reach the database)");
    }
    if (!c.data_dir.empty() && c.import_data_dir.empty()) {
      return absl::InvalidArgumentError(
          "--key-store and --data-dir exclude each other; to move the keys of a data directory "
          "into the database, use --import-data-dir DIR");
    }
    if (!c.rotate_kek_to.empty()) {
      return absl::InvalidArgumentError(
          "--rotate-kek-to works on a --data-dir; a PostgreSQL key store cannot be re-sealed in "
          "place yet (docs/key-store-postgres.md)");
    }
  }
  if (!c.import_data_dir.empty() && c.key_store.empty()) {
    return absl::InvalidArgumentError(
        "--import-data-dir needs --key-store (the PostgreSQL database to copy the keys into) and "
        "--kek-file");
  }
  if (!c.rotate_kek_to.empty() && c.data_dir.empty()) {
    return absl::InvalidArgumentError(
        "--rotate-kek-to needs --data-dir and --kek-file (the directory and its current KEK)");
  }
  {
    char* end = nullptr;
    long mode = std::strtol(c.unix_mode.c_str(), &end, 8);
    if (c.unix_mode.empty() || *end != '\0' || mode < 0 || mode > 0777) {
      return absl::InvalidArgumentError("--unix-mode must be an octal mode like 0660, got '" +
                                        c.unix_mode + "'");
    }
  }
  return result;
}

}  // namespace pqcd::server
