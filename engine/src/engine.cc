// Engine: worker placement, Submit, Shutdown, statistics.
#include "pqcd/engine/engine.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <latch>
#include <mutex>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "internal.h"
#include "spdlog/spdlog.h"

namespace pqcd::engine {
namespace {

const absl::Status& QueueFullStatus() {
  static const absl::Status s = absl::ResourceExhaustedError("engine queue full");
  return s;
}
const absl::Status& ClosedStatus() {
  static const absl::Status s = absl::UnavailableError("engine shutting down");
  return s;
}

bool PinThread(std::thread& t, int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(t.native_handle(), sizeof(set), &set) == 0;
}

}  // namespace

Engine::Engine(EngineOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(EngineOptions options) {
  if (options.max_batch < 1 || options.max_batch > kMaxBatchLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch must be 1..", kMaxBatchLimit, ", got ", options.max_batch));
  }
  if (options.queue_capacity < 2 || options.queue_capacity > (size_t{1} << 30)) {
    return absl::InvalidArgumentError("queue_capacity must be 2..2^30");
  }
  if (options.workers < 0 || options.io_reserved_cores < 0) {
    return absl::InvalidArgumentError("workers and io_reserved_cores must be >= 0");
  }
  std::unique_ptr<Engine> engine(new Engine(std::move(options)));
  absl::Status s = engine->Start();
  if (!s.ok()) return s;
  return engine;
}

absl::Status Engine::Start() {
  topology_ = Topology::Discover(options_.topology);
  real_cpus_ = CurrentAffinity();
  const int nnodes = topology_.num_nodes();

  // Cores available for workers, per node, after the I/O reservation.
  std::vector<std::vector<const CoreInfo*>> cores(static_cast<size_t>(nnodes));
  for (const NodeInfo& n : topology_.nodes()) {
    for (const CoreInfo& c : n.cores) cores[static_cast<size_t>(n.index)].push_back(&c);
  }
  int total_cores = topology_.num_cores();
  for (int r = 0, node = nnodes - 1; r < options_.io_reserved_cores; ++r) {
    // From the end of each node's list, round-robin over nodes, keeping one core per node.
    bool taken = false;
    for (int tries = 0; tries < nnodes && !taken; ++tries, node = (node + nnodes - 1) % nnodes) {
      auto& list = cores[static_cast<size_t>(node)];
      if (list.size() > 1) {
        for (int pu : list.back()->pus) io_cpus_.push_back(pu);
        list.pop_back();
        --total_cores;
        taken = true;
      }
    }
    if (!taken) {
      spdlog::warn("pqcd engine: cannot reserve {} I/O cores; reserved {}",
                   options_.io_reserved_cores, r);
      break;
    }
  }
  std::sort(io_cpus_.begin(), io_cpus_.end());

  // Worker plan: (node, cpu) per worker.
  struct Slot {
    int node;
    int cpu;
  };
  std::vector<Slot> plan;
  if (!options_.cpus.empty()) {
    for (int cpu : options_.cpus) {
      const int node = topology_.NodeOfCpu(cpu);
      if (node < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("cpus: CPU ", cpu, " is not an allowed CPU of the topology"));
      }
      plan.push_back({node, cpu});
    }
  } else {
    const int want = options_.workers > 0 ? options_.workers : std::max(1, total_cores);
    if (want > total_cores) {
      spdlog::warn("pqcd engine: {} workers for {} physical cores; cores will be shared", want,
                   total_cores);
    }
    // Round-robin over nodes, one physical core (its first allowed PU) at a time.
    for (size_t round = 0; static_cast<int>(plan.size()) < want; ++round) {
      bool any = false;
      for (int n = 0; n < nnodes && static_cast<int>(plan.size()) < want; ++n) {
        const auto& list = cores[static_cast<size_t>(n)];
        if (list.empty()) continue;
        const CoreInfo* core = list[round % list.size()];
        // On later rounds (oversubscription) use the SMT siblings first, if any.
        const size_t lap = round / list.size();
        plan.push_back({n, core->pus[lap % core->pus.size()]});
        any = true;
      }
      if (!any) return absl::FailedPreconditionError("no core left for workers");
    }
  }

  const bool bind_mem = options_.bind_memory && topology_.is_this_system() && NumaAvailable();
  for (const NodeInfo& n : topology_.nodes()) {
    nodes_.push_back(std::make_unique<NodeState>(n.index, n.os_index, options_.queue_capacity,
                                                 bind_mem ? n.os_index : -1));
  }
  for (const Slot& s : plan) ++nodes_[static_cast<size_t>(s.node)]->workers;
  for (auto& n : nodes_) n->engine = this;
  std::vector<int> node_to_active(static_cast<size_t>(nnodes), -1);
  for (int n = 0; n < nnodes; ++n) {
    if (nodes_[static_cast<size_t>(n)]->workers > 0) active_nodes_.push_back(n);
  }
  cpu_to_active_node_.assign(static_cast<size_t>(CPU_SETSIZE), -1);
  for (const NodeInfo& n : topology_.nodes()) {
    if (nodes_[static_cast<size_t>(n.index)]->workers == 0) continue;
    for (int c : n.cpus) {
      if (c >= 0 && c < CPU_SETSIZE) cpu_to_active_node_[static_cast<size_t>(c)] = n.index;
    }
  }
  steal_threshold_ = options_.steal_min_backlog != 0 ? options_.steal_min_backlog
                                                     : 4 * static_cast<size_t>(options_.max_batch);

  // Start the workers, pin them, then let them run.
  const bool pin = options_.pin_workers && topology_.from_hwloc();
  int unpinned = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const int node = plan[i].node;
    workers_.push_back(std::make_unique<Worker>(*this, static_cast<int>(i), node, plan[i].cpu,
                                                bind_mem ? topology_.nodes()[node].os_index : -1));
    nodes_[static_cast<size_t>(node)]->members.push_back(workers_.back().get());
  }
  if (options_.run_inline_when_idle) {
    inline_busy_ = std::make_unique<std::atomic<bool>[]>(nodes_.size());
    for (size_t n = 0; n < nodes_.size(); ++n) {
      inline_busy_[n].store(false, std::memory_order_relaxed);
      inline_runners_.push_back(
          std::make_unique<Worker>(*this, -1 - static_cast<int>(n), static_cast<int>(n), -1,
                                   bind_mem ? topology_.nodes()[n].os_index : -1));
    }
  }
  threads_.reserve(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    Worker* w = workers_[i].get();
    threads_.emplace_back([this, w] { w->Run(start_); });
    if (!pin) {
      w->info.cpu = -1;
      continue;
    }
    // An injected topology may name CPUs this machine lacks: pin only to CPUs that exist here.
    const bool exists =
        std::find(real_cpus_.begin(), real_cpus_.end(), w->info.cpu) != real_cpus_.end();
    w->info.pinned = exists && PinThread(threads_.back(), w->info.cpu);
    if (!w->info.pinned) ++unpinned;
  }
  if (pin && unpinned > 0) {
    spdlog::warn("pqcd engine: {} of {} workers could not be pinned to their CPU{}", unpinned,
                 plan.size(), topology_.is_this_system() ? "" : " (injected topology)");
  }
  start_.count_down();  // publishes `info` to the workers

