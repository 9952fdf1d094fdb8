// Workers: drain the node queue in bursts, steal when idle, park when there is nothing to do.
// The Batcher: drop expired/cancelled jobs, group by (operation, algorithm), run, complete.
#include <algorithm>
#include <chrono>
#include <string>

#include "internal.h"
#include "pqcd/kernels/hash.h"

namespace pqcd::engine {
namespace {

using Clock = Job::Clock;

thread_local const WorkerInfo* tls_worker = nullptr;
thread_local Worker* tls_self = nullptr;

// How long a worker serving I/O waits in its Poll before it looks around again (producers wake
// it sooner; this only bounds a lost wake-up's cost).
constexpr auto kIoWait = std::chrono::seconds(1);

const absl::Status& ExpiredStatus() {
  static const absl::Status s = absl::DeadlineExceededError("deadline exceeded while queued");
  return s;
}
const absl::Status& CancelledStatus() {
  static const absl::Status s = absl::CancelledError("cancelled while queued");
  return s;
}
const absl::Status& AbortStatus() {
  static const absl::Status s = absl::UnavailableError("engine shutting down");
  return s;
}

inline uint64_t Ns(Clock::duration d) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  return ns > 0 ? static_cast<uint64_t>(ns) : 0;
}

inline unsigned Key(const Job* j) {
  return (static_cast<unsigned>(j->op()) << 8) | static_cast<unsigned>(j->algorithm());
}

inline void CompleteJob(Job* job, absl::Status status) {
  if (job->on_complete) job->on_complete(*job, std::move(status));
}

// Scratch: burst + statuses arrays and the counters, in one node-local block.
size_t WorkerMemBytes() {
  return sizeof(WorkerCounters) + sizeof(Job*) * kMaxBatchLimit +
         sizeof(absl::Status) * kMaxBatchLimit + 2 * kCacheLine;
}
// Kernel scratch (KEM/DSA item arrays, hash views): generous for kMaxBatchLimit items.
constexpr size_t kArenaBytes = kMaxBatchLimit * 512 + 4096;

}  // namespace

const WorkerInfo* CurrentWorker() {
  return tls_worker;
}

Worker* Worker::Current() {
  return tls_self;
}

static Job** BurstPtr(void* mem) {
  return reinterpret_cast<Job**>(static_cast<uint8_t*>(mem) +
                                 ((sizeof(WorkerCounters) + kCacheLine - 1) & ~(kCacheLine - 1)));
}
static absl::Status* StatusesPtr(Job** burst) {
  const uintptr_t after = reinterpret_cast<uintptr_t>(burst + kMaxBatchLimit);
  return reinterpret_cast<absl::Status*>((after + kCacheLine - 1) & ~uintptr_t{kCacheLine - 1});
}

Worker::Worker(Engine& engine, int id, int node, int cpu, int mem_node)
    : engine_(engine),
      mem_(WorkerMemBytes(), mem_node),
      counters_(new (mem_.data()) WorkerCounters()),
      burst_(BurstPtr(mem_.data())),
      statuses_(StatusesPtr(burst_)),
      arena_(kArenaBytes, mem_node),
      batcher_(engine, *counters_, statuses_, arena_) {
  // Room for a full node queue: a Batch of any admitted size fits the own queue.
  local_.resize(engine.options_.queue_capacity);
  info.id = id;
  info.node = node;
  info.cpu = cpu;
  for (int i = 0; i < kMaxBatchLimit; ++i) new (&statuses_[i]) absl::Status();
}

Worker::~Worker() {
  for (int i = 0; i < kMaxBatchLimit; ++i) statuses_[i].~Status();
  counters_->~WorkerCounters();
}

bool Worker::StealableWork() const {
  if (!engine_.options_.work_stealing || engine_.active_nodes_.size() < 2) return false;
  for (int n : engine_.active_nodes_) {
    if (n != info.node && engine_.nodes_[n]->queue.SizeApprox() >= engine_.steal_threshold_) {
      return true;
    }
  }
  return false;
}

