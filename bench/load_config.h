// pqc-load's settings (bench/pqc_load.cc fills them from its flags): what the runner
// (load_runner.h) and the report (load_report.h) read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "connection_flags.h"

namespace pqcd::load {

struct Config {
  pqcd::cli::ConnectionFlags connection;
  std::string op = "ML-KEM-768:decaps";
  int concurrency = 16;
  double rate = 0;
  std::string duration = "10s", warmup = "1s";
  uint64_t requests = 0;
  std::string style = "unary";
  std::string private_key = "expanded";
  int batch_size = 8;
  int inflight = 16;
  int pack = 0;  // operations per Stream message (stream, auto); 0: the client's default
  int channels = 0;
  size_t payload = 64;
  bool json = false, quiet = false, in_process = false;
  int workers = 0;
  double timeout_s = 30;
  uint64_t max_outstanding = 100000;
  std::vector<int> server_pids;
  std::string server_metrics;
};

}  // namespace pqcd::load
