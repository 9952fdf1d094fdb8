#include "pqcd/server/crypto_service.h"

#include <deque>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "ops.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/server/algorithms.h"
#include "wipe.h"

namespace pqcd::server {
namespace {

const grpc::Status kDraining(grpc::StatusCode::UNAVAILABLE, "pqcd is draining (shutting down)");

}  // namespace

template <class Req, class Resp, class Prepare>
grpc::ServerUnaryReactor* CryptoService::Unary(const char* rpc,
                                               grpc::CallbackServerContext* context,
                                               const Req* request, Resp* response, Prepare prepare,
                                               bool secrets) {
  // Calls that carry private keys, seeds or shared secrets get a reactor that wipes the messages
  // when gRPC is done with them (wipe.h); Verify and Hash carry none.
  grpc::ServerUnaryReactor* reactor =
      secrets ? new WipingUnaryReactor(request, response) : context->DefaultReactor();
  auto scope = std::make_unique<RequestScope>(ctx_, rpc);
  scope->set_algorithm(AlgorithmLabel(request->algorithm()));
  if (ctx_->draining.load()) {
    scope->Done(kDraining.error_code());
    reactor->Finish(kDraining);
    return reactor;
  }
  const Caller caller = IdentifyCaller(*context, ctx_->identity_policy);
  auto st = std::make_unique<OpState>();
  absl::Status s = prepare(ctx_, caller, *request, response, st.get());
  if (!s.ok()) {
    grpc::Status g = ToGrpc(s);
    scope->Done(g.error_code());
    reactor->Finish(g);
    return reactor;
  }
  OpState* raw = st.release();
  raw->done = [reactor, raw, scope = std::move(scope)](absl::Status status) {
    grpc::Status g = ToGrpc(status);
    scope->Done(g.error_code());
    delete raw;  // `done` was moved out of *raw before this call
    reactor->Finish(g);
  };
  raw->Submit(context->deadline());
  return reactor;
}

grpc::ServerUnaryReactor* CryptoService::KeyGen(grpc::CallbackServerContext* context,
                                                const pqc::v1::KeyGenRequest* request,
                                                pqc::v1::KeyGenResponse* response) {
  return Unary("KeyGen", context, request, response, PrepareKeyGen, /*secrets=*/true);
}
grpc::ServerUnaryReactor* CryptoService::Encaps(grpc::CallbackServerContext* context,
                                                const pqc::v1::EncapsRequest* request,
                                                pqc::v1::EncapsResponse* response) {
  return Unary("Encaps", context, request, response, PrepareEncaps, /*secrets=*/true);
}
grpc::ServerUnaryReactor* CryptoService::Decaps(grpc::CallbackServerContext* context,
                                                const pqc::v1::DecapsRequest* request,
                                                pqc::v1::DecapsResponse* response) {
  return Unary("Decaps", context, request, response, PrepareDecaps, /*secrets=*/true);
}
grpc::ServerUnaryReactor* CryptoService::Sign(grpc::CallbackServerContext* context,
                                              const pqc::v1::SignRequest* request,
                                              pqc::v1::SignResponse* response) {
  return Unary("Sign", context, request, response, PrepareSign, /*secrets=*/true);
}
grpc::ServerUnaryReactor* CryptoService::Verify(grpc::CallbackServerContext* context,
                                                const pqc::v1::VerifyRequest* request,
                                                pqc::v1::VerifyResponse* response) {
  return Unary("Verify", context, request, response, PrepareVerify, /*secrets=*/false);
}
grpc::ServerUnaryReactor* CryptoService::Hash(grpc::CallbackServerContext* context,
                                              const pqc::v1::HashRequest* request,
                                              pqc::v1::HashResponse* response) {
  return Unary("Hash", context, request, response, PrepareHash, /*secrets=*/false);
}

// ---- Batch -------------------------------------------------------------------------------------

grpc::ServerUnaryReactor* CryptoService::Batch(grpc::CallbackServerContext* context,
                                               const pqc::v1::BatchRequest* request,
                                               pqc::v1::BatchResponse* response) {
  grpc::ServerUnaryReactor* reactor = new WipingUnaryReactor(request, response);
  auto scope = std::make_shared<RequestScope>(ctx_, "Batch");
  scope->set_algorithm("mixed");
  if (ctx_->draining.load()) {
    scope->Done(kDraining.error_code());
    reactor->Finish(kDraining);
    return reactor;
  }
  const int n = request->operations_size();
  if (static_cast<uint32_t>(n) > ctx_->config->max_batch_items) {
    grpc::Status g(grpc::StatusCode::INVALID_ARGUMENT,
                   absl::StrCat("operations: at most ", ctx_->config->max_batch_items,
                                " per Batch (--max-batch-items), got ", n));
    scope->Done(g.error_code());
    reactor->Finish(g);
    return reactor;
  }
  const Caller caller = IdentifyCaller(*context, ctx_->identity_policy);
  for (int i = 0; i < n; ++i) response->add_results();

  // remaining = submitted ops + 1 guard released after the loop.
  struct BatchCall {
    std::atomic<int> remaining{1};
    std::shared_ptr<RequestScope> scope;
    grpc::ServerUnaryReactor* reactor;
    void Release() {
      if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        scope->Done(grpc::StatusCode::OK);
        auto* r = reactor;
        delete this;
        r->Finish(grpc::Status::OK);
      }
    }
  };
  auto* call = new BatchCall;
  call->scope = scope;
  call->reactor = reactor;
  std::vector<OpState*> ready;
  ready.reserve(n);
  for (int i = 0; i < n; ++i) {
    pqc::v1::OperationResult* result = response->mutable_results(i);
    auto st = std::make_unique<OpState>();
    absl::Status s = PrepareOperation(ctx_, caller, request->operations(i), result, st.get());
    if (!s.ok()) {
      SetResultStatus(result, s);
      continue;
    }
    OpState* raw = st.release();
    raw->done = [raw, result, call](absl::Status status) {
      SetResultStatus(result, status);
      delete raw;
      call->Release();
    };
    ready.push_back(raw);
  }
  call->remaining.fetch_add(static_cast<int>(ready.size()), std::memory_order_relaxed);
  const auto deadline = context->deadline();
  for (OpState* st : ready) st->Submit(deadline);
  call->Release();
  return reactor;
}

