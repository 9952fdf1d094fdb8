#include "lane_transport.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pqcd_lane.h"

namespace pqcd::client::internal {
namespace {

// One operation in the lane format, owning what the request points at until it is submitted.
// Its private key or seed is wiped when it goes (the slot's copy is the library's to wipe).
struct Pending {
  Operation op;
  Callback<Result> done;
  uint32_t timeout_ms = 0;
  absl::Time deadline = absl::InfiniteFuture();
  bool moved = false;  // went to a new lane once, after the daemon closed the one it was for

  Pending() = default;
  Pending(Pending&&) = default;
  Pending& operator=(Pending&&) = default;
  ~Pending() {
    std::visit(
        [](auto& o) {
          using T = std::decay_t<decltype(o)>;
          auto wipe = [](std::string& s) {
            if (!s.empty()) explicit_bzero(s.data(), s.size());
          };
          if constexpr (std::is_same_v<T, KeyGenOp>) {
            wipe(o.seed);
          } else if constexpr (std::is_same_v<T, DecapsOp> || std::is_same_v<T, SignOp>) {
            wipe(o.key.bytes);
          }
        },
        op);
  }
};

std::string Copy(const uint8_t* p, size_t n) {
  return n == 0 ? std::string() : std::string(reinterpret_cast<const char*>(p), n);
}

uint32_t Alg(Algorithm a) {
  return static_cast<uint32_t>(a);
}

// The request for `p.op` (views of its strings).
pqcd_lane_request Encode(const Pending& p) {
  pqcd_lane_request rq{};
  rq.timeout_ms = p.timeout_ms;
  auto view = [](const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); };
  auto key = [&](const Key& k) {
    if (k.held()) {
      rq.flags |= PQCD_LANE_HELD_KEY;
      rq.key_id = k.ref->key_id.c_str();
      rq.key_version = k.ref->version;
    } else {
      rq.key = view(k.bytes);
      rq.key_len = k.bytes.size();
    }
  };
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        rq.algorithm = Alg(o.algorithm);
        if constexpr (std::is_same_v<T, KeyGenOp>) {
          rq.op = PQCD_LANE_KEYGEN;
          rq.key = view(o.seed);
          rq.key_len = o.seed.size();
          if (o.hold) rq.flags |= PQCD_LANE_HOLD;
          if (!o.key_id.empty()) rq.key_id = o.key_id.c_str();
        } else if constexpr (std::is_same_v<T, EncapsOp>) {
          rq.op = PQCD_LANE_ENCAPS;
          key(o.key);
        } else if constexpr (std::is_same_v<T, DecapsOp>) {
          rq.op = PQCD_LANE_DECAPS;
          key(o.key);
          rq.input = view(o.ciphertext);
          rq.input_len = o.ciphertext.size();
        } else if constexpr (std::is_same_v<T, SignOp>) {
          rq.op = PQCD_LANE_SIGN;
          key(o.key);
          rq.input = view(o.message);
          rq.input_len = o.message.size();
          rq.context = view(o.context);
          rq.context_len = o.context.size();
          if (o.deterministic) rq.flags |= PQCD_LANE_DETERMINISTIC;
          if (o.external_mu) rq.flags |= PQCD_LANE_EXTERNAL_MU;
          rq.pre_hash = static_cast<uint32_t>(o.pre_hash);
        } else if constexpr (std::is_same_v<T, VerifyOp>) {
          rq.op = PQCD_LANE_VERIFY;
          key(o.key);
          rq.input = view(o.message);
          rq.input_len = o.message.size();
          rq.signature = view(o.signature);
          rq.signature_len = o.signature.size();
          rq.context = view(o.context);
          rq.context_len = o.context.size();
          if (o.external_mu) rq.flags |= PQCD_LANE_EXTERNAL_MU;
          rq.pre_hash = static_cast<uint32_t>(o.pre_hash);
        } else {
          static_assert(std::is_same_v<T, HashOp>, "an operation the lane format does not have");
          rq.op = PQCD_LANE_HASH;
          rq.input = view(o.data);
          rq.input_len = o.data.size();
          rq.output_length = o.output_length;
        }
      },
      p.op);
  return rq;
}

