// The engine: per-NUMA-node bounded queues drained in bursts by pinned worker threads that group
// identical operations and call the kernels' batch entry points.
//
//   auto engine = Engine::Create(options);          // starts the workers
//   job->on_complete = [](Job& j, absl::Status s) { ... };
//   engine->Submit(job);                            // never blocks, never allocates
//   engine->Shutdown();                             // or let the destructor do it
//
// Every submitted job completes exactly once with one of:
//   OK                  ran (per-item results in the Job, e.g. `verified`)
//   the kernel's error  ran and the kernel refused the input (INVALID_ARGUMENT, ...)
//   RESOURCE_EXHAUSTED  the node's queue was full (completed synchronously inside Submit, on the
//                       submitting thread)
//   UNAVAILABLE         submitted after Shutdown began (synchronously inside Submit), or still
//                       queued when Shutdown(kAbort) ran
//   DEADLINE_EXCEEDED   the deadline passed while queued (it did not run)
//   CANCELLED           Job::Cancel() was called while queued (it did not run)
//   UNIMPLEMENTED       a KEM/DSA job on an engine built without pqc_executor
#pragma once

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqcd/engine/job.h"
#include "pqcd/engine/memory.h"
#include "pqcd/engine/stats.h"
#include "pqcd/engine/topology.h"

namespace pqcd::engine {

// Runs one group of queued jobs that share (op, algorithm) for the KEM/DSA operations: fills the
// jobs' outputs and per-item results and sets statuses[i] for jobs[i]. `arena` is the worker's
// node-local scratch (empty on entry; the executor may Reset it). Provided by pqcd_engine_pqc
// (pqcd/engine/pqc_executor.h) so that the core engine does not depend on the ML-KEM/ML-DSA
// libraries.
using KernelExecutor = void (*)(Operation op, kernels::AlgorithmId algorithm,
                                std::span<Job* const> jobs, std::span<absl::Status> statuses,
                                ScratchArena& arena);

inline constexpr int kMaxBatchLimit = 256;

struct EngineOptions {
  // Topology source (default: this machine, via hwloc).
  TopologyOptions topology;
  // Number of workers; 0: one per physical core of the allowed CPUs, all nodes, minus the
  // reserved I/O cores. Workers are spread round-robin over the nodes.
  int workers = 0;
  // Explicit OS CPU list, one worker pinned to each (overrides `workers`).
  std::vector<int> cpus;
  // Physical cores kept free of workers for the gRPC I/O threads (taken from the end of each
  // node's core list, round-robin over nodes). Engine::io_cpus() lists them.
  int io_reserved_cores = 0;
  // Pin each worker to one PU of its core (the first allowed SMT sibling).
  bool pin_workers = true;
  // Bind queue storage, worker scratch and statistics to the worker's node (real topology only).
  bool bind_memory = true;

  // Per-node queue bound (rounded up to a power of two).
  size_t queue_capacity = 4096;
  // A worker takes up to max_batch jobs per burst (1..kMaxBatchLimit).
  int max_batch = 32;
  // 0: never wait for more jobs. Otherwise a worker that took fewer than max_batch jobs keeps
  // polling its queue for up to this long to fill the burst (latency for throughput).
  std::chrono::nanoseconds max_delay{0};
  // How long an idle worker polls before parking on a futex.
  std::chrono::nanoseconds spin_before_park{std::chrono::microseconds(20)};

  // Placement: job.node_hint if set; else (if enabled) the node of the CPU the caller runs on;
  // else the least loaded node.
  bool place_on_caller_cpu = true;
  // Idle workers take bursts from another node's queue when its depth is at least
  // steal_min_backlog (0: 4 * max_batch). Producers wake a parked worker of another node when
  // they push a node's queue past that depth.
  bool work_stealing = true;
  size_t steal_min_backlog = 0;

