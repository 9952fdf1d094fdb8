// grpc.reflection.v1 and grpc.reflection.v1alpha ServerReflection on the core queues
// (core_queues.h), in place of gRPC's reflection plugin: that one is a sync service, and gRPC's
// sync threads would take the sockets' events before the engine workers do.
//
// ServerReflectionInfo is a bidi stream: every request is answered by one response, in order,
// until the client closes its side; the call then ends OK. The answers come from the protobuf
// descriptors linked into the daemon (google::protobuf::DescriptorPool::generated_pool()); the
// services listed are the ones the daemon registers, named by the daemon (server.cc).
#pragma once

#include <string>
#include <vector>

#include "bounds.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "pqcd/server/identity.h"

namespace pqcd::server {

class CoreQueues;

namespace reflection_internal {
// The two versions of the protocol: the same messages, in two packages.
struct V1 {
  using Grpc = grpc::reflection::v1::ServerReflection;
  using Request = grpc::reflection::v1::ServerReflectionRequest;
  using Response = grpc::reflection::v1::ServerReflectionResponse;
};
struct V1Alpha {
  using Grpc = grpc::reflection::v1alpha::ServerReflection;
  using Request = grpc::reflection::v1alpha::ServerReflectionRequest;
  using Response = grpc::reflection::v1alpha::ServerReflectionResponse;
};
}  // namespace reflection_internal

template <class Version>
class ReflectionService final : public Version::Grpc::AsyncService {
 public:
  // `services`: the full names of the services the server serves (list_services).
  explicit ReflectionService(std::vector<std::string> services);
  ~ReflectionService() override;
  ReflectionService(const ReflectionService&) = delete;
  ReflectionService& operator=(const ReflectionService&) = delete;

  // Posts a ServerReflectionInfo request on every core queue. After
  // grpc::ServerBuilder::BuildAndStart, before the engine's AttachIo(queues). Every request and
  // answer is held to `bounds` (bounds.h), charged to the caller named by `identity` (null:
  // "anonymous").
  void Start(CoreQueues* queues, CallBounds bounds = {}, const IdentityPolicy* identity = nullptr);

  // The answer to one request (no stream state: the dependencies of a file are all sent).
  void Answer(const typename Version::Request& request, typename Version::Response* response) const;

 private:
  class Call;
  std::vector<std::string> services_;
  CoreQueues* queues_ = nullptr;
  CallBounds bounds_;
  const IdentityPolicy* identity_ = nullptr;
};

using ReflectionV1 = ReflectionService<reflection_internal::V1>;
using ReflectionV1Alpha = ReflectionService<reflection_internal::V1Alpha>;

extern template class ReflectionService<reflection_internal::V1>;
extern template class ReflectionService<reflection_internal::V1Alpha>;

}  // namespace pqcd::server