absl::StatusOr<Result> Decode(const Pending& p, const pqcd_lane_result& r) {
  if (r.code != 0) {
    return absl::Status(static_cast<absl::StatusCode>(r.code),
                        std::string(r.message, r.message_len));
  }
  const auto out = [&](int i) { return Copy(r.out[i], r.out_len[i]); };
  switch (p.op.index()) {
    case 0: {
      KeyPair k;
      k.algorithm = std::get<KeyGenOp>(p.op).algorithm;
      k.public_key = out(0);
      k.private_key = out(1);
      k.seed = out(2);
      k.key_id.assign(r.key_id, r.key_id_len);
      k.key_version = r.key_version;
      return k;
    }
    case 1:
      return EncapsResult{out(0), out(1), r.key_version};
    case 2:
      return DecapsResult{out(0)};
    case 3:
      return SignResult{out(0), r.key_version};
    case 4:
      return VerifyResult{r.valid != 0};
    case 5:
      return HashResult{out(0)};
    default:
      return absl::InternalError("pqcd lane: an answer to an operation the client cannot read");
  }
}

}  // namespace

struct LaneTransport::Impl {
  struct OneLane {
    // The lane and what is shared with other threads' Submit, under mu. The lane thread alone
    // uses the lane for submit/wait and alone replaces it; other threads read its geometry
    // (pqcd_lane_fits) under mu only.
    pqcd_lane* lane = nullptr;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Pending> queue;                           // from other threads
    absl::Time queue_earliest = absl::InfiniteFuture();  // no queued deadline is earlier
    bool stop = false;
    bool closed = false;         // the daemon closed `lane`: calls go to `fresh`, or to gRPC
    pqcd_lane* fresh = nullptr;  // opened for a closed lane, for the lane thread to take up
    std::mutex reopen_mu;        // held while a new lane is being opened (Reopen)
    std::string path;
    uint32_t slots_wanted = 0;
    // The lane thread's own.
    std::vector<std::unique_ptr<Pending>> slots;  // in flight, by tag; done empty: abandoned
    std::vector<uint64_t> free_tags;
    absl::Time earliest = absl::InfiniteFuture();  // no in-flight deadline is earlier
    std::thread thread;
  };
  std::vector<std::unique_ptr<OneLane>> lanes;
  std::atomic<uint64_t> next{0};

  static thread_local OneLane* current;  // the lane whose thread this is

  static absl::Status Expired() {
    return absl::DeadlineExceededError("pqcd lane: no answer from the daemon within the deadline");
  }

  // Not under l.mu: a new lane for a closed one (l.fresh), opened now unless one is waiting
  // already. Opening talks to the daemon (the library gives it up to 5 s), so l.mu is not held
  // meanwhile; one thread opens at a time, and a caller that finds another opening (wait false)
  // does not wait for it: its call goes by gRPC.
  static bool Reopen(OneLane& l, bool wait) {
    const auto have = [&] {
      std::lock_guard lock(l.mu);
      return !l.closed || l.fresh != nullptr;
    };
    if (have()) return true;
    std::unique_lock opening(l.reopen_mu, std::defer_lock);
    if (wait) {
      opening.lock();
    } else if (!opening.try_lock()) {
      return false;
    }
    if (have()) return true;
    pqcd_lane* fresh = nullptr;
    char err[512] = {};
    if (pqcd_lane_open(l.path.c_str(), l.slots_wanted, &fresh, err, sizeof(err)) != 0) {
      return false;
    }
    std::lock_guard lock(l.mu);
    if (l.fresh == nullptr) {
      l.fresh = fresh;
    } else {
      pqcd_lane_close(fresh);
    }
    return true;
  }

  static void ResetSlots(OneLane& l) {
    const uint32_t n = pqcd_lane_slots(l.lane);
    l.slots.clear();
    l.slots.resize(n);
    l.free_tags.clear();
    for (uint32_t t = n; t > 0; --t) l.free_tags.push_back(t - 1);
    l.earliest = absl::InfiniteFuture();
  }

