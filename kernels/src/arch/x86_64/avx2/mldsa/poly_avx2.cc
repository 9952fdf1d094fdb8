// AVX2 ML-DSA polynomial kernels (compiled with -mavx2 -mbmi2 -mpopcnt only; see mldsa_avx2.h).
//
// Every kernel computes exactly what its portable namesake in poly.cc computes, lane by lane:
//  * Montgomery products use vpmuldq (signed 32x32 -> 64) on even and odd lanes and the same
//    signed reduction t = (a q^-1 mod 2^32), r = (a - t q) / 2^32, so representatives match.
//  * The NTT keeps the standard (bit-reversed, FIPS 204) coefficient order and makes two passes
//    over memory: layers len 128, 64, 32 on 8 registers 32 coefficients apart, then per block of
//    64 coefficients layers len 16 and 8 across registers and len 4, 2, 1 on register pairs
//    (16 coefficients) regrouped with vperm2i128 / vpunpck / vshufps / 32-bit shift+blend and put
//    back afterwards. The inverse runs the same passes in reverse order.
//  * Divisions by constants are the same multiply-shift sequences (vpmuludq, 64-bit products).
// Helpers are static / anonymous-namespace only: nothing here may be shared with baseline files.
#include <immintrin.h>

#include <array>
#include <cstdint>

#include "arch/x86_64/avx2/mldsa/mldsa_avx2.h"
#include "mldsa/ntt_constants.h"

