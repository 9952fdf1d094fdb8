#include "core_queues.h"

#include <algorithm>

#include "grpc/support/time.h"

namespace pqcd::server {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Events taken in one Poll before the worker runs what they submitted: bounds the burst one Poll
// builds and the time before the worker computes again.
constexpr int kMaxEventsPerPoll = 128;
// While stopping, a worker looks at its queue at least this often (its calls may end on other
// threads without any event on its queue).
constexpr auto kStopCheck = std::chrono::milliseconds(5);

gpr_timespec ToGpr(SteadyClock::time_point until) {
  const SteadyClock::time_point now = SteadyClock::now();
  if (until <= now) return gpr_inf_past(GPR_CLOCK_MONOTONIC);
  if (until == SteadyClock::time_point::max()) return gpr_inf_future(GPR_CLOCK_MONOTONIC);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(until - now).count();
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_nanos(ns, GPR_TIMESPAN));
}

}  // namespace

CoreQueues::CoreQueues(grpc::ServerBuilder& builder, int workers) {
  for (int i = 0; i < std::max(workers, 1); ++i) {
    auto q = std::make_unique<Queue>();
    q->cq = builder.AddCompletionQueue();
    queues_.push_back(std::move(q));
  }
}

CoreQueues::~CoreQueues() {
  // A queue never polled (start-up failed) is shut down and drained here.
  for (auto& q : queues_) {
    if (q->drained) continue;
    if (!q->shut) q->cq->Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (q->cq->Next(&tag, &ok)) {
    }
  }
}

void CoreQueues::CallStarted(int queue) {
  queues_[static_cast<size_t>(queue)]->live.fetch_add(1, std::memory_order_relaxed);
}

void CoreQueues::CallEnded(int queue) {
  queues_[static_cast<size_t>(queue)]->live.fetch_sub(1, std::memory_order_release);
}

void CoreQueues::Queue::Proceed(bool) {
  if (shut_on_alarm) {
    // The alarm stays claimed: nothing sets it again.
    shut_on_alarm = false;
    shut = true;
    cq->Shutdown();
    return;
  }
  if (!shut) armed.store(false, std::memory_order_release);
}

void CoreQueues::Stop() {
  stop_.store(true, std::memory_order_release);
  for (int i = 0; i < size(); ++i) Wake(i);
}

void CoreQueues::Wake(int worker) {
  if (worker < 0 || worker >= size()) return;
  Queue& q = *queues_[static_cast<size_t>(worker)];
  // One alarm in flight per queue: a second wake-up while one is pending adds nothing.
  if (q.armed.load(std::memory_order_relaxed) ||
      q.armed.exchange(true, std::memory_order_acq_rel)) {
    return;
  }
  q.alarm.Set(q.cq.get(), gpr_inf_past(GPR_CLOCK_MONOTONIC), static_cast<CqTag*>(&q));
}

bool CoreQueues::Poll(int worker, SteadyClock::time_point until) {
  if (worker < 0 || worker >= size()) return false;
  Queue& q = *queues_[static_cast<size_t>(worker)];
  if (q.drained) return false;
  if (stop_.load(std::memory_order_acquire) && !q.shut && !q.shut_on_alarm) {
    if (q.live.load(std::memory_order_acquire) == 0) {
      // No call of this queue is left, and the server takes no new ones: only a wake-up alarm
      // could still start an operation on it. Claim the alarm for good and shut the queue; if a
      // Wake holds it, the queue is shut when that alarm comes back (Queue::Proceed).
      if (!q.armed.exchange(true, std::memory_order_acq_rel)) {
        q.shut = true;
        q.cq->Shutdown();
      } else {
        q.shut_on_alarm = true;
      }
    } else {
      until = std::min(until, SteadyClock::now() + kStopCheck);
    }
  }
  for (int i = 0; i < kMaxEventsPerPoll; ++i) {
    void* tag = nullptr;
    bool ok = false;
    const auto got =
        q.cq->AsyncNext(&tag, &ok, i == 0 ? ToGpr(until) : gpr_inf_past(GPR_CLOCK_MONOTONIC));
    if (got == grpc::CompletionQueue::SHUTDOWN) {
      q.drained = true;
      return false;
    }
    if (got == grpc::CompletionQueue::TIMEOUT) break;
    static_cast<CqTag*>(tag)->Proceed(ok);
  }
  return true;
}

}  // namespace pqcd::server
