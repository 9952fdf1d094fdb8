// grpc.health.v1.Health on the core queues (health_async.h).
//
// Every tag of a call comes back on the queue the call arrived on and runs on that queue's
// worker (CqTag). A call is counted live on its queue (CoreQueues::CallStarted) from its request
// tag until its last tag is back, so that a stopping queue stays open while it has one.
#include "health_async.h"

#include "core_queues.h"
#include "grpc/support/time.h"
#include "grpcpp/alarm.h"

namespace pqcd::server {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// ---- Check -------------------------------------------------------------------------------------

// One Check: the request tag, then the Finish tag (the same object, one after the other).
class HealthService::CheckCall final : public CqTag {
 public:
  static void Post(HealthService* service, int queue) {
    auto* call = new CheckCall(service, queue);
    grpc::ServerCompletionQueue* cq = service->queues_->cq(queue);
    service->RequestCheck(&call->context_, &call->request_, &call->responder_, cq, cq,
                          static_cast<CqTag*>(call));
  }

  void Proceed(bool ok) override {
    CoreQueues* queues = service_->queues_;
    if (finishing_) {  // the Finish tag: the call is over
      const int queue = queue_;
      delete this;
      queues->CallEnded(queue);
      return;
    }
    if (!ok) {  // the server is shutting down: the request never matched a call
      delete this;
      return;
    }
    queues->CallStarted(queue_);
    if (!queues->stopping()) Post(service_, queue_);
    finishing_ = true;
    const ServingStatus status = service_->Status(request_.service());
    if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
      responder_.FinishWithError(
          grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service: " + request_.service()),
          static_cast<CqTag*>(this));
      return;
    }
    response_.set_status(status);
    responder_.Finish(response_, grpc::Status::OK, static_cast<CqTag*>(this));
  }

 private:
  CheckCall(HealthService* service, int queue)
      : service_(service), queue_(queue), responder_(&context_) {}
  ~CheckCall() = default;

  HealthService* const service_;
  const int queue_;
  bool finishing_ = false;
  grpc::ServerContext context_;
  HealthCheckRequest request_;
  HealthCheckResponse response_;
  grpc::ServerAsyncResponseWriter<HealthCheckResponse> responder_;
};

// ---- Watch -------------------------------------------------------------------------------------

// One Watch. Its tags: the request (the object itself), the done notification, the Write in
// flight (at most one), the Finish, and the alarm that a status change sets from another thread
// (at most one in flight). Everything but `alarm_set_` and the watcher list belongs to the queue's
// worker. The object is deleted when the done and Finish tags are back and no alarm is in flight.
class HealthService::WatchCall final : public CqTag {
 public:
  static void Post(HealthService* service, int queue) {
    auto* call = new WatchCall(service, queue);
    grpc::ServerCompletionQueue* cq = service->queues_->cq(queue);
    service->RequestWatch(&call->context_, &call->request_, &call->writer_, cq, cq,
                          static_cast<CqTag*>(call));
  }

  // The request tag.
  void Proceed(bool ok) override {
    if (!ok) {  // never started: no other tag of it will come back
      delete this;
      return;
    }
    CoreQueues* queues = service_->queues_;
    queues->CallStarted(queue_);
    if (!queues->stopping()) Post(service_, queue_);
    {
      std::lock_guard lock(service_->mu_);
      service_->watchers_.insert(this);
    }
    Step();
  }

  const std::string& service_name() const { return request_.service(); }

  // A status this call may watch changed (any thread, the service's mutex held): wake the call
  // on its own worker, unless a wake-up is already on its way.
  void WakeLocked() {
    if (alarm_set_) return;
    alarm_set_ = true;
    alarm_.Set(service_->queues_->cq(queue_), gpr_inf_past(GPR_CLOCK_MONOTONIC), &alarm_tag_);
  }

 private:
  template <void (WatchCall::*F)(bool)>
  struct Tag final : CqTag {
    WatchCall* call;
    explicit Tag(WatchCall* c) : call(c) {}
    void Proceed(bool ok) override { (call->*F)(ok); }
  };

  WatchCall(HealthService* service, int queue)
      : service_(service), queue_(queue), writer_(&context_) {
    context_.AsyncNotifyWhenDone(static_cast<CqTag*>(&done_tag_));
  }
  ~WatchCall() = default;

