#include "lanes.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "bounds.h"
#include "core_queues.h"
#include "ops.h"
#include "pqcd/engine/node_queue.h"
#include "pqcd/lane/protocol.h"
#include "wipe.h"

namespace pqcd::server {

namespace lane = ::pqcd::lane;
using Clock = std::chrono::steady_clock;

// ---- Decoding and encoding
// ------------------------------------------------------------------------

absl::Status DecodeLaneRequest(const uint8_t* slot, size_t slot_bytes, uint32_t max_input,
                               pqc::v1::Operation* op, LaneRequestMeta* meta) {
  *meta = LaneRequestMeta{};
  if (slot_bytes < sizeof(lane::RequestHeader)) {
    return absl::InvalidArgumentError("lane: the slot is smaller than a request header");
  }
  lane::RequestHeader h;
  std::memcpy(&h, slot, sizeof(h));  // read once; everything below uses the copy
  meta->tag = h.tag;
  meta->timeout_ms = h.timeout_ms;
  const uint64_t total = lane::RequestBytes(h);
  if (total > slot_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("lane: the request's fields take ", total,
                                                   " bytes, more than a slot (", slot_bytes, ")"));
  }
  meta->request_bytes = static_cast<size_t>(total);
  if (h.op < 1 || h.op > lane::kNumOps) {
    return absl::InvalidArgumentError(
        absl::StrCat("op: 1 (KeyGen) to ", lane::kNumOps, " (Hash), got ", h.op));
  }
  if ((h.flags & ~lane::kAllRequestFlags) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("flags: unknown bits 0x", absl::Hex(h.flags)));
  }
  if (h.input_len > max_input) {
    return absl::InvalidArgumentError(absl::StrCat("input: at most ", max_input,
                                                   " bytes on this lane, got ", h.input_len,
                                                   " (larger inputs: gRPC, or a pre-hash)"));
  }
  if (h.output_length > max_input) {
    return absl::InvalidArgumentError(absl::StrCat("output_length: at most ", max_input,
                                                   " bytes on this lane, got ", h.output_length));
  }
  if (h.owner_len > lane::kMaxOwnerBytes || h.key_id_len > lane::kMaxKeyIdBytes) {
    return absl::InvalidArgumentError("key_id/owner: too long");
  }
  const uint8_t* at = slot + sizeof(h);
  auto take = [&](uint64_t n) {
    std::string_view v(reinterpret_cast<const char*>(at), static_cast<size_t>(n));
    at += n;
    return v;
  };
  const std::string_view owner = take(h.owner_len);
  const std::string_view key_id = take(h.key_id_len);
  const std::string_view context = take(h.context_len);
  const std::string_view key = take(h.key_len);
  const std::string_view input = take(h.input_len);
  const std::string_view signature = take(h.signature_len);
  const bool held = (h.flags & lane::kHeldKey) != 0;
  const auto algorithm = static_cast<pqc::v1::Algorithm>(h.algorithm);
  if (held && !key.empty()) {
    return absl::InvalidArgumentError("key: a held key (flag HELD_KEY) comes with no key bytes");
  }
  // Every field a lane sets is set below (the message is reused: mutable_*() keeps the kind's
  // sub-message and the strings' buffers; the fields a lane never sets, labels and key_format,
  // stay empty).
  auto set_ref = [&](pqc::v1::KeyRef* ref) {
    ref->set_key_id(key_id.data(), key_id.size());
    ref->set_version(h.key_version);
    ref->set_owner(owner.data(), owner.size());
  };
  auto only = [&](bool ok, const char* what) {
    return ok ? absl::OkStatus()
              : absl::InvalidArgumentError(absl::StrCat(what, " is not used by this operation"));
  };
  switch (static_cast<lane::Op>(h.op)) {
    case lane::Op::kKeyGen: {
      if (held) return absl::InvalidArgumentError("flags: HELD_KEY is not used by KeyGen");
      if (auto s = only(input.empty() && signature.empty() && context.empty() && owner.empty(),
                        "input/signature/context/owner");
          !s.ok()) {
        return s;
      }
      auto* r = op->mutable_keygen();
      r->set_algorithm(algorithm);
      r->set_seed(key.data(), key.size());
      r->set_hold((h.flags & lane::kHold) != 0);
      r->set_key_id(key_id.data(), key_id.size());
      break;
    }
    case lane::Op::kEncaps: {
      if (auto s = only(input.empty() && signature.empty() && context.empty(),
                        "input/signature/context");
          !s.ok()) {
        return s;
      }
      auto* r = op->mutable_encaps();
      r->set_algorithm(algorithm);
      held ? set_ref(r->mutable_key_ref()) : r->set_public_key(key.data(), key.size());
      break;
    }
    case lane::Op::kDecaps: {
      if (auto s = only(signature.empty() && context.empty(), "signature/context"); !s.ok()) {
        return s;
      }
      auto* r = op->mutable_decaps();
      r->set_algorithm(algorithm);
      held ? set_ref(r->mutable_key_ref()) : r->set_private_key(key.data(), key.size());
      r->set_ciphertext(input.data(), input.size());
      break;
    }
    case lane::Op::kSign: {
      if (auto s = only(signature.empty(), "signature"); !s.ok()) return s;
      auto* r = op->mutable_sign();
      r->set_algorithm(algorithm);
      held ? set_ref(r->mutable_key_ref()) : r->set_private_key(key.data(), key.size());
      r->set_message(input.data(), input.size());
      r->set_context(context.data(), context.size());
      r->set_deterministic((h.flags & lane::kDeterministic) != 0);
      r->set_pre_hash(static_cast<pqc::v1::PreHash>(h.pre_hash));
      r->set_external_mu((h.flags & lane::kExternalMu) != 0);
      break;
    }
    case lane::Op::kVerify: {
      auto* r = op->mutable_verify();
      r->set_algorithm(algorithm);
      held ? set_ref(r->mutable_key_ref()) : r->set_public_key(key.data(), key.size());
      r->set_message(input.data(), input.size());
      r->set_signature(signature.data(), signature.size());
      r->set_context(context.data(), context.size());
      r->set_pre_hash(static_cast<pqc::v1::PreHash>(h.pre_hash));
      r->set_external_mu((h.flags & lane::kExternalMu) != 0);
      break;
    }
    case lane::Op::kHash: {
      if (held) return absl::InvalidArgumentError("flags: HELD_KEY is not used by Hash");
      if (auto s = only(key.empty() && signature.empty() && context.empty() && owner.empty() &&
                            key_id.empty(),
                        "key/signature/context/owner/key_id");
          !s.ok()) {
        return s;
      }
      auto* r = op->mutable_hash();
      r->set_algorithm(algorithm);
      r->set_data(input.data(), input.size());
      r->set_output_length(h.output_length);
      break;
    }
  }
  return absl::OkStatus();
}