namespace pqcd::kernels::mldsa::avx2 {
namespace {

using ntt::kInvNttScale;
using ntt::kQInv;

// ---- Tables, computed at compile time -------------------------------------------------------

constexpr int32_t LowTimesQInv(int32_t z) {
  return static_cast<int32_t>(static_cast<uint32_t>(z) * static_cast<uint32_t>(kQInv));
}

struct Tables {
  int32_t zetas[kN];                          // zeta^brv8(i) * 2^32 mod q, centered (as poly.cc)
  int32_t zetas_qinv[kN];                     // low 32 bits of zetas[i] * q^-1
  int32_t neg_zetas[kN], neg_zetas_qinv[kN];  // the inverse NTT's twiddles -zetas[i]
  // Per-lane twiddles of the last three forward layers / first three inverse layers, for each of
  // the 16 groups of 16 coefficients: [group][lane], value and value * q^-1.
  // *_odd: the odd lanes copied to the even positions (what vpmuldq reads for the odd products).
  int32_t fwd[3][16][8], fwd_qinv[3][16][8], fwd_odd[3][16][8];
  int32_t inv[3][16][8], inv_qinv[3][16][8], inv_odd[3][16][8];
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
  for (int m = 0; m < 16; ++m) {
    for (int l = 0; l < 8; ++l) {
      // Forward (k = 128 / len + start / (2 len)); see the register layouts in Ntt().
      const int f4 = 32 + 2 * m + l / 4;
      const int f2 = 64 + 4 * m + l / 2;
      const int f1 = 128 + 8 * m + l;
      // Inverse (k = 256 / len - 1 - start / (2 len), zeta negated).
      const int i1 = 255 - 8 * m - l;
      const int i2 = 127 - 4 * m - l / 2;
      const int i4 = 63 - 2 * m - l / 4;
      const int fk[3] = {f4, f2, f1};
      const int ik[3] = {i1, i2, i4};
      for (int s = 0; s < 3; ++s) {
        t.fwd[s][m][l] = t.zetas[fk[s]];
        t.fwd_qinv[s][m][l] = LowTimesQInv(t.zetas[fk[s]]);
        t.inv[s][m][l] = -t.zetas[ik[s]];
        t.inv_qinv[s][m][l] = LowTimesQInv(-t.zetas[ik[s]]);
      }
    }
  }
  for (int s = 0; s < 3; ++s) {
    for (int m = 0; m < 16; ++m) {
      for (int l = 0; l < 8; ++l) {
        t.fwd_odd[s][m][l] = t.fwd[s][m][l | 1];
        t.inv_odd[s][m][l] = t.inv[s][m][l | 1];
      }
    }
  }
  return t;
}

alignas(64) constexpr Tables kT = MakeTables();
static_assert(kT.zetas[1] == 25847 && kT.zetas[255] == 1976782, "zeta table (FIPS 204 App. B)");

// ---- Vector helpers ---------------------------------------------------------------------------

#define PQCD_AI static inline __attribute__((always_inline))

PQCD_AI __m256i Load(const int32_t* p) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
}
PQCD_AI void Store(int32_t* p, __m256i v) {
  _mm256_store_si256(reinterpret_cast<__m256i*>(p), v);
}
PQCD_AI __m256i Odd(__m256i v) {  // odd 32-bit lanes moved to the even positions
  return _mm256_shuffle_epi32(v, 0xF5);
}

// Combines the high halves of the 64-bit lanes of re (even results) and ro (odd results).
PQCD_AI __m256i HighHalves(__m256i re, __m256i ro) {
  return _mm256_blend_epi32(Odd(re), ro, 0xAA);
}

// a * z * 2^-32 mod q, lane-wise; zq = low32(z * q^-1), zodd = Odd(z) (z itself when z is a
// broadcast). |a z| < 2^31 q -> |r| < q.
// t = low32(a zq) comes from vpmuldq of the even and odd lanes (its low 32 bits are what the next
// vpmuldq by q reads) rather than from vpmulld, which is two uops with twice the latency on
// Intel cores: the same t, the same representative.
PQCD_AI __m256i MulMont(__m256i a, __m256i z, __m256i zodd, __m256i zq) {
  const __m256i q = _mm256_set1_epi32(kQ);
  const __m256i aodd = Odd(a);
  const __m256i te = _mm256_mul_epi32(_mm256_mul_epi32(a, zq), q);
  const __m256i to = _mm256_mul_epi32(_mm256_mul_epi32(aodd, Odd(zq)), q);
  const __m256i pe = _mm256_mul_epi32(a, z);
  const __m256i po = _mm256_mul_epi32(aodd, zodd);
  return HighHalves(_mm256_sub_epi64(pe, te), _mm256_sub_epi64(po, to));
}

// Montgomery reduction of 64-bit accumulators (even lanes in pe, odd lanes in po): t = low32(p)
// q^-1 from vpmuldq as above (p's low 32 bits are all vpmuldq reads).
PQCD_AI __m256i Reduce64(__m256i pe, __m256i po) {
  const __m256i q = _mm256_set1_epi32(kQ);
  const __m256i qinv = _mm256_set1_epi32(kQInv);
  const __m256i te = _mm256_mul_epi32(_mm256_mul_epi32(pe, qinv), q);
  const __m256i to = _mm256_mul_epi32(_mm256_mul_epi32(po, qinv), q);
  return HighHalves(_mm256_sub_epi64(pe, te), _mm256_sub_epi64(po, to));
}

// A broadcast twiddle: value and value * q^-1 (Odd() of a broadcast is itself).
struct Tw {
  __m256i z, zq;
};
PQCD_AI Tw Broadcast(int32_t zeta) {
  return {_mm256_set1_epi32(zeta), _mm256_set1_epi32(LowTimesQInv(zeta))};
}
// Table twiddles (vpbroadcastd from memory): zetas[k] and -zetas[k].
PQCD_AI Tw Fwd(int k) {
  return {_mm256_set1_epi32(kT.zetas[k]), _mm256_set1_epi32(kT.zetas_qinv[k])};
}
PQCD_AI Tw Inv(int k) {
  return {_mm256_set1_epi32(kT.neg_zetas[k]), _mm256_set1_epi32(kT.neg_zetas_qinv[k])};
}

// Forward (Cooley-Tukey) butterfly: (a, b) -> (a + z b, a - z b).
PQCD_AI void ButterflyCt(__m256i& a, __m256i& b, __m256i z, __m256i zodd, __m256i zq) {
  const __m256i t = MulMont(b, z, zodd, zq);
  b = _mm256_sub_epi32(a, t);
  a = _mm256_add_epi32(a, t);
}
PQCD_AI void ButterflyCt(__m256i& a, __m256i& b, Tw w) {
  ButterflyCt(a, b, w.z, w.z, w.zq);
}
// Inverse (Gentleman-Sande) butterfly: (a, b) -> (a + b, z (a - b)).
PQCD_AI void ButterflyGs(__m256i& a, __m256i& b, __m256i z, __m256i zodd, __m256i zq) {
  const __m256i d = _mm256_sub_epi32(a, b);
  a = _mm256_add_epi32(a, b);
  b = MulMont(d, z, zodd, zq);
}
PQCD_AI void ButterflyGs(__m256i& a, __m256i& b, Tw w) {
  ButterflyGs(a, b, w.z, w.z, w.zq);
}

// Register layouts of 16 coefficients c0..c15 (A = c0..7, B = c8..15):
//  L4: X = c0-3 | c8-11,          Y = c4-7 | c12-15         (pairs at distance 4)
//  L2: X = c0 c1 c4 c5 | c8.. ,   Y = c2 c3 c6 c7 | c10..   (pairs at distance 2)
//  L1: X = c0 c2 c4 c6 | c8.. ,   Y = c1 c3 c5 c7 | c9..    (pairs at distance 1)
PQCD_AI void StdToL4(__m256i a, __m256i b, __m256i& x, __m256i& y) {
  x = _mm256_permute2x128_si256(a, b, 0x20);
  y = _mm256_permute2x128_si256(a, b, 0x31);
}
PQCD_AI void L4ToStd(__m256i x, __m256i y, __m256i& a, __m256i& b) {
  a = _mm256_permute2x128_si256(x, y, 0x20);
  b = _mm256_permute2x128_si256(x, y, 0x31);
}
PQCD_AI void L4ToL2(__m256i x, __m256i y, __m256i& x2, __m256i& y2) {
  x2 = _mm256_unpacklo_epi64(x, y);
  y2 = _mm256_unpackhi_epi64(x, y);
}
PQCD_AI void L2ToL4(__m256i x2, __m256i y2, __m256i& x, __m256i& y) {
  x = _mm256_unpacklo_epi64(x2, y2);
  y = _mm256_unpackhi_epi64(x2, y2);
}
// L2 <-> L1 is the same 32-bit transpose of each 64-bit pair in both directions.
PQCD_AI void Swap32(__m256i x, __m256i y, __m256i& x1, __m256i& y1) {
  x1 = _mm256_blend_epi32(x, _mm256_slli_epi64(y, 32), 0xAA);
  y1 = _mm256_blend_epi32(_mm256_srli_epi64(x, 32), y, 0xAA);
}
// L1 <-> standard directly: interleave / de-interleave 32-bit lanes, then swap 128-bit halves.
PQCD_AI void L1ToStd(__m256i x, __m256i y, __m256i& a, __m256i& b) {
  const __m256i lo = _mm256_unpacklo_epi32(x, y);  // c0 c1 c2 c3 | c8 c9 c10 c11
  const __m256i hi = _mm256_unpackhi_epi32(x, y);  // c4 c5 c6 c7 | c12 c13 c14 c15
  a = _mm256_permute2x128_si256(lo, hi, 0x20);
  b = _mm256_permute2x128_si256(lo, hi, 0x31);
}
PQCD_AI void StdToL1(__m256i a, __m256i b, __m256i& x, __m256i& y) {
  const __m256 p = _mm256_castsi256_ps(_mm256_permute2x128_si256(a, b, 0x20));  // c0-3 | c8-11
  const __m256 q = _mm256_castsi256_ps(_mm256_permute2x128_si256(a, b, 0x31));  // c4-7 | c12-15
  x = _mm256_castps_si256(_mm256_shuffle_ps(p, q, 0x88));  // c0 c2 c4 c6 | c8 ..
  y = _mm256_castps_si256(_mm256_shuffle_ps(p, q, 0xDD));  // c1 c3 c5 c7 | c9 ..
}

PQCD_AI __m256i TableVec(const int32_t (&row)[8]) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(row));
}