  // SubmitBurst may run a burst on the submitting thread instead of queuing it: when that thread
  // is not a worker, the node's queue is empty and one of the node's workers is parked (so its
  // core has nothing to do), at most one submitting thread per node at a time. It saves the
  // queue hand-off: a futex wake and two context switches per burst, which cost more than an
  // ML-KEM decapsulation on a virtual machine. Deadlines, cancellation, statistics and the
  // exactly-once completion are the same as on a worker.
  bool run_inline_when_idle = false;
  // ... and only bursts of at least this many jobs: a smaller one is queued, where the worker can
  // group it with other requests' jobs to fill the kernels' SIMD lanes.
  size_t inline_min_burst = 2;
  // KEM/DSA execution; nullptr: such jobs complete as UNIMPLEMENTED. Set it to
  // pqcd::engine::PqcKernelExecutor() (library pqcd_engine_pqc).
  KernelExecutor pqc_executor = nullptr;

  // Slow work. A job whose estimated cost (Job::cost_ns, else the mean time its (operation,
  // algorithm) took to compute, measured as jobs run, with a prior for SLH-DSA signing and key
  // generation) is at least `slow_job` never runs on a worker: an SLH-DSA-SHA2-256s signature
  // takes about 190 ms and cannot be preempted, and a worker busy with it serves none of the
  // calls its I/O receives. Slow jobs go to `slow_workers` threads of their own (0: one fewer
  // than the workers, at least one), which run at a lower priority (nice 10) than the workers,
  // take one job at a time, and take them from the tenants in fair turns weighted by cost (the
  // tenant that has had the least slow work so far goes next). Admission is by cost: a burst
  // whose slow jobs would pass `slow_queue` of queued work in all, or `slow_queue_per_tenant`
  // for one tenant, is refused as a whole with RESOURCE_EXHAUSTED. 0 (the default): no slow
  // pool, every job runs on the workers.
  std::chrono::nanoseconds slow_job{0};
  int slow_workers = 0;
  std::chrono::nanoseconds slow_queue{std::chrono::seconds(240)};
  std::chrono::nanoseconds slow_queue_per_tenant{std::chrono::seconds(60)};
};

// Where a worker runs. Available inside completions through CurrentWorker().
struct WorkerInfo {
  int id = 0;
  int node = 0;         // dense node index
  int cpu = -1;         // intended OS CPU (-1: unpinned)
  bool pinned = false;  // the affinity was really set to {cpu}
};
// The worker running the calling thread, or nullptr on a non-worker thread.
const WorkerInfo* CurrentWorker();

enum class ShutdownMode {
  kDrain,  // run every queued job (expired/cancelled ones complete as such)
  kAbort,  // complete every queued job with UNAVAILABLE without running it
};

// I/O that the workers serve themselves (thread-per-core serving): each worker polls its own
// source of requests (the server's gRPC completion queue of that worker) between bursts, and the
// jobs its handlers submit from there stay on that worker (see Engine::SubmitBurst). The engine
// knows nothing of gRPC: it calls these two from its workers and producers.
class WorkerIo {
 public:
  virtual ~WorkerIo() = default;
  // On worker `worker`'s thread: handles the events that are ready; when none is, waits until
  // `until` for the first one (a time already past: no waiting). Returns false once this worker's
  // I/O has ended for good (the engine then never calls it again for this worker).
  virtual bool Poll(int worker, std::chrono::steady_clock::time_point until) = 0;
  // Any thread: makes the worker's Poll return soon if it is waiting (work was queued for it).
  virtual void Wake(int worker) = 0;
};

class Worker;
class Batcher;
class SlowPool;
struct NodeState;

class Engine {
 public:
  // Discovers the topology, allocates the node queues and starts (and pins) the workers.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(EngineOptions options);
  ~Engine();  // Shutdown(kDrain)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues the job and returns at once. Thread-safe; does not allocate. A rejected job (queue
  // full, shutting down) is completed before Submit returns, on the calling thread.
  void Submit(Job* job);

