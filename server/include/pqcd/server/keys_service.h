// pqc.v1.Keys: manage held keys, served on the core queues like every service (core_reactor.h).
// Reads (GetPublicKey, List) answer on the worker that received the call (in-memory lookups);
// changes (Import, Rotate, Delete) run on the key-management thread, because they fsync
// the store and Import/Rotate run kernels (key derivation, pairwise check). Every change writes
// one audit line.
#pragma once

#include "pqc/v1/keys.grpc.pb.h"
#include "pqcd/server/service_context.h"

namespace pqcd::server {

class CoreQueues;
using KeysServiceBase = pqc::v1::Keys::AsyncService;

class KeysService final : public KeysServiceBase {
 public:
  explicit KeysService(ServiceContext* ctx) : ctx_(ctx) {}

  // Posts the first request of every method on every core queue (after
  // grpc::ServerBuilder::BuildAndStart, before the engine's AttachIo).
  void StartCoreServing(CoreQueues* queues);

 private:
  ServiceContext* ctx_;
};

}  // namespace pqcd::server