size_t Worker::Steal() {
  const auto& active = engine_.active_nodes_;
  const size_t count = active.size();
  for (size_t i = 0; i < count; ++i) {
    const int n = active[(steal_cursor_ + i) % count];
    if (n == info.node) continue;
    NodeQueue& q = engine_.nodes_[n]->queue;
    if (q.SizeApprox() < engine_.steal_threshold_) continue;
    const size_t got = q.TryPopBurst(burst_, static_cast<size_t>(engine_.options_.max_batch));
    if (got > 0) {
      steal_cursor_ = (steal_cursor_ + i + 1) % count;
      return got;
    }
  }
  return 0;
}

size_t Worker::TopUp(NodeState& home, size_t n) {
  const size_t max = static_cast<size_t>(engine_.options_.max_batch);
  const auto until = Clock::now() + engine_.options_.max_delay;
  for (unsigned i = 0; n < max; ++i) {
    n += home.queue.TryPopBurst(burst_ + n, max - n);
    if (n >= max || engine_.stopping_.load(std::memory_order_relaxed)) break;
    CpuRelax();
    if ((i & 15) == 15 && Clock::now() >= until) break;
  }
  return n;
}

bool Worker::TryQueueLocal(std::span<Job* const> jobs) {
  if (io_ == nullptr || engine_.stopping_.load(std::memory_order_relaxed) ||
      local_count_ + jobs.size() > local_.size()) {
    return false;
  }
  const Clock::time_point now = Clock::now();
  for (Job* job : jobs) {
    job->enqueue_time_ = now;
    local_[(local_head_ + local_count_) % local_.size()] = job;
    ++local_count_;
  }
  return true;
}

bool Worker::TryRunNow(std::span<Job* const> jobs) {
  if (io_ == nullptr || in_burst_ || local_count_ > 0 ||
      engine_.stopping_.load(std::memory_order_relaxed)) {
    return false;
  }
  RunHere(jobs);
  return true;
}

size_t Worker::TakeLocal(size_t at, size_t max) {
  size_t n = 0;
  while (n + at < max && local_count_ > 0) {
    burst_[at + n++] = local_[local_head_];
    local_head_ = (local_head_ + 1) % local_.size();
    --local_count_;
  }
  return n;
}

void Worker::ShareBacklog(NodeState& home) {
  const size_t max = static_cast<size_t>(engine_.options_.max_batch);
  if (local_count_ <= max || home.queue.sleepers() == 0) return;
  // The newest jobs go: the oldest run here next. A push wakes a parked sibling; once pushed, a
  // job may run (and be gone) at once.
  while (local_count_ > max) {
    Job* job = local_[(local_head_ + local_count_ - 1) % local_.size()];
    if (home.queue.TryPush(job) != PushResult::kOk) break;
    --local_count_;
  }
}

void Worker::EndIo() {
  io_ = nullptr;
  io_ended_ = true;
}

void Worker::Idle(NodeState& home) {
  if (io_ != nullptr) {
    // Thread-per-core: wait in the I/O, where both requests and a producer's wake-up arrive.
    Bump(counters_->parks);
    io_parked.store(true, std::memory_order_seq_cst);
    home.queue.ParkInIo([this] { return StealableWork(); },
                        [this] {
                          if (!io_->Poll(info.id, Clock::now() + kIoWait)) EndIo();
                        });
    io_parked.store(false, std::memory_order_relaxed);
    return;
  }
  const auto until = Clock::now() + engine_.options_.spin_before_park;
  for (unsigned i = 0;; ++i) {
    if (home.queue.SizeApprox() > 0 || StealableWork() || IoToStart() ||
        engine_.stopping_.load(std::memory_order_acquire)) {
      return;
    }
    CpuRelax();
    if ((i & 63) == 63 && Clock::now() >= until) break;
  }
  Bump(counters_->parks);
  // AttachIo stores the I/O and then wakes every parked worker: checked after registering as a
  // sleeper, so that the wake-up is not lost.
  home.queue.Park(engine_.stopping_, [this] { return StealableWork() || IoToStart(); });
}

