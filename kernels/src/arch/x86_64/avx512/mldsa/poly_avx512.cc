// AVX-512 ML-DSA polynomial kernels (compiled with the avx512 flags only; see mldsa_avx512.h).
//
// Every kernel computes exactly what its portable namesake in poly.cc / sample.cc computes, lane
// by lane:
//  * Montgomery products use vpmuldq (signed 32x32 -> 64) on even and odd lanes and the same
//    signed reduction t = (a q^-1 mod 2^32), r = (a - t q) / 2^32, so representatives match. t
//    comes from vpmuldq too (its low 32 bits; vpmulld is slow on 512-bit registers), and one
//    masked vpshufd puts the high halves of the even and odd products together.
//  * The NTT keeps the whole polynomial in 16 ZMM registers (one pass over memory each way) and
//    the standard (bit-reversed, FIPS 204) coefficient order: layers len 128 .. 16 pair whole
//    registers (broadcast twiddles); then per pair of registers (32 coefficients) the layers
//    len 8, 4, 2, 1 run on regroupings at 256-, 128-, 64- and 32-bit granularity (vshufi64x2,
//    masked vshufi64x2, vpunpck*qdq, masked vpshufd), each an involution, with per-lane twiddle
//    vectors; two vpermt2d restore the standard order. The inverse runs the same steps backwards.
//  * Rounding, hints and norm checks compare into mask registers and use masked moves / adds;
//    divisions by constants are the same multiply-shift sequences as poly.cc.
//  * Bit packing narrows with vpmovdb / vpmovdw and joins fields with vpmaddubsw / vpmaddwd;
//    unpacking spreads each field's bytes with vpermd + vpshufb. Stores and loads never pass the
//    encoding (masked where a full register would).
//  * Sampling compacts accepted lanes with vpcompressd (in a register) under a public mask.
// No secret-dependent branch, index or division. Helpers are static / anonymous-namespace only:
// nothing here may be shared with baseline files.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "arch/x86_64/avx512/mldsa/mldsa_avx512.h"
#include "mldsa/backend.h"
#include "mldsa/ntt_constants.h"
#include "pqcd/kernels/common.h"

// GCC 12 reports _mm512_undefined_epi32() inside its own shift, shuffle and unpack intrinsics as
// uninitialized (a false positive in its own header).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pqcd::kernels::mldsa::avx512 {
namespace {

using ntt::kInvNttScale;
using ntt::kQInv;

// ---- Tables, computed at compile time -----------------------------------------------------------

constexpr int32_t LowTimesQInv(int32_t z) {
  return static_cast<int32_t>(static_cast<uint32_t>(z) * static_cast<uint32_t>(kQInv));
}

// The in-register layers s = 0, 1, 2, 3 (len 8, 4, 2, 1) of a pair of registers holding the 32
// coefficients 32 j .. 32 j + 31: lane l of the first register X holds coefficient 32 j + Top(s, l)
// and lane l of the second register Y its butterfly partner (+ len). With b = l / 4, i = l % 4:
//  s 0: X = c0-7 | c16-23                     (after Swap8 of the standard pair)
//  s 1: X = c0-3 | c8-11 | c16-19 | c24-27     (Swap4)
//  s 2: X = c0 c1 c4 c5 | c8 c9 c12 c13 | ..   (Swap2)
//  s 3: X = c0 c2 c4 c6 | c8 .. c14 | c16 ..   (Swap1): the even coefficients, Y the odd ones
constexpr int Top(int s, int l) {
  const int b = l / 4, i = l % 4;
  switch (s) {
    case 0:
      return (l / 8) * 16 + l % 8;
    case 1:
      return 8 * b + i;
    case 2:
      return 8 * b + (i / 2) * 4 + i % 2;
    default:
      return 8 * b + 2 * i;
  }
}

struct Tables {
  int32_t zetas[kN];                          // zeta^brv8(i) * 2^32 mod q, centered (as poly.cc)
  int32_t zetas_qinv[kN];                     // low 32 bits of zetas[i] * q^-1
  int32_t neg_zetas[kN], neg_zetas_qinv[kN];  // the inverse NTT's twiddles -zetas[i]
  // Per-lane twiddles of the in-register layers, [layer s][register pair j][lane]: value and
  // value * q^-1. Layers len 8, 4, 2 give both lanes of each 64-bit pair the same twiddle; len 1
  // does not, and *_odd / *_qinv_odd hold its odd lanes copied to the even positions (what
  // vpmuldq reads).
  int32_t fwd[4][8][16], fwd_qinv[4][8][16], fwd_odd[8][16], fwd_qinv_odd[8][16];
  int32_t inv[4][8][16], inv_qinv[4][8][16], inv_odd[8][16], inv_qinv_odd[8][16];
  // vpermt2d indices between the standard pair (A = c0-15, B = c16-31) and layer len 1 (X, Y).
  int32_t to_a[16], to_b[16], to_x[16], to_y[16];
};

constexpr Tables MakeTables() {
  Tables t{};
  constexpr std::array<int32_t, kN> zetas = ntt::Zetas();  // mldsa/ntt_constants.h
  for (uint32_t i = 0; i < kN; ++i) {
    t.zetas[i] = zetas[i];
    t.zetas_qinv[i] = LowTimesQInv(t.zetas[i]);
    t.neg_zetas[i] = -t.zetas[i];
    t.neg_zetas_qinv[i] = LowTimesQInv(-t.zetas[i]);
  }
  for (int s = 0; s < 4; ++s) {
    const int len = 8 >> s;
    for (int j = 0; j < 8; ++j) {
      for (int l = 0; l < 16; ++l) {
        const int start = (32 * j + Top(s, l)) / (2 * len);  // butterfly group within the layer
        const int fk = kN / (2 * len) + start;               // as poly.cc's ++k
        const int ik = kN / len - 1 - start;                 // as poly.cc's --k
        t.fwd[s][j][l] = t.zetas[fk];
        t.fwd_qinv[s][j][l] = t.zetas_qinv[fk];
        t.inv[s][j][l] = t.neg_zetas[ik];
        t.inv_qinv[s][j][l] = t.neg_zetas_qinv[ik];
      }
    }
  }
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 16; ++l) {
      t.fwd_odd[j][l] = t.fwd[3][j][l | 1];
      t.inv_odd[j][l] = t.inv[3][j][l | 1];
      t.fwd_qinv_odd[j][l] = t.fwd_qinv[3][j][l | 1];
      t.inv_qinv_odd[j][l] = t.inv_qinv[3][j][l | 1];
    }
  }
  for (int l = 0; l < 16; ++l) {
    // Standard lane c of A / B (coefficient c, 16 + c) from X (even coefficients, index c / 2) or
    // Y (odd ones, index 16 + c / 2); and back.
    t.to_a[l] = (l % 2) * 16 + l / 2;
    t.to_b[l] = (l % 2) * 16 + 8 + l / 2;
    t.to_x[l] = 2 * l;
    t.to_y[l] = 2 * l + 1;
  }
  return t;
}

alignas(64) constexpr Tables kT = MakeTables();
static_assert(kT.zetas[1] == 25847 && kT.zetas[255] == 1976782, "zeta table (FIPS 204 App. B)");

