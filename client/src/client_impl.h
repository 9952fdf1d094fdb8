// Client::Impl and what the client library's source files share (internal, not installed):
// the channels and their stubs, the retry rule, and the sync and async unary call helpers.
//   channel.cc  targets, credentials, channel options, Client::Create and ~Client
//   unary.cc    the retry rule, the crypto calls (unary and through the batching client), Batch
//   stream.cc   HashStream and the bidirectional Stream
//   keys.cc     key management and List paging
//   health.cc   grpc.health.v1 checks
#pragma once

#include <grpcpp/alarm.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "batcher.h"
#include "convert.h"
#include "in_flight.h"
#include "lane_transport.h"
#include "pqc/v1/crypto.grpc.pb.h"
#include "pqc/v1/keys.grpc.pb.h"
#include "pqcd/client/client.h"
#include "stream_wire.h"

namespace pqcd::client {

namespace internal {

// `d`, unless it is zero, negative or infinite: then `fallback`.
absl::Duration Clamp(absl::Duration d, absl::Duration fallback);

// The `done` of an async unary call whose response converts with FromProto to the caller's type.
template <class T>
auto FromProtoDone(Callback<T> done) {
  return [done = std::move(done)](absl::Status s, auto& response) mutable {
    if (!s.ok()) return done(std::move(s));
    done(FromProto(std::move(response)));
  };
}

}  // namespace internal

struct Client::Impl {
  struct Channel {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<pqc::v1::Crypto::Stub> crypto;
    std::unique_ptr<pqc::v1::Keys::Stub> keys;
    std::unique_ptr<grpc::GenericStub> generic;

    // The stub, or the async part of the stub, whose methods are T's.
    template <class T>
    T& Of() {
      if constexpr (std::is_same_v<T, pqc::v1::Crypto::Stub>) {
        return *crypto;
      } else if constexpr (std::is_same_v<T, pqc::v1::Keys::Stub>) {
        return *keys;
      } else if constexpr (std::is_same_v<T*, decltype(crypto->async())>) {
        return *crypto->async();
      } else {
        static_assert(std::is_same_v<T*, decltype(keys->async())>);
        return *keys->async();
      }
    }
  };

  // A sync method of a generated stub, and the callback form of a generated async method.
  template <class Stub, class Req, class Resp>
  using SyncMethod = grpc::Status (Stub::*)(grpc::ClientContext*, const Req&, Resp*);
  template <class Async, class Req, class Resp>
  using AsyncMethod = void (Async::*)(grpc::ClientContext*, const Req*, Resp*,
                                      std::function<void(grpc::Status)>);
  template <class Async, class Req, class Resp>
  struct AsyncCall;

  // The lifetime rule (in_flight.h): ~Client destroys the batcher (its shared streams end), then
  // closes in_flight (the async calls end), and only then do the channels and stubs go, on the
  // thread that destroys the client. The declaration order gives the same order.
  ClientOptions options;
  std::string target;
  std::vector<Channel> channels;
  std::atomic<uint64_t> next_channel{0};
  // Async unary calls and HashStreamAsync calls in flight.
  internal::InFlight in_flight;
  // Set when options.batching.enabled.
  std::unique_ptr<internal::Batcher> batcher;
  // Set when options.lane.enabled and the daemon gave lanes (lane_transport.h); else why not.
  std::unique_ptr<internal::LaneTransport> lane;
  std::string lane_status = "not asked for (ClientOptions::lane)";

  Channel& Pick() {
    return channels[next_channel.fetch_add(1, std::memory_order_relaxed) % channels.size()];
  }

  absl::Time Deadline(const CallOptions& call) const {
    return absl::Now() + internal::Clamp(call.timeout, options.default_timeout);
  }

  void Prepare(grpc::ClientContext& ctx, absl::Time deadline, const CallOptions& call) const {
    ctx.set_deadline(absl::ToChronoTime(deadline));
    ctx.set_wait_for_ready(call.wait_for_ready);
  }

