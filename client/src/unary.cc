// Unary calls: the retry rule, the crypto calls (one RPC each, or one operation each on the
// batching client's shared streams), Batch and the Batch pipeline.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client_impl.h"
#include "pqcd/client/client.h"
#include "stream_wire.h"

namespace pqcd::client {

using internal::FromGrpc;
using internal::FromProto;
using internal::ToProto;

namespace {

// One operation as the Stream's Operation message.
template <class Op>
pqc::v1::Operation OperationProto(const Op& op) {
  pqc::v1::Operation p;
  if constexpr (std::is_same_v<Op, Operation>) {
    ToProto(op, &p);
  } else {
    ToProto(op, internal::OperationTraits<Op>::Field(&p));
  }
  return p;
}

// Operations larger than this skip the batching client's shared stream and go as unary calls:
// packing saves nothing on them, and one message over the daemon's size limit would fail the
// shared stream and every call on it.
constexpr size_t kMaxBatchedOperationBytes = 64 << 10;
bool Batchable(const pqc::v1::Operation& op) {
  return op.ByteSizeLong() <= kMaxBatchedOperationBytes;
}

// The typed result of a batched call (the daemon answers each operation with its own kind).
template <class T>
absl::StatusOr<T> Narrow(absl::StatusOr<Result> r) {
  if (!r.ok()) return r.status();
  if (T* v = std::get_if<T>(&*r)) return std::move(*v);
  return absl::InternalError("the daemon answered with the result of another kind of operation");
}

// The results of a Batch RPC for n operations: one per operation, in order.
absl::StatusOr<BatchResults> BatchAnswer(pqc::v1::BatchResponse& resp, size_t n) {
  if (static_cast<size_t>(resp.results_size()) != n) {
    return absl::InternalError(
        absl::StrCat("Batch answered ", resp.results_size(), " results for ", n, " operations"));
  }
  BatchResults out;
  out.reserve(n);
  for (auto& r : *resp.mutable_results()) out.push_back(FromProto(std::move(r)));
  return out;
}

// One operation through the client's lanes, waited for; nullopt when a lane cannot carry it
// (then gRPC does). Not from a lane's own callback (its thread would wait for itself).
std::optional<absl::StatusOr<Result>> RunOnLane(Client::Impl& impl, Operation op,
                                                const CallOptions& call) {
  absl::StatusOr<Result> out;
  absl::Notification finished;
  Callback<Result> done = [&](absl::StatusOr<Result> r) {
    out = std::move(r);
    finished.Notify();
  };
  if (!impl.lane->Submit(op, done, impl.Deadline(call) - absl::Now())) return std::nullopt;
  finished.WaitForNotification();
  return out;
}

}  // namespace

// ---- The retry rule ---------------------------------------------------------------------------
// True when a failed call certainly never reached a daemon: UNAVAILABLE, no transport was assigned
// (gRPC then reports the channel's target, or nothing, as the peer), and the message is one of the
// load balancer's "no connection to pick" failures. Anything else (a connection that broke after
// the request was written, a daemon that answered UNAVAILABLE) is not retried.
bool Client::Impl::NeverSent(const grpc::Status& s, const grpc::ClientContext& ctx) const {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  const std::string peer = ctx.peer();
  if (!peer.empty() && peer != target) return false;
  const std::string& m = s.error_message();
  for (const char* pick_failure :
       {"failed to connect to all addresses", "connections to all backends failing",
        "empty address list", "DNS resolution failed", "no children in picker"}) {
    if (absl::StrContains(m, pick_failure)) return true;
  }
  return false;
}

bool Client::Impl::ShouldRetry(const grpc::Status& s, const grpc::ClientContext& ctx, int attempt,
                               absl::Time deadline, absl::Duration backoff) const {
  return attempt < options.max_attempts && absl::Now() + backoff < deadline && NeverSent(s, ctx) &&
         !in_flight.closing();
}

absl::Duration Client::Impl::NextBackoff(absl::Duration b) const {
  return std::min(b * 2, options.max_backoff);
}

absl::Status Client::Impl::Unary(
    const CallOptions& call, absl::FunctionRef<grpc::Status(Channel&, grpc::ClientContext&)> fn) {
  const absl::Time deadline = Deadline(call);
  absl::Duration backoff = options.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext ctx;
    Prepare(ctx, deadline, call);
    grpc::Status s = fn(Pick(), ctx);
    if (s.ok()) return absl::OkStatus();
    if (!ShouldRetry(s, ctx, attempt, deadline, backoff)) return FromGrpc(s);
    absl::SleepFor(backoff);
    backoff = NextBackoff(backoff);
  }
}

