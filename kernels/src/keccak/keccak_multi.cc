#include "keccak/keccak_multi.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "keccak/backend.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {

// Lanes are read and written as little-endian 64-bit words (memcpy between bytes and lanes).
static_assert(std::endian::native == std::endian::little);

void KeccakF1600xNPortable(uint64_t* st, size_t n) {
  uint64_t one[kKeccakLanes];
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < kKeccakLanes; ++i) one[i] = st[i * n + j];
    KeccakF1600Portable(one);
    for (size_t i = 0; i < kKeccakLanes; ++i) st[i * n + j] = one[i];
  }
  SecureZero(one, sizeof(one));
}

// ---- The portable hooks of keccak/backend.h ----------------------------------------------------

namespace keccak::portable {

void F1600x4(uint64_t* st, size_t stride, unsigned live) {
  uint64_t one[kKeccakLanes];
  for (size_t j = 0; j < 4; ++j) {
    if (((live >> j) & 1) == 0) continue;  // `live` is public (the shape of the caller's plan)
    for (size_t i = 0; i < kKeccakLanes; ++i) one[i] = st[i * stride + j];
    KeccakF1600Portable(one);
    for (size_t i = 0; i < kKeccakLanes; ++i) st[i * stride + j] = one[i];
  }
  SecureZero(one, sizeof(one));
}

void F1600x4x1(uint64_t* st, size_t stride, unsigned live, uint64_t st1[kKeccakLanes]) {
  F1600x4(st, stride, live);
  KeccakF1600Portable(st1);
}

void F1600x8(uint64_t* st) {
  KeccakF1600xNPortable(st, 8);
}

void ExtractLanes4(const uint64_t* st, size_t stride, size_t words, uint8_t* const out[4]) {
  for (size_t w = 0; w < words; ++w) {
    for (size_t j = 0; j < 4; ++j) std::memcpy(out[j] + 8 * w, st + w * stride + j, 8);
  }
}

}  // namespace keccak::portable

namespace {

// Five interleaved states: the first four in f1600x4x1's vector part, the fifth (column 4) copied
// to a contiguous state for its single-state part (fused on AVX2: about 1.3x the cost of four
// states instead of 1.7x).
void KeccakF1600x5(const keccak::Backend& be, uint64_t* st) {
  uint64_t one[kKeccakLanes];
  for (size_t i = 0; i < kKeccakLanes; ++i) one[i] = st[i * 5 + 4];
  be.f1600x4x1(st, 5, keccak::kAllLanes, one);
  for (size_t i = 0; i < kKeccakLanes; ++i) st[i * 5 + 4] = one[i];
  SecureZero(one, sizeof(one));
}

}  // namespace

void KeccakF1600xN(uint64_t* st, size_t n) {
  KeccakF1600xN(keccak::ActiveBackend(), st, n);
}

void KeccakF1600xNWithRider(uint64_t* st, size_t n, uint64_t st1[25]) {
  KeccakF1600xNWithRider(keccak::ActiveBackend(), st, n, st1);
}

void KeccakF1600xN(const keccak::Backend& be, uint64_t* st, size_t n) {
  if (n == 8) {
    be.f1600x8(st);
  } else if (n == 5) {
    KeccakF1600x5(be, st);
  } else if (n % 4 == 0) {
    for (size_t off = 0; off < n; off += 4) be.f1600x4(st + off, n, keccak::kAllLanes);
  } else {
    uint64_t one[kKeccakLanes];
    for (size_t j = 0; j < n; ++j) {
      for (size_t i = 0; i < kKeccakLanes; ++i) one[i] = st[i * n + j];
      be.f1600(one);
      for (size_t i = 0; i < kKeccakLanes; ++i) st[i * n + j] = one[i];
    }
    SecureZero(one, sizeof(one));
  }
}

void KeccakF1600xNWithRider(const keccak::Backend& be, uint64_t* st, size_t n, uint64_t st1[25]) {
  if (n == 4) {
    be.f1600x4x1(st, 4, keccak::kAllLanes, st1);
  } else {
    KeccakF1600xN(be, st, n);
    be.f1600(st1);
  }
}

