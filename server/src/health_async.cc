// grpc.health.v1.Health on the core queues (health_async.h).
//
// Check and Watch are core-queue calls (core_reactor.h): every tag of a call comes back on the
// queue the call arrived on and runs on that queue's worker, and the call counts as live on its
// queue until its last tag is back.
#include "health_async.h"

#include "core_queues.h"
#include "core_reactor.h"
#include "grpc/support/time.h"
#include "grpcpp/alarm.h"

namespace pqcd::server {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// The room charged for one health answer (a status: a few bytes, with gRPC's framing).
constexpr size_t kHealthAnswerBytes = 64;

// ---- Check -------------------------------------------------------------------------------------

class HealthService::CheckCall final
    : public CoreUnaryReactor<HealthCheckRequest, HealthCheckResponse> {
 public:
  static void Post(HealthService* service, int queue) {
    auto* call = new CheckCall(service, queue);
    grpc::ServerCompletionQueue* cq = call->cq();
    service->RequestCheck(&call->context_, &call->request_, &call->responder_, cq, cq,
                          static_cast<CqTag*>(call));
  }

 private:
  CheckCall(HealthService* service, int queue)
      : CoreUnaryReactor(service->queues_, queue), service_(service) {}

  void Renew() override { Post(service_, queue()); }
  void OnStart() override {
    if (absl::Status s =
            bounds_.Admit(service_->bounds_, service_->CallerOf(context_), request_.ByteSizeLong(),
                          2 * kHealthAnswerBytes, "grpc.health.v1.Health/Check");
        !s.ok()) {
      HealthCheckRequest().Swap(&request_);  // freed now, not when the call ends
      Answer(grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message())));
      return;
    }
    const ServingStatus status = service_->Status(request_.service());
    if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
      Answer(grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service: " + request_.service()));
      return;
    }
    response_.set_status(status);
    Answer(grpc::Status::OK);
  }
  // The answer is watched until the client takes it (--unread-answer-timeout).
  void Answer(const grpc::Status& status) {
    bounds_.Watch(&context_);
    Finish(status);
  }
  void OnDone() override {
    bounds_.Release();
    delete this;
  }

  HealthService* const service_;
  ControlCallBounds bounds_;
};

// ---- Watch -------------------------------------------------------------------------------------

// One Watch. At most one Write in flight, and at most one alarm, which a status change sets from
// any thread (the service's mutex held) to wake the call on its own worker. The call is in the
// watcher list from its start until it finishes; it leaves the list before its Finish, so no
// alarm is set after that, and an alarm still in flight keeps it alive (CoreCall counts it).
class HealthService::WatchCall final
    : public CoreWriteReactor<HealthCheckRequest, HealthCheckResponse> {
 public:
  static void Post(HealthService* service, int queue) {
    auto* call = new WatchCall(service, queue);
    grpc::ServerCompletionQueue* cq = call->cq();
    service->RequestWatch(&call->context_, &call->request_, &call->writer_, cq, cq,
                          static_cast<CqTag*>(call));
  }

  const std::string& service_name() const { return request_.service(); }

  // A status this call may watch changed (any thread, the service's mutex held): wake the call
  // on its own worker, unless a wake-up is already on its way.
  void WakeLocked() {
    if (alarm_set_) return;
    alarm_set_ = true;
    OpBegin();
    alarm_.Set(cq(), gpr_inf_past(GPR_CLOCK_MONOTONIC), alarm_tag());
  }

 private:
  WatchCall(HealthService* service, int queue)
      : CoreWriteReactor(service->queues_, queue), service_(service) {}

  void Renew() override { Post(service_, queue()); }
  void OnStart() override {
    // The request (its service name) stays for the whole call, each status sent is one small
    // answer: both charged, and each Write watched until the client takes it.
    if (absl::Status s =
            bounds_.Admit(service_->bounds_, service_->CallerOf(context_), request_.ByteSizeLong(),
                          2 * kHealthAnswerBytes, "grpc.health.v1.Health/Watch");
        !s.ok()) {
      HealthCheckRequest().Swap(&request_);
      finishing_ = true;
      bounds_.Watch(&context_);
      Finish(grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message())));
      return;
    }
    {
      std::lock_guard lock(service_->mu_);
      service_->watchers_.insert(this);
    }
    Step();
  }
  void OnWriteDone(bool ok) override {
    bounds_.Unwatch();
    writing_ = false;
    if (!ok) {  // the stream is broken: end the call
      End(grpc::Status(grpc::StatusCode::CANCELLED, "the stream is broken"));
      return;
    }
    Step();
  }
  void OnAlarm(bool) override {
    {
      std::lock_guard lock(service_->mu_);
      alarm_set_ = false;
    }
    Step();
  }
  void OnCancel() override {
    cancelled_ = true;
    Step();  // finishes the call unless a Write or the Finish is in flight
  }
  void OnDone() override {
    bounds_.Release();
    delete this;
  }

  // The next thing to do, when nothing is in flight: send the latest status if the client has
  // not seen it, end the call if it was cancelled or the service shut down.
  void Step() {
    if (writing_ || finishing_) return;
    if (cancelled_) {  // cancelled (or expired): nothing more reaches the client
      End(grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled"));
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
      bounds_.Watch(&context_);
      StartWrite(&response_);
      return;
    }
    if (shut_down) {
      End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    }
  }

  void End(const grpc::Status& status) {
    {
      std::lock_guard lock(service_->mu_);
      service_->watchers_.erase(this);
    }
    finishing_ = true;
    bounds_.Watch(&context_);
    Finish(status);
  }

  HealthService* const service_;
  ControlCallBounds bounds_;
  HealthCheckResponse response_;
  grpc::Alarm alarm_;
  bool alarm_set_ = false;  // the service's mutex guards it
  // The worker's.
  bool sent_any_ = false;
  ServingStatus last_sent_ = HealthCheckResponse::UNKNOWN;
  bool writing_ = false;
  bool finishing_ = false;
  bool cancelled_ = false;
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

std::string HealthService::CallerOf(const grpc::ServerContextBase& context) const {
  if (identity_ == nullptr) return std::string(kAnonymous);
  return IdentifyCaller(context, *identity_).identity;
}

void HealthService::Start(CoreQueues* queues, CallBounds bounds, const IdentityPolicy* identity) {
  queues_ = queues;
  bounds_ = bounds;
  identity_ = identity;
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
