// grpc_floor: a pqc.v1.Crypto server that does no crypto (issue 11, item 1): the floor of server
// CPU per request that gRPC 1.51 and protobuf impose, against which pqcd's own cost is compared.
//
// Every answer is fixed bytes of the right size (the registry's, hybrids included): Hash a digest
// of the algorithm's length (SHAKE: output_length), Encaps and Decaps the same shared secret (so
// that pqc-load's decaps check passes), Verify valid=true, KeyGen and Sign keys and signatures;
// HashStream is UNIMPLEMENTED. Nothing is validated beyond picking the kind of answer. Stream
// answers a single-form request with one single-form response and a packed request with one
// packed response carrying all its items; one write is outstanding at a time, later answers
// queue, and reading pauses while kMaxQueued answers wait. Only loopback and Unix sockets.
//
// --api chooses the gRPC server API:
//   async     (default: the cheaper one, measured below) completion queues: one CQ per --threads
//             thread, each call a state machine whose tags all come back on its CQ, so no locks.
//   callback  reactors: unary calls Finish inline in the handler, Stream is a bidi reactor.
// Server CPU (µs) per request, pqc-load --server-pid, ML-KEM-768 decaps; server on CPU 1, pqc-load
// on CPU 0 of the 2-vCPU VM of bench/RESULTS.md (shared with builds); medians of 3 interleaved 10 s
// runs (2026-12-01). Context switches per request: async 0.004-0.9, callback 0.09-7.1.
//                                          async  callback   with --malloc default: async callback
//   unary, -c 32                            23.1      24.9                            27.4     26.5
//   Stream single form, --inflight 128 -c 2 12.5      15.4                            24.5     26.3
//   Batch of 64 (per Batch call), -c 4       218       224                            1017      596
//   Stream packed 64 (per operation)         2.6       2.3                            14.4     13.5
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "grpcpp/alarm.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "pqc/v1/crypto.grpc.pb.h"
#include "pqcd/kernels/algorithms.h"

