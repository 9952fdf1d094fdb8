// libpqcd_lane: the caller's side of the shared-memory lane (pqcd_lane.h; the format is
// pqcd/lane/protocol.h).
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "pqcd/lane/protocol.h"
#include "pqcd_lane.h"

namespace {

using pqcd::lane::Control;
using pqcd::lane::RequestHeader;
using pqcd::lane::ResponseHeader;
using pqcd::lane::Word;
using Clock = std::chrono::steady_clock;

void SetError(char* err, size_t err_len, const std::string& what) {
  if (err == nullptr || err_len == 0) return;
  std::snprintf(err, err_len, "%s", what.c_str());
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void Wipe(void* p, size_t n) {
  std::memset(p, 0, n);
  asm volatile("" : : "r"(p) : "memory");  // the stores stay
}

}  // namespace

struct pqcd_lane {
  int sock = -1;
  int doorbell = -1;
  void* base = nullptr;
  size_t region_bytes = 0;
  uint32_t slot_count = 0;
  uint32_t slot_bytes = 0;
  uint32_t max_input = 0;
  size_t slots_offset = 0;
  uint32_t sq_tail = 0;  // ours: the next submission position
  uint32_t cq_head = 0;  // ours: the next completion position
  std::vector<uint32_t> free_slots;
  uint32_t in_flight = 0;
  bool closed = false;
  int64_t spin_us = 200;  // pqcd_lane_wait spins this long before it sleeps (PQCD_LANE_SPIN_US)

  Control& control() { return *static_cast<Control*>(base); }
  uint8_t* slot(uint32_t i) {
    return static_cast<uint8_t*>(base) + slots_offset + size_t{i} * slot_bytes;
  }
  // The daemon said in the region that it closed the lane (broken). A draining daemon has not:
  // it still answers what is in flight, and refuses new requests with UNAVAILABLE itself. A load,
  // cheap enough for every spin.
  bool Broken() {
    if (!closed && Word(control().state).load(std::memory_order_acquire) == pqcd::lane::kBroken) {
      closed = true;
    }
    return closed;
  }
  // Broken, or the daemon's end of the socket is gone (it exited): a system call, so only before
  // sleeping and when a wait times out.
  bool Closed() {
    if (Broken()) return true;
    pollfd p{sock, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLIN)) != 0) {
      closed = true;
    }
    return closed;
  }
};

namespace {

// The header of `rq` and whether it fits `lane` (what pqcd_lane_submit refuses as EINVAL).
bool Fits(const pqcd_lane& lane, const pqcd_lane_request& rq, RequestHeader* h) {
  const size_t owner_len = rq.owner != nullptr ? std::strlen(rq.owner) : 0;
  const size_t key_id_len = rq.key_id != nullptr ? std::strlen(rq.key_id) : 0;
  if (owner_len > pqcd::lane::kMaxOwnerBytes || key_id_len > pqcd::lane::kMaxKeyIdBytes ||
      (rq.context_len > 0 && rq.context == nullptr) || (rq.key_len > 0 && rq.key == nullptr) ||
      (rq.input_len > 0 && rq.input == nullptr) ||
      (rq.signature_len > 0 && rq.signature == nullptr) || rq.input_len > lane.max_input ||
      rq.context_len > lane.slot_bytes || rq.key_len > lane.slot_bytes ||
      rq.signature_len > lane.slot_bytes) {
    return false;
  }
  *h = RequestHeader{};
  h->tag = rq.tag;
  h->op = rq.op;
  h->algorithm = rq.algorithm;
  h->flags = rq.flags;
  h->pre_hash = rq.pre_hash;
  h->key_version = rq.key_version;
  h->output_length = rq.output_length;
  h->timeout_ms = rq.timeout_ms;
  h->owner_len = static_cast<uint16_t>(owner_len);
  h->key_id_len = static_cast<uint16_t>(key_id_len);
  h->context_len = static_cast<uint32_t>(rq.context_len);
  h->key_len = static_cast<uint32_t>(rq.key_len);
  h->input_len = static_cast<uint32_t>(rq.input_len);
  h->signature_len = static_cast<uint32_t>(rq.signature_len);
  return pqcd::lane::RequestBytes(*h) <= lane.slot_bytes;
}

}  // namespace

