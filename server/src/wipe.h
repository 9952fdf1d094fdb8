// Wiping secrets held in protobuf messages: private keys and seeds in requests, private keys,
// seeds and shared secrets in responses.
//
// The daemon's call objects own their messages (core_reactor.h) and wipe the secret-carrying ones
// when every tag of the call is back: after gRPC serialized and sent the answer, or the call
// failed.
//
// Not covered: gRPC's own serialized copies (the received and the sent byte buffers, and TLS
// records), which it frees without wiping.
#pragma once

#include <google/protobuf/message.h>

namespace pqcd::server {

// Zeros the contents of every set string/bytes field of `message` and of the messages nested in it
// (sizes stay as they are).
void WipeMessage(google::protobuf::Message& message);

}  // namespace pqcd::server
