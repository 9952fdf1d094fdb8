// pqc-load's cost accounting (bench/pqc_load.cc): the CPU and context switches of the daemon
// (from /proc, or from its /metrics) and of pqc-load itself, sampled at the start and the end of
// the measured window and reported per request and per operation.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pqcd/client/client.h"

namespace pqcd::load {

// utime + stime of a whole process (all its threads, exited ones included), seconds.
std::optional<double> ProcCpuSeconds(int pid);
// Voluntary + non-voluntary context switches, summed over the process's live threads.
std::optional<uint64_t> ProcContextSwitches(int pid);
// GET of a plain-HTTP URL (http://host:port/path); the body of a 200 answer.
absl::StatusOr<std::string> HttpGet(const std::string& url);
// process_cpu_seconds_total from a Prometheus text exposition at `url`.
absl::StatusOr<double> ScrapeCpuSeconds(const std::string& url);

// One reading at the start or the end of the measured window.
struct CostSample {
  double client_cpu = 0;  // pqc-load's own user + system CPU, seconds
  uint64_t client_ctx = 0;
  std::optional<double> server_cpu;    // --server-pid (summed over the pids)
  std::optional<uint64_t> server_ctx;  // --server-pid
  std::optional<double> metrics_cpu;   // --server-metrics
  // Stream messages written and read by this process.
  std::optional<pqcd::client::StreamStats> messages;
};

class CostMeter {
 public:
  CostMeter(std::vector<int> server_pids, std::string server_metrics, bool in_process);

  // Checks once, before the run, that every source can be read.
  absl::Status Probe() const;

  // A reading now; `messages` (may be empty) counts this process's Stream messages.
  CostSample Take(const std::function<std::optional<pqcd::client::StreamStats>()>& messages) const;

  // The cost keys of the report. In-process, pqc-load is the server: its own CPU is reported as
  // the server's, so that one jq expression compares the two modes.
  nlohmann::json Report(const CostSample& a, const CostSample& b, double wall_s, uint64_t requests,
                        uint64_t ops) const;

 private:
  const std::vector<int> server_pids_;
  const std::string server_metrics_;
  const bool in_process_;
  int cores_ = 1;
};

}  // namespace pqcd::load