extern "C" {

int pqcd_lane_open(const char* unix_socket, uint32_t slots, pqcd_lane** lane, char* err,
                   size_t err_len) {
  if (lane == nullptr || unix_socket == nullptr) {
    SetError(err, err_len, "pqcd_lane_open: null argument");
    return PQCD_LANE_EINVAL;
  }
  *lane = nullptr;
  std::string path = unix_socket;
  if (path.rfind("unix:", 0) == 0) path = path.substr(5);
  const std::string suffix = pqcd::lane::kSocketSuffix;
  if (path.size() < suffix.size() ||
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0) {
    path += suffix;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    SetError(err, err_len, "lane socket path too long: " + path);
    return PQCD_LANE_EINVAL;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int sock = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (sock < 0) {
    SetError(err, err_len, std::string("socket: ") + std::strerror(errno));
    return PQCD_LANE_ECONNECT;
  }
  auto fail = [&](int rc, const std::string& why) {
    ::close(sock);
    SetError(err, err_len, why);
    return rc;
  };
  if (::connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail(PQCD_LANE_ECONNECT, "cannot connect to the lane socket " + path + ": " +
                                        std::strerror(errno) +
                                        " (pqcd runs with --lanes off, "
                                        "or has no --unix socket there)");
  }
  timeval tv{5, 0};  // the daemon answers at once; a daemon that does not is not usable
  ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  pqcd::lane::OpenRequest request;
  request.slots = slots;
  if (::send(sock, &request, sizeof(request), MSG_NOSIGNAL) != sizeof(request)) {
    return fail(PQCD_LANE_ECONNECT, std::string("lane socket: send: ") + std::strerror(errno));
  }
  pqcd::lane::OpenReply reply;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
  iovec iov{&reply, sizeof(reply)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t got = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  int fds[2] = {-1, -1};
  int nfds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (nfds < 2) {
          fds[nfds++] = fd;
        } else {
          ::close(fd);
        }
      }
    }
  }
  auto close_fds = [&] {
    for (int i = 0; i < nfds; ++i) ::close(fds[i]);
  };
  if (got != static_cast<ssize_t>(sizeof(reply)) || reply.magic != pqcd::lane::kMagic) {
    close_fds();
    return fail(PQCD_LANE_ECONNECT,
                got < 0 ? std::string("lane socket: no answer: ") + std::strerror(errno)
                        : std::string("lane socket: not a pqcd lane answer"));
  }
  if (reply.code != 0) {
    close_fds();
    reply.message[sizeof(reply.message) - 1] = '\0';
    return fail(PQCD_LANE_ECONNECT, std::string("pqcd refused the lane: ") + reply.message);
  }
  if (nfds != 2 || reply.slot_count == 0 || (reply.slot_count & (reply.slot_count - 1)) != 0 ||
      reply.slot_count > pqcd::lane::kMaxSlots || reply.slot_bytes < 2 * sizeof(RequestHeader) ||
      reply.slots_offset != pqcd::lane::SlotsOffset(reply.slot_count) ||
      reply.region_bytes < pqcd::lane::RegionBytes(reply.slot_count, reply.slot_bytes)) {
    close_fds();
    return fail(PQCD_LANE_ECONNECT, "lane socket: the daemon's lane geometry is not usable");
  }
  struct stat st {};
  if (::fstat(fds[0], &st) != 0 || static_cast<uint64_t>(st.st_size) != reply.region_bytes) {
    close_fds();
    return fail(PQCD_LANE_ECONNECT, "lane socket: the shared memory has the wrong size");
  }
  void* base = ::mmap(nullptr, reply.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
  ::close(fds[0]);
  if (base == MAP_FAILED) {
    ::close(fds[1]);
    return fail(PQCD_LANE_ECONNECT, std::string("mmap: ") + std::strerror(errno));
  }
  auto* l = new (std::nothrow) pqcd_lane;
  if (l == nullptr) {
    ::munmap(base, reply.region_bytes);
    ::close(fds[1]);
    return fail(PQCD_LANE_EINVAL, "out of memory");
  }
  l->sock = sock;
  l->doorbell = fds[1];
  l->base = base;
  l->region_bytes = reply.region_bytes;
  l->slot_count = reply.slot_count;
  l->slot_bytes = reply.slot_bytes;
  l->max_input = reply.max_input_bytes;
  l->slots_offset = reply.slots_offset;
  if (const char* spin = std::getenv("PQCD_LANE_SPIN_US"); spin != nullptr && *spin != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(spin, &end, 10);
    if (end != nullptr && *end == '\0' && v >= 0 && v <= 1000000) l->spin_us = v;
  }
  l->free_slots.reserve(reply.slot_count);
  for (uint32_t i = reply.slot_count; i > 0; --i) l->free_slots.push_back(i - 1);
  *lane = l;
  return 0;
}

void pqcd_lane_close(pqcd_lane* lane) {
  if (lane == nullptr) return;
  // Whatever is still in the slots (keys, shared secrets) goes with the mapping; wipe it first.
  Wipe(static_cast<uint8_t*>(lane->base) + lane->slots_offset,
       size_t{lane->slot_count} * lane->slot_bytes);
  ::munmap(lane->base, lane->region_bytes);
  ::close(lane->doorbell);
  ::close(lane->sock);
  delete lane;
}

uint32_t pqcd_lane_slots(const pqcd_lane* lane) {
  return lane == nullptr ? 0 : lane->slot_count;
}
int pqcd_lane_set_spin_us(pqcd_lane* lane, int64_t spin_us) {
  if (lane == nullptr || spin_us < 0 || spin_us > 1000000) return PQCD_LANE_EINVAL;
  lane->spin_us = spin_us;
  return 0;
}
uint32_t pqcd_lane_max_input(const pqcd_lane* lane) {
  return lane == nullptr ? 0 : lane->max_input;
}
uint32_t pqcd_lane_in_flight(const pqcd_lane* lane) {
  return lane == nullptr ? 0 : lane->in_flight;
}

int pqcd_lane_fits(const pqcd_lane* lane, const pqcd_lane_request* request) {
  RequestHeader h;
  return lane != nullptr && request != nullptr && Fits(*lane, *request, &h) ? 1 : 0;
}

int pqcd_lane_submit(pqcd_lane* lane, const pqcd_lane_request* rq) {
  if (lane == nullptr || rq == nullptr) return PQCD_LANE_EINVAL;
  if (lane->Broken()) return PQCD_LANE_ECLOSED;
  if (lane->free_slots.empty()) return PQCD_LANE_EFULL;
  RequestHeader h;
  if (!Fits(*lane, *rq, &h)) return PQCD_LANE_EINVAL;
  const uint32_t index = lane->free_slots.back();
  lane->free_slots.pop_back();
  uint8_t* s = lane->slot(index);
  std::memcpy(s, &h, sizeof(h));
  size_t at = sizeof(h);
  auto put = [&](const void* p, size_t n) {
    if (n > 0) std::memcpy(s + at, p, n);
    at += n;
  };
  put(rq->owner, h.owner_len);
  put(rq->key_id, h.key_id_len);
  put(rq->context, rq->context_len);
  put(rq->key, rq->key_len);
  put(rq->input, rq->input_len);
  put(rq->signature, rq->signature_len);
  Control& c = lane->control();
  pqcd::lane::SubmissionRing(lane->base)[lane->sq_tail & (lane->slot_count - 1)] = index;
  ++lane->sq_tail;
  Word(c.submission_tail).store(lane->sq_tail, std::memory_order_release);
  ++lane->in_flight;
  // Ring the doorbell only when the daemon's worker may be blocked (the daemon sets daemon_idle,
  // then checks the ring again before it blocks: one of the two sides sees the other's write).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (Word(c.daemon_idle).load(std::memory_order_relaxed) != 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(lane->doorbell, &one, sizeof(one));
  }
  return 0;
}