  cost_ns_ = std::make_unique<std::atomic<uint64_t>[]>(kNumOperations * kernels::kNumAlgorithms);
  for (size_t i = 0; i < kNumOperations * kernels::kNumAlgorithms; ++i) cost_ns_[i].store(0);
  if (options_.slow_job.count() > 0) {
    const int n = options_.slow_workers > 0 ? options_.slow_workers
                                            : std::max(1, static_cast<int>(workers_.size()) - 1);
    slow_ = std::make_unique<SlowPool>(*this, n, -1);
    slow_->Start();
  }

  std::vector<std::string> desc;
  for (const auto& w : workers_) {
    desc.push_back(absl::StrCat("w", w->info.id, "@n", w->info.node, "/cpu", w->info.cpu,
                                w->info.pinned ? "" : "(unpinned)"));
  }
  spdlog::info("pqcd engine: {}; workers: {}; io cpus [{}]", topology_.Describe(),
               absl::StrJoin(desc, " "), absl::StrJoin(io_cpus_, ","));
  return absl::OkStatus();
}

Engine::~Engine() {
  Shutdown(ShutdownMode::kDrain);
}

int Engine::PickNode(const Job& job) const {
  if (active_nodes_.size() == 1) return active_nodes_[0];
  const int hint = job.node_hint;
  if (hint >= 0 && hint < static_cast<int>(nodes_.size()) &&
      nodes_[static_cast<size_t>(hint)]->workers > 0) {
    return hint;
  }
  if (options_.place_on_caller_cpu && topology_.is_this_system()) {
    const int cpu = sched_getcpu();
    if (cpu >= 0 && cpu < static_cast<int>(cpu_to_active_node_.size())) {
      const int n = cpu_to_active_node_[static_cast<size_t>(cpu)];
      if (n >= 0) return n;
    }
  }
  int best = active_nodes_[0];
  size_t best_depth = SIZE_MAX;
  for (int n : active_nodes_) {
    const size_t d = nodes_[static_cast<size_t>(n)]->queue.SizeApprox();
    if (d < best_depth) {
      best = n;
      best_depth = d;
    }
  }
  return best;
}

