// pqc.v1.Crypto Stream on the core queues (crypto_calls.h).
//
// One reactor per Stream call. A received message (single form: one operation; packed form: up to
// --max-batch-items) becomes one Chunk: the message itself, which owns the operations' input bytes,
// and one Slot per operation with its engine job and its result. All of a message's jobs are
// submitted from the read reaction, so the engine sees them as one burst. An answer is written by
// whoever holds the write token: the write reaction, or an alarm on the Stream's core queue that
// the first completion while no write was outstanding sets, and that fires after the worker's
// burst. It borrows the done results into the reusable out_ message without copying them, and one
// packed answer carries every packed item that is done. An item is
// in flight from its read until its answer was written, so a client that does not read stops the
// daemon reading from it after --max-stream-inflight items.
#include <algorithm>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bounds.h"
#include "core_reactor.h"
#include "crypto_calls.h"
#include "grpcpp/alarm.h"
#include "ops.h"
#include "pqcd/engine/engine.h"
#include "pqcd/server/algorithms.h"
#include "wipe.h"

namespace pqcd::server {

namespace {

const grpc::Status& kDraining = DrainingStatus();

class StreamReactor final
    : public CoreBidiReactor<pqc::v1::StreamRequest, pqc::v1::StreamResponse> {
 public:
  static constexpr const char* kRpc = "Stream";
  static void Post(const CryptoServing& serving, int queue) {
    auto* call = new StreamReactor(serving, queue);
    serving.service->RequestStream(&call->context_, &call->stream_, call->cq(), call->cq(),
                                   static_cast<CqTag*>(call));
  }

  void Renew() override { Post(serving_, queue()); }

  void OnStart() override {
    scope_.emplace(ctx_, kRpc);
    caller_ = IdentifyCaller(context_, ctx_->identity_policy);
    scope_->set_algorithm("mixed");
    if (ctx_->draining.load()) {
      finished_ = true;
      scope_->Done(kDraining.error_code());
      Finish(kDraining);
      return;
    }
    // In total and per identity (--max-streams, --max-streams-per-identity).
    if (ctx_->streams != nullptr) {
      if (absl::Status s = ctx_->streams->Acquire(caller_.identity); !s.ok()) {
        finished_ = true;
        final_code_ = static_cast<grpc::StatusCode>(s.code());
        scope_->Done(final_code_);
        Finish(ToGrpc(s));
        return;
      }
      slot_ = true;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // half-close by the client, or the call broke
      std::unique_lock<std::mutex> lock(mu_);
      reads_done_ = true;
      MaybeFinishLocked(lock);
      return;
    }
    const int packed_items = request_.items_size();
    if (static_cast<uint32_t>(packed_items) > max_items_) {
      FailStream(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("items: at most ", max_items_,
                       " operations per Stream message (--max-batch-items), got ", packed_items)));
      WipeMessage(request_);
      return;
    }
    auto* chunk = new Chunk;
    chunk->bytes = request_.ByteSizeLong();
    chunk->request.Swap(&request_);
    const pqc::v1::StreamRequest& req = chunk->request;
    // What the message's answers may take: budgeted with its input bytes against --max-stream-bytes
    // (reading pauses at half of it); a message whose answers alone exceed half is refused.
    size_t answer_bytes = 0;
    if (packed_items > 0) {
      for (const pqc::v1::StreamItem& item : req.items()) {
        answer_bytes += AnswerBytesBound(item.operation()) + 16;
      }
    } else {
      answer_bytes = AnswerBytesBound(req.operation());
    }
    // Refused item by item: answers alone over the Stream's budget, or past the memory account.
    absl::Status refusal;
    if (answer_bytes > max_held_bytes_) {
      refusal = absl::ResourceExhaustedError(
          absl::StrCat("the message's answers would take up to ", answer_bytes,
                       " bytes, more than a Stream may hold (half of --max-stream-bytes, ",
                       max_held_bytes_, "); send fewer or smaller operations per message"));
    } else if (ctx_->memory != nullptr) {
      refusal = ctx_->memory->Charge(caller_.identity, chunk->bytes + answer_bytes);
      if (refusal.ok()) {
        chunk->charge = MemoryCharge(ctx_->memory, caller_.identity, chunk->bytes + answer_bytes);
      }
    }
    chunk->bytes +=
        refusal.ok() ? answer_bytes : 64 * static_cast<size_t>(std::max(packed_items, 1));
    // A packed message that also sets `operation` gets one extra single-form slot for the error.
    const bool stray_single = packed_items > 0 && req.has_operation();
    chunk->n = packed_items > 0 ? static_cast<size_t>(packed_items) + (stray_single ? 1 : 0) : 1;
    chunk->slots = std::make_unique<Slot[]>(chunk->n);
    chunk->unwritten = chunk->n;

    // Prepare every operation; the ones that fail validation are answered without the engine.
    const bool draining = ctx_->draining.load();
    std::vector<Slot*> failed;  // allocates only when an item fails
    auto fail = [&](Slot* slot, const absl::Status& st) {
      SetResultStatus(&slot->result, st);
      failed.push_back(slot);
    };
    size_t nsubmit = 0;
    GivenKeys given;  // a private key given again is prepared once for the rest of its run
    for (size_t i = 0; i < chunk->n; ++i) {
      Slot* slot = &chunk->slots[i];
      slot->chunk = chunk;
      const pqc::v1::Operation* op;
      if (packed_items == 0) {
        slot->id = req.id();
        op = &req.operation();
      } else if (i < static_cast<size_t>(packed_items)) {
        slot->packed = true;
        slot->id = req.items(static_cast<int>(i)).id();
        op = &req.items(static_cast<int>(i)).operation();
      } else {
        slot->id = req.id();
        fail(slot, absl::InvalidArgumentError(
                       "operation: set either operation (single form) or items (packed form)"));
        continue;
      }
      absl::Status st =
          draining        ? absl::UnavailableError("pqcd is draining (shutting down)")
          : !refusal.ok() ? refusal
                          : PrepareOperation(ctx_, caller_, *op, &slot->result, &slot->op, &given);
      if (!st.ok()) {
        fail(slot, st);
        continue;
      }
      slot->op.done = [this, slot](absl::Status status) {
        SetResultStatus(&slot->result, status);
        SlotsDone(&slot, 1);
      };
      ++nsubmit;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      chunks_.push_back(chunk);
      chunk->pos = std::prev(chunks_.end());
      outstanding_ += chunk->n;
      held_bytes_ += chunk->bytes;
      if (broken_) {  // cancelled meanwhile: let the engine drop these jobs too
        for (size_t i = 0; i < chunk->n; ++i) chunk->slots[i].op.job.Cancel();
      }
    }
    if (nsubmit > 0) {
      // One burst: the engine queues the message's jobs together or runs them on this thread.
      // Once submitted, the chunk may be answered and freed by another thread.
      const auto deadline = context_.deadline();
      jobs_.clear();
      for (size_t i = 0; i < chunk->n; ++i) {
        Slot& slot = chunk->slots[i];
        if (!slot.op.done) continue;  // failed validation, answered below
        slot.op.Arm(deadline);
        jobs_.push_back(&slot.op.job);
      }
      ctx_->engine->SubmitBurst(jobs_);
    }
    if (!failed.empty()) SlotsDone(failed.data(), failed.size());
    // Read on, or pause until answers are written. Decided only now: a pause set earlier could be
    // lifted by a completion on another thread, whose StartRead would run a second OnReadDone
    // beside this one.
    std::unique_lock<std::mutex> lock(mu_);
    if (outstanding_ < max_inflight_ && held_bytes_ < max_held_bytes_ && !broken_) {
      lock.unlock();
      StartRead(&request_);
      return;
    }
    read_paused_ = true;
    MaybeFinishLocked(lock);  // broken, and every item already answered or dropped
  }

