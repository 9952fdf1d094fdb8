// Daemon configuration: flags, PQCD_<FLAG> environment variables and an optional JSON config file
// (--config). Precedence: command line > environment > config file > built-in default.
//
// Every flag is one row of PQCD_SERVER_FLAGS below, and nowhere else in the code: the row makes
// the Config member (type, default), the CLI11 option (help text, check, PQCD_<FLAG> environment
// variable, JSON config key) and its line in the effective-config log. server/README.md lists the
// flags for people; tests/server/unit_config.cc fails until it names exactly these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace pqcd::server {

// How a flag is given (column `kind` of a row).
enum class FlagKind {
  kOption,  // --name VALUE
  kSwitch,  // --name alone sets a bool (also --name=false, PQCD_NAME=true)
  kList,    // --name VALUE, repeatable: every value is kept, in order
};

// How the effective-config log shows a flag's value (column `log` of a row).
enum class FlagLog {
  kShown,     // as given
  kPresence,  // "<set>" or "": the path of a key file is not logged
  kRedacted,  // a postgres:// URI without its password
};

// The default of --legacy-local-owner: "unix:uid:" + pqcd's effective uid.
std::string DefaultLegacyLocalOwner();

// PQCD_SERVER_FLAGS(X): every daemon flag, in `pqcd --help` order; each row is
//   X(kind, "flag-name", member, type, default, log, help, check)
// kind: FlagKind without its k (Option, Switch, List); log: FlagLog without its k (Shown,
// Presence, Redacted); check: a CLI11 validator or kNoCheck. The check column is expanded only in
// config.cc, where CLI11 and IsaChoices() are visible. Flags whose value is parsed further or
// checked against other flags (--unix-user NAME=UID, --admin, --unix-mode, --listen none, ...)
// are checked after parsing, in ParseConfig.
// Comments inside the table are /* */ ones: a // comment would swallow the line continuation.
#define PQCD_SERVER_FLAGS(X)                                                                       \
  X(Option, "listen", listen, std::string, "127.0.0.1:50051", Shown,                               \
    "TCP listen address host:port (port 0: any free port; 'none': no TCP)", kNoCheck)              \
  X(Option, "unix", unix_socket, std::string, "", Shown,                                           \
    "Unix domain socket path (sidecars; identity unix:uid:<uid>)", kNoCheck)                       \
  X(Option, "unix-mode", unix_mode, std::string, "0660", Shown,                                    \
    "file mode of the Unix socket (octal)", kNoCheck)                                              \
  X(Option, "tls-cert", tls_cert, std::string, "", Shown,                                          \
    "PEM server certificate chain: enables TLS on the TCP listener", kNoCheck)                     \
  X(Option, "tls-key", tls_key, std::string, "", Presence, "PEM server private key", kNoCheck)     \
  X(Option, "tls-client-ca", tls_client_ca, std::string, "", Shown,                                \
    "PEM CA bundle: require and verify client certificates (mTLS)", kNoCheck)                      \
  X(Option, "tls-min-version", tls_min_version, std::string, "1.2", Shown,                         \
    "lowest TLS version accepted on the TCP listener", CLI::IsMember({"1.2", "1.3"}))              \
  /* Parsed into Config::unix_user_names after parsing. */                                         \
  X(List, "unix-user", unix_users, std::vector<std::string>, {}, Shown,                            \
    "NAME=UID: Unix socket callers with this uid are unix:user:NAME (repeatable)", kNoCheck)       \
  X(Option, "max-unix-connections", max_unix_connections, uint32_t, 1024, Shown,                   \
    "Unix socket connections open at once; further ones are closed at once",                       \
    CLI::Range(1u, 1u << 20))                                                                      \
  X(Option, "max-unix-connections-per-uid", max_unix_connections_per_uid, uint32_t, 256, Shown,    \
    "Unix socket connections open at once from one uid (so that one local user cannot take "       \
    "them all)",                                                                                   \
    CLI::Range(1u, 1u << 20))                                                                      \
  X(Option, "handshake-timeout", handshake_timeout_s, double, 5.0, Shown,                          \
    "seconds a new connection has to complete its handshake (HTTP/2 preface and SETTINGS; TLS "    \
    "on --listen) before it is closed",                                                            \
    CLI::Range(0.1, 3600.0))                                                                       \
  X(Option, "max-tcp-connections", max_tcp_connections, uint32_t, 4096, Shown,                     \
    "TCP connections on --listen open at once; further ones are closed at once",                   \
    CLI::Range(1u, 1u << 20))                                                                      \
  X(Option, "max-tcp-connections-per-address", max_tcp_connections_per_address, uint32_t, 1024,    \
    Shown,                                                                                         \
    "TCP connections open at once from one peer address (an IPv6 /64), so that one host cannot "   \
    "take them all",                                                                               \
    CLI::Range(1u, 1u << 20))                                                                      \
  X(Option, "connection-idle-timeout", connection_idle_timeout_s, double, 600, Shown,              \
    "seconds a connection may go without a call in progress before pqcd closes it gracefully "     \
    "(HTTP/2 GOAWAY; clients reconnect on their next call); 0: never",                             \
    CLI::Range(0.0, 86400.0 * 365))                                                                \
  /* Shared-memory lanes on --unix PATH + ".lane" (server/src/lanes.h). */                         \
  X(Option, "lanes", lanes, std::string, "on", Shown,                                              \
    "shared-memory lanes for callers on this host, on the socket --unix PATH + \".lane\" "         \
    "(needs --unix): on | off",                                                                    \
    CLI::IsMember({"on", "off"}))                                                                  \
  X(Option, "max-lanes", max_lanes, uint32_t, 64, Shown,                                           \
    "lanes open at once (connections still asking for one count too); further ones are refused",   \
    CLI::Range(1u, 1u << 16))                                                                      \
  X(Option, "max-lanes-per-identity", max_lanes_per_identity, uint32_t, 8, Shown,                  \
    "lanes open at once of one identity (so that one local user cannot take them all)",            \
    CLI::Range(1u, 1u << 16))                                                                      \
  X(Option, "lane-slots", lane_slots, uint32_t, 128, Shown,                                        \
    "the most requests one lane may have in flight (its slots; a power of two is used)",           \
    CLI::Range(1u, 256u))                                                                          \
  X(Option, "lane-max-input", lane_max_input, uint32_t, 16384, Shown,                              \
    "the longest message or hash input (and hash output) a lane request may carry, in bytes; "     \
    "it sizes every slot (longer ones: gRPC)",                                                     \
    CLI::Range(64u, 1u << 20))                                                                     \
  X(Switch, "allow-insecure-tcp", allow_insecure_tcp, bool, false, Shown,                          \
    "let callers without a client certificate (identity 'anonymous') use held keys", kNoCheck)     \
  /* Each value is checked (a typed identity) after parsing. */                                    \
  X(List, "admin", admins, std::vector<std::string>, {}, Shown,                                    \
    "typed identity (tls:dns:, tls:uri:, unix:uid:, unix:user:) that manages every key "           \
    "(repeatable)",                                                                                \
    kNoCheck)                                                                                      \
  X(Switch, "allow-admin-key-use", allow_admin_key_use, bool, false, Shown,                        \
    "let --admin identities also use (sign, decapsulate, ...) keys of other identities", kNoCheck) \
  X(Switch, "audit-key-use", audit_key_use, bool, false, Shown,                                    \
    "audit every use of a held key, not only uses by another identity than the owner", kNoCheck)   \
  X(Option, "legacy-local-owner", legacy_local_owner, std::string, DefaultLegacyLocalOwner(),      \
    Shown, "owner given to held keys that older versions stored with owner 'local'", kNoCheck)     \
  X(Option, "data-dir", data_dir, std::string, "", Shown,                                          \
    "persist held keys here (sealed with AES-256-GCM); empty: memory only", kNoCheck)              \
  X(Option, "kek-file", kek_file, std::string, "", Presence,                                       \
    "key-encryption key file (32 raw bytes or 64 hex characters)", kNoCheck)                       \
  X(Switch, "allow-shared-kek-file", allow_shared_kek_file, bool, false, Shown,                    \
    "accept a --kek-file that group or others may access (refused otherwise)", kNoCheck)           \
  X(Option, "max-keys-per-owner", max_keys_per_owner, uint32_t, 1000, Shown,                       \
    "held keys (not versions) one identity may have (0: unlimited)", kNoCheck)                     \
  X(Option, "max-versions-per-key", max_versions_per_key, uint32_t, 100, Shown,                    \
    "versions one held key may have at once; Rotate refuses past it (0: unlimited)", kNoCheck)     \
  X(Option, "locked-memory-per-owner", locked_memory_per_owner_kib, uint32_t, 16384, Shown,        \
    "KiB of locked memory (private keys and their prepared forms) one identity's held keys may "   \
    "take; at most an eighth of a finite RLIMIT_MEMLOCK is used, so that no identity can use it "  \
    "up for the others (0: unlimited)",                                                            \
    CLI::Range(0u, 1u << 30))                                                                      \
  X(Option, "key-memory-per-owner", key_memory_per_owner_kib, uint32_t, 65536, Shown,              \
    "KiB of ordinary memory (public keys, labels: every version carries its key's labels) one "    \
    "identity's held keys may take (0: unlimited)",                                                \
    CLI::Range(0u, 1u << 30))                                                                      \
  /* A mode: re-seal, print, exit. */                                                              \
  X(Option, "rotate-kek-to", rotate_kek_to, std::string, "", Presence,                             \
    "re-seal every held key in --data-dir (sealed under --kek-file) under the KEK in this file, "  \
    "print a summary and exit; resumable (rerun after an interruption)",                           \
    kNoCheck)                                                                                      \
  X(Option, "key-store", key_store, std::string, "", Redacted,                                     \
    "postgres:// URI: keep held keys in PostgreSQL, shared by every replica (sealed under "        \
    "--kek-file; carries a password, so prefer the environment variable PQCD_KEY_STORE)",          \
    kNoCheck)                                                                                      \
  X(Option, "key-store-reconcile-interval", key_store_reconcile_interval_s, double, 2, Shown,      \
    "seconds between checks of the key store database (changes also arrive by NOTIFY)",            \
    CLI::Range(0.05, 3600.0))                                                                      \
  X(Option, "key-store-max-staleness", key_store_max_staleness_s, double, 30, Shown,               \
    "seconds without reaching the key store database after which held keys are not used "          \
    "(UNAVAILABLE) until it is reachable again; 0: use cached keys without limit",                 \
    CLI::Range(0.0, 30.0 * 86400.0))                                                               \
  /* A mode: copy, print, exit. */                                                                 \
  X(Option, "import-data-dir", import_data_dir, std::string, "", Shown,                            \
    "copy every held key of this data directory (sealed under --kek-file; stop the daemon using "  \
    "it first) into --key-store, print a summary and exit; safe to rerun",                         \
    kNoCheck)                                                                                      \
  X(Option, "metrics-listen", metrics_listen, std::string, "127.0.0.1:9464", Shown,                \
    "Prometheus endpoint host:port, path /metrics ('none': off)", kNoCheck)                        \
  X(Option, "workers", workers, int, 0, Shown, "engine worker threads (0: one per physical core)", \
    CLI::Range(0, 4096))                                                                           \
  X(Option, "queue-capacity", queue_capacity, uint32_t, 4096, Shown, "per-NUMA-node queue bound",  \
    CLI::Range(2u, 1u << 24))                                                                      \
  X(Option, "max-batch", max_batch, int, 32, Shown, "jobs a worker takes per burst",               \
    CLI::Range(1, 256))                                                                            \
  /* Every backend the kernels know, and "auto"; CPU support is checked at start-up. */            \
  X(Option, "isa", isa, std::string, "auto", Shown, "kernel backend (one the CPU supports)",       \
    CLI::IsMember(IsaChoices()))                                                                   \
  X(Option, "log-level", log_level, std::string, "info", Shown, "log level",                       \
    CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))                 \
  X(Option, "log-format", log_format, std::string, "text", Shown, "log line format",               \
    CLI::IsMember({"text", "json"}))                                                               \
  X(Option, "grace-period", grace_period_s, double, 10.0, Shown,                                   \
    "seconds to finish in-flight requests on SIGTERM/SIGINT", CLI::Range(0.0, 3600.0))             \
  /* Resource bounds against hostile callers (SECURITY.md). */                                     \
  X(Option, "max-message-bytes", max_message_bytes, uint32_t, 16u << 20, Shown,                    \
    "max gRPC message size", CLI::Range(1024u, 1u << 30))                                          \
  X(Option, "max-field-bytes", max_field_bytes, uint32_t, 8u << 20, Shown,                         \
    "max size of one data/message field", CLI::Range(1u, 1u << 30))                                \
  X(Option, "max-batch-items", max_batch_items, uint32_t, 1024, Shown,                             \
    "max operations in one Batch request", CLI::Range(1u, 1u << 20))                               \
  X(Option, "max-stream-inflight", max_stream_inflight, uint32_t, 1024, Shown,                     \
    "operations in flight per Stream call", CLI::Range(1u, 1u << 20))                              \
  X(Option, "max-output-bytes", max_output_bytes, uint32_t, 64u << 10, Shown,                      \
    "max SHAKE output_length of one hash", CLI::Range(32u, 1u << 30))                              \
  X(Option, "max-stream-bytes", max_stream_bytes, uint32_t, 16u << 20, Shown,                      \
    "per Stream call: bytes of unanswered requests plus their expected answers before the "        \
    "daemon stops reading it",                                                                     \
    CLI::Range(1u << 16, 1u << 31))                                                                \
  X(Option, "hash-stream-max-bytes", hash_stream_max_bytes, uint64_t, 4ull << 30, Shown,           \
    "per HashStream: total data bytes", CLI::Range(uint64_t{1}, uint64_t{1} << 50))                \
  X(Option, "hash-stream-idle", hash_stream_idle_s, double, 30.0, Shown,                           \
    "per HashStream: seconds without a message before it is ended", CLI::Range(0.1, 86400.0))      \
  X(Option, "hash-stream-max-duration", hash_stream_max_s, double, 3600.0, Shown,                  \
    "per HashStream: seconds it may last", CLI::Range(0.1, 7.0 * 86400.0))                         \
  X(Option, "max-hash-streams", max_hash_streams, uint32_t, 64, Shown,                             \
    "concurrent HashStream calls", CLI::Range(1u, 1u << 20))                                       \
  X(Option, "max-hash-streams-per-identity", max_hash_streams_per_identity, uint32_t, 16, Shown,   \
    "concurrent HashStream calls of one caller identity", CLI::Range(1u, 1u << 20))                \
  X(Option, "max-streams", max_streams, uint32_t, 512, Shown, "concurrent Stream calls",           \
    CLI::Range(1u, 1u << 20))                                                                      \
  X(Option, "max-streams-per-identity", max_streams_per_identity, uint32_t, 32, Shown,             \
    "concurrent Stream calls of one caller identity", CLI::Range(1u, 1u << 20))                    \
  /* The default fits the sidecar manifest's 256 MiB pod beside the daemon's own ~50 MiB. */       \
  X(Option, "memory-limit", memory_limit_mb, uint32_t, 192, Shown,                                 \
    "MiB of requests being computed and answers not yet taken by their clients, over all "         \
    "callers; past it new work gets RESOURCE_EXHAUSTED (0: unlimited)",                            \
    CLI::Range(0u, 1u << 22))                                                                      \
  X(Option, "memory-per-identity", memory_per_identity_mb, uint32_t, 64, Shown,                    \
    "MiB of the same that one caller identity may hold (0: unlimited)", CLI::Range(0u, 1u << 22))  \
  X(Option, "unread-answer-timeout", unread_answer_timeout_s, double, 30.0, Shown,                 \
    "seconds an answer may wait for its client to take it; then the call is cancelled and its "    \
    "memory freed",                                                                                \
    CLI::Range(0.1, 86400.0))                                                                      \
  /* engine::EngineOptions::slow_job and its pool (issue 45: one slow Batch took every worker). */ \
  X(Option, "slow-job-ms", slow_job_ms, double, 1.0, Shown,                                        \
    "jobs estimated to take at least this many ms of CPU (SLH-DSA signing, large hashes) run on "  \
    "threads of their own below the workers, in fair turns between callers (0: on the workers)",   \
    CLI::Range(0.0, 60000.0))                                                                      \
  X(Option, "slow-workers", slow_workers, uint32_t, 0, Shown,                                      \
    "threads for slow jobs (0: one fewer than the workers, at least one)", CLI::Range(0u, 1024u))  \
  X(Option, "slow-queue-seconds", slow_queue_s, double, 240.0, Shown,                              \
    "estimated CPU seconds of slow jobs queued for all callers before RESOURCE_EXHAUSTED",         \
    CLI::Range(0.001, 86400.0))                                                                    \
  X(Option, "slow-queue-seconds-per-identity", slow_queue_per_identity_s, double, 60.0, Shown,     \
    "the same for one caller identity (one request larger than it is still taken while the "       \
    "caller has nothing queued)",                                                                  \
    CLI::Range(0.001, 86400.0))                                                                    \
  X(Option, "key-queue", key_queue, uint32_t, 64, Shown,                                           \
    "key-management requests (Keys.*, held KeyGen stores) queued before RESOURCE_EXHAUSTED",       \
    CLI::Range(1u, 1u << 20))                                                                      \
  X(Option, "grpc-memory-mb", grpc_memory_mb, uint32_t, 256, Shown,                                \
    "memory gRPC may use for all calls' buffers (ResourceQuota); keep it under the memory limit",  \
    CLI::Range(16u, 1u << 20))                                                                     \
  X(Option, "max-concurrent-streams", max_concurrent_streams, uint32_t, 128, Shown,                \
    "calls in progress per client connection (HTTP/2 MAX_CONCURRENT_STREAMS)",                     \
    CLI::Range(1u, 1u << 20))                                                                      \
  X(Option, "port-file", port_file, std::string, "", Shown,                                        \
    "once serving, write two lines to this file: the TCP port, then the metrics port", kNoCheck)   \
  /* engine::EngineOptions::run_inline_when_idle. A value, not a switch: --inline-crypto false. */ \
  X(Option, "inline-crypto", inline_crypto, bool, true, Shown,                                     \
    "run a burst too large for a worker's own queue at once on that worker, and the jobs of "      \
    "the key-management thread on that thread while a worker is idle (saves a thread "             \
    "hand-off; every call is served by the workers themselves)",                                   \
    kNoCheck)                                                                                      \
  /* glibc's M_TRIM_THRESHOLD (and the M_MMAP_THRESHOLD cap): see server.cc. */                    \
  X(Option, "malloc-retain-mb", malloc_retain_mb, uint32_t, 64, Shown,                             \
    "MiB of freed heap kept mapped for reuse (0: glibc's defaults)", CLI::Range(0u, 4096u))

