// Crypto's unary methods and Batch on the core queues (crypto_calls.h).
//
// Each call is an object whose tags all come back on the core queue it arrived on: the request
// (matched), the done notification (the call ended, or was cancelled) and the Finish. Its handler
// runs on that queue's worker inside CoreQueues::Poll: it validates, resolves held keys and
// submits the call's jobs, which land on the same worker's own queue (Engine::SubmitBurst) and run
// in its next burst together with every other call of the same Poll. The job's completion
// finishes the call, usually on that worker (on a sibling when the job was handed over, on the
// auxiliary runner for a held KeyGen). The object is deleted when both the done and the Finish
// tags are back.
#include <atomic>
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bounds.h"
#include "core_queues.h"
#include "core_reactor.h"
#include "crypto_calls.h"
#include "ops.h"
#include "pqcd/engine/engine.h"
#include "pqcd/server/algorithms.h"
#include "pqcd/server/crypto_service.h"
#include "wipe.h"

namespace pqcd::server {
namespace {

using Service = internal::CryptoServiceBase;

// What every call has besides its messages (CoreUnaryReactor): the in-flight record, the memory
// charge, the unread-answer watch and the wipe of secret-carrying messages. Derived classes post
// the request (Post), handle its arrival (Arrived) and call FinishWith once.
template <class Req, class Resp>
class AsyncCall : public CoreUnaryReactor<Req, Resp> {
 protected:
  using Base = CoreUnaryReactor<Req, Resp>;
  AsyncCall(const CryptoServing& serving, int queue, const char* rpc, bool secrets)
      : Base(serving.queues, queue), serving_(serving), rpc_(rpc), secrets_(secrets) {}

  // The call arrived (on the queue's worker): validate, submit, or finish.
  virtual void Arrived() = 0;
  // Called when the call was cancelled or expired: drop queued jobs.
  virtual void CancelJobs() = 0;

  ServiceContext* ctx() const { return serving_.ctx; }
  RequestScope& scope() { return *scope_; }

  // Charges `bytes` for the caller to the memory account, held until the call is over; false
  // (and the call finished RESOURCE_EXHAUSTED) when the account refuses.
  bool Charge(const std::string& identity, size_t bytes) {
    if (ctx()->memory == nullptr) return true;
    if (absl::Status s = ctx()->memory->Charge(identity, bytes); !s.ok()) {
      FinishWith(ToGrpc(s));
      return false;
    }
    charge_ = MemoryCharge(ctx()->memory, identity, bytes);
    return true;
  }

  // Finishes the call (any thread, once); the answer is watched until the client takes it
  // (--unread-answer-timeout).
  void FinishWith(const grpc::Status& status) {
    finish_code_ = status.error_code();
    if (ctx()->unread != nullptr) ctx()->unread->Watch(&unread_, &this->context_);
    this->Finish(status);
  }

  const CryptoServing serving_;

 private:
  void OnStart() final {
    scope_.emplace(serving_.ctx, rpc_);
    Arrived();
  }
  void OnCancel() final {
    cancel_code_ = CancelCode(this->context_);
    CancelJobs();
  }
  // Nothing refers to the call any more.
  void OnDone() final {
    if (ctx()->unread != nullptr) ctx()->unread->Unwatch(&unread_);
    scope_->Done(cancel_code_ != grpc::StatusCode::OK ? cancel_code_ : finish_code_);
    if (secrets_) {
      WipeMessage(this->request_);
      WipeMessage(this->response_);
    }
    delete this;
  }

  const char* rpc_;
  const bool secrets_;
  std::optional<RequestScope> scope_;
  MemoryCharge charge_;
  UnreadAnswers::Entry unread_;
  grpc::StatusCode finish_code_ = grpc::StatusCode::OK;  // written before Finish
  grpc::StatusCode cancel_code_ = grpc::StatusCode::OK;  // the queue's worker only
};

// ---- Unary -------------------------------------------------------------------------------------

template <class Req, class Resp>
struct UnaryMethod {
  using Request = Req;
  using Response = Resp;
  using RequestFn = void (Service::*)(grpc::ServerContext*, Req*,
                                      grpc::ServerAsyncResponseWriter<Resp>*,
                                      grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*);
  const char* rpc;
  RequestFn request;
  // Calls that carry private keys, seeds or shared secrets wipe their messages when gRPC is done
  // with them (wipe.h); Verify and Hash carry none.
  bool secrets;
};

template <class Req, class Resp>
class UnaryCall final : public AsyncCall<Req, Resp> {
  using Base = AsyncCall<Req, Resp>;
  using Base::context_, Base::request_, Base::response_, Base::responder_, Base::serving_;
  using Base::ctx, Base::cq, Base::queue, Base::scope, Base::Charge, Base::FinishWith;