int pqcd_lane_wait(pqcd_lane* lane, int64_t timeout_us, pqcd_lane_result* result) {
  if (lane == nullptr || result == nullptr) return PQCD_LANE_EINVAL;
  Control& c = lane->control();
  const auto start = Clock::now();
  const auto spin_until = start + std::chrono::microseconds(lane->spin_us);
  const bool forever = timeout_us < 0;
  const auto deadline =
      forever ? Clock::time_point::max() : start + std::chrono::microseconds(timeout_us);
  auto& tail = c.completion_tail.value;
  for (unsigned spins = 0;; ++spins) {
    const uint32_t t = Word(c.completion_tail).load(std::memory_order_acquire);
    if (t != lane->cq_head) break;
    if (lane->in_flight == 0 || lane->Broken()) return PQCD_LANE_ECLOSED;
    const auto now = Clock::now();
    if (now >= deadline) return lane->Closed() ? PQCD_LANE_ECLOSED : PQCD_LANE_ETIMEDOUT;
    if (now < spin_until) {
      CpuRelax();
      continue;
    }
    if (lane->Closed()) return PQCD_LANE_ECLOSED;
    // Sleep on completion_tail; the daemon wakes us after a push while caller_waiting is set.
    // Slices of at most 50 ms, so that a daemon that went away is noticed.
    Word(c.caller_waiting).store(1, std::memory_order_seq_cst);
    if (Word(c.completion_tail).load(std::memory_order_seq_cst) == t) {
      const auto left = deadline - now;
      const auto slice = std::min<Clock::duration>(left, std::chrono::milliseconds(50));
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(slice).count();
      timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
      ::syscall(SYS_futex, &tail, FUTEX_WAIT, t, &ts, nullptr, 0);
    }
    Word(c.caller_waiting).store(0, std::memory_order_relaxed);
  }
  const uint32_t index = pqcd::lane::CompletionRing(
      lane->base, lane->slot_count)[lane->cq_head & (lane->slot_count - 1)];
  ++lane->cq_head;
  Word(c.completion_head).store(lane->cq_head, std::memory_order_release);
  if (index >= lane->slot_count) {
    lane->closed = true;
    return PQCD_LANE_ECLOSED;
  }
  --lane->in_flight;
  const uint8_t* s = lane->slot(index);
  ResponseHeader h;
  std::memcpy(&h, s, sizeof(h));
  *result = pqcd_lane_result{};
  result->slot = index;
  result->tag = h.tag;
  result->code = h.code;
  result->valid = (h.flags & pqcd::lane::kValid) != 0;
  result->key_version = h.key_version;
  size_t at = sizeof(h);
  const size_t room = lane->slot_bytes;
  auto take = [&](size_t n, size_t* len) -> const uint8_t* {
    if (n > room - at) n = room - at;  // a daemon bug must not read past the slot
    const uint8_t* p = s + at;
    at += n;
    *len = n;
    return p;
  };
  result->message = reinterpret_cast<const char*>(take(h.message_len, &result->message_len));
  result->key_id = reinterpret_cast<const char*>(take(h.key_id_len, &result->key_id_len));
  for (int i = 0; i < 3; ++i) result->out[i] = take(h.out_len[i], &result->out_len[i]);
  return 0;
}