namespace pqcd::bench {
namespace {

namespace v1 = ::pqc::v1;

// Answers a Stream may queue before it stops reading; reading resumes at kResumeAt.
constexpr size_t kMaxQueued = 256;
constexpr size_t kResumeAt = kMaxQueued / 2;
// A SHAKE output_length above this is clipped: the floor must not allocate what a client asks.
constexpr uint32_t kMaxDigest = 1 << 20;
// Every byte of every answer; string::assign(n, kFill) is a memset into the message's own string,
// as cheap as copying a constant.
constexpr char kFill = '\x5a';

// ---- Fixed answers ------------------------------------------------------------------------------
// Sizes are the algorithm registry's (kernels/include/pqcd/kernels/algorithms.h, header only):
// every algorithm pqcd serves, the hybrids included. An unknown number: empty answers, which is
// all the floor owes.
const pqcd::kernels::AlgorithmFacts& SizesOf(v1::Algorithm a) {
  static constexpr pqcd::kernels::AlgorithmFacts kNone{};
  const pqcd::kernels::AlgorithmFacts* f = pqcd::kernels::FindByApiValue(a);
  return f != nullptr ? *f : kNone;
}

uint32_t DigestSize(const v1::HashRequest& r) {
  const pqcd::kernels::AlgorithmFacts& f = SizesOf(r.algorithm());
  if (f.xof && r.output_length() != 0) return std::min(r.output_length(), kMaxDigest);
  return static_cast<uint32_t>(f.digest_bytes);
}

void Answer(const v1::KeyGenRequest& rq, v1::KeyGenResponse* rs) {
  const pqcd::kernels::AlgorithmFacts& z = SizesOf(rq.algorithm());
  rs->set_algorithm(rq.algorithm());
  rs->mutable_public_key()->assign(z.public_key_bytes, kFill);
  rs->mutable_private_key()->assign(z.private_key_bytes, kFill);
  rs->mutable_seed()->assign(z.seed_bytes, kFill);
}
// Encaps and Decaps answer the same shared secret, so that pqc-load's decaps check passes. A
// held key's Decaps names no algorithm: 32 bytes, ML-KEM's size.
size_t SecretSize(v1::Algorithm a) {
  const size_t n = SizesOf(a).secret_bytes;
  return n != 0 ? n : 32;
}
void Answer(const v1::EncapsRequest& rq, v1::EncapsResponse* rs) {
  rs->mutable_ciphertext()->assign(SizesOf(rq.algorithm()).ciphertext_bytes, kFill);
  rs->mutable_shared_secret()->assign(SecretSize(rq.algorithm()), kFill);
}
void Answer(const v1::DecapsRequest& rq, v1::DecapsResponse* rs) {
  rs->mutable_shared_secret()->assign(SecretSize(rq.algorithm()), kFill);
}
void Answer(const v1::SignRequest& rq, v1::SignResponse* rs) {
  rs->mutable_signature()->assign(SizesOf(rq.algorithm()).signature_bytes, kFill);
}
void Answer(const v1::VerifyRequest&, v1::VerifyResponse* rs) {
  rs->set_valid(true);
}
void Answer(const v1::HashRequest& rq, v1::HashResponse* rs) {
  rs->mutable_digest()->assign(DigestSize(rq), kFill);
}

void Answer(const v1::Operation& op, v1::OperationResult* r) {
  switch (op.op_case()) {
    case v1::Operation::kKeygen:
      return Answer(op.keygen(), r->mutable_keygen());
    case v1::Operation::kEncaps:
      return Answer(op.encaps(), r->mutable_encaps());
    case v1::Operation::kDecaps:
      return Answer(op.decaps(), r->mutable_decaps());
    case v1::Operation::kSign:
      return Answer(op.sign(), r->mutable_sign());
    case v1::Operation::kVerify:
      return Answer(op.verify(), r->mutable_verify());
    case v1::Operation::kHash:
      return Answer(op.hash(), r->mutable_hash());
    case v1::Operation::OP_NOT_SET:
      break;
  }
  r->set_code(grpc::StatusCode::INVALID_ARGUMENT);
  r->set_message("operation: none set");
}

void Answer(const v1::BatchRequest& rq, v1::BatchResponse* rs) {
  rs->mutable_results()->Reserve(rq.operations_size());
  for (const v1::Operation& op : rq.operations()) Answer(op, rs->add_results());
}

// One response message per request message, in either form.
void Answer(const v1::StreamRequest& rq, v1::StreamResponse* rs) {
  if (rq.items_size() == 0) {
    rs->set_id(rq.id());
    return Answer(rq.operation(), rs->mutable_result());
  }
  rs->mutable_results()->Reserve(rq.items_size());
  for (const v1::StreamItem& item : rq.items()) {
    v1::StreamItemResult* r = rs->add_results();
    r->set_id(item.id());
    Answer(item.operation(), r->mutable_result());
  }
  if (rq.has_operation()) {  // both forms in one message: the proto says `id` is refused
    rs->set_id(rq.id());
    rs->mutable_result()->set_code(grpc::StatusCode::INVALID_ARGUMENT);
    rs->mutable_result()->set_message("operation: must be unset when items are given");
  }
}

// Answers of one Stream waiting to be written, front first. Written messages are kept and reused
// (Clear() keeps protobuf's allocations), so a busy stream allocates nothing per message.
class AnswerQueue {
 public:
  v1::StreamResponse* Add() {
    std::unique_ptr<v1::StreamResponse> m;
    if (spare_.empty()) {
      m = std::make_unique<v1::StreamResponse>();
    } else {
      m = std::move(spare_.back());
      spare_.pop_back();
    }
    queued_.push_back(std::move(m));
    return queued_.back().get();
  }
  v1::StreamResponse* front() const { return queued_.front().get(); }
  void PopFront() {
    queued_.front()->Clear();
    spare_.push_back(std::move(queued_.front()));
    queued_.pop_front();
  }
  void Drop() { queued_.clear(); }  // only when nothing more will be written
  size_t size() const { return queued_.size(); }
  bool empty() const { return queued_.empty(); }

 private:
  std::deque<std::unique_ptr<v1::StreamResponse>> queued_;
  std::vector<std::unique_ptr<v1::StreamResponse>> spare_;
};

// ---- Callback API -------------------------------------------------------------------------------
// Reads and writes of one reactor may complete on different gRPC threads at once, hence mu_.
// gRPC operations are started with mu_ released: a reaction may run before Start* returns.
class CallbackStream final : public grpc::ServerBidiReactor<v1::StreamRequest, v1::StreamResponse> {
 public:
  CallbackStream() { StartRead(&in_); }

