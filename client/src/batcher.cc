#include "batcher.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "convert.h"
#include "in_flight.h"
#include "stream_wire.h"

namespace pqcd::client::internal {

// ---- Calls ------------------------------------------------------------------------------------
// One caller's call. Shared by the timer (its deadline), a lane or a stream (where it waits or
// travels); `finished` decides which of them completes it, exactly once.
struct Call {
  uint64_t id = 0;
  // The operation, until it is taken into a message; given back when a message is known not to
  // have reached a daemon (a failed write, a packed message rejected whole by an old daemon).
  pqc::v1::Operation op;
  bool has_op = true;
  size_t bytes = 0;  // the operation's encoded size
  Callback<Result> done;
  absl::Time deadline;
  bool wait_for_ready = false;
  // 1 + the streams that failed to reach any daemon while carrying it (the client's retry rule).
  int attempts = 1;
  std::atomic<bool> finished{false};

  ~Call() { WipeOperation(&op); }
};
using CallPtr = std::shared_ptr<Call>;

namespace {

// True for the one caller that may complete the call.
bool Claim(Call& c) {
  return !c.finished.exchange(true, std::memory_order_acq_rel);
}

// A packed message stops growing at this size (unless it holds one operation), well below the
// daemon's --max-message-bytes (16 MiB by default): a message over it would fail the whole stream.
constexpr size_t kMaxPackBytes = 1 << 20;

// What the calls a broken stream had written get. Its own status is not theirs to keep as is:
// CANCELLED (a daemon shutting down cancels its calls) would read as if the caller had cancelled.
absl::Status StreamFailure(const grpc::Status& s) {
  if (s.ok()) return absl::UnavailableError("the shared stream ended before the daemon answered");
  if (s.error_code() == grpc::StatusCode::CANCELLED) {
    return absl::UnavailableError("the shared stream was cancelled: " + s.error_message());
  }
  return FromGrpc(s);
}

// The lane whose answers the current thread is delivering: calls that callbacks submit go to the
// same lane, whose stream holds its writes until the delivery ends and then packs them together.
thread_local Lane* tl_delivering_lane = nullptr;

}  // namespace

// ---- Timer: call deadlines and lane wake-ups on one thread -----------------------------------
class Timer {
 public:
  Timer() : thread_([this] { Run(); }) {}
  ~Timer() { Stop(); }
  // Joins the thread. Separate from the destructor: what the thread runs last may still use the
  // timer (through the batcher's pointer to it).
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void Add(const CallPtr& c) {
    bool earliest;
    {
      std::lock_guard lock(mu_);
      earliest = deadlines_.empty() || c->deadline < deadlines_.begin()->first.first;
      deadlines_.emplace(std::make_pair(c->deadline, c->id), c);
    }
    if (earliest) cv_.notify_one();
  }
  // Called by whoever completed calls other than through their deadline.
  void Forget(const std::vector<CallPtr>& calls) {
    if (calls.empty()) return;
    std::lock_guard lock(mu_);
    for (const CallPtr& c : calls) deadlines_.erase({c->deadline, c->id});
  }
  void Wake(Lane* lane, absl::Time at) {
    {
      std::lock_guard lock(mu_);
      wakeups_.emplace(at, lane);
    }
    cv_.notify_one();
  }

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<absl::Time, uint64_t>, CallPtr> deadlines_;
  std::multimap<absl::Time, Lane*> wakeups_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

// ---- SharedStream: one Stream call that carries many callers' operations -----------------------
class SharedStream final
    : public grpc::ClientBidiReactor<pqc::v1::StreamRequest, pqc::v1::StreamResponse> {
 public:
  static std::shared_ptr<SharedStream> Create(Batcher* b, Lane* lane, int channel);
  // Starts the call; Enqueue may come before or concurrently (gRPC queues early writes).
  void Start() {
    StartRead(&read_);
    StartCall();
  }
  // Takes the call (and returns true) unless the stream has ended.
  bool Enqueue(CallPtr& c);
  void Cancel() { ctx_.TryCancel(); }

  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  SharedStream(Batcher* b, Lane* lane) : ticket_(b->streams_.Begin()), b_(b), lane_(lane) {}
  bool BuildLocked();
  bool HeldLocked() const { return delivering_ > 0; }
  void ReleaseHoldLocked(std::unique_lock<std::mutex>& lock);

  // First member, so destroyed last: the batcher's destructor waits for it, and so the stream's
  // context (and its reference to the channel) is gone before the client drops its channels
  // (in_flight.h). Where the last reference to the stream goes (OnDone, a lane) does not matter.
  InFlight::Ticket ticket_;
  Batcher* const b_;
  Lane* const lane_;
  grpc::ClientContext ctx_;
  std::shared_ptr<SharedStream> self_;  // the reactor keeps itself alive until OnDone

  std::mutex mu_;
  std::deque<CallPtr> queue_;                       // not yet written
  std::unordered_map<uint64_t, CallPtr> inflight_;  // written (or being written), unanswered
  pqc::v1::StreamRequest current_;                  // the message being written
  pqc::v1::StreamResponse read_;
  PackSupport pack_;
  bool writing_ = false;
  int delivering_ = 0;   // messages whose answers are being delivered: writes wait for the
                         // calls their callbacks submit
  bool closed_ = false;  // no more writes: the stream broke or its reads ended
  bool hold_released_ = false;
};

// ---- Lane: one shared stream at a time, and the calls waiting for the next one ----------------
class Lane {
 public:
  Lane(Batcher* b, int channel) : b_(b), channel_(channel) {}