#include "arch/x86_64/avx2/mldsa/decompose_avx2.inc"

template <int32_t Gamma2>
PQCD_AI void DecomposeT(Poly& r1, Poly& r0, const Poly& r) {
  for (int i = 0; i < kN; i += 8) {
    __m256i hi, lo;
    Decompose8<Gamma2>(Load(r.coeffs + i), hi, lo);
    Store(r1.coeffs + i, hi);
    Store(r0.coeffs + i, lo);
  }
}

template <int32_t Gamma2>
PQCD_AI unsigned MakeHintT(Poly& h, const Poly& a0, const Poly& a1) {
  const __m256i g = _mm256_set1_epi32(Gamma2);
  const __m256i neg_g = _mm256_set1_epi32(-Gamma2);
  const __m256i zero = _mm256_setzero_si256();
  unsigned count = 0;
  for (int i = 0; i < kN; i += 8) {
    const __m256i lo = Load(a0.coeffs + i);
    const __m256i hi = Load(a1.coeffs + i);
    const __m256i above = _mm256_cmpgt_epi32(lo, g);
    const __m256i below = _mm256_cmpgt_epi32(neg_g, lo);
    const __m256i at_neg =
        _mm256_andnot_si256(_mm256_cmpeq_epi32(hi, zero), _mm256_cmpeq_epi32(lo, neg_g));
    const __m256i m = _mm256_or_si256(_mm256_or_si256(above, below), at_neg);
    Store(h.coeffs + i, _mm256_srli_epi32(m, 31));
    count += static_cast<unsigned>(
        _mm_popcnt_u32(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(m)))));
  }
  return count;
}