size_t EncodeLaneResponse(const LaneRequestMeta& meta, const absl::Status& status,
                          const pqc::v1::OperationResult& result, uint8_t* slot,
                          size_t slot_bytes) {
  lane::ResponseHeader h{};
  h.tag = meta.tag;
  h.code = static_cast<int32_t>(status.code());
  std::string_view outs[3];
  std::string_view key_id;
  std::string_view message;
  if (status.ok()) {
    switch (result.result_case()) {
      case pqc::v1::OperationResult::kKeygen:
        outs[0] = result.keygen().public_key();
        outs[1] = result.keygen().private_key();
        outs[2] = result.keygen().seed();
        key_id = result.keygen().key_id();
        h.key_version = result.keygen().key_version();
        break;
      case pqc::v1::OperationResult::kEncaps:
        outs[0] = result.encaps().ciphertext();
        outs[1] = result.encaps().shared_secret();
        h.key_version = result.encaps().key_version();
        break;
      case pqc::v1::OperationResult::kDecaps:
        outs[0] = result.decaps().shared_secret();
        break;
      case pqc::v1::OperationResult::kSign:
        outs[0] = result.sign().signature();
        h.key_version = result.sign().key_version();
        break;
      case pqc::v1::OperationResult::kVerify:
        if (result.verify().valid()) h.flags |= lane::kValid;
        break;
      case pqc::v1::OperationResult::kHash:
        outs[0] = result.hash().digest();
        break;
      default:
        break;
    }
  } else {
    const absl::string_view m = status.message().substr(0, lane::kMaxMessageBytes);
    message = std::string_view(m.data(), m.size());
  }
  size_t at = sizeof(h);
  auto put = [&](std::string_view v) -> uint32_t {
    const size_t n = std::min(v.size(), slot_bytes - at);  // sized to fit; never past the slot
    if (n > 0) std::memcpy(slot + at, v.data(), n);
    at += n;
    return static_cast<uint32_t>(n);
  };
  h.message_len = put(message);
  h.key_id_len = static_cast<uint16_t>(put(key_id.substr(0, lane::kMaxKeyIdBytes)));
  for (int i = 0; i < 3; ++i) h.out_len[i] = put(outs[i]);
  std::memcpy(slot, &h, sizeof(h));
  return at;
}

// ---- Lanes
// ------------------------------------------------------------------------------------------