  Batcher* batcher() const { return b_; }
  void Enqueue(CallPtr c);
  // A stream ended: `unsent` never reached a daemon (queued, or the stream never connected).
  void StreamEnded(SharedStream* s, std::vector<CallPtr> unsent, bool never_sent,
                   const grpc::Status& status);
  // The backoff after a stream that reached no daemon is over: carry the waiting calls.
  void Wake();
  // Batcher shutdown: fail the waiting calls, cancel the stream.
  void Stop();

 private:
  void ScheduleWakeLocked();

  Batcher* const b_;
  const int channel_;
  std::mutex mu_;
  std::shared_ptr<SharedStream> stream_;
  std::vector<CallPtr> waiting_;  // during a backoff
  absl::Time retry_at_ = absl::InfinitePast();
  absl::Duration backoff_ = absl::ZeroDuration();
  bool wake_scheduled_ = false;
};

namespace {

void Deliver(Call& c, absl::StatusOr<Result> r) {
  auto done = std::move(c.done);
  done(std::move(r));
}

// Completes calls that this caller has claimed with one status.
void FailClaimed(Timer& timer, const std::vector<CallPtr>& calls, const absl::Status& status) {
  timer.Forget(calls);
  for (const CallPtr& c : calls) Deliver(*c, status);
}

// Claims what can be claimed of `calls` (the others were completed already) and fails it.
void Fail(Timer& timer, std::vector<CallPtr> calls, const absl::Status& status) {
  calls.erase(
      std::remove_if(calls.begin(), calls.end(), [](const CallPtr& c) { return !Claim(*c); }),
      calls.end());
  FailClaimed(timer, calls, status);
}

}  // namespace

void Timer::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    absl::Time next = absl::InfiniteFuture();
    if (!deadlines_.empty()) next = deadlines_.begin()->first.first;
    if (!wakeups_.empty()) next = std::min(next, wakeups_.begin()->first);
    const absl::Time now = absl::Now();
    if (next > now) {
      if (next == absl::InfiniteFuture()) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, absl::ToChronoTime(next));
      }
      continue;
    }
    std::vector<CallPtr> due;
    std::vector<Lane*> lanes;
    while (!deadlines_.empty() && deadlines_.begin()->first.first <= now) {
      due.push_back(std::move(deadlines_.begin()->second));
      deadlines_.erase(deadlines_.begin());
    }
    while (!wakeups_.empty() && wakeups_.begin()->first <= now) {
      lanes.push_back(wakeups_.begin()->second);
      wakeups_.erase(wakeups_.begin());
    }
    lock.unlock();
    for (const CallPtr& c : due) {
      if (Claim(*c)) {
        Deliver(*c, absl::DeadlineExceededError(
                        "deadline exceeded before the daemon answered (batching client)"));
      }
    }
    due.clear();  // outside the lock: the last reference wipes the operation
    for (Lane* l : lanes) l->Wake();
    lock.lock();
  }
}

// ---- SharedStream -------------------------------------------------------------------------------
std::shared_ptr<SharedStream> SharedStream::Create(Batcher* b, Lane* lane, int channel) {
  std::shared_ptr<SharedStream> s(new SharedStream(b, lane));
  s->self_ = s;
  b->streams_opened_.fetch_add(1, std::memory_order_relaxed);
  // No deadline: the stream outlives its calls, whose deadlines the client keeps. Not
  // wait_for_ready: a stream that cannot reach a daemon fails at once, and the lane then applies
  // each call's own wait_for_ready and retry rule.
  b->env_.stub(channel)->async()->Stream(&s->ctx_, s.get());
  s->AddHold();  // released when writing is over, so that OnDone waits for writes started by
                 // Enqueue
  return s;
}