template <int32_t Gamma2>
PQCD_AI void UseHintT(Poly& out, const Poly& r, const Poly& h) {
  constexpr int32_t kM = (kQ - 1) / (2 * Gamma2);
  const __m256i m = _mm256_set1_epi32(kM);
  const __m256i m1 = _mm256_set1_epi32(kM - 1);
  const __m256i zero = _mm256_setzero_si256();
  for (int i = 0; i < kN; i += 8) {
    __m256i hi, lo;
    Decompose8<Gamma2>(Load(r.coeffs + i), hi, lo);
    const __m256i hint = Load(h.coeffs + i);
    const __m256i positive = _mm256_cmpgt_epi32(lo, zero);
    const __m256i delta =
        _mm256_blendv_epi8(_mm256_sub_epi32(zero, hint), hint, positive);  // +h if lo > 0
    __m256i v = _mm256_add_epi32(hi, delta);
    v = _mm256_add_epi32(v, _mm256_and_si256(_mm256_srai_epi32(v, 31), m));
    v = _mm256_sub_epi32(v, _mm256_and_si256(_mm256_srai_epi32(_mm256_sub_epi32(m1, v), 31), m));
    Store(out.coeffs + i, v);
  }
}

// Unpacks 256 coefficients of Bits bits (little-endian bit order, FIPS 204 Alg. 18/19) into
// raw values in [0, 2^Bits), 8 per step: lanes 0-3 read a 16-byte window at the group start,
// lanes 4-7 one at the group start + Bits / 2 bytes; each lane takes the 4 bytes holding its
// value (vpshufb), shifts by its bit offset (vpsrlvd) and masks. Bits is even, 10..20. The last
// groups go through a zero-padded copy so that no load passes in[32 * Bits - 1].
template <int Bits, class Map>
PQCD_AI void UnpackBits(Poly& a, const uint8_t* in, Map map) {
  static_assert(Bits % 2 == 0 && Bits >= 10 && Bits <= 20);
  constexpr int kHalf = Bits / 2;  // byte offset of coefficient 4 of a group
  constexpr int kO1 = Bits / 8, kO2 = 2 * Bits / 8, kO3 = 3 * Bits / 8;
  const __m128i window = _mm_setr_epi8(0, 1, 2, 3, kO1, kO1 + 1, kO1 + 2, kO1 + 3, kO2, kO2 + 1,
                                       kO2 + 2, kO2 + 3, kO3, kO3 + 1, kO3 + 2, kO3 + 3);
  const __m256i shuffle = _mm256_broadcastsi128_si256(window);
  const __m256i shifts = _mm256_setr_epi32(0, Bits % 8, 2 * Bits % 8, 3 * Bits % 8, 0, Bits % 8,
                                           2 * Bits % 8, 3 * Bits % 8);
  const __m256i mask = _mm256_set1_epi32((1 << Bits) - 1);
  auto group = [&](const uint8_t* p) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kHalf));
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    v = _mm256_shuffle_epi8(v, shuffle);
    return _mm256_and_si256(_mm256_srlv_epi32(v, shifts), mask);
  };
  // Group g reads bytes [g Bits, g Bits + Bits / 2 + 16).
  constexpr int kSafeGroups = (32 * Bits - kHalf - 16) / Bits + 1;
  int g = 0;
  for (; g < kSafeGroups && g < 32; ++g) Store(a.coeffs + 8 * g, map(group(in + g * Bits)));
  alignas(32) uint8_t tail[3 * 20 + 32] = {};
  const int rest = 32 - g;
  for (int i = 0; i < rest * Bits; ++i) tail[i] = in[g * Bits + i];
  for (int k = 0; k < rest; ++k) Store(a.coeffs + 8 * (g + k), map(group(tail + k * Bits)));
}

}  // namespace