// ---- Vector helpers -----------------------------------------------------------------------------

#define PQCD_AI static inline __attribute__((always_inline))

using V = __m512i;

PQCD_AI V Load(const int32_t* p) {
  return _mm512_load_si512(p);
}
PQCD_AI void Store(int32_t* p, V v) {
  _mm512_store_si512(p, v);
}
PQCD_AI V Odd(V v) {  // odd 32-bit lanes moved to the even positions (what vpmuldq reads)
  return _mm512_srli_epi64(v, 32);
}

// Combines the high halves of the 64-bit lanes of re (even results) and ro (odd results).
PQCD_AI V HighHalves(V re, V ro) {
  return _mm512_mask_shuffle_epi32(ro, 0x5555, re, static_cast<_MM_PERM_ENUM>(0xF5));
}

// a * z * 2^-32 mod q, lane-wise; zq = low32(z * q^-1), zodd = Odd(z), zqodd = Odd(zq) (the
// 4-argument form: both lanes of each 64-bit pair hold the same twiddle, so zq serves for both).
// |a z| < 2^31 q -> |r| < q.
PQCD_AI V MulMont(V a, V z, V zodd, V zq, V zqodd) {
  const V q = _mm512_set1_epi32(kQ);
  const V ao = Odd(a);
  const V pe = _mm512_mul_epi32(a, z);
  const V po = _mm512_mul_epi32(ao, zodd);
  const V te = _mm512_mul_epi32(_mm512_mul_epi32(a, zq), q);
  const V to = _mm512_mul_epi32(_mm512_mul_epi32(ao, zqodd), q);
  return HighHalves(_mm512_sub_epi64(pe, te), _mm512_sub_epi64(po, to));
}
PQCD_AI V MulMont(V a, V z, V zodd, V zq) {
  return MulMont(a, z, zodd, zq, zq);
}

// Montgomery reduction of 64-bit accumulators (even lanes in pe, odd lanes in po): vpmuldq keeps
// the low 32 bits of each product, so t = low32(p) q^-1 needs no vpmulld.
PQCD_AI V Reduce64(V pe, V po) {
  const V q = _mm512_set1_epi32(kQ);
  const V qinv = _mm512_set1_epi32(kQInv);
  const V te = _mm512_mul_epi32(_mm512_mul_epi32(pe, qinv), q);
  const V to = _mm512_mul_epi32(_mm512_mul_epi32(po, qinv), q);
  return HighHalves(_mm512_sub_epi64(pe, te), _mm512_sub_epi64(po, to));
}

// A broadcast twiddle: value and value * q^-1 (Odd() of a broadcast is itself).
struct Tw {
  V z, zq;
};
PQCD_AI Tw Fwd(int k) {
  return {_mm512_set1_epi32(kT.zetas[k]), _mm512_set1_epi32(kT.zetas_qinv[k])};
}
PQCD_AI Tw Inv(int k) {
  return {_mm512_set1_epi32(kT.neg_zetas[k]), _mm512_set1_epi32(kT.neg_zetas_qinv[k])};
}
PQCD_AI V Row(const int32_t (&row)[16]) {
  return _mm512_load_si512(row);
}

// Forward (Cooley-Tukey) butterfly: (a, b) -> (a + z b, a - z b).
PQCD_AI void ButterflyCt(V& a, V& b, V z, V zodd, V zq, V zqodd) {
  const V t = MulMont(b, z, zodd, zq, zqodd);
  b = _mm512_sub_epi32(a, t);
  a = _mm512_add_epi32(a, t);
}
PQCD_AI void ButterflyCt(V& a, V& b, V z, V zodd, V zq) {
  const V t = MulMont(b, z, zodd, zq);
  b = _mm512_sub_epi32(a, t);
  a = _mm512_add_epi32(a, t);
}
PQCD_AI void ButterflyCt(V& a, V& b, Tw w) {
  ButterflyCt(a, b, w.z, w.z, w.zq);
}
// Inverse (Gentleman-Sande) butterfly: (a, b) -> (a + b, z (a - b)).
PQCD_AI void ButterflyGs(V& a, V& b, V z, V zodd, V zq, V zqodd) {
  const V d = _mm512_sub_epi32(a, b);
  a = _mm512_add_epi32(a, b);
  b = MulMont(d, z, zodd, zq, zqodd);
}
PQCD_AI void ButterflyGs(V& a, V& b, V z, V zodd, V zq) {
  const V d = _mm512_sub_epi32(a, b);
  a = _mm512_add_epi32(a, b);
  b = MulMont(d, z, zodd, zq);
}
PQCD_AI void ButterflyGs(V& a, V& b, Tw w) {
  ButterflyGs(a, b, w.z, w.z, w.zq);
}

// Regroupings of a register pair (x, y) at granularity g (32-bit lanes): within each block of 2g
// lanes, x becomes (x's first g, y's first g) and y (x's second g, y's second g). Each is its own
// inverse.
PQCD_AI void Swap8(V& x, V& y) {
  const V a = _mm512_shuffle_i64x2(x, y, 0x44);
  y = _mm512_shuffle_i64x2(x, y, 0xEE);
  x = a;
}
PQCD_AI void Swap4(V& x, V& y) {
  const V a = _mm512_mask_shuffle_i64x2(x, 0xCC, y, y, 0x80);
  y = _mm512_mask_shuffle_i64x2(y, 0x33, x, x, 0x31);
  x = a;
}
PQCD_AI void Swap2(V& x, V& y) {
  const V a = _mm512_unpacklo_epi64(x, y);
  y = _mm512_unpackhi_epi64(x, y);
  x = a;
}
PQCD_AI void Swap1(V& x, V& y) {
  const V a = _mm512_mask_shuffle_epi32(x, 0xAAAA, y, static_cast<_MM_PERM_ENUM>(0xA0));
  y = _mm512_mask_shuffle_epi32(y, 0x5555, x, static_cast<_MM_PERM_ENUM>(0xF5));
  x = a;
}

// x - round(x / 2^23) q (poly.cc's Reduce32Coeff) with q = 2^23 - 2^13 + 1 as shifts: the same
// value mod 2^32 as the multiplication (vpmulld is slow on 512-bit registers).
PQCD_AI V Reduce32x16(V x) {
  const V t = _mm512_srai_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(1 << 22)), 23);
  const V tq =
      _mm512_add_epi32(_mm512_sub_epi32(_mm512_slli_epi32(t, 23), _mm512_slli_epi32(t, 13)), t);
  return _mm512_sub_epi32(x, tq);
}

// SplitLow9's low part: ((x + 256) & 511) - 256 in [-256, 256).
PQCD_AI V Low9(V x) {
  const V off = _mm512_set1_epi32(256);
  return _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(x, off), _mm512_set1_epi32(511)), off);
}

PQCD_AI V CAddQ16(V x) {
  return _mm512_mask_add_epi32(x, _mm512_movepi32_mask(x), x, _mm512_set1_epi32(kQ));
}