struct Config {
#define PQCD_CONFIG_MEMBER(kind, flag, member, type, default_value, log, help, check) \
  type member = default_value;
  PQCD_SERVER_FLAGS(PQCD_CONFIG_MEMBER)
#undef PQCD_CONFIG_MEMBER

  // The members that are not rows of PQCD_SERVER_FLAGS; kConfigMembersNotFlags counts them, and
  // config.cc refuses to compile while Config has any other member.
  std::string config_file;  // --config: CLI11's own config-file option, read before the flags
  std::map<uint32_t, std::string> unix_user_names;  // --unix-user parsed: uid -> name
};
inline constexpr size_t kConfigMembersNotFlags = 2;

// The table's rows as data: for tests and the effective-config log.
struct FlagInfo {
  std::string_view name;  // without the leading "--"
  FlagKind kind;
  FlagLog log;
};
inline constexpr FlagInfo kFlags[] = {
#define PQCD_FLAG_INFO(kind, flag, member, type, default_value, log, help, check) \
  {flag, FlagKind::k##kind, FlagLog::k##log},
    PQCD_SERVER_FLAGS(PQCD_FLAG_INFO)
#undef PQCD_FLAG_INFO
};

// Parses argv (and the environment, and --config). On --help/--version prints and returns
// a status with code kCancelled carrying the exit code 0 in `exit_code`.
struct ParseResult {
  Config config;
  bool exit_now = false;  // --help / --version handled
  int exit_code = 0;
  std::string output;  // what to print when exit_now
  // The effective configuration as JSON (every flag under its config-file key, given or default),
  // for the start-up log: no key file paths, no database password.
  std::string effective_json;
};
absl::StatusOr<ParseResult> ParseConfig(int argc, const char* const* argv);

}  // namespace pqcd::server