  enum class Sent { kYes, kFull, kClosed };

  // On the lane's thread: submits p now (kYes: p is in a slot, or failed with its callback run).
  // kFull: every slot is taken; kClosed: the lane was closed before p reached the daemon. Either
  // way p is left as it was.
  static Sent SubmitNow(OneLane& l, std::unique_ptr<Pending>& p) {
    if (l.free_tags.empty()) return Sent::kFull;
    pqcd_lane_request rq = Encode(*p);
    const uint64_t tag = l.free_tags.back();
    rq.tag = tag;
    const int rc = pqcd_lane_submit(l.lane, &rq);
    if (rc == PQCD_LANE_EFULL) return Sent::kFull;
    if (rc == PQCD_LANE_ECLOSED) return Sent::kClosed;
    if (rc != 0) {
      auto done = std::move(p->done);
      done(absl::UnavailableError(absl::StrCat("pqcd lane: ", pqcd_lane_strerror(rc))));
      p.reset();
      return Sent::kYes;
    }
    l.free_tags.pop_back();
    l.earliest = std::min(l.earliest, p->deadline);
    l.slots[tag] = std::move(p);
    return Sent::kYes;
  }

  // On the lane's thread: the in-flight operations past their deadline complete with
  // DEADLINE_EXCEEDED; their slots stay taken (the daemon may still write them) until the answer
  // comes, which is then dropped. Queued ones past their deadline complete too.
  static void ExpireDue(OneLane& l, absl::Time now) {
    if (now >= l.earliest) {
      l.earliest = absl::InfiniteFuture();
      for (auto& p : l.slots) {
        if (!p || !p->done) continue;
        if (now >= p->deadline) {
          auto done = std::move(p->done);
          p->done = nullptr;
          done(Expired());
        } else {
          l.earliest = std::min(l.earliest, p->deadline);
        }
      }
    }
    std::deque<Pending> expired;
    {
      std::lock_guard lock(l.mu);
      if (now < l.queue_earliest) return;
      l.queue_earliest = absl::InfiniteFuture();
      std::deque<Pending> keep;
      for (Pending& q : l.queue) {
        if (now >= q.deadline) {
          expired.push_back(std::move(q));
        } else {
          l.queue_earliest = std::min(l.queue_earliest, q.deadline);
          keep.push_back(std::move(q));
        }
      }
      l.queue.swap(keep);
    }
    for (Pending& q : expired) {
      auto done = std::move(q.done);
      done(Expired());
    }
  }

  // On the lane's thread, after the daemon closed the lane: what was in flight fails UNAVAILABLE
  // (the daemon may have served it); what never reached it (`unsent`, the queue) goes to a new
  // lane if one opens, once (an operation closed out twice fails), else fails UNAVAILABLE.
  static void Closed(OneLane& l, int rc, std::deque<std::unique_ptr<Pending>> unsent) {
    const absl::Status why =
        absl::UnavailableError(absl::StrCat("pqcd lane closed: ", pqcd_lane_strerror(rc),
                                            " (the daemon stopped, or refused the lane's use)"));
    std::deque<Pending> left;
    {
      std::lock_guard lock(l.mu);
      l.closed = true;
      left.swap(l.queue);
      l.queue_earliest = absl::InfiniteFuture();
    }
    for (auto& p : l.slots) {
      if (!p) continue;
      auto owned = std::move(p);
      if (owned->done) {
        auto done = std::move(owned->done);
        done(why);
      }
    }
    ResetSlots(l);  // the closed lane's geometry; the new lane's when it is taken up
    for (Pending& q : left) unsent.push_back(std::make_unique<Pending>(std::move(q)));
    std::deque<std::unique_ptr<Pending>> failed;
    const bool reopened = !unsent.empty() && Reopen(l, /*wait=*/true);
    {
      std::lock_guard lock(l.mu);
      for (auto& p : unsent) {
        if (reopened && !p->moved) {
          p->moved = true;
          l.queue_earliest = std::min(l.queue_earliest, p->deadline);
          l.queue.push_back(std::move(*p));
        } else {
          failed.push_back(std::move(p));
        }
      }
    }
    for (auto& p : failed) {
      auto done = std::move(p->done);
      done(why);
    }
  }

