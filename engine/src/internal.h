// Engine internals shared by engine.cc and worker.cc.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "pqcd/engine/engine.h"
#include "pqcd/engine/node_queue.h"
#include "pqcd/engine/stats.h"

namespace pqcd::engine {

struct NodeState {
  NodeState(int idx, int os, size_t capacity, int mem_node)
      : queue(capacity, mem_node), index(idx), os_index(os) {}
  NodeQueue queue;
  int index;
  int os_index;
  int workers = 0;
  Engine* engine = nullptr;
  std::vector<Worker*> members;  // the node's workers (the I/O waker looks for a parked one)
  // Written by producers on the rejection path only.
  alignas(kCacheLine) std::atomic<uint64_t> rejected_full{0};
  std::atomic<uint64_t> rejected_unavailable{0};
};

// Single-writer counter: the owning worker updates it without a read-modify-write.
inline void Bump(std::atomic<uint64_t>& c, uint64_t d = 1) {
  c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}

inline int BatchBucket(size_t n) {
  const int b = n <= 1 ? 0 : static_cast<int>(std::bit_width(n - 1));
  return b < kBatchBuckets ? b : kBatchBuckets - 1;
}

struct OpCounters {
  std::atomic<uint64_t> jobs, errors, expired, cancelled, wait_sum, compute_sum;
  std::atomic<uint64_t> wait_hist[kLatencyBuckets];
  std::atomic<uint64_t> compute_hist[kLatencyBuckets];
};

struct WorkerCounters {
  alignas(kCacheLine) std::atomic<uint64_t> jobs, batches, stolen, busy_ns, parks;
  std::atomic<uint64_t> done_ok, failed, expired, cancelled, unavailable;
  std::atomic<uint64_t> batch_hist[kBatchBuckets];
  OpCounters ops[kNumOperations][kernels::kNumAlgorithms];
};

// Groups a burst by (operation, algorithm), runs each group through its kernel, records the
// statistics and completes the jobs.
class Batcher {
 public:
  Batcher(Engine& engine, WorkerCounters& counters, absl::Status* statuses, ScratchArena& arena)
      : engine_(engine), counters_(counters), statuses_(statuses), arena_(arena) {}
  // Processes jobs[0..n) (n <= kMaxBatchLimit); every job is completed on return.
  void Process(Job** jobs, size_t n, bool stolen);

 private:
  void Execute(Operation op, kernels::AlgorithmId algorithm, std::span<Job* const> jobs,
               std::span<absl::Status> statuses);
  void ExecuteHash(kernels::AlgorithmId algorithm, std::span<Job* const> jobs,
                   std::span<absl::Status> statuses);
  OpCounters& Counters(const Job& job) {
    // Set<Item>() makes both in range: the variant index is the operation, the id a table row.
    return counters_.ops[static_cast<size_t>(job.op())][static_cast<size_t>(job.algorithm())];
  }

  Engine& engine_;
  WorkerCounters& counters_;
  absl::Status* statuses_;
  ScratchArena& arena_;
};

class Worker {
 public:
  Worker(Engine& engine, int id, int node, int cpu, int mem_node);
  ~Worker();
  void Run(std::latch& start);

  // Runs jobs on the calling thread through this worker's batcher, in bursts of at most
  // max_batch (the inline runner of SubmitBurst; the caller holds it exclusively).
  void RunHere(std::span<Job* const> jobs);
  // Runs one job that waited in a queue (its enqueue time is kept: the wait is counted) on the
  // calling thread: the slow pool's runners.
  void RunQueued(Job* job);

  WorkerInfo info;
  WorkerCounters& counters() { return *counters_; }
  const WorkerCounters& counters() const { return *counters_; }