bool SharedStream::Enqueue(CallPtr& c) {
  std::unique_lock lock(mu_);
  if (closed_) return false;
  queue_.push_back(std::move(c));
  if (writing_ || HeldLocked() || !BuildLocked()) return true;
  writing_ = true;
  lock.unlock();
  StartWrite(&current_);
  return true;
}

// Takes every queued operation, up to max_pack and the in-flight bound, into current_.
bool SharedStream::BuildLocked() {
  const size_t max_pack = pack_.packing_allowed() ? b_->options_.max_pack : 1;
  size_t n = 0, bytes = 0;
  while (!queue_.empty() && n < max_pack && inflight_.size() < b_->options_.max_inflight) {
    if (n > 0 && bytes + queue_.front()->bytes > kMaxPackBytes) break;
    CallPtr c = std::move(queue_.front());
    queue_.pop_front();
    if (c->finished.load(std::memory_order_acquire)) continue;  // expired while queued: not sent
    bytes += c->bytes;
    AppendOperation(&current_, c->id, &c->op);
    c->has_op = false;
    const uint64_t id = c->id;
    inflight_.emplace(id, std::move(c));
    ++n;
  }
  if (n == 0) return false;
  pack_.Sending(current_);
  // Counted when handed to gRPC (an answer may arrive before OnWriteDone runs).
  b_->messages_sent_.fetch_add(1, std::memory_order_relaxed);
  b_->operations_sent_.fetch_add(n, std::memory_order_relaxed);
  return true;
}

void SharedStream::ReleaseHoldLocked(std::unique_lock<std::mutex>& lock) {
  if (hold_released_) return;
  hold_released_ = true;
  lock.unlock();
  RemoveHold();
}

void SharedStream::OnWriteDone(bool ok) {
  std::unique_lock lock(mu_);
  if (ok) {
    WipeRequest(&current_);
    current_.Clear();
  } else {
    // The stream broke. Give the operations back to their calls: if it turns out that the stream
    // never reached a daemon, they may be sent again.
    auto give_back = [&](uint64_t id, pqc::v1::Operation* op) {
      auto it = inflight_.find(id);
      if (it == inflight_.end()) return;
      it->second->op.Swap(op);
      it->second->has_op = true;
    };
    if (current_.has_operation()) give_back(current_.id(), current_.mutable_operation());
    for (auto& item : *current_.mutable_items()) give_back(item.id(), item.mutable_operation());
    WipeRequest(&current_);
    current_.Clear();
    closed_ = true;
  }
  if (!closed_ && !HeldLocked() && BuildLocked()) {
    lock.unlock();
    StartWrite(&current_);
    return;
  }
  writing_ = false;
  if (closed_) ReleaseHoldLocked(lock);
}

