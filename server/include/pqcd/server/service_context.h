// What the gRPC services share: configuration, the engine, the key store, metrics, the auxiliary
// task runner, the drain flag and the audit log.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"
#include "pqcd/server/config.h"
#include "pqcd/server/identity.h"
#include "pqcd/server/metrics.h"
#include "pqcd/server/task_runner.h"
#include "spdlog/logger.h"

namespace pqcd::engine {
class Engine;
}

namespace pqcd::server {

class KeyStore;
class KeyUseAuditor;
class CallSlots;
class MemoryAccount;
class UnreadAnswers;

struct ServiceContext {
  const Config* config = nullptr;
  engine::Engine* engine = nullptr;
  KeyStore* keys = nullptr;
  Metrics* metrics = nullptr;
  TaskRunner* aux = nullptr;
  TaskRunner* key_tasks = nullptr;   // key management: bounded (--key-queue), TryPost
  KeyUseAuditor* key_use = nullptr;  // audit.h: held-key uses by non-owners (or all)
  // audit.h: refused key-management actions, aggregated like uses (the first of each (who, owner,
  // key id, action and code) per window in full, the repeats as one summary line); null: each
  // refusal is one line.
  KeyUseAuditor* refusals = nullptr;
  // Whole-daemon bounds (bounds.h); null: unbounded (unit tests, the fuzz target).
  CallSlots* streams = nullptr;       // --max-streams, --max-streams-per-identity
  CallSlots* hash_streams = nullptr;  // --max-hash-streams, --max-hash-streams-per-identity
  MemoryAccount* memory = nullptr;    // --memory-limit, --memory-per-identity
  UnreadAnswers* unread = nullptr;    // --unread-answer-timeout
  IdentityPolicy identity_policy;
  std::shared_ptr<spdlog::logger> log;
  std::shared_ptr<spdlog::logger> audit;
  std::atomic<bool> draining{false};
  std::atomic<int64_t> inflight{0};

  // One audit line per key-management action; never key bytes.
  // owner: the identity whose key it is ("" : who's own).
  void Audit(const std::string& who, const std::string& action, const std::string& owner,
             const std::string& key_id, uint32_t version, const std::string& algorithm,
             const absl::Status& result) const;
};

inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// Tracks one request: in-flight counters (drain waits for them) and the request metrics.
class RequestScope {
 public:
  RequestScope(ServiceContext* ctx, std::string rpc);
  ~RequestScope();
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;
  void set_algorithm(std::string algorithm) { algorithm_ = std::move(algorithm); }
  // Records the request once; later calls are ignored.
  void Done(grpc::StatusCode code);

 private:
  ServiceContext* ctx_;
  std::string rpc_;
  std::string algorithm_ = "unknown";
  std::chrono::steady_clock::time_point start_;
  bool done_ = false;
};

}  // namespace pqcd::server