void Engine::Complete(Job* job, absl::Status status) {
  if (job->on_complete) job->on_complete(*job, std::move(status));
}

namespace {

// Before a job of (op, algorithm) has been measured: SLH-DSA signing and key generation are
// slow (milliseconds for the fast sets, up to a fifth of a second for the small ones); the rest
// is taken as fast until measured.
uint64_t PriorCostNs(Operation op, kernels::AlgorithmId algorithm) {
  if (op != Operation::kDsaSign && op != Operation::kDsaKeyGen) return 0;
  return kernels::Facts(algorithm).name.starts_with("SLH-DSA") ? 20'000'000 : 0;
}

// A hash costs about its bytes (SHA-3 and SHA-2 run at 0.5-2 GB/s): 1 ns per byte in and out.
uint64_t HashCostNs(const HashItem& item) {
  return item.message.size() + item.digest.size();
}

const absl::Status& SlowQueueFullStatus() {
  static const absl::Status s = absl::ResourceExhaustedError(
      "pqcd's queue of slow work (SLH-DSA signing, large hashes) is full for this caller or in "
      "all (--slow-queue-seconds-per-identity, --slow-queue-seconds); retry later");
  return s;
}

}  // namespace

uint64_t Engine::EstimatedCostNs(const Job& job) const {
  if (job.cost_ns != 0) return job.cost_ns;
  if (job.op() == Operation::kHash) return HashCostNs(job.item<HashItem>());
  const size_t i = static_cast<size_t>(job.op()) * kernels::kNumAlgorithms +
                   static_cast<size_t>(job.algorithm());
  const uint64_t measured = cost_ns_ ? cost_ns_[i].load(std::memory_order_relaxed) : 0;
  return measured != 0 ? measured : PriorCostNs(job.op(), job.algorithm());
}

void Engine::RecordCost(Operation op, kernels::AlgorithmId algorithm, uint64_t per_job_ns) {
  if (!cost_ns_ || op == Operation::kHash) return;
  std::atomic<uint64_t>& c =
      cost_ns_[static_cast<size_t>(op) * kernels::kNumAlgorithms + static_cast<size_t>(algorithm)];
  const uint64_t old = c.load(std::memory_order_relaxed);
  // A moving average over about eight groups; racing updates lose one sample, nothing more.
  c.store(old == 0 ? std::max<uint64_t>(per_job_ns, 1) : (old * 7 + per_job_ns) / 8,
          std::memory_order_relaxed);
}

