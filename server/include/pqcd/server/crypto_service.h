// pqc.v1.Crypto, served thread-per-core on gRPC's async API: every engine worker polls a
// completion queue of its own (core_queues.h), so a call is read, validated, computed and finished
// on the worker that received it (server/src/crypto_calls.h: unary methods and Batch,
// Stream and HashStream, each in a file of its own, all reactors on the same queues): their
// handlers validate, resolve held keys and submit jobs to the engine, whose completion answers
// (HashStream's incremental updates run on the auxiliary task runner).
//
// Every method is async (pqc::v1::Crypto::AsyncService): a method of the proto that the daemon
// posts no request for would hold its callers until their deadline, so the daemon refuses to start
// without one (CryptoService::CheckServesEveryMethod).
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/descriptor.h"

#include "pqc/v1/crypto.grpc.pb.h"
#include "pqcd/server/service_context.h"

namespace pqcd::server {

class HashStreamWatch;
class CoreQueues;

namespace internal {
using CryptoServiceBase = pqc::v1::Crypto::AsyncService;
}  // namespace internal

// OK when `served` names (MethodDescriptor::name, "KeyGen") every method of `service`; otherwise
// FAILED_PRECONDITION naming each missing one by its full name.
absl::Status CheckServesEveryMethod(const google::protobuf::ServiceDescriptor& service,
                                    std::span<const std::string_view> served);

class CryptoService final : public internal::CryptoServiceBase {
 public:
  explicit CryptoService(ServiceContext* ctx);
  ~CryptoService() override;

  // Thread-per-core: posts the first request of every async method on every core queue. After
  // grpc::ServerBuilder::BuildAndStart, before the engine's AttachIo(queues).
  void StartCoreServing(CoreQueues* queues);

  // The methods StartCoreServing posts requests for, by name: the lists its calls' files keep.
  static std::vector<std::string_view> ServedMethods();
  // CheckServesEveryMethod for pqc.v1.Crypto and ServedMethods: the daemon's start-up check.
  static absl::Status CheckServesEveryMethod();

 private:
  ServiceContext* ctx_;
  // Ends HashStreams that idle or last too long (--hash-stream-idle, --hash-stream-max-duration).
  std::unique_ptr<HashStreamWatch> hash_watch_;
};

}  // namespace pqcd::server