  void OnReadDone(bool ok) override {
    std::unique_lock lock(mu_);
    if (!ok || broken_) {
      reads_done_ = true;
      return MaybeFinish(lock);
    }
    Answer(in_, answers_.Add());
    in_.Clear();
    v1::StreamResponse* write = nullptr;
    if (!writing_) write = answers_.front(), writing_ = true;
    const bool read = answers_.size() < kMaxQueued;
    paused_ = !read;
    lock.unlock();
    if (write) StartWrite(write);
    if (read) StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mu_);
    answers_.PopFront();
    if (!ok) {  // the call is broken: nothing queued will be delivered
      broken_ = true;
      answers_.Drop();
      if (paused_) reads_done_ = true;  // no read is outstanding to tell us
    }
    const bool read = !broken_ && paused_ && answers_.size() <= kResumeAt;
    if (read) paused_ = false;
    if (answers_.empty()) {
      writing_ = false;
      if (!read) return MaybeFinish(lock);
    }
    v1::StreamResponse* write = writing_ ? answers_.front() : nullptr;
    lock.unlock();
    if (write) StartWrite(write);
    if (read) StartRead(&in_);
  }

  void OnDone() override { delete this; }

 private:
  // Finish once the client is done writing and every answer has been written.
  void MaybeFinish(std::unique_lock<std::mutex>& lock) {
    if (!reads_done_ || writing_ || finished_) return;
    finished_ = true;
    const bool broken = broken_;
    lock.unlock();
    Finish(broken ? grpc::Status::CANCELLED : grpc::Status::OK);
  }

  std::mutex mu_;
  v1::StreamRequest in_;
  AnswerQueue answers_;
  bool writing_ = false, paused_ = false, reads_done_ = false, broken_ = false, finished_ = false;
};

template <class Rq, class Rs>
grpc::ServerUnaryReactor* AnswerInline(grpc::CallbackServerContext* ctx, const Rq* rq, Rs* rs) {
  Answer(*rq, rs);
  grpc::ServerUnaryReactor* r = ctx->DefaultReactor();  // lives in the call's arena
  r->Finish(grpc::Status::OK);
  return r;
}

// HashStream is not overridden: gRPC answers UNIMPLEMENTED for it.
class CallbackCrypto final : public v1::Crypto::CallbackService {
#define PQCD_FLOOR_UNARY(M)                                                             \
  grpc::ServerUnaryReactor* M(grpc::CallbackServerContext* c, const v1::M##Request* rq, \
                              v1::M##Response* rs) override {                           \
    return AnswerInline(c, rq, rs);                                                     \
  }
  PQCD_FLOOR_UNARY(KeyGen)
  PQCD_FLOOR_UNARY(Encaps)
  PQCD_FLOOR_UNARY(Decaps)
  PQCD_FLOOR_UNARY(Sign)
  PQCD_FLOOR_UNARY(Verify)
  PQCD_FLOOR_UNARY(Hash)
  PQCD_FLOOR_UNARY(Batch)
#undef PQCD_FLOOR_UNARY
  grpc::ServerBidiReactor<v1::StreamRequest, v1::StreamResponse>* Stream(
      grpc::CallbackServerContext*) override {
    return new CallbackStream();
  }
};

// ---- Async (completion queue) API ---------------------------------------------------------------
// Every method async, but HashStream, which goes to the generic service (AsyncOther) that
// answers it UNIMPLEMENTED: it needs no state machine of its own.
using C = v1::Crypto;
using AsyncCrypto = C::WithAsyncMethod_KeyGen<
    C::WithAsyncMethod_Encaps<C::WithAsyncMethod_Decaps<C::WithAsyncMethod_Sign<
        C::WithAsyncMethod_Verify<C::WithAsyncMethod_Hash<C::WithGenericMethod_HashStream<
            C::WithAsyncMethod_Batch<C::WithAsyncMethod_Stream<C::Service>>>>>>>>>;

// Every tag on a CQ is a Tag: Done runs the next step of its call's state machine.
struct Tag {
  virtual void Done(bool ok) = 0;