bool Engine::RouteSlow(std::span<Job* const> jobs, std::vector<Job*>* fast) {
  const uint64_t threshold = static_cast<uint64_t>(options_.slow_job.count());
  Job* slow_jobs[kMaxBatchLimit];
  uint64_t costs[kMaxBatchLimit];
  std::vector<Job*> slow_more;  // bursts beyond kMaxBatchLimit slow jobs (rare)
  std::vector<uint64_t> costs_more;
  size_t n = 0;
  for (Job* job : jobs) {
    const uint64_t cost = EstimatedCostNs(*job);
    if (cost < threshold) {
      fast->push_back(job);
      continue;
    }
    if (n < kMaxBatchLimit) {
      slow_jobs[n] = job;
      costs[n++] = cost;
    } else {
      slow_more.push_back(job);
      costs_more.push_back(cost);
    }
  }
  if (n == 0) return true;
  if (!slow_more.empty()) {
    slow_more.insert(slow_more.begin(), slow_jobs, slow_jobs + n);
    costs_more.insert(costs_more.begin(), costs, costs + n);
  }
  const std::span<Job* const> slow =
      slow_more.empty() ? std::span<Job* const>(slow_jobs, n) : std::span<Job* const>(slow_more);
  const std::span<const uint64_t> slow_costs = slow_more.empty()
                                                   ? std::span<const uint64_t>(costs, n)
                                                   : std::span<const uint64_t>(costs_more);
  bool closed = false;
  if (slow_->TryAdmit(slow, slow_costs, &closed)) return true;
  // Refused: the burst as a whole (a Batch half answered "busy" helps no caller).
  for (Job* job : jobs) Complete(job, closed ? ClosedStatus() : SlowQueueFullStatus());
  fast->clear();
  return false;
}

void Engine::Submit(Job* job) {
  if (slow_ != nullptr &&
      EstimatedCostNs(*job) >= static_cast<uint64_t>(options_.slow_job.count())) {
    std::vector<Job*> fast;
    (void)RouteSlow(std::span<Job* const>(&job, 1), &fast);
    return;
  }
  job->enqueue_time_ = Job::Clock::now();
  const int node = PickNode(*job);
  NodeState& ns = *nodes_[static_cast<size_t>(node)];
  switch (ns.queue.TryPush(job)) {
    case PushResult::kOk:
      // `job` may already be completed and gone: do not touch it below.
      if (options_.work_stealing && active_nodes_.size() > 1 &&
          ns.queue.SizeApprox() >= steal_threshold_) {
        for (int n : active_nodes_) {
          NodeQueue& other = nodes_[static_cast<size_t>(n)]->queue;
          if (n != node && other.sleepers() > 0) {
            other.WakeOne();
            break;
          }
        }
      }
      return;
    case PushResult::kFull:
      ns.rejected_full.fetch_add(1, std::memory_order_relaxed);
      Complete(job, QueueFullStatus());
      return;
    case PushResult::kClosed:
      ns.rejected_unavailable.fetch_add(1, std::memory_order_relaxed);
      Complete(job, ClosedStatus());
      return;
  }
}

void Engine::AttachIo(WorkerIo* io) {
  for (auto& n : nodes_) n->queue.SetIoWaker(&Engine::WakeIoWorkers, n.get());
  io_.store(io, std::memory_order_seq_cst);
  // Workers parked on the futex look again and start polling.
  for (auto& n : nodes_) n->queue.WakeAll();
}

void Engine::WakeIoWorkers(void* node_state, bool all) {
  NodeState& ns = *static_cast<NodeState*>(node_state);
  WorkerIo* io = ns.engine->io_.load(std::memory_order_acquire);
  if (io == nullptr) return;
  for (Worker* w : ns.members) {
    // Whoever clears the flag wakes the worker: one wake-up per park.
    if (w->io_parked.load(std::memory_order_relaxed) &&
        w->io_parked.exchange(false, std::memory_order_acq_rel)) {
      io->Wake(w->info.id);
      if (!all) return;
    }
  }
}