// ---- The batching client ----------------------------------------------------------------------
// Small enough, and not made inside a callback of the batching client's answers (waiting there
// could wait for reactions gRPC runs on this very thread once the callback returns; such a call
// goes unary instead).
bool Client::Impl::MayWaitForBatched(const pqc::v1::Operation& op) const {
  return Batchable(op) && !internal::Batcher::DeliveringOnThisThread();
}

absl::StatusOr<Result> Client::Impl::RunBatched(pqc::v1::Operation op, const CallOptions& call) {
  absl::Notification finished;
  absl::StatusOr<Result> out = absl::UnknownError("not run");
  batcher->Submit(
      std::move(op),
      [&](absl::StatusOr<Result> r) {
        out = std::move(r);
        finished.Notify();
      },
      call);
  finished.WaitForNotification();
  return out;
}

StreamStats Client::batching_stats() const {
  return impl_->batcher ? impl_->batcher->stats() : StreamStats{};
}

// ---- Crypto, sync ---------------------------------------------------------------------------
#define PQCD_SYNC_UNARY(Method, field, Op, RetT)                                   \
  absl::StatusOr<RetT> Client::Method(const Op& op, const CallOptions& call) {     \
    if (impl_->lane) {                                                             \
      if (auto r = RunOnLane(*impl_, Operation(op), call)) {                       \
        return Narrow<RetT>(*std::move(r));                                        \
      }                                                                            \
    }                                                                              \
    if (impl_->batcher) {                                                          \
      pqc::v1::Operation p = OperationProto(op);                                   \
      if (impl_->MayWaitForBatched(p)) {                                           \
        return Narrow<RetT>(impl_->RunBatched(std::move(p), call));                \
      }                                                                            \
      internal::WipeOperation(&p);                                                 \
    }                                                                              \
    pqc::v1::Method##Request req;                                                  \
    ToProto(op, &req);                                                             \
    pqc::v1::Method##Response resp;                                                \
    absl::Status s = impl_->Rpc(&pqc::v1::Crypto::Stub::Method, req, &resp, call); \
    internal::WipeSecrets(&req);                                                   \
    if (!s.ok()) return s;                                                         \
    return FromProto(std::move(resp));                                             \
  }

PQCD_CLIENT_OPERATIONS(PQCD_SYNC_UNARY)
#undef PQCD_SYNC_UNARY

absl::StatusOr<BatchResults> Client::Batch(const std::vector<Operation>& ops,
                                           const CallOptions& call) {
  pqc::v1::BatchRequest req;
  for (const auto& op : ops) ToProto(op, req.add_operations());
  pqc::v1::BatchResponse resp;
  absl::Status s = impl_->Rpc(&pqc::v1::Crypto::Stub::Batch, req, &resp, call);
  internal::WipeSecrets(&req);
  if (!s.ok()) return s;
  return BatchAnswer(resp, ops.size());
}

BatchResults Client::RunPipelined(const std::vector<Operation>& ops, const PipelineOptions& po,
                                  const CallOptions& call) {
  const size_t batch = std::max<size_t>(po.batch_size, 1);
  const size_t max_inflight = std::max<size_t>(po.max_inflight, 1);
  BatchResults results(ops.size(), absl::UnknownError("not run"));
  std::mutex mu;
  std::condition_variable cv;
  size_t inflight = 0;
  for (size_t begin = 0; begin < ops.size(); begin += batch) {
    const size_t end = std::min(ops.size(), begin + batch);
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return inflight < max_inflight; });
      ++inflight;
    }
    std::vector<Operation> chunk(ops.begin() + static_cast<std::ptrdiff_t>(begin),
                                 ops.begin() + static_cast<std::ptrdiff_t>(end));
    BatchAsync(
        std::move(chunk),
        [&, begin, end](absl::StatusOr<BatchResults> r) {
          for (size_t i = begin; i < end; ++i) {
            results[i] = r.ok() ? std::move((*r)[i - begin]) : absl::StatusOr<Result>(r.status());
          }
          std::lock_guard lock(mu);
          --inflight;
          cv.notify_all();
        },
        call);
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return inflight == 0; });
  return results;
}

