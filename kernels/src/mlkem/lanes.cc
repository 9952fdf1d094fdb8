// LaneScheduler: see lanes.h.
#include "mlkem/lanes.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "keccak/keccak_multi.h"
#include "mlkem/poly_backend.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels::mlkem {
namespace {

constexpr size_t kXofRate = 168;       // SHAKE128
constexpr size_t kPrfRate = 136;       // SHAKE256
constexpr size_t kXofFirstBlocks = 3;  // 336 candidates: nearly always enough for 256 values

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

LaneScheduler::LaneScheduler() : x4_(UseAvx2Kernels()) {
  for (Lane& l : lanes_) l = Lane{-1, kIdle, 0, nullptr, 0, 0};
  // Reading slack of the AVX2 rejection and CBD kernels: defined bytes, never used.
  for (auto& b : buf_) std::memset(b + kXofFirstBlocks * kXofRate, 0, 32);
}

LaneScheduler::~LaneScheduler() {
  SecureZero(st_, sizeof(st_));
  SecureZero(buf_, sizeof(buf_));
  SecureZero(block_, sizeof(block_));
  SecureZero(one_, sizeof(one_));
  SecureZero(saved_, sizeof(saved_));
}

int LaneScheduler::NewTask(Kind kind, bool ready) {
  if (num_tasks_ == kMaxTasks) std::abort();  // programming error: fixed task budget
  Task& t = tasks_[num_tasks_];
  t = Task{};
  t.kind = kind;
  t.ready = ready;
  t.avail = SIZE_MAX;
  ++remaining_;
  return num_tasks_++;
}

int LaneScheduler::AddHash(size_t rate, uint8_t suffix, const uint8_t* a, size_t a_len,
                           const uint8_t* b, size_t b_len, uint8_t* out, size_t out_len,
                           bool ready) {
  const int id = NewTask(kHash, ready);
  Task& t = tasks_[id];
  t.rate = static_cast<uint16_t>(rate);
  t.suffix = suffix;
  t.a = a;
  t.a_len = a_len;
  t.b = b;
  t.b_len = b_len;
  t.out = out;
  t.out_len = out_len;
  return id;
}

int LaneScheduler::AddSampleNtt(const uint8_t rho[kSymBytes], uint8_t b32, uint8_t b33, Poly* out) {
  const int id = NewTask(kSampleNtt, true);
  Task& t = tasks_[id];
  std::memcpy(t.seed, rho, kSymBytes);
  t.seed[32] = b32;
  t.seed[33] = b33;
  t.rate = kXofRate;
  t.suffix = 0x1f;
  t.a = t.seed;
  t.a_len = sizeof(t.seed);
  t.poly = out;
  return id;
}

int LaneScheduler::AddCbd(int eta, const uint8_t* seed, uint8_t nonce, Poly* out, bool ready) {
  const int id = NewTask(kCbd, ready);
  Task& t = tasks_[id];
  t.rate = kPrfRate;
  t.suffix = 0x1f;
  t.eta = static_cast<uint8_t>(eta);
  t.nonce = nonce;
  t.a = seed;
  t.a_len = kSymBytes;
  t.b = &t.nonce;
  t.b_len = 1;
  t.poly = out;
  return id;
}

void LaneScheduler::StartReady() {
  for (int j = 0; j < kLanes; ++j) {
    Lane& l = lanes_[j];
    if (l.phase != kIdle) continue;
    int id = -1;
    for (int i = first_unstarted_; i < num_tasks_; ++i) {
      if (!tasks_[i].started && tasks_[i].ready) {
        id = i;
        break;
      }
    }
    if (id < 0) return;
    Task& t = tasks_[id];
    t.started = true;
    while (first_unstarted_ < num_tasks_ && tasks_[first_unstarted_].started) ++first_unstarted_;
    for (int i = 0; i < 25; ++i) st_[i * kLanes + j] = 0;
    l.task = id;
    l.phase = kAbsorb;
    l.absorbed = 0;
    l.out_pos = 0;
    switch (t.kind) {
      case kHash:
        l.out = t.out;
        l.out_len = t.out_len;
        break;
      case kSampleNtt:
        l.out = buf_[j];
        l.out_len = kXofFirstBlocks * kXofRate;
        break;
      case kCbd:
        l.out = buf_[j];
        l.out_len = 64 * size_t{t.eta};
        break;
    }
  }
}

// XORs message bytes [off, off + n) of t (n == rate, or the final n < rate bytes with the
// padding when `last`) into lane j.
void LaneScheduler::XorBlock(int j, const Task& t, size_t off, size_t n, bool last) {
  const uint8_t* src;
  if (!last && off + n <= t.a_len) {
    src = t.a + off;
  } else if (!last && off >= t.a_len) {
    src = t.b + (off - t.a_len);
  } else {
    // Gather from a || b into block_ (and pad when last).
    size_t done = 0;
    if (off < t.a_len) {
      const size_t take = std::min(n, t.a_len - off);
      std::memcpy(block_, t.a + off, take);
      done = take;
    }
    if (done < n) std::memcpy(block_ + done, t.b + (off + done - t.a_len), n - done);
    if (last) {
      std::memset(block_ + n, 0, t.rate - n);
      block_[n] ^= t.suffix;
      block_[t.rate - 1] ^= 0x80;
    }
    src = block_;
  }
  const size_t words = t.rate / 8;
  for (size_t i = 0; i < words; ++i) st_[i * kLanes + j] ^= Load64(src + 8 * i);
}

void LaneScheduler::Deadlock() {
  std::abort();
}

bool LaneScheduler::Step() {
  bool active[kLanes] = {};
  bool paused[kLanes] = {};
  int n_active = 0;
  for (int j = 0; j < kLanes; ++j) {
    Lane& l = lanes_[j];
    if (l.phase == kAbsorb) {
      const Task& t = tasks_[l.task];
      const size_t total = t.a_len + t.b_len;
      const size_t rem = total - l.absorbed;
      if (rem >= t.rate) {
        if (t.avail < l.absorbed + t.rate) {
          paused[j] = true;
          continue;
        }
        XorBlock(j, t, l.absorbed, t.rate, false);
        l.absorbed += t.rate;
      } else {
        if (t.avail < total) {
          paused[j] = true;
          continue;
        }
        XorBlock(j, t, l.absorbed, rem, true);
        l.absorbed = total;
        l.phase = kSqueeze;
      }
      active[j] = true;
      ++n_active;
    } else if (l.phase == kSqueeze) {
      active[j] = true;
      ++n_active;
    }
  }
  if (n_active == 0) return false;
  if (x4_ && n_active >= 2) {
    for (int j = 0; j < kLanes; ++j) {
      if (!paused[j]) continue;
      for (int i = 0; i < 25; ++i) saved_[j][i] = st_[i * kLanes + j];
    }
    KeccakF1600xN(st_, kLanes);
    for (int j = 0; j < kLanes; ++j) {
      if (!paused[j]) continue;
      for (int i = 0; i < 25; ++i) st_[i * kLanes + j] = saved_[j][i];
    }
  } else {
    for (int j = 0; j < kLanes; ++j) {
      if (!active[j]) continue;
      for (int i = 0; i < 25; ++i) one_[i] = st_[i * kLanes + j];
      KeccakF1600(one_);
      for (int i = 0; i < 25; ++i) st_[i * kLanes + j] = one_[i];
    }
  }
  for (int j = 0; j < kLanes; ++j) {
    Lane& l = lanes_[j];
    if (!active[j] || l.phase != kSqueeze) continue;
    const Task& t = tasks_[l.task];
    const size_t take = std::min<size_t>(t.rate, l.out_len - l.out_pos);
    uint8_t* dst = l.out + l.out_pos;
    size_t i = 0;
    for (; i + 8 <= take; i += 8) std::memcpy(dst + i, &st_[(i / 8) * kLanes + j], 8);
    if (i < take) std::memcpy(dst + i, &st_[(i / 8) * kLanes + j], take - i);
    l.out_pos += take;
    if (l.out_pos == l.out_len) LaneDone(j);
  }
  return true;
}

void LaneScheduler::LaneDone(int j) {
  Lane& l = lanes_[j];
  Task& t = tasks_[l.task];
  const bool avx2 = UseAvx2Kernels();
  switch (t.kind) {
    case kHash:
      break;
    case kSampleNtt: {
      // The XOF output of the public ρ is public. (It shares the x4 permutation with secret
      // lanes; memcheck's approximate tracking of some vector shuffles would otherwise taint it.)
      CtPublic(l.out, l.out_len);
      const int wanted = kN - t.ctr;
      t.ctr = static_cast<int16_t>(
          t.ctr + (avx2 ? avx2::RejectUniform(t.poly->c + t.ctr, wanted, l.out, l.out_len)
                        : portable::RejectUniform(t.poly->c + t.ctr, wanted, l.out, l.out_len)));
      if (t.ctr < kN) {
        // Rare: one more block (Alg. 7 keeps squeezing).
        l.out_len = kXofRate;
        l.out_pos = 0;
        return;
      }
      break;
    }
    case kCbd:
      avx2 ? avx2::Cbd(t.eta, *t.poly, l.out) : portable::Cbd(t.eta, *t.poly, l.out);
      break;
  }
  t.finished = true;
  --remaining_;
  l.phase = kIdle;
  l.task = -1;
}

}  // namespace pqcd::kernels::mlkem