// ---- Bit unpacking ------------------------------------------------------------------------------

void UnpackT1(Poly& t1, const uint8_t* in) {
  UnpackBits<10>(t1, in, [](__m256i v) { return v; });
}
void UnpackT1Shifted(Poly& t, const uint8_t* in) {
  UnpackBits<10>(t, in, [](__m256i v) { return _mm256_slli_epi32(v, kD); });
}
void UnpackZ17(Poly& z, const uint8_t* in) {
  const __m256i g = _mm256_set1_epi32(1 << 17);
  UnpackBits<18>(z, in, [g](__m256i v) { return _mm256_sub_epi32(g, v); });
}
void UnpackZ19(Poly& z, const uint8_t* in) {
  const __m256i g = _mm256_set1_epi32(1 << 19);
  UnpackBits<20>(z, in, [g](__m256i v) { return _mm256_sub_epi32(g, v); });
}

// ---- NTT ------------------------------------------------------------------------------------
//
// Two passes over memory each way: layers len 128, 64, 32 on 8 registers 32 coefficients apart;
// then per block of 64 coefficients the remaining five layers (len 16 and 8 across registers, len
// 4, 2, 1 within register pairs after regrouping). The inverse runs the same passes in reverse.

namespace {

// Forward layers len 4, 2, 1 on 16 coefficients (a = c0..7, b = c8..15) of group m, in place.
PQCD_AI void NttLast3(__m256i& a, __m256i& b, int m) {
  __m256i x, y, x2, y2;
  StdToL4(a, b, x, y);
  ButterflyCt(x, y, TableVec(kT.fwd[0][m]), TableVec(kT.fwd_odd[0][m]),
              TableVec(kT.fwd_qinv[0][m]));
  L4ToL2(x, y, x2, y2);
  ButterflyCt(x2, y2, TableVec(kT.fwd[1][m]), TableVec(kT.fwd_odd[1][m]),
              TableVec(kT.fwd_qinv[1][m]));
  Swap32(x2, y2, x, y);
  ButterflyCt(x, y, TableVec(kT.fwd[2][m]), TableVec(kT.fwd_odd[2][m]),
              TableVec(kT.fwd_qinv[2][m]));
  L1ToStd(x, y, a, b);
}

// Inverse layers len 1, 2, 4 on 16 coefficients of group m, in place.
PQCD_AI void InvNttFirst3(__m256i& a, __m256i& b, int m) {
  __m256i x, y, x2, y2;
  StdToL1(a, b, x, y);
  ButterflyGs(x, y, TableVec(kT.inv[0][m]), TableVec(kT.inv_odd[0][m]),
              TableVec(kT.inv_qinv[0][m]));
  Swap32(x, y, x2, y2);
  ButterflyGs(x2, y2, TableVec(kT.inv[1][m]), TableVec(kT.inv_odd[1][m]),
              TableVec(kT.inv_qinv[1][m]));
  L2ToL4(x2, y2, x, y);
  ButterflyGs(x, y, TableVec(kT.inv[2][m]), TableVec(kT.inv_odd[2][m]),
              TableVec(kT.inv_qinv[2][m]));
  L4ToStd(x, y, a, b);
}

}  // namespace

