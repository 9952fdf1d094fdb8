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

constexpr size_t kXofRate = 168;  // SHAKE128
constexpr size_t kPrfRate = 136;  // SHAKE256
static_assert(kXofRate % 3 == 0, "each block holds whole 3-byte groups of Alg. 7");

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

LaneScheduler::LaneScheduler() : x4_(UseAvx2Kernels()), avx2_(UseAvx2Kernels()) {
  for (Lane& l : lanes_) l = Lane{-1, kIdle, 0, 0, 0};
  // Defined bytes in the reading slack of the AVX2 kernels (the transposes overwrite them).
  for (auto& b : lane_buf_) std::memset(b + kXofRate, 0, kLaneBuf - kXofRate);
  for (auto& b : ntt_buf_) std::memset(b + 3 * kXofRate, 0, kNttBuf - 3 * kXofRate);
}

LaneScheduler::~LaneScheduler() {
  SecureZero(st_, sizeof(st_));
  SecureZero(lane_buf_, sizeof(lane_buf_));
  SecureZero(one_, sizeof(one_));
  if (used_saved_) SecureZero(saved_, sizeof(saved_));
  if (used_cbd3_) SecureZero(cbd3_, sizeof(cbd3_));
}

int LaneScheduler::NewTask(Kind kind, bool ready) {
  if (num_tasks_ == kMaxTasks) std::abort();  // programming error: fixed task budget
  Task& t = tasks_[num_tasks_];
  t.b = nullptr;
  t.out = nullptr;
  t.poly = nullptr;
  t.b_len = 0;
  t.out_len = 0;
  t.ctr = 0;
  t.kind = kind;
  t.ready = ready;
  t.started = false;
  t.finished = false;
  t.avail = SIZE_MAX;
  ready_waiting_ += ready ? 1 : 0;
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
  t.seed[0] = b32;
  t.seed[1] = b33;
  t.rate = kXofRate;
  t.suffix = 0x1f;
  t.a = rho;
  t.a_len = kSymBytes;
  t.b = t.seed;
  t.b_len = 2;
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
  t.out_len = 64 * size_t{t.eta};
  t.poly = out;
  return id;
}

void LaneScheduler::StartReady() {
  if (ready_waiting_ == 0) return;
  int i = scan_from_;
  for (int j = 0; j < kLanes; ++j) {
    Lane& l = lanes_[j];
    if (l.phase != kIdle) continue;
    while (i < num_tasks_ && (tasks_[i].started || !tasks_[i].ready)) ++i;
    if (i == num_tasks_) break;
    Task& t = tasks_[i];
    t.started = true;
    --ready_waiting_;
    uint64_t* s = st_ + j;
    if (t.kind != kHash) {
      // SampleNTT: ρ || j || i; PRF: seed || nonce. One padded block, written straight into the
      // fresh state (suffix after the 34 or 33 input bytes, 0x80 in the last byte of the rate).
      const uint64_t tail = t.kind == kSampleNtt ? uint64_t{t.seed[0]} | uint64_t{t.seed[1]} << 8 |
                                                       uint64_t{0x1f} << 16
                                                 : uint64_t{t.nonce} | uint64_t{0x1f} << 8;
      const size_t last = (t.rate - 1) / 8;
#pragma GCC unroll 25
      for (size_t w = 0; w < 25; ++w) s[w * kLanes] = 0;
      s[0] = Load64(t.a);
      s[kLanes] = Load64(t.a + 8);
      s[2 * kLanes] = Load64(t.a + 16);
      s[3 * kLanes] = Load64(t.a + 24);
      s[4 * kLanes] = tail;
      s[last * kLanes] = uint64_t{0x80} << 56;
      l = Lane{i, kSqueeze, t.a_len + t.b_len, 0, 0};
    } else {
#pragma GCC unroll 25
      for (size_t w = 0; w < 25; ++w) s[w * kLanes] = 0;
      l = Lane{i, kAbsorb, 0, 0, 0};
    }
    ++i;
  }
  scan_from_ = i;
}

