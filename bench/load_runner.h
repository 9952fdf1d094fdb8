// pqc-load's runner: issues the mix's requests through a backend, closed loop (--concurrency
// users, or stream slots, each sending its next request when the previous one completed) or open
// loop (--rate, on a fixed schedule), for a warm-up and then --duration or --requests; records
// every completion (load_report.h's Stats), prints a progress line a second, and reads the cost
// meter at both ends of the measured window.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "load_backends.h"
#include "load_config.h"
#include "load_cost.h"
#include "load_mix.h"
#include "load_report.h"

namespace pqcd::load {

using Clock = std::chrono::steady_clock;

class Runner {
 public:
  Runner(const Config& cfg, Backend& backend, const CostMeter& meter, std::vector<MixEntry> mix,
         std::vector<Fixture> fixtures);

  int Run(double duration_s, double warmup_s);

  // After Run: what it recorded, for Report.
  const std::vector<MixEntry>& mix() const { return mix_; }
  const Stats& stats() const { return stats_; }
  Measurement measurement() const;

 private:
  // Messages written and read so far: the streams' (style stream) or the batching client's.
  std::optional<client::StreamStats> Messages();
  static Clock::duration ToDur(double s);
  static uint64_t Next(std::atomic<uint64_t>& state);
  size_t Pick(std::atomic<uint64_t>& rng) const;
  bool MayStart(Clock::time_point now);
  void Begin();
  void End();
  void Record(Clock::time_point started, uint64_t ops, const std::vector<int>& slots);
  void Issue(std::atomic<uint64_t>& rng, Clock::time_point started, client::Stream* stream,
             std::function<void()> next);
  void ClosedLoop();
  void Loop(int u, client::Stream* s);
  void OpenLoop();
  void Progress();

  struct User {
    std::atomic<uint64_t> rng{0};
  };

  const Config& cfg_;
  Backend& backend_;
  const CostMeter& meter_;
  CostSample cost_start_, cost_end_;
  bool run_over_ = false;  // guarded by mu_
  std::mutex streams_mu_;  // streams_ grows while the sampler may read it
  std::vector<MixEntry> mix_;
  std::vector<Fixture> fixtures_;
  std::vector<double> cumulative_;
  std::unique_ptr<User[]> users_;
  std::vector<std::unique_ptr<client::Stream>> streams_;
  Stats stats_;
  Clock::time_point start_, measure_from_, end_, measure_end_;
  std::atomic<Clock::time_point> last_completion_{Clock::time_point{}};
  std::atomic<uint64_t> measured_started_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> finished_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t outstanding_ = 0;
};

}  // namespace pqcd::load