namespace {

void Zero(const std::string& s) {
  if (!s.empty()) explicit_bzero(const_cast<char*>(s.data()), s.size());
}

// The fields of a lane request and its answer that carry secrets (private keys, seeds, shared
// secrets), wiped after each request: the messages are reused by the slot's next request, and a
// walk of every field (WipeMessage) costs more than the operation's own overhead here.
void WipeSecrets(pqc::v1::Operation& rq, pqc::v1::OperationResult& rs) {
  switch (rq.op_case()) {
    case pqc::v1::Operation::kKeygen:
      Zero(rq.keygen().seed());
      break;
    case pqc::v1::Operation::kDecaps:
      Zero(rq.decaps().private_key());
      break;
    case pqc::v1::Operation::kSign:
      Zero(rq.sign().private_key());
      break;
    default:
      break;
  }
  switch (rs.result_case()) {
    case pqc::v1::OperationResult::kKeygen:
      Zero(rs.keygen().private_key());
      Zero(rs.keygen().seed());
      break;
    case pqc::v1::OperationResult::kEncaps:
      Zero(rs.encaps().shared_secret());
      break;
    case pqc::v1::OperationResult::kDecaps:
      Zero(rs.decaps().shared_secret());
      break;
    default:
      break;
  }
}

// Empties a result for the slot's next request, keeping its sub-message and the strings' buffers
// (the next request is usually of the same kind).
void ResetResult(pqc::v1::OperationResult* r) {
  switch (r->result_case()) {
    case pqc::v1::OperationResult::kKeygen:
      r->mutable_keygen()->Clear();
      break;
    case pqc::v1::OperationResult::kEncaps:
      r->mutable_encaps()->Clear();
      break;
    case pqc::v1::OperationResult::kDecaps:
      r->mutable_decaps()->Clear();
      break;
    case pqc::v1::OperationResult::kSign:
      r->mutable_sign()->Clear();
      break;
    case pqc::v1::OperationResult::kVerify:
      r->mutable_verify()->Clear();
      break;
    case pqc::v1::OperationResult::kHash:
      r->mutable_hash()->Clear();
      break;
    default:
      break;
  }
  r->set_code(0);
  r->clear_message();
}

void FutexWakeAll(uint32_t* word) {
  ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

struct LaneServer::Op {
  Lane* lane = nullptr;
  uint32_t slot = 0;
  LaneRequestMeta meta;
  pqc::v1::Operation request;
  pqc::v1::OperationResult result;
  std::optional<OpState> state;
  Clock::time_point arrived;
};

struct LaneServer::Lane {
  uint64_t id = 0;
  int worker = 0;
  Caller caller;
  int sock = -1;
  int doorbell = -1;
  void* base = nullptr;
  size_t region_bytes = 0;
  uint32_t slot_count = 0;
  lane::Control* control = nullptr;
  uint32_t* submissions = nullptr;
  uint32_t* completions = nullptr;
  uint8_t* slots = nullptr;
  MemoryCharge charge;
  LaneServer::EventRef sock_ref{LaneServer::EventKind::kSocket, this};
  LaneServer::EventRef bell_ref{LaneServer::EventKind::kDoorbell, this};

  uint32_t sq_head = 0;                          // the worker's: the next submission to take
  std::unique_ptr<std::atomic<uint8_t>[]> busy;  // per slot: taken, not answered yet
  std::vector<std::unique_ptr<Op>> ops;          // per slot, made on first use (the worker's)
  GivenKeys given{/*own_copies=*/true};          // the worker's

  std::mutex mu;                  // the completion ring and `waiting`
  uint32_t cq_tail = 0;           // the next completion position
  std::vector<uint32_t> waiting;  // answered slots the completion ring had no room for
  std::atomic<bool> has_waiting{false};

  bool wake_queued = false;  // on its worker's to_wake (the worker's)
  std::atomic<uint32_t> in_flight{0};
  std::atomic<bool> broken{false};
  std::atomic<bool> closing{false};  // the control thread let go of it: free once idle

  uint8_t* slot(uint32_t i) const { return slots + size_t{i} * slot_bytes; }
  uint32_t slot_bytes = 0;
};

struct LaneServer::WorkerLanes {
  std::mutex mu;  // lanes (the control thread adds; the worker removes)
  std::vector<Lane*> lanes;
  std::atomic<size_t> count{0};
  std::atomic<bool> idle{false};
  std::vector<engine::Job*> jobs;  // the worker's
  Clock::time_point last_active;   // the worker's: when a lane last gave it a request
  std::vector<Lane*> to_wake;      // the worker's: callers to wake after this burst
};

// Wakes the callers that the worker's last burst answered while they slept (the worker's thread;
// before any lane of it can be freed).
void WakeCallers(std::vector<LaneServer::Lane*>& to_wake);

LaneServer::LaneServer(LaneOptions options, ServiceContext* ctx, int workers,
                       engine::WorkerIo* waker)
    : options_(std::move(options)),
      ctx_(ctx),
      waker_(waker),
      slot_bytes_(static_cast<uint32_t>(lane::SlotBytes(options_.max_input_bytes))) {
  for (int i = 0; i < workers; ++i) workers_.push_back(std::make_unique<WorkerLanes>());
  if (ctx_ != nullptr && ctx_->log) {
    break_log_ = std::make_unique<KeyUseAuditor>(
        [log = ctx_->log](const std::string& line) { log->warn("lanes: {}", line); },
        std::chrono::seconds(10), 1024, KeyUseAuditor::Clock{}, /*background_flush=*/true,
        "lane_break");
  }
}

absl::StatusOr<std::unique_ptr<LaneServer>> LaneServer::Start(LaneOptions options,
                                                              ServiceContext* ctx, int workers,
                                                              engine::WorkerIo* waker) {
  std::unique_ptr<LaneServer> s(new LaneServer(std::move(options), ctx, workers, waker));
  const std::string& path = s->options_.socket_path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("lane socket path too long: ", path));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  s->listen_fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s->listen_fd_ < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  // A socket file left by a previous run is replaced (as the gRPC socket is); anything else at
  // the path is refused.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("lane socket ", path, ": exists and is not a socket"));
    }
    const int probe = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    const bool live =
        probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (probe >= 0) ::close(probe);
    if (live) {
      return absl::FailedPreconditionError(
          absl::StrCat("lane socket ", path, ": another process serves lanes there"));
    }
    ::unlink(path.c_str());
  }
  // Created with no more access than asked for (as the gRPC socket), then given the exact mode.
  const mode_t old_umask = ::umask(static_cast<mode_t>(~s->options_.mode & 0777));
  const int bound = ::bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int bind_errno = errno;
  ::umask(old_umask);
  if (bound != 0) {
    return absl::InternalError(
        absl::StrCat("lane socket ", path, ": bind: ", strerror(bind_errno)));
  }
  if (::lstat(path.c_str(), &st) == 0) s->path_inode_ = st.st_ino;
  if (::chmod(path.c_str(), s->options_.mode) != 0 || ::listen(s->listen_fd_, 128) != 0) {
    return absl::InternalError(absl::StrCat("lane socket ", path, ": ", strerror(errno)));
  }
  s->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  s->stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->epoll_fd_ < 0 || s->stop_fd_ < 0) {
    return absl::InternalError(absl::StrCat("lane control: ", strerror(errno)));
  }
  static LaneServer::EventRef listen_ref{LaneServer::EventKind::kListen, nullptr};
  static LaneServer::EventRef stop_ref{LaneServer::EventKind::kStop, nullptr};
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &listen_ref;
  ::epoll_ctl(s->epoll_fd_, EPOLL_CTL_ADD, s->listen_fd_, &ev);
  ev.data.ptr = &stop_ref;
  ::epoll_ctl(s->epoll_fd_, EPOLL_CTL_ADD, s->stop_fd_, &ev);
  s->thread_ = std::thread([p = s.get()] { p->Run(); });
  return s;
}

