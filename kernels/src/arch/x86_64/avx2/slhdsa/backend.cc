// The SLH-DSA table of the avx2 backend (slhdsa/backend.h; listed in arch/backends.h): SHA-256
// eight blocks at a time, one per 32-bit lane of a YMM register, and F chains kept in those lanes
// across their steps; SHA-512 four blocks at a time in 64-bit lanes.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "slhdsa/backend.h"
#include "slhdsa/sha2.h"

namespace pqcd::kernels::slhdsa {
namespace {

template <int R>
inline __m256i Rotr(__m256i x) {
  return _mm256_or_si256(_mm256_srli_epi32(x, R), _mm256_slli_epi32(x, 32 - R));
}

void Sha256CompressX8Avx2(uint32_t* v, const uint8_t* const* blocks) {
  __m256i w[64];
  for (int t = 0; t < 16; ++t) {
    w[t] = _mm256_set_epi32(static_cast<int>(LoadBe32(blocks[7] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[6] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[5] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[4] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[3] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[2] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[1] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[0] + 4 * t)));
  }
  for (int t = 16; t < 64; ++t) {
    const __m256i s0 = _mm256_xor_si256(_mm256_xor_si256(Rotr<7>(w[t - 15]), Rotr<18>(w[t - 15])),
                                        _mm256_srli_epi32(w[t - 15], 3));
    const __m256i s1 = _mm256_xor_si256(_mm256_xor_si256(Rotr<17>(w[t - 2]), Rotr<19>(w[t - 2])),
                                        _mm256_srli_epi32(w[t - 2], 10));
    w[t] = _mm256_add_epi32(_mm256_add_epi32(w[t - 16], s0), _mm256_add_epi32(w[t - 7], s1));
  }
  __m256i s[8];
  for (int i = 0; i < 8; ++i)
    s[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 8 * i));
  __m256i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
  for (int t = 0; t < 64; ++t) {
    const __m256i big_s1 = _mm256_xor_si256(_mm256_xor_si256(Rotr<6>(e), Rotr<11>(e)), Rotr<25>(e));
    const __m256i ch = _mm256_xor_si256(_mm256_and_si256(e, f), _mm256_andnot_si256(e, g));
    const __m256i t1 =
        _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(h, big_s1), _mm256_add_epi32(ch, w[t])),
                         _mm256_set1_epi32(static_cast<int>(kSha256K[t])));
    const __m256i big_s0 = _mm256_xor_si256(_mm256_xor_si256(Rotr<2>(a), Rotr<13>(a)), Rotr<22>(a));
    const __m256i maj =
        _mm256_xor_si256(_mm256_and_si256(a, b), _mm256_and_si256(c, _mm256_xor_si256(a, b)));
    const __m256i t2 = _mm256_add_epi32(big_s0, maj);
    h = g;
    g = f;
    f = e;
    e = _mm256_add_epi32(d, t1);
    d = c;
    c = b;
    b = a;
    a = _mm256_add_epi32(t1, t2);
  }
  const __m256i out[8] = {a, b, c, d, e, f, g, h};
  for (int i = 0; i < 8; ++i) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 8 * i), _mm256_add_epi32(s[i], out[i]));
  }
  for (__m256i& x : w) x = _mm256_setzero_si256();
}

__attribute__((always_inline)) inline __m256i Add(__m256i a, __m256i b) {
  return _mm256_add_epi32(a, b);
}
__attribute__((always_inline)) inline __m256i Xor3(__m256i a, __m256i b, __m256i c) {
  return _mm256_xor_si256(_mm256_xor_si256(a, b), c);
}

// SHA-256 rounds kFrom..kTo-1 on the state s (a..h, updated) with the message words of w, a ring
// of sixteen (as the avx512 table's Rounds).
template <int kFrom, int kTo>
__attribute__((always_inline)) inline void Rounds(__m256i s[8], __m256i w[16]) {
  __m256i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma GCC unroll 64
  for (int t = kFrom; t < kTo; ++t) {
    if (t >= 16) {
      const __m256i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
      const __m256i s0 = Xor3(Rotr<7>(w15), Rotr<18>(w15), _mm256_srli_epi32(w15, 3));
      const __m256i s1 = Xor3(Rotr<17>(w2), Rotr<19>(w2), _mm256_srli_epi32(w2, 10));
      w[t & 15] = Add(Add(w[t & 15], s0), Add(w[(t - 7) & 15], s1));
    }
    const __m256i big_s1 = Xor3(Rotr<6>(e), Rotr<11>(e), Rotr<25>(e));
    const __m256i ch = _mm256_xor_si256(_mm256_and_si256(e, f), _mm256_andnot_si256(e, g));
    const __m256i t1 = Add(Add(Add(h, big_s1), Add(ch, w[t & 15])),
                           _mm256_set1_epi32(static_cast<int>(kSha256K[t])));
    const __m256i big_s0 = Xor3(Rotr<2>(a), Rotr<13>(a), Rotr<22>(a));
    const __m256i maj =
        _mm256_xor_si256(_mm256_and_si256(a, b), _mm256_and_si256(c, _mm256_xor_si256(a, b)));
    h = g;
    g = f;
    f = e;
    e = Add(d, t1);
    d = c;
    c = b;
    b = a;
    a = Add(t1, Add(big_s0, maj));
  }
  s[0] = a;
  s[1] = b;
  s[2] = c;
  s[3] = d;
  s[4] = e;
  s[5] = f;
  s[6] = g;
  s[7] = h;
}