// ---- HashStream --------------------------------------------------------------------------------

namespace {

class HashStreamReactor final : public grpc::ServerReadReactor<pqc::v1::HashStreamRequest> {
 public:
  HashStreamReactor(ServiceContext* ctx, pqc::v1::HashResponse* response)
      : ctx_(ctx), response_(response), scope_(ctx, "HashStream") {
    if (ctx_->draining.load()) {
      FinishWith(kDraining);
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client finished sending (or the call broke)
      if (!hasher_) {
        FinishWith(
            grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                         "algorithm: the first HashStreamRequest must name a hash algorithm"));
        return;
      }
      ctx_->aux->Post([this] {
        std::string* digest = response_->mutable_digest();
        digest->resize(out_len_);
        absl::Status s = hasher_->Finish(
            kernels::MutBytes(reinterpret_cast<uint8_t*>(digest->data()), digest->size()));
        FinishWith(ToGrpc(s));
      });
      return;
    }
    if (!hasher_) {
      auto info = LookupAlgorithm(request_.algorithm());
      if (!info || info->family != Family::kHash) {
        FinishWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                absl::StrCat("algorithm: HashStream needs a hash algorithm, got ",
                                             AlgorithmLabel(request_.algorithm()))));
        return;
      }
      scope_.set_algorithm(std::string(info->name));
      algorithm_ = request_.algorithm();
      out_len_ = kernels::HashDigestBytes(info->hash);
      if (kernels::HashIsXof(info->hash)) {
        if (request_.output_length() > (1u << 20)) {
          FinishWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                  "output_length: at most 1048576 bytes"));
          return;
        }
        if (request_.output_length() != 0) out_len_ = request_.output_length();
      } else if (request_.output_length() != 0 && request_.output_length() != out_len_) {
        FinishWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                absl::StrCat("output_length: ", info->name, " has a fixed ",
                                             out_len_, "-byte digest")));
        return;
      }
      auto h = kernels::Hasher::Create(info->hash);
      if (!h.ok()) {
        FinishWith(ToGrpc(h.status()));
        return;
      }
      hasher_.emplace(std::move(*h));
    } else if (request_.algorithm() != pqc::v1::ALGORITHM_UNSPECIFIED &&
               request_.algorithm() != algorithm_) {
      FinishWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              "algorithm: must not change within a HashStream"));
      return;
    }
    chunk_.clear();
    chunk_.swap(*request_.mutable_data());
    if (chunk_.empty()) {
      StartRead(&request_);
      return;
    }
    ctx_->aux->Post([this] {
      hasher_->Update(
          kernels::Bytes(reinterpret_cast<const uint8_t*>(chunk_.data()), chunk_.size()));
      StartRead(&request_);
    });
  }

  void OnDone() override { delete this; }

 private:
  void FinishWith(const grpc::Status& status) {
    scope_.Done(status.error_code());
    Finish(status);
  }

  ServiceContext* ctx_;
  pqc::v1::HashResponse* response_;
  RequestScope scope_;
  pqc::v1::HashStreamRequest request_;
  std::string chunk_;
  int algorithm_ = 0;
  size_t out_len_ = 0;
  std::optional<kernels::Hasher> hasher_;
};

}  // namespace