  void OnWriteDone(bool ok) override {
    if (ctx_->unread != nullptr) ctx_->unread->Unwatch(&unread_);
    // This thread holds the write token: out_ and in_write_ are ours until we hand it on.
    ReleaseWritten();
    std::vector<Chunk*> to_free;
    std::unique_lock<std::mutex> lock(mu_);
    for (Slot* slot : in_write_) ForgetSlotLocked(slot, &to_free);
    in_write_.clear();
    if (!ok) BreakLocked(&to_free);
    bool write = !broken_ && !ready_.empty();
    if (write) {
      BuildWriteLocked();
    } else {
      writing_ = false;
    }
    const bool resume = ResumeReadLocked();
    if (!write) MaybeFinishLocked(lock);
    if (lock.owns_lock()) lock.unlock();
    FreeChunks(to_free);
    if (write) Write();
    if (resume) StartRead(&request_);
  }

  void OnCancel() override {
    std::vector<Chunk*> to_free;
    // gRPC cancels the call when its deadline passes too; the client then sees DEADLINE_EXCEEDED.
    const grpc::StatusCode code = CancelCode(context_);
    std::unique_lock<std::mutex> lock(mu_);
    cancel_code_ = code;
    BreakLocked(&to_free);
    lock.unlock();
    FreeChunks(to_free);
  }