 public:
  using Method = UnaryMethod<Req, Resp>;
  static void Post(const CryptoServing& serving, int queue, const Method* method) {
    auto* call = new UnaryCall(serving, queue, method);
    (serving.service->*method->request)(&call->context_, &call->request_, &call->responder_,
                                        call->cq(), call->cq(), static_cast<CqTag*>(call));
  }

 private:
  UnaryCall(const CryptoServing& serving, int queue, const Method* method)
      : Base(serving, queue, method->rpc, method->secrets), method_(method) {}

  void Renew() override { Post(serving_, queue(), method_); }

  void Arrived() override {
    scope().set_algorithm(AlgorithmLabel(request_.algorithm()));
    if (ctx()->draining.load()) {
      FinishWith(DrainingStatus());
      return;
    }
    const Caller caller = IdentifyCaller(context_, ctx()->identity_policy);
    // The request, and the answer twice: the message and gRPC's serialized copy of it.
    if (ctx()->memory != nullptr &&
        !Charge(caller.identity, request_.ByteSizeLong() + 2 * AnswerBytesBound(request_))) {
      return;
    }
    if (absl::Status s = Prepare(ctx(), caller, request_, &response_, &op_); !s.ok()) {
      FinishWith(ToGrpc(s));
      return;
    }
    op_.done = [this](absl::Status status) { FinishWith(ToGrpc(status)); };
    op_.Arm(context_.deadline());
    engine::Job* job = &op_.job;
    ctx()->engine->SubmitBurst(std::span<engine::Job* const>(&job, 1));
  }

  void CancelJobs() override { op_.job.Cancel(); }

  const Method* method_;
  OpState op_;
};

// ---- Batch -------------------------------------------------------------------------------------

class BatchCall final : public AsyncCall<pqc::v1::BatchRequest, pqc::v1::BatchResponse> {
 public:
  static constexpr const char* kRpc = "Batch";
  static void Post(const CryptoServing& serving, int queue) {
    auto* call = new BatchCall(serving, queue);
    serving.service->RequestBatch(&call->context_, &call->request_, &call->responder_, call->cq(),
                                  call->cq(), static_cast<CqTag*>(call));
  }

 private:
  BatchCall(const CryptoServing& serving, int queue)
      : AsyncCall(serving, queue, kRpc, /*secrets=*/true) {}

  void Renew() override { Post(serving_, queue()); }

  void Arrived() override {
    scope().set_algorithm("mixed");
    if (ctx()->draining.load()) {
      FinishWith(DrainingStatus());
      return;
    }
    const Config& config = *ctx()->config;
    const int n = request_.operations_size();
    if (static_cast<uint32_t>(n) > config.max_batch_items) {
      FinishWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              absl::StrCat("operations: at most ", config.max_batch_items,
                                           " per Batch (--max-batch-items), got ", n)));
      return;
    }
    // The answers must fit one response: budgeted before anything is allocated or computed (a
    // small request must not make the daemon build an answer gRPC then refuses to send).
    size_t answer_bytes = 0;
    for (const pqc::v1::Operation& op : request_.operations()) answer_bytes += AnswerBytesBound(op);
    if (answer_bytes > config.max_message_bytes) {
      FinishWith(grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("the Batch's answers would take up to ", answer_bytes,
                       " bytes, more than one response may carry (--max-message-bytes ",
                       config.max_message_bytes, "); send fewer or smaller operations")));
      return;
    }
    const Caller caller = IdentifyCaller(context_, ctx()->identity_policy);
    if (ctx()->memory != nullptr &&
        !Charge(caller.identity, request_.ByteSizeLong() + 2 * answer_bytes)) {
      return;
    }
    ops_ = std::make_unique<OpState[]>(static_cast<size_t>(n));
    auto* results = response_.mutable_results();
    results->Reserve(n);
    for (int i = 0; i < n; ++i) results->Add();