  // The worker whose thread this is (null elsewhere, and on SubmitBurst's inline runners).
  static Worker* Current();
  Engine& engine() { return engine_; }
  // Thread-per-core: queues the jobs on this worker's own queue (its thread only). False when
  // the worker serves no I/O or its queue has no room for all of them (then the caller queues
  // them on the node's ring).
  bool TryQueueLocal(std::span<Job* const> jobs);
  // Thread-per-core with run_inline_when_idle: runs the jobs at once, on this thread, when its own
  // queue is empty and it is not inside a burst (a burst larger than the queue, on an idle core).
  bool TryRunNow(std::span<Job* const> jobs);
  // Set (by the worker) while it waits in its I/O; whoever clears it wakes it (WorkerIo::Wake).
  std::atomic<bool> io_parked{false};

 private:
  size_t Steal();
  size_t TopUp(NodeState& home, size_t n);
  void Idle(NodeState& home);
  bool StealableWork() const;
  // Moves up to max jobs from the own queue into burst_ + at, oldest first.
  size_t TakeLocal(size_t at, size_t max);
  // Hands what exceeds one burst to the node's ring while a sibling is parked.
  void ShareBacklog(NodeState& home);
  void EndIo();
  // Engine::AttachIo was called and this worker has not started polling yet.
  bool IoToStart() const {
    return io_ == nullptr && !io_ended_ && engine_.io_.load(std::memory_order_seq_cst) != nullptr;
  }

  Engine& engine_;
  NodeBuffer mem_;  // counters, burst array and statuses, on the worker's node
  WorkerCounters* counters_;
  Job** burst_;
  absl::Status* statuses_;
  ScratchArena arena_;
  Batcher batcher_;
  size_t steal_cursor_ = 0;
  // Thread-per-core I/O (Engine::AttachIo): polled between bursts until its Poll returns false.
  WorkerIo* io_ = nullptr;
  bool io_ended_ = false;
  bool in_burst_ = false;  // inside batcher_.Process (burst_ is in use)
  // The own queue: a ring of jobs its I/O submitted (this thread only).
  std::vector<Job*> local_;
  size_t local_head_ = 0;
  size_t local_count_ = 0;
};

// The slow pool (EngineOptions::slow_job): threads of their own for jobs too slow for a worker,
// fed from one queue per tenant in fair turns weighted by cost. Admission and the queues are
// under one mutex: slow jobs take milliseconds each, so the lock is not on any hot path.
class SlowPool {
 public:
  SlowPool(Engine& engine, int threads, int mem_node);
  ~SlowPool();  // Close() and Join()
  SlowPool(const SlowPool&) = delete;
  SlowPool& operator=(const SlowPool&) = delete;

  void Start();
  // Queues every job of `jobs` (costs[i] is jobs[i]'s estimate), or none: false when they would
  // pass the total or a tenant's bound, or the pool is closed (the caller completes them).
  bool TryAdmit(std::span<Job* const> jobs, std::span<const uint64_t> costs, bool* closed);
  // No more admissions; the threads run (or, on an aborting engine, complete as UNAVAILABLE)
  // what is queued and end.
  void Close();
  void Join();

  int threads() const { return static_cast<int>(runners_.size()); }
  const std::vector<std::unique_ptr<Worker>>& runners() const { return runners_; }
  size_t queued() const;
  uint64_t queued_cost_ns() const;
  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }

 private:
  struct Queued {
    Job* job;
    uint64_t cost;
  };
  struct Tenant {
    std::deque<Queued> jobs;
    uint64_t queued_cost = 0;
    uint64_t served = 0;  // virtual time: the cost of what it has had run, from when it came
  };
  void Loop(Worker* runner);
  // The next job, by the fairness rule; null when none is queued. mu_ held.
  Job* TakeLocked();

  Engine& engine_;
  std::vector<std::unique_ptr<Worker>> runners_;
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, Tenant> tenants_;  // tenants with queued jobs
  uint64_t clock_ = 0;                  // the least `served` among tenants being served
  size_t queued_ = 0;
  uint64_t queued_cost_ = 0;
  bool closed_ = false;
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace pqcd::engine