// floor(x / D) for 0 <= x < 2^24 via ceil(2^48 / D) (as poly.cc's DivFloor24).
template <uint32_t D>
PQCD_AI V DivFloor24(V x) {
  constexpr uint64_t kM = ((uint64_t{1} << 48) + D - 1) / D;
  static_assert(kM < (uint64_t{1} << 32));
  const V m = _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(kM)));
  const V pe = _mm512_mul_epu32(x, m);
  const V po = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);
  return _mm512_mask_mov_epi32(_mm512_srli_epi64(pe, 48), 0xAAAA, _mm512_srli_epi64(po, 16));
}

// (hi, lo) = Decompose(a) for 16 coefficients a in [0, q) (as poly.cc), without division.
// alpha = 2 gamma2 = 512 c with c = 372 or 1023, and hi <= 44 or 16: hi alpha = (hi c) 2^9 with
// hi c < 2^16, one vpmullw.
template <int32_t Gamma2>
PQCD_AI void Decompose16(V a, V& hi, V& lo) {
  constexpr int32_t kAlpha = 2 * Gamma2;
  constexpr int32_t kM = (kQ - 1) / kAlpha;
  static_assert(kAlpha % 512 == 0 && kM * (kAlpha / 512) < (1 << 16));
  hi = DivFloor24<kAlpha>(_mm512_add_epi32(a, _mm512_set1_epi32(Gamma2 - 1)));
  const V prod = _mm512_slli_epi32(_mm512_mullo_epi16(hi, _mm512_set1_epi32(kAlpha / 512)), 9);
  lo = _mm512_sub_epi32(a, prod);
  // Corner case hi = m: hi = 0, lo - 1.
  const __mmask16 corner = _mm512_cmpeq_epi32_mask(hi, _mm512_set1_epi32(kM));
  hi = _mm512_mask_mov_epi32(hi, corner, _mm512_setzero_si512());
  lo = _mm512_mask_sub_epi32(lo, corner, lo, _mm512_set1_epi32(1));
}

// UseHint (Alg. 40) of 16 coefficients r in [0, q) with hints h in {0, 1} (as poly.cc).
template <int32_t Gamma2>
PQCD_AI V UseHint16(V a, V h) {
  constexpr int32_t kM = (kQ - 1) / (2 * Gamma2);
  const V m = _mm512_set1_epi32(kM);
  V hi, lo;
  Decompose16<Gamma2>(a, hi, lo);
  const __mmask16 positive = _mm512_cmpgt_epi32_mask(lo, _mm512_setzero_si512());
  V v = _mm512_mask_sub_epi32(_mm512_add_epi32(hi, h), static_cast<__mmask16>(~positive), hi, h);
  v = _mm512_mask_add_epi32(v, _mm512_movepi32_mask(v), v, m);
  return _mm512_mask_sub_epi32(v, _mm512_cmpgt_epi32_mask(v, _mm512_set1_epi32(kM - 1)), v, m);
}