void Engine::SubmitBurst(std::span<Job* const> jobs) {
  if (jobs.empty()) return;
  if (slow_ != nullptr) {
    // The slow jobs go to the slow pool; the rest goes on as below.
    const uint64_t threshold = static_cast<uint64_t>(options_.slow_job.count());
    if (std::any_of(jobs.begin(), jobs.end(),
                    [&](const Job* j) { return EstimatedCostNs(*j) >= threshold; })) {
      std::vector<Job*> fast;
      fast.reserve(jobs.size());
      if (!RouteSlow(jobs, &fast) || fast.empty()) return;
      SubmitFast(fast);
      return;
    }
  }
  SubmitFast(jobs);
}

void Engine::SubmitFast(std::span<Job* const> jobs) {
  // On a worker serving I/O: its own queue, run in its next burst with whatever else arrived.
  // A burst larger than that queue, on a worker with nothing queued, runs at once when inline
  // runs are allowed (as a burst on an idle core's submitting thread would below).
  if (Worker* self = Worker::Current(); self != nullptr && &self->engine() == this) {
    if (self->TryQueueLocal(jobs)) return;
    if (options_.run_inline_when_idle && self->TryRunNow(jobs)) return;
  }
  const int node = PickNode(*jobs[0]);
  NodeState& ns = *nodes_[static_cast<size_t>(node)];
  if (options_.run_inline_when_idle && jobs.size() >= options_.inline_min_burst &&
      CurrentWorker() == nullptr && !stopping_.load(std::memory_order_acquire)) {
    std::atomic<bool>& busy = inline_busy_[static_cast<size_t>(node)];
    // A parked worker means an idle core; an empty queue means nobody queued before us.
    if (ns.queue.sleepers() > 0 && ns.queue.SizeApprox() == 0 && !ns.queue.closed() &&
        !busy.load(std::memory_order_relaxed) && !busy.exchange(true, std::memory_order_seq_cst)) {
      // Shutdown sets stopping_ and then waits for busy to clear: one of us sees the other.
      if (!stopping_.load(std::memory_order_seq_cst)) {
        inline_runners_[static_cast<size_t>(node)]->RunHere(jobs);
        busy.store(false, std::memory_order_release);
        return;
      }
      busy.store(false, std::memory_order_release);
    }
  }
  // Admitted as a whole or refused as a whole: a burst is one request's work (a Batch, a packed
  // Stream message), and half of it answered "queue full" helps no caller. The check is racy
  // against other producers; a push that still fails refuses that job alone.
  if (ns.queue.SizeApprox() + jobs.size() > ns.queue.capacity() && !ns.queue.closed()) {
    ns.rejected_full.fetch_add(jobs.size(), std::memory_order_relaxed);
    for (Job* job : jobs) Complete(job, QueueFullStatus());
    return;
  }
  for (Job* job : jobs) Submit(job);
}