void Ntt(Poly& p) {
  int32_t* a = p.coeffs;
  // Pass 1: layers len 128, 64, 32 (k = 1..7) on 8 registers 32 coefficients apart.
  for (int j = 0; j < 32; j += 8) {
    __m256i v[8];
    for (int i = 0; i < 8; ++i) v[i] = Load(a + j + 32 * i);
    const Tw w1 = Fwd(1);
    for (int i = 0; i < 4; ++i) ButterflyCt(v[i], v[i + 4], w1);
    const Tw w2 = Fwd(2), w3 = Fwd(3);
    ButterflyCt(v[0], v[2], w2);
    ButterflyCt(v[1], v[3], w2);
    ButterflyCt(v[4], v[6], w3);
    ButterflyCt(v[5], v[7], w3);
    for (int i = 0; i < 4; ++i) ButterflyCt(v[2 * i], v[2 * i + 1], Fwd(4 + i));
    for (int i = 0; i < 8; ++i) Store(a + j + 32 * i, v[i]);
  }
  // Pass 2: per block of 64 coefficients (8 registers): layers len 16 and 8 across registers,
  // then len 4, 2, 1 within register pairs.
  for (int blk = 0; blk < 4; ++blk) {
    int32_t* p64 = a + 64 * blk;
    __m256i v[8];
    for (int i = 0; i < 8; ++i) v[i] = Load(p64 + 8 * i);
    const Tw w16a = Fwd(8 + 2 * blk), w16b = Fwd(9 + 2 * blk);
    ButterflyCt(v[0], v[2], w16a);
    ButterflyCt(v[1], v[3], w16a);
    ButterflyCt(v[4], v[6], w16b);
    ButterflyCt(v[5], v[7], w16b);
    for (int i = 0; i < 4; ++i) {
      ButterflyCt(v[2 * i], v[2 * i + 1], Fwd(16 + 4 * blk + i));
    }
    for (int i = 0; i < 4; ++i) NttLast3(v[2 * i], v[2 * i + 1], 4 * blk + i);
    for (int i = 0; i < 8; ++i) Store(p64 + 8 * i, v[i]);
  }
}

void InvNttToMont(Poly& p) {
  int32_t* a = p.coeffs;
  // Pass 1: per block of 64 coefficients: layers len 1, 2, 4 within register pairs, then len 8
  // and 16 across registers (k = 255 .. 8 as in poly.cc, zetas negated).
  for (int blk = 0; blk < 4; ++blk) {
    int32_t* p64 = a + 64 * blk;
    __m256i v[8];
    for (int i = 0; i < 8; ++i) v[i] = Load(p64 + 8 * i);
    for (int i = 0; i < 4; ++i) InvNttFirst3(v[2 * i], v[2 * i + 1], 4 * blk + i);
    for (int i = 0; i < 4; ++i) {
      ButterflyGs(v[2 * i], v[2 * i + 1], Inv(31 - 4 * blk - i));
    }
    const Tw w16a = Inv(15 - 2 * blk), w16b = Inv(14 - 2 * blk);
    ButterflyGs(v[0], v[2], w16a);
    ButterflyGs(v[1], v[3], w16a);
    ButterflyGs(v[4], v[6], w16b);
    ButterflyGs(v[5], v[7], w16b);
    for (int i = 0; i < 8; ++i) Store(p64 + 8 * i, v[i]);
  }
  // Pass 2: layers len 32, 64, 128 (k = 7 .. 1) and the final scaling on 8 registers 32
  // coefficients apart: the same butterflies and Montgomery products as separate passes.
  const Tw s = Broadcast(kInvNttScale);
  for (int j = 0; j < 32; j += 8) {
    __m256i v[8];
    for (int i = 0; i < 8; ++i) v[i] = Load(a + j + 32 * i);
    for (int i = 0; i < 4; ++i) ButterflyGs(v[2 * i], v[2 * i + 1], Inv(7 - i));
    const Tw w3 = Inv(3), w2 = Inv(2);
    ButterflyGs(v[0], v[2], w3);
    ButterflyGs(v[1], v[3], w3);
    ButterflyGs(v[4], v[6], w2);
    ButterflyGs(v[5], v[7], w2);
    const Tw w1 = Inv(1);
    for (int i = 0; i < 4; ++i) ButterflyGs(v[i], v[i + 4], w1);
    for (int i = 0; i < 8; ++i) Store(a + j + 32 * i, MulMont(v[i], s.z, s.z, s.zq));
  }
}

// ---- Pointwise products -----------------------------------------------------------------------

void PointwiseMontgomery(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; i += 8) {
    const __m256i x = Load(a.coeffs + i), y = Load(b.coeffs + i);
    Store(c.coeffs + i, Reduce64(_mm256_mul_epi32(x, y), _mm256_mul_epi32(Odd(x), Odd(y))));
  }
}

void PointwiseAccMontgomery(Poly& c, const Poly* a, const Poly* b, int n) {
  for (int i = 0; i < kN; i += 8) {
    __m256i x = Load(a[0].coeffs + i), y = Load(b[0].coeffs + i);
    __m256i pe = _mm256_mul_epi32(x, y);
    __m256i po = _mm256_mul_epi32(Odd(x), Odd(y));
    for (int j = 1; j < n; ++j) {
      x = Load(a[j].coeffs + i);
      y = Load(b[j].coeffs + i);
      pe = _mm256_add_epi64(pe, _mm256_mul_epi32(x, y));
      po = _mm256_add_epi64(po, _mm256_mul_epi32(Odd(x), Odd(y)));
    }
    Store(c.coeffs + i, Reduce64(pe, po));
  }
}