KeccakRider::~KeccakRider() {
  SecureZero(state, sizeof(state));
}

AbsorbRider::~AbsorbRider() = default;

void AbsorbRider::Begin(Bytes first, Bytes second) {
  std::memset(state, 0, sizeof(state));
  first_ = first;
  second_ = second;
  done_ = 0;
  padded_ = false;
}

// Message bytes [from, from + n) of first || second into dst.
void AbsorbRider::Gather(size_t from, size_t n, uint8_t* dst) const {
  const size_t a = first_.size();
  const size_t from_first = from < a ? std::min(n, a - from) : 0;
  if (from_first != 0) std::memcpy(dst, first_.data() + from, from_first);
  if (n > from_first)
    std::memcpy(dst + from_first, second_.data() + (from + from_first - a), n - from_first);
}

bool AbsorbRider::Step() {
  if (padded_) return false;
  const size_t total = first_.size() + second_.size();
  const size_t words = rate_ / 8;
  alignas(8) uint8_t block[200];
  const uint8_t* src;
  if (total - done_ >= rate_ && done_ + rate_ <= first_.size()) {
    src = first_.data() + done_;  // a whole block inside the first part: no copy
    done_ += rate_;
  } else if (total - done_ >= rate_) {
    Gather(done_, rate_, block);
    src = block;
    done_ += rate_;
  } else {
    const size_t rest = total - done_;
    Gather(done_, rest, block);
    std::memset(block + rest, 0, rate_ - rest);
    block[rest] ^= suffix_;
    block[rate_ - 1] ^= 0x80;
    src = block;
    done_ = total;
    padded_ = true;
  }
  for (size_t w = 0; w < words; ++w) {
    uint64_t v;
    std::memcpy(&v, src + 8 * w, 8);
    state[w] ^= v;
  }
  SecureZero(block, sizeof(block));  // the message may be secret (J's z)
  return true;
}

void AbsorbRider::Finish(MutBytes out) {
  while (Step()) KeccakF1600(state);
  size_t done = 0;
  while (done < out.size()) {
    const size_t take = std::min(out.size() - done, rate_);
    for (size_t b = 0; b < take; b += 8) {
      const uint64_t v = state[b / 8];
      std::memcpy(out.data() + done + b, &v, std::min<size_t>(8, take - b));
    }
    done += take;
    if (done < out.size()) KeccakF1600(state);
  }
}

template <size_t N>
void KeccakMulti<N>::Permute() {
  if (rider_ != nullptr && rider_->Step()) {
    KeccakF1600xNWithRider(be_, st_, N, rider_->state);
  } else {
    KeccakF1600xN(be_, st_, N);
  }
}

template <size_t N>
KeccakMulti<N>::KeccakMulti(size_t rate_bytes, uint8_t suffix)
    : be_(keccak::ActiveBackend()), rate_(rate_bytes), suffix_(suffix) {
  Reset();
}

template <size_t N>
KeccakMulti<N>::~KeccakMulti() {
  SecureZero(st_, sizeof(st_));
}

template <size_t N>
void KeccakMulti<N>::Reset() {
  std::memset(st_, 0, sizeof(st_));
  pos_ = 0;
}

template <size_t N>
void KeccakMulti<N>::AbsorbOnce(const uint8_t* const in[N], size_t len) {
  AbsorbOnce2(in, len, nullptr, 0);
}