// slhdsa::Backend::sha256_chains on eight lanes: the avx512 table's ChainsX16 (which says how a
// step's block is made from the lanes' words) with YMM registers, and a lane whose chain is done
// keeping its value through a blend on the public compare of its steps.
template <int kWords>
void ChainsX8(const Sha256ChainsArgs& args) {
  constexpr size_t n = 4 * kWords;
  __m256i iv[8];
  for (int i = 0; i < 8; ++i) iv[i] = _mm256_set1_epi32(static_cast<int>(args.chain[i]));
  const __m256i pad = _mm256_set1_epi32(0x8000);
  const __m256i bits = _mm256_set1_epi32(static_cast<int>((64 + kAdrscBytes + n) * 8));
  alignas(32) uint32_t m[16][8];
  alignas(32) uint32_t start[8], steps[8];
  __m256i w[16];
  __m256i d[kWords];
  for (size_t base = 0; base < args.count; base += 8) {
    const size_t live = std::min<size_t>(8, args.count - base);
    std::memset(m, 0, sizeof(m));
    std::memset(start, 0, sizeof(start));
    std::memset(steps, 0, sizeof(steps));
    uint32_t most = 0;
    for (size_t j = 0; j < live; ++j) {
      const uint8_t* ad = args.adrsc + (base + j) * kAdrscBytes;
      for (int t = 0; t < 4; ++t) m[t][j] = LoadBe32(ad + 4 * t);
      m[4][j] = (uint32_t{ad[16]} << 24) | (uint32_t{ad[17]} << 16);
      start[j] = args.start[base + j];
      steps[j] = args.steps[base + j];
      most = std::max(most, steps[j]);  // public
    }
    __m256i fixed[5];
    for (int t = 0; t < 5; ++t)
      fixed[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m[t]));
    if (args.prf_adrsc != nullptr) {
      for (size_t j = 0; j < live; ++j) {
        alignas(16) uint8_t blk[64];
        LayOutPrfBlock(blk, args, base + j);
        for (int t = 0; t < 16; ++t) m[t][j] = LoadBe32(blk + 4 * t);
        std::memset(blk, 0, sizeof(blk));
        asm volatile("" : : "r"(blk) : "memory");
      }
      for (int t = 0; t < 16; ++t) w[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m[t]));
      __m256i x[8];
      for (int i = 0; i < 8; ++i) x[i] = iv[i];
      Rounds<0, 64>(x, w);
      for (int i = 0; i < kWords; ++i) d[i] = Add(iv[i], x[i]);
    } else {
      for (size_t j = 0; j < live; ++j) {
        for (int i = 0; i < kWords; ++i) m[i][j] = LoadBe32(args.values[base + j] + 4 * i);
      }
      for (int i = 0; i < kWords; ++i)
        d[i] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m[i]));
    }
    std::memset(m, 0, sizeof(m));
    asm volatile("" : : "r"(m) : "memory");
    __m256i mid[8];
    for (int i = 0; i < 8; ++i) mid[i] = iv[i];
    for (int t = 0; t < 4; ++t) w[t] = fixed[t];
    Rounds<0, 4>(mid, w);
    const __m256i steps_v = _mm256_load_si256(reinterpret_cast<const __m256i*>(steps));
    __m256i hash = _mm256_load_si256(reinterpret_cast<const __m256i*>(start));
    for (uint32_t t = 0; t < most; ++t) {
      // Lanes whose chain has steps left (steps are below 2^31: a signed compare is exact).
      const __m256i live_mask = _mm256_cmpgt_epi32(steps_v, _mm256_set1_epi32(static_cast<int>(t)));
      for (int i = 0; i < 4; ++i) w[i] = fixed[i];
      w[4] = _mm256_or_si256(fixed[4], _mm256_srli_epi32(hash, 16));
      w[5] = _mm256_or_si256(_mm256_slli_epi32(hash, 16), _mm256_srli_epi32(d[0], 16));
      for (int i = 1; i < kWords; ++i) {
        w[5 + i] = _mm256_or_si256(_mm256_slli_epi32(d[i - 1], 16), _mm256_srli_epi32(d[i], 16));
      }
      w[5 + kWords] = _mm256_or_si256(_mm256_slli_epi32(d[kWords - 1], 16), pad);
      for (int i = 6 + kWords; i < 15; ++i) w[i] = _mm256_setzero_si256();
      w[15] = bits;
      __m256i x[8];
      for (int i = 0; i < 8; ++i) x[i] = mid[i];
      Rounds<4, 64>(x, w);
      for (int i = 0; i < kWords; ++i) d[i] = _mm256_blendv_epi8(d[i], Add(iv[i], x[i]), live_mask);
      hash = Add(hash, _mm256_set1_epi32(1));
    }
    for (int i = 0; i < kWords; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(m[i]), d[i]);
    for (size_t j = 0; j < live; ++j) {
      for (int i = 0; i < kWords; ++i) StoreBe32(args.values[base + j] + 4 * i, m[i][j]);
    }
  }
  for (__m256i& y : w) y = _mm256_setzero_si256();
  for (__m256i& y : d) y = _mm256_setzero_si256();
  std::memset(m, 0, sizeof(m));
  asm volatile("" : : "r"(m) : "memory");
}