void SharedStream::OnReadDone(bool ok) {
  if (!ok) {
    std::unique_lock lock(mu_);
    closed_ = true;
    if (!writing_) ReleaseHoldLocked(lock);
    return;
  }
  // The message moves out of the read buffer and the next read starts before the answers are
  // delivered, so that reading goes on while callbacks run; deliveries of two messages may then
  // overlap, on two threads.
  pqc::v1::StreamResponse msg;
  msg.Swap(&read_);
  std::vector<CallPtr> answered;
  std::vector<pqc::v1::OperationResult*> results;
  {
    std::lock_guard lock(mu_);
    b_->messages_received_.fetch_add(1, std::memory_order_relaxed);
    pqc::v1::StreamRequest rejected;
    if (pack_.Inspect(msg, &rejected)) {
      // An old daemon rejected a packed message whole: its operations go back to the front of
      // the queue, in order, and leave one per message from now on.
      std::vector<CallPtr> back;
      auto take_back = [&](uint64_t id, pqc::v1::Operation* op) {
        auto it = inflight_.find(id);
        if (it == inflight_.end()) return;
        it->second->op.Swap(op);
        it->second->has_op = true;
        back.push_back(std::move(it->second));
        inflight_.erase(it);
      };
      for (auto& item : *rejected.mutable_items()) take_back(item.id(), item.mutable_operation());
      queue_.insert(queue_.begin(), std::make_move_iterator(back.begin()),
                    std::make_move_iterator(back.end()));
      WipeRequest(&rejected);
    } else {
      uint64_t n = 0;
      ForEachResult(msg, [&](uint64_t id, pqc::v1::OperationResult& r) {
        ++n;
        auto it = inflight_.find(id);
        if (it == inflight_.end()) return;  // not ours, or handed back already
        answered.push_back(std::move(it->second));
        results.push_back(&r);
        inflight_.erase(it);
      });
      b_->results_received_.fetch_add(n, std::memory_order_relaxed);
    }
    if (!answered.empty()) ++delivering_;
  }
  StartRead(&read_);

  // Complete the answered calls that no deadline has completed yet. What their callbacks submit
  // to this lane is held while deliveries run and leaves together in the next message.
  std::vector<CallPtr> claimed;
  std::vector<pqc::v1::OperationResult*> claimed_results;
  for (size_t i = 0; i < answered.size(); ++i) {
    if (Claim(*answered[i])) {
      claimed.push_back(std::move(answered[i]));
      claimed_results.push_back(results[i]);
    }
  }
  const bool answered_empty = answered.empty();
  answered.clear();
  b_->timer_->Forget(claimed);
  Lane* const outer = tl_delivering_lane;
  tl_delivering_lane = lane_;
  for (size_t i = 0; i < claimed.size(); ++i) {
    Deliver(*claimed[i], FromProto(std::move(*claimed_results[i])));
  }
  tl_delivering_lane = outer;
  claimed.clear();
  WipeResponse(&msg);  // results of calls that had expired were not moved out

  bool write = false;
  {
    std::lock_guard lock(mu_);
    if (!answered_empty) --delivering_;
    if (!writing_ && !closed_ && !HeldLocked() && BuildLocked()) write = writing_ = true;
  }
  if (write) StartWrite(&current_);
}

void SharedStream::OnDone(const grpc::Status& status) {
  std::shared_ptr<SharedStream> self = std::move(self_);  // `this` lives to the end of OnDone
  Batcher* const b = b_;
  const bool never_sent = b->env_.never_sent(status, ctx_);
  std::vector<CallPtr> unsent, lost;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (CallPtr& c : queue_) unsent.push_back(std::move(c));
    queue_.clear();
    for (auto& [id, c] : inflight_)
      (never_sent && c->has_op ? unsent : lost).push_back(std::move(c));
    inflight_.clear();
  }
  // Calls whose operation may have reached the daemon: never sent again (no operation runs twice).
  Fail(*b->timer_, std::move(lost),
       b->stopping_.load() ? absl::CancelledError("the client is shutting down")
                           : StreamFailure(status));
  lane_->StreamEnded(this, std::move(unsent), never_sent, status);
}

// ---- Lane ---------------------------------------------------------------------------------------
void Lane::Enqueue(CallPtr c) {
  for (;;) {
    std::shared_ptr<SharedStream> s;
    bool fresh = false;
    {
      std::unique_lock lock(mu_);
      if (b_->stopping_.load()) {
        lock.unlock();
        Fail(*b_->timer_, {std::move(c)}, absl::CancelledError("the client is shutting down"));
        return;
      }
      if (absl::Now() < retry_at_ || !waiting_.empty()) {
        // Backing off after a stream that reached no daemon; the wake-up carries the call.
        waiting_.push_back(std::move(c));
        ScheduleWakeLocked();
        return;
      }
      if (!stream_) {
        stream_ = SharedStream::Create(b_, this, channel_);
        fresh = true;
      }
      s = stream_;
    }
    // Started outside the lock: gRPC may run a reaction (even OnDone) on this thread.
    if (fresh) s->Start();
    if (s->Enqueue(c)) return;
    std::lock_guard lock(mu_);  // the stream ended meanwhile: the next round opens a new one
    if (stream_ == s) stream_.reset();
  }
}