template <size_t N>
void KeccakMulti<N>::AbsorbOnce2(const uint8_t* const in[N], size_t len,
                                 const uint8_t* const tail[N], size_t tail_len) {
  const size_t total = len + tail_len;
  const size_t words = rate_ / 8;
  // Lane j's bytes [from, from + n) of in[j] || tail[j] (zeros for a null lane) into dst.
  auto gather = [&](size_t j, size_t from, size_t n, uint8_t* dst) {
    const size_t from_in = from < len ? std::min(n, len - from) : 0;
    if (from_in != 0) {
      if (in[j] != nullptr) {
        std::memcpy(dst, in[j] + from, from_in);
      } else {
        std::memset(dst, 0, from_in);
      }
    }
    if (n > from_in) {
      const size_t t0 = from + from_in - len;
      if (tail != nullptr && tail[j] != nullptr) {
        std::memcpy(dst + from_in, tail[j] + t0, n - from_in);
      } else {
        std::memset(dst + from_in, 0, n - from_in);
      }
    }
  };
  auto xor_block = [&](size_t j, const uint8_t* block) {
    for (size_t w = 0; w < words; ++w) {
      uint64_t v;
      std::memcpy(&v, block + 8 * w, 8);
      st_[w * N + j] ^= v;
    }
  };
  alignas(8) uint8_t block[200];
  size_t done = 0;
  // Whole blocks: straight from the first part where they lie inside it, else assembled.
  while (total - done >= rate_) {
    for (size_t j = 0; j < N; ++j) {
      if (done + rate_ <= len) {
        if (in[j] != nullptr) xor_block(j, in[j] + done);
      } else {
        gather(j, done, rate_, block);
        xor_block(j, block);
      }
    }
    Permute();
    done += rate_;
  }
  // The final block: remaining bytes, the domain suffix and the last padding bit.
  const size_t rest = total - done;
  for (size_t j = 0; j < N; ++j) {
    gather(j, done, rest, block);
    std::memset(block + rest, 0, rate_ - rest);
    block[rest] ^= suffix_;
    block[rate_ - 1] ^= 0x80;
    xor_block(j, block);
  }
  SecureZero(block, sizeof(block));  // may hold secret seeds
  Permute();
  pos_ = 0;
}

template <size_t N>
void KeccakMulti<N>::SqueezeBlocks(uint8_t* const out[N], size_t nblocks) {
  const size_t words = rate_ / 8;
  for (size_t b = 0; b < nblocks; ++b) {
    if (pos_ == rate_) {
      Permute();
      pos_ = 0;
    }
    size_t first = 0;  // lanes [0, first) already written
    if constexpr (N == 4 || N == 5) {
      if (out[0] != nullptr && out[1] != nullptr && out[2] != nullptr && out[3] != nullptr) {
        uint8_t* const four[4] = {out[0] + b * rate_, out[1] + b * rate_, out[2] + b * rate_,
                                  out[3] + b * rate_};
        be_.extract_lanes4(st_, N, words, four);
        first = 4;
      }
    }
    for (size_t j = first; j < N; ++j) {
      if (out[j] == nullptr) continue;
      uint8_t* o = out[j] + b * rate_;
      for (size_t w = 0; w < words; ++w) std::memcpy(o + 8 * w, &st_[w * N + j], 8);
    }
    pos_ = rate_;
  }
}

template <size_t N>
void KeccakMulti<N>::Squeeze(uint8_t* const out[N], size_t len) {
  size_t done = 0;
  while (done < len) {
    if (pos_ == rate_) {
      Permute();
      pos_ = 0;
    }
    const size_t take = std::min(len - done, rate_ - pos_);
    // Output bytes [pos_, pos_ + take) of the block, word by word (lanes are little-endian).
    for (size_t j = 0; j < N; ++j) {
      if (out[j] == nullptr) continue;
      uint8_t* o = out[j] + done;
      size_t p = pos_;
      const size_t stop = pos_ + take;
      while (p < stop) {
        const size_t off = p % 8;
        const size_t n = std::min<size_t>(8 - off, stop - p);
        const uint64_t v = st_[(p / 8) * N + j];
        if (n == 8) {
          std::memcpy(o, &v, 8);
        } else {
          std::memcpy(o, reinterpret_cast<const uint8_t*>(&v) + off, n);
        }
        o += n;
        p += n;
      }
    }
    pos_ += take;
    done += take;
  }
}

template class KeccakMulti<4>;
template class KeccakMulti<5>;
template class KeccakMulti<8>;

}  // namespace pqcd::kernels
