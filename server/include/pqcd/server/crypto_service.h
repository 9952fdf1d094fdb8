// pqc.v1.Crypto, served thread-per-core on gRPC's async API: every engine worker polls a
// completion queue of its own (core_queues.h), so a call is read, validated, computed and finished
// on the worker that received it (server/src/crypto_calls.h: unary methods and Batch,
// Stream and HashStream, each in a file of its own, all reactors on the same queues): their
// handlers validate, resolve held keys and submit jobs to the engine, whose completion answers
// (HashStream's incremental updates run on the auxiliary task runner).
#pragma once

#include <memory>

#include "pqc/v1/crypto.grpc.pb.h"
#include "pqcd/server/service_context.h"

namespace pqcd::server {

class HashStreamWatch;
class CoreQueues;

namespace internal {
using C = pqc::v1::Crypto;
using CryptoServiceBase = C::WithAsyncMethod_KeyGen<
    C::WithAsyncMethod_Encaps<C::WithAsyncMethod_Decaps<C::WithAsyncMethod_Sign<
        C::WithAsyncMethod_Verify<C::WithAsyncMethod_Hash<C::WithAsyncMethod_Batch<
            C::WithAsyncMethod_HashStream<C::WithAsyncMethod_Stream<C::Service>>>>>>>>>;
}  // namespace internal

class CryptoService final : public internal::CryptoServiceBase {
 public:
  explicit CryptoService(ServiceContext* ctx);
  ~CryptoService() override;

  // Thread-per-core: posts the first request of every async method on every core queue. After
  // grpc::ServerBuilder::BuildAndStart, before the engine's AttachIo(queues).
  void StartCoreServing(CoreQueues* queues);

 private:
  ServiceContext* ctx_;
  // Ends HashStreams that idle or last too long (--hash-stream-idle, --hash-stream-max-duration).
  std::unique_ptr<HashStreamWatch> hash_watch_;
};

}  // namespace pqcd::server