LaneServer::~LaneServer() {
  Stop();
  if (thread_.joinable()) thread_.join();
  for (auto& w : workers_) {
    for (Lane* l : w->lanes) FreeLane(l);
    w->lanes.clear();
  }
  for (auto& [fd, p] : pending_) ::close(fd);
  for (auto& [fd, r] : refused_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void LaneServer::Stop() {
  if (stopping_.exchange(true)) return;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(stop_fd_, &one, sizeof(one));
  // Only our own socket file: another process may have put its own at the path since.
  struct stat st {};
  if (::lstat(options_.socket_path.c_str(), &st) == 0 && st.st_ino == path_inode_) {
    ::unlink(options_.socket_path.c_str());
  }
  for (int i = 0; i < static_cast<int>(workers_.size()); ++i) waker_->Wake(i);
}

LaneServer::Stats LaneServer::stats() const {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.open = open_;
    s.pending = pending_.size();
    s.opened = opened_;
    s.refused_limit = refused_limit_;
    s.refused_identity_limit = refused_identity_;
    s.refused_memory = refused_memory_;
    s.refused_protocol = refused_protocol_;
    s.broken = broken_;
  }
  for (int i = 0; i < Stats::kCodes; ++i) s.requests[i] = codes_[i].load(std::memory_order_relaxed);
  for (int i = 0; i < engine::kLatencyBuckets; ++i) {
    s.duration_hist[static_cast<size_t>(i)] = buckets_[i].load(std::memory_order_relaxed);
  }
  s.duration_ns_sum = duration_ns_.load(std::memory_order_relaxed);
  return s;
}

// ---- The control thread
// --------------------------------------------------------------------------

void LaneServer::Run() {
  epoll_event events[64];
  std::vector<Lane*> to_close;
  while (!stopping_.load(std::memory_order_acquire)) {
    const int n = ::epoll_wait(epoll_fd_, events, 64, 100);
    for (int i = 0; i < n; ++i) {
      auto* ref = static_cast<LaneServer::EventRef*>(events[i].data.ptr);
      switch (ref->kind) {
        case LaneServer::EventKind::kListen:
          Accept();
          break;
        case LaneServer::EventKind::kStop:
          break;
        case LaneServer::EventKind::kPending:
          OpenPending(ref->fd);  // erases the connection's entry, ref with it
          break;
        case LaneServer::EventKind::kRefused:
          SendRefusal(ref->fd);  // likewise
          break;
        case LaneServer::EventKind::kSocket: {
          // Anything on an open lane's socket: the caller closed it, exited, or sent what the
          // protocol does not have. Either way the lane ends.
          auto* l = static_cast<Lane*>(ref->ptr);
          if (std::find(to_close.begin(), to_close.end(), l) == to_close.end()) {
            ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l->sock, nullptr);
            ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l->doorbell, nullptr);
            to_close.push_back(l);
          }
          break;
        }
        case LaneServer::EventKind::kDoorbell: {
          auto* l = static_cast<Lane*>(ref->ptr);
          uint64_t v;
          while (::read(l->doorbell, &v, sizeof(v)) > 0) {
          }
          // Only a worker that may block needs waking; a busy one finds the request itself.
          if (workers_[static_cast<size_t>(l->worker)]->idle.load(std::memory_order_acquire)) {
            waker_->Wake(l->worker);
          }
          break;
        }
      }
    }
    // Let go of the closed lanes only now: an event of this round may still have named them.
    for (Lane* l : to_close) {
      l->closing.store(true, std::memory_order_release);
      waker_->Wake(l->worker);
    }
    to_close.clear();
    // Connections that did not ask for a lane within the handshake timeout.
    const auto now = Clock::now();
    std::vector<int> late;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [fd, p] : pending_) {
        if (now - p.since > options_.handshake_timeout) late.push_back(fd);
      }
    }
    for (int fd : late) ClosePending(fd, /*timed_out=*/true);
    late.clear();
    for (const auto& [fd, r] : refused_) {
      if (now - r.since > options_.handshake_timeout) late.push_back(fd);
    }
    for (int fd : late) {
      epoll_event ev{};
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, &ev);
      SendRefusal(fd);
    }
  }
}

void LaneServer::Accept() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      ::close(fd);
      continue;
    }
    Caller caller = UnixCaller(cred.uid, ctx_->identity_policy);
    std::string why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (open_ + pending_.size() >= options_.max_lanes) {
        ++refused_limit_;
        why = absl::StrCat("pqcd serves at most ", options_.max_lanes,
                           " lanes at once (--max-lanes); use gRPC or retry later");
      } else if (per_identity_[caller.identity] >= options_.max_lanes_per_identity) {
        ++refused_identity_;
        why = absl::StrCat(caller.identity, " has ", options_.max_lanes_per_identity,
                           " lanes open already (--max-lanes-per-identity)");
      } else {
        ++per_identity_[caller.identity];
        PendingConn& p = pending_[fd];
        p = PendingConn{
            std::move(caller), Clock::now(), {LaneServer::EventKind::kPending, nullptr, fd}};
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
        ev.data.ptr = &p.ref;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
        continue;
      }
    }
    // The refusal is sent once the caller's request has arrived: closing a Unix socket with
    // unread data resets it, and the caller would not see why. A few such connections wait at
    // most the handshake timeout; beyond that they are closed at once.
    if (refused_.size() >= kMaxRefusedWaiting) {
      ::close(fd);
      continue;
    }
    RefusedConn& r = refused_[fd];
    r = RefusedConn{std::move(why), Clock::now(), {LaneServer::EventKind::kRefused, nullptr, fd}};
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.ptr = &r.ref;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
}