// Bit packing of 16 coefficients in [0, 2^Bits), Bits = 3, 4 or 6 (FIPS 204 Alg. 16): exactly
// 2 Bits bytes at out. The bytes (vpmovdb) are paired into 2 Bits-bit words (vpmaddubsw), the
// words into 4 Bits-bit dwords (vpmaddwd); 4 bits: vpackuswb; 6 bits: vpshufb of the 3 low bytes
// of each dword; 3 bits: the dwords paired into 24-bit qwords first.
template <int Bits>
PQCD_AI void Pack16(uint8_t* out, V v) {
  static_assert(Bits == 3 || Bits == 4 || Bits == 6);
  const __m128i b = _mm512_cvtepi32_epi8(v);
  const __m128i w =
      _mm_maddubs_epi16(b, _mm_set1_epi16(static_cast<int16_t>(1 | (1 << Bits) << 8)));
  if constexpr (Bits == 4) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(w, w));
  } else {
    const __m128i d = _mm_madd_epi16(w, _mm_set1_epi32(1 | (1 << (2 * Bits)) << 16));
    if constexpr (Bits == 6) {
      const __m128i packed = _mm_shuffle_epi8(
          d, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
      _mm_mask_storeu_epi8(out, 0x0FFF, packed);
    } else {
      // 12-bit dwords: d0 | d1 << 12 in the low 24 bits of each qword.
      const __m128i e = _mm_or_si128(d, _mm_srli_epi64(d, 20));
      const __m128i packed = _mm_shuffle_epi8(
          e, _mm_setr_epi8(0, 1, 2, 8, 9, 10, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
      _mm_mask_storeu_epi8(out, 0x003F, packed);
    }
  }
}

// 16 coefficients in [0, 2^10) -> exactly 20 bytes at out: words (vpmovdw), 20-bit dwords
// (vpmaddwd), 40-bit qwords (d0 | d1 << 20: one vpternlogq bit select), 10 bytes per 128 bits.
PQCD_AI void Pack10x16(uint8_t* out, V v) {
  const __m256i w = _mm512_cvtepi32_epi16(v);
  const __m256i d = _mm256_madd_epi16(w, _mm256_set1_epi32(1 | (1 << 10) << 16));
  const __m256i e =
      _mm256_ternarylogic_epi64(_mm256_srli_epi64(d, 12), d, _mm256_set1_epi64x(0xFFFFF), 0xD8);
  const __m256i packed =
      _mm256_shuffle_epi8(e, _mm256_broadcastsi128_si256(_mm_setr_epi8(
                                 0, 1, 2, 3, 4, 8, 9, 10, 11, 12, -1, -1, -1, -1, -1, -1)));
  _mm_mask_storeu_epi8(out, 0x03FF, _mm256_castsi256_si128(packed));
  _mm_mask_storeu_epi8(out + 10, 0x03FF, _mm256_extracti128_si256(packed, 1));
}

// Each 64-bit lane: d0 | d1 << W from its two 32-bit fields d0, d1 < 2^W (one vpternlogq bit
// select of the lane and the lane shifted right by 32 - W).
template <int W>
PQCD_AI V PairFields(V v) {
  return _mm512_ternarylogic_epi64(_mm512_srli_epi64(v, 32 - W), v,
                                   _mm512_set1_epi64((int64_t{1} << W) - 1), 0xD8);
}
template <int W>
PQCD_AI __m256i PairFields(__m256i v) {
  return _mm256_ternarylogic_epi64(_mm256_srli_epi64(v, 32 - W), v,
                                   _mm256_set1_epi64x((int64_t{1} << W) - 1), 0xD8);
}
// Each 128-bit lane: e0 | e1 << P (2P bits) from its two 64-bit lanes e0, e1 < 2^P.
template <int P>
PQCD_AI V JoinLanes(V e) {
  const V low = _mm512_or_si512(e, _mm512_bsrli_epi128(_mm512_slli_epi64(e, P), 8));
  return _mm512_mask_blend_epi64(0xAA, low, _mm512_srli_epi64(e, 64 - P));
}
template <int P>
PQCD_AI __m256i JoinLanes(__m256i e) {
  const __m256i low = _mm256_or_si256(e, _mm256_bsrli_epi128(_mm256_slli_epi64(e, P), 8));
  return _mm256_mask_blend_epi64(0xA, low, _mm256_srli_epi64(e, 64 - P));
}

// 16 coefficients in [0, 2^13) -> exactly 26 bytes at out: words (vpmovdw), 26-bit dwords
// (vpmaddwd), 52-bit qwords, 104 bits (13 bytes) per 128-bit lane.
PQCD_AI void Pack13x16(uint8_t* out, V v) {
  const __m256i w = _mm512_cvtepi32_epi16(v);
  const __m256i d = _mm256_madd_epi16(w, _mm256_set1_epi32(1 | (1 << 13) << 16));
  const __m256i j = JoinLanes<52>(PairFields<26>(d));
  _mm_mask_storeu_epi8(out, 0x1FFF, _mm256_castsi256_si128(j));
  _mm_mask_storeu_epi8(out + 13, 0x1FFF, _mm256_extracti128_si256(j, 1));
}

// 16 coefficients in [0, 2^Bits), Bits = 18 or 20 -> exactly 2 Bits bytes at out: 2 Bits-bit
// qwords, 4 Bits bits (Bits / 2 bytes) per 128-bit lane.
template <int Bits>
PQCD_AI void PackZ16(uint8_t* out, V v) {
  static_assert(Bits == 18 || Bits == 20);
  constexpr int kLane = Bits / 2;  // bytes per 128-bit lane
  constexpr __mmask16 kMask = (1u << kLane) - 1;
  const V j = JoinLanes<2 * Bits>(PairFields<Bits>(v));
  _mm_mask_storeu_epi8(out, kMask, _mm512_castsi512_si128(j));
  _mm_mask_storeu_epi8(out + kLane, kMask, _mm512_extracti32x4_epi32(j, 1));
  _mm_mask_storeu_epi8(out + 2 * kLane, kMask, _mm512_extracti32x4_epi32(j, 2));
  _mm_mask_storeu_epi8(out + 3 * kLane, kMask, _mm512_extracti32x4_epi32(j, 3));
}

// Bit unpacking of 16 Bits-bit fields (3 <= Bits <= 20) from the 2 Bits bytes at in: 128-bit
// lane k holds fields 4k .. 4k + 3, which start at bit 4k Bits; vpermd gives the lane the dwords
// around that bit, vpshufb each field the 4 bytes holding it, vpsrlvd its bit offset. Reads 64
// bytes where `full`, else exactly the 2 Bits bytes (masked load).
template <int Bits>
struct alignas(64) UnpackPlan {
  int32_t dwords[16];
  int8_t bytes[64];
  int32_t shifts[16];
  bool ok;
};
template <int Bits>
constexpr UnpackPlan<Bits> MakeUnpackPlan() {
  UnpackPlan<Bits> p{};
  p.ok = Bits >= 3 && Bits <= 20;
  for (int k = 0; k < 4; ++k) {
    const int start = 4 * k * Bits;  // first bit of the lane
    const int dword = start / 32;
    for (int j = 0; j < 4; ++j) {
      p.dwords[4 * k + j] = dword + j;
      const int bit = start - 32 * dword + j * Bits;  // within the lane's 16 bytes
      for (int b = 0; b < 4; ++b) p.bytes[16 * k + 4 * j + b] = static_cast<int8_t>(bit / 8 + b);
      p.shifts[4 * k + j] = bit % 8;
      if (bit / 8 + 3 >= 16 || bit % 8 + Bits > 32) p.ok = false;
    }
  }
  return p;
}
template <int Bits>
alignas(64) constexpr UnpackPlan<Bits> kUnpackPlan = MakeUnpackPlan<Bits>();

template <int Bits>
PQCD_AI V Unpack16(const uint8_t* in, bool full) {
  constexpr const UnpackPlan<Bits>& p = kUnpackPlan<Bits>;
  static_assert(p.ok, "unpacking layout does not fit");
  const V raw =
      full ? _mm512_loadu_si512(in) : _mm512_maskz_loadu_epi8((uint64_t{1} << (2 * Bits)) - 1, in);
  V v = _mm512_permutexvar_epi32(_mm512_load_si512(p.dwords), raw);
  v = _mm512_shuffle_epi8(v, _mm512_load_si512(p.bytes));
  v = _mm512_srlv_epi32(v, _mm512_load_si512(p.shifts));
  return _mm512_and_si512(v, _mm512_set1_epi32((1 << Bits) - 1));
}

// Unpacks a whole polynomial: map(raw fields) -> coefficients.
template <int Bits, class Map>
PQCD_AI void UnpackPoly(Poly& a, const uint8_t* in, Map map) {
  for (int g = 0; g < 16; ++g) {
    const bool full = 2 * Bits * g + 64 <= 32 * Bits;  // the 64-byte load stays inside
    Store(a.coeffs + 16 * g, map(Unpack16<Bits>(in + 2 * Bits * g, full)));
  }
}

// CAddQ, Decompose, w1Encode in one pass (the signer's w; secret until acceptance).
template <int32_t Gamma2>
PQCD_AI void DecomposePackW1T(uint8_t* out, Poly& r1, Poly& r0, const Poly& r) {
  constexpr int kBits = Gamma2 == (kQ - 1) / 88 ? 6 : 4;
  for (int i = 0; i < kN; i += 16) {
    V hi, lo;
    Decompose16<Gamma2>(CAddQ16(Load(r.coeffs + i)), hi, lo);
    Store(r1.coeffs + i, hi);
    Store(r0.coeffs + i, lo);
    Pack16<kBits>(out + i * kBits / 8, hi);
  }
}

// CAddQ, UseHint, w1Encode in one pass (the verifier's w1'; public).
template <int32_t Gamma2>
PQCD_AI void UseHintPackW1T(uint8_t* out, const Poly& r, const Poly& h) {
  constexpr int kBits = Gamma2 == (kQ - 1) / 88 ? 6 : 4;
  for (int i = 0; i < kN; i += 16) {
    const V w1 = UseHint16<Gamma2>(CAddQ16(Load(r.coeffs + i)), Load(h.coeffs + i));
    Pack16<kBits>(out + i * kBits / 8, w1);
  }
}

template <int32_t Gamma2>
PQCD_AI void DecomposeT(Poly& r1, Poly& r0, const Poly& r) {
  for (int i = 0; i < kN; i += 16) {
    V hi, lo;
    Decompose16<Gamma2>(Load(r.coeffs + i), hi, lo);
    Store(r1.coeffs + i, hi);
    Store(r0.coeffs + i, lo);
  }
}

template <int32_t Gamma2>
PQCD_AI void UseHintT(Poly& out, const Poly& r, const Poly& h) {
  for (int i = 0; i < kN; i += 16) {
    Store(out.coeffs + i, UseHint16<Gamma2>(Load(r.coeffs + i), Load(h.coeffs + i)));
  }
}

// h_i = (lo > gamma2) | (lo < -gamma2) | (lo = -gamma2 & a1 != 0) (as poly.cc); returns the
// number of ones (a popcount of each mask, no branch).
template <int32_t Gamma2>
PQCD_AI unsigned MakeHintT(Poly& h, const Poly& a0, const Poly& a1) {
  const V g = _mm512_set1_epi32(Gamma2);
  const V neg_g = _mm512_set1_epi32(-Gamma2);
  const V one = _mm512_set1_epi32(1);
  unsigned count = 0;
  for (int i = 0; i < kN; i += 16) {
    const V lo = Load(a0.coeffs + i);
    const __mmask16 outside = _mm512_cmpgt_epi32_mask(lo, g) | _mm512_cmplt_epi32_mask(lo, neg_g);
    const __mmask16 at_neg = _mm512_mask_cmpneq_epi32_mask(
        _mm512_cmpeq_epi32_mask(lo, neg_g), Load(a1.coeffs + i), _mm512_setzero_si512());
    const __mmask16 m = outside | at_neg;
    Store(h.coeffs + i, _mm512_maskz_mov_epi32(m, one));
    count += static_cast<unsigned>(_mm_popcnt_u32(m));
  }
  return count;
}

// 8 bytes -> their 16 half-bytes in stream order (byte i gives lanes 2i (low) and 2i + 1 (high)).
PQCD_AI __m128i HalfBytes(const uint8_t* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(15);
  return _mm_unpacklo_epi8(_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m));
}

// All-ones / zero from an "any bit set" mask, without a branch.
PQCD_AI uint32_t AnySet(uint32_t bits) {
  return 0u - ((bits | (0u - bits)) >> 31);
}
}  // namespace