 protected:
  ~Tag() = default;
};

// One CQ and the thread that polls it. Only that thread starts operations on calls of this CQ, so
// a call needs no lock; `stopping` (set by that thread when told to stop) keeps it from starting
// any after the CQ is shut down, which gRPC forbids.
struct Queue final : Tag {
  AsyncCrypto* service = nullptr;
  grpc::AsyncGenericService* generic = nullptr;
  std::unique_ptr<grpc::ServerCompletionQueue> cq;
  grpc::Alarm stop_alarm;
  bool stopping = false;
  std::thread thread;

  void Done(bool) override {  // stop_alarm fired
    stopping = true;
    cq->Shutdown();
  }
};

template <class Rq, class Rs>
using RequestFn = void (AsyncCrypto::*)(grpc::ServerContext*, Rq*,
                                        grpc::ServerAsyncResponseWriter<Rs>*,
                                        grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                                        void*);

// A unary call: requested, then answered, then deleted. The first tag that comes back also asks
// gRPC for the next call of the method, so one request is always posted per method and CQ.
template <class Rq, class Rs>
class AsyncUnary final : public Tag {
 public:
  AsyncUnary(Queue* q, RequestFn<Rq, Rs> request) : q_(q), request_(request), responder_(&ctx_) {
    (q_->service->*request_)(&ctx_, &rq_, &responder_, q_->cq.get(), q_->cq.get(), this);
  }

  void Done(bool ok) override {
    if (!ok || answered_ || q_->stopping) return delete this;
    new AsyncUnary(q_, request_);
    answered_ = true;
    Answer(rq_, &rs_);
    responder_.Finish(rs_, grpc::Status::OK, this);
  }

 private:
  Queue* q_;
  RequestFn<Rq, Rs> request_;
  grpc::ServerContext ctx_;
  Rq rq_;
  Rs rs_;
  grpc::ServerAsyncResponseWriter<Rs> responder_;
  bool answered_ = false;
};

// A Stream call. Up to one read, one write and then one finish are outstanding, each with its own
// tag; the object deletes itself when none is.
class AsyncStream {
 public:
  explicit AsyncStream(Queue* q) : q_(q), stream_(&ctx_) {
    q_->service->RequestStream(&ctx_, &stream_, q_->cq.get(), q_->cq.get(), &on_request_);
  }

 private:
  struct Step final : Tag {
    Step(AsyncStream* s, void (AsyncStream::*f)(bool)) : self(s), fn(f) {}
    void Done(bool ok) override {
      (self->*fn)(ok);
      if (!self->reading_ && !self->writing_ && !self->finishing_) delete self;
    }
    AsyncStream* self;
    void (AsyncStream::*fn)(bool);
  };

  void OnRequest(bool ok) {
    if (!ok || q_->stopping) return;  // shut down before a call came: nothing outstanding
    new AsyncStream(q_);
    Read();
  }

  void OnRead(bool ok) {
    reading_ = false;
    if (!ok || broken_) {
      reads_done_ = true;
      return MaybeFinish();
    }
    Answer(in_, answers_.Add());
    in_.Clear();
    if (!writing_) Write();
    if (answers_.size() < kMaxQueued) Read();  // else OnWrite resumes reading
  }

  void OnWrite(bool ok) {
    writing_ = false;
    answers_.PopFront();
    if (!ok) {
      broken_ = true;
      answers_.Drop();
      if (!reading_) reads_done_ = true;  // paused: no read will come back to say so
      return MaybeFinish();
    }
    if (!answers_.empty()) Write();
    if (!reading_ && !reads_done_ && answers_.size() <= kResumeAt) Read();
    MaybeFinish();
  }

  void OnFinish(bool) { finishing_ = false; }

  void Read() {
    if (q_->stopping) {
      reads_done_ = true;
      return;
    }
    reading_ = true;
    stream_.Read(&in_, &on_read_);
  }
  void Write() {
    if (q_->stopping) return answers_.Drop();
    writing_ = true;
    stream_.Write(*answers_.front(), &on_write_);
  }
  void MaybeFinish() {
    if (!reads_done_ || writing_ || !answers_.empty() || finished_ || q_->stopping) return;
    finished_ = finishing_ = true;
    stream_.Finish(broken_ ? grpc::Status::CANCELLED : grpc::Status::OK, &on_finish_);
  }

