// pqc-load's runner: closed and open loops, pacing, the measured window, the progress line.
#include "load_runner.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>

namespace pqcd::load {

using namespace pqcd::client;  // NOLINT

Runner::Runner(const Config& cfg, Backend& backend, const CostMeter& meter,
               std::vector<MixEntry> mix, std::vector<Fixture> fixtures)
    : cfg_(cfg),
      backend_(backend),
      meter_(meter),
      mix_(std::move(mix)),
      fixtures_(std::move(fixtures)) {
  double sum = 0;
  for (const auto& e : mix_) sum += e.weight;
  double acc = 0;
  for (const auto& e : mix_) {
    acc += e.weight / sum;
    cumulative_.push_back(acc);
  }
  cumulative_.back() = 1.0;
}

int Runner::Run(double duration_s, double warmup_s) {
  start_ = Clock::now();
  measure_from_ = start_ + ToDur(warmup_s);
  end_ = cfg_.requests > 0 ? Clock::time_point::max() : measure_from_ + ToDur(duration_s);
  std::thread progress([&] { Progress(); });
  // Cost readings at both ends of the measured window: its start, and the end of the duration
  // (or, with --requests, the end of the run).
  std::thread sampler([&] {
    std::this_thread::sleep_until(measure_from_);
    cost_start_ = meter_.Take([this] { return Messages(); });
    std::unique_lock lock(mu_);
    if (end_ == Clock::time_point::max()) {
      cv_.wait(lock, [&] { return run_over_; });
    } else {
      cv_.wait_until(lock, end_, [&] { return run_over_; });
    }
    lock.unlock();
    cost_end_ = meter_.Take([this] { return Messages(); });
  });
  if (cfg_.rate > 0) {
    OpenLoop();
  } else {
    ClosedLoop();
  }
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return outstanding_ == 0; });
    run_over_ = true;
    cv_.notify_all();
  }
  sampler.join();
  measure_end_ = std::min(Clock::now(), end_);
  if (cfg_.requests > 0) measure_end_ = last_completion_.load();
  finished_ = true;
  progress.join();
  for (auto& s : streams_) (void)s->Finish();
  return 0;
}

// Messages written and read so far: the streams' (style stream) or the batching client's.
std::optional<StreamStats> Runner::Messages() {
  if (cfg_.style == "auto") return backend_.BatchingStats();
  if (cfg_.style != "stream") return std::nullopt;
  StreamStats total;
  std::lock_guard lock(streams_mu_);
  for (const auto& st : streams_) {
    const StreamStats s = st->stats();
    total.messages_sent += s.messages_sent;
    total.operations_sent += s.operations_sent;
    total.messages_received += s.messages_received;
    total.results_received += s.results_received;
  }
  return total;
}

Clock::duration Runner::ToDur(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// splitmix64 over a shared counter: cheap, thread-safe, reproducible per user.
uint64_t Runner::Next(std::atomic<uint64_t>& state) {
  uint64_t z = state.fetch_add(0x9e3779b97f4a7c15ull, std::memory_order_relaxed);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
size_t Runner::Pick(std::atomic<uint64_t>& rng) const {
  const double u = static_cast<double>(Next(rng) >> 11) * 0x1.0p-53;
  return static_cast<size_t>(std::lower_bound(cumulative_.begin(), cumulative_.end(), u) -
                             cumulative_.begin());
}

// Decides whether one more request may start (the stop conditions).
bool Runner::MayStart(Clock::time_point now) {
  if (now >= end_) return false;
  if (cfg_.requests > 0 && now >= measure_from_) {
    if (measured_started_.fetch_add(1) >= cfg_.requests) return false;
  }
  return true;
}

void Runner::Begin() {
  std::lock_guard lock(mu_);
  ++outstanding_;
}
void Runner::End() {
  std::lock_guard lock(mu_);
  if (--outstanding_ == 0) cv_.notify_all();
}

// Records one completed request of `ops` operations; slots are the per-op error classes.
void Runner::Record(Clock::time_point started, uint64_t ops, const std::vector<int>& slots) {
  const Clock::time_point now = Clock::now();
  const uint64_t ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - started).count());
  uint64_t errs = 0;
  for (int s : slots) errs += s != 0;
  stats_.interval.Record(ns);
  stats_.interval_requests.fetch_add(1);
  stats_.interval_ops.fetch_add(ops);
  stats_.interval_errors.fetch_add(errs);
  if (started >= measure_from_ && started < end_) {
    stats_.total.Record(ns);
    stats_.requests.fetch_add(1);
    stats_.ops.fetch_add(ops - errs);
    for (int s : slots) {
      if (s) stats_.errors[s].fetch_add(1);
    }
    Clock::time_point prev = last_completion_.load();
    while (now > prev && !last_completion_.compare_exchange_weak(prev, now)) {
    }
  }
}