void Sha256ChainsX8Avx2(const Sha256ChainsArgs& args) {
  switch (args.n) {
    case 16:
      return ChainsX8<4>(args);
    case 24:
      return ChainsX8<6>(args);
    default:
      return ChainsX8<8>(args);
  }
}

template <int R>
inline __m256i Rotr64(__m256i x) {
  return _mm256_or_si256(_mm256_srli_epi64(x, R), _mm256_slli_epi64(x, 64 - R));
}

// SHA-512 (FIPS 180-4 §6.4.2) four blocks at a time, one per 64-bit lane: H and T_l of the n = 24,
// 32 sets.
void Sha512CompressX4Avx2(uint64_t* v, const uint8_t* const* blocks) {
  alignas(32) uint64_t m[16][4];
  for (int j = 0; j < 4; ++j) {
    for (int t = 0; t < 16; ++t) m[t][j] = LoadBe64(blocks[j] + 8 * t);
  }
  __m256i w[16];
  for (int t = 0; t < 16; ++t) w[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m[t]));
  __m256i s[8];
  for (int i = 0; i < 8; ++i)
    s[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 4 * i));
  __m256i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma GCC unroll 80
  for (int t = 0; t < 80; ++t) {
    if (t >= 16) {
      const __m256i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
      const __m256i s0 = Xor3(Rotr64<1>(w15), Rotr64<8>(w15), _mm256_srli_epi64(w15, 7));
      const __m256i s1 = Xor3(Rotr64<19>(w2), Rotr64<61>(w2), _mm256_srli_epi64(w2, 6));
      w[t & 15] =
          _mm256_add_epi64(_mm256_add_epi64(w[t & 15], s0), _mm256_add_epi64(w[(t - 7) & 15], s1));
    }
    const __m256i big_s1 = Xor3(Rotr64<14>(e), Rotr64<18>(e), Rotr64<41>(e));
    const __m256i ch = _mm256_xor_si256(_mm256_and_si256(e, f), _mm256_andnot_si256(e, g));
    const __m256i t1 = _mm256_add_epi64(
        _mm256_add_epi64(_mm256_add_epi64(h, big_s1), _mm256_add_epi64(ch, w[t & 15])),
        _mm256_set1_epi64x(static_cast<long long>(kSha512K[t])));
    const __m256i big_s0 = Xor3(Rotr64<28>(a), Rotr64<34>(a), Rotr64<39>(a));
    const __m256i maj =
        _mm256_xor_si256(_mm256_and_si256(a, b), _mm256_and_si256(c, _mm256_xor_si256(a, b)));
    h = g;
    g = f;
    f = e;
    e = _mm256_add_epi64(d, t1);
    d = c;
    c = b;
    b = a;
    a = _mm256_add_epi64(t1, _mm256_add_epi64(big_s0, maj));
  }
  const __m256i out[8] = {a, b, c, d, e, f, g, h};
  for (int i = 0; i < 8; ++i) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 4 * i), _mm256_add_epi64(s[i], out[i]));
  }
  for (__m256i& x : w) x = _mm256_setzero_si256();
  std::memset(m, 0, sizeof(m));
  asm volatile("" : : "r"(m) : "memory");
}

}  // namespace

extern const Backend kAvx2;
constinit const Backend kAvx2{
    .sha256_lanes = 8,
    .sha256_compress_lanes = &Sha256CompressX8Avx2,
    .sha256_chain_lanes = 8,
    .sha256_chains = &Sha256ChainsX8Avx2,
    .sha512_lanes = 4,
    .sha512_compress_lanes = &Sha512CompressX4Avx2,
};

}  // namespace pqcd::kernels::slhdsa
