// AVX2 ML-DSA bit packing of small coefficients (FIPS 204 Alg. 16-19 for 3..13-bit fields),
// compiled with -mavx2 -mbmi2 -mpopcnt only; see mldsa_avx2.h.
//
// Packing, 8 coefficients (Bits bytes) per step: the 64-bit lanes first take coefficient pairs
// (c_2j | c_2j+1 << Bits), each pair is shifted by its bit offset modulo 8 (vpsllvq), the pairs
// are regrouped (even pairs in the low 128-bit half, odd pairs in the high one), and one vpshufb
// per half moves each pair to its byte offset; the two halves never claim the same byte twice
// within a half, so an OR of the halves gives the Bits output bytes. Unpacking: each lane takes
// the 4 bytes holding its field (vpshufb from a 16-byte window), shifts (vpsrlvd) and masks.
// Stores / loads of 16 bytes that would pass the end of the encoding go through a small stack
// buffer, wiped afterwards (the coefficients may be secret). The fused passes (key generation's
// Power2Round + PackT1, the signer's Decompose + PackW1, the verifier's UseHint + PackW1) feed
// Pack8 from registers, one pass over memory. Constant time: no data-dependent
// branch or index. Helpers are static / anonymous-namespace only (never shared with baseline
// files).
#include <immintrin.h>

#include <cstdint>

#include "arch/x86_64/avx2/mldsa/mldsa_avx2.h"
#include "pqcd/kernels/common.h"

namespace pqcd::kernels::mldsa::avx2 {
namespace {

#define PQCD_AI static inline __attribute__((always_inline))

// vpshufb control and shift counts for one Bits value.
struct PackPlan {
  int8_t shuffle[32];    // [0..16): even pairs (P0 in bytes 0-7, P2 in 8-15); [16..32): odd pairs
  int64_t shift[4];      // per pair, in the regrouped order P0, P2, P1, P3
  int8_t unshuffle[32];  // unpacking: the 4 window bytes holding field i, for lanes 0-3 | 4-7
  int32_t unshift[8];    // the field's bit offset within those 4 bytes
  bool ok;
};

template <int Bits>
constexpr PackPlan MakePackPlan() {
  PackPlan p{};
  p.ok = true;
  for (int i = 0; i < 32; ++i) p.shuffle[i] = -128;  // zero byte
  constexpr int kOrder[4] = {0, 2, 1, 3};            // pair held by qword slot k
  for (int k = 0; k < 4; ++k) {
    const int j = kOrder[k];
    const int bit = 2 * j * Bits;
    const int off = bit / 8, sh = bit % 8;
    p.shift[k] = sh;
    const int span = (2 * Bits + sh + 7) / 8;  // bytes the shifted pair covers
    const int half = k / 2;                    // 0: low 128 bits (P0, P2), 1: high (P1, P3)
    const int src_base = 8 * (k % 2);          // qword within the half
    for (int b = 0; b < span; ++b) {
      const int dst = off + b;
      if (dst >= 16 || b >= 8 || p.shuffle[16 * half + dst] != -128) p.ok = false;
      if (dst < 16) p.shuffle[16 * half + dst] = static_cast<int8_t>(src_base + b);
    }
  }
  // Unpacking: field i (of 8) starts at bit i * Bits of a 16-byte window that both 128-bit
  // halves hold (lane i lives in half i / 4).
  for (int i = 0; i < 8; ++i) {
    const int bit = i * Bits;
    const int off = bit / 8;
    for (int b = 0; b < 4; ++b) {
      p.unshuffle[16 * (i / 4) + 4 * (i % 4) + b] = static_cast<int8_t>(off + b);
    }
    if (off + 3 >= 16 || (bit % 8) + Bits > 32) p.ok = false;
    p.unshift[i] = bit % 8;
  }
  return p;
}

template <int Bits>
struct Plan {
  static constexpr PackPlan kPlan = MakePackPlan<Bits>();
  static_assert(kPlan.ok, "packing layout does not fit");
};

// Bits bytes (in the low bytes of the result, zeros above) from 8 coefficients in [0, 2^Bits).
template <int Bits>
PQCD_AI __m128i Pack8(__m256i v) {
  static_assert(Bits >= 3 && Bits <= 16);
  constexpr const PackPlan& p = Plan<Bits>::kPlan;
  const __m256i even = _mm256_blend_epi32(v, _mm256_setzero_si256(), 0xAA);
  __m256i pairs = _mm256_or_si256(even, _mm256_srli_epi64(v, 32 - Bits));  // c_2j | c_2j+1 << B
  pairs = _mm256_permute4x64_epi64(pairs, 0xD8);                           // P0 P2 | P1 P3
  pairs =
      _mm256_sllv_epi64(pairs, _mm256_setr_epi64x(p.shift[0], p.shift[1], p.shift[2], p.shift[3]));
  pairs =
      _mm256_shuffle_epi8(pairs, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.shuffle)));
  return _mm_or_si128(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
}

// 8 raw Bits-bit fields from the 16 bytes at w (only the first Bits bytes matter).
template <int Bits>
PQCD_AI __m256i Unpack8(__m128i w) {
  constexpr const PackPlan& p = Plan<Bits>::kPlan;
  const __m256i ctl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.unshuffle));
  const __m256i fields = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(w), ctl);
  const __m256i sh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.unshift));
  return _mm256_and_si256(_mm256_srlv_epi32(fields, sh), _mm256_set1_epi32((1 << Bits) - 1));
}