// XORs src[0..n) into state bytes [pos, pos + n) of lane j.
void LaneScheduler::XorBytes(int j, size_t pos, const uint8_t* src, size_t n) {
  uint64_t* s = st_ + j;
  for (; n > 0 && (pos & 7) != 0; --n, ++pos, ++src) {
    s[(pos >> 3) * kLanes] ^= uint64_t{*src} << (8 * (pos & 7));
  }
  uint64_t* d = s + (pos >> 3) * kLanes;
  for (; n >= 32; n -= 32, pos += 32, src += 32, d += 4 * kLanes) {
    d[0] ^= Load64(src);
    d[kLanes] ^= Load64(src + 8);
    d[2 * kLanes] ^= Load64(src + 16);
    d[3 * kLanes] ^= Load64(src + 24);
  }
  for (; n >= 8; n -= 8, pos += 8, src += 8, d += kLanes) d[0] ^= Load64(src);
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, src, n);
    s[(pos >> 3) * kLanes] ^= w;
  }
}

void LaneScheduler::XorMessage(int j, const Task& t, size_t off, size_t n) {
  size_t pos = 0;
  if (off < t.a_len) {
    const size_t take = std::min(n, t.a_len - off);
    XorBytes(j, 0, t.a + off, take);
    pos = take;
  }
  if (pos < n) XorBytes(j, pos, t.b + (off + pos - t.a_len), n - pos);
}

void LaneScheduler::Deadlock() {
  std::abort();
}

bool LaneScheduler::Step() {
  unsigned active = 0, paused = 0, squeeze = 0;
  for (int j = 0; j < kLanes; ++j) {
    Lane& l = lanes_[j];
    if (l.phase == kAbsorb) {
      const Task& t = tasks_[l.task];
      const size_t total = t.a_len + t.b_len;
      const size_t rem = total - l.absorbed;
      if (rem >= t.rate) {
        if (t.avail < l.absorbed + t.rate) {
          paused |= 1u << j;
          continue;
        }
        XorMessage(j, t, l.absorbed, t.rate);
        l.absorbed += t.rate;
      } else {
        if (t.avail < total) {
          paused |= 1u << j;
          continue;
        }
        XorMessage(j, t, l.absorbed, rem);
        // Padding: suffix after the message, 0x80 in the last byte of the block.
        st_[(rem >> 3) * kLanes + j] ^= uint64_t{t.suffix} << (8 * (rem & 7));
        st_[((t.rate - 1) >> 3) * kLanes + j] ^= uint64_t{0x80} << (8 * ((t.rate - 1) & 7));
        l.absorbed = total;
        l.phase = kSqueeze;
      }
      active |= 1u << j;
      squeeze |= (l.phase == kSqueeze ? 1u : 0u) << j;
    } else if (l.phase == kSqueeze) {
      active |= 1u << j;
      squeeze |= 1u << j;
    }
  }
  if (active == 0) return false;
  const bool x4 = x4_ && (active & (active - 1)) != 0;  // two or more lanes
  if (x4) {
    if (paused != 0) used_saved_ = true;
    for (int j = 0; j < kLanes; ++j) {
      if ((paused >> j) & 1) {
        for (int i = 0; i < 25; ++i) saved_[j][i] = st_[i * kLanes + j];
      }
    }
    KeccakF1600xN(st_, kLanes);
    for (int j = 0; j < kLanes; ++j) {
      if ((paused >> j) & 1) {
        for (int i = 0; i < 25; ++i) st_[i * kLanes + j] = saved_[j][i];
      }
    }
  } else {
    for (int j = 0; j < kLanes; ++j) {
      if (((active >> j) & 1) == 0) continue;
      for (int i = 0; i < 25; ++i) one_[i] = st_[i * kLanes + j];
      KeccakF1600(one_);
      for (int i = 0; i < 25; ++i) st_[i * kLanes + j] = one_[i];
    }
  }
  if (squeeze == 0) return true;
  // Squeezed blocks to lane_buf_ / ntt_buf_: one AVX2 transpose of all four lanes when there is
  // enough to extract, else word by word.
  size_t need[kLanes] = {};
  uint8_t* dst[kLanes];
  size_t max_words = 0, sum_words = 0;
  for (int j = 0; j < kLanes; ++j) {
    dst[j] = lane_buf_[j];
    if (((squeeze >> j) & 1) == 0) continue;
    const Lane& l = lanes_[j];
    const Task& t = tasks_[l.task];
    if (t.kind == kSampleNtt) {
      need[j] = kXofRate;
      dst[j] = ntt_buf_[j] + (l.blocks < 3 ? kXofRate * static_cast<size_t>(l.blocks) : 0);
    } else {
      need[j] = std::min<size_t>(t.rate, t.out_len - l.out_pos);
    }
    const size_t words = (need[j] + 7) / 8;
    max_words = std::max(max_words, words);
    sum_words += words;
  }
  if (avx2_ && sum_words > 24) {
    avx2::LanesToBytes(st_, dst, max_words);
  } else {
    for (int j = 0; j < kLanes; ++j) {
      if (((squeeze >> j) & 1) == 0) continue;
      const size_t words = (need[j] + 7) / 8;
      for (size_t i = 0; i < words; ++i) std::memcpy(dst[j] + 8 * i, &st_[i * kLanes + j], 8);
    }
  }
  for (int j = 0; j < kLanes; ++j) {
    if ((squeeze >> j) & 1) Consume(j, need[j]);
  }
  return true;
}