  // The next thing to do, when nothing is in flight: send the latest status if the client has
  // not seen it, end the call if it was cancelled or the service shut down.
  void Step() {
    if (writing_ || finishing_) return;
    if (done_) {  // cancelled (or expired): nothing more reaches the client
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled"));
      return;
    }
    ServingStatus now;
    bool shut_down;
    {
      std::lock_guard lock(service_->mu_);
      now = service_->StatusLocked(request_.service());
      shut_down = service_->shut_down_;
    }
    if (!sent_any_ || now != last_sent_) {
      sent_any_ = true;
      last_sent_ = now;
      response_.set_status(now);
      writing_ = true;
      writer_.Write(response_, &write_tag_);
      return;
    }
    if (shut_down) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    }
  }

  void Finish(const grpc::Status& status) {
    finishing_ = true;
    writer_.Finish(status, &finish_tag_);
  }

  void OnWritten(bool ok) {
    writing_ = false;
    if (!ok) {  // the stream is broken: end the call
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the stream is broken"));
      return;
    }
    Step();
  }
  void OnDone(bool) {
    done_ = true;
    Step();  // finishes the call unless a Write or the Finish is in flight
    MaybeRelease();
  }
  void OnFinished(bool) {
    finished_ = true;
    MaybeRelease();
  }
  void OnAlarm(bool) {
    bool gone;
    {
      std::lock_guard lock(service_->mu_);
      alarm_set_ = false;
      gone = !listed_;
    }
    if (gone) {
      Delete();
      return;
    }
    Step();
  }

  // The done and Finish tags are back: leave the watcher list (nothing sets the alarm from now
  // on) and go, or let the alarm in flight delete the call when it comes back.
  void MaybeRelease() {
    if (!done_ || !finished_) return;
    {
      std::lock_guard lock(service_->mu_);
      service_->watchers_.erase(this);
      listed_ = false;
      if (alarm_set_) return;
    }
    Delete();
  }
  void Delete() {
    CoreQueues* queues = service_->queues_;
    const int queue = queue_;
    delete this;
    queues->CallEnded(queue);
  }

  HealthService* const service_;
  const int queue_;
  grpc::ServerContext context_;
  HealthCheckRequest request_;
  HealthCheckResponse response_;
  grpc::ServerAsyncWriter<HealthCheckResponse> writer_;
  grpc::Alarm alarm_;
  Tag<&WatchCall::OnDone> done_tag_{this};
  Tag<&WatchCall::OnWritten> write_tag_{this};
  Tag<&WatchCall::OnFinished> finish_tag_{this};
  Tag<&WatchCall::OnAlarm> alarm_tag_{this};
  // The service's mutex guards these two.
  bool alarm_set_ = false;
  bool listed_ = true;  // in the watcher list, or about to be (the request tag adds it)
  // The worker's.
  bool sent_any_ = false;
  ServingStatus last_sent_ = HealthCheckResponse::UNKNOWN;
  bool writing_ = false;
  bool finishing_ = false;
  bool done_ = false;
  bool finished_ = false;
};

// ---- HealthService -----------------------------------------------------------------------------

HealthService::HealthService() {
  statuses_[""] = false;
}

HealthService::~HealthService() = default;

HealthService::ServingStatus HealthService::StatusLocked(const std::string& service) const {
  const auto it = statuses_.find(service);
  if (it == statuses_.end()) return HealthCheckResponse::SERVICE_UNKNOWN;
  return it->second ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

HealthService::ServingStatus HealthService::Status(const std::string& service) const {
  std::lock_guard lock(mu_);
  return StatusLocked(service);
}

void HealthService::NotifyLocked(const std::string* service) {
  for (WatchCall* watcher : watchers_) {
    if (service == nullptr || watcher->service_name() == *service) watcher->WakeLocked();
  }
}

void HealthService::SetServingStatus(const std::string& service, bool serving) {
  std::lock_guard lock(mu_);
  if (shut_down_) serving = false;  // NOT_SERVING for good
  const auto [it, added] = statuses_.try_emplace(service, serving);
  if (!added) {
    if (it->second == serving) return;
    it->second = serving;
  }
  NotifyLocked(&service);
}

void HealthService::SetAllServing(bool serving) {
  std::lock_guard lock(mu_);
  if (shut_down_) serving = false;
  for (auto& [name, status] : statuses_) status = serving;
  NotifyLocked(nullptr);
}

void HealthService::Start(CoreQueues* queues) {
  queues_ = queues;
  for (int q = 0; q < queues->size(); ++q) {
    CheckCall::Post(this, q);
    WatchCall::Post(this, q);
  }
}

void HealthService::Shutdown() {
  std::lock_guard lock(mu_);
  shut_down_ = true;
  for (auto& [name, status] : statuses_) status = false;
  NotifyLocked(nullptr);
}

}  // namespace pqcd::server