absl::StatusOr<Result> Client::Run(const Operation& op, const CallOptions& call) {
  if (impl_->lane) {
    if (auto r = RunOnLane(*impl_, op, call)) return *std::move(r);
  }
  if (impl_->batcher) {
    pqc::v1::Operation p = OperationProto(op);
    if (impl_->MayWaitForBatched(p)) return impl_->RunBatched(std::move(p), call);
    internal::WipeOperation(&p);
  }
  return std::visit(
      [&](const auto& o) -> absl::StatusOr<Result> {
        using T = std::decay_t<decltype(o)>;
        auto wrap = [](auto r) -> absl::StatusOr<Result> {
          if (!r.ok()) return r.status();
          return Result(*std::move(r));
        };
        return wrap((this->*internal::OperationTraits<T>::kCall)(o, call));
      },
      op);
}

// ---- Crypto, async --------------------------------------------------------------------------
#define PQCD_ASYNC_UNARY(Method, field, Op, RetT)                                            \
  void Client::Method##Async(Op op, Callback<RetT> done, const CallOptions& call) {          \
    if (impl_->lane) {                                                                       \
      Operation any = std::move(op);                                                         \
      Callback<Result> narrow = [done = std::move(done)](absl::StatusOr<Result> r) mutable { \
        done(Narrow<RetT>(std::move(r)));                                                    \
      };                                                                                     \
      if (impl_->lane->Submit(any, narrow, impl_->Deadline(call) - absl::Now())) {           \
        return;                                                                              \
      }                                                                                      \
      op = std::get<Op>(std::move(any));                                                     \
      done = [narrow = std::move(narrow)](absl::StatusOr<RetT> r) mutable {                  \
        if (!r.ok()) return narrow(r.status());                                              \
        narrow(Result(*std::move(r)));                                                       \
      };                                                                                     \
    }                                                                                        \
    if (impl_->batcher) {                                                                    \
      pqc::v1::Operation p = OperationProto(op);                                             \
      if (Batchable(p)) {                                                                    \
        impl_->batcher->Submit(                                                              \
            std::move(p),                                                                    \
            [done = std::move(done)](absl::StatusOr<Result> r) mutable {                     \
              done(Narrow<RetT>(std::move(r)));                                              \
            },                                                                               \
            call);                                                                           \
        return;                                                                              \
      }                                                                                      \
      internal::WipeOperation(&p);                                                           \
    }                                                                                        \
    pqc::v1::Method##Request req;                                                            \
    ToProto(op, &req);                                                                       \
    impl_->UnaryAsync(&pqc::v1::Crypto::Stub::async::Method, std::move(req),                 \
                      internal::FromProtoDone(std::move(done)), call);                       \
  }

PQCD_CLIENT_OPERATIONS(PQCD_ASYNC_UNARY)
#undef PQCD_ASYNC_UNARY

void Client::BatchAsync(std::vector<Operation> ops, Callback<BatchResults> done,
                        const CallOptions& call) {
  pqc::v1::BatchRequest req;
  for (const auto& op : ops) ToProto(op, req.add_operations());
  const size_t n = ops.size();
  impl_->UnaryAsync(
      &pqc::v1::Crypto::Stub::async::Batch, std::move(req),
      [done = std::move(done), n](absl::Status s, pqc::v1::BatchResponse& rs) mutable {
        if (!s.ok()) return done(std::move(s));
        done(BatchAnswer(rs, n));
      },
      call);
}

void Client::RunAsync(Operation op, Callback<Result> done, const CallOptions& call) {
  if (impl_->lane && impl_->lane->Submit(op, done, impl_->Deadline(call) - absl::Now())) return;
  if (impl_->batcher) {
    pqc::v1::Operation p = OperationProto(op);
    if (Batchable(p)) {
      impl_->batcher->Submit(std::move(p), std::move(done), call);
      return;
    }
    internal::WipeOperation(&p);
  }
  auto wrap = [](Callback<Result> d) {
    return [d = std::move(d)](auto r) mutable {
      if (!r.ok()) {
        d(r.status());
      } else {
        d(Result(*std::move(r)));
      }
    };
  };
  std::visit(
      [&](auto& o) {
        using T = std::decay_t<decltype(o)>;
        (this->*internal::OperationTraits<T>::kCallAsync)(std::move(o), wrap(std::move(done)),
                                                          call);
      },
      op);
}

}  // namespace pqcd::client