  Queue* q_;
  grpc::ServerContext ctx_;
  grpc::ServerAsyncReaderWriter<v1::StreamResponse, v1::StreamRequest> stream_;
  v1::StreamRequest in_;
  AnswerQueue answers_;
  bool reading_ = false, writing_ = false, finishing_ = false;
  bool reads_done_ = false, broken_ = false, finished_ = false;
  // Until the call arrives, on_request_ is outstanding; Step::Done then finds nothing else
  // outstanding only if OnRequest failed, which is when the object must go.
  Step on_request_{this, &AsyncStream::OnRequest};
  Step on_read_{this, &AsyncStream::OnRead};
  Step on_write_{this, &AsyncStream::OnWrite};
  Step on_finish_{this, &AsyncStream::OnFinish};
};

// What has no typed handler in the async server, through the generic service: HashStream and every
// method gRPC does not know are UNIMPLEMENTED, and grpc.health.v1.Health/Check is SERVING. gRPC's
// default health service is a callback service, and any callback service makes gRPC start polling
// threads of its own, which then take the I/O of every call and hand completions to the CQ thread
// (measured: ~40% of the CPU and twice the context switches per call).
class AsyncOther final : public Tag {
 public:
  explicit AsyncOther(Queue* q) : q_(q), stream_(&ctx_) {
    q_->generic->RequestCall(&ctx_, &stream_, q_->cq.get(), q_->cq.get(), this);
  }

  void Done(bool ok) override {
    if (!ok || answered_ || q_->stopping) return delete this;
    new AsyncOther(q_);
    answered_ = true;
    if (ctx_.method() != "/grpc.health.v1.Health/Check") {
      return stream_.Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ctx_.method()), this);
    }
    // HealthCheckResponse{status: SERVING}: field 1, varint 1. The request (a service name) is
    // not read: every name is serving.
    static const grpc::Slice kServing("\x08\x01", 2);
    grpc::Slice slice = kServing;
    grpc::ByteBuffer serving(&slice, 1);
    stream_.WriteAndFinish(serving, grpc::WriteOptions(), grpc::Status::OK, this);
  }

 private:
  Queue* q_;
  grpc::GenericServerContext ctx_;
  grpc::GenericServerAsyncReaderWriter stream_;
  bool answered_ = false;
};

void PollQueue(Queue* q) {
  using S = AsyncCrypto;
  // One request posted per method (16 measured no cheaper with 32 unary calls in flight).
  new AsyncUnary<v1::KeyGenRequest, v1::KeyGenResponse>(q, &S::RequestKeyGen);
  new AsyncUnary<v1::EncapsRequest, v1::EncapsResponse>(q, &S::RequestEncaps);
  new AsyncUnary<v1::DecapsRequest, v1::DecapsResponse>(q, &S::RequestDecaps);
  new AsyncUnary<v1::SignRequest, v1::SignResponse>(q, &S::RequestSign);
  new AsyncUnary<v1::VerifyRequest, v1::VerifyResponse>(q, &S::RequestVerify);
  new AsyncUnary<v1::HashRequest, v1::HashResponse>(q, &S::RequestHash);
  new AsyncUnary<v1::BatchRequest, v1::BatchResponse>(q, &S::RequestBatch);
  new AsyncStream(q);
  new AsyncOther(q);
  void* tag = nullptr;
  bool ok = false;
  while (q->cq->Next(&tag, &ok)) static_cast<Tag*>(tag)->Done(ok);
}

// glibc returns a thread arena's free top to the kernel as soon as it exceeds the trim threshold,
// and serves every block above the mmap threshold (128 KiB at first) by mmap: a 220 KiB Batch then
// costs fresh page faults on every call (measured: ~1 ms of the ~1.2 ms per Batch of 64 ML-KEM-768
// decapsulations on this VM). Keeping freed memory mapped removes that; `--malloc default` keeps
// glibc's behaviour, the one pqcd runs with.
void TuneMalloc() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // the largest glibc accepts on 64-bit
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