void LaneServer::SendRefusal(int fd) {
  auto it = refused_.find(fd);
  if (it == refused_.end()) return;
  lane::OpenRequest req;
  while (::recv(fd, &req, sizeof(req), MSG_DONTWAIT) > 0) {
  }
  Refuse(fd, static_cast<int>(absl::StatusCode::kResourceExhausted), it->second.why);
  refused_.erase(it);
  ::close(fd);
}

void LaneServer::Refuse(int fd, int code, const std::string& why) {
  lane::OpenReply reply;
  reply.code = code;
  std::snprintf(reply.message, sizeof(reply.message), "%s", why.c_str());
  [[maybe_unused]] ssize_t w = ::send(fd, &reply, sizeof(reply), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void LaneServer::ClosePending(int fd, bool timed_out, bool protocol) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(fd);
    if (it == pending_.end()) return;
    const std::string& identity = it->second.caller.identity;
    if (--per_identity_[identity] == 0) per_identity_.erase(identity);
    pending_.erase(it);
    if (protocol) ++refused_protocol_;
  }
  if (timed_out) {
    // Registered (one-shot, never fired) until now.
    epoll_event ev{};
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, &ev);
  }
  ::close(fd);
}

void LaneServer::OpenPending(int fd) {
  PendingConn conn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(fd);
    if (it == pending_.end()) return;
    conn = it->second;
  }
  lane::OpenRequest req;
  const ssize_t got = ::recv(fd, &req, sizeof(req), MSG_DONTWAIT);
  if (got != static_cast<ssize_t>(sizeof(req)) || req.magic != lane::kMagic ||
      req.version != lane::kVersion) {
    if (got > 0) {
      Refuse(fd, static_cast<int>(absl::StatusCode::kInvalidArgument),
             absl::StrCat("not a pqcd lane request (protocol version ", lane::kVersion, ")"));
    }
    ClosePending(fd, false);
    return;
  }
  auto refuse = [&](absl::StatusCode code, const std::string& why) {
    Refuse(fd, static_cast<int>(code), why);
    ClosePending(fd, false, /*protocol=*/false);
  };
  if (stopping_.load() || ctx_->draining.load()) {
    refuse(absl::StatusCode::kUnavailable, "pqcd is draining (shutting down)");
    return;
  }
  uint32_t slots = req.slots == 0 ? options_.default_slots : req.slots;
  slots = std::min(std::max(slots, 1u), options_.max_slots);
  uint32_t pow2 = 1;
  while (pow2 < slots) pow2 <<= 1;
  if (pow2 > options_.max_slots) pow2 >>= 1;
  slots = pow2;
  const size_t region = lane::RegionBytes(slots, slot_bytes_);
  // Charged: the shared region, and as much again for the private copies of its requests and
  // answers while they are computed.
  const size_t charged = 2 * region;
  MemoryCharge charge;
  if (ctx_->memory != nullptr) {
    if (absl::Status s = ctx_->memory->Charge(conn.caller.identity, charged); !s.ok()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++refused_memory_;
      }
      Refuse(fd, static_cast<int>(s.code()),
             absl::StrCat("a lane of ", slots, " slots takes ", charged, " bytes: ", s.message()));
      ClosePending(fd, false, /*protocol=*/false);
      return;
    }
    charge = MemoryCharge(ctx_->memory, conn.caller.identity, charged);
  }
  const int memfd = ::memfd_create("pqcd-lane", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  void* base = MAP_FAILED;
  if (memfd >= 0 && ::ftruncate(memfd, static_cast<off_t>(region)) == 0 &&
      ::fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0) {
    base = ::mmap(nullptr, region, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  }
  const int bell = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (base == MAP_FAILED || bell < 0) {
    const std::string why = absl::StrCat("cannot make the lane's memory: ", strerror(errno));
    if (base != MAP_FAILED) ::munmap(base, region);
    if (memfd >= 0) ::close(memfd);
    if (bell >= 0) ::close(bell);
    refuse(absl::StatusCode::kInternal, why);
    return;
  }
  auto l = std::make_unique<Lane>();
  l->caller = std::move(conn.caller);
  l->sock = fd;
  l->doorbell = bell;
  l->base = base;
  l->region_bytes = region;
  l->slot_count = slots;
  l->slot_bytes = slot_bytes_;
  l->control = static_cast<lane::Control*>(base);
  l->submissions = lane::SubmissionRing(base);
  l->completions = lane::CompletionRing(base, slots);
  l->slots = static_cast<uint8_t*>(base) + lane::SlotsOffset(slots);
  l->charge = std::move(charge);
  l->busy = std::make_unique<std::atomic<uint8_t>[]>(slots);
  l->ops.resize(slots);
  lane::Control& c = *l->control;
  c.magic = lane::kMagic;
  c.version = lane::kVersion;
  c.slot_count = slots;
  c.slot_bytes = slot_bytes_;
  c.max_input_bytes = options_.max_input_bytes;
  c.region_bytes = region;
  c.slots_offset = lane::SlotsOffset(slots);

  lane::OpenReply reply;
  reply.slot_count = slots;
  reply.slot_bytes = slot_bytes_;
  reply.max_input_bytes = options_.max_input_bytes;
  reply.region_bytes = region;
  reply.slots_offset = lane::SlotsOffset(slots);
  alignas(cmsghdr) char cbuf[CMSG_SPACE(2 * sizeof(int))] = {};
  iovec iov{&reply, sizeof(reply)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof(cbuf);
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(2 * sizeof(int));
  const int fds[2] = {memfd, bell};
  std::memcpy(CMSG_DATA(cm), fds, sizeof(fds));
  const bool sent =
      ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(sizeof(reply));
  ::close(memfd);  // the mapping keeps the memory; the caller has its own descriptor
  if (!sent) {
    ::munmap(base, region);
    ::close(bell);
    ClosePending(fd, false);
    return;
  }
  // The worker with the fewest lanes serves it.
  size_t best = 0;
  for (size_t i = 1; i < workers_.size(); ++i) {
    if (workers_[i]->count.load() < workers_[best]->count.load()) best = i;
  }
  l->worker = static_cast<int>(best);
  Lane* raw = l.release();
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(fd);
    raw->id = next_id_++;
    ++open_;
    ++opened_;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = &raw->sock_ref;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
  ev.events = EPOLLIN;
  ev.data.ptr = &raw->bell_ref;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, bell, &ev);
  {
    WorkerLanes& w = *workers_[best];
    std::lock_guard<std::mutex> lock(w.mu);
    w.lanes.push_back(raw);
    w.count.fetch_add(1);
  }
  waker_->Wake(raw->worker);
}

void LaneServer::FreeLane(Lane* l) {
  for (auto& op : l->ops) {
    if (op) {
      WipeMessage(op->request);
      WipeMessage(op->result);
    }
  }
  // The caller keeps its descriptor of the region's memfd, which alone would keep its pages,
  // charged to pqcd's memory cgroup, for as long as the caller lives: the slots (all but a few
  // pages of the region) are released here, a hole punched through them, so the lane's memory is
  // gone when its charge is. The control block and the rings stay (page-aligned, SlotsOffset):
  // the caller still reads the lane's final state there (broken, closed).
  auto* slots_begin = static_cast<uint8_t*>(l->base) + lane::SlotsOffset(l->slot_count);
  const size_t slots_bytes =
      l->region_bytes - static_cast<size_t>(slots_begin - static_cast<uint8_t*>(l->base));
  if (slots_bytes > 0 && ::madvise(slots_begin, slots_bytes, MADV_REMOVE) != 0 && ctx_ != nullptr &&
      ctx_->log) {
    ctx_->log->warn("lanes: releasing the memory of lane {} failed (madvise MADV_REMOVE: {})",
                    l->id, std::strerror(errno));
  }
  ::munmap(l->base, l->region_bytes);
  ::close(l->doorbell);
  ::close(l->sock);
  {
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
    if (--per_identity_[l->caller.identity] == 0) per_identity_.erase(l->caller.identity);
  }
  delete l;
}

// ---- The workers
// ----------------------------------------------------------------------------------

void LaneServer::Break(Lane* l, const char* why) {
  if (l->broken.exchange(true)) return;
  lane::Word(l->control->state).store(lane::kBroken, std::memory_order_release);
  FutexWakeAll(&l->control->completion_tail.value);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++broken_;
  }
  if (break_log_) {
    // The first break of each (identity, reason) in a window in full; repeats as one summary line
    // (who=... action=lane_break_repeated op=<reason> further_lane_breaks=N) when it ends.
    break_log_->Record(
        l->caller.identity, "", "", 0, why,
        absl::StrCat("lane ", l->id, " of ", AuditValue(l->caller.identity), " closed: ", why));
  }
  // The control thread sees the socket shut and lets go of the lane.
  ::shutdown(l->sock, SHUT_RDWR);
}

