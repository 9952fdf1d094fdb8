// Daemon configuration: flags, PQCD_<FLAG> environment variables and an optional JSON config file
// (--config). Precedence: command line > environment > config file > built-in default.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pqcd::server {

struct Config {
  std::string listen = "127.0.0.1:50051";  // "" or "none": no TCP listener
  std::string unix_socket;                 // path of the Unix domain socket listener; "": none
  std::string unix_mode = "0660";          // octal file mode of the socket
  std::string tls_cert;                    // PEM server certificate chain (enables TLS)
  std::string tls_key;                     // PEM server private key
  std::string tls_client_ca;               // PEM CA bundle: requires and verifies client certs
  bool allow_insecure_tcp = false;      // plain-TCP/TLS-without-client-cert callers may hold keys
  std::vector<std::string> admins;      // typed identities that manage every key
  bool allow_admin_key_use = false;     // admins may also use other identities' held keys
  bool audit_key_use = false;           // audit every held-key use, not only non-owner uses
  std::vector<std::string> unix_users;  // --unix-user NAME=UID, as given
  std::map<uint32_t, std::string> unix_user_names;  // parsed --unix-user: uid -> name
  uint32_t max_unix_connections = 1024;             // Unix socket connections at once
  uint32_t max_unix_connections_per_uid = 256;      // ... from one uid
  double handshake_timeout_s = 5.0;                 // to complete the HTTP/2 (and TLS) handshake
  uint32_t max_tcp_connections = 4096;              // TCP connections on --listen at once
  uint32_t max_tcp_connections_per_address = 1024;  // ... from one peer address (IPv6: /64)
  double connection_idle_timeout_s = 600;           // no call in progress: GOAWAY; 0: never
  // Shared-memory lanes on --unix PATH + ".lane" (server/src/lanes.h).
  std::string lanes = "on";             // on | off
  uint32_t max_lanes = 64;              // lanes open at once (and connections asking for one)
  uint32_t max_lanes_per_identity = 8;  // ... of one identity
  uint32_t lane_slots = 128;            // the most requests one lane may have in flight
  uint32_t lane_max_input = 16384;      // the longest input (message, data) on a lane
  std::string tls_min_version = "1.2";  // 1.2 or 1.3
  std::string legacy_local_owner;       // owner given to keys that the old code stored as "local"
  std::string data_dir;                 // held keys persisted here; "": memory only
  std::string kek_file;                 // key-encryption key (32 raw bytes or 64 hex chars)

  // Accept a KEK file with group/other permission bits (refused otherwise).
  bool allow_shared_kek_file = false;
  // Held keys (not versions) per identity; 0: unlimited.
  uint32_t max_keys_per_owner = 1000;
  uint32_t max_versions_per_key = 100;  // Rotate refuses past it (0: unlimited)
  // KiB of locked memory one owner's held keys may take (0: unlimited); at most an eighth of a
  // finite RLIMIT_MEMLOCK is used.
  uint32_t locked_memory_per_owner_kib = 16384;
  // KiB of ordinary memory (public keys, labels) one owner's held key versions may take.
  uint32_t key_memory_per_owner_kib = 65536;
  // KEK rotation mode: re-seal --data-dir under the KEK in this file, print a summary and exit.
  std::string rotate_kek_to;
  // Held keys in PostgreSQL (a postgres:// URI; may carry a password: never logged), shared by
  // every replica using it. "": --data-dir or memory.
  std::string key_store;
  double key_store_reconcile_interval_s = 2;  // check the database this often besides NOTIFY
  double key_store_max_staleness_s = 30;      // stop using cached keys after this long unsynced
  // Import mode: copy the held keys of this data directory into --key-store, print, exit.
  std::string import_data_dir;

  std::string metrics_listen = "127.0.0.1:9464";  // "" or "none": no metrics endpoint
  int workers = 0;                                // engine workers; 0: one per physical core
  uint32_t queue_capacity = 4096;                 // per-NUMA-node queue bound
  int max_batch = 32;                             // jobs per worker burst
  std::string isa = "auto";                       // portable|avx2|avx512|neon|auto
  std::string log_level = "info";                 // trace|debug|info|warn|error|critical|off
  std::string log_format = "text";                // text|json
  std::string config_file;
  double grace_period_s = 10.0;            // drain: time to finish in-flight work
  uint32_t max_message_bytes = 16u << 20;  // gRPC max receive/send message size
  uint32_t max_field_bytes = 8u << 20;     // max bytes of one data/message field
  uint32_t max_batch_items = 1024;         // max operations in one Batch request
  uint32_t max_stream_inflight =
      1024;  // per Stream call: operations in flight before pausing reads
  // Resource bounds against hostile callers (SECURITY.md).
  uint32_t max_output_bytes =
      64u << 10;  // SHAKE output_length cap (Hash, Batch, Stream, HashStream)
  uint32_t max_stream_bytes = 16u << 20;  // per Stream: unanswered input + expected answer bytes
  uint64_t hash_stream_max_bytes = 4ull << 30;  // per HashStream: total data bytes
  double hash_stream_idle_s = 30.0;             // per HashStream: longest gap between messages
  double hash_stream_max_s = 3600.0;            // per HashStream: longest duration
  uint32_t max_hash_streams = 64;               // concurrent HashStreams
  uint32_t max_hash_streams_per_identity = 16;  // ... of one caller identity
  uint32_t max_streams = 512;                   // concurrent Stream calls
  uint32_t max_streams_per_identity = 32;       // ... of one caller identity
  // Requests being computed and answers not yet taken, over all callers and per identity (MiB;
  // 0: unlimited), and how long an answer may wait for its client to take it.
  // The default fits the sidecar manifest's 256 MiB pod beside the daemon's own ~50 MiB.
  uint32_t memory_limit_mb = 192;
  uint32_t memory_per_identity_mb = 64;
  double unread_answer_timeout_s = 30.0;
  uint32_t key_queue = 64;                // queued key-management requests
  uint32_t grpc_memory_mb = 256;          // gRPC ResourceQuota (buffers of every call)
  uint32_t max_concurrent_streams = 128;  // per connection (HTTP/2 streams)
  std::string port_file;                  // the selected TCP port is written here
  // Freed heap memory glibc keeps mapped instead of returning it to the kernel (M_TRIM_THRESHOLD;
  // also the M_MMAP_THRESHOLD cap): without it every large message buffer costs fresh page faults.
  uint32_t malloc_retain_mb = 64;
  // Run a request's jobs on the gRPC thread that received it when a worker of its node is idle
  // (engine::EngineOptions::run_inline_when_idle) instead of handing them to that worker.
  bool inline_crypto = true;
  int io_threads = 0;  // reserved for future use (gRPC sizes its own pool)
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