  // Submit for several jobs (a Batch, a packed Stream message), all on one node: runs them all on
  // the calling thread before returning (EngineOptions::run_inline_when_idle), or queues them
  // all, or, when the node's queue has no room for all of them, completes them all at once with
  // RESOURCE_EXHAUSTED. Thread-safe; may be called from a completion (it then queues).
  // On a worker serving I/O (AttachIo), the jobs go to that worker's own queue: it runs them in
  // its next burst, together with whatever else its Poll received, and hands a backlog to the
  // node's ring only while a sibling is idle (at most one hand-off per job).
  void SubmitBurst(std::span<Job* const> jobs);
  // Thread-per-core serving: from now on every worker polls `io` between bursts, and blocks in
  // io->Poll instead of parking while it has nothing to do; producers wake it with io->Wake.
  // Called once, after Create; `io` must stay valid until every worker's Poll returned false and
  // the engine is shut down. Shutdown does not end the I/O: the workers keep running (and keep
  // computing what the I/O submits) until each one's Poll returned false.
  void AttachIo(WorkerIo* io);
  // Stops accepting (later Submits complete as UNAVAILABLE), finishes what is queued per `mode`,
  // joins the workers. Idempotent; must not be called from a completion.
  void Shutdown(ShutdownMode mode = ShutdownMode::kDrain);

  EngineStats GetStats() const;
  const Topology& topology() const { return topology_; }
  const EngineOptions& options() const { return options_; }
  std::vector<WorkerInfo> workers() const;
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  // CPUs of the cores reserved for I/O threads (io_reserved_cores), for the server to pin to.
  const std::vector<int>& io_cpus() const { return io_cpus_; }
  // Current depth of a node's queue (approximate).
  size_t QueueDepth(int node) const;
  // The estimated CPU cost of `job` in nanoseconds (EngineOptions::slow_job).
  uint64_t EstimatedCostNs(const Job& job) const;

 private:
  friend class Worker;
  friend class Batcher;
  friend class SlowPool;
  // Moves the slow jobs of `jobs` to the slow pool (admitted all or none); the fast ones are
  // left in `fast`. False: the slow pool refused them, and every job of `jobs` was completed
  // RESOURCE_EXHAUSTED.
  bool RouteSlow(std::span<Job* const> jobs, std::vector<Job*>* fast);
  // SubmitBurst for jobs that run on the workers.
  void SubmitFast(std::span<Job* const> jobs);
  // A group of jobs of (op, algorithm) took `per_job_ns` each: the estimate follows it.
  void RecordCost(Operation op, kernels::AlgorithmId algorithm, uint64_t per_job_ns);
  explicit Engine(EngineOptions options);
  absl::Status Start();
  int PickNode(const Job& job) const;
  void Complete(Job* job, absl::Status status);
  // NodeQueue's I/O waker: wakes one (or every) worker of the node that waits in its Poll.
  static void WakeIoWorkers(void* node_state, bool all);

  EngineOptions options_;
  Topology topology_;
  std::vector<std::unique_ptr<NodeState>> nodes_;
  std::vector<int> active_nodes_;  // nodes with at least one worker
  std::vector<int> cpu_to_active_node_;
  std::vector<std::unique_ptr<Worker>> workers_;
  // Per node: the runner SubmitBurst uses on a submitting thread (never started as a thread),
  // and whether a thread holds it.
  std::vector<std::unique_ptr<Worker>> inline_runners_;
  std::unique_ptr<std::atomic<bool>[]> inline_busy_;
  std::vector<std::thread> threads_;
  std::vector<int> io_cpus_;
  std::vector<int> real_cpus_;  // this process's affinity at Create
  // Mean compute time per job of each (operation, algorithm), an exponential moving average
  // (0: not measured yet).
  std::unique_ptr<std::atomic<uint64_t>[]> cost_ns_;
  std::unique_ptr<SlowPool> slow_;  // null: no slow pool (slow_job == 0)
  size_t steal_threshold_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> abort_{false};
  std::atomic<bool> shut_down_{false};
  std::atomic<WorkerIo*> io_{nullptr};
  std::mutex shutdown_mu_;
  std::latch start_{1};
};

}  // namespace pqcd::engine
