// Daemon configuration: flags, PQCD_<FLAG> environment variables and an optional JSON config file
// (--config). Precedence: command line > environment > config file > built-in default.
#pragma once

#include <cstdint>
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
  bool allow_insecure_tcp = false;  // plain-TCP/TLS-without-client-cert callers may hold keys
  std::vector<std::string> admins;  // identities that manage every key
  std::string data_dir;             // held keys persisted here; "": memory only
  std::string kek_file;             // key-encryption key (32 raw bytes or 64 hex chars)
  std::string metrics_listen = "127.0.0.1:9464";  // "" or "none": no metrics endpoint
  int workers = 0;                                // engine workers; 0: one per physical core
  uint32_t queue_capacity = 4096;                 // per-NUMA-node queue bound
  int max_batch = 32;                             // jobs per worker burst
  std::string isa = "auto";                       // portable|avx2|avx512|auto
  std::string log_level = "info";                 // trace|debug|info|warn|error|critical|off
  std::string log_format = "text";                // text|json
  std::string config_file;
  double grace_period_s = 10.0;            // drain: time to finish in-flight work
  uint32_t max_message_bytes = 16u << 20;  // gRPC max receive/send message size
  uint32_t max_field_bytes = 8u << 20;     // max bytes of one data/message field
  uint32_t max_batch_items = 1024;         // max operations in one Batch request
  uint32_t max_stream_inflight =
      1024;               // per Stream call: operations in flight before pausing reads
  std::string port_file;  // the selected TCP port is written here
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
};
absl::StatusOr<ParseResult> ParseConfig(int argc, const char* const* argv);

// The effective configuration as JSON, without secrets (paths of key files are shown, never
// contents).
std::string ConfigToJson(const Config& config);

}  // namespace pqcd::server
