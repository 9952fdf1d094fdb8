// Streams: the client-streaming HashStream (sync and async) and the bidirectional Stream.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "client_impl.h"
#include "pqcd/client/client.h"
#include "stream_wire.h"

namespace pqcd::client {

using internal::FromGrpc;
using internal::FromProto;
using internal::ToProto;

// ---- HashStream -------------------------------------------------------------------------------
absl::StatusOr<HashResult> Client::HashStream(Algorithm algorithm,
                                              absl::FunctionRef<bool(std::string*)> next_chunk,
                                              uint32_t output_length, const CallOptions& call) {
  // The first chunk is kept so that an attempt that never reached a daemon can be repeated; once
  // a second chunk has been taken from the source the call is not retried.
  std::string first;
  bool have_first = next_chunk(&first);
  bool consumed_more = false;
  pqc::v1::HashResponse resp;
  const absl::Time deadline = impl_->Deadline(call);
  absl::Duration backoff = impl_->options.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext ctx;
    impl_->Prepare(ctx, deadline, call);
    resp.Clear();
    auto writer = impl_->Pick().crypto->HashStream(&ctx, &resp);
    pqc::v1::HashStreamRequest msg;
    msg.set_algorithm(static_cast<pqc::v1::Algorithm>(static_cast<int>(algorithm)));
    msg.set_output_length(output_length);
    if (have_first) msg.set_data(first);
    bool ok = writer->Write(msg);
    if (ok && have_first) {
      std::string chunk;
      pqc::v1::HashStreamRequest next;
      while (ok && next_chunk(&chunk)) {
        consumed_more = true;
        next.set_data(chunk);
        ok = writer->Write(next);
        chunk.clear();
      }
    }
    writer->WritesDone();
    grpc::Status s = writer->Finish();
    if (s.ok()) return FromProto(std::move(resp));
    if (consumed_more || !impl_->ShouldRetry(s, ctx, attempt, deadline, backoff)) {
      return FromGrpc(s);
    }
    absl::SleepFor(backoff);
    backoff = impl_->NextBackoff(backoff);
  }
}

absl::StatusOr<HashResult> Client::HashStream(Algorithm algorithm, std::istream& in,
                                              uint32_t output_length, const CallOptions& call) {
  bool read_error = false;
  auto result = HashStream(
      algorithm,
      [&](std::string* chunk) {
        chunk->resize(256 << 10);
        in.read(chunk->data(), static_cast<std::streamsize>(chunk->size()));
        chunk->resize(static_cast<size_t>(in.gcount()));
        if (in.bad()) read_error = true;
        return !chunk->empty();
      },
      output_length, call);
  if (read_error) return absl::DataLossError("error reading the input stream");
  return result;
}

// HashStream, async: a write reactor that sends the chunks and deletes itself when done, its
// context before its ticket of the client's in_flight.
namespace {
class HashStreamReactor : public grpc::ClientWriteReactor<pqc::v1::HashStreamRequest> {
 public:
  HashStreamReactor(internal::InFlight& in_flight, std::vector<pqc::v1::HashStreamRequest> msgs,
                    Callback<HashResult> done)
      : ticket_(in_flight.Begin()),
        ctx_(in_flight),
        msgs_(std::move(msgs)),
        done_(std::move(done)) {}

  grpc::ClientContext& ctx() { return ctx_.get(); }
  pqc::v1::HashResponse* response() { return &resp_; }

  void Begin() {
    StartWrite(&msgs_[0]);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok && ++next_ < msgs_.size()) {
      StartWrite(&msgs_[next_]);
    } else {
      StartWritesDone();
    }
  }
  void OnDone(const grpc::Status& s) override {
    {
      auto done = std::move(done_);
      if (s.ok()) {
        done(FromProto(std::move(resp_)));
      } else {
        done(FromGrpc(s));
      }
    }
    delete this;
  }

 private:
  // First member, so destroyed last: given back once the context is gone (in_flight.h).
  internal::InFlight::Ticket ticket_;
  internal::TrackedContext ctx_;
  pqc::v1::HashResponse resp_;
  std::vector<pqc::v1::HashStreamRequest> msgs_;
  size_t next_ = 0;
  Callback<HashResult> done_;
};
}  // namespace

