#include "pqcd/server/config.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

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

std::string EnvName(const std::string& flag) {
  std::string name = "PQCD_";
  for (char c : flag) name += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return name;
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
  static const std::set<std::string> kHidden = {"tls-key", "kek-file", "rotate-kek-to"};
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
      if (kHidden.contains(name)) {
        j[key] = v.empty() ? "" : "<set>";
      } else if (name == "key-store") {
        j[key] = v.empty() ? "" : pqcd::server::internal::RedactDsn(v);
      } else {
        j[key] = typed(v);
      }
    }
  }
  return j.dump();
}

}  // namespace

absl::StatusOr<ParseResult> ParseConfig(int argc, const char* const* argv) {
  ParseResult result;
  Config& c = result.config;
  CLI::App app{
      "pqcd: post-quantum cryptography daemon (ML-KEM, ML-DSA, SLH-DSA, SHA-3/SHAKE, SM3, SHA-2) "
      "over gRPC",
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

  auto add = [&](const std::string& name, auto& target, const std::string& help) {
    return app.add_option("--" + name, target, help)->envname(EnvName(name))->capture_default_str();
  };
  add("listen", c.listen, "TCP listen address host:port (port 0: any free port; 'none': no TCP)");
  add("unix", c.unix_socket, "Unix domain socket path (sidecars; identity unix:uid:<uid>)");
  add("unix-mode", c.unix_mode, "file mode of the Unix socket (octal)");
  add("tls-cert", c.tls_cert, "PEM server certificate chain: enables TLS on the TCP listener");
  add("tls-key", c.tls_key, "PEM server private key");
  add("tls-client-ca", c.tls_client_ca,
      "PEM CA bundle: require and verify client certificates (mTLS)");
  add("tls-min-version", c.tls_min_version, "lowest TLS version accepted on the TCP listener")
      ->check(CLI::IsMember({"1.2", "1.3"}));
  add("unix-user", c.unix_users,
      "NAME=UID: Unix socket callers with this uid are unix:user:NAME (repeatable)")
      ->take_all();
  add("max-unix-connections", c.max_unix_connections,
      "Unix socket connections open at once; further ones are closed at once")
      ->check(CLI::Range(1u, 1u << 20));
  add("max-unix-connections-per-uid", c.max_unix_connections_per_uid,
      "Unix socket connections open at once from one uid (so that one local user cannot take "
      "them all)")
      ->check(CLI::Range(1u, 1u << 20));
  add("handshake-timeout", c.handshake_timeout_s,
      "seconds a new connection has to complete its handshake (HTTP/2 preface and SETTINGS; TLS "
      "on --listen) before it is closed")
      ->check(CLI::Range(0.1, 3600.0));
  add("max-tcp-connections", c.max_tcp_connections,
      "TCP connections on --listen open at once; further ones are closed at once")
      ->check(CLI::Range(1u, 1u << 20));
  add("max-tcp-connections-per-address", c.max_tcp_connections_per_address,
      "TCP connections open at once from one peer address (an IPv6 /64), so that one host cannot "
      "take them all")
      ->check(CLI::Range(1u, 1u << 20));
  add("connection-idle-timeout", c.connection_idle_timeout_s,
      "seconds a connection may go without a call in progress before pqcd closes it gracefully "
      "(HTTP/2 GOAWAY; clients reconnect on their next call); 0: never")
      ->check(CLI::Range(0.0, 86400.0 * 365));
  add("lanes", c.lanes,
      "shared-memory lanes for callers on this host, on the socket --unix PATH + \".lane\" "
      "(needs --unix): on | off")
      ->check(CLI::IsMember({"on", "off"}));
  add("max-lanes", c.max_lanes,
      "lanes open at once (connections still asking for one count too); further ones are refused")
      ->check(CLI::Range(1u, 1u << 16));
  add("max-lanes-per-identity", c.max_lanes_per_identity,
      "lanes open at once of one identity (so that one local user cannot take them all)")
      ->check(CLI::Range(1u, 1u << 16));
  add("lane-slots", c.lane_slots,
      "the most requests one lane may have in flight (its slots; a power of two is used)")
      ->check(CLI::Range(1u, 256u));
  add("lane-max-input", c.lane_max_input,
      "the longest message or hash input (and hash output) a lane request may carry, in bytes; "
      "it sizes every slot (longer ones: gRPC)")
      ->check(CLI::Range(64u, 1u << 20));
  app.add_flag("--allow-insecure-tcp", c.allow_insecure_tcp,
               "let callers without a client certificate (identity 'anonymous') use held keys")
      ->envname("PQCD_ALLOW_INSECURE_TCP");
  add("admin", c.admins,
      "typed identity (tls:dns:, tls:uri:, unix:uid:, unix:user:) that manages every key "
      "(repeatable)")
      ->take_all();
  app.add_flag("--allow-admin-key-use", c.allow_admin_key_use,
               "let --admin identities also use (sign, decapsulate, ...) keys of other identities")
      ->envname("PQCD_ALLOW_ADMIN_KEY_USE");
  app.add_flag("--audit-key-use", c.audit_key_use,
               "audit every use of a held key, not only uses by another identity than the owner")
      ->envname("PQCD_AUDIT_KEY_USE");
  c.legacy_local_owner = "unix:uid:" + std::to_string(::geteuid());
  add("legacy-local-owner", c.legacy_local_owner,
      "owner given to held keys that older versions stored with owner 'local'");
  add("data-dir", c.data_dir,
      "persist held keys here (sealed with AES-256-GCM); empty: memory only");
  add("kek-file", c.kek_file, "key-encryption key file (32 raw bytes or 64 hex characters)");
  app.add_flag("--allow-shared-kek-file", c.allow_shared_kek_file,
               "accept a --kek-file that group or others may access (refused otherwise)")
      ->envname("PQCD_ALLOW_SHARED_KEK_FILE");
  add("max-keys-per-owner", c.max_keys_per_owner,
      "held keys (not versions) one identity may have (0: unlimited)");
  add("max-versions-per-key", c.max_versions_per_key,
      "versions one held key may have at once; Rotate refuses past it (0: unlimited)");
  add("locked-memory-per-owner", c.locked_memory_per_owner_kib,
      "KiB of locked memory (private keys and their prepared forms) one identity's held keys may "
      "take; at most an eighth of a finite RLIMIT_MEMLOCK is used, so that no identity can use it "
      "up for the others (0: unlimited)")
      ->check(CLI::Range(0u, 1u << 30));
  add("key-memory-per-owner", c.key_memory_per_owner_kib,
      "KiB of ordinary memory (public keys, labels: every version carries its key's labels) one "
      "identity's held keys may take (0: unlimited)")
      ->check(CLI::Range(0u, 1u << 30));
  add("rotate-kek-to", c.rotate_kek_to,
      "re-seal every held key in --data-dir (sealed under --kek-file) under the KEK in this file, "
      "print a summary and exit; resumable (rerun after an interruption)");
  add("key-store", c.key_store,
      "postgres:// URI: keep held keys in PostgreSQL, shared by every replica (sealed under "
      "--kek-file; carries a password, so prefer the environment variable PQCD_KEY_STORE)");
  add("key-store-reconcile-interval", c.key_store_reconcile_interval_s,
      "seconds between checks of the key store database (changes also arrive by NOTIFY)")
      ->check(CLI::Range(0.05, 3600.0));
  add("key-store-max-staleness", c.key_store_max_staleness_s,
      "seconds without reaching the key store database after which held keys are not used "
      "(UNAVAILABLE) until it is reachable again; 0: use cached keys without limit")
      ->check(CLI::Range(0.0, 30.0 * 86400.0));
  add("import-data-dir", c.import_data_dir,
      "copy every held key of this data directory (sealed under --kek-file; stop the daemon using "
      "it first) into --key-store, print a summary and exit; safe to rerun");
  add("metrics-listen", c.metrics_listen,
      "Prometheus endpoint host:port, path /metrics ('none': off)");
  add("workers", c.workers, "engine worker threads (0: one per physical core)")
      ->check(CLI::Range(0, 4096));
  add("queue-capacity", c.queue_capacity, "per-NUMA-node queue bound")
      ->check(CLI::Range(2u, 1u << 24));
  add("max-batch", c.max_batch, "jobs a worker takes per burst")->check(CLI::Range(1, 256));
  add("isa", c.isa, "kernel backend (one the CPU supports)")->check(CLI::IsMember(IsaChoices()));
  add("log-level", c.log_level, "log level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  add("log-format", c.log_format, "log line format")->check(CLI::IsMember({"text", "json"}));
  add("grace-period", c.grace_period_s, "seconds to finish in-flight requests on SIGTERM/SIGINT")
      ->check(CLI::Range(0.0, 3600.0));
  add("max-message-bytes", c.max_message_bytes, "max gRPC message size")
      ->check(CLI::Range(1024u, 1u << 30));
  add("max-field-bytes", c.max_field_bytes, "max size of one data/message field")
      ->check(CLI::Range(1u, 1u << 30));
  add("max-batch-items", c.max_batch_items, "max operations in one Batch request")
      ->check(CLI::Range(1u, 1u << 20));
  add("max-stream-inflight", c.max_stream_inflight, "operations in flight per Stream call")
      ->check(CLI::Range(1u, 1u << 20));
  add("max-output-bytes", c.max_output_bytes, "max SHAKE output_length of one hash")
      ->check(CLI::Range(32u, 1u << 30));
  add("max-stream-bytes", c.max_stream_bytes,
      "per Stream call: bytes of unanswered requests plus their expected answers before the daemon "
      "stops reading it")
      ->check(CLI::Range(1u << 16, 1u << 31));
  add("hash-stream-max-bytes", c.hash_stream_max_bytes, "per HashStream: total data bytes")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50));
  add("hash-stream-idle", c.hash_stream_idle_s,
      "per HashStream: seconds without a message before it is ended")
      ->check(CLI::Range(0.1, 86400.0));
  add("hash-stream-max-duration", c.hash_stream_max_s, "per HashStream: seconds it may last")
      ->check(CLI::Range(0.1, 7.0 * 86400.0));
  add("max-hash-streams", c.max_hash_streams, "concurrent HashStream calls")
      ->check(CLI::Range(1u, 1u << 20));
  add("max-hash-streams-per-identity", c.max_hash_streams_per_identity,
      "concurrent HashStream calls of one caller identity")
      ->check(CLI::Range(1u, 1u << 20));
  add("max-streams", c.max_streams, "concurrent Stream calls")->check(CLI::Range(1u, 1u << 20));
  add("max-streams-per-identity", c.max_streams_per_identity,
      "concurrent Stream calls of one caller identity")
      ->check(CLI::Range(1u, 1u << 20));
  add("memory-limit", c.memory_limit_mb,
      "MiB of requests being computed and answers not yet taken by their clients, over all "
      "callers; past it new work gets RESOURCE_EXHAUSTED (0: unlimited)")
      ->check(CLI::Range(0u, 1u << 22));
  add("memory-per-identity", c.memory_per_identity_mb,
      "MiB of the same that one caller identity may hold (0: unlimited)")
      ->check(CLI::Range(0u, 1u << 22));
  add("unread-answer-timeout", c.unread_answer_timeout_s,
      "seconds an answer may wait for its client to take it; then the call is cancelled and its "
      "memory freed")
      ->check(CLI::Range(0.1, 86400.0));
  add("key-queue", c.key_queue,
      "key-management requests (Keys.*, held KeyGen stores) queued before RESOURCE_EXHAUSTED")
      ->check(CLI::Range(1u, 1u << 20));
  add("grpc-memory-mb", c.grpc_memory_mb,
      "memory gRPC may use for all calls' buffers (ResourceQuota); keep it under the memory limit")
      ->check(CLI::Range(16u, 1u << 20));
  add("max-concurrent-streams", c.max_concurrent_streams,
      "calls in progress per client connection (HTTP/2 MAX_CONCURRENT_STREAMS)")
      ->check(CLI::Range(1u, 1u << 20));
  add("port-file", c.port_file, "write the selected TCP port to this file once listening");
  add("inline-crypto", c.inline_crypto,
      "run a burst too large for a worker's own queue at once on that worker, and the jobs of "
      "the key-management thread on that thread while a worker is idle (saves a thread "
      "hand-off; every call is served by the workers themselves)");
  add("malloc-retain-mb", c.malloc_retain_mb,
      "MiB of freed heap kept mapped for reuse (0: glibc's defaults)")
      ->check(CLI::Range(0u, 4096u));

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