void LaneServer::FlushPendingLocked(Lane* l) {
  size_t done = 0;
  const uint32_t head = lane::Word(l->control->completion_head).load(std::memory_order_acquire);
  for (; done < l->waiting.size(); ++done) {
    const uint32_t used = l->cq_tail - head;
    if (used > l->slot_count) {
      Break(l, "completion ring index out of range");
      l->waiting.clear();
      return;
    }
    if (used == l->slot_count) break;
    std::atomic_ref<uint32_t>(l->completions[l->cq_tail & (l->slot_count - 1)])
        .store(l->waiting[done], std::memory_order_relaxed);
    ++l->cq_tail;
  }
  l->waiting.erase(l->waiting.begin(), l->waiting.begin() + static_cast<ptrdiff_t>(done));
  l->has_waiting.store(!l->waiting.empty(), std::memory_order_relaxed);
}

void LaneServer::Publish(Op* op, const absl::Status& status) {
  Lane* l = op->lane;
  const int worker = l->worker;
  // The answer goes into the slot; the request's bytes past it are wiped (they may hold a key).
  uint8_t* slot = l->slot(op->slot);
  const size_t written = EncodeLaneResponse(op->meta, status, op->result, slot, l->slot_bytes);
  const size_t request_bytes = std::min<size_t>(op->meta.request_bytes, l->slot_bytes);
  if (request_bytes > written) std::memset(slot + written, 0, request_bytes - written);
  WipeSecrets(op->request, op->result);
  op->state.reset();
  const int code = std::clamp(static_cast<int>(status.code()), 0, Stats::kCodes - 1);
  codes_[code].fetch_add(1, std::memory_order_relaxed);
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - op->arrived).count();
  duration_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
  buckets_[engine::LatencyBucket(static_cast<uint64_t>(ns))].fetch_add(1,
                                                                       std::memory_order_relaxed);
  const uint32_t index = op->slot;
  bool wake_caller = false;
  {
    std::lock_guard<std::mutex> lock(l->mu);
    // Release: whoever takes the slot next (the worker, after the caller pushed it again) sees
    // everything this thread did with the slot's Op, without relying on the caller's memory.
    l->busy[index].store(0, std::memory_order_release);
    l->waiting.push_back(index);
    FlushPendingLocked(l);
    lane::Word(l->control->completion_tail).store(l->cq_tail, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    wake_caller = lane::Word(l->control->caller_waiting).load(std::memory_order_relaxed) != 0;
  }
  if (wake_caller) {
    // On the lane's own worker (the usual case: a completion in its burst) the caller is woken
    // once after the burst (WakeCallers), not once per answer of the burst.
    const engine::WorkerInfo* me = engine::CurrentWorker();
    if (me != nullptr && me->id == worker) {
      if (!l->wake_queued) {
        l->wake_queued = true;
        workers_[static_cast<size_t>(worker)]->to_wake.push_back(l);
      }
    } else {
      FutexWakeAll(&l->control->completion_tail.value);
    }
  }
  ctx_->inflight.fetch_sub(1, std::memory_order_release);
  const bool closing = l->closing.load(std::memory_order_acquire);
  // Last: once in_flight is 0 a closing lane may be freed by its worker.
  if (l->in_flight.fetch_sub(1, std::memory_order_acq_rel) == 1 && closing) waker_->Wake(worker);
}

