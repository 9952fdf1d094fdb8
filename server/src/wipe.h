// Wiping secrets held in protobuf messages: private keys and seeds in requests, private keys,
// seeds and shared secrets in responses.
//
// gRPC owns a unary call's request and response and frees them after the call; its default reactor
// gives no chance to clear them first. WipingUnaryReactor is a reactor whose OnDone (which gRPC
// calls after the response was serialized and sent, or the call failed, and before it frees the
// messages) overwrites every bytes/string field with zeros.
//
// Not covered: gRPC's own serialized copies (the received and the sent byte buffers, and TLS
// records), which it frees without wiping.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/server_callback.h>

namespace pqcd::server {

// Zeros the contents of every set string/bytes field of `message` and of the messages nested in it
// (sizes stay as they are).
void WipeMessage(google::protobuf::Message& message);

class WipingUnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  // request / response: the call's messages (gRPC owns them; they outlive OnDone).
  WipingUnaryReactor(const google::protobuf::Message* request, google::protobuf::Message* response)
      : request_(request), response_(response) {}

  void OnDone() override;
  void OnCancel() override {}

 private:
  const google::protobuf::Message* request_;
  google::protobuf::Message* response_;
};

}  // namespace pqcd::server