  void OnDone() override {
    if (ctx_->unread != nullptr) ctx_->unread->Unwatch(&unread_);
    if (slot_) ctx_->streams->Release(caller_.identity);
    scope_->Done(final_code_);
    delete this;
  }

 private:
  struct Chunk;
  struct Slot {
    uint64_t id = 0;
    bool packed = false;
    Chunk* chunk = nullptr;
    pqc::v1::OperationResult result;
    OpState op;
  };
  struct Chunk {
    pqc::v1::StreamRequest request;  // owns the inputs the jobs point at
    std::unique_ptr<Slot[]> slots;
    size_t n = 0;
    size_t unwritten = 0;  // slots not yet written or dropped (mu_)
    size_t bytes = 0;      // input bytes + the answers' bound, held until the chunk is freed
    MemoryCharge charge;   // `bytes` in the memory account, while the chunk lives
    std::list<Chunk*>::iterator pos;
  };

  // Completion of items (any thread): queue their answers; take the write token if it is free.
  void SlotsDone(Slot* const* slots, size_t n) {
    std::vector<Chunk*> to_free;
    std::unique_lock<std::mutex> lock(mu_);
    if (broken_) {  // nobody will read these answers: wipe them (shared secrets, keys) and drop
      for (size_t i = 0; i < n; ++i) {
        WipeMessage(slots[i]->result);
        ForgetSlotLocked(slots[i], &to_free);
      }
      const bool resume = ResumeReadLocked();
      MaybeFinishLocked(lock);
      if (lock.owns_lock()) lock.unlock();
      FreeChunks(to_free);
      if (resume) StartRead(&request_);
      return;
    }
    ready_.insert(ready_.end(), slots, slots + n);
    if (writing_) return;
    // The write token goes to an alarm on the Stream's core queue, which fires when the worker
    // polls it next: after the burst that completed these items, so that the burst's answers
    // leave together in one packed message, written from the worker that serves the Stream.
    writing_ = true;
    OpBegin();
    write_alarm_.Set(cq(), gpr_inf_past(GPR_CLOCK_MONOTONIC), alarm_tag());
  }

  // The write alarm fired: this thread holds the write token.
  void OnAlarm(bool /*ok*/) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (broken_ || ready_.empty()) {
      writing_ = false;
      MaybeFinishLocked(lock);
      return;
    }
    BuildWriteLocked();
    lock.unlock();
    Write();
  }

  // Writes out_ (the caller holds the write token); the answer is watched until the client takes
  // it (--unread-answer-timeout).
  void Write() {
    if (ctx_->unread != nullptr) ctx_->unread->Watch(&unread_, &context_);
    StartWrite(&out_);
  }

  // Moves the next answer from ready_ into out_ (the caller holds the write token): a single-form
  // item alone, or every ready packed item up to max_items_ in one packed message. The results are
  // borrowed, not copied; ReleaseWritten gives them back.
  void BuildWriteLocked() {
    Slot* first = ready_.front();
    if (!first->packed) {
      ready_.pop_front();
      out_.set_id(first->id);
      out_.unsafe_arena_set_allocated_result(&first->result);
      in_write_.push_back(first);
      return;
    }
    // Bounded by item count and by bytes (half the message limit), so that an answer never
    // exceeds --max-message-bytes; the first item always goes.
    auto* results = out_.mutable_results();
    size_t bytes = 0;
    for (auto it = ready_.begin(); it != ready_.end() && in_write_.size() < max_items_;) {
      Slot* slot = *it;
      if (!slot->packed) {
        ++it;
        continue;
      }
      bytes += slot->result.ByteSizeLong() + 16;
      if (bytes > max_answer_bytes_ && !in_write_.empty()) break;
      pqc::v1::StreamItemResult* r = results->Add();
      r->set_id(slot->id);
      r->unsafe_arena_set_allocated_result(&slot->result);
      in_write_.push_back(slot);
      it = ready_.erase(it);
    }
  }

  // Takes the borrowed results back out of out_ (write token held) and wipes them: they may carry
  // shared secrets and private keys, and gRPC has serialized them.
  void ReleaseWritten() {
    if (out_.has_result()) {
      out_.unsafe_arena_release_result();
      out_.clear_id();
    }
    for (pqc::v1::StreamItemResult& r : *out_.mutable_results()) r.unsafe_arena_release_result();
    out_.mutable_results()->Clear();  // keeps the elements for the next answer
    for (Slot* slot : in_write_) WipeMessage(slot->result);
  }

  // The slot's answer was written or will never be: it no longer counts as in flight.
  void ForgetSlotLocked(Slot* slot, std::vector<Chunk*>* to_free) {
    --outstanding_;
    Chunk* chunk = slot->chunk;
    if (--chunk->unwritten == 0) {
      held_bytes_ -= chunk->bytes;
      chunks_.erase(chunk->pos);
      to_free->push_back(chunk);
    }
  }