  // ---- The retry rule (unary.cc) ------------------------------------------------------------
  // True when a failed call certainly never reached a daemon.
  bool NeverSent(const grpc::Status& s, const grpc::ClientContext& ctx) const;
  // Whether a failed attempt is tried again after `backoff` (never once the client is closing).
  bool ShouldRetry(const grpc::Status& s, const grpc::ClientContext& ctx, int attempt,
                   absl::Time deadline, absl::Duration backoff) const;
  absl::Duration NextBackoff(absl::Duration b) const;

  // Synchronous unary call with the retry rule; `fn` makes one attempt.
  absl::Status Unary(const CallOptions& call,
                     absl::FunctionRef<grpc::Status(Channel&, grpc::ClientContext&)> fn);

  // One generated sync method with the retry rule; *resp holds the answer of the last attempt.
  template <class Stub, class Req, class Resp>
  absl::Status Rpc(SyncMethod<Stub, Req, Resp> method, const Req& req, Resp* resp,
                   const CallOptions& call) {
    return Unary(call, [&](Channel& ch, grpc::ClientContext& ctx) {
      resp->Clear();
      return (ch.Of<Stub>().*method)(&ctx, req, resp);
    });
  }

  // One generated async method with the retry rule; `done` runs once, on a gRPC thread.
  template <class Async, class Req, class Resp>
  void UnaryAsync(AsyncMethod<Async, Req, Resp> method, Req req,
                  absl::AnyInvocable<void(absl::Status, std::type_identity_t<Resp>&)> done,
                  const CallOptions& call);

  // ---- The batching client (unary.cc) -------------------------------------------------------
  // Whether a sync call may go through the batching client and wait there.
  bool MayWaitForBatched(const pqc::v1::Operation& op) const;
  // A batched call, waited for.
  absl::StatusOr<Result> RunBatched(pqc::v1::Operation op, const CallOptions& call);
};

// An asynchronous unary call: its attempts, the backoff between them, and the caller's `done`.
// Deletes itself once `done` has run.
template <class Async, class Req, class Resp>
struct Client::Impl::AsyncCall {
  // First member, so destroyed last: given back once the context is gone (in_flight.h).
  internal::InFlight::Ticket ticket;
  Impl* impl = nullptr;
  AsyncMethod<Async, Req, Resp> method = nullptr;
  Req req;
  Resp resp;
  absl::AnyInvocable<void(absl::Status, Resp&)> done;
  CallOptions call;
  absl::Time deadline;
  absl::Duration backoff;
  int attempt = 0;
  std::unique_ptr<internal::TrackedContext> ctx;
  std::vector<std::unique_ptr<grpc::Alarm>> alarms;

  ~AsyncCall() { internal::WipeSecrets(&req); }

  void Attempt() {
    ++attempt;
    ctx = std::make_unique<internal::TrackedContext>(impl->in_flight);
    impl->Prepare(ctx->get(), deadline, call);
    resp.Clear();
    (impl->Pick().Of<Async>().*method)(&ctx->get(), &req, &resp,
                                       [this](grpc::Status s) { OnDone(std::move(s)); });
  }

  void OnDone(grpc::Status s) {
    if (!s.ok() && impl->ShouldRetry(s, ctx->get(), attempt, deadline, backoff)) {
      const absl::Duration wait = backoff;
      backoff = impl->NextBackoff(backoff);
      alarms.push_back(std::make_unique<grpc::Alarm>());
      alarms.back()->Set(absl::ToChronoTime(absl::Now() + wait), [this](bool) { Attempt(); });
      return;
    }
    {
      auto d = std::move(done);
      d(internal::FromGrpc(s), resp);
    }
    delete this;
  }
};

template <class Async, class Req, class Resp>
void Client::Impl::UnaryAsync(
    AsyncMethod<Async, Req, Resp> method, Req req,
    absl::AnyInvocable<void(absl::Status, std::type_identity_t<Resp>&)> done,
    const CallOptions& call) {
  auto* c = new AsyncCall<Async, Req, Resp>();
  c->ticket = in_flight.Begin();
  c->impl = this;
  c->method = method;
  c->req = std::move(req);
  c->done = std::move(done);
  c->call = call;
  c->deadline = Deadline(call);
  c->backoff = options.initial_backoff;
  c->Attempt();
}

}  // namespace pqcd::client