void PointwiseAccSubMontgomery(Poly& c, const Poly* a, const Poly* b, int n, const Poly& x,
                               const Poly& y) {
  for (int i = 0; i < kN; i += 8) {
    __m256i u = Load(x.coeffs + i), v = Load(y.coeffs + i);
    __m256i pe = _mm256_sub_epi64(_mm256_setzero_si256(), _mm256_mul_epi32(u, v));
    __m256i po = _mm256_sub_epi64(_mm256_setzero_si256(), _mm256_mul_epi32(Odd(u), Odd(v)));
    for (int j = 0; j < n; ++j) {
      u = Load(a[j].coeffs + i);
      v = Load(b[j].coeffs + i);
      pe = _mm256_add_epi64(pe, _mm256_mul_epi32(u, v));
      po = _mm256_add_epi64(po, _mm256_mul_epi32(Odd(u), Odd(v)));
    }
    Store(c.coeffs + i, Reduce64(pe, po));
  }
}

// ---- Reductions and linear operations ---------------------------------------------------------

void Reduce32(Poly& a) {
  const __m256i half = _mm256_set1_epi32(1 << 22);
  const __m256i q = _mm256_set1_epi32(kQ);
  for (int i = 0; i < kN; i += 8) {
    const __m256i x = Load(a.coeffs + i);
    const __m256i t = _mm256_srai_epi32(_mm256_add_epi32(x, half), 23);
    Store(a.coeffs + i, _mm256_sub_epi32(x, _mm256_mullo_epi32(t, q)));
  }
}

void CAddQ(Poly& a) {
  const __m256i q = _mm256_set1_epi32(kQ);
  for (int i = 0; i < kN; i += 8) {
    const __m256i x = Load(a.coeffs + i);
    Store(a.coeffs + i, _mm256_add_epi32(x, _mm256_and_si256(_mm256_srai_epi32(x, 31), q)));
  }
}

void Add(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; i += 8) {
    Store(c.coeffs + i, _mm256_add_epi32(Load(a.coeffs + i), Load(b.coeffs + i)));
  }
}

void Sub(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; i += 8) {
    Store(c.coeffs + i, _mm256_sub_epi32(Load(a.coeffs + i), Load(b.coeffs + i)));
  }
}

void ShiftLeftD(Poly& a) {
  for (int i = 0; i < kN; i += 8) Store(a.coeffs + i, _mm256_slli_epi32(Load(a.coeffs + i), kD));
}

// ---- Rounding ---------------------------------------------------------------------------------

void SplitLow9(Poly& lo, Poly& hi, const Poly& v) {
  const __m256i off = _mm256_set1_epi32(256);
  const __m256i mask = _mm256_set1_epi32(511);
  for (int i = 0; i < kN; i += 8) {
    const __m256i x = Load(v.coeffs + i);
    const __m256i l = _mm256_sub_epi32(_mm256_and_si256(_mm256_add_epi32(x, off), mask), off);
    Store(hi.coeffs + i, _mm256_srai_epi32(_mm256_sub_epi32(x, l), 9));
    Store(lo.coeffs + i, l);
  }
}

uint32_t SplitLow9AddNorm(Poly& lo, Poly& hi, const Poly& v, const Poly& y, int32_t bound) {
  const __m256i half = _mm256_set1_epi32(1 << 22);
  const __m256i q = _mm256_set1_epi32(kQ);
  const __m256i off = _mm256_set1_epi32(256);
  const __m256i mask = _mm256_set1_epi32(511);
  const __m256i limit = _mm256_set1_epi32(bound - 1);
  __m256i bad = _mm256_setzero_si256();
  for (int i = 0; i < kN; i += 8) {
    __m256i x = Load(v.coeffs + i);
    x = _mm256_sub_epi32(x,
                         _mm256_mullo_epi32(_mm256_srai_epi32(_mm256_add_epi32(x, half), 23), q));
    const __m256i l = _mm256_sub_epi32(_mm256_and_si256(_mm256_add_epi32(x, off), mask), off);
    Store(hi.coeffs + i, _mm256_srai_epi32(_mm256_sub_epi32(x, l), 9));
    const __m256i z = _mm256_add_epi32(l, Load(y.coeffs + i));
    Store(lo.coeffs + i, z);
    bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_abs_epi32(z), limit));
  }
  const uint32_t bits = static_cast<uint32_t>(_mm256_movemask_epi8(bad));
  return 0u - ((bits | (0u - bits)) >> 31);
}

