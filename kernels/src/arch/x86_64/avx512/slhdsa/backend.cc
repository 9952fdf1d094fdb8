// The SLH-DSA table of the avx512 backend (slhdsa/backend.h; listed in arch/backends.h): SHA-256
// (FIPS 180-4 §6.2.2) sixteen blocks at a time, one per 32-bit lane of a ZMM register, and
// SHA-512 (§6.4.2) eight at a time in 64-bit lanes, with vprord/vprorq for the rotations and
// vpternlog for Ch (0xca), Maj (0xe8) and the three-way XORs (0x96): a round is about half the
// instructions of the AVX2 one.
#include <immintrin.h>

#include <cstring>

#include "slhdsa/backend.h"
#include "slhdsa/sha2.h"

// GCC 12 reports _mm512_undefined_epi32() inside _mm512_ror_epi32 as uninitialized (a false
// positive in its own header).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pqcd::kernels::slhdsa {
namespace {

template <int R>
__attribute__((always_inline)) inline __m512i Ror(__m512i x) {
  return _mm512_ror_epi32(x, R);
}
__attribute__((always_inline)) inline __m512i Xor3(__m512i a, __m512i b, __m512i c) {
  return _mm512_ternarylogic_epi32(a, b, c, 0x96);
}
__attribute__((always_inline)) inline __m512i Add(__m512i a, __m512i b) {
  return _mm512_add_epi32(a, b);
}

void Sha256CompressX16Avx512(uint32_t* v, const uint8_t* const* blocks) {
  // The sixteen blocks' words transposed: m[t][j] is word t (big-endian) of lane j.
  alignas(64) uint32_t m[16][16];
  for (int j = 0; j < 16; ++j) {
    for (int t = 0; t < 16; ++t) {
      uint32_t w;
      std::memcpy(&w, blocks[j] + 4 * t, 4);
      m[t][j] = __builtin_bswap32(w);
    }
  }
  __m512i w[16];
  for (int t = 0; t < 16; ++t) w[t] = _mm512_load_si512(m[t]);
  __m512i s[8];
  for (int i = 0; i < 8; ++i) s[i] = _mm512_loadu_si512(v + 16 * i);
  __m512i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
  for (int t = 0; t < 64; ++t) {
    // The message schedule in a ring of 16: W_t for t >= 16 replaces W_(t-16).
    if (t >= 16) {
      const __m512i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
      const __m512i s0 = Xor3(Ror<7>(w15), Ror<18>(w15), _mm512_srli_epi32(w15, 3));
      const __m512i s1 = Xor3(Ror<17>(w2), Ror<19>(w2), _mm512_srli_epi32(w2, 10));
      w[t & 15] = Add(Add(w[t & 15], s0), Add(w[(t - 7) & 15], s1));
    }
    const __m512i big_s1 = Xor3(Ror<6>(e), Ror<11>(e), Ror<25>(e));
    const __m512i ch = _mm512_ternarylogic_epi32(e, f, g, 0xca);
    const __m512i t1 = Add(Add(Add(h, big_s1), Add(ch, w[t & 15])),
                           _mm512_set1_epi32(static_cast<int>(kSha256K[t])));
    const __m512i big_s0 = Xor3(Ror<2>(a), Ror<13>(a), Ror<22>(a));
    const __m512i maj = _mm512_ternarylogic_epi32(a, b, c, 0xe8);
    h = g;
    g = f;
    f = e;
    e = Add(d, t1);
    d = c;
    c = b;
    b = a;
    a = Add(t1, Add(big_s0, maj));
  }
  const __m512i out[8] = {a, b, c, d, e, f, g, h};
  for (int i = 0; i < 8; ++i) _mm512_storeu_si512(v + 16 * i, Add(s[i], out[i]));
  // The blocks hold secret seeds (PRF): no copy of them stays behind.
  for (__m512i& x : w) x = _mm512_setzero_si512();
  std::memset(m, 0, sizeof(m));
  asm volatile("" : : "r"(m) : "memory");
}

template <int R>
__attribute__((always_inline)) inline __m512i Ror64(__m512i x) {
  return _mm512_ror_epi64(x, R);
}
__attribute__((always_inline)) inline __m512i Xor3x64(__m512i a, __m512i b, __m512i c) {
  return _mm512_ternarylogic_epi64(a, b, c, 0x96);
}
__attribute__((always_inline)) inline __m512i Add64(__m512i a, __m512i b) {
  return _mm512_add_epi64(a, b);
}

// SHA-512 (FIPS 180-4 §6.4.2) eight blocks at a time, one per 64-bit lane.
void Sha512CompressX8Avx512(uint64_t* v, const uint8_t* const* blocks) {
  alignas(64) uint64_t m[16][8];
  for (int j = 0; j < 8; ++j) {
    for (int t = 0; t < 16; ++t) {
      uint64_t w;
      std::memcpy(&w, blocks[j] + 8 * t, 8);
      m[t][j] = __builtin_bswap64(w);
    }
  }
  __m512i w[16];
  for (int t = 0; t < 16; ++t) w[t] = _mm512_load_si512(m[t]);
  __m512i s[8];
  for (int i = 0; i < 8; ++i) s[i] = _mm512_loadu_si512(v + 8 * i);
  __m512i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
  for (int t = 0; t < 80; ++t) {
    if (t >= 16) {
      const __m512i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
      const __m512i s0 = Xor3x64(Ror64<1>(w15), Ror64<8>(w15), _mm512_srli_epi64(w15, 7));
      const __m512i s1 = Xor3x64(Ror64<19>(w2), Ror64<61>(w2), _mm512_srli_epi64(w2, 6));
      w[t & 15] = Add64(Add64(w[t & 15], s0), Add64(w[(t - 7) & 15], s1));
    }
    const __m512i big_s1 = Xor3x64(Ror64<14>(e), Ror64<18>(e), Ror64<41>(e));
    const __m512i ch = _mm512_ternarylogic_epi64(e, f, g, 0xca);
    const __m512i t1 = Add64(Add64(Add64(h, big_s1), Add64(ch, w[t & 15])),
                             _mm512_set1_epi64(static_cast<long long>(kSha512K[t])));
    const __m512i big_s0 = Xor3x64(Ror64<28>(a), Ror64<34>(a), Ror64<39>(a));
    const __m512i maj = _mm512_ternarylogic_epi64(a, b, c, 0xe8);
    h = g;
    g = f;
    f = e;
    e = Add64(d, t1);
    d = c;
    c = b;
    b = a;
    a = Add64(t1, Add64(big_s0, maj));
  }
  const __m512i out[8] = {a, b, c, d, e, f, g, h};
  for (int i = 0; i < 8; ++i) _mm512_storeu_si512(v + 8 * i, Add64(s[i], out[i]));
  for (__m512i& x : w) x = _mm512_setzero_si512();
  std::memset(m, 0, sizeof(m));
  asm volatile("" : : "r"(m) : "memory");
}

}  // namespace

extern const Backend kAvx512;
constinit const Backend kAvx512{
    .sha256_lanes = 16,
    .sha256_compress_lanes = &Sha256CompressX16Avx512,
    .sha512_lanes = 8,
    .sha512_compress_lanes = &Sha512CompressX8Avx512,
};

}  // namespace pqcd::kernels::slhdsa