// ---- NTT ----------------------------------------------------------------------------------------

void Ntt(Poly& p) {
  int32_t* a = p.coeffs;
  V v[16];
  for (int i = 0; i < 16; ++i) v[i] = Load(a + 16 * i);
  // Layers len 128, 64, 32 (k = 1 .. 7): registers 8, 4, 2 apart.
  const Tw w1 = Fwd(1);
  for (int i = 0; i < 8; ++i) ButterflyCt(v[i], v[i + 8], w1);
  const Tw w2 = Fwd(2), w3 = Fwd(3);
  for (int i = 0; i < 4; ++i) {
    ButterflyCt(v[i], v[i + 4], w2);
    ButterflyCt(v[i + 8], v[i + 12], w3);
  }
  for (int g = 0; g < 4; ++g) {
    const Tw w = Fwd(4 + g);
    ButterflyCt(v[4 * g], v[4 * g + 2], w);
    ButterflyCt(v[4 * g + 1], v[4 * g + 3], w);
  }
  // Per pair j: layer len 16 (k = 8 + j), then len 8, 4, 2, 1 within the pair.
  const V to_a = Row(kT.to_a), to_b = Row(kT.to_b);
  for (int j = 0; j < 8; ++j) {
    V x = v[2 * j], y = v[2 * j + 1];
    ButterflyCt(x, y, Fwd(8 + j));
    Swap8(x, y);
    ButterflyCt(x, y, Row(kT.fwd[0][j]), Row(kT.fwd[0][j]), Row(kT.fwd_qinv[0][j]));
    Swap4(x, y);
    ButterflyCt(x, y, Row(kT.fwd[1][j]), Row(kT.fwd[1][j]), Row(kT.fwd_qinv[1][j]));
    Swap2(x, y);
    ButterflyCt(x, y, Row(kT.fwd[2][j]), Row(kT.fwd[2][j]), Row(kT.fwd_qinv[2][j]));
    Swap1(x, y);
    ButterflyCt(x, y, Row(kT.fwd[3][j]), Row(kT.fwd_odd[j]), Row(kT.fwd_qinv[3][j]),
                Row(kT.fwd_qinv_odd[j]));
    Store(a + 32 * j, _mm512_permutex2var_epi32(x, to_a, y));
    Store(a + 32 * j + 16, _mm512_permutex2var_epi32(x, to_b, y));
  }
}

void InvNttToMont(Poly& p) {
  int32_t* a = p.coeffs;
  V v[16];
  // Per pair j: layers len 1, 2, 4, 8 within the pair (k = 255 .. 16 as in poly.cc, zetas
  // negated), then len 16 (k = 15 - j).
  const V to_x = Row(kT.to_x), to_y = Row(kT.to_y);
  for (int j = 0; j < 8; ++j) {
    const V lo = Load(a + 32 * j), hi = Load(a + 32 * j + 16);
    V x = _mm512_permutex2var_epi32(lo, to_x, hi);
    V y = _mm512_permutex2var_epi32(lo, to_y, hi);
    ButterflyGs(x, y, Row(kT.inv[3][j]), Row(kT.inv_odd[j]), Row(kT.inv_qinv[3][j]),
                Row(kT.inv_qinv_odd[j]));
    Swap1(x, y);
    ButterflyGs(x, y, Row(kT.inv[2][j]), Row(kT.inv[2][j]), Row(kT.inv_qinv[2][j]));
    Swap2(x, y);
    ButterflyGs(x, y, Row(kT.inv[1][j]), Row(kT.inv[1][j]), Row(kT.inv_qinv[1][j]));
    Swap4(x, y);
    ButterflyGs(x, y, Row(kT.inv[0][j]), Row(kT.inv[0][j]), Row(kT.inv_qinv[0][j]));
    Swap8(x, y);
    ButterflyGs(x, y, Inv(15 - j));
    v[2 * j] = x;
    v[2 * j + 1] = y;
  }
  // Layers len 32, 64, 128 (k = 7 .. 1) and the final scaling, as separate steps (poly.cc).
  for (int g = 0; g < 4; ++g) {
    const Tw w = Inv(7 - g);
    ButterflyGs(v[4 * g], v[4 * g + 2], w);
    ButterflyGs(v[4 * g + 1], v[4 * g + 3], w);
  }
  const Tw w3 = Inv(3), w2 = Inv(2);
  for (int i = 0; i < 4; ++i) {
    ButterflyGs(v[i], v[i + 4], w3);
    ButterflyGs(v[i + 8], v[i + 12], w2);
  }
  const Tw w1 = Inv(1);
  for (int i = 0; i < 8; ++i) ButterflyGs(v[i], v[i + 8], w1);
  const V s = _mm512_set1_epi32(kInvNttScale);
  const V sq = _mm512_set1_epi32(LowTimesQInv(kInvNttScale));
  for (int i = 0; i < 16; ++i) Store(a + 16 * i, MulMont(v[i], s, s, sq));
}

// ---- Pointwise products -------------------------------------------------------------------------

void PointwiseMontgomery(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; i += 16) {
    const V x = Load(a.coeffs + i), y = Load(b.coeffs + i);
    Store(c.coeffs + i, Reduce64(_mm512_mul_epi32(x, y), _mm512_mul_epi32(Odd(x), Odd(y))));
  }
}

void PointwiseAccMontgomery(Poly& c, const Poly* a, const Poly* b, int n) {
  for (int i = 0; i < kN; i += 16) {
    V x = Load(a[0].coeffs + i), y = Load(b[0].coeffs + i);
    V pe = _mm512_mul_epi32(x, y);
    V po = _mm512_mul_epi32(Odd(x), Odd(y));
    for (int j = 1; j < n; ++j) {
      x = Load(a[j].coeffs + i);
      y = Load(b[j].coeffs + i);
      pe = _mm512_add_epi64(pe, _mm512_mul_epi32(x, y));
      po = _mm512_add_epi64(po, _mm512_mul_epi32(Odd(x), Odd(y)));
    }
    Store(c.coeffs + i, Reduce64(pe, po));
  }
}