void LaneServer::TakeFrom(Lane* l, std::vector<engine::Job*>* jobs, bool refuse_all) {
  if (l->has_waiting.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(l->mu);
    FlushPendingLocked(l);
    lane::Word(l->control->completion_tail).store(l->cq_tail, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (lane::Word(l->control->caller_waiting).load(std::memory_order_relaxed) != 0) {
      FutexWakeAll(&l->control->completion_tail.value);
    }
    // A caller that does not take its completions is not served until it does.
    if (!l->waiting.empty()) return;
  }
  const uint32_t tail = lane::Word(l->control->submission_tail).load(std::memory_order_acquire);
  const uint32_t avail = tail - l->sq_head;
  if (avail == 0) return;
  if (avail > l->slot_count) {
    Break(l, "submission ring index out of range");
    return;
  }
  const uint32_t n =
      refuse_all ? avail
                 : std::min<uint32_t>(avail, static_cast<uint32_t>(options_.intake_per_poll));
  const bool draining = refuse_all || ctx_->draining.load(std::memory_order_relaxed) ||
                        stopping_.load(std::memory_order_relaxed);
  if (draining) {
    lane::Word(l->control->state).store(lane::kDraining, std::memory_order_release);
  }
  const Clock::time_point arrived = Clock::now();  // one reading for what is taken together
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t index =
        std::atomic_ref<uint32_t>(l->submissions[l->sq_head & (l->slot_count - 1)])
            .load(std::memory_order_relaxed);
    ++l->sq_head;
    if (index >= l->slot_count || l->busy[index].load(std::memory_order_acquire) != 0) {
      Break(l, index >= l->slot_count ? "slot index out of range" : "a slot submitted twice");
      break;
    }
    l->busy[index].store(1, std::memory_order_relaxed);
    if (!l->ops[index]) {
      l->ops[index] = std::make_unique<Op>();
      l->ops[index]->lane = l;
      l->ops[index]->slot = index;
    }
    Op* op = l->ops[index].get();
    op->arrived = arrived;
    ResetResult(&op->result);
    l->in_flight.fetch_add(1, std::memory_order_relaxed);
    ctx_->inflight.fetch_add(1, std::memory_order_relaxed);
    absl::Status st = DecodeLaneRequest(l->slot(index), l->slot_bytes, options_.max_input_bytes,
                                        &op->request, &op->meta);
    if (st.ok() && draining) st = absl::UnavailableError("pqcd is draining (shutting down)");
    if (st.ok()) {
      op->state.emplace();
      op->state->ctx = ctx_;
      // A private key given again (the same bytes as the lane's previous one) is prepared once
      // for the run; the lane's GivenKeys keeps its own copy of the last key, as the slot's
      // request message is rewritten by the slot's next request.
      st = PrepareOperation(ctx_, l->caller, op->request, &op->result, &*op->state, &l->given);
    }
    if (!st.ok()) {
      SetResultStatus(&op->result, st);
      Publish(op, st);
      continue;
    }
    op->state->done = [this, op](absl::Status s) { Publish(op, s); };
    const auto deadline =
        op->meta.timeout_ms == 0
            ? std::chrono::system_clock::time_point::max()
            : std::chrono::system_clock::now() + std::chrono::milliseconds(op->meta.timeout_ms);
    op->state->Arm(deadline);
    jobs->push_back(&op->state->job);
  }
  lane::Word(l->control->submission_head).store(l->sq_head, std::memory_order_release);
}

void WakeCallers(std::vector<LaneServer::Lane*>& to_wake) {
  for (LaneServer::Lane* l : to_wake) {
    l->wake_queued = false;
    FutexWakeAll(&l->control->completion_tail.value);
  }
  to_wake.clear();
}