PQCD_AI __m256i Load(const int32_t* p) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
}

// Writes 32 Bits bytes; gen(g) -> the 8 values in [0, 2^Bits) of group g (called once per g, in
// order 0..31).
template <int Bits, class Gen>
PQCD_AI void PackGroups(uint8_t* out, Gen gen) {
  // Group g stores 16 bytes at g Bits: inside the output while g Bits + 16 <= 32 Bits.
  constexpr int kDirect = (32 * Bits - 16) / Bits + 1;
  int g = 0;
  for (; g < kDirect && g < 32; ++g) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + g * Bits), Pack8<Bits>(gen(g)));
  }
  if (g < 32) {
    alignas(16) uint8_t tail[6 * 16 + 16];
    const int first = g;
    for (; g < 32; ++g) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(tail + (g - first) * Bits), Pack8<Bits>(gen(g)));
    }
    const int n = (32 - first) * Bits;
    for (int i = 0; i < n; ++i) out[first * Bits + i] = tail[i];
    SecureZero(tail, sizeof(tail));
  }
}

// Writes 32 Bits bytes; map(v) -> [0, 2^Bits) lane-wise.
template <int Bits, class Map>
PQCD_AI void PackPoly(uint8_t* out, const Poly& a, Map map) {
  PackGroups<Bits>(out, [&](int g) { return map(Load(a.coeffs + 8 * g)); });
}

#include "arch/x86_64/avx2/mldsa/decompose_avx2.inc"

// UseHint (Alg. 40) of 8 coefficients r in [0, q) with hints h in {0, 1} (as poly.cc).
template <int32_t Gamma2>
PQCD_AI __m256i UseHint8(__m256i a, __m256i hint) {
  constexpr int32_t kM = (kQ - 1) / (2 * Gamma2);
  const __m256i zero = _mm256_setzero_si256();
  const __m256i m = _mm256_set1_epi32(kM);
  __m256i hi, lo;
  Decompose8<Gamma2>(a, hi, lo);
  const __m256i positive = _mm256_cmpgt_epi32(lo, zero);
  const __m256i delta = _mm256_blendv_epi8(_mm256_sub_epi32(zero, hint), hint, positive);
  __m256i v = _mm256_add_epi32(hi, delta);
  v = _mm256_add_epi32(v, _mm256_and_si256(_mm256_srai_epi32(v, 31), m));
  v = _mm256_sub_epi32(
      v,
      _mm256_and_si256(_mm256_srai_epi32(_mm256_sub_epi32(_mm256_set1_epi32(kM - 1), v), 31), m));
  return v;
}

// CAddQ, Decompose, w1Encode in one pass (the signer's w; secret until acceptance).
template <int32_t Gamma2>
PQCD_AI void DecomposePackW1T(uint8_t* out, Poly& r1, Poly& r0, const Poly& r) {
  constexpr int kBits = Gamma2 == (kQ - 1) / 88 ? 6 : 4;
  const __m256i q = _mm256_set1_epi32(kQ);
  PackGroups<kBits>(out, [&](int g) {
    __m256i x = Load(r.coeffs + 8 * g);
    x = _mm256_add_epi32(x, _mm256_and_si256(_mm256_srai_epi32(x, 31), q));  // [0, q)
    __m256i hi, lo;
    Decompose8<Gamma2>(x, hi, lo);
    _mm256_store_si256(reinterpret_cast<__m256i*>(r1.coeffs + 8 * g), hi);
    _mm256_store_si256(reinterpret_cast<__m256i*>(r0.coeffs + 8 * g), lo);
    return hi;
  });
}