// Issues one request (unary, batch, or on a stream); `next` runs after it completed.
void Runner::Issue(std::atomic<uint64_t>& rng, Clock::time_point started, Stream* stream,
                   std::function<void()> next) {
  Begin();
  if (cfg_.style == "batch") {
    std::vector<Operation> ops;
    std::vector<size_t> which;
    for (int i = 0; i < cfg_.batch_size; ++i) {
      const size_t k = Pick(rng);
      which.push_back(k);
      ops.push_back(MakeOp(mix_[k], fixtures_[k]));
    }
    backend_.RunBatch(std::move(ops), [this, started, which, next](absl::StatusOr<BatchResults> r) {
      std::vector<int> slots;
      for (size_t i = 0; i < which.size(); ++i) {
        slots.push_back(r.ok() ? Classify((*r)[i], mix_[which[i]], fixtures_[which[i]])
                               : static_cast<int>(r.status().code()));
      }
      Record(started, which.size(), slots);
      if (next) next();
      End();
    });
    return;
  }
  const size_t k = Pick(rng);
  auto done = [this, started, k, next](absl::StatusOr<Result> r) {
    Record(started, 1, {Classify(r, mix_[k], fixtures_[k])});
    if (next) next();
    End();
  };
  if (stream != nullptr) {
    absl::Status s = stream->Submit(MakeOp(mix_[k], fixtures_[k]), done);
    if (!s.ok()) {  // the stream has ended: count the error and stop this slot
      Record(started, 1, {static_cast<int>(s.code())});
      End();
    }
    return;
  }
  backend_.Run(MakeOp(mix_[k], fixtures_[k]), std::move(done));
}

// Closed loop: each user (or each stream slot) issues its next request when the previous ends.
void Runner::ClosedLoop() {
  const bool stream = cfg_.style == "stream" && backend_.SupportsStream();
  const int slots_per_user = stream ? cfg_.inflight : 1;
  users_ = std::make_unique<User[]>(static_cast<size_t>(cfg_.concurrency));
  for (int u = 0; u < cfg_.concurrency; ++u) {
    Stream* s = nullptr;
    if (stream) {
      auto st =
          backend_.OpenStream(static_cast<size_t>(cfg_.inflight), static_cast<size_t>(cfg_.pack));
      if (!st.ok()) {
        std::cerr << "pqc-load: cannot open a stream: " << st.status() << '\n';
        continue;
      }
      s = st->get();
      std::lock_guard lock(streams_mu_);
      streams_.push_back(*std::move(st));
    }
    users_[u].rng.store(1000 + static_cast<uint64_t>(u));
    for (int slot = 0; slot < slots_per_user; ++slot) Loop(u, s);
  }
}
void Runner::Loop(int u, Stream* s) {
  const Clock::time_point now = Clock::now();
  if (!MayStart(now)) return;
  Issue(users_[u].rng, now, s, [this, u, s] { Loop(u, s); });
}

// Open loop: requests leave on a fixed schedule whatever the answers; latency is measured
// from the scheduled time so that a slow server cannot hide its queueing.
void Runner::OpenLoop() {
  const bool stream = cfg_.style == "stream" && backend_.SupportsStream();
  if (stream) {
    for (int u = 0; u < std::max(1, cfg_.concurrency); ++u) {
      auto st = backend_.OpenStream(static_cast<size_t>(std::max(cfg_.inflight, 1)),
                                    static_cast<size_t>(cfg_.pack));
      std::lock_guard lock(streams_mu_);
      if (st.ok()) streams_.push_back(*std::move(st));
    }
  }
  std::atomic<uint64_t> rng{99};
  const auto interval = ToDur(1.0 / cfg_.rate);
  Clock::time_point t = start_;
  for (uint64_t i = 0;; ++i) {
    t = start_ + interval * static_cast<int64_t>(i);
    std::this_thread::sleep_until(t);
    if (!MayStart(t)) break;
    {
      std::lock_guard lock(mu_);
      if (outstanding_ >= cfg_.max_outstanding) {
        dropped_.fetch_add(1);
        continue;
      }
    }
    Stream* s = streams_.empty() ? nullptr : streams_[i % streams_.size()].get();
    Issue(rng, t, s, nullptr);
  }
}

void Runner::Progress() {
  auto next = start_ + std::chrono::seconds(1);
  while (!finished_) {
    std::this_thread::sleep_until(std::min(next, Clock::now() + std::chrono::milliseconds(50)));
    if (Clock::now() < next) continue;
    const double t = std::chrono::duration<double>(Clock::now() - start_).count();
    LatencyHistogram snap(stats_.interval);
    stats_.interval.Reset();
    const uint64_t reqs = stats_.interval_requests.exchange(0);
    const uint64_t ops = stats_.interval_ops.exchange(0);
    const uint64_t errs = stats_.interval_errors.exchange(0);
    if (!cfg_.quiet) {
      std::fprintf(stderr, "[%5.1fs]%s %9llu req/s %9llu ops/s  p99 %8.3f ms  errors %llu\n", t,
                   next <= measure_from_ ? " warm-up" : "        ",
                   static_cast<unsigned long long>(reqs), static_cast<unsigned long long>(ops),
                   static_cast<double>(snap.Quantile(0.99)) / 1e6,
                   static_cast<unsigned long long>(errs));
    }
    next += std::chrono::seconds(1);
  }
}

Measurement Runner::measurement() const {
  return Measurement{
      std::max(1e-9, std::chrono::duration<double>(measure_end_ - measure_from_).count()),
      cost_start_, cost_end_, dropped_.load()};
}

}  // namespace pqcd::load
