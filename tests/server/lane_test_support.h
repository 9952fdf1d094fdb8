// Test helpers for the shared-memory lane: requests that own their bytes, answers copied out of
// the slot, an RAII lane over libpqcd_lane's C API, and RawLane, which opens a lane by hand and
// exposes its shared memory to attack tests.
#pragma once

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "pqc/v1/common.pb.h"
#include "pqcd/lane/protocol.h"
#include "pqcd_lane.h"

namespace pqcd::testing {

struct LaneRequest {
  uint32_t op = 0;
  uint32_t algorithm = 0;
  uint32_t flags = 0;
  uint32_t pre_hash = 0;
  uint32_t key_version = 0;
  uint32_t output_length = 0;
  uint64_t tag = 0;
  std::string owner, key_id, context, key, input, signature;

  const pqcd_lane_request& c() {
    c_ = pqcd_lane_request{};
    c_.op = op;
    c_.algorithm = algorithm;
    c_.flags = flags;
    c_.pre_hash = pre_hash;
    c_.key_version = key_version;
    c_.output_length = output_length;
    c_.tag = tag;
    c_.owner = owner.empty() ? nullptr : owner.c_str();
    c_.key_id = key_id.empty() ? nullptr : key_id.c_str();
    auto bytes = [](const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); };
    c_.context = bytes(context);
    c_.context_len = context.size();
    c_.key = bytes(key);
    c_.key_len = key.size();
    c_.input = bytes(input);
    c_.input_len = input.size();
    c_.signature = bytes(signature);
    c_.signature_len = signature.size();
    return c_;
  }

 private:
  pqcd_lane_request c_{};
};

struct LaneAnswer {
  int rc = 0;  // the library's
  int code = -1;
  bool valid = false;
  uint32_t key_version = 0;
  std::string message, key_id;
  std::string out[3];
};

inline LaneRequest HashRequestOf(pqc::v1::Algorithm alg, const std::string& data) {
  LaneRequest r;
  r.op = PQCD_LANE_HASH;
  r.algorithm = static_cast<uint32_t>(alg);
  r.input = data;
  return r;
}
inline LaneRequest KeyGenRequestOf(pqc::v1::Algorithm alg, const std::string& seed) {
  LaneRequest r;
  r.op = PQCD_LANE_KEYGEN;
  r.algorithm = static_cast<uint32_t>(alg);
  r.key = seed;
  return r;
}
inline LaneRequest EncapsRequestOf(pqc::v1::Algorithm alg, const std::string& ek) {
  LaneRequest r;
  r.op = PQCD_LANE_ENCAPS;
  r.algorithm = static_cast<uint32_t>(alg);
  r.key = ek;
  return r;
}
inline LaneRequest DecapsRequestOf(pqc::v1::Algorithm alg, const std::string& dk,
                                   const std::string& ct) {
  LaneRequest r;
  r.op = PQCD_LANE_DECAPS;
  r.algorithm = static_cast<uint32_t>(alg);
  r.key = dk;
  r.input = ct;
  return r;
}
inline LaneRequest SignRequestOf(pqc::v1::Algorithm alg, const std::string& sk,
                                 const std::string& message, const std::string& context) {
  LaneRequest r;
  r.op = PQCD_LANE_SIGN;
  r.algorithm = static_cast<uint32_t>(alg);
  r.key = sk;
  r.input = message;
  r.context = context;
  return r;
}
inline LaneRequest VerifyRequestOf(pqc::v1::Algorithm alg, const std::string& pk,
                                   const std::string& message, const std::string& signature,
                                   const std::string& context) {
  LaneRequest r;
  r.op = PQCD_LANE_VERIFY;
  r.algorithm = static_cast<uint32_t>(alg);
  r.key = pk;
  r.input = message;
  r.signature = signature;
  r.context = context;
  return r;
}

inline std::string Hex(const std::string& s) {
  std::string out;
  char b[3];
  for (unsigned char c : s) {
    std::snprintf(b, sizeof(b), "%02x", c);
    out += b;
  }
  return out;
}