void Worker::Run(std::latch& start) {
  start.wait();  // the engine has pinned this thread and filled `info`
  tls_worker = &info;
  tls_self = this;
  NodeState& home = *engine_.nodes_[info.node];
  const size_t max = static_cast<size_t>(engine_.options_.max_batch);
  const bool delay = engine_.options_.max_delay.count() > 0;
  for (;;) {
    if (io_ == nullptr && !io_ended_) io_ = engine_.io_.load(std::memory_order_acquire);
    if (io_ != nullptr) {
      // What arrived since the last burst: its handlers queue jobs on this worker (TryQueueLocal),
      // so that calls that arrived together run as one burst.
      if (!io_->Poll(info.id, Clock::time_point::min())) {
        EndIo();
      } else {
        ShareBacklog(home);
      }
    }
    size_t n = TakeLocal(0, max);
    if (n < max) n += home.queue.TryPopBurst(burst_ + n, max - n);
    bool stolen = false;
    if (n == 0 && engine_.options_.work_stealing && engine_.active_nodes_.size() > 1) {
      n = Steal();
      stolen = n > 0;
    }
    if (n > 0) {
      if (delay && !stolen && n < max) n = TopUp(home, n);
      in_burst_ = true;
      batcher_.Process(burst_, n, stolen);
      in_burst_ = false;
      continue;
    }
    // Shutdown closes every queue before setting stopping_, so an empty closed queue stays empty.
    // A worker serving I/O goes on until its I/O has ended (its own queue is empty here).
    if (io_ == nullptr && engine_.stopping_.load(std::memory_order_acquire) &&
        home.queue.closed() && home.queue.SizeApprox() == 0) {
      break;
    }
    Idle(home);
  }
  tls_worker = nullptr;
  tls_self = nullptr;
}

void Worker::RunHere(std::span<Job* const> jobs) {
  const size_t max = static_cast<size_t>(engine_.options_.max_batch);
  for (size_t i = 0; i < jobs.size();) {
    const size_t n = std::min(max, jobs.size() - i);
    const Clock::time_point now = Clock::now();
    for (size_t k = 0; k < n; ++k) {
      burst_[k] = jobs[i + k];
      burst_[k]->enqueue_time_ = now;
    }
    i += n;  // the jobs may be gone once processed
    in_burst_ = true;
    batcher_.Process(burst_, n, false);
    in_burst_ = false;
  }
}

void Worker::RunQueued(Job* job) {
  burst_[0] = job;
  in_burst_ = true;
  batcher_.Process(burst_, 1, false);
  in_burst_ = false;
}