void Client::HashStreamAsync(Algorithm algorithm, std::vector<std::string> chunks,
                             Callback<HashResult> done, uint32_t output_length,
                             const CallOptions& call) {
  std::vector<pqc::v1::HashStreamRequest> msgs(std::max<size_t>(chunks.size(), 1));
  msgs[0].set_algorithm(static_cast<pqc::v1::Algorithm>(static_cast<int>(algorithm)));
  msgs[0].set_output_length(output_length);
  for (size_t i = 0; i < chunks.size(); ++i) msgs[i].set_data(std::move(chunks[i]));
  auto* r = new HashStreamReactor(impl_->in_flight, std::move(msgs), std::move(done));
  impl_->Prepare(r->ctx(), impl_->Deadline(call), call);
  impl_->Pick().crypto->async()->HashStream(&r->ctx(), r->response(), r);
  r->Begin();
}

// ---- Stream ---------------------------------------------------------------------------------
namespace {
class StreamImpl final
    : public Stream,
      public grpc::ClientBidiReactor<pqc::v1::StreamRequest, pqc::v1::StreamResponse> {
 public:
  explicit StreamImpl(const StreamOptions& options)
      : max_inflight_(std::max<size_t>(options.max_inflight, 1)),
        max_pack_(std::max<size_t>(options.max_pack, 1)) {}
  ~StreamImpl() override {
    (void)Finish();
    for (Queued& q : queue_) internal::WipeOperation(&q.op);
  }

  grpc::ClientContext ctx;

  void Begin() {
    AddHold();  // released when writing is over, so that OnDone waits for our writes
    StartRead(&read_msg_);
    StartCall();
  }

  absl::Status Submit(Operation op, Callback<Result> done) override {
    Queued q;
    ToProto(op, &q.op);
    q.bytes = q.op.ByteSizeLong();
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return pending_.size() < max_inflight_ || !Open(); });
    if (!Open()) {
      internal::WipeOperation(&q.op);
      if (done_ && !final_.ok()) return FromGrpc(final_);
      return absl::FailedPreconditionError("the stream is finished or closing");
    }
    q.id = next_id_++;
    pending_.emplace(q.id, std::move(done));
    queue_.push_back(std::move(q));
    StartNextLocked(lock);
    return absl::OkStatus();
  }

  absl::Status Finish() override {
    std::unique_lock lock(mu_);
    if (!finish_requested_) {
      finish_requested_ = true;
      cv_.notify_all();  // a Submit waiting for room fails now
      if (StartNextLocked(lock)) lock.lock();
    }
    cv_.wait(lock, [&] { return done_; });
    return FromGrpc(final_);
  }

  size_t inflight() const override {
    std::lock_guard lock(mu_);
    return pending_.size();
  }

  StreamStats stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mu_);
    writing_ = false;
    internal::WipeRequest(&current_);
    current_.Clear();
    if (ok && !read_closed_) {
      StartNextLocked(lock);
      return;
    }
    // Broken, or the daemon ended the call: nothing more is written; OnDone fails what is pending.
    write_failed_ = !ok;
    for (Queued& q : queue_) internal::WipeOperation(&q.op);
    queue_.clear();
    ReleaseHoldLocked(lock);
  }

  void OnWritesDoneDone(bool) override {
    std::unique_lock lock(mu_);
    writing_ = false;
    ReleaseHoldLocked(lock);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::unique_lock lock(mu_);
      read_closed_ = true;
      cv_.notify_all();
      if (!writing_) ReleaseHoldLocked(lock);
      return;
    }
    // The message moves out of the read buffer and the next read starts before the callbacks run,
    // so that reading goes on meanwhile; the callbacks of two messages may then run at once.
    pqc::v1::StreamResponse msg;
    msg.Swap(&read_msg_);
    std::vector<std::pair<Callback<Result>, pqc::v1::OperationResult*>> answered;
    {
      std::lock_guard lock(mu_);
      ++stats_.messages_received;
      pqc::v1::StreamRequest rejected;
      if (pack_.Inspect(msg, &rejected)) {
        // A daemon without packing rejected a packed message whole (nothing in it ran): its
        // operations go back to the front of the queue and leave one per message from now on.
        std::deque<Queued> back;
        for (auto& item : *rejected.mutable_items()) {
          back.emplace_back();
          back.back().id = item.id();
          back.back().op.Swap(item.mutable_operation());
          back.back().bytes = back.back().op.ByteSizeLong();
        }
        queue_.insert(queue_.begin(), std::make_move_iterator(back.begin()),
                      std::make_move_iterator(back.end()));
      } else {
        internal::ForEachResult(msg, [&](uint64_t id, pqc::v1::OperationResult& r) {
          ++stats_.results_received;
          auto it = pending_.find(id);
          if (it == pending_.end()) return;
          answered.emplace_back(std::move(it->second), &r);
          pending_.erase(it);
        });
        if (!answered.empty()) cv_.notify_all();
      }
      // Writes wait until the callbacks below have run, so that what they submit leaves together.
      ++delivering_;
    }
    StartRead(&read_msg_);
    for (auto& [cb, r] : answered) cb(FromProto(std::move(*r)));
    answered.clear();
    internal::WipeResponse(&msg);
    std::unique_lock lock(mu_);
    --delivering_;
    StartNextLocked(lock);
  }

  void OnDone(const grpc::Status& s) override {
    std::unordered_map<uint64_t, Callback<Result>> orphans;
    {
      std::lock_guard lock(mu_);
      final_ = s;
      orphans.swap(pending_);
    }
    const absl::Status err =
        s.ok() ? absl::UnavailableError("the stream ended without answering this operation")
               : FromGrpc(s);
    for (auto& [id, cb] : orphans) cb(err);
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

 private:
  struct Queued {
    uint64_t id = 0;
    pqc::v1::Operation op;
    size_t bytes = 0;
  };
  // A message stops growing at this size (unless it holds one operation), well below the daemon's
  // --max-message-bytes: a message over it fails the stream.
  static constexpr size_t kMaxPackBytes = 1 << 20;

  bool Open() const { return !done_ && !read_closed_ && !hold_released_ && !finish_requested_; }

  // Starts the next write when none is outstanding: every queued operation (up to max_pack) in one
  // message, else the half-close once Finish asked for it. Returns true (with the lock released)
  // when it started something.
  bool StartNextLocked(std::unique_lock<std::mutex>& lock) {
    if (writing_ || delivering_ > 0 || hold_released_ || read_closed_ || write_failed_) {
      return false;
    }
    if (!queue_.empty()) {
      const size_t max_pack = pack_.packing_allowed() ? max_pack_ : 1;
      size_t bytes = 0;
      for (size_t n = 0; n < max_pack && !queue_.empty(); ++n) {
        if (n > 0 && bytes + queue_.front().bytes > kMaxPackBytes) break;
        bytes += queue_.front().bytes;
        internal::AppendOperation(&current_, queue_.front().id, &queue_.front().op);
        queue_.pop_front();
      }
      pack_.Sending(current_);
      // Counted when handed to gRPC (an answer may arrive before OnWriteDone runs).
      ++stats_.messages_sent;
      stats_.operations_sent += static_cast<uint64_t>(internal::OperationCount(current_));
      writing_ = true;
      lock.unlock();
      StartWrite(&current_);
      return true;
    }
    // The half-close waits while packed messages await the daemon's verdict: an old daemon's
    // rejection means writing their operations again.
    if (finish_requested_ && !writes_done_started_ && !pack_.awaiting_verdict()) {
      writes_done_started_ = true;
      writing_ = true;
      lock.unlock();
      StartWritesDone();
      return true;
    }
    return false;
  }

  void ReleaseHoldLocked(std::unique_lock<std::mutex>& lock) {
    if (hold_released_) return;
    hold_released_ = true;
    cv_.notify_all();
    lock.unlock();
    RemoveHold();
  }

  const size_t max_inflight_;
  const size_t max_pack_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint64_t, Callback<Result>> pending_;
  std::deque<Queued> queue_;
  pqc::v1::StreamRequest current_;
  pqc::v1::StreamResponse read_msg_;
  internal::PackSupport pack_;
  StreamStats stats_;
  uint64_t next_id_ = 1;
  bool writing_ = false;
  int delivering_ = 0;  // answer messages whose callbacks are running
  bool finish_requested_ = false;
  bool writes_done_started_ = false;
  bool hold_released_ = false;
  bool read_closed_ = false;
  bool write_failed_ = false;
  bool done_ = false;
  grpc::Status final_;
};
}  // namespace

// The Stream does not use the client once open: its context keeps its channel, and the caller's
// thread that destroys the Stream (after Finish) drops that reference.
absl::StatusOr<std::unique_ptr<Stream>> Client::OpenStream(const StreamOptions& options,
                                                           const CallOptions& call) {
  auto s = std::make_unique<StreamImpl>(options);
  s->ctx.set_deadline(absl::ToChronoTime(
      absl::Now() + internal::Clamp(call.timeout, impl_->options.default_stream_timeout)));
  s->ctx.set_wait_for_ready(call.wait_for_ready);
  impl_->Pick().crypto->async()->Stream(&s->ctx, s.get());
  s->Begin();
  return std::unique_ptr<Stream>(std::move(s));
}

}  // namespace pqcd::client
