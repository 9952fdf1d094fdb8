// pqc.v1.Crypto HashStream on the core queues (crypto_calls.h).
//
// Bounded per call by --max-field-bytes per message, --hash-stream-max-bytes in total,
// --hash-stream-idle between messages and --hash-stream-max-duration overall, and in number by
// --max-hash-streams. The idle and duration limits are enforced by HashStreamWatch, a thread that
// looks at every open HashStream a few times per second and finishes the expired ones.
#include <algorithm>
#include <mutex>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "bounds.h"
#include "core_reactor.h"
#include "crypto_calls.h"
#include "ops.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/server/algorithms.h"

namespace pqcd::server {

namespace {

using SteadyClock = std::chrono::steady_clock;
const grpc::Status& kDraining = DrainingStatus();

}  // namespace

HashStreamWatch::HashStreamWatch() : thread_([this] { Loop(); }) {}

HashStreamWatch::~HashStreamWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HashStreamWatch::Add(Watched* w) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.push_back(w);
  if (open_.size() == 1) cv_.notify_all();  // the watch sleeps while nothing is open
}

void HashStreamWatch::Remove(Watched* w) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(std::find(open_.begin(), open_.end(), w));
}

void HashStreamWatch::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    // No wake-ups while no HashStream is open; ten per second while some are.
    cv_.wait(lock, [this] { return stop_ || !open_.empty(); });
    cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; });
    const auto now = SteadyClock::now();
    for (Watched* w : open_) w->Check(now);
  }
}

