// Thread-per-core serving: one gRPC completion queue per engine worker, polled by that worker
// between its bursts (engine::WorkerIo). A call that arrives on a worker's queue is read,
// validated, computed and finished on that worker; the calls that arrive together run as one
// burst through the engine's Batcher. Only the worker of a queue takes events from it.
//
// Stopping (after grpc::Server::Shutdown): Stop() asks every worker to end its queue; a worker
// shuts its queue down once none of its calls is left (nothing can then start an operation on it)
// and its Poll returns false when the queue is drained. The engine's workers run until then.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "grpcpp/alarm.h"
#include "grpcpp/server_builder.h"
#include "pqcd/engine/engine.h"

namespace pqcd::server {

// Every tag put on a core queue: Proceed runs the next step of its call, on the queue's worker.
class CqTag {
 public:
  virtual void Proceed(bool ok) = 0;

 protected:
  ~CqTag() = default;
};

class CoreQueues final : public engine::WorkerIo {
 public:
  // Adds one completion queue per engine worker to the builder (before BuildAndStart).
  CoreQueues(grpc::ServerBuilder& builder, int workers);
  ~CoreQueues() override;
  CoreQueues(const CoreQueues&) = delete;
  CoreQueues& operator=(const CoreQueues&) = delete;

  int size() const { return static_cast<int>(queues_.size()); }
  grpc::ServerCompletionQueue* cq(int queue) {
    return queues_[static_cast<size_t>(queue)]->cq.get();
  }

  // A call that arrived on `queue` until its last tag came back: while any is left the queue
  // stays open (a call's Finish may come from another thread).
  void CallStarted(int queue);
  void CallEnded(int queue);
  // Stop() was called: no new requests may be posted.
  bool stopping() const { return stop_.load(std::memory_order_acquire); }
  // After grpc::Server::Shutdown: every queue ends once its calls are done (see above).
  void Stop();

  // engine::WorkerIo (the worker's id is its queue's index).
  bool Poll(int worker, std::chrono::steady_clock::time_point until) override;
  void Wake(int worker) override;

 private:
  struct Queue final : CqTag {
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    // Wakes the worker (Wake); armed from Set until its tag came back. Claimed for good (left
    // true) when the queue is shut down, so that nothing sets it on a shut queue.
    grpc::Alarm alarm;
    std::atomic<bool> armed{false};
    std::atomic<int64_t> live{0};  // calls of this queue not yet ended
    bool shut = false;             // the worker called cq->Shutdown (worker's thread only)
    bool shut_on_alarm = false;    // shut it when the alarm in flight comes back
    bool drained = false;
    void Proceed(bool) override;  // the alarm came back
  };
  std::vector<std::unique_ptr<Queue>> queues_;
  std::atomic<bool> stop_{false};
};

}  // namespace pqcd::server