void PointwiseAccSubMontgomery(Poly& c, const Poly* a, const Poly* b, int n, const Poly& x,
                               const Poly& y) {
  for (int i = 0; i < kN; i += 16) {
    V u = Load(x.coeffs + i), v = Load(y.coeffs + i);
    V pe = _mm512_sub_epi64(_mm512_setzero_si512(), _mm512_mul_epi32(u, v));
    V po = _mm512_sub_epi64(_mm512_setzero_si512(), _mm512_mul_epi32(Odd(u), Odd(v)));
    for (int j = 0; j < n; ++j) {
      u = Load(a[j].coeffs + i);
      v = Load(b[j].coeffs + i);
      pe = _mm512_add_epi64(pe, _mm512_mul_epi32(u, v));
      po = _mm512_add_epi64(po, _mm512_mul_epi32(Odd(u), Odd(v)));
    }
    Store(c.coeffs + i, Reduce64(pe, po));
  }
}

// ---- Reductions and linear operations -----------------------------------------------------------

void Reduce32(Poly& a) {
  for (int i = 0; i < kN; i += 16) Store(a.coeffs + i, Reduce32x16(Load(a.coeffs + i)));
}

void CAddQ(Poly& a) {
  for (int i = 0; i < kN; i += 16) Store(a.coeffs + i, CAddQ16(Load(a.coeffs + i)));
}

void Add(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; i += 16) {
    Store(c.coeffs + i, _mm512_add_epi32(Load(a.coeffs + i), Load(b.coeffs + i)));
  }
}

void Sub(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; i += 16) {
    Store(c.coeffs + i, _mm512_sub_epi32(Load(a.coeffs + i), Load(b.coeffs + i)));
  }
}

void ShiftLeftD(Poly& a) {
  for (int i = 0; i < kN; i += 16) Store(a.coeffs + i, _mm512_slli_epi32(Load(a.coeffs + i), kD));
}

// ---- Rounding -----------------------------------------------------------------------------------

uint32_t SplitLow9AddNorm(Poly& lo, Poly& hi, const Poly& v, const Poly& y, int32_t bound) {
  const V limit = _mm512_set1_epi32(bound - 1);
  __mmask16 bad = 0;
  for (int i = 0; i < kN; i += 16) {
    const V x = Reduce32x16(Load(v.coeffs + i));
    const V l = Low9(x);
    Store(hi.coeffs + i, _mm512_srai_epi32(_mm512_sub_epi32(x, l), 9));
    const V z = _mm512_add_epi32(l, Load(y.coeffs + i));
    Store(lo.coeffs + i, z);
    bad |= _mm512_cmpgt_epi32_mask(_mm512_abs_epi32(z), limit);
  }
  return AnySet(bad);
}

void SplitLow9(Poly& lo, Poly& hi, const Poly& v) {
  for (int i = 0; i < kN; i += 16) {
    const V x = Load(v.coeffs + i);
    const V l = Low9(x);
    Store(hi.coeffs + i, _mm512_srai_epi32(_mm512_sub_epi32(x, l), 9));
    Store(lo.coeffs + i, l);
  }
}

void Power2Round(Poly& t1, Poly& t0, const Poly& t) {
  const V bias = _mm512_set1_epi32((1 << (kD - 1)) - 1);
  for (int i = 0; i < kN; i += 16) {
    const V x = Load(t.coeffs + i);
    const V hi = _mm512_srai_epi32(_mm512_add_epi32(x, bias), kD);
    Store(t0.coeffs + i, _mm512_sub_epi32(x, _mm512_slli_epi32(hi, kD)));
    Store(t1.coeffs + i, hi);
  }
}

void DecomposeSmall(Poly& r1, Poly& r0, const Poly& r) {
  DecomposeT<(kQ - 1) / 88>(r1, r0, r);
}
void DecomposeLarge(Poly& r1, Poly& r0, const Poly& r) {
  DecomposeT<(kQ - 1) / 32>(r1, r0, r);
}
unsigned MakeHintSmall(Poly& h, const Poly& a0, const Poly& a1) {
  return MakeHintT<(kQ - 1) / 88>(h, a0, a1);
}
unsigned MakeHintLarge(Poly& h, const Poly& a0, const Poly& a1) {
  return MakeHintT<(kQ - 1) / 32>(h, a0, a1);
}
void UseHintSmall(Poly& out, const Poly& r, const Poly& h) {
  UseHintT<(kQ - 1) / 88>(out, r, h);
}
void UseHintLarge(Poly& out, const Poly& r, const Poly& h) {
  UseHintT<(kQ - 1) / 32>(out, r, h);
}

