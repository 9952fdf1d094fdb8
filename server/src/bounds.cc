#include "bounds.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/server_context.h"

namespace pqcd::server {

CallSlots::CallSlots(uint32_t total, uint32_t per_identity, std::string what,
                     std::string total_flag, std::string identity_flag)
    : total_(total),
      per_identity_(per_identity),
      what_(std::move(what)),
      total_flag_(std::move(total_flag)),
      identity_flag_(std::move(identity_flag)) {}

absl::Status CallSlots::Acquire(const std::string& identity) {
  absl::MutexLock lock(&mu_);
  if (total_ > 0 && open_ >= total_) {
    ++refused_;
    return absl::ResourceExhaustedError(
        absl::StrCat("too many ", what_, " open (", total_flag_, " ", total_, "); retry later"));
  }
  uint32_t& mine = per_[identity];
  if (per_identity_ > 0 && mine >= per_identity_) {
    ++refused_;
    return absl::ResourceExhaustedError(absl::StrCat("this caller (", identity, ") has ", mine, " ",
                                                     what_, " open (", identity_flag_, " ",
                                                     per_identity_, "); close some first"));
  }
  ++mine;
  ++open_;
  return absl::OkStatus();
}

void CallSlots::Release(const std::string& identity) {
  absl::MutexLock lock(&mu_);
  auto it = per_.find(identity);
  if (it == per_.end()) return;
  --open_;
  if (--it->second == 0) per_.erase(it);
}

uint32_t CallSlots::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

uint64_t CallSlots::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

MemoryAccount::MemoryAccount(size_t limit, size_t per_identity)
    : limit_(limit), per_identity_(per_identity) {}

absl::Status MemoryAccount::Charge(const std::string& identity, size_t bytes) {
  absl::MutexLock lock(&mu_);
  if (limit_ > 0 && charged_ + bytes > limit_) {
    ++refused_;
    return absl::ResourceExhaustedError(
        absl::StrCat("pqcd holds ", charged_,
                     " bytes of requests and unread answers for all its "
                     "callers; this request would pass --memory-limit (",
                     limit_, " bytes); retry later"));
  }
  auto [it, inserted] = per_.try_emplace(identity, 0);
  if (per_identity_ > 0 && it->second + bytes > per_identity_) {
    ++refused_;
    const size_t mine = it->second;
    if (inserted) per_.erase(it);
    return absl::ResourceExhaustedError(
        absl::StrCat("pqcd holds ", mine, " bytes of requests and unread answers for this caller (",
                     identity, "); this request would pass its share (--memory-per-identity ",
                     per_identity_, " bytes): read the answers of earlier calls, or retry later"));
  }
  it->second += bytes;
  charged_ += bytes;
  return absl::OkStatus();
}

void MemoryAccount::Release(const std::string& identity, size_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = per_.find(identity);
  if (it == per_.end()) return;
  const size_t n = std::min(bytes, it->second);
  it->second -= n;
  charged_ -= n;
  if (it->second == 0) per_.erase(it);
}

size_t MemoryAccount::charged() const {
  absl::MutexLock lock(&mu_);
  return charged_;
}

uint64_t MemoryAccount::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

UnreadAnswers::UnreadAnswers(std::chrono::steady_clock::duration timeout)
    : timeout_(timeout), thread_([this] { Loop(); }) {}

UnreadAnswers::~UnreadAnswers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void UnreadAnswers::Watch(Entry* e, grpc::ServerContextBase* context) {
  std::lock_guard<std::mutex> lock(mu_);
  if (e->linked) UnlinkLocked(e);
  e->context = context;
  e->since = std::chrono::steady_clock::now();
  e->prev = tail_;
  e->next = nullptr;
  (tail_ != nullptr ? tail_->next : head_) = e;
  tail_ = e;
  e->linked = true;
  ++size_;
  // No wake-up: the watch never sleeps longer than one timeout (Loop), so it wakes by this entry's
  // due time anyway. Notifying here woke its thread at every answer of an otherwise idle queue,
  // a context switch per few unary calls.
}

void UnreadAnswers::Unwatch(Entry* e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (e->linked) UnlinkLocked(e);
}

void UnreadAnswers::UnlinkLocked(Entry* e) {
  (e->prev != nullptr ? e->prev->next : head_) = e->next;
  (e->next != nullptr ? e->next->prev : tail_) = e->prev;
  e->prev = e->next = nullptr;
  e->linked = false;
  --size_;
}

uint64_t UnreadAnswers::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

size_t UnreadAnswers::watched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return size_;
}

void UnreadAnswers::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const auto now = std::chrono::steady_clock::now();
    if (head_ == nullptr) {
      // Whatever is watched from now on is due no earlier than now + timeout.
      cv_.wait_until(lock, now + timeout_, [&] { return stop_; });
      continue;
    }
    const auto due = head_->since + timeout_;
    if (now < due) {
      // A later head (after an unwatch) is due later still: waking at the old due time is fine.
      cv_.wait_until(lock, due, [&] { return stop_; });
      continue;
    }
    // Cancelled under the lock, so the call cannot be gone meanwhile (its owner unwatches before
    // it is deleted); gRPC runs the call's reactions on its own threads, never inside TryCancel.
    Entry* e = head_;
    UnlinkLocked(e);
    ++cancelled_;
    e->context->TryCancel();
  }
}

absl::Status ControlCallBounds::Admit(const CallBounds& bounds, const std::string& identity,
                                      size_t request_bytes, size_t answer_bytes,
                                      std::string_view method) {
  Release();
  bounds_ = bounds;
  identity_ = identity;
  if (request_bytes > kMaxControlRequestBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(std::string(method), ": the request has ",
                                                     request_bytes,
                                                     " bytes; requests of the methods other than "
                                                     "the crypto ones take at most ",
                                                     kMaxControlRequestBytes, " bytes"));
  }
  if (bounds_.memory == nullptr) return absl::OkStatus();
  const size_t bytes = request_bytes + answer_bytes;
  if (absl::Status s = bounds_.memory->Charge(identity_, bytes); !s.ok()) return s;
  charge_ = MemoryCharge(bounds_.memory, identity_, bytes);
  return absl::OkStatus();
}

absl::Status ControlCallBounds::ChargeMore(size_t bytes) {
  if (bounds_.memory == nullptr || bytes == 0) return absl::OkStatus();
  if (absl::Status s = bounds_.memory->Charge(identity_, bytes); !s.ok()) return s;
  if (charge_.bytes() == 0) {
    charge_ = MemoryCharge(bounds_.memory, identity_, bytes);
  } else {
    charge_.Grow(bytes);
  }
  return absl::OkStatus();
}

void ControlCallBounds::Watch(grpc::ServerContextBase* context) {
  if (bounds_.unread != nullptr) bounds_.unread->Watch(&entry_, context);
}

void ControlCallBounds::Unwatch() {
  if (bounds_.unread != nullptr) bounds_.unread->Unwatch(&entry_);
}

void ControlCallBounds::Release() {
  Unwatch();
  charge_.Reset();
}

}  // namespace pqcd::server