template <int32_t Gamma2>
PQCD_AI void UseHintPackW1T(uint8_t* out, const Poly& r, const Poly& h) {
  constexpr int kBits = Gamma2 == (kQ - 1) / 88 ? 6 : 4;
  const __m256i q = _mm256_set1_epi32(kQ);
  PackGroups<kBits>(out, [&](int g) {
    __m256i x = Load(r.coeffs + 8 * g);
    x = _mm256_add_epi32(x, _mm256_and_si256(_mm256_srai_epi32(x, 31), q));  // [0, q)
    return UseHint8<Gamma2>(x, Load(h.coeffs + 8 * g));
  });
}

// Reads 32 Bits bytes; map(raw field) -> coefficient.
template <int Bits, class Map>
PQCD_AI void UnpackPoly(Poly& a, const uint8_t* in, Map map) {
  constexpr int kDirect = (32 * Bits - 16) / Bits + 1;  // 16-byte loads inside the input
  int g = 0;
  for (; g < kDirect && g < 32; ++g) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + g * Bits));
    _mm256_store_si256(reinterpret_cast<__m256i*>(a.coeffs + 8 * g), map(Unpack8<Bits>(w)));
  }
  if (g < 32) {
    alignas(16) uint8_t tail[6 * 16 + 16] = {};
    const int first = g;
    const int n = (32 - first) * Bits;
    for (int i = 0; i < n; ++i) tail[i] = in[first * Bits + i];
    for (; g < 32; ++g) {
      const __m128i w =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(tail + (g - first) * Bits));
      _mm256_store_si256(reinterpret_cast<__m256i*>(a.coeffs + 8 * g), map(Unpack8<Bits>(w)));
    }
    SecureZero(tail, sizeof(tail));
  }
}

template <int Eta>
uint32_t UnpackEtaT(Poly& s, const uint8_t* in) {
  constexpr int kBits = Eta == 2 ? 3 : 4;
  const __m256i eta = _mm256_set1_epi32(Eta);
  const __m256i limit = _mm256_set1_epi32(2 * Eta);
  __m256i bad = _mm256_setzero_si256();
  UnpackPoly<kBits>(s, in, [&](__m256i v) {
    bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(v, limit));
    return _mm256_sub_epi32(eta, v);
  });
  const uint32_t bits = static_cast<uint32_t>(_mm256_movemask_epi8(bad));
  return 0u - ((bits | (0u - bits)) >> 31);
}

}  // namespace

void PackT1(uint8_t* out, const Poly& t1) {
  PackPoly<10>(out, t1, [](__m256i v) { return v; });
}
void PackT0(uint8_t* out, const Poly& t0) {
  const __m256i h = _mm256_set1_epi32(1 << 12);
  PackPoly<13>(out, t0, [h](__m256i v) { return _mm256_sub_epi32(h, v); });
}
void UnpackT0(Poly& t0, const uint8_t* in) {
  const __m256i h = _mm256_set1_epi32(1 << 12);
  UnpackPoly<13>(t0, in, [h](__m256i v) { return _mm256_sub_epi32(h, v); });
}
void PackEta2(uint8_t* out, const Poly& s) {
  const __m256i eta = _mm256_set1_epi32(2);
  PackPoly<3>(out, s, [eta](__m256i v) { return _mm256_sub_epi32(eta, v); });
}
void PackEta4(uint8_t* out, const Poly& s) {
  const __m256i eta = _mm256_set1_epi32(4);
  PackPoly<4>(out, s, [eta](__m256i v) { return _mm256_sub_epi32(eta, v); });
}
uint32_t UnpackEta2(Poly& s, const uint8_t* in) {
  return UnpackEtaT<2>(s, in);
}
uint32_t UnpackEta4(Poly& s, const uint8_t* in) {
  return UnpackEtaT<4>(s, in);
}
void DecomposePackW1Small(uint8_t* out, Poly& r1, Poly& r0, const Poly& r) {
  DecomposePackW1T<(kQ - 1) / 88>(out, r1, r0, r);
}
void DecomposePackW1Large(uint8_t* out, Poly& r1, Poly& r0, const Poly& r) {
  DecomposePackW1T<(kQ - 1) / 32>(out, r1, r0, r);
}
void UseHintPackW1Small(uint8_t* out, const Poly& r, const Poly& h) {
  UseHintPackW1T<(kQ - 1) / 88>(out, r, h);
}
void UseHintPackW1Large(uint8_t* out, const Poly& r, const Poly& h) {
  UseHintPackW1T<(kQ - 1) / 32>(out, r, h);
}