uint32_t ExceedsNorm(const Poly& a, int32_t bound) {
  const V limit = _mm512_set1_epi32(bound - 1);
  __mmask16 bad = 0;
  for (int i = 0; i < kN; i += 16) {
    bad |= _mm512_cmpgt_epi32_mask(_mm512_abs_epi32(Load(a.coeffs + i)), limit);
  }
  return AnySet(bad);
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

// ---- Bit packing --------------------------------------------------------------------------------

void PackT1(uint8_t* out, const Poly& t1) {
  for (int i = 0; i < kN; i += 16) Pack10x16(out + i * 10 / 8, Load(t1.coeffs + i));
}
void UnpackT1(Poly& t1, const uint8_t* in) {
  UnpackPoly<10>(t1, in, [](V v) { return v; });
}
void UnpackT1Shifted(Poly& t, const uint8_t* in) {
  UnpackPoly<10>(t, in, [](V v) { return _mm512_slli_epi32(v, kD); });
}
void UnpackZ17(Poly& z, const uint8_t* in) {
  const V g = _mm512_set1_epi32(1 << 17);
  UnpackPoly<18>(z, in, [g](V v) { return _mm512_sub_epi32(g, v); });
}
void UnpackZ19(Poly& z, const uint8_t* in) {
  const V g = _mm512_set1_epi32(1 << 19);
  UnpackPoly<20>(z, in, [g](V v) { return _mm512_sub_epi32(g, v); });
}

// t = r + s mod q (Reduce32 then CAddQ: [0, q)), Power2Round, t1 packed, t0 stored (may alias r).
void Power2RoundPackT1(uint8_t* t1_out, Poly& t0, const Poly& r, const Poly& s) {
  const V bias = _mm512_set1_epi32((1 << (kD - 1)) - 1);
  for (int i = 0; i < kN; i += 16) {
    const V x = CAddQ16(Reduce32x16(_mm512_add_epi32(Load(r.coeffs + i), Load(s.coeffs + i))));
    const V hi = _mm512_srai_epi32(_mm512_add_epi32(x, bias), kD);
    Store(t0.coeffs + i, _mm512_sub_epi32(x, _mm512_slli_epi32(hi, kD)));
    Pack10x16(t1_out + i * 10 / 8, hi);
  }
}

void PackEta2(uint8_t* out, const Poly& s) {
  const V eta = _mm512_set1_epi32(2);
  for (int i = 0; i < kN; i += 16) {
    Pack16<3>(out + i * 3 / 8, _mm512_sub_epi32(eta, Load(s.coeffs + i)));
  }
}
void PackEta4(uint8_t* out, const Poly& s) {
  const V eta = _mm512_set1_epi32(4);
  for (int i = 0; i < kN; i += 16) {
    Pack16<4>(out + i * 4 / 8, _mm512_sub_epi32(eta, Load(s.coeffs + i)));
  }
}

void PackT0(uint8_t* out, const Poly& t0) {
  const V h = _mm512_set1_epi32(1 << 12);
  for (int i = 0; i < kN; i += 16)
    Pack13x16(out + i * 13 / 8, _mm512_sub_epi32(h, Load(t0.coeffs + i)));
}
void UnpackT0(Poly& t0, const uint8_t* in) {
  const V h = _mm512_set1_epi32(1 << 12);
  UnpackPoly<13>(t0, in, [h](V v) { return _mm512_sub_epi32(h, v); });
}
void PackZ17(uint8_t* out, const Poly& z) {
  const V g = _mm512_set1_epi32(1 << 17);
  for (int i = 0; i < kN; i += 16)
    PackZ16<18>(out + i * 18 / 8, _mm512_sub_epi32(g, Load(z.coeffs + i)));
}
void PackZ19(uint8_t* out, const Poly& z) {
  const V g = _mm512_set1_epi32(1 << 19);
  for (int i = 0; i < kN; i += 16)
    PackZ16<20>(out + i * 20 / 8, _mm512_sub_epi32(g, Load(z.coeffs + i)));
}

// 3-bit fields; all-ones when a field is above 4.
uint32_t UnpackEta2(Poly& s, const uint8_t* in) {
  const V eta = _mm512_set1_epi32(2);
  const V limit = _mm512_set1_epi32(4);
  __mmask16 bad = 0;
  UnpackPoly<3>(s, in, [&](V v) {
    bad |= _mm512_cmpgt_epi32_mask(v, limit);
    return _mm512_sub_epi32(eta, v);
  });
  return AnySet(bad);
}

// 4-bit fields: 16 per 8 bytes (the half-bytes in order); all-ones when a field is above 8.
uint32_t UnpackEta4(Poly& s, const uint8_t* in) {
  const V eta = _mm512_set1_epi32(4);
  const __m128i limit = _mm_set1_epi8(8);
  __mmask16 bad = 0;
  for (int i = 0; i < kN; i += 16) {
    const __m128i b = HalfBytes(in + i / 2);
    bad |= _mm_cmpgt_epi8_mask(b, limit);
    Store(s.coeffs + i, _mm512_sub_epi32(eta, _mm512_cvtepu8_epi32(b)));
  }
  return AnySet(bad);
}

void PackW1Small(uint8_t* out, const Poly& w1) {
  for (int i = 0; i < kN; i += 16) Pack16<6>(out + i * 6 / 8, Load(w1.coeffs + i));
}
void PackW1Large(uint8_t* out, const Poly& w1) {
  for (int i = 0; i < kN; i += 16) Pack16<4>(out + i * 4 / 8, Load(w1.coeffs + i));
}

// ---- Uniform rejection sampling (public rho) ----------------------------------------------------

namespace {

// 16 candidates from the 48 bytes at p (64 bytes are read): 23-bit values and their accept mask.
// vpermd gives 128-bit lane k the dwords 3k .. 3k + 3 (bytes 12k ..), vpshufb spreads its 4
// groups of 3 bytes to dwords.
PQCD_AI V Candidates(const uint8_t* p, __mmask16& accept) {
  const V spread_words = _mm512_setr_epi32(0, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9, 9, 10, 11, 12);
  const V spread_bytes =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1));
  V v = _mm512_permutexvar_epi32(spread_words, _mm512_loadu_si512(p));
  v = _mm512_and_si512(_mm512_shuffle_epi8(v, spread_bytes), _mm512_set1_epi32(0x7fffff));
  accept = _mm512_cmplt_epi32_mask(v, _mm512_set1_epi32(kQ));
  return v;
}

}  // namespace

int RejectUniform(int32_t* a, int count, const uint8_t* buf, size_t len) {
  size_t pos = 0;
  // 64 candidates (192 bytes) per step: all loads and compares before the four stores of the
  // compacted lanes (vpcompressd into a register; the stores' addresses depend on the running
  // count). The 64-byte loads stay inside buf, the stores inside a[0..256).
  while (pos + 208 <= len && count <= kN - 64) {
    V v[4];
    __mmask16 accept[4];
    for (int k = 0; k < 4; ++k) v[k] = Candidates(buf + pos + 48 * k, accept[k]);
    for (int k = 0; k < 4; ++k) {
      _mm512_storeu_si512(a + count, _mm512_maskz_compress_epi32(accept[k], v[k]));
      count += _mm_popcnt_u32(accept[k]);
    }
    pos += 192;
  }
  // 16 candidates (48 bytes) per step.
  while (pos + 64 <= len && count <= kN - 16) {
    __mmask16 accept;
    const V v = Candidates(buf + pos, accept);
    _mm512_storeu_si512(a + count, _mm512_maskz_compress_epi32(accept, v));
    count += _mm_popcnt_u32(accept);
    pos += 48;
  }
  for (; pos + 3 <= len && count < kN; pos += 3) {
    const uint32_t t = static_cast<uint32_t>(buf[pos]) | static_cast<uint32_t>(buf[pos + 1]) << 8 |
                       static_cast<uint32_t>(buf[pos + 2] & 0x7f) << 16;
    if (t < static_cast<uint32_t>(kQ)) a[count++] = static_cast<int32_t>(t);
  }
  return count;
}

// ---- Bounded rejection sampling (secret XOF output) ---------------------------------------------
//
// Each 8-byte unit gives 16 half-bytes (low half first, as the FIPS loop reads them) and a 16-bit
// accept mask (b < 15 for eta = 2, b < 9 for eta = 4); the masks of a whole chunk, which say
// nothing about the accepted values, are declassified with one CtPublic() call. Each unit's
// coefficients (one vpshufb from a 16-entry table, sign-extended to 16 dwords) are then compacted
// by vpcompressd under the public mask. A remainder of an odd length goes through a zero-padded
// unit whose mask keeps only its real half-bytes.