void Batcher::Process(Job** jobs, size_t n, bool stolen) {
  const Clock::time_point t0 = Clock::now();
  const bool abort = engine_.abort_.load(std::memory_order_relaxed);
  size_t kept = 0;
  uint64_t expired = 0, cancelled = 0, unavailable = 0;
  for (size_t i = 0; i < n; ++i) {
    Job* job = jobs[i];
    if (abort) {
      ++unavailable;
      CompleteJob(job, AbortStatus());
      continue;
    }
    if (job->cancelled()) {
      ++cancelled;
      Bump(Counters(*job).cancelled);
      CompleteJob(job, CancelledStatus());
      continue;
    }
    if (job->deadline <= t0) {
      ++expired;
      Bump(Counters(*job).expired);
      CompleteJob(job, ExpiredStatus());
      continue;
    }
    OpCounters& oc = Counters(*job);
    const uint64_t wait = Ns(t0 - job->enqueue_time_);
    Bump(oc.wait_sum, wait);
    Bump(oc.wait_hist[LatencyBucket(wait)]);
    jobs[kept++] = job;
  }

  // Group by (op, algorithm): insertion sort, O(n) for the common single-kind burst.
  for (size_t i = 1; i < kept; ++i) {
    Job* j = jobs[i];
    const unsigned k = Key(j);
    size_t p = i;
    while (p > 0 && Key(jobs[p - 1]) > k) {
      jobs[p] = jobs[p - 1];
      --p;
    }
    jobs[p] = j;
  }

  uint64_t ok = 0, failed = 0;
  Clock::time_point tg = Clock::now();
  for (size_t i = 0; i < kept;) {
    size_t e = i + 1;
    const unsigned k = Key(jobs[i]);
    while (e < kept && Key(jobs[e]) == k) ++e;
    const size_t count = e - i;
    Execute(jobs[i]->op(), jobs[i]->algorithm(), std::span<Job* const>(jobs + i, count),
            std::span<absl::Status>(statuses_, count));
    const Clock::time_point te = Clock::now();
    const uint64_t per_job = Ns(te - tg) / count;
    engine_.RecordCost(jobs[i]->op(), jobs[i]->algorithm(), per_job);
    OpCounters& oc = Counters(*jobs[i]);
    Bump(oc.jobs, count);
    Bump(oc.compute_sum, per_job * count);
    Bump(oc.compute_hist[LatencyBucket(per_job)], count);
    uint64_t group_errors = 0;
    for (size_t g = 0; g < count; ++g) {
      if (!statuses_[g].ok()) ++group_errors;
    }
    if (group_errors) Bump(oc.errors, group_errors);
    ok += count - group_errors;
    failed += group_errors;
    // Complete after the bookkeeping: a completion may destroy its job.
    for (size_t g = 0; g < count; ++g) CompleteJob(jobs[i + g], std::move(statuses_[g]));
    tg = Clock::now();
    i = e;
  }

  WorkerCounters& c = counters_;
  Bump(c.jobs, n);
  Bump(c.batches);
  if (stolen) Bump(c.stolen, n);
  Bump(c.batch_hist[BatchBucket(n)]);
  if (ok) Bump(c.done_ok, ok);
  if (failed) Bump(c.failed, failed);
  if (expired) Bump(c.expired, expired);
  if (cancelled) Bump(c.cancelled, cancelled);
  if (unavailable) Bump(c.unavailable, unavailable);
  Bump(c.busy_ns, Ns(tg - t0));
}

void Batcher::Execute(Operation op, kernels::AlgorithmId algorithm, std::span<Job* const> jobs,
                      std::span<absl::Status> statuses) {
  switch (op) {
    case Operation::kNull:
      for (absl::Status& s : statuses) s = absl::OkStatus();
      return;
    case Operation::kHash:
      ExecuteHash(algorithm, jobs, statuses);
      return;
    case Operation::kKemKeyGen:
    case Operation::kKemEncaps:
    case Operation::kKemDecaps:
    case Operation::kDsaKeyGen:
    case Operation::kDsaSign:
    case Operation::kDsaVerify:
      if (engine_.options_.pqc_executor != nullptr) {
        for (absl::Status& s : statuses) s = absl::OkStatus();
        arena_.Reset();
        engine_.options_.pqc_executor(op, algorithm, jobs, statuses, arena_);
        arena_.Reset();
      } else {
        for (absl::Status& s : statuses) {
          s = absl::UnimplementedError("engine built without the ML-KEM/ML-DSA executor");
        }
      }
      return;
  }
  for (absl::Status& s : statuses) s = absl::InvalidArgumentError("unknown operation");
}

void Batcher::ExecuteHash(kernels::AlgorithmId algorithm, std::span<Job* const> jobs,
                          std::span<absl::Status> statuses) {
  if (kernels::Facts(algorithm).family != kernels::Family::kHash) {
    for (absl::Status& s : statuses) {
      s = absl::InvalidArgumentError(std::string(kernels::Facts(algorithm).name) +
                                     " is not a hash algorithm");
    }
    return;
  }
  const size_t n = jobs.size();
  arena_.Reset();
  Bytes* ins = arena_.AllocateArray<Bytes>(n);
  MutBytes* outs = arena_.AllocateArray<MutBytes>(n);
  if (ins == nullptr || outs == nullptr) {
    for (absl::Status& s : statuses) s = absl::ResourceExhaustedError("worker scratch exhausted");
    arena_.Reset();
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const HashItem& item = jobs[i]->item<HashItem>();
    ins[i] = item.message;
    outs[i] = item.digest;
  }
  (void)kernels::HashBatch(kernels::AsHash(algorithm), std::span<const Bytes>(ins, n),
                           std::span<const MutBytes>(outs, n), statuses.data());
  arena_.Reset();
}

}  // namespace pqcd::engine
