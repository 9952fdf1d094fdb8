// pqc-load's report: the statistics the runner records (latency histograms, counts, errors by
// slot), and the report made of them, as JSON (--json; bench/request_path.py and the tests parse
// it) or as text.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "load_config.h"
#include "load_cost.h"
#include "load_mix.h"
#include "pqcd/client/histogram.h"

namespace pqcd::load {

// What the runner records as requests complete: the whole measured window (total, requests, ops,
// errors) and the current second of the progress line (interval_*).
struct Stats {
  client::LatencyHistogram total, interval;
  std::atomic<uint64_t> requests{0}, ops{0}, interval_requests{0}, interval_ops{0};
  std::array<std::atomic<uint64_t>, kCodes> errors{};
  std::atomic<uint64_t> interval_errors{0};
};

// The measured window of a run.
struct Measurement {
  double seconds = 0;
  CostSample cost_start, cost_end;  // readings at its start and its end
  uint64_t dropped = 0;             // open loop: requests dropped at --max-outstanding
};

// The report's keys. mode: "grpc" or "in-process"; backend_extra: Backend::Extra().
nlohmann::json Report(const std::string& mode, const Config& cfg, const std::vector<MixEntry>& mix,
                      const Stats& stats, const Measurement& measured, const CostMeter& meter,
                      const nlohmann::json& backend_extra);

// The report as text on stdout.
void PrintText(const nlohmann::json& j);

}  // namespace pqcd::load