  static void Run(OneLane* l) {
    current = l;
    std::deque<Pending> batch, orphans;
    for (;;) {
      pqcd_lane* retired = nullptr;
      {
        std::unique_lock lock(l->mu);
        const bool idle = l->free_tags.size() == l->slots.size();
        if (idle && l->queue.empty() && !l->stop) {
          l->cv.wait_for(lock, std::chrono::milliseconds(100),
                         [&] { return !l->queue.empty() || l->stop; });
        }
        if (l->stop) break;
        if (l->closed && l->fresh != nullptr) {
          retired = l->lane;
          l->lane = std::exchange(l->fresh, nullptr);
          l->closed = false;
          ResetSlots(*l);
        }
        if (l->closed) orphans.swap(l->queue);  // no lane to take them (not expected: Submit)
        // As many as there are free slots; the rest wait in the queue.
        while (!l->closed && !l->queue.empty() && batch.size() < l->free_tags.size()) {
          batch.push_back(std::move(l->queue.front()));
          l->queue.pop_front();
        }
      }
      if (retired != nullptr) pqcd_lane_close(retired);
      for (Pending& q : orphans) {
        auto done = std::move(q.done);
        done(absl::UnavailableError("pqcd lane closed, and no new lane could be opened"));
      }
      orphans.clear();
      std::deque<std::unique_ptr<Pending>> unsent;
      for (Pending& q : batch) {
        auto p = std::make_unique<Pending>(std::move(q));
        // A free slot was counted for it; kFull cannot happen but is treated as closed.
        if (!unsent.empty() || SubmitNow(*l, p) != Sent::kYes) unsent.push_back(std::move(p));
      }
      batch.clear();
      if (!unsent.empty()) {
        Closed(*l, PQCD_LANE_ECLOSED, std::move(unsent));
        continue;
      }
      absl::Time now = absl::Now();
      ExpireDue(*l, now);
      if (l->free_tags.size() == l->slots.size()) continue;
      // Short waits, so that operations queued by other threads meanwhile are not held up long,
      // and none past the earliest deadline.
      absl::Duration wait = absl::Milliseconds(200);
      {
        std::lock_guard lock(l->mu);
        wait = std::min(wait, std::min(l->earliest, l->queue_earliest) - now);
      }
      pqcd_lane_result r;
      const int rc =
          pqcd_lane_wait(l->lane, std::max<int64_t>(absl::ToInt64Microseconds(wait), 0), &r);
      if (rc == PQCD_LANE_ETIMEDOUT) continue;
      if (rc != 0) {
        Closed(*l, rc, {});
        continue;
      }
      const uint64_t tag = r.tag;
      if (tag >= l->slots.size() || !l->slots[tag]) {
        pqcd_lane_release(l->lane, &r);
        continue;
      }
      std::unique_ptr<Pending> p = std::move(l->slots[tag]);
      l->free_tags.push_back(tag);
      if (!p->done) {  // abandoned at its deadline
        pqcd_lane_release(l->lane, &r);
        continue;
      }
      absl::StatusOr<Result> result = Decode(*p, r);
      pqcd_lane_release(l->lane, &r);
      auto done = std::move(p->done);
      done(std::move(result));
    }
    FailAll(*l, absl::CancelledError("the client was destroyed"));
    current = nullptr;
  }

  static void FailAll(OneLane& l, const absl::Status& why) {
    for (uint64_t t = 0; t < l.slots.size(); ++t) {
      if (!l.slots[t]) continue;
      auto p = std::move(l.slots[t]);
      l.free_tags.push_back(t);
      if (!p->done) continue;
      auto done = std::move(p->done);
      done(why);
    }
    std::deque<Pending> left;
    {
      std::lock_guard lock(l.mu);
      left.swap(l.queue);
    }
    for (Pending& p : left) {
      auto done = std::move(p.done);
      done(why);
    }
  }
};