namespace {

// CoeffFromHalfByte's value for every b < 16 (eta - b, or 2 - b mod 5), as a vpshufb table.
template <int Eta>
constexpr int8_t CoeffOf(int b) {
  return static_cast<int8_t>(Eta == 2 ? 2 - b % 5 : 4 - b);
}
template <int Eta>
PQCD_AI __m128i Coeffs(__m128i b) {
  const __m128i table =
      _mm_setr_epi8(CoeffOf<Eta>(0), CoeffOf<Eta>(1), CoeffOf<Eta>(2), CoeffOf<Eta>(3),
                    CoeffOf<Eta>(4), CoeffOf<Eta>(5), CoeffOf<Eta>(6), CoeffOf<Eta>(7),
                    CoeffOf<Eta>(8), CoeffOf<Eta>(9), CoeffOf<Eta>(10), CoeffOf<Eta>(11),
                    CoeffOf<Eta>(12), CoeffOf<Eta>(13), CoeffOf<Eta>(14), CoeffOf<Eta>(15));
  return _mm_shuffle_epi8(table, b);
}

template <int Eta>
int RejectEtaT(int32_t* a, int count, const uint8_t* buf, size_t len) {
  static_assert(Eta == 2 || Eta == 4);
  constexpr size_t kChunkUnits = 64;  // 512 bytes per declassified pattern
  const __m128i bound = _mm_set1_epi8(Eta == 2 ? 15 : 9);
  uint16_t masks[kChunkUnits + 1];
  alignas(16) uint8_t last[8];  // the zero-padded remainder (secret bytes; wiped below)
  size_t pos = 0;
  while (pos < len && count < kN) {
    const size_t chunk = len - pos < 8 * kChunkUnits ? len - pos : 8 * kChunkUnits;
    const size_t units = chunk / 8;
    const size_t rest = chunk % 8;  // only the last chunk of an odd length has a remainder
    const uint8_t* p = buf + pos;
    const size_t n_units = units + (rest != 0 ? 1 : 0);
    if (rest != 0) {
      std::memset(last, 0, sizeof(last));
      std::memcpy(last, p + 8 * units, rest);
    }
    auto unit = [&](size_t u) { return u < units ? p + 8 * u : last; };
    for (size_t u = 0; u < n_units; ++u) {
      masks[u] = static_cast<uint16_t>(_mm_cmplt_epi8_mask(HalfBytes(unit(u)), bound));
    }
    if (rest != 0) masks[units] &= static_cast<uint16_t>((1u << (2 * rest)) - 1);
    // The accept pattern is independent of the accepted values: declassify it once.
    CtPublic(masks, n_units * sizeof(masks[0]));

    for (size_t u = 0; u < n_units && count < kN; ++u) {
      const __mmask16 m = masks[u];
      const V packed =
          _mm512_maskz_compress_epi32(m, _mm512_cvtepi8_epi32(Coeffs<Eta>(HalfBytes(unit(u)))));
      const int n = _mm_popcnt_u32(m);
      if (count <= kN - 16) {
        _mm512_storeu_si512(a + count, packed);
        count += n;
      } else {  // near the end of the polynomial: only the lanes that still fit
        const int take = n < kN - count ? n : kN - count;
        _mm512_mask_storeu_epi32(a + count, static_cast<__mmask16>((1u << take) - 1), packed);
        count += take;
      }
    }
    pos += chunk;
  }
  SecureZero(last, sizeof(last));
  return count;
}

}  // namespace

int RejectEta2(int32_t* a, int count, const uint8_t* buf, size_t len) {
  return RejectEtaT<2>(a, count, buf, len);
}
int RejectEta4(int32_t* a, int count, const uint8_t* buf, size_t len) {
  return RejectEtaT<4>(a, count, buf, len);
}

// ---- SampleInBall (secret state) ----------------------------------------------------------------
//
// The 64-slot list (positions and signs) lives in one register of 64 int8 lanes each; every step
// is two byte compares into mask registers (under the accept mask) and masked moves, no branch or
// index on the secret state. The expansion ORs each slot's sign into the lanes of 4 registers of
// 64 int8 lanes (c) that equal its position, as the portable kernel.

namespace {

struct ByteLanes {
  int8_t v[64];  // 0, 1, .., 63
};
constexpr ByteLanes MakeByteLanes() {
  ByteLanes t{};
  for (int k = 0; k < 64; ++k) t.v[k] = static_cast<int8_t>(k);
  return t;
}
alignas(64) constexpr ByteLanes kByteLanes = MakeByteLanes();

}  // namespace

void SampleInBallSteps(uint8_t* pos_io, int8_t* sgn_io, uint32_t& i_io, uint32_t first,
                       uint64_t& signs_io, const uint8_t* cand, size_t n) {
  static_assert(kBallSlots == 64);
  const V slot_idx = _mm512_load_si512(kByteLanes.v);
  V pos = _mm512_loadu_si512(pos_io);
  V sgn = _mm512_loadu_si512(sgn_io);
  uint32_t i = i_io;
  uint64_t signs = signs_io;
  for (size_t t = 0; t < n; ++t) {
    const uint32_t b = cand[t];
    // accept = i <= 255 and b <= i.
    const uint32_t a = (i - 256) >> 31 & ((b - i - 1) >> 31);
    const __mmask64 am = _cvtu64_mask64(0ull - a);
    const V bv = _mm512_set1_epi8(static_cast<char>(b));
    const V iv = _mm512_set1_epi8(static_cast<char>(i));
    const V slotv = _mm512_set1_epi8(static_cast<char>(i - first));
    const V sv = _mm512_set1_epi8(static_cast<char>(1 - 2 * static_cast<int32_t>(signs & 1)));
    // c[i] = c[b]: the entry at position b (if any) moves to i; then (b, s) into the free slot.
    const __mmask64 move = _mm512_mask_cmpeq_epi8_mask(am, pos, bv);
    const __mmask64 put = _mm512_mask_cmpeq_epi8_mask(am, slot_idx, slotv);
    pos = _mm512_mask_mov_epi8(_mm512_mask_mov_epi8(pos, move, iv), put, bv);
    sgn = _mm512_mask_mov_epi8(sgn, put, sv);
    i += a;
    signs >>= a;
  }
  _mm512_storeu_si512(pos_io, pos);
  _mm512_storeu_si512(sgn_io, sgn);
  i_io = i;
  signs_io = signs;
}

void SampleInBallExpand(Poly& c, const uint8_t* pos, const int8_t* sgn, int used) {
  const V lane = _mm512_load_si512(kByteLanes.v);
  V idx[4], out[4];
  for (int k = 0; k < 4; ++k) {
    idx[k] = _mm512_add_epi8(lane, _mm512_set1_epi8(static_cast<char>(64 * k)));
    out[k] = _mm512_setzero_si512();
  }
  for (int t = 0; t < used; ++t) {
    const V p = _mm512_set1_epi8(static_cast<char>(pos[t]));
    const V v = _mm512_set1_epi8(sgn[t]);
    for (int k = 0; k < 4; ++k) {
      out[k] = _mm512_or_si512(out[k], _mm512_maskz_mov_epi8(_mm512_cmpeq_epi8_mask(idx[k], p), v));
    }
  }
  // The lane index of vextracti32x4 must be a constant expression (clang insists).
  for (int k = 0; k < 4; ++k) {
    int32_t* dst = c.coeffs + 64 * k;
    Store(dst, _mm512_cvtepi8_epi32(_mm512_castsi512_si128(out[k])));
    Store(dst + 16, _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(out[k], 1)));
    Store(dst + 32, _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(out[k], 2)));
    Store(dst + 48, _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(out[k], 3)));
  }
}

}  // namespace pqcd::kernels::mldsa::avx512