[[gnu::always_inline]] inline void LaneScheduler::Consume(int j, size_t take) {
  Lane& l = lanes_[j];
  Task& t = tasks_[l.task];
  const uint8_t* blk = lane_buf_[j];
  switch (t.kind) {
    case kHash:
      std::memcpy(t.out + l.out_pos, blk, take);
      l.out_pos += take;
      if (l.out_pos == t.out_len) LaneDone(j);
      return;
    case kSampleNtt: {
      // Blocks 0..2 are sampled together once all three are there, later ones one by one. The
      // XOF output of the public ρ is public. (It shares the x4 permutation with secret lanes;
      // memcheck's approximate tracking of some vector shuffles would otherwise taint it.) Each
      // block holds whole 3-byte groups, so sampling block by block is Alg. 7 exactly.
      if (++l.blocks < 3) return;
      const uint8_t* in = ntt_buf_[j];
      const size_t len = l.blocks == 3 ? 3 * kXofRate : kXofRate;
      CtPublic(in, len);
      const int wanted = kN - t.ctr;
      t.ctr = static_cast<int16_t>(
          t.ctr + (avx2_ ? avx2::RejectUniform(t.poly->c + t.ctr, wanted, in, len)
                         : portable::RejectUniform(t.poly->c + t.ctr, wanted, in, len)));
      if (t.ctr == kN) LaneDone(j);
      return;
    }
    case kCbd:
      if (t.out_len <= kPrfRate) {
        // eta = 2: 128 bytes from the first block.
        avx2_ ? avx2::Cbd(t.eta, *t.poly, blk) : portable::Cbd(t.eta, *t.poly, blk);
        LaneDone(j);
        return;
      }
      if (!used_cbd3_) {
        used_cbd3_ = true;
        for (auto& b : cbd3_) std::memset(b + 192, 0, sizeof(b) - 192);  // reading slack
      }
      std::memcpy(cbd3_[j] + l.out_pos, blk, take);
      l.out_pos += take;
      if (l.out_pos == t.out_len) {
        avx2_ ? avx2::Cbd(t.eta, *t.poly, cbd3_[j]) : portable::Cbd(t.eta, *t.poly, cbd3_[j]);
        LaneDone(j);
      }
      return;
  }
}

void LaneScheduler::LaneDone(int j) {
  Lane& l = lanes_[j];
  tasks_[l.task].finished = true;
  --remaining_;
  l.phase = kIdle;
  l.task = -1;
}

}  // namespace pqcd::kernels::mlkem