void pqcd_lane_release(pqcd_lane* lane, pqcd_lane_result* result) {
  if (lane == nullptr || result == nullptr || result->slot >= lane->slot_count) return;
  // The answer may hold a shared secret or a private key: wiped before the slot is used again.
  size_t used = sizeof(ResponseHeader) + result->message_len + result->key_id_len;
  for (size_t n : result->out_len) used += n;
  Wipe(lane->slot(result->slot), std::min<size_t>(used, lane->slot_bytes));
  lane->free_slots.push_back(result->slot);
  *result = pqcd_lane_result{};
  result->slot = UINT32_MAX;
}

int pqcd_lane_call(pqcd_lane* lane, const pqcd_lane_request* request, int64_t timeout_us,
                   pqcd_lane_result* result) {
  if (lane == nullptr) return PQCD_LANE_EINVAL;
  if (lane->in_flight != 0) return PQCD_LANE_EBUSY;
  if (const int rc = pqcd_lane_submit(lane, request); rc != 0) return rc;
  return pqcd_lane_wait(lane, timeout_us, result);
}

const char* pqcd_lane_strerror(int rc) {
  switch (rc) {
    case 0:
      return "ok";
    case PQCD_LANE_EINVAL:
      return "invalid argument (or the request does not fit a slot)";
    case PQCD_LANE_EFULL:
      return "every slot is in flight";
    case PQCD_LANE_ECLOSED:
      return "the lane is closed";
    case PQCD_LANE_ETIMEDOUT:
      return "timed out";
    case PQCD_LANE_ECONNECT:
      return "cannot open a lane";
    case PQCD_LANE_EBUSY:
      return "other requests are in flight";
    default:
      return "unknown error";
  }
}

}  // extern "C"