bool IsLoopback(const std::string& hostport) {
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string host = hostport.substr(0, colon);
  return host == "localhost" || host == "[::1]" || host.starts_with("127.");
}

}  // namespace
}  // namespace pqcd::bench

int main(int argc, char** argv) {
  using namespace pqcd::bench;
  // As in pqcd: no absl::Mutex deadlock detection (Debian's Abseil enables it, and gRPC locks absl
  // mutexes on every call), so that the floor is not raised by a debugging aid the daemon avoids.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  std::string api = "async", listen = "127.0.0.1:50151", unix_path, malloc_mode = "tuned";
  int threads = 1;
  CLI::App app{"grpc_floor: a pqc.v1.Crypto server answering fixed bytes (no crypto)",
               "grpc_floor"};
  app.add_option("--api", api, "gRPC server API")
      ->check(CLI::IsMember({"async", "callback"}))
      ->capture_default_str();
  app.add_option("--listen", listen, "loopback HOST:PORT (port 0: any free one), or none")
      ->capture_default_str();
  app.add_option("--unix", unix_path, "also listen on this Unix socket");
  app.add_option("--threads", threads, "--api async: completion queues, one polling thread each")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--malloc", malloc_mode, "tuned: keep freed memory mapped (see TuneMalloc)")
      ->check(CLI::IsMember({"tuned", "default"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (malloc_mode == "tuned") TuneMalloc();
  if (listen == "none") listen.clear();
  if (listen.empty() ? unix_path.empty() : !IsLoopback(listen)) {
    std::fprintf(stderr,
                 "grpc_floor: --listen must be a loopback HOST:PORT, or none with --unix\n");
    return 2;
  }

  // SIGINT/SIGTERM are blocked in every thread (gRPC's inherit this mask) and taken by sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // See AsyncOther for why the async server answers health checks itself.
  grpc::EnableDefaultHealthCheckService(api == "callback");
  grpc::ServerBuilder builder;
  int port = 0;
  if (!listen.empty()) builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  if (!unix_path.empty()) {
    ::unlink(unix_path.c_str());  // a stale socket of an earlier run
    builder.AddListeningPort("unix:" + unix_path, grpc::InsecureServerCredentials());
  }
  CallbackCrypto callback_service;
  AsyncCrypto async_service;
  grpc::AsyncGenericService generic_service;
  std::vector<std::unique_ptr<Queue>> queues;
  if (api == "callback") {
    builder.RegisterService(&callback_service);
  } else {
    builder.RegisterService(&async_service);
    builder.RegisterAsyncGenericService(&generic_service);
    for (int i = 0; i < threads; ++i) {
      auto q = std::make_unique<Queue>();
      q->service = &async_service;
      q->generic = &generic_service;
      q->cq = builder.AddCompletionQueue();
      queues.push_back(std::move(q));
    }
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || (!listen.empty() && port == 0)) {
    std::fprintf(stderr, "grpc_floor: cannot listen on %s %s\n", listen.c_str(), unix_path.c_str());
    return 1;
  }
  if (auto* health = server->GetHealthCheckService()) health->SetServingStatus(true);
  for (auto& q : queues) q->thread = std::thread(PollQueue, q.get());

  std::string where;
  if (!listen.empty()) where = listen.substr(0, listen.rfind(':')) + ":" + std::to_string(port);
  if (!unix_path.empty()) where += (where.empty() ? "unix:" : " unix:") + unix_path;
  if (api == "async")
    api += ", " + std::to_string(threads) + (threads == 1 ? " CQ thread" : " CQ threads");
  std::printf("grpc_floor: listening on %s (api %s, malloc %s)\n", where.c_str(), api.c_str(),
              malloc_mode.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  // Calls still open after a short grace are cancelled; async calls finish on their CQs meanwhile.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  // Each CQ is shut down by its own thread (see Queue), woken by an alarm that fires at once.
  for (auto& q : queues) q->stop_alarm.Set(q->cq.get(), gpr_now(GPR_CLOCK_MONOTONIC), q.get());
  for (auto& q : queues) q->thread.join();
  if (!unix_path.empty()) ::unlink(unix_path.c_str());
  return 0;
}
