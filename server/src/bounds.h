// Whole-daemon bounds shared by every call (issue 25): what all callers together, and any one
// caller identity, may hold at once. Per-call limits (sizes, items, answer budgets) are checked
// where each request is read; these add up across calls and connections.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace grpc {
class ServerContextBase;
}

namespace pqcd::server {

// Long-lived calls (Streams, HashStreams) open at once: at most `total`, and at most
// `per_identity` for one caller identity, so that one identity cannot take every slot.
class CallSlots {
 public:
  // `what` names the calls and `total_flag`/`identity_flag` the flags, for the refusal messages.
  CallSlots(uint32_t total, uint32_t per_identity, std::string what, std::string total_flag,
            std::string identity_flag);
  // OK and a slot taken, or RESOURCE_EXHAUSTED naming the limit reached.
  absl::Status Acquire(const std::string& identity);
  void Release(const std::string& identity);
  uint32_t open() const;
  uint64_t refused() const;

 private:
  const uint32_t total_;
  const uint32_t per_identity_;
  const std::string what_, total_flag_, identity_flag_;
  mutable absl::Mutex mu_;
  uint32_t open_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, uint32_t> per_ ABSL_GUARDED_BY(mu_);
};

// Bytes held for callers: requests being computed and answers not yet taken by the client (unary
// calls, Batches, Stream messages, HashStream messages). Charged when a call is admitted, released
// when gRPC is done with it. Past `limit` in all or `per_identity` for one identity, new work is
// refused with RESOURCE_EXHAUSTED (naming the flag) while other identities are still served.
// 0: no limit.
class MemoryAccount {
 public:
  MemoryAccount(size_t limit, size_t per_identity);
  absl::Status Charge(const std::string& identity, size_t bytes);
  void Release(const std::string& identity, size_t bytes);
  size_t charged() const;
  uint64_t refused() const;
  size_t limit() const { return limit_; }
  size_t per_identity() const { return per_identity_; }

 private:
  const size_t limit_;
  const size_t per_identity_;
  mutable absl::Mutex mu_;
  size_t charged_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, size_t> per_ ABSL_GUARDED_BY(mu_);
};

// One charge, released when it goes (move-only).
class MemoryCharge {
 public:
  MemoryCharge() = default;
  MemoryCharge(MemoryAccount* account, std::string identity, size_t bytes)
      : account_(account), identity_(std::move(identity)), bytes_(bytes) {}
  MemoryCharge(MemoryCharge&& o) noexcept { *this = std::move(o); }
  MemoryCharge& operator=(MemoryCharge&& o) noexcept {
    if (this != &o) {
      Reset();
      account_ = o.account_;
      identity_ = std::move(o.identity_);
      bytes_ = o.bytes_;
      o.account_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  MemoryCharge(const MemoryCharge&) = delete;
  MemoryCharge& operator=(const MemoryCharge&) = delete;
  ~MemoryCharge() { Reset(); }
  void Reset() {
    if (account_ != nullptr && bytes_ > 0) account_->Release(identity_, bytes_);
    account_ = nullptr;
    bytes_ = 0;
  }
  size_t bytes() const { return bytes_; }
  // `more` bytes that the account has just charged for the same identity join this charge.
  void Grow(size_t more) { bytes_ += more; }

 private:
  MemoryAccount* account_ = nullptr;
  std::string identity_;
  size_t bytes_ = 0;
};

// Answers handed to gRPC that the client does not take: a client that stops reading (an HTTP/2
// flow-control window of 0) would pin them, and the memory charged for them, for as long as it
// keeps the connection. Each answer is watched from the moment it is handed to gRPC until gRPC is
// done with it; one that waits longer than `timeout` has its call cancelled (the client sees
// CANCELLED, gRPC frees the answer and the call's charges are released).
class UnreadAnswers {
 public:
  // One watched answer, embedded in its call (its owner must Unwatch before it goes).
  struct Entry {
    grpc::ServerContextBase* context = nullptr;
    std::chrono::steady_clock::time_point since;
    Entry* prev = nullptr;
    Entry* next = nullptr;
    bool linked = false;
  };
  explicit UnreadAnswers(std::chrono::steady_clock::duration timeout);
  ~UnreadAnswers();
  UnreadAnswers(const UnreadAnswers&) = delete;
  UnreadAnswers& operator=(const UnreadAnswers&) = delete;

  // The call's answer was just handed to gRPC (re-watching a linked entry restarts its clock).
  void Watch(Entry* e, grpc::ServerContextBase* context);
  // gRPC is done with it (written, or the call ended). Idempotent.
  void Unwatch(Entry* e);
  uint64_t cancelled() const;
  size_t watched() const;

 private:
  void UnlinkLocked(Entry* e);
  void Loop();

  const std::chrono::steady_clock::duration timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Entry* head_ = nullptr;  // oldest first: every entry has the same timeout
  Entry* tail_ = nullptr;
  size_t size_ = 0;
  uint64_t cancelled_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// The requests of the methods that carry no crypto payload (Keys, grpc.health.v1, reflection) are
// small: a key id, a service name, a symbol, at most an imported private key in PEM with a key's
// labels (64 of up to 1280 bytes). One larger than this is refused (RESOURCE_EXHAUSTED) and freed
// as soon as it arrives, whatever --max-message-bytes lets the crypto methods receive. (gRPC has
// no receive limit per method: the request has been received when the check runs, and is freed
// at once instead of staying for as long as its answer is not taken.)
inline constexpr size_t kMaxControlRequestBytes = 128 * 1024;

// The whole-daemon bounds that every call of every service is held to; null members: unbounded
// (unit tests).
struct CallBounds {
  MemoryAccount* memory = nullptr;  // --memory-limit, --memory-per-identity
  UnreadAnswers* unread = nullptr;  // --unread-answer-timeout
};

// What one call of a non-crypto service (Keys, health, reflection) holds against CallBounds, as a
// crypto call does: its request and answers are charged to its caller in the memory account, and
// each answer handed to gRPC is watched until the client takes it, so that a client that never
// reads cannot pin them. Admit before any work, Watch before each answer or Finish is handed to
// gRPC, Release (or the destructor) once gRPC is done with the call. Not thread-safe: one
// reaction of the call at a time uses it (core_reactor.h).
class ControlCallBounds {
 public:
  ControlCallBounds() = default;
  ~ControlCallBounds() { Release(); }
  ControlCallBounds(const ControlCallBounds&) = delete;
  ControlCallBounds& operator=(const ControlCallBounds&) = delete;

  // A request of `request_bytes` arrived for `identity`: refused (RESOURCE_EXHAUSTED naming the
  // limit) past kMaxControlRequestBytes, or when the account cannot take `request_bytes` +
  // `answer_bytes` more for it; else charged until Release.
  absl::Status Admit(const CallBounds& bounds, const std::string& identity, size_t request_bytes,
                     size_t answer_bytes, std::string_view method);
  // `bytes` more for the same identity (an answer whose size is known only once it is made).
  absl::Status ChargeMore(size_t bytes);
  size_t charged() const { return charge_.bytes(); }
  // An answer (or the call's status) is handed to gRPC now: watched until Unwatch or Release.
  void Watch(grpc::ServerContextBase* context);
  // gRPC is done with the answer (its write came back).
  void Unwatch();
  // Unwatches and gives back every byte charged. Idempotent; Admit may follow (a stream's next
  // message).
  void Release();

 private:
  CallBounds bounds_;
  std::string identity_;
  MemoryCharge charge_;
  UnreadAnswers::Entry entry_;
};

}  // namespace pqcd::server
