// pqc.v1.Keys: manage held keys, served on the core queues like every service (core_reactor.h).
// Reads (GetPublicKey, List) answer on the worker that received the call (in-memory lookups);
// changes (Import, Rotate, Delete) run on the key-management thread, because they fsync
// the store and Import/Rotate run kernels (key derivation, pairwise check). Every change writes
// one audit line.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/status.h"
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

  // As CryptoService's: the methods StartCoreServing posts requests for, by name ("List"), and
  // the start-up check that they are every method of pqc.v1.Keys (an async method no request is
  // posted for would hold its callers).
  static std::vector<std::string_view> ServedMethods();
  static absl::Status CheckServesEveryMethod();

 private:
  ServiceContext* ctx_;
};

}  // namespace pqcd::server