grpc::ServerReadReactor<pqc::v1::HashStreamRequest>* CryptoService::HashStream(
    grpc::CallbackServerContext* /*context*/, pqc::v1::HashResponse* response) {
  return new HashStreamReactor(ctx_, response);
}

// ---- Stream ------------------------------------------------------------------------------------

namespace {

class StreamReactor final
    : public grpc::ServerBidiReactor<pqc::v1::StreamRequest, pqc::v1::StreamResponse> {
 public:
  StreamReactor(ServiceContext* ctx, grpc::CallbackServerContext* context)
      : ctx_(ctx),
        context_(context),
        scope_(ctx, "Stream"),
        caller_(IdentifyCaller(*context, ctx->identity_policy)),
        max_inflight_(ctx->config->max_stream_inflight) {
    scope_.set_algorithm("mixed");
    if (ctx_->draining.load()) {
      scope_.Done(kDraining.error_code());
      Finish(kDraining);
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::unique_lock<std::mutex> lock(mu_);
      reads_done_ = true;
      MaybeFinishLocked(lock);
      return;
    }
    auto* item = new Item;
    item->request.Swap(&request_);
    item->response = std::make_unique<pqc::v1::StreamResponse>();
    item->response->set_id(item->request.id());
    pqc::v1::OperationResult* result = item->response->mutable_result();
    absl::Status s;
    if (ctx_->draining.load()) {
      s = absl::UnavailableError("pqcd is draining (shutting down)");
    } else {
      s = PrepareOperation(ctx_, caller_, item->request.operation(), result, &item->op);
    }
    bool read_more;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++outstanding_;
      read_more = outstanding_ < max_inflight_;
      if (!read_more) read_paused_ = true;
    }
    if (!s.ok()) {
      SetResultStatus(result, s);
      ItemDone(item);
    } else {
      item->op.done = [this, item](absl::Status status) {
        SetResultStatus(item->response->mutable_result(), status);
        ItemDone(item);
      };
      item->op.Submit(context_->deadline());
    }
    if (read_more) StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    WipeMessage(*writes_.front());  // serialized and sent: wipe secrets before freeing it
    writes_.pop_front();
    if (!ok) {
      broken_ = true;
      for (auto& unsent : writes_) WipeMessage(*unsent);
      writes_.clear();
    }
    if (!writes_.empty()) {
      pqc::v1::StreamResponse* next = writes_.front().get();
      lock.unlock();
      StartWrite(next);
      return;
    }
    writing_ = false;
    MaybeFinishLocked(lock);
  }

  void OnDone() override { delete this; }

 private:
  struct Item {
    pqc::v1::StreamRequest request;
    std::unique_ptr<pqc::v1::StreamResponse> response;
    OpState op;
  };

  // Completion of one item (any thread): queue its answer, resume reading if paused.
  void ItemDone(Item* item) {
    std::unique_ptr<pqc::v1::StreamResponse> response = std::move(item->response);
    WipeMessage(item->request);  // may carry a private key
    delete item;                 // op.done was moved out before this call
    std::unique_lock<std::mutex> lock(mu_);
    --outstanding_;
    pqc::v1::StreamResponse* to_write = nullptr;
    if (!broken_) {
      writes_.push_back(std::move(response));
      if (!writing_) {
        writing_ = true;
        to_write = writes_.front().get();
      }
    }
    bool resume = read_paused_ && !reads_done_ && outstanding_ < max_inflight_;
    if (resume) read_paused_ = false;
    if (to_write == nullptr && !resume) {
      MaybeFinishLocked(lock);
      return;
    }
    lock.unlock();
    if (to_write) StartWrite(to_write);
    if (resume) StartRead(&request_);
  }

  void MaybeFinishLocked(std::unique_lock<std::mutex>& lock) {
    if (finished_ || !reads_done_ || outstanding_ > 0 || writing_) return;
    finished_ = true;
    lock.unlock();
    grpc::Status status =
        broken_ ? grpc::Status(grpc::StatusCode::CANCELLED, "stream broken") : grpc::Status::OK;
    scope_.Done(status.error_code());
    Finish(status);
  }

  ServiceContext* ctx_;
  grpc::CallbackServerContext* context_;
  RequestScope scope_;
  const Caller caller_;
  const uint32_t max_inflight_;
  pqc::v1::StreamRequest request_;

  std::mutex mu_;
  std::deque<std::unique_ptr<pqc::v1::StreamResponse>> writes_;
  bool writing_ = false;
  bool reads_done_ = false;
  bool read_paused_ = false;
  bool broken_ = false;
  bool finished_ = false;
  uint32_t outstanding_ = 0;
};

}  // namespace

grpc::ServerBidiReactor<pqc::v1::StreamRequest, pqc::v1::StreamResponse>* CryptoService::Stream(
    grpc::CallbackServerContext* context) {
  return new StreamReactor(ctx_, context);
}

}  // namespace pqcd::server