bool LaneServer::Intake(int worker) {
  WorkerLanes& w = *workers_[static_cast<size_t>(worker)];
  if (!w.to_wake.empty()) WakeCallers(w.to_wake);
  if (w.count.load(std::memory_order_relaxed) == 0) return false;
  w.jobs.clear();
  bool any = false;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    for (size_t i = 0; i < w.lanes.size();) {
      Lane* l = w.lanes[i];
      if (l->closing.load(std::memory_order_acquire)) {
        if (l->in_flight.load(std::memory_order_acquire) == 0) {
          w.lanes[i] = w.lanes.back();
          w.lanes.pop_back();
          w.count.fetch_sub(1);
          FreeLane(l);
          continue;
        }
        ++i;
        continue;
      }
      if (!l->broken.load(std::memory_order_relaxed)) {
        const size_t before = w.jobs.size();
        const uint32_t head = l->sq_head;
        TakeFrom(l, &w.jobs, false);
        any = any || l->sq_head != head || w.jobs.size() != before;
      }
      ++i;
    }
  }
  if (!w.jobs.empty()) ctx_->engine->SubmitBurst(w.jobs);
  if (!w.to_wake.empty()) WakeCallers(w.to_wake);  // answers refused while taking requests
  if (any) w.last_active = Clock::now();
  return any;
}

bool LaneServer::HasLanes(int worker) const {
  return workers_[static_cast<size_t>(worker)]->count.load(std::memory_order_acquire) > 0;
}

bool LaneServer::RecentlyActive(int worker) const {
  const WorkerLanes& w = *workers_[static_cast<size_t>(worker)];
  return w.count.load(std::memory_order_relaxed) > 0 &&
         Clock::now() - w.last_active < std::chrono::milliseconds(2);
}

bool LaneServer::SetIdle(int worker, bool idle) {
  WorkerLanes& w = *workers_[static_cast<size_t>(worker)];
  w.idle.store(idle, std::memory_order_seq_cst);
  bool work = false;
  std::lock_guard<std::mutex> lock(w.mu);
  for (Lane* l : w.lanes) {
    lane::Word(l->control->daemon_idle).store(idle ? 1 : 0, std::memory_order_seq_cst);
    if (!idle) continue;
    // Checked after daemon_idle is set: a submission made before the caller could see it is
    // found here; one made after rings the doorbell.
    if (l->closing.load(std::memory_order_acquire) ||
        (!l->broken.load(std::memory_order_relaxed) &&
         lane::Word(l->control->submission_tail).load(std::memory_order_seq_cst) != l->sq_head)) {
      work = true;
    }
  }
  return work;
}

void LaneServer::Final(int worker) {
  WorkerLanes& w = *workers_[static_cast<size_t>(worker)];
  std::lock_guard<std::mutex> lock(w.mu);
  std::vector<engine::Job*> none;
  for (Lane* l : w.lanes) {
    if (!l->broken.load() && !l->closing.load()) TakeFrom(l, &none, /*refuse_all=*/true);
  }
  WakeCallers(w.to_wake);
}

// ---- The workers' I/O
// -----------------------------------------------------------------------------

ServingIo::ServingIo(CoreQueues* core, LaneServer* lanes)
    : core_(core), lanes_(lanes), spin_(static_cast<size_t>(std::max(core->size(), 0))) {}

bool ServingIo::ShouldSpin(SpinState& s) {
  if (s.misses < kSpinMisses) return true;
  if (++s.skipped < kSpinProbe) return false;
  s.skipped = 0;  // a probe: the traffic may have become a closed loop again
  return true;
}

bool ServingIo::Poll(int worker, std::chrono::steady_clock::time_point until) {
  const auto min = std::chrono::steady_clock::time_point::min();
  // No lane on this worker: its queue only (a lane added later wakes it, LaneServer::OpenPending).
  if (lanes_ == nullptr || !lanes_->HasLanes(worker)) {
    if (core_->Poll(worker, until)) return true;
    if (lanes_ != nullptr) lanes_->Final(worker);
    return false;
  }
  bool work = lanes_->Intake(worker);
  if (work || until == min || until <= std::chrono::steady_clock::now()) {
    if (!core_->Poll(worker, min)) {
      lanes_->Final(worker);
      return false;
    }
    return true;
  }
  // About to block: a short poll of the lanes first, where it has been paying (see lanes.h).
  // Only after recent lane traffic, so that idle lanes cost their worker nothing.
  SpinState& s = spin_[static_cast<size_t>(worker)];
  if (lanes_->RecentlyActive(worker) && ShouldSpin(s)) {
    const auto spin_until = std::chrono::steady_clock::now() + kLaneSpin;
    while (std::chrono::steady_clock::now() < spin_until) {
      if (lanes_->Intake(worker)) {
        s.misses = 0;
        return true;
      }
      engine::CpuRelax();
    }
    ++s.misses;
  }
  if (lanes_->SetIdle(worker, true)) until = min;
  const auto blocked = std::chrono::steady_clock::now();
  const bool more = core_->Poll(worker, until);
  lanes_->SetIdle(worker, false);
  if (lanes_->Intake(worker) && std::chrono::steady_clock::now() - blocked <= kSpinUseful) {
    s.misses = 0;  // a request came soon after the worker blocked: polling would have caught it
  }
  if (!more) lanes_->Final(worker);
  return more;
}

void ServingIo::Wake(int worker) {
  core_->Wake(worker);
}

}  // namespace pqcd::server
