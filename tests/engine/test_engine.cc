// Engine: exactly-once completion under load through real hash kernels, deadlines, cancellation,
// backpressure, shutdown. PQCD_STRESS_SCALE (default 1) scales the stress run (8 producers x
// 1,000,000 jobs at 1; use e.g. 0.02 under TSan).
#include "pqcd/engine/engine.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/test_support.h"
#include "gtest/gtest.h"
#include "pqcd/kernels/hash.h"

namespace pqcd::engine {
namespace {

using kernels::HashAlgorithm;
using namespace std::chrono_literals;

double StressScale() {
  const char* s = std::getenv("PQCD_STRESS_SCALE");
  const double v = s != nullptr ? std::atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

std::unique_ptr<Engine> MakeEngine(EngineOptions o) {
  auto e = Engine::Create(std::move(o));
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

// A worker that is held inside a completion, so that the queue behind it fills up
// deterministically (tests only: real completions must not block).
struct Gate {
  std::atomic<bool> entered{false};
  std::atomic<bool> open{false};
  void Hold() {
    entered.store(true);
    while (!open.load()) std::this_thread::sleep_for(100us);
  }
  void WaitEntered() {
    while (!entered.load()) std::this_thread::sleep_for(100us);
  }
};

// ---------------------------------------------------------------------------------------------
// 8 producers x N mixed jobs (null, SHA3-256, SHAKE-128 asked for 32 bytes, SM3, SHA2-256).

constexpr int kInputs = 64;  // distinct 64-byte messages; expected digests precomputed
struct Expected {
  std::array<std::array<uint8_t, 64>, kInputs> msg;
  std::array<std::array<uint8_t, 32>, kInputs> digest[4];
};
constexpr HashAlgorithm kAlgs[4] = {HashAlgorithm::kSha3_256, HashAlgorithm::kShake128,
                                    HashAlgorithm::kSm3, HashAlgorithm::kSha2_256};

struct StressJob {
  Job job;
  std::array<uint8_t, 32> out;
  uint64_t id = 0;
  int input = 0;
  int kind = 0;               // 0 null, 1..4 hash kAlgs[kind-1]
  std::atomic<int> state{0};  // 0 free, 1 in flight, 2 rejected (resubmit)
};

TEST(Engine, EightProducersMixedJobsNoneLostOrDuplicated) {
  const int kProducers = 8;
  const uint64_t per_producer =
      std::max<uint64_t>(2000, static_cast<uint64_t>(1000000 * StressScale()));
  const int kPool = 64;  // jobs in flight per producer (8 x 64 < queue bound: few rejections)

  static Expected ex;
  for (int i = 0; i < kInputs; ++i) {
    for (int b = 0; b < 64; ++b) ex.msg[i][b] = static_cast<uint8_t>(i * 31 + b * 7);
    for (int a = 0; a < 4; ++a) {
      ASSERT_TRUE(kernels::Hash(kAlgs[a], ex.msg[i], ex.digest[a][i]).ok());
    }
  }

  EngineOptions o;
  o.queue_capacity = 1024;
  auto engine = MakeEngine(o);
  ASSERT_NE(engine, nullptr);

  const uint64_t total = kProducers * per_producer;
  std::vector<std::atomic<uint8_t>> done(total);
  std::atomic<uint64_t> wrong{0}, bad_status{0}, rejected{0}, off_worker{0};

  auto on_complete = [&](Job& j, absl::Status s) {
    StressJob& sj = *static_cast<StressJob*>(j.user_data);
    if (absl::IsResourceExhausted(s)) {
      rejected.fetch_add(1, std::memory_order_relaxed);
      sj.state.store(2, std::memory_order_release);
      return;
    }
    if (CurrentWorker() == nullptr) off_worker.fetch_add(1, std::memory_order_relaxed);
    if (!s.ok()) {
      bad_status.fetch_add(1, std::memory_order_relaxed);
    } else if (sj.kind > 0 &&
               std::memcmp(sj.out.data(), ex.digest[sj.kind - 1][sj.input].data(), 32) != 0) {
      wrong.fetch_add(1, std::memory_order_relaxed);
    }
    done[sj.id].fetch_add(1, std::memory_order_relaxed);
    sj.state.store(0, std::memory_order_release);
  };

  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      std::vector<std::unique_ptr<StressJob>> pool;
      for (int i = 0; i < kPool; ++i) {
        auto sj = std::make_unique<StressJob>();
        sj->job.on_complete = on_complete;
        sj->job.user_data = sj.get();
        pool.push_back(std::move(sj));
      }
      uint64_t next = 0;
      size_t slot = 0;
      while (next < per_producer) {
        StressJob& sj = *pool[slot];
        slot = (slot + 1) % kPool;
        const int st = sj.state.load(std::memory_order_acquire);
        if (st == 1) {
          std::this_thread::yield();
          continue;
        }
        if (st == 0) {  // free: load the next id
          sj.id = p * per_producer + next++;
          sj.input = static_cast<int>(sj.id % kInputs);
          sj.kind = static_cast<int>((sj.id / 7) % 5);
        }
        Job& j = sj.job;
        j.ResetForReuse();
        if (sj.kind == 0) {
          j.Set<NullItem>(kernels::AlgorithmId::kSha3_256);
        } else {  // 32-byte digests; SHAKE-128 as an XOF asked for 32 bytes
          j.Set<HashItem>(kernels::IdOf(kAlgs[sj.kind - 1])) = {ex.msg[sj.input], sj.out, {}};
        }
        sj.state.store(1, std::memory_order_relaxed);
        engine->Submit(&j);
      }
      for (auto& sj : pool) {  // wait for this producer's jobs; resubmit rejected ones
        for (;;) {
          const int st = sj->state.load(std::memory_order_acquire);
          if (st == 0) break;
          if (st == 2) {
            sj->job.ResetForReuse();
            sj->state.store(1, std::memory_order_relaxed);
            engine->Submit(&sj->job);
          }
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& t : producers) t.join();
  engine->Shutdown();

  uint64_t missing = 0, duplicated = 0;
  for (auto& d : done) {
    missing += d.load() == 0;
    duplicated += d.load() > 1;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(duplicated, 0u);
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(bad_status.load(), 0u);
  EXPECT_EQ(off_worker.load(), 0u);
  const EngineStats st = engine->GetStats();
  EXPECT_EQ(st.jobs_done, total);
  EXPECT_EQ(st.jobs_rejected, rejected.load());
  uint64_t worker_jobs = 0, batches = 0;
  for (const WorkerStats& w : st.workers) {
    worker_jobs += w.jobs;
    batches += w.batches;
  }
  EXPECT_EQ(worker_jobs, total);
  uint64_t op_jobs = 0;
  for (const OpStats& os : st.ops) op_jobs += os.jobs;
  EXPECT_EQ(op_jobs, total);
  std::printf("[stress] %d producers x %llu jobs: %llu batches (avg %.1f), %llu rejected+retried\n",
              kProducers, static_cast<unsigned long long>(per_producer),
              static_cast<unsigned long long>(batches),
              batches ? static_cast<double>(total) / static_cast<double>(batches) : 0.0,
              static_cast<unsigned long long>(rejected.load()));
}

// ---------------------------------------------------------------------------------------------

struct SimpleJob {
  Job job;
  std::array<uint8_t, 64> in{};
  std::array<uint8_t, 64> out{};
  std::atomic<int> completions{0};
  absl::Status status;
  std::atomic<bool> on_worker{false};
};

// A null job, or a hash of sj.in into the first out_len bytes of sj.out.
void Arm(SimpleJob& sj, std::optional<HashAlgorithm> hash = std::nullopt, size_t out_len = 32) {
  if (hash) {
    sj.job.Set<HashItem>(kernels::IdOf(*hash)) = {sj.in, MutBytes(sj.out.data(), out_len), {}};
  } else {
    sj.job.Set<NullItem>(kernels::AlgorithmId::kSha3_256);
  }
  sj.job.on_complete = [&sj](Job&, absl::Status s) {
    sj.status = std::move(s);
    sj.on_worker.store(CurrentWorker() != nullptr);
    sj.completions.fetch_add(1, std::memory_order_release);
  };
}

void WaitDone(SimpleJob& sj) {
  while (sj.completions.load(std::memory_order_acquire) == 0) std::this_thread::sleep_for(50us);
}

TEST(Engine, PastDeadlineCompletesAsExpiredWithoutRunning) {
  EngineOptions o;
  o.workers = 1;
  auto engine = MakeEngine(o);
  std::vector<std::unique_ptr<SimpleJob>> jobs;
  for (int i = 0; i < 50; ++i) {
    auto sj = std::make_unique<SimpleJob>();
    Arm(*sj, HashAlgorithm::kSha3_256);
    sj->out.fill(0xAA);
    sj->job.deadline = Job::Clock::now() - 1s;
    jobs.push_back(std::move(sj));
  }
  for (auto& sj : jobs) engine->Submit(&sj->job);
  for (auto& sj : jobs) {
    WaitDone(*sj);
    EXPECT_TRUE(absl::IsDeadlineExceeded(sj->status)) << sj->status;
    EXPECT_TRUE(sj->on_worker.load());
    for (uint8_t b : sj->out) ASSERT_EQ(b, 0xAA) << "an expired job ran";
  }
  engine->Shutdown();
  const EngineStats st = engine->GetStats();
  EXPECT_EQ(st.jobs_expired, 50u);
  EXPECT_EQ(st.jobs_done, 0u);
  for (const auto& j : jobs) EXPECT_EQ(j->completions.load(), 1);
}

// The slow pool (EngineOptions::slow_job): jobs estimated above the threshold run on a thread of
// their own, so a worker keeps serving cheap jobs while the slow thread is busy; tenants take fair
// turns; a tenant's queued cost is bounded by its share, and another tenant still gets in.
TEST(EngineSlow, SlowJobsRunOffTheWorkersInFairTurnsWithinTheirShare) {
  EngineOptions o;
  o.workers = 2;
  o.slow_job = 1ms;
  o.slow_workers = 1;
  o.slow_queue = 10s;
  o.slow_queue_per_tenant = 1s;
  auto engine = MakeEngine(o);
  std::mutex mu;
  std::vector<std::string> order;  // completions of slow jobs, in order
  Gate gate;
  const auto slow = [&](SimpleJob& sj, uint32_t tenant, std::string name, bool hold) {
    Arm(sj);
    sj.job.tenant = tenant;
    sj.job.cost_ns = 100'000'000;  // 100 ms, as the caller estimates it
    sj.job.on_complete = [&mu, &order, &gate, job = &sj, name = std::move(name), hold](
                             Job&, absl::Status st) {
      if (hold) gate.Hold();  // the slow thread stays here until the gate opens
      {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(name);
      }
      job->status = std::move(st);
      job->on_worker.store(CurrentWorker() != nullptr);
      job->completions.fetch_add(1, std::memory_order_release);
    };
  };
  SimpleJob first;
  slow(first, 1, "A0", /*hold=*/true);
  engine->Submit(&first.job);
  gate.WaitEntered();  // the slow thread is busy with A0

  // Tenant 1 queues its share (10 x 100 ms = 1 s); one more is refused; tenant 2 still gets in.
  std::vector<std::unique_ptr<SimpleJob>> mine;
  for (int i = 1; i <= 10; ++i) {
    mine.push_back(std::make_unique<SimpleJob>());
    // (Not "A" + std::to_string(i): g++ 12 at -O3 warns -Wrestrict about it, a false positive.)
    std::string name(1, 'A');
    name.append(std::to_string(i));
    slow(*mine.back(), 1, std::move(name), false);
  }
  std::vector<Job*> burst;
  for (auto& sj : mine) burst.push_back(&sj->job);
  engine->SubmitBurst(burst);
  SimpleJob over;
  slow(over, 1, "A11", false);
  engine->Submit(&over.job);
  WaitDone(over);  // refused at once, on this thread
  EXPECT_TRUE(absl::IsResourceExhausted(over.status)) << over.status;
  SimpleJob other;
  slow(other, 2, "B1", false);
  engine->Submit(&other.job);

  // A cheap job runs on a worker while the slow thread is still held.
  SimpleJob cheap;
  Arm(cheap, HashAlgorithm::kSha3_256);
  cheap.job.tenant = 1;
  engine->Submit(&cheap.job);
  WaitDone(cheap);
  EXPECT_TRUE(cheap.status.ok()) << cheap.status;
  EXPECT_TRUE(cheap.on_worker.load());
  EXPECT_EQ(first.completions.load(), 0) << "the slow job is still held";
  EXPECT_EQ(engine->GetStats().slow_queued, 11u);

  gate.open.store(true);
  WaitDone(first);
  WaitDone(other);
  for (auto& sj : mine) WaitDone(*sj);
  engine->Shutdown();
  // Tenant 2's one job went right after tenant 1's first two, not behind all ten. (The refused
  // A11 completed at once, on the submitting thread, before any of them.)
  ASSERT_EQ(order.size(), 13u);
  EXPECT_EQ(order.front(), "A11");
  order.erase(order.begin());
  const size_t b1 = std::find(order.begin(), order.end(), "B1") - order.begin();
  EXPECT_LE(b1, 2u) << "B1 completed " << b1 << "th";
  for (auto& sj : mine) {
    EXPECT_TRUE(sj->status.ok()) << sj->status;
    EXPECT_FALSE(sj->on_worker.load()) << "a slow job ran on a worker";
  }
  const EngineStats st = engine->GetStats();
  EXPECT_EQ(st.slow_workers, 1);
  EXPECT_EQ(st.slow_jobs, 12u);
  EXPECT_EQ(st.slow_rejected, 1u);
  EXPECT_EQ(st.slow_queued, 0u);
}

// The estimate follows what jobs take: a kind of job measured slow goes to the slow pool from then
// on; SLH-DSA signing is taken as slow before it has been measured; a large hash is slow by size.
TEST(EngineSlow, CostsAreEstimatedFromTheirKindAndSize) {
  EngineOptions o;
  o.workers = 1;
  o.slow_job = 1ms;
  auto engine = MakeEngine(o);
  Job sign;
  sign.Set<kernels::DsaSignItem>(kernels::AlgorithmId::kSlhDsaSha2_256s);
  EXPECT_GE(engine->EstimatedCostNs(sign), 1'000'000u);
  Job mldsa;
  mldsa.Set<kernels::DsaSignItem>(kernels::AlgorithmId::kMlDsa65);
  EXPECT_LT(engine->EstimatedCostNs(mldsa), 1'000'000u);
  std::vector<uint8_t> big(4 << 20), digest(32);
  Job hash;
  hash.Set<HashItem>(kernels::AlgorithmId::kSha3_256) = {big, MutBytes(digest.data(), 32), {}};
  EXPECT_GE(engine->EstimatedCostNs(hash), 1'000'000u);
  hash.cost_ns = 5;
  EXPECT_EQ(engine->EstimatedCostNs(hash), 5u);
  engine->Shutdown();
}

TEST(Engine, CancelledJobCompletesAsCancelled) {
  auto engine = MakeEngine(EngineOptions{});
  SimpleJob sj;
  Arm(sj, HashAlgorithm::kSha3_256);
  sj.out.fill(0x55);
  sj.job.Cancel();
  engine->Submit(&sj.job);
  WaitDone(sj);
  EXPECT_TRUE(absl::IsCancelled(sj.status)) << sj.status;
  EXPECT_EQ(sj.out[0], 0x55);
  engine->Shutdown();
  EXPECT_EQ(engine->GetStats().jobs_cancelled, 1u);
}

// SubmitBurst with run_inline_when_idle: a burst runs on the calling thread while the worker is
// parked (and its statistics count), a burst below inline_min_burst is queued, and without the
// option everything is queued.
TEST(Engine, SubmitBurstRunsInlineOnlyWhileTheWorkerIsParked) {
  for (const bool inline_on : {true, false}) {
    EngineOptions o;
    o.workers = 1;
    o.run_inline_when_idle = inline_on;
    o.inline_min_burst = 2;
    o.spin_before_park = std::chrono::microseconds(1);
    auto engine = MakeEngine(o);
    ASSERT_NE(engine, nullptr);
    // Let the worker park.
    for (int i = 0; i < 2000 && engine->GetStats().workers[0].parks == 0; ++i) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_GT(engine->GetStats().workers[0].parks, 0u);
    std::this_thread::sleep_for(5ms);

    std::vector<std::unique_ptr<SimpleJob>> jobs;
    std::vector<Job*> burst;
    for (int i = 0; i < 40; ++i) {  // more than max_batch: run in several bursts
      auto sj = std::make_unique<SimpleJob>();
      Arm(*sj, HashAlgorithm::kSha3_256);
      sj->in[0] = static_cast<uint8_t>(i);
      burst.push_back(&sj->job);
      jobs.push_back(std::move(sj));
    }
    jobs[7]->job.Cancel();
    engine->SubmitBurst(burst);
    for (auto& sj : jobs) {
      WaitDone(*sj);
      EXPECT_EQ(sj->completions.load(), 1);
      EXPECT_EQ(sj->on_worker.load(), !inline_on);
    }
    EXPECT_TRUE(absl::IsCancelled(jobs[7]->status));
    uint8_t want[32];
    for (int i = 0; i < 40; ++i) {
      if (i == 7) continue;
      ASSERT_TRUE(jobs[i]->status.ok()) << jobs[i]->status;
      ASSERT_TRUE(kernels::Hash(HashAlgorithm::kSha3_256, jobs[i]->in, want).ok());
      EXPECT_EQ(std::memcmp(want, jobs[i]->out.data(), 32), 0) << i;
    }
    // One job alone is queued either way (the worker may group it with others).
    SimpleJob single;
    Arm(single);
    Job* one = &single.job;
    engine->SubmitBurst(std::span<Job* const>(&one, 1));
    WaitDone(single);
    EXPECT_TRUE(single.on_worker.load());

    engine->Shutdown();
    const EngineStats st = engine->GetStats();
    EXPECT_EQ(st.jobs_inline, inline_on ? 40u : 0u);
    EXPECT_EQ(st.jobs_done, 40u);
    EXPECT_EQ(st.jobs_cancelled, 1u);
  }
}

// ---------------------------------------------------------------------------------------------
// Thread-per-core: workers that poll an I/O source of their own (Engine::AttachIo).

// A stand-in for the server's core queues: per worker, bursts of jobs "received" by the test;
// Poll submits each one (on the worker's thread, as a request handler would) and waits on a
// condition variable while it has none.
class FakeIo final : public WorkerIo {
 public:
  explicit FakeIo(int workers) : w_(static_cast<size_t>(workers)) {}
  // Declared before the engine (it must outlive the engine's workers), attached after it.
  void Attach(Engine* engine) {
    engine_ = engine;
    engine->AttachIo(this);
  }

  // Jobs that arrive on `worker` together: each vector is one handler's SubmitBurst.
  void Deliver(int worker, std::vector<std::vector<Job*>> calls) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : calls) w_[static_cast<size_t>(worker)].inbox.push_back(std::move(c));
    cv_.notify_all();
  }
  void End() {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    cv_.notify_all();
  }
  bool Waiting(int worker) {
    std::lock_guard<std::mutex> lock(mu_);
    return w_[static_cast<size_t>(worker)].waiting;
  }
  int wakes() const { return wakes_.load(); }
  int polls_after(int worker) {
    std::lock_guard<std::mutex> lock(mu_);
    return w_[static_cast<size_t>(worker)].polls;
  }

  bool Poll(int worker, Job::Clock::time_point until) override {
    std::unique_lock<std::mutex> lock(mu_);
    PerWorker& me = w_[static_cast<size_t>(worker)];
    ++me.polls;
    if (me.inbox.empty() && !ended_ && !me.woken && until > Job::Clock::now()) {
      me.waiting = true;
      cv_.wait_until(lock, until, [&] { return !me.inbox.empty() || ended_ || me.woken; });
      me.waiting = false;
    }
    me.woken = false;
    std::vector<std::vector<Job*>> calls;
    calls.swap(me.inbox);
    const bool ended = ended_;
    lock.unlock();
    for (auto& c : calls) engine_->SubmitBurst(c);
    return !ended || !calls.empty();
  }
  void Wake(int worker) override {
    wakes_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    w_[static_cast<size_t>(worker)].woken = true;
    cv_.notify_all();
  }

 private:
  struct PerWorker {
    std::vector<std::vector<Job*>> inbox;
    bool waiting = false;
    bool woken = false;
    int polls = 0;
  };
  Engine* engine_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PerWorker> w_;
  bool ended_ = false;
  std::atomic<int> wakes_{0};
};

// Engine conditions are cheap to test: poll them every millisecond.
template <class Cond>
bool Eventually(Cond cond) {
  return pqcd::testing::Eventually(cond, 20s, 1ms);
}

// Calls that arrive together on a worker run there, as one burst (the SIMD lanes are shared
// across callers), and their results are right.
TEST(EngineIo, CallsThatArriveTogetherRunAsOneBurstOnTheirWorker) {
  EngineOptions o;
  o.workers = 1;
  o.max_batch = 32;
  FakeIo io(1);
  auto engine = MakeEngine(o);
  ASSERT_NE(engine, nullptr);
  io.Attach(engine.get());
  ASSERT_TRUE(Eventually([&] { return io.Waiting(0); }));

  std::vector<std::unique_ptr<SimpleJob>> jobs;
  std::vector<std::vector<Job*>> calls;
  for (int i = 0; i < 10; ++i) {  // ten one-job calls
    auto sj = std::make_unique<SimpleJob>();
    Arm(*sj, HashAlgorithm::kSha3_256);
    sj->in[0] = static_cast<uint8_t>(i);
    calls.push_back({&sj->job});
    jobs.push_back(std::move(sj));
  }
  io.Deliver(0, std::move(calls));
  for (auto& sj : jobs) WaitDone(*sj);
  uint8_t want[32];
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(jobs[i]->status.ok()) << jobs[i]->status;
    EXPECT_TRUE(jobs[i]->on_worker.load());
    ASSERT_TRUE(kernels::Hash(HashAlgorithm::kSha3_256, jobs[i]->in, want).ok());
    EXPECT_EQ(std::memcmp(want, jobs[i]->out.data(), 32), 0) << i;
  }
  // A worker counts a burst after completing its jobs: read the statistics once it has stopped.
  io.End();
  engine->Shutdown();
  const EngineStats st = engine->GetStats();
  EXPECT_EQ(st.workers[0].jobs, 10u);
  EXPECT_EQ(st.workers[0].batches, 1u) << "the ten calls were not one burst";
}

// A job queued by a thread that is not a worker (a callback-API handler) wakes the worker that
// waits in its I/O.
TEST(EngineIo, AProducerWakesTheWorkerWaitingInItsIo) {
  EngineOptions o;
  o.workers = 1;
  FakeIo io(1);
  auto engine = MakeEngine(o);
  ASSERT_NE(engine, nullptr);
  io.Attach(engine.get());
  ASSERT_TRUE(Eventually([&] { return io.Waiting(0); }));
  SimpleJob sj;
  Arm(sj, HashAlgorithm::kSha3_256);
  engine->Submit(&sj.job);
  WaitDone(sj);
  EXPECT_TRUE(sj.status.ok()) << sj.status;
  EXPECT_GE(io.wakes(), 1);
  io.End();
  engine->Shutdown();
}

// A backlog beyond one burst is handed to a sibling that is idle (one hand-off per job), and
// every job still completes exactly once.
TEST(EngineIo, ABacklogGoesToAnIdleSibling) {
  EngineOptions o;
  o.workers = 2;
  o.max_batch = 8;
  o.pin_workers = false;
  FakeIo io(2);
  auto engine = MakeEngine(o);
  ASSERT_NE(engine, nullptr);
  io.Attach(engine.get());
  ASSERT_TRUE(Eventually([&] { return io.Waiting(0) && io.Waiting(1); }));
  std::vector<std::unique_ptr<SimpleJob>> jobs;
  std::vector<Job*> burst;
  // Worker 0 holds in its first completion until worker 1 has run a job: the backlog was handed
  // over before worker 0 ran anything, so only a lost hand-off could keep worker 1 idle.
  std::atomic<int> on_sibling{0};
  for (int i = 0; i < 200; ++i) {
    auto sj = std::make_unique<SimpleJob>();
    Arm(*sj, HashAlgorithm::kShake256, 64);
    sj->in[1] = static_cast<uint8_t>(i);
    sj->job.on_complete = [s = sj.get(), &on_sibling](Job&, absl::Status st) {
      if (CurrentWorker()->id == 1) {
        on_sibling.fetch_add(1);
      } else {
        for (int k = 0; k < 20000 && on_sibling.load() == 0; ++k) std::this_thread::sleep_for(1ms);
      }
      s->status = std::move(st);
      s->completions.fetch_add(1, std::memory_order_release);
    };
    burst.push_back(&sj->job);
    jobs.push_back(std::move(sj));
  }
  io.Deliver(0, {burst});
  for (auto& sj : jobs) WaitDone(*sj);
  for (auto& sj : jobs) {
    EXPECT_EQ(sj->completions.load(), 1);
    EXPECT_TRUE(sj->status.ok()) << sj->status;
  }
  io.End();
  engine->Shutdown();  // the workers count a burst after completing it
  const EngineStats st = engine->GetStats();
  EXPECT_EQ(st.workers[0].jobs + st.workers[1].jobs, 200u);
  EXPECT_GT(st.workers[1].jobs, 0u) << "the idle sibling took nothing";
}

// Shutdown does not end the I/O: the workers keep polling (and answer what arrives with
// UNAVAILABLE, the queues being closed) until their Poll returns false.
TEST(EngineIo, ShutdownLastsUntilTheIoEnds) {
  EngineOptions o;
  o.workers = 1;
  FakeIo io(1);
  auto engine = MakeEngine(o);
  ASSERT_NE(engine, nullptr);
  io.Attach(engine.get());
  ASSERT_TRUE(Eventually([&] { return io.Waiting(0); }));
  std::atomic<bool> returned{false};
  std::thread stopper([&] {
    engine->Shutdown();
    returned.store(true);
  });
  // The worker was woken by Shutdown and polls again.
  const int before = io.polls_after(0);
  ASSERT_TRUE(Eventually([&] { return io.polls_after(0) > before && io.Waiting(0); }));
  SimpleJob late;
  Arm(late, HashAlgorithm::kSha3_256);
  io.Deliver(0, {{&late.job}});
  WaitDone(late);
  EXPECT_TRUE(absl::IsUnavailable(late.status)) << late.status;
  EXPECT_FALSE(returned.load());
  io.End();
  stopper.join();
  EXPECT_TRUE(returned.load());
}

TEST(Engine, HashResultsAndKernelErrors) {
  auto engine = MakeEngine(EngineOptions{});
  SimpleJob good, bad_size, shake, kem;
  for (int i = 0; i < 64; ++i) good.in[i] = static_cast<uint8_t>(i);
  Arm(good, HashAlgorithm::kSha3_256);
  Arm(bad_size, HashAlgorithm::kSha3_512);
  Arm(shake, HashAlgorithm::kShake256, 40);  // 64-byte buffer, ask for 40
  Arm(kem);
  kem.job.Set<kernels::KemEncapsItem>(kernels::AlgorithmId::kMlKem768);  // no executor
  for (SimpleJob* sj : {&good, &bad_size, &shake, &kem}) engine->Submit(&sj->job);
  for (SimpleJob* sj : {&good, &bad_size, &shake, &kem}) WaitDone(*sj);

  ASSERT_TRUE(good.status.ok()) << good.status;
  std::array<uint8_t, 32> want;
  ASSERT_TRUE(kernels::Hash(HashAlgorithm::kSha3_256, good.in, want).ok());
  EXPECT_EQ(0, std::memcmp(want.data(), good.out.data(), 32));
  EXPECT_TRUE(absl::IsInvalidArgument(bad_size.status)) << bad_size.status;
  ASSERT_TRUE(shake.status.ok()) << shake.status;
  std::array<uint8_t, 40> want_shake;
  ASSERT_TRUE(kernels::Hash(HashAlgorithm::kShake256, shake.in, want_shake).ok());
  EXPECT_EQ(0, std::memcmp(want_shake.data(), shake.out.data(), 40));
  EXPECT_TRUE(absl::IsUnimplemented(kem.status)) << kem.status;
  engine->Shutdown();
  const EngineStats st = engine->GetStats();
  EXPECT_EQ(st.jobs_done, 2u);
  EXPECT_EQ(st.jobs_failed, 2u);
}

TEST(Engine, BackpressureRejectsWhenTheQueueIsFull) {
  EngineOptions o;
  o.workers = 1;
  o.queue_capacity = 16;
  o.max_batch = 1;  // the held job is alone in its burst
  auto engine = MakeEngine(o);
  Gate gate;
  SimpleJob blocker;
  Arm(blocker);
  auto inner = std::move(blocker.job.on_complete);
  blocker.job.on_complete = [&, inner = std::move(inner)](Job& j, absl::Status s) mutable {
    gate.Hold();
    inner(j, std::move(s));
  };
  engine->Submit(&blocker.job);
  gate.WaitEntered();  // the worker is busy; the queue is empty

  std::vector<std::unique_ptr<SimpleJob>> jobs(40);
  int rejected_sync = 0;
  for (auto& sj : jobs) {
    sj = std::make_unique<SimpleJob>();
    Arm(*sj, HashAlgorithm::kSha3_256);
    engine->Submit(&sj->job);
    if (sj->completions.load() == 1) {  // completed inside Submit
      EXPECT_TRUE(absl::IsResourceExhausted(sj->status)) << sj->status;
      EXPECT_FALSE(sj->on_worker.load());
      ++rejected_sync;
    }
  }
  EXPECT_EQ(rejected_sync, 40 - 16);
  EXPECT_EQ(engine->QueueDepth(0), 16u);
  gate.open.store(true);
  for (auto& sj : jobs) WaitDone(*sj);
  WaitDone(blocker);
  int ok = 0;
  for (auto& sj : jobs) ok += sj->status.ok();
  EXPECT_EQ(ok, 16);
  // Nothing else broke: the engine keeps working.
  SimpleJob after;
  Arm(after);
  engine->Submit(&after.job);
  WaitDone(after);
  EXPECT_TRUE(after.status.ok());
  engine->Shutdown();
  const EngineStats st = engine->GetStats();
  EXPECT_EQ(st.jobs_rejected, 24u);
  EXPECT_EQ(st.jobs_done, 18u);
  for (auto& sj : jobs) EXPECT_EQ(sj->completions.load(), 1);
}

void ShutdownWithFullQueue(ShutdownMode mode) {
  EngineOptions o;
  o.workers = 1;
  o.queue_capacity = 64;
  o.max_batch = 1;
  auto engine = MakeEngine(o);
  Gate gate;
  SimpleJob blocker;
  Arm(blocker);
  auto inner = std::move(blocker.job.on_complete);
  blocker.job.on_complete = [&, inner = std::move(inner)](Job& j, absl::Status s) mutable {
    gate.Hold();
    inner(j, std::move(s));
  };
  engine->Submit(&blocker.job);
  gate.WaitEntered();
  std::vector<std::unique_ptr<SimpleJob>> jobs(64);
  for (auto& sj : jobs) {
    sj = std::make_unique<SimpleJob>();
    Arm(*sj, HashAlgorithm::kSha3_256);
    engine->Submit(&sj->job);
  }
  ASSERT_EQ(engine->QueueDepth(0), 64u);
  std::thread stopper([&] { engine->Shutdown(mode); });
  // Shutdown has begun once Submit answers UNAVAILABLE.
  for (;;) {
    SimpleJob late;
    Arm(late);
    engine->Submit(&late.job);
    ASSERT_EQ(late.completions.load(), 1);  // the queue is full: answered inside Submit
    EXPECT_FALSE(late.on_worker.load());
    if (absl::IsUnavailable(late.status)) break;
    EXPECT_TRUE(absl::IsResourceExhausted(late.status)) << late.status;
    std::this_thread::sleep_for(200us);
  }
  gate.open.store(true);
  stopper.join();
  for (auto& sj : jobs) {
    ASSERT_EQ(sj->completions.load(), 1);
    if (mode == ShutdownMode::kDrain) {
      EXPECT_TRUE(sj->status.ok()) << sj->status;
    } else {
      EXPECT_TRUE(absl::IsUnavailable(sj->status)) << sj->status;
    }
  }
  EXPECT_EQ(blocker.completions.load(), 1);
  SimpleJob after;
  Arm(after);
  engine->Submit(&after.job);
  EXPECT_EQ(after.completions.load(), 1);
  EXPECT_TRUE(absl::IsUnavailable(after.status));
}

TEST(Engine, ShutdownWithFullQueueDrainsEveryJob) {
  ShutdownWithFullQueue(ShutdownMode::kDrain);
}
TEST(Engine, ShutdownAbortCompletesQueuedJobsAsUnavailable) {
  ShutdownWithFullQueue(ShutdownMode::kAbort);
}

TEST(Engine, MaxDelayFillsBursts) {
  EngineOptions o;
  o.workers = 1;
  o.max_batch = 8;
  o.max_delay = 2ms;
  auto engine = MakeEngine(o);
  std::vector<std::unique_ptr<SimpleJob>> jobs(64);
  for (auto& sj : jobs) {
    sj = std::make_unique<SimpleJob>();
    Arm(*sj);
    engine->Submit(&sj->job);
  }
  for (auto& sj : jobs) WaitDone(*sj);
  engine->Shutdown();
  const EngineStats st = engine->GetStats();
  EXPECT_EQ(st.jobs_done, 64u);
  uint64_t batches = 0;
  for (uint64_t b : st.batch_size_hist) batches += b;
  EXPECT_LE(batches, 64u);
}

TEST(Engine, StatisticsRecordWaitAndCompute) {
  auto engine = MakeEngine(EngineOptions{});
  std::vector<std::unique_ptr<SimpleJob>> jobs(100);
  for (auto& sj : jobs) {
    sj = std::make_unique<SimpleJob>();
    Arm(*sj, HashAlgorithm::kSha3_256);
    engine->Submit(&sj->job);
  }
  for (auto& sj : jobs) WaitDone(*sj);
  engine->Shutdown();
  const EngineStats st = engine->GetStats();
  ASSERT_EQ(st.ops.size(), 1u);
  const OpStats& os = st.ops[0];
  EXPECT_EQ(os.op, Operation::kHash);
  EXPECT_EQ(AlgorithmName(os.op, os.algorithm), "SHA3-256");
  EXPECT_EQ(os.jobs, 100u);
  uint64_t hw = 0, hc = 0;
  for (int b = 0; b < kLatencyBuckets; ++b) {
    hw += os.queue_wait_hist[b];
    hc += os.compute_hist[b];
  }
  EXPECT_EQ(hw, 100u);
  EXPECT_EQ(hc, 100u);
  EXPECT_GT(os.compute_ns_sum, 0u);
  uint64_t busy = 0;
  for (const WorkerStats& w : st.workers) busy += w.busy_ns;
  EXPECT_GT(busy, 0u);
  EXPECT_EQ(st.nodes.size(), static_cast<size_t>(engine->num_nodes()));
}

TEST(Engine, RejectsBadOptions) {
  EngineOptions o;
  o.max_batch = 0;
  EXPECT_FALSE(Engine::Create(o).ok());
  o.max_batch = 32;
  o.cpus = {100000};
  EXPECT_FALSE(Engine::Create(o).ok());
}

TEST(Engine, SteadyDeadlineConversion) {
  EXPECT_EQ(SteadyDeadline(absl::InfiniteFuture()), Job::Clock::time_point::max());
  const auto d = SteadyDeadline(absl::Now() + absl::Seconds(10));
  EXPECT_GT(d, Job::Clock::now() + 9s);
  EXPECT_LT(d, Job::Clock::now() + 11s);
  EXPECT_LT(SteadyDeadline(std::chrono::system_clock::now() - 5s), Job::Clock::now());
}

}  // namespace
}  // namespace pqcd::engine
