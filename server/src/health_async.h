// grpc.health.v1.Health on the core queues (core_queues.h), in place of gRPC's default health
// service: that one is served on gRPC's callback API, whose threads would take the sockets' events
// before the engine workers do.
//
// The daemon sets the statuses (SetServingStatus, SetAllServing) from any thread. Check answers
// the status now (NOT_FOUND for a service never set). Watch sends the status now (SERVICE_UNKNOWN
// for a service never set), then the latest status every time it changes: a change wakes the
// watcher on its own queue's worker through an alarm, and the watcher keeps at most one Write in
// flight, sending whatever the status is once the previous Write is done. Watches end when the
// client cancels, or after Shutdown once they have sent the last status.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "bounds.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "pqcd/server/identity.h"

namespace pqcd::server {

class CoreQueues;

class HealthService final : public grpc::health::v1::Health::AsyncService {
 public:
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

  // "" (the server as a whole) is NOT_SERVING until the daemon says otherwise.
  HealthService();
  ~HealthService() override;
  HealthService(const HealthService&) = delete;
  HealthService& operator=(const HealthService&) = delete;

  // Any thread; the service becomes known. Watchers of it are told.
  void SetServingStatus(const std::string& service, bool serving);
  // "" and every service set so far.
  void SetAllServing(bool serving);
  // The status Check would answer (SERVICE_UNKNOWN for a service never set).
  ServingStatus Status(const std::string& service) const;

  // Posts a Check and a Watch request on every core queue. After
  // grpc::ServerBuilder::BuildAndStart, before the engine's AttachIo(queues). Every call is held
  // to `bounds` (bounds.h: its request and answers charged to its caller, named by `identity`,
  // each answer watched until taken); a null `identity` charges every call to "anonymous".
  void Start(CoreQueues* queues, CallBounds bounds = {}, const IdentityPolicy* identity = nullptr);
  // Before grpc::Server::Shutdown: every status becomes NOT_SERVING for good, and every Watch
  // ends (UNAVAILABLE) once it has sent its service's last status, so that none holds the server's
  // shutdown until its deadline.
  void Shutdown();

 private:
  class CheckCall;
  class WatchCall;

  ServingStatus StatusLocked(const std::string& service) const;
  // Wakes the watchers of `service` (all of them when `service` is null); mu_ held.
  void NotifyLocked(const std::string* service);

  // The caller of a call, for its memory charge.
  std::string CallerOf(const grpc::ServerContextBase& context) const;

  CoreQueues* queues_ = nullptr;
  CallBounds bounds_;
  const IdentityPolicy* identity_ = nullptr;
  mutable std::mutex mu_;
  std::map<std::string, bool> statuses_;  // service -> SERVING
  std::set<WatchCall*> watchers_;         // Watch calls in progress
  bool shut_down_ = false;
};

}  // namespace pqcd::server