void Lane::StreamEnded(SharedStream* s, std::vector<CallPtr> unsent, bool never_sent,
                       const grpc::Status& status) {
  std::vector<CallPtr> fail;
  bool wake_now = false;
  {
    std::lock_guard lock(mu_);
    if (stream_.get() == s) stream_.reset();
    if (b_->stopping_.load()) {
      fail = std::move(unsent);
    } else {
      const absl::Time now = absl::Now();
      if (never_sent) {
        backoff_ = backoff_ == absl::ZeroDuration() ? b_->env_.initial_backoff
                                                    : std::min(backoff_ * 2, b_->env_.max_backoff);
        retry_at_ = now + backoff_;
      } else {
        backoff_ = absl::ZeroDuration();
        retry_at_ = absl::InfinitePast();
      }
      std::vector<CallPtr> again;
      for (CallPtr& c : unsent) {
        if (c->finished.load()) continue;
        if (never_sent && !c->wait_for_ready) {
          // The unary rule: retried while attempts are left and the backoff ends in time.
          if (c->attempts >= b_->env_.max_attempts || retry_at_ >= c->deadline) {
            fail.push_back(std::move(c));
            continue;
          }
          ++c->attempts;
        }
        again.push_back(std::move(c));
      }
      // These were queued before anything waiting now.
      waiting_.insert(waiting_.begin(), std::make_move_iterator(again.begin()),
                      std::make_move_iterator(again.end()));
      if (!waiting_.empty()) {
        if (now < retry_at_) {
          ScheduleWakeLocked();
        } else {
          wake_now = true;
        }
      }
    }
  }
  Fail(*b_->timer_, std::move(fail),
       b_->stopping_.load() ? absl::CancelledError("the client is shutting down")
                            : FromGrpc(status));
  if (wake_now) Wake();
}

void Lane::ScheduleWakeLocked() {
  if (wake_scheduled_) return;
  wake_scheduled_ = true;
  b_->timer_->Wake(this, retry_at_);
}

void Lane::Wake() {
  std::vector<CallPtr> calls;
  {
    std::lock_guard lock(mu_);
    wake_scheduled_ = false;
    if (absl::Now() < retry_at_) {
      ScheduleWakeLocked();
      return;
    }
    calls.swap(waiting_);
  }
  for (CallPtr& c : calls) {
    if (!c->finished.load()) Enqueue(std::move(c));
  }
}

void Lane::Stop() {
  std::vector<CallPtr> calls;
  std::shared_ptr<SharedStream> s;
  {
    std::lock_guard lock(mu_);
    calls.swap(waiting_);
    s = stream_;
  }
  Fail(*b_->timer_, std::move(calls), absl::CancelledError("the client is shutting down"));
  if (s) s->Cancel();
}

// ---- Batcher ------------------------------------------------------------------------------------
Batcher::Batcher(const BatchingOptions& options, BatcherEnv env)
    : options_([&] {
        BatchingOptions o = options;
        o.max_pack = std::max<size_t>(o.max_pack, 1);
        o.max_inflight = std::max<size_t>(o.max_inflight, 1);
        return o;
      }()),
      env_(std::move(env)),
      timer_(std::make_unique<Timer>()) {
  const int channels = std::max(env_.channels, 1);
  const int n = options_.streams > 0 ? options_.streams : channels;
  for (int i = 0; i < n; ++i) lanes_.push_back(std::make_unique<Lane>(this, i % channels));
}

Batcher::~Batcher() {
  stopping_.store(true);
  for (auto& lane : lanes_) lane->Stop();
  streams_.Close();  // every stream has ended and is destroyed, its context with it
  timer_->Stop();    // every call has completed by now
  timer_.reset();
}

bool Batcher::DeliveringOnThisThread() {
  return tl_delivering_lane != nullptr;
}

void Batcher::Submit(pqc::v1::Operation op, Callback<Result> done, const CallOptions& call) {
  auto c = std::make_shared<Call>();
  c->id = next_id_.fetch_add(1, std::memory_order_relaxed);
  c->op.Swap(&op);
  c->bytes = c->op.ByteSizeLong();
  c->done = std::move(done);
  const absl::Duration timeout =
      call.timeout <= absl::ZeroDuration() || call.timeout == absl::InfiniteDuration()
          ? env_.default_timeout
          : call.timeout;
  c->deadline = absl::Now() + timeout;
  c->wait_for_ready = call.wait_for_ready;
  timer_->Add(c);
  Lane* lane = tl_delivering_lane;
  if (lane == nullptr || lane->batcher() != this) {
    lane = lanes_[next_lane_.fetch_add(1, std::memory_order_relaxed) % lanes_.size()].get();
  }
  lane->Enqueue(std::move(c));
}

StreamStats Batcher::stats() const {
  StreamStats s;
  s.messages_sent = messages_sent_.load();
  s.operations_sent = operations_sent_.load();
  s.messages_received = messages_received_.load();
  s.results_received = results_received_.load();
  s.streams_opened = streams_opened_.load();
  return s;
}

}  // namespace pqcd::client::internal