void Power2Round(Poly& t1, Poly& t0, const Poly& t) {
  const __m256i bias = _mm256_set1_epi32((1 << (kD - 1)) - 1);
  for (int i = 0; i < kN; i += 8) {
    const __m256i x = Load(t.coeffs + i);
    const __m256i hi = _mm256_srai_epi32(_mm256_add_epi32(x, bias), kD);
    Store(t0.coeffs + i, _mm256_sub_epi32(x, _mm256_slli_epi32(hi, kD)));
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
  const __m256i limit = _mm256_set1_epi32(bound - 1);
  __m256i bad = _mm256_setzero_si256();
  for (int i = 0; i < kN; i += 8) {
    bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_abs_epi32(Load(a.coeffs + i)), limit));
  }
  // Branch-free "any lane set" -> all-ones / zero.
  const uint32_t bits = static_cast<uint32_t>(_mm256_movemask_epi8(bad));
  return 0u - ((bits | (0u - bits)) >> 31);
}

// ---- Uniform rejection sampling (public rho) ---------------------------------------------------

namespace {

// 8 candidates from the 24 bytes at p (32 bytes are read): 23-bit values and their accept mask.
PQCD_AI __m256i Candidates(const uint8_t* p, unsigned& accept) {
  const __m256i spread_words = _mm256_setr_epi32(0, 1, 2, 3, 3, 4, 5, 6);
  const __m256i spread_bytes =
      _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                       0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
  __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  v = _mm256_permutevar8x32_epi32(v, spread_words);
  v = _mm256_and_si256(_mm256_shuffle_epi8(v, spread_bytes), _mm256_set1_epi32(0x7fffff));
  accept = static_cast<unsigned>(
      _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(kQ), v))));
  return v;
}

// vpermd indices that move the accepted lanes (mask bits) to the front, in order: pdep spreads
// the mask to one byte per lane, pext picks the accepted lane numbers (no table lookup).
PQCD_AI __m256i CompactIndex(unsigned accept) {
  const uint64_t lanes = _pdep_u64(accept, 0x0101010101010101ull) * 0xff;
  const uint64_t idx = _pext_u64(0x0706050403020100ull, lanes);
  return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(idx)));
}

}  // namespace

int RejectUniform(int32_t* a, int count, const uint8_t* buf, size_t len) {
  size_t pos = 0;
  // 32 candidates (96 bytes) per step: all loads and compares before the four stores, so the
  // stores (whose addresses depend on the running count) do not hold up the next loads. The
  // 32-byte loads stay inside buf, the stores inside a[0..256).
  while (pos + 104 <= len && count <= kN - 32) {
    __m256i v[4], idx[4];
    unsigned accept[4];
    for (int k = 0; k < 4; ++k) {
      v[k] = Candidates(buf + pos + 24 * k, accept[k]);
      idx[k] = CompactIndex(accept[k]);
    }
    for (int k = 0; k < 4; ++k) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + count),
                          _mm256_permutevar8x32_epi32(v[k], idx[k]));
      count += _mm_popcnt_u32(accept[k]);
    }
    pos += 96;
  }
  // 8 candidates (24 bytes) per step.
  while (pos + 32 <= len && count <= kN - 8) {
    unsigned accept;
    const __m256i v = Candidates(buf + pos, accept);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + count),
                        _mm256_permutevar8x32_epi32(v, CompactIndex(accept)));
    count += _mm_popcnt_u32(accept);
    pos += 24;
  }
  for (; pos + 3 <= len && count < kN; pos += 3) {
    const uint32_t t = static_cast<uint32_t>(buf[pos]) | static_cast<uint32_t>(buf[pos + 1]) << 8 |
                       static_cast<uint32_t>(buf[pos + 2] & 0x7f) << 16;
    if (t < static_cast<uint32_t>(kQ)) a[count++] = static_cast<int32_t>(t);
  }
  return count;
}

}  // namespace pqcd::kernels::mldsa::avx2