namespace {

class HashStreamReactor final
    : public CoreReadReactor<pqc::v1::HashStreamRequest, pqc::v1::HashResponse>,
      public HashStreamWatch::Watched {
 public:
  static constexpr const char* kRpc = "HashStream";
  static void Post(const CryptoServing& serving, int queue) {
    auto* call = new HashStreamReactor(serving, queue);
    serving.service->RequestHashStream(&call->context_, &call->reader_, call->cq(), call->cq(),
                                       static_cast<CqTag*>(call));
  }

  void Renew() override { Post(serving_, queue()); }

  void OnStart() override {
    scope_.emplace(ctx_, kRpc);
    start_ = SteadyClock::now();
    last_message_ = start_;
    if (ctx_->draining.load()) {
      FinishWith(kDraining);
      return;
    }
    identity_ = IdentifyCaller(context_, ctx_->identity_policy).identity;
    // In total and per identity (--max-hash-streams, --max-hash-streams-per-identity).
    if (ctx_->hash_streams != nullptr) {
      if (absl::Status s = ctx_->hash_streams->Acquire(identity_); !s.ok()) {
        FinishWith(ToGrpc(s));
        return;
      }
      slot_ = true;
    }
    watched_ = true;
    watch_->Add(this);
    ReadNext();
  }

  void OnReadDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_pending_ = false;
      if (finished_) return;  // ended by the watch (or an error) while the read was pending
      last_message_ = SteadyClock::now();
    }
    if (!ok) {  // the client finished sending (or the call broke)
      if (cancel_code_.load() != grpc::StatusCode::OK) {
        FinishWith(grpc::Status(grpc::StatusCode::CANCELLED, "HashStream cancelled"));
        return;
      }
      if (!hasher_) {
        FinishWith(
            grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                         "algorithm: the first HashStreamRequest must name a hash algorithm"));
        return;
      }
      ctx_->aux->Post([this] {
        std::string* digest = response_.mutable_digest();
        digest->resize(out_len_);
        absl::Status s = hasher_->Finish(
            kernels::MutBytes(reinterpret_cast<uint8_t*>(digest->data()), digest->size()));
        if (s.ok() && ctx_->metrics != nullptr) ctx_->metrics->CountStreamedHash(algorithm_name_);
        FinishWith(ToGrpc(s));
      });
      return;
    }
    if (request_.data().size() > ctx_->config->max_field_bytes) {
      FinishWith(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       absl::StrCat("data: at most ", ctx_->config->max_field_bytes,
                                    " bytes per HashStream message (--max-field-bytes), got ",
                                    request_.data().size())));
      return;
    }
    total_bytes_ += request_.data().size();
    if (total_bytes_ > ctx_->config->hash_stream_max_bytes) {
      FinishWith(grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("data: a HashStream may hash at most ", ctx_->config->hash_stream_max_bytes,
                       " bytes (--hash-stream-max-bytes)")));
      return;
    }
    if (!hasher_) {
      scope_->set_algorithm(AlgorithmLabel(request_.algorithm()));
      auto info = RequireFamily(request_.algorithm(), Family::kHash, "HashStream");
      if (!info.ok()) {
        FinishWith(ToGrpc(info.status()));
        return;
      }
      scope_->set_algorithm(Name(**info));
      algorithm_ = request_.algorithm();
      algorithm_name_ = Name(**info);
      auto out_len =
          HashOutputLength(**info, request_.output_length(), ctx_->config->max_output_bytes);
      if (!out_len.ok()) {
        FinishWith(ToGrpc(out_len.status()));
        return;
      }
      out_len_ = *out_len;
      auto h = kernels::Hasher::Create(kernels::AsHash((*info)->id()));
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
    } else if (request_.output_length() != 0 && request_.output_length() != out_len_) {
      // Like the algorithm, the output length is fixed by the first message; a later message
      // may repeat it or leave it 0.
      FinishWith(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("output_length: must not change within a HashStream (", out_len_,
                       " from the first message, got ", request_.output_length(), ")")));
      return;
    }
    chunk_.clear();
    chunk_.swap(*request_.mutable_data());
    if (chunk_.empty()) {
      ReadNext();
      return;
    }
    // The message is held until it is hashed: charged to the memory account meanwhile.
    if (ctx_->memory != nullptr) {
      if (absl::Status s = ctx_->memory->Charge(identity_, chunk_.size()); !s.ok()) {
        FinishWith(ToGrpc(s));
        return;
      }
      chunk_charge_ = MemoryCharge(ctx_->memory, identity_, chunk_.size());
    }
    ctx_->aux->Post([this] {
      if (cancel_code_.load() == grpc::StatusCode::OK) {  // nobody waits for a cancelled digest
        hasher_->Update(
            kernels::Bytes(reinterpret_cast<const uint8_t*>(chunk_.data()), chunk_.size()));
      }
      chunk_charge_.Reset();
      ReadNext();
    });
  }

  // Cancelled or expired (gRPC cancels at the deadline): no more updates, and the request is
  // recorded with what the client got.
  void OnCancel() override { cancel_code_.store(CancelCode(context_)); }

  void OnDone() override {
    if (ctx_->unread != nullptr) ctx_->unread->Unwatch(&unread_);
    if (watched_) watch_->Remove(this);
    if (slot_) ctx_->hash_streams->Release(identity_);
    const grpc::StatusCode cancelled = cancel_code_.load();
    scope_->Done(cancelled != grpc::StatusCode::OK ? cancelled : finish_code_);
    delete this;
  }

  // The watch's look (its thread, under its lock, so the reactor is alive): ends the call when it
  // idled or lasted too long. A read in progress is ended by Finish; while a chunk is being hashed
  // (no read pending), ReadNext ends it afterwards.
  void Check(SteadyClock::time_point now) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    if (!expired_) {
      const auto idle = std::chrono::duration<double>(now - last_message_).count();
      const auto age = std::chrono::duration<double>(now - start_).count();
      if (age > ctx_->config->hash_stream_max_s) {
        expired_.emplace(
            grpc::StatusCode::DEADLINE_EXCEEDED,
            absl::StrCat("HashStream lasted longer than ", ctx_->config->hash_stream_max_s,
                         " s (--hash-stream-max-duration)"));
      } else if (read_pending_ && idle > ctx_->config->hash_stream_idle_s) {
        expired_.emplace(
            grpc::StatusCode::DEADLINE_EXCEEDED,
            absl::StrCat("HashStream idle for more than ", ctx_->config->hash_stream_idle_s,
                         " s without a message (--hash-stream-idle)"));
      }
    }
    if (expired_ && read_pending_) FinishLocked(*expired_);
  }

 private:
  // Reads the next message unless the call was ended meanwhile.
  void ReadNext() {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    if (expired_) {
      FinishLocked(*expired_);
      return;
    }
    read_pending_ = true;
    last_message_ = SteadyClock::now();  // idle time counts from when the daemon is ready again
    StartRead(&request_);
  }

  void FinishWith(const grpc::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    FinishLocked(status);
  }
  // Callback-API operations never run their reactions inline, so calling gRPC under mu_ is safe.
  void FinishLocked(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    finish_code_ = status.error_code();
    if (ctx_->unread != nullptr) ctx_->unread->Watch(&unread_, &context_);
    Finish(status);
  }

  HashStreamReactor(const CryptoServing& serving, int queue)
      : CoreReadReactor(serving.queues, queue),
        serving_(serving),
        ctx_(serving.ctx),
        watch_(serving.watch) {}

  const CryptoServing serving_;
  ServiceContext* ctx_;
  HashStreamWatch* watch_;
  std::optional<RequestScope> scope_;  // from the call's arrival
  bool watched_ = false;
  bool slot_ = false;          // holds one of ctx_->hash_streams
  std::string identity_;       // the caller's, for its slot and its memory charges
  MemoryCharge chunk_charge_;  // chunk_ in the memory account until it is hashed
  UnreadAnswers::Entry unread_;
  grpc::StatusCode finish_code_ = grpc::StatusCode::OK;
  std::atomic<grpc::StatusCode> cancel_code_{grpc::StatusCode::OK};
  pqc::v1::HashStreamRequest request_;
  std::string chunk_;
  int algorithm_ = 0;
  std::string algorithm_name_;
  size_t out_len_ = 0;
  uint64_t total_bytes_ = 0;
  std::optional<kernels::Hasher> hasher_;

  std::mutex mu_;
  bool finished_ = false;      // Finish was called
  bool read_pending_ = false;  // a StartRead has not completed yet
  std::optional<grpc::Status> expired_;
  SteadyClock::time_point start_;  // the call's arrival
  SteadyClock::time_point last_message_;
};

}  // namespace

CryptoMethod HashStreamMethod() {
  return {HashStreamReactor::kRpc, HashStreamReactor::Post};
}

}  // namespace pqcd::server