thread_local LaneTransport::Impl::OneLane* LaneTransport::Impl::current = nullptr;

LaneTransport::LaneTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<LaneTransport>> LaneTransport::Open(const std::string& unix_path,
                                                                   int lanes, uint32_t slots) {
  auto impl = std::make_unique<Impl>();
  for (int i = 0; i < std::max(lanes, 1); ++i) {
    auto l = std::make_unique<Impl::OneLane>();
    char err[512] = {};
    if (pqcd_lane_open(unix_path.c_str(), slots, &l->lane, err, sizeof(err)) != 0) {
      for (auto& open : impl->lanes) pqcd_lane_close(open->lane);
      return absl::UnavailableError(err);
    }
    l->path = unix_path;
    l->slots_wanted = slots;
    Impl::ResetSlots(*l);
    impl->lanes.push_back(std::move(l));
  }
  for (auto& l : impl->lanes) l->thread = std::thread(Impl::Run, l.get());
  return std::unique_ptr<LaneTransport>(new LaneTransport(std::move(impl)));
}

LaneTransport::~LaneTransport() {
  for (auto& l : impl_->lanes) {
    {
      std::lock_guard lock(l->mu);
      l->stop = true;
    }
    l->cv.notify_all();
  }
  for (auto& l : impl_->lanes) {
    if (l->thread.joinable()) l->thread.join();
    pqcd_lane_close(l->lane);
    pqcd_lane_close(l->fresh);
  }
}

bool LaneTransport::Submit(Operation& op, Callback<Result>& done, absl::Duration timeout) {
  if (const auto* k = std::get_if<KeyGenOp>(&op); k != nullptr && !k->labels.empty()) {
    return false;  // the lane format has no labels
  }
  Impl::OneLane* mine = Impl::current;
  Impl::OneLane& l =
      mine != nullptr ? *mine : *impl_->lanes[impl_->next.fetch_add(1) % impl_->lanes.size()];
  Pending p;
  p.op = std::move(op);
  // The daemon gets the deadline too (at least 1 ms: 0 would be none); the lane thread enforces
  // it here, so that a daemon that stops answering does not hold the caller.
  if (timeout != absl::InfiniteDuration()) {
    p.deadline = absl::Now() + timeout;
    p.timeout_ms = static_cast<uint32_t>(
        std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 1, int64_t{1} << 31));
  }
  const pqcd_lane_request rq = Encode(p);
  if (mine != nullptr && !l.closed) {  // the lane thread: `closed` is its own to write
    if (!pqcd_lane_fits(l.lane, &rq)) {
      op = std::move(p.op);
      return false;
    }
    p.done = std::move(done);
    auto ptr = std::make_unique<Pending>(std::move(p));
    if (Impl::SubmitNow(l, ptr) == Impl::Sent::kYes) return true;
    p = std::move(*ptr);  // queued: the loop submits it, or reopens a closed lane for it
    std::lock_guard lock(l.mu);
    l.queue_earliest = std::min(l.queue_earliest, p.deadline);
    l.queue.push_back(std::move(p));
  } else {
    // Where the daemon closed the lane, a new one first (or this call goes by gRPC).
    if (!Impl::Reopen(l, /*wait=*/false)) {
      op = std::move(p.op);
      return false;
    }
    std::lock_guard lock(l.mu);
    // The lane, or the new one the lane thread has yet to take up; none if it closed again.
    pqcd_lane* geometry = l.closed ? l.fresh : l.lane;
    if (geometry == nullptr || !pqcd_lane_fits(geometry, &rq)) {
      op = std::move(p.op);
      return false;
    }
    p.done = std::move(done);
    l.queue_earliest = std::min(l.queue_earliest, p.deadline);
    l.queue.push_back(std::move(p));
  }
  l.cv.notify_one();
  return true;
}

}  // namespace pqcd::client::internal