  // The call broke or was cancelled: no more answers; queued jobs are cancelled so that the engine
  // drops them instead of computing answers nobody reads.
  void BreakLocked(std::vector<Chunk*>* to_free) {
    if (!broken_) {
      broken_ = true;
      for (Chunk* chunk : chunks_) {
        for (size_t i = 0; i < chunk->n; ++i) chunk->slots[i].op.job.Cancel();
      }
    }
    for (Slot* slot : ready_) {
      WipeMessage(slot->result);
      ForgetSlotLocked(slot, to_free);
    }
    ready_.clear();
  }

  void FailStream(grpc::Status status) {
    std::vector<Chunk*> to_free;
    std::unique_lock<std::mutex> lock(mu_);
    if (!error_) error_.emplace(std::move(status));
    reads_done_ = true;  // read no more; answer nothing more
    BreakLocked(&to_free);
    MaybeFinishLocked(lock);
    if (lock.owns_lock()) lock.unlock();
    FreeChunks(to_free);
  }

  bool ResumeReadLocked() {
    if (read_paused_ && !reads_done_ && !broken_ && outstanding_ < max_inflight_ &&
        held_bytes_ < max_held_bytes_) {
      read_paused_ = false;
      return true;
    }
    return false;
  }

  static void FreeChunks(const std::vector<Chunk*>& chunks) {
    for (Chunk* chunk : chunks) {
      WipeMessage(chunk->request);  // may carry private keys and seeds
      delete chunk;
    }
  }

  // Finishes once the client is done sending (or reading stopped) and no item is in flight.
  void MaybeFinishLocked(std::unique_lock<std::mutex>& lock) {
    if (finished_ || !(reads_done_ || (read_paused_ && broken_)) || outstanding_ > 0 || writing_) {
      return;
    }
    finished_ = true;
    grpc::Status status = error_ ? *error_
                          : cancel_code_
                              ? grpc::Status(*cancel_code_, "stream cancelled or expired")
                          : broken_ ? grpc::Status(grpc::StatusCode::CANCELLED, "stream broken")
                                    : grpc::Status::OK;
    final_code_ = status.error_code();
    lock.unlock();
    Finish(status);
  }

  StreamReactor(const CryptoServing& serving, int queue)
      : CoreBidiReactor(serving.queues, queue),
        serving_(serving),
        ctx_(serving.ctx),
        max_inflight_(std::max<uint32_t>(ctx_->config->max_stream_inflight, 1)),
        max_items_(std::max<uint32_t>(ctx_->config->max_batch_items, 1)),
        max_answer_bytes_(ctx_->config->max_message_bytes / 2),
        max_held_bytes_(std::max<size_t>(ctx_->config->max_stream_bytes / 2, 1)) {}

  const CryptoServing serving_;
  ServiceContext* ctx_;
  std::optional<RequestScope> scope_;  // from the call's arrival
  Caller caller_;                      // set at the call's arrival
  const uint32_t max_inflight_;
  const uint32_t max_items_;
  const size_t max_answer_bytes_;
  const size_t max_held_bytes_;     // reading pauses while the Stream holds this much
  pqc::v1::StreamRequest request_;  // the read buffer
  std::vector<engine::Job*> jobs_;  // the burst being submitted (read side)
  pqc::v1::StreamResponse out_;     // the answer being written (write token)
  std::vector<Slot*> in_write_;     // the slots whose results out_ borrows (write token)
  grpc::StatusCode final_code_ = grpc::StatusCode::OK;

  std::mutex mu_;
  std::list<Chunk*> chunks_;  // messages with items not yet written
  std::deque<Slot*> ready_;   // done, answer not yet written
  std::optional<grpc::Status> error_;
  bool writing_ = false;  // the write token is taken
  bool reads_done_ = false;
  bool read_paused_ = false;
  bool broken_ = false;
  std::optional<grpc::StatusCode> cancel_code_;  // set by OnCancel: what the client sees
  bool finished_ = false;
  size_t outstanding_ = 0;
  size_t held_bytes_ = 0;        // Chunk::bytes of the chunks not yet freed
  bool slot_ = false;            // holds one of ctx_->streams
  UnreadAnswers::Entry unread_;  // the write in progress (write token)
  grpc::Alarm write_alarm_;      // set while it holds the write token
};

}  // namespace

CryptoMethod StreamMethod() {
  return {StreamReactor::kRpc, StreamReactor::Post};
}

}  // namespace pqcd::server