// One lane, closed when it goes out of scope.
class Lane {
 public:
  explicit Lane(const std::string& unix_socket, uint32_t slots = 0) {
    char err[512] = {};
    if (pqcd_lane_open(unix_socket.c_str(), slots, &lane_, err, sizeof(err)) != 0) {
      lane_ = nullptr;
      error_ = err;
    }
  }
  ~Lane() { pqcd_lane_close(lane_); }
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  bool ok() const { return lane_ != nullptr; }
  const std::string& error() const { return error_; }
  pqcd_lane* get() const { return lane_; }

  LaneAnswer Call(LaneRequest& rq, int64_t timeout_us = 60'000'000) {
    LaneAnswer a;
    pqcd_lane_result r;
    a.rc = pqcd_lane_call(lane_, &rq.c(), timeout_us, &r);
    if (a.rc != 0) return a;
    a.code = r.code;
    a.valid = r.valid != 0;
    a.key_version = r.key_version;
    a.message.assign(r.message, r.message_len);
    a.key_id.assign(r.key_id, r.key_id_len);
    for (int i = 0; i < 3; ++i) {
      a.out[i].assign(reinterpret_cast<const char*>(r.out[i]), r.out_len[i]);
    }
    pqcd_lane_release(lane_, &r);
    return a;
  }
  LaneAnswer Call(LaneRequest&& rq, int64_t timeout_us = 60'000'000) {
    return Call(rq, timeout_us);
  }

 private:
  pqcd_lane* lane_ = nullptr;
  std::string error_;
};

// A lane opened by hand, its shared memory in reach: for tests that behave as a hostile caller.
struct RawLane {
  int sock = -1;
  int doorbell = -1;
  uint8_t* base = nullptr;
  pqcd::lane::OpenReply reply{};

  int memfd = -1;  // the region's memfd, kept only when Open is asked to

  bool Open(const std::string& unix_socket, uint32_t slots, bool keep_memfd = false) {
    sock = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = unix_socket + pqcd::lane::kSocketSuffix;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    if (::connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
    pqcd::lane::OpenRequest rq;
    rq.slots = slots;
    if (::send(sock, &rq, sizeof(rq), 0) != sizeof(rq)) return false;
    alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
    iovec iov{&reply, sizeof(reply)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    if (::recvmsg(sock, &msg, 0) != sizeof(reply) || reply.code != 0) return false;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (c == nullptr) return false;
    int fds[2];
    std::memcpy(fds, CMSG_DATA(c), sizeof(fds));
    void* p = ::mmap(nullptr, reply.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    if (keep_memfd) {
      memfd = fds[0];
    } else {
      ::close(fds[0]);
    }
    doorbell = fds[1];
    if (p == MAP_FAILED) return false;
    base = static_cast<uint8_t*>(p);
    return true;
  }
  ~RawLane() {
    if (base != nullptr) ::munmap(base, reply.region_bytes);
    if (doorbell >= 0) ::close(doorbell);
    if (sock >= 0) ::close(sock);
    if (memfd >= 0) ::close(memfd);
  }
  pqcd::lane::Control& control() { return *reinterpret_cast<pqcd::lane::Control*>(base); }
  uint8_t* slot(uint32_t i) { return base + reply.slots_offset + size_t{i} * reply.slot_bytes; }
  uint32_t* submissions() { return pqcd::lane::SubmissionRing(base); }
  uint32_t* completions() { return pqcd::lane::CompletionRing(base, reply.slot_count); }
  void Ring() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(doorbell, &one, sizeof(one));
  }
  // Pushes slot indices (whatever they are) and rings the doorbell.
  void Push(uint32_t index) {
    auto tail = pqcd::lane::Word(control().submission_tail);
    const uint32_t t = tail.load();
    submissions()[t & (reply.slot_count - 1)] = index;
    tail.store(t + 1);
    Ring();
  }
  // Writes a request as the library does.
  void Write(uint32_t index, const pqcd::lane::RequestHeader& h, const std::string& payload) {
    std::memcpy(slot(index), &h, sizeof(h));
    std::memcpy(slot(index) + sizeof(h), payload.data(), payload.size());
  }
};

}  // namespace pqcd::testing