    // remaining = submitted ops + 1 guard released after the submit loop, so that the call
    // cannot finish while items are still being submitted. A Batch is admitted to the engine as a
    // whole or refused as a whole (Engine::SubmitBurst): when every submitted item was refused
    // for a full queue, the call fails RESOURCE_EXHAUSTED.
    int ready = 0;
    GivenKeys given;  // a private key given again is prepared once for the rest of its run
    for (int i = 0; i < n; ++i) {
      pqc::v1::OperationResult* result = response_.mutable_results(i);
      OpState* st = &ops_[static_cast<size_t>(i)];
      absl::Status s = PrepareOperation(ctx(), caller, request_.operations(i), result, st, &given);
      if (!s.ok()) {
        SetResultStatus(result, s);
        continue;
      }
      st->done = [this, result](absl::Status status) {
        if (absl::IsResourceExhausted(status)) {
          std::lock_guard<std::mutex> lock(refusal_mu_);
          if (refusal_.empty()) refusal_ = std::string(status.message());
          queue_full_.fetch_add(1, std::memory_order_relaxed);
        }
        SetResultStatus(result, status);
        ItemDone();
      };
      ++ready;
    }
    remaining_.fetch_add(ready, std::memory_order_relaxed);
    submitted_ = ready;
    if (ready > 0) {
      const auto deadline = context_.deadline();
      std::vector<engine::Job*> jobs;
      jobs.reserve(static_cast<size_t>(ready));
      for (int i = 0; i < n; ++i) {
        OpState* st = &ops_[static_cast<size_t>(i)];
        if (!st->done) continue;  // failed validation
        st->Arm(deadline);
        jobs.push_back(&st->job);
      }
      ctx()->engine->SubmitBurst(jobs);
    }
    ItemDone();
  }

  // One item done (or the submit loop's guard): the last one finishes the call.
  void ItemDone() {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    const bool refused =
        submitted_ > 0 && queue_full_.load(std::memory_order_relaxed) == submitted_;
    if (!refused) {
      FinishWith(grpc::Status::OK);
      return;
    }
    // Refused as a whole: by the node's queue (its capacity in jobs) or by the slow pool (the
    // estimated cost of its slow jobs); the engine's message says which.
    std::string why;
    {
      std::lock_guard<std::mutex> lock(refusal_mu_);
      why = refusal_;
    }
    FinishWith(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        why.find("slow") != std::string::npos
            ? absl::StrCat("no room for the Batch's ", submitted_, " operations: ", why)
            : absl::StrCat("engine queue full: no room for the Batch's ", submitted_,
                           " operations (--queue-capacity); retry later or send smaller "
                           "Batches")));
  }

  void CancelJobs() override {
    if (ops_ == nullptr) return;
    for (int i = 0; i < request_.operations_size(); ++i) ops_[static_cast<size_t>(i)].job.Cancel();
  }

  std::unique_ptr<OpState[]> ops_;
  std::atomic<int> remaining_{1};
  std::atomic<int> queue_full_{0};
  std::mutex refusal_mu_;
  std::string refusal_;  // the first RESOURCE_EXHAUSTED item's message
  int submitted_ = 0;
};

// The unary methods: one row each, and the row's line in kUnaryMethods.
namespace v1 = pqc::v1;
constexpr UnaryMethod<v1::KeyGenRequest, v1::KeyGenResponse> kKeyGen{"KeyGen",
                                                                     &Service::RequestKeyGen, true};
constexpr UnaryMethod<v1::EncapsRequest, v1::EncapsResponse> kEncaps{"Encaps",
                                                                     &Service::RequestEncaps, true};
constexpr UnaryMethod<v1::DecapsRequest, v1::DecapsResponse> kDecaps{"Decaps",
                                                                     &Service::RequestDecaps, true};
constexpr UnaryMethod<v1::SignRequest, v1::SignResponse> kSign{"Sign", &Service::RequestSign, true};
constexpr UnaryMethod<v1::VerifyRequest, v1::VerifyResponse> kVerify{
    "Verify", &Service::RequestVerify, false};
constexpr UnaryMethod<v1::HashRequest, v1::HashResponse> kHash{"Hash", &Service::RequestHash,
                                                               false};

// Posts the first call of the row kMethod.
template <const auto& kMethod>
void PostUnary(const CryptoServing& serving, int queue) {
  using Method = std::remove_cvref_t<decltype(kMethod)>;
  UnaryCall<typename Method::Request, typename Method::Response>::Post(serving, queue, &kMethod);
}
template <const auto& kMethod>
constexpr CryptoMethod Served() {
  return {kMethod.rpc, PostUnary<kMethod>};
}

constexpr CryptoMethod kUnaryMethods[] = {
    Served<kKeyGen>(),
    Served<kEncaps>(),
    Served<kDecaps>(),
    Served<kSign>(),
    Served<kVerify>(),
    Served<kHash>(),
    {BatchCall::kRpc, BatchCall::Post},
};

}  // namespace

std::span<const CryptoMethod> UnaryMethods() {
  return kUnaryMethods;
}

}  // namespace pqcd::server
