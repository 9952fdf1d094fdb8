// The slow pool (EngineOptions::slow_job, internal.h): jobs too slow for a worker run here, one
// at a time per thread, taken from the tenants in fair turns.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "internal.h"

namespace pqcd::engine {

SlowPool::SlowPool(Engine& engine, int threads, int mem_node) : engine_(engine) {
  for (int i = 0; i < threads; ++i) {
    // Ids below the inline runners' (-1 - node): GetStats counts them apart from the workers.
    runners_.push_back(std::make_unique<Worker>(engine, -1000 - i, 0, -1, mem_node));
  }
}

SlowPool::~SlowPool() {
  Close();
  Join();
}

void SlowPool::Start() {
  for (auto& r : runners_) {
    Worker* runner = r.get();
    threads_.emplace_back([this, runner] { Loop(runner); });
  }
}

bool SlowPool::TryAdmit(std::span<Job* const> jobs, std::span<const uint64_t> costs, bool* closed) {
  const uint64_t max_total = static_cast<uint64_t>(engine_.options_.slow_queue.count());
  const uint64_t max_tenant = static_cast<uint64_t>(engine_.options_.slow_queue_per_tenant.count());
  std::lock_guard<std::mutex> lock(mu_);
  *closed = closed_;
  if (closed_) return false;
  // What the burst adds, per tenant (a burst is one request's, but lanes mix callers).
  std::vector<std::pair<uint32_t, uint64_t>> added;
  uint64_t total = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    total += costs[i];
    auto it = std::find_if(added.begin(), added.end(),
                           [&](const auto& a) { return a.first == jobs[i]->tenant; });
    if (it == added.end()) {
      added.emplace_back(jobs[i]->tenant, costs[i]);
    } else {
      it->second += costs[i];
    }
  }
  // A burst that is over a bound on its own is still admitted into an empty queue (one caller's
  // single huge request must be able to run at all), never beside other queued work.
  const bool too_much_in_all = queued_cost_ > 0 && queued_cost_ + total > max_total;
  bool too_much_for_one = false;
  for (const auto& [tenant, cost] : added) {
    auto it = tenants_.find(tenant);
    const uint64_t has = it == tenants_.end() ? 0 : it->second.queued_cost;
    if (has > 0 && has + cost > max_tenant) too_much_for_one = true;
  }
  if (too_much_in_all || too_much_for_one ||
      queued_ + jobs.size() > engine_.options_.queue_capacity) {
    rejected_.fetch_add(jobs.size(), std::memory_order_relaxed);
    return false;
  }
  const Job::Clock::time_point now = Job::Clock::now();
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job* job = jobs[i];
    job->enqueue_time_ = now;
    auto [it, fresh] = tenants_.try_emplace(job->tenant);
    // A tenant that comes (back) starts at the pool's clock: it gets its fair turn from now on,
    // not a credit for the time it was away.
    if (fresh) it->second.served = clock_;
    it->second.jobs.push_back({job, costs[i]});
    it->second.queued_cost += costs[i];
  }
  queued_ += jobs.size();
  queued_cost_ += total;
  cv_.notify_all();
  return true;
}

Job* SlowPool::TakeLocked() {
  auto next = tenants_.end();
  for (auto it = tenants_.begin(); it != tenants_.end(); ++it) {
    if (next == tenants_.end() || it->second.served < next->second.served) next = it;
  }
  if (next == tenants_.end()) return nullptr;
  Tenant& t = next->second;
  const Queued q = t.jobs.front();
  t.jobs.pop_front();
  clock_ = std::max(clock_, t.served);
  t.served += q.cost;
  t.queued_cost -= q.cost;
  queued_cost_ -= q.cost;
  --queued_;
  if (t.jobs.empty()) tenants_.erase(next);
  return q.job;
}

void SlowPool::Loop(Worker* runner) {
  // Below the workers: whenever a worker has something to do, the scheduler gives it the core.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return closed_ || queued_ > 0; });
      job = TakeLocked();
      if (job == nullptr) return;  // closed and drained
    }
    runner->RunQueued(job);  // expired, cancelled or aborted jobs complete as such
  }
}

void SlowPool::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

void SlowPool::Join() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

size_t SlowPool::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

uint64_t SlowPool::queued_cost_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_cost_;
}

}  // namespace pqcd::engine