// t = r + s mod q (Reduce32 then CAddQ: [0, q)), Power2Round, t1 packed, t0 stored (may alias r).
void Power2RoundPackT1(uint8_t* t1_out, Poly& t0, const Poly& r, const Poly& s) {
  const __m256i q = _mm256_set1_epi32(kQ);
  const __m256i half = _mm256_set1_epi32(1 << 22);
  const __m256i bias = _mm256_set1_epi32((1 << (kD - 1)) - 1);
  PackGroups<10>(t1_out, [&](int g) {
    __m256i x = _mm256_add_epi32(Load(r.coeffs + 8 * g), Load(s.coeffs + 8 * g));
    x = _mm256_sub_epi32(x,
                         _mm256_mullo_epi32(_mm256_srai_epi32(_mm256_add_epi32(x, half), 23), q));
    x = _mm256_add_epi32(x, _mm256_and_si256(_mm256_srai_epi32(x, 31), q));
    const __m256i hi = _mm256_srai_epi32(_mm256_add_epi32(x, bias), kD);
    _mm256_store_si256(reinterpret_cast<__m256i*>(t0.coeffs + 8 * g),
                       _mm256_sub_epi32(x, _mm256_slli_epi32(hi, kD)));
    return hi;
  });
}

void PackW1Small(uint8_t* out, const Poly& w1) {  // 6 bits
  PackPoly<6>(out, w1, [](__m256i v) { return v; });
}
void PackW1Large(uint8_t* out, const Poly& w1) {  // 4 bits
  PackPoly<4>(out, w1, [](__m256i v) { return v; });
}

// BitPack(z, gamma1 - 1, gamma1) for gamma1 = 2^19 (20-bit fields): 8 coefficients -> 20 bytes.
// Each 64-bit lane takes a pair (f_2j | f_2j+1 << 20: 5 whole bytes), one vpshufb packs each
// 128-bit half's two pairs into its first 10 bytes, and the halves are stored 10 bytes apart
// (16-byte stores; the next group overwrites the spare bytes). The last group goes through a
// stack buffer so that nothing is written past out[639]; z is public when it is packed (the
// accepted signature), so the buffer is not wiped.
void PackZ19(uint8_t* out, const Poly& z) {
  const __m256i g = _mm256_set1_epi32(1 << 19);
  const __m256i lo_mask = _mm256_set1_epi64x(0xFFFFFFFF);
  const __m128i ctrl = _mm_setr_epi8(0, 1, 2, 3, 4, 8, 9, 10, 11, 12, -1, -1, -1, -1, -1, -1);
  const __m256i shuffle = _mm256_broadcastsi128_si256(ctrl);
  auto group = [&](int i, __m128i& lo, __m128i& hi) {
    const __m256i v =
        _mm256_sub_epi32(g, _mm256_load_si256(reinterpret_cast<const __m256i*>(z.coeffs + 8 * i)));
    const __m256i pairs = _mm256_or_si256(_mm256_and_si256(v, lo_mask),
                                          _mm256_srli_epi64(_mm256_andnot_si256(lo_mask, v), 12));
    const __m256i packed = _mm256_shuffle_epi8(pairs, shuffle);
    lo = _mm256_castsi256_si128(packed);
    hi = _mm256_extracti128_si256(packed, 1);
  };
  for (int i = 0; i < 31; ++i) {
    __m128i lo, hi;
    group(i, lo, hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 20 * i), lo);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 20 * i + 10), hi);
  }
  __m128i lo, hi;
  group(31, lo, hi);
  alignas(16) uint8_t tail[32];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(tail), lo);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(tail + 10), hi);
  for (int b = 0; b < 20; ++b) out[620 + b] = tail[b];
}

}  // namespace pqcd::kernels::mldsa::avx2
