#include "keccak/keccak_multi.h"

#include <algorithm>
#include <cstring>

#include "pqcd/kernels/common.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {

void KeccakF1600xNPortable(uint64_t* st, size_t n) {
  uint64_t one[kKeccakLanes];
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < kKeccakLanes; ++i) one[i] = st[i * n + j];
    KeccakF1600Portable(one);
    for (size_t i = 0; i < kKeccakLanes; ++i) st[i * n + j] = one[i];
  }
  SecureZero(one, sizeof(one));
}

void KeccakF1600xN(uint64_t* st, size_t n) {
  const Isa isa = ActiveIsa();
  if (n == 8 && isa == Isa::kAvx512) {
    KeccakF1600x8Avx512(st);
  } else if (n == 4 && isa == Isa::kAvx512) {
    KeccakF1600x4Avx512(st, 4);
  } else if (n % 4 == 0 && isa == Isa::kAvx2) {
    for (size_t off = 0; off < n; off += 4) KeccakF1600x4Avx2(st + off, n);
  } else {
    KeccakF1600xNPortable(st, n);
  }
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
void KeccakMulti<N>::XorByte(size_t lane, size_t pos, uint8_t b) {
  st_[(pos / 8) * N + lane] ^= uint64_t{b} << (8 * (pos % 8));
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
  // Byte at absolute offset `o` of lane j's message.
  auto byte_at = [&](size_t j, size_t o) -> uint8_t {
    if (o < len) return in[j] != nullptr ? in[j][o] : 0;
    return (tail != nullptr && tail[j] != nullptr) ? tail[j][o - len] : 0;
  };
  size_t done = 0;
  // Whole blocks straight from the first part, a word at a time.
  while (total - done >= rate_) {
    if (done + rate_ <= len) {
      for (size_t j = 0; j < N; ++j) {
        if (in[j] == nullptr) continue;
        for (size_t w = 0; w < words; ++w) {
          uint64_t v;
          std::memcpy(&v, in[j] + done + 8 * w, 8);
          st_[w * N + j] ^= v;
        }
      }
    } else {
      for (size_t j = 0; j < N; ++j) {
        for (size_t b = 0; b < rate_; ++b) XorByte(j, b, byte_at(j, done + b));
      }
    }
    KeccakF1600xN(st_, N);
    done += rate_;
  }
  const size_t rest = total - done;
  for (size_t j = 0; j < N; ++j) {
    for (size_t b = 0; b < rest; ++b) XorByte(j, b, byte_at(j, done + b));
    XorByte(j, rest, suffix_);
    XorByte(j, rate_ - 1, 0x80);
  }
  KeccakF1600xN(st_, N);
  pos_ = 0;
}

template <size_t N>
void KeccakMulti<N>::SqueezeBlocks(uint8_t* const out[N], size_t nblocks) {
  const size_t words = rate_ / 8;
  for (size_t b = 0; b < nblocks; ++b) {
    if (pos_ == rate_) {
      KeccakF1600xN(st_, N);
      pos_ = 0;
    }
    for (size_t j = 0; j < N; ++j) {
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
      KeccakF1600xN(st_, N);
      pos_ = 0;
    }
    const size_t take = std::min(len - done, rate_ - pos_);
    for (size_t j = 0; j < N; ++j) {
      if (out[j] == nullptr) continue;
      for (size_t b = 0; b < take; ++b) {
        const size_t p = pos_ + b;
        out[j][done + b] = static_cast<uint8_t>(st_[(p / 8) * N + j] >> (8 * (p % 8)));
      }
    }
    pos_ += take;
    done += take;
  }
}

template class KeccakMulti<4>;
template class KeccakMulti<8>;

}  // namespace pqcd::kernels
