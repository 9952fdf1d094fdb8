// Stream messages on the wire (internal to the client library): packing operations into one
// StreamRequest, reading both answer forms, recognising a daemon that predates packing, and wiping
// the secret fields of messages the client is done with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "pqc/v1/crypto.pb.h"
#include "pqc/v1/keys.pb.h"

namespace pqcd::client::internal {

// Appends one operation to `msg` (taking the operation's contents). The first operation goes in
// single form (id + operation), which every daemon understands and costs the daemon the same as a
// packed message of one; a second one turns the message into packed form (items).
void AppendOperation(pqc::v1::StreamRequest* msg, uint64_t id, pqc::v1::Operation* op);

// Operations carried by a request (0 for an empty message).
inline int OperationCount(const pqc::v1::StreamRequest& msg) {
  return msg.has_operation() ? 1 : msg.items_size();
}

// Calls f(id, OperationResult&) for every answer in a response, whichever form it has.
template <class F>
void ForEachResult(pqc::v1::StreamResponse& resp, F&& f) {
  if (resp.results_size() > 0) {
    for (auto& r : *resp.mutable_results()) f(r.id(), *r.mutable_result());
  } else {
    f(resp.id(), *resp.mutable_result());
  }
}

// Overwrites the secret fields (seeds, private keys, shared secrets) in place before a message is
// cleared or freed: protobuf's Clear() keeps the bytes in the strings' buffers.
void WipeOperation(pqc::v1::Operation* op);
void WipeRequest(pqc::v1::StreamRequest* msg);
void WipeResult(pqc::v1::OperationResult* result);
void WipeResponse(pqc::v1::StreamResponse* resp);
// The same for the requests of unary and Batch calls, once the call is done with them (a sync
// call's return, an async call's end): the caller's seed or private key, and Keys.Import's
// private key. Requests that carry no secret of the caller's have nothing to wipe.
void WipeSecrets(pqc::v1::KeyGenRequest* req);
void WipeSecrets(pqc::v1::DecapsRequest* req);
void WipeSecrets(pqc::v1::SignRequest* req);
void WipeSecrets(pqc::v1::BatchRequest* req);
void WipeSecrets(pqc::v1::ImportKeyRequest* req);
template <class Req>
void WipeSecrets(Req*) {}

// Whether the daemon at the other end of one Stream understands packed messages. A daemon from
// before packing ignores `items` and answers a packed message as one single-form request without an
// operation: id 0 and an error, at once and in the order it read the messages. So, until the first
// packed answer confirms support, a copy of every packed message sent is kept (the message itself
// belongs to gRPC until its write completes, and the answer may be read before that); an id-0
// error answer means the oldest kept message was rejected whole (none of its operations ran), and
// its operations can be written again in single form. Only the first round trip of a stream pays
// for the copies. Not thread-safe: the owner's lock guards it.
class PackSupport {
 public:
  enum class State { kUnknown, kYes, kNo };

  State state() const { return state_; }
  bool packing_allowed() const { return state_ != State::kNo; }
  // True while packed messages were written and no answer has told whether they are understood
  // (or, after a rejection, while more rejections are due).
  bool awaiting_verdict() const { return !kept_.empty(); }

  // A message is about to be written: a packed one is copied while support is unknown.
  void Sending(const pqc::v1::StreamRequest& msg);

  // Looks at one response before its answers are matched. Returns true when it is the rejection of
  // a packed message by an old daemon: *rejected then holds that message (to be taken apart and
  // written again) and the state is kNo. A packed answer sets kYes and wipes what was kept.
  bool Inspect(const pqc::v1::StreamResponse& resp, pqc::v1::StreamRequest* rejected);

  ~PackSupport();

 private:
  State state_ = State::kUnknown;
  std::deque<pqc::v1::StreamRequest> kept_;
};

}  // namespace pqcd::client::internal
