// Calls served on the core queues (core_queues.h), in the shape of gRPC's callback reactors:
// StartRead, StartWrite and Finish may be called from any thread, and the reactions (OnStart,
// OnReadDone, OnWriteDone, OnAlarm, OnCancel, OnDone) run on the worker that polls the queue the
// call arrived on, because every tag of the call comes back there.
//
// Why not gRPC's callback API: any callback or sync service makes gRPC run poller threads of its
// own, which take the sockets' events before the workers do, and every call then changes threads
// (bench/RESULTS.md, "Thread-per-core serving").
//
// The rules are the callback API's: at most one read and one write outstanding, Finish exactly
// once (also after a cancellation), no Start* after Finish. OnDone runs once, after gRPC's done
// notification, the Finish and every read and write came back; the reactor may delete itself
// there. OnCancel runs (before OnDone) when the call was cancelled or its deadline passed.
#pragma once

#include <atomic>

#include "core_queues.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/async_stream.h"
#include "grpcpp/support/async_unary_call.h"

namespace pqcd::server {

class CoreCall : public CqTag {
 public:
  // The request tag: the call arrived (ok) or the server is shutting down (not ok: no other tag
  // of it comes back).
  void Proceed(bool ok) final {
    if (!ok) {
      delete this;
      return;
    }
    queues_->CallStarted(queue_);
    if (!queues_->stopping()) Renew();  // the next call of this method on this queue
    OnStart();
  }

 protected:
  CoreCall(CoreQueues* queues, int queue) : queues_(queues), queue_(queue) {
    context_.AsyncNotifyWhenDone(static_cast<CqTag*>(&done_tag_));
  }
  virtual ~CoreCall() = default;

  // Posts a new call object for the same method on the same queue.
  virtual void Renew() = 0;
  // The call arrived: the callback API's method handler.
  virtual void OnStart() = 0;
  virtual void OnCancel() {}
  virtual void OnReadDone(bool /*ok*/) {}
  virtual void OnWriteDone(bool /*ok*/) {}
  virtual void OnAlarm(bool /*ok*/) {}
  // Every tag of the call is back: nothing of gRPC refers to it any more.
  virtual void OnDone() = 0;

  grpc::ServerCompletionQueue* cq() const { return queues_->cq(queue_); }
  CoreQueues* queues() const { return queues_; }
  int queue() const { return queue_; }

  // Tags for the derived classes' gRPC operations; an operation counts as outstanding from
  // OpBegin (called before the operation starts) until its tag is back.
  void OpBegin() { ops_.fetch_add(1, std::memory_order_relaxed); }
  CqTag* read_tag() { return &read_tag_; }
  CqTag* write_tag() { return &write_tag_; }
  CqTag* finish_tag() { return &finish_tag_; }
  // For a grpc::Alarm of the derived class set on cq() (OpBegin first): OnAlarm runs on the worker.
  CqTag* alarm_tag() { return &alarm_tag_; }

  grpc::ServerContext context_;

 private:
  enum class Kind { kRead, kWrite, kFinish, kDone, kAlarm };
  struct Tag final : CqTag {
    CoreCall* call;
    Kind kind;
    Tag(CoreCall* c, Kind k) : call(c), kind(k) {}
    void Proceed(bool ok) override { call->Back(kind, ok); }
  };

  void Back(Kind kind, bool ok) {
    switch (kind) {
      case Kind::kRead:
        OnReadDone(ok);
        break;
      case Kind::kWrite:
        OnWriteDone(ok);
        break;
      case Kind::kAlarm:
        OnAlarm(ok);
        break;
      case Kind::kFinish:
        break;
      case Kind::kDone:
        if (context_.IsCancelled()) OnCancel();
        break;
    }
    // A reaction's new operation was counted before this one is let go, so the count reaches
    // zero only once.
    if (ops_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    CoreQueues* queues = queues_;
    const int queue = queue_;
    OnDone();
    queues->CallEnded(queue);
  }

  CoreQueues* const queues_;
  const int queue_;
  // Outstanding: the done notification, the Finish (counted from the start: OnDone cannot come
  // before it) and each read and write in progress.
  std::atomic<int> ops_{2};
  Tag done_tag_{this, Kind::kDone};
  Tag read_tag_{this, Kind::kRead};
  Tag write_tag_{this, Kind::kWrite};
  Tag finish_tag_{this, Kind::kFinish};
  Tag alarm_tag_{this, Kind::kAlarm};
};

// A bidirectional stream (ServerBidiReactor's shape).
template <class Req, class Resp>
class CoreBidiReactor : public CoreCall {
 protected:
  using CoreCall::CoreCall;
  using Stream = grpc::ServerAsyncReaderWriter<Resp, Req>;

  void StartRead(Req* request) {
    OpBegin();
    stream_.Read(request, read_tag());
  }
  // gRPC serializes *response before this returns.
  void StartWrite(const Resp* response) {
    OpBegin();
    stream_.Write(*response, write_tag());
  }
  void Finish(const grpc::Status& status) { stream_.Finish(status, finish_tag()); }

  Stream stream_{&context_};
};

// A client stream answered once (ServerReadReactor's shape); the answer is response_.
template <class Req, class Resp>
class CoreReadReactor : public CoreCall {
 protected:
  using CoreCall::CoreCall;
  using Reader = grpc::ServerAsyncReader<Resp, Req>;

  void StartRead(Req* request) {
    OpBegin();
    reader_.Read(request, read_tag());
  }
  void Finish(const grpc::Status& status) {
    if (status.ok()) {
      reader_.Finish(response_, status, finish_tag());
    } else {
      reader_.FinishWithError(status, finish_tag());
    }
  }

  Resp response_;
  Reader reader_{&context_};
};

// A server stream (ServerWriteReactor's shape): request_ arrives with the call.
template <class Req, class Resp>
class CoreWriteReactor : public CoreCall {
 protected:
  using CoreCall::CoreCall;
  using Writer = grpc::ServerAsyncWriter<Resp>;

  // gRPC serializes *response before this returns.
  void StartWrite(const Resp* response) {
    OpBegin();
    writer_.Write(*response, write_tag());
  }
  void Finish(const grpc::Status& status) { writer_.Finish(status, finish_tag()); }

  Req request_;
  Writer writer_{&context_};
};

// A unary call (ServerUnaryReactor's shape): request_ arrives with the call, response_ is the
// answer.
template <class Req, class Resp>
class CoreUnaryReactor : public CoreCall {
 protected:
  using CoreCall::CoreCall;
  using Responder = grpc::ServerAsyncResponseWriter<Resp>;

  void Finish(const grpc::Status& status) {
    if (status.ok()) {
      responder_.Finish(response_, status, finish_tag());
    } else {
      responder_.FinishWithError(status, finish_tag());
    }
  }

  Req request_;
  Resp response_;
  Responder responder_{&context_};
};

}  // namespace pqcd::server