void Engine::Shutdown(ShutdownMode mode) {
  std::lock_guard<std::mutex> lock(shutdown_mu_);
  if (shut_down_.load(std::memory_order_acquire)) return;
  if (mode == ShutdownMode::kAbort) abort_.store(true, std::memory_order_relaxed);
  for (auto& n : nodes_) n->queue.Close();
  if (slow_ != nullptr) slow_->Close();
  stopping_.store(true, std::memory_order_seq_cst);
  for (auto& n : nodes_) n->queue.WakeAll();
  // Bursts running on submitting threads finish before the runners can go away.
  for (size_t n = 0; n < inline_runners_.size(); ++n) {
    while (inline_busy_[n].load(std::memory_order_seq_cst)) std::this_thread::yield();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  if (slow_ != nullptr) slow_->Join();
  shut_down_.store(true, std::memory_order_release);
}

size_t Engine::QueueDepth(int node) const {
  if (node < 0 || node >= static_cast<int>(nodes_.size())) return 0;
  return nodes_[static_cast<size_t>(node)]->queue.SizeApprox();
}

std::vector<WorkerInfo> Engine::workers() const {
  std::vector<WorkerInfo> out;
  for (const auto& w : workers_) out.push_back(w->info);
  return out;
}

EngineStats Engine::GetStats() const {
  constexpr auto R = std::memory_order_relaxed;
  EngineStats st;
  for (const auto& n : nodes_) {
    NodeStats ns;
    ns.node = n->index;
    ns.os_index = n->os_index;
    ns.workers = n->workers;
    ns.queue_depth = n->queue.SizeApprox();
    ns.queue_capacity = n->queue.capacity();
    ns.rejected_full = n->rejected_full.load(R);
    ns.rejected_unavailable = n->rejected_unavailable.load(R);
    st.jobs_rejected += ns.rejected_full;
    st.jobs_unavailable += ns.rejected_unavailable;
    st.nodes.push_back(ns);
  }
  std::vector<OpStats> ops(kNumOperations * kernels::kNumAlgorithms);
  std::vector<const Worker*> all;
  for (const auto& w : workers_) all.push_back(w.get());
  for (const auto& w : inline_runners_) all.push_back(w.get());
  if (slow_ != nullptr) {
    for (const auto& w : slow_->runners()) all.push_back(w.get());
    st.slow_workers = slow_->threads();
    st.slow_rejected = slow_->rejected();
    st.slow_queued = slow_->queued();
    st.slow_queued_cost_ns = slow_->queued_cost_ns();
  }
  for (const Worker* w : all) {
    const WorkerCounters& c = w->counters();
    if (w->info.id >= 0) {
      WorkerStats ws;
      ws.id = w->info.id;
      ws.node = w->info.node;
      ws.cpu = w->info.cpu;
      ws.pinned = w->info.pinned;
      ws.jobs = c.jobs.load(R);
      ws.batches = c.batches.load(R);
      ws.stolen_jobs = c.stolen.load(R);
      ws.busy_ns = c.busy_ns.load(R);
      ws.parks = c.parks.load(R);
      st.workers.push_back(ws);
    } else if (w->info.id <= -1000) {
      st.slow_jobs += c.jobs.load(R);
    } else {
      st.jobs_inline += c.jobs.load(R);
    }
    st.jobs_done += c.done_ok.load(R);
    st.jobs_failed += c.failed.load(R);
    st.jobs_expired += c.expired.load(R);
    st.jobs_cancelled += c.cancelled.load(R);
    st.jobs_unavailable += c.unavailable.load(R);
    for (int b = 0; b < kBatchBuckets; ++b) st.batch_size_hist[b] += c.batch_hist[b].load(R);
    for (int op = 0; op < kNumOperations; ++op) {
      for (size_t alg = 0; alg < kernels::kNumAlgorithms; ++alg) {
        const OpCounters& oc = c.ops[op][alg];
        OpStats& o = ops[static_cast<size_t>(op) * kernels::kNumAlgorithms + alg];
        o.op = static_cast<Operation>(op);
        o.algorithm = static_cast<kernels::AlgorithmId>(alg);
        o.jobs += oc.jobs.load(R);
        o.errors += oc.errors.load(R);
        o.expired += oc.expired.load(R);
        o.cancelled += oc.cancelled.load(R);
        o.queue_wait_ns_sum += oc.wait_sum.load(R);
        o.compute_ns_sum += oc.compute_sum.load(R);
        for (int b = 0; b < kLatencyBuckets; ++b) {
          o.queue_wait_hist[b] += oc.wait_hist[b].load(R);
          o.compute_hist[b] += oc.compute_hist[b].load(R);
        }
      }
    }
  }
  for (OpStats& o : ops) {
    if (o.jobs + o.expired + o.cancelled > 0) st.ops.push_back(o);
  }
  return st;
}

}  // namespace pqcd::engine
