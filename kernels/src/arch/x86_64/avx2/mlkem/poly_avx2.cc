// ML-KEM polynomial kernels, AVX2 (compiled with the avx2 flags only; the hooks of the avx2 table,
// mlkem/backend.h). Standard coefficient order throughout; every kernel performs the same
// reductions as its portable counterpart in mlkem/poly.cc, so results are bit-identical:
//  * Montgomery multiplication a·b·R^-1: hi16(a·b) - hi16(lo16(a·(b·q^-1))·q) (vpmulhw/vpmullw);
//    equals the portable (a·b - t·q) >> 16 exactly since both products agree in their low 16 bits.
//  * Barrett: t = ((a·20159) >> 16 + 2^9) >> 10 (vpmulhw, vpmulhrsw by 2^5) equals the portable
//    (20159·a + 2^25) >> 26.
//  * Compress: a 16-bit multiply-high estimate corrected by one comparison (Compress16 below).
// Constant time: no branch or index on coefficient data, except in RejectUniform (public XOF
// output of the public seed ρ: its shuffle-table index is the public rejection mask).
//
// Everything here is file-local (anonymous namespace or the avx2:: entry points): no inline
// function or template is shared with a baseline translation unit.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "arch/x86_64/avx2/mlkem/poly_avx2.h"
#include "mlkem/ntt_constants.h"
#include "pqcd/kernels/common.h"

namespace pqcd::kernels::mlkem::avx2 {
namespace {

using ntt::kBarrettV;
using ntt::kInvNttScale;
using ntt::kQ32;
using ntt::kRSquared;
constexpr int16_t kQInv16 = ntt::kQInv;  // q^-1 mod 2^16

// ---- Compile-time tables (consteval: nothing emitted at run time) -----------------------------

consteval int16_t TimesQInv(int16_t z) {
  return static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint32_t>(z) * 62209u));
}

struct Tables {
  int16_t zetas[128];
  int16_t zetas_qinv[128];
  int16_t gammas[128];
  int16_t gammas_qinv[128];
  // Per-lane zetas of the last three forward layers (len 8, 4, 2) and the first three inverse
  // layers, for each 32-coefficient group g, in the lane order the shuffles produce.
  int16_t fwd[3][8][16], fwd_qinv[3][8][16];
  int16_t inv[3][8][16], inv_qinv[3][8][16];
};

// Coefficient index held by lane l of the "first half" vector X of group g at layer len (8, 4, 2)
// after the shuffles used in Butterflies8/4/2 below.
consteval int LaneCoeff(int len, int g, int l) {
  if (len == 8) return l < 8 ? 32 * g + l : 32 * g + 16 + (l - 8);
  if (len == 4) {
    const int h = l / 8, m = l % 8;
    return m < 4 ? 32 * g + 8 * h + m : 32 * g + 16 + 8 * h + (m - 4);
  }
  const int d = l / 2, w = l % 2;
  return d % 2 == 0 ? 32 * g + 2 * d + w : 32 * g + 16 + 2 * (d - 1) + w;
}

consteval Tables MakeTables() {
  Tables t{};
  constexpr std::array<int16_t, 128> zetas = ntt::Zetas(), gammas = ntt::Gammas();
  for (int k = 0; k < 128; ++k) {
    t.zetas[k] = zetas[k];
    t.zetas_qinv[k] = TimesQInv(zetas[k]);
    t.gammas[k] = gammas[k];
    t.gammas_qinv[k] = TimesQInv(gammas[k]);
  }
  const int lens[3] = {8, 4, 2};
  for (int li = 0; li < 3; ++li) {
    const int len = lens[li];
    for (int g = 0; g < 8; ++g) {
      for (int l = 0; l < 16; ++l) {
        const int block = LaneCoeff(len, g, l) / (2 * len);
        const int kf = 128 / len + block;      // forward: k counts up from 128/len
        const int ki = 256 / len - 1 - block;  // inverse: k counts down from 256/len - 1
        t.fwd[li][g][l] = t.zetas[kf];
        t.fwd_qinv[li][g][l] = t.zetas_qinv[kf];
        t.inv[li][g][l] = t.zetas[ki];
        t.inv_qinv[li][g][l] = t.zetas_qinv[ki];
      }
    }
  }
  return t;
}
alignas(64) constexpr Tables kT = MakeTables();

// Rejection-sampling compaction: for an 8-bit acceptance mask, the byte shuffle that moves the
// accepted 16-bit lanes to the front, in order.
consteval std::array<std::array<uint8_t, 16>, 256> MakeCompactTable() {
  std::array<std::array<uint8_t, 16>, 256> t{};
  for (int m = 0; m < 256; ++m) {
    int n = 0;
    for (int i = 0; i < 8; ++i) {
      if ((m >> i) & 1) {
        t[m][2 * n] = static_cast<uint8_t>(2 * i);
        t[m][2 * n + 1] = static_cast<uint8_t>(2 * i + 1);
        ++n;
      }
    }
    for (int b = 2 * n; b < 16; ++b) t[m][b] = 0x80;
  }
  return t;
}
alignas(64) constexpr std::array<std::array<uint8_t, 16>, 256> kCompact = MakeCompactTable();

// Unpack tables for D-bit values (D <= 12): 8 values from D bytes (broadcast to both 128-bit
// lanes); value i goes to dword i (lane i / 4) from bytes s..s+3, s = i·D / 8, shifted by i·D % 8.
struct UnpackTable {
  uint8_t shuffle[32];
  uint32_t shift[8];
};
consteval UnpackTable MakeUnpack(int d, int adj = 0) {
  UnpackTable t{};
  for (int i = 0; i < 8; ++i) {
    const int s = i * d / 8;
    for (int b = 0; b < 4; ++b) {
      const int src = s + b + adj;
      // Lane-relative index (both lanes hold the same 16 bytes).
      t.shuffle[4 * i + b] = src < 16 ? static_cast<uint8_t>(src) : 0x80;
    }
    t.shift[i] = static_cast<uint32_t>(i * d % 8);
  }
  return t;
}
alignas(32) constexpr UnpackTable kUnpack4 = MakeUnpack(4);
alignas(32) constexpr UnpackTable kUnpack5 = MakeUnpack(5);
alignas(32) constexpr UnpackTable kUnpack10 = MakeUnpack(10);
alignas(32) constexpr UnpackTable kUnpack11 = MakeUnpack(11);
alignas(32) constexpr UnpackTable kUnpack12 = MakeUnpack(12);
// The same for a 16-byte window that ends at the D-th byte (Unpack8End).
alignas(32) constexpr UnpackTable kUnpack4End = MakeUnpack(4, 12);
alignas(32) constexpr UnpackTable kUnpack5End = MakeUnpack(5, 11);
alignas(32) constexpr UnpackTable kUnpack10End = MakeUnpack(10, 6);
alignas(32) constexpr UnpackTable kUnpack11End = MakeUnpack(11, 5);
alignas(32) constexpr UnpackTable kUnpack12End = MakeUnpack(12, 4);

// ---- Vector helpers ---------------------------------------------------------------------------

#define PQCD_INLINE static inline __attribute__((always_inline))

PQCD_INLINE __m256i Load(const int16_t* p) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
}
PQCD_INLINE __m256i LoadU(const void* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
PQCD_INLINE void Store(int16_t* p, __m256i v) {
  _mm256_store_si256(reinterpret_cast<__m256i*>(p), v);
}

// Montgomery multiplication a·z·R^-1 with zq = z·q^-1 mod 2^16. Out: |r| < q when |a·z| < q·2^15.
PQCD_INLINE __m256i FqMul(__m256i a, __m256i z, __m256i zq) {
  const __m256i q = _mm256_set1_epi16(kQ);
  const __m256i hi = _mm256_mulhi_epi16(a, z);
  const __m256i t = _mm256_mullo_epi16(a, zq);
  return _mm256_sub_epi16(hi, _mm256_mulhi_epi16(t, q));
}
// Barrett reduction to the centered representative (as portable BarrettReduce).
PQCD_INLINE __m256i Barrett(__m256i a) {
  const __m256i t = _mm256_mulhrs_epi16(_mm256_mulhi_epi16(a, _mm256_set1_epi16(kBarrettV)),
                                        _mm256_set1_epi16(1 << 5));
  return _mm256_sub_epi16(a, _mm256_mullo_epi16(t, _mm256_set1_epi16(kQ)));
}
PQCD_INLINE __m256i CondAddQ(__m256i a) {
  return _mm256_add_epi16(a, _mm256_and_si256(_mm256_srai_epi16(a, 15), _mm256_set1_epi16(kQ)));
}

// Forward butterfly: (a, b) -> (a + z·b, a - z·b).
PQCD_INLINE void FwdButterfly(__m256i& a, __m256i& b, __m256i z, __m256i zq) {
  const __m256i t = FqMul(b, z, zq);
  b = _mm256_sub_epi16(a, t);
  a = _mm256_add_epi16(a, t);
}
// Inverse butterfly: (a, b) -> (Barrett(a + b), z·(b - a)).
PQCD_INLINE void InvButterfly(__m256i& a, __m256i& b, __m256i z, __m256i zq) {
  const __m256i t = a;
  a = Barrett(_mm256_add_epi16(t, b));
  b = FqMul(_mm256_sub_epi16(b, t), z, zq);
}

// Shuffles of a 32-coefficient group (A = coefficients 0..15, B = 16..31) into the two halves
// X, Y of the butterflies of layer len, and back.
PQCD_INLINE void Split8(__m256i a, __m256i b, __m256i& x, __m256i& y) {
  x = _mm256_permute2x128_si256(a, b, 0x20);
  y = _mm256_permute2x128_si256(a, b, 0x31);
}
PQCD_INLINE void Split4(__m256i a, __m256i b, __m256i& x, __m256i& y) {
  x = _mm256_unpacklo_epi64(a, b);
  y = _mm256_unpackhi_epi64(a, b);
}
PQCD_INLINE void Split2(__m256i a, __m256i b, __m256i& x, __m256i& y) {
  x = _mm256_blend_epi32(a, _mm256_slli_epi64(b, 32), 0xAA);
  y = _mm256_blend_epi32(_mm256_srli_epi64(a, 32), b, 0xAA);
}
// Merges are the same operations on (X, Y) (each Split is an involution on the pair).

PQCD_INLINE __m256i TableVec(const int16_t (&t)[16]) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(t));
}

}  // namespace

// ---- NTT --------------------------------------------------------------------------------------

// Layers are merged to keep data in registers; every coefficient still goes through the same
// butterflies in the same order as in the portable code (bit-identical results).
namespace {
PQCD_INLINE __m256i Zeta(int k) {
  return _mm256_set1_epi16(kT.zetas[k]);
}
PQCD_INLINE __m256i ZetaQ(int k) {
  return _mm256_set1_epi16(kT.zetas_qinv[k]);
}
}  // namespace

void PolyNtt(Poly& p) {
  int16_t* c = p.c;
  // Layers len = 128, 64, 32 on the eight vectors c[o + 32·i], o in {0, 16}.
  for (int o = 0; o < 32; o += 16) {
    __m256i v[8];
    for (int i = 0; i < 8; ++i) v[i] = Load(c + o + 32 * i);
    for (int i = 0; i < 4; ++i) FwdButterfly(v[i], v[i + 4], Zeta(1), ZetaQ(1));
    FwdButterfly(v[0], v[2], Zeta(2), ZetaQ(2));
    FwdButterfly(v[1], v[3], Zeta(2), ZetaQ(2));
    FwdButterfly(v[4], v[6], Zeta(3), ZetaQ(3));
    FwdButterfly(v[5], v[7], Zeta(3), ZetaQ(3));
    for (int i = 0; i < 4; ++i) FwdButterfly(v[2 * i], v[2 * i + 1], Zeta(4 + i), ZetaQ(4 + i));
    for (int i = 0; i < 8; ++i) Store(c + o + 32 * i, v[i]);
  }
  // Layer 16, then 8, 4, 2 inside each 32-coefficient group.
  for (int g = 0; g < 8; ++g) {
    __m256i a = Load(c + 32 * g), b = Load(c + 32 * g + 16), x, y;
    FwdButterfly(a, b, Zeta(8 + g), ZetaQ(8 + g));
    Split8(a, b, x, y);
    FwdButterfly(x, y, TableVec(kT.fwd[0][g]), TableVec(kT.fwd_qinv[0][g]));
    Split8(x, y, a, b);
    Split4(a, b, x, y);
    FwdButterfly(x, y, TableVec(kT.fwd[1][g]), TableVec(kT.fwd_qinv[1][g]));
    Split4(x, y, a, b);
    Split2(a, b, x, y);
    FwdButterfly(x, y, TableVec(kT.fwd[2][g]), TableVec(kT.fwd_qinv[2][g]));
    Split2(x, y, a, b);
    Store(c + 32 * g, Barrett(a));
    Store(c + 32 * g + 16, Barrett(b));
  }
}

void PolyInvNttTimesR(Poly& p) {
  int16_t* c = p.c;
  // Layers len = 2, 4, 8 inside each 32-coefficient group, then 16.
  for (int g = 0; g < 8; ++g) {
    __m256i a = Load(c + 32 * g), b = Load(c + 32 * g + 16), x, y;
    Split2(a, b, x, y);
    InvButterfly(x, y, TableVec(kT.inv[2][g]), TableVec(kT.inv_qinv[2][g]));
    Split2(x, y, a, b);
    Split4(a, b, x, y);
    InvButterfly(x, y, TableVec(kT.inv[1][g]), TableVec(kT.inv_qinv[1][g]));
    Split4(x, y, a, b);
    Split8(a, b, x, y);
    InvButterfly(x, y, TableVec(kT.inv[0][g]), TableVec(kT.inv_qinv[0][g]));
    Split8(x, y, a, b);
    InvButterfly(a, b, Zeta(15 - g), ZetaQ(15 - g));
    Store(c + 32 * g, a);
    Store(c + 32 * g + 16, b);
  }
  // Layers len = 32, 64, 128 on the eight vectors c[o + 32·i], then the final scaling.
  const __m256i s = _mm256_set1_epi16(kInvNttScale);
  const __m256i sq = _mm256_set1_epi16(TimesQInv(kInvNttScale));
  for (int o = 0; o < 32; o += 16) {
    __m256i v[8];
    for (int i = 0; i < 8; ++i) v[i] = Load(c + o + 32 * i);
    for (int i = 0; i < 4; ++i) InvButterfly(v[2 * i], v[2 * i + 1], Zeta(7 - i), ZetaQ(7 - i));
    InvButterfly(v[0], v[2], Zeta(3), ZetaQ(3));
    InvButterfly(v[1], v[3], Zeta(3), ZetaQ(3));
    InvButterfly(v[4], v[6], Zeta(2), ZetaQ(2));
    InvButterfly(v[5], v[7], Zeta(2), ZetaQ(2));
    for (int i = 0; i < 4; ++i) InvButterfly(v[i], v[i + 4], Zeta(1), ZetaQ(1));
    for (int i = 0; i < 8; ++i) Store(c + o + 32 * i, FqMul(v[i], s, sq));
  }
}

void PolyMulCacheCompute(PolyMulCache& cache, const Poly& b) {
  for (int i = 0; i < kN / 2; i += 16) {
    const __m256i o0 = _mm256_srai_epi32(Load(b.c + 2 * i), 16);
    const __m256i o1 = _mm256_srai_epi32(Load(b.c + 2 * i + 16), 16);
    const __m256i odd = _mm256_permute4x64_epi64(_mm256_packs_epi32(o0, o1), 0xD8);
    Store(cache.c + i, FqMul(odd, Load(kT.gammas + i), Load(kT.gammas_qinv + i)));
  }
}

namespace {
template <int K>
void BasemulAccK(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache) {
  const int k = K;
  const __m256i swap = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3,
                                        0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  const __m256i qinv = _mm256_set1_epi16(kQInv16);
  const __m256i q = _mm256_set1_epi16(kQ);
  for (int i = 0; i < kN; i += 16) {
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
    for (int j = 0; j < k; ++j) {
      const __m256i va = Load(a[j].c + i);
      const __m256i vb = Load(b[j].c + i);
      const __m128i cc = _mm_load_si128(reinterpret_cast<const __m128i*>(cache[j].c + i / 2));
      const __m256i vc = _mm256_slli_epi32(_mm256_cvtepi16_epi32(cc), 16);
      const __m256i b0c = _mm256_blend_epi16(vb, vc, 0xAA);  // (b0, b1·γ) per pair
      const __m256i b1b0 = _mm256_shuffle_epi8(vb, swap);    // (b1, b0) per pair
      acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(va, b0c));
      acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(va, b1b0));
    }
    // Montgomery reduction of each 32-bit sum: hi16(acc) - hi16(lo16(acc·q^-1)·q), in the even
    // 16-bit lanes.
    const __m256i r0 = _mm256_sub_epi16(_mm256_srli_epi32(acc0, 16),
                                        _mm256_mulhi_epi16(_mm256_mullo_epi16(acc0, qinv), q));
    const __m256i r1 = _mm256_sub_epi16(_mm256_srli_epi32(acc1, 16),
                                        _mm256_mulhi_epi16(_mm256_mullo_epi16(acc1, qinv), q));
    Store(out.c + i, _mm256_blend_epi16(r0, _mm256_slli_epi32(r1, 16), 0xAA));
  }
}
}  // namespace

void PolyBasemulAcc(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache, int k) {
  switch (k) {
    case 1:
      return BasemulAccK<1>(out, a, b, cache);
    case 2:
      return BasemulAccK<2>(out, a, b, cache);
    case 3:
      return BasemulAccK<3>(out, a, b, cache);
    default:
      return BasemulAccK<4>(out, a, b, cache);
  }
}

void PolyToMont(Poly& a) {
  const __m256i z = _mm256_set1_epi16(kRSquared);
  const __m256i zq = _mm256_set1_epi16(TimesQInv(kRSquared));
  for (int i = 0; i < kN; i += 16) Store(a.c + i, FqMul(Load(a.c + i), z, zq));
}

// ---- Coefficient-wise -------------------------------------------------------------------------

void PolyAdd(Poly& r, const Poly& a) {
  for (int i = 0; i < kN; i += 16) Store(r.c + i, _mm256_add_epi16(Load(r.c + i), Load(a.c + i)));
}
void PolySub(Poly& r, const Poly& a) {
  for (int i = 0; i < kN; i += 16) Store(r.c + i, _mm256_sub_epi16(Load(r.c + i), Load(a.c + i)));
}
void PolyReduceCanonical(Poly& a) {
  for (int i = 0; i < kN; i += 16) Store(a.c + i, CondAddQ(Barrett(Load(a.c + i))));
}

// ---- Bit packing ------------------------------------------------------------------------------

namespace {

// Packs 16 values of D bits (D <= 12, 16-bit lanes) into the 2·D bytes at out. Fast form: writes
// 16 + D bytes (the tail is overwritten by the next group); exact form (the last groups of a
// polynomial): writes exactly 2·D bytes.
template <int D>
PQCD_INLINE __m256i PackLanes(__m256i v) {
  // Pairs -> 2D bits per dword, dword pairs -> 4D bits per qword.
  v = _mm256_madd_epi16(v, _mm256_set1_epi32((1 << D) << 16 | 1));
  const __m256i lo32 = _mm256_set1_epi64x(0xFFFFFFFF);
  v = _mm256_or_si256(_mm256_and_si256(v, lo32),
                      _mm256_slli_epi64(_mm256_srli_epi64(v, 32), 2 * D));
  // Qword pairs -> 8D bits per 128-bit lane: q0 | q1 << 4D.
  const __m256i low_q = _mm256_setr_epi64x(-1, 0, -1, 0);
  const __m256i q1_low = _mm256_slli_epi64(_mm256_bsrli_epi128(v, 8), 4 * D);
  const __m256i q1_high = _mm256_srli_epi64(_mm256_andnot_si256(low_q, v), 64 - 4 * D);
  return _mm256_or_si256(_mm256_and_si256(v, low_q), _mm256_or_si256(q1_low, q1_high));
}
// Stores the low N bytes of v.
template <int N>
PQCD_INLINE void StoreLow(uint8_t* p, __m128i v) {
  static_assert(N > 0 && N <= 16);
  if constexpr (N >= 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), v);
    if constexpr (N > 8) StoreLow<N - 8>(p + 8, _mm_srli_si128(v, 8));
  } else if constexpr (N >= 4) {
    const uint32_t w = static_cast<uint32_t>(_mm_cvtsi128_si32(v));
    std::memcpy(p, &w, 4);
    if constexpr (N > 4) StoreLow<N - 4>(p + 4, _mm_srli_si128(v, 4));
  } else if constexpr (N >= 2) {
    const uint16_t w = static_cast<uint16_t>(_mm_cvtsi128_si32(v));
    std::memcpy(p, &w, 2);
    if constexpr (N > 2) StoreLow<N - 2>(p + 2, _mm_srli_si128(v, 2));
  } else {
    *p = static_cast<uint8_t>(_mm_cvtsi128_si32(v));
  }
}
// Group g (coefficients 16g..16g+15) of a polynomial packed at out (32·D bytes): fast stores
// while they stay inside the 32·D bytes, exact ones for the last groups.
template <int D>
PQCD_INLINE void PackGroup(uint8_t* out, int g, __m256i v) {
  v = PackLanes<D>(v);
  uint8_t* p = out + 2 * D * g;
  if (2 * D * g + D + 16 <= 32 * D) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(v));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + D), _mm256_extracti128_si256(v, 1));
  } else {
    StoreLow<D>(p, _mm256_castsi256_si128(v));
    StoreLow<D>(p + D, _mm256_extracti128_si256(v, 1));
  }
}

// 8 values of D bits from in[0..D) (reads 16 bytes) into the 8 dwords of the result.
template <int D>
PQCD_INLINE __m256i Unpack8(const uint8_t* in, const UnpackTable& t) {
  const __m256i bytes =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
  __m256i v = _mm256_shuffle_epi8(bytes, LoadU(t.shuffle));
  v = _mm256_srlv_epi32(v, LoadU(t.shift));
  return _mm256_and_si256(v, _mm256_set1_epi32((1 << D) - 1));
}
// As Unpack8, reading the 16 bytes that end at in + D (for the last values of a buffer); t_end is
// the table with every index moved up by 16 - D.
template <int D>
PQCD_INLINE __m256i Unpack8End(const uint8_t* in, const UnpackTable& t_end) {
  return Unpack8<D>(in + D - 16, t_end);
}
// Values 8k..8k+7 of a buffer of 32·D bytes, never reading outside it.
template <int D>
PQCD_INLINE __m256i Unpack8At(const uint8_t* in, int k, const UnpackTable& t,
                              const UnpackTable& t_end) {
  return D * k + 16 <= 32 * D ? Unpack8<D>(in + D * k, t) : Unpack8End<D>(in + D * k, t_end);
}
// Two dword vectors (values 0..7 and 8..15) to one vector of 16 int16 in order.
PQCD_INLINE __m256i Pack32To16(__m256i lo, __m256i hi) {
  return _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8);
}

template <int D>
constexpr const UnpackTable& UnpackFor() {
  if constexpr (D == 4) return kUnpack4;
  if constexpr (D == 5) return kUnpack5;
  if constexpr (D == 10) return kUnpack10;
  if constexpr (D == 11) return kUnpack11;
  if constexpr (D == 12) return kUnpack12;
}
template <int D>
constexpr const UnpackTable& UnpackEndFor() {
  if constexpr (D == 4) return kUnpack4End;
  if constexpr (D == 5) return kUnpack5End;
  if constexpr (D == 10) return kUnpack10End;
  if constexpr (D == 11) return kUnpack11End;
  if constexpr (D == 12) return kUnpack12End;
}

// Compress_D(x) = round(2^D·x / q) mod 2^D on 16 canonical values, in 16-bit lanes. With
// V = round(2^(16+D) / q), y0 = (x·V) >> 16 is within 1 of floor(2^D·x / q): |x·V/2^16 - 2^D·x/q|
// <= 3328·0.5/2^16 < 0.03, so y0 is floor(2^D·x/q) - 1 only when the fraction is below 0.03 and
// floor + 1 only when it is above 0.97. The remainder r = 2^D·x - y0·q (exact in int16, computed
// mod 2^16) then lies in (-0.03q, 1.03q) and round(2^D·x/q) = y0 + [r > (q-1)/2]. Equals the
// portable multiply-shift exactly (checked on every x in [0, q) by the differential test).
template <int D>
PQCD_INLINE __m256i Compress16(__m256i x) {
  constexpr int kV = static_cast<int>(((int64_t{1} << (16 + D)) + kQ32 / 2) / kQ32);
  static_assert(kV < 65536);
  const __m256i y0 = _mm256_mulhi_epu16(x, _mm256_set1_epi16(static_cast<int16_t>(kV)));
  const __m256i r =
      _mm256_sub_epi16(_mm256_slli_epi16(x, D), _mm256_mullo_epi16(y0, _mm256_set1_epi16(kQ)));
  const __m256i up = _mm256_cmpgt_epi16(r, _mm256_set1_epi16((kQ - 1) / 2));  // -1 or 0
  return _mm256_and_si256(_mm256_sub_epi16(y0, up), _mm256_set1_epi16((1 << D) - 1));
}

// Written straight to out (no staging buffer): the compressed values are the ciphertext in
// Encaps; in the re-encryption of Decaps they are written to the caller's (wiped) buffer.
template <int D>
void CompressEncodeD(uint8_t* out, const Poly& a) {
  for (int g = 0; g < kN / 16; ++g) PackGroup<D>(out, g, Compress16<D>(Load(a.c + 16 * g)));
}

// Reads exactly 32·D bytes.
template <int D>
void DecodeDecompressD(Poly& a, const uint8_t* in) {
  const UnpackTable& t = UnpackFor<D>();
  const UnpackTable& te = UnpackEndFor<D>();
  const __m256i q = _mm256_set1_epi32(kQ);  // (q, 0) pairs for vpmaddwd
  const __m256i half = _mm256_set1_epi32(1 << (D - 1));
  for (int g = 0; g < kN / 16; ++g) {
    __m256i lo = Unpack8At<D>(in, 2 * g, t, te), hi = Unpack8At<D>(in, 2 * g + 1, t, te);
    lo = _mm256_srli_epi32(_mm256_add_epi32(_mm256_madd_epi16(lo, q), half), D);
    hi = _mm256_srli_epi32(_mm256_add_epi32(_mm256_madd_epi16(hi, q), half), D);
    Store(a.c + 16 * g, Pack32To16(lo, hi));
  }
}

// 16 raw 12-bit values (group g, in order) of a 384-byte encoding, reading only inside it.
PQCD_INLINE __m256i Unpack12x16(const uint8_t* in, int g) {
  return Pack32To16(Unpack8At<12>(in, 2 * g, kUnpack12, kUnpack12End),
                    Unpack8At<12>(in, 2 * g + 1, kUnpack12, kUnpack12End));
}

}  // namespace

void PolyEncode12(uint8_t out[kPolyBytes], const Poly& a) {
  for (int g = 0; g < kN / 16; ++g) PackGroup<12>(out, g, Load(a.c + 16 * g));
}

void PolyDecode12(Poly& a, const uint8_t in[kPolyBytes]) {
  const __m256i q = _mm256_set1_epi16(kQ);
  for (int g = 0; g < kN / 16; ++g) {
    Store(a.c + 16 * g, CondAddQ(_mm256_sub_epi16(Unpack12x16(in, g), q)));
  }
}

bool DecodeEncapsKeyPoly(Poly& a, const uint8_t in[kPolyBytes]) {
  const __m256i qm1 = _mm256_set1_epi16(kQ - 1);
  __m256i bad = _mm256_setzero_si256();
  for (int g = 0; g < kN / 16; ++g) {
    const __m256i v = Unpack12x16(in, g);
    bad = _mm256_or_si256(bad, _mm256_cmpgt_epi16(v, qm1));
    Store(a.c + 16 * g, v);
  }
  return _mm256_testz_si256(bad, bad) != 0;
}

void PolyCompressEncode(int d, uint8_t* out, const Poly& a) {
  switch (d) {
    case 4:
      return CompressEncodeD<4>(out, a);
    case 5:
      return CompressEncodeD<5>(out, a);
    case 10:
      return CompressEncodeD<10>(out, a);
    default:
      return CompressEncodeD<11>(out, a);
  }
}

void PolyDecodeDecompress(int d, Poly& a, const uint8_t* in) {
  switch (d) {
    case 4:
      return DecodeDecompressD<4>(a, in);
    case 5:
      return DecodeDecompressD<5>(a, in);
    case 10:
      return DecodeDecompressD<10>(a, in);
    default:
      return DecodeDecompressD<11>(a, in);
  }
}

namespace {
// μ = Decompress_1(ByteDecode_1(m)) for coefficients 16g..16g+15: 0 or 1665 per lane.
PQCD_INLINE __m256i MessageVec(const uint8_t* m, int g) {
  const __m256i bits = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                         8192, 16384, static_cast<int16_t>(0x8000));
  const int16_t w = static_cast<int16_t>(m[2 * g] | (m[2 * g + 1] << 8));
  const __m256i sel = _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16(w), bits), bits);
  return _mm256_and_si256(sel, _mm256_set1_epi16((kQ + 1) / 2));
}

// ByteEncode_D(Compress_D(canonical(a + b [+ μ]))) in one pass: the same additions, Barrett
// reduction and conditional add of q as PolyAdd, PolyReduceCanonical, PolyCompressEncode.
template <int D, bool kMsg>
void AddCompressEncodeD(uint8_t* out, const Poly& a, const Poly& b, const uint8_t* m) {
  for (int g = 0; g < kN / 16; ++g) {
    __m256i x = _mm256_add_epi16(Load(a.c + 16 * g), Load(b.c + 16 * g));
    if constexpr (kMsg) x = _mm256_add_epi16(x, MessageVec(m, g));
    PackGroup<D>(out, g, Compress16<D>(CondAddQ(Barrett(x))));
  }
}
template <bool kMsg>
void AddCompressEncodeM(int d, uint8_t* out, const Poly& a, const Poly& b, const uint8_t* m) {
  switch (d) {
    case 4:
      return AddCompressEncodeD<4, kMsg>(out, a, b, m);
    case 5:
      return AddCompressEncodeD<5, kMsg>(out, a, b, m);
    case 10:
      return AddCompressEncodeD<10, kMsg>(out, a, b, m);
    default:
      return AddCompressEncodeD<11, kMsg>(out, a, b, m);
  }
}
}  // namespace

void PolyAddCompressEncode(int d, uint8_t* out, Poly& a, const Poly& b, const uint8_t* m) {
  m != nullptr ? AddCompressEncodeM<true>(d, out, a, b, m)
               : AddCompressEncodeM<false>(d, out, a, b, nullptr);
}

void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w) {
  // As PolySub, PolyReduceCanonical, PolyToMessage (see there).
  const __m256i off = _mm256_set1_epi16(833);
  const __m256i lim = _mm256_set1_epi16(1664);
  const __m256i neg1 = _mm256_set1_epi16(-1);
  for (int i = 0; i < kN; i += 32) {
    const __m256i x0 = CondAddQ(Barrett(_mm256_sub_epi16(Load(v.c + i), Load(w.c + i))));
    const __m256i x1 = CondAddQ(Barrett(_mm256_sub_epi16(Load(v.c + i + 16), Load(w.c + i + 16))));
    const __m256i t0 = _mm256_sub_epi16(x0, off);
    const __m256i t1 = _mm256_sub_epi16(x1, off);
    const __m256i m0 = _mm256_and_si256(_mm256_cmpgt_epi16(t0, neg1), _mm256_cmpgt_epi16(lim, t0));
    const __m256i m1 = _mm256_and_si256(_mm256_cmpgt_epi16(t1, neg1), _mm256_cmpgt_epi16(lim, t1));
    const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packs_epi16(m0, m1), 0xD8);
    const uint32_t word = static_cast<uint32_t>(_mm256_movemask_epi8(bytes));
    std::memcpy(m + i / 8, &word, 4);
  }
}

uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n) {
  __m256i acc = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    acc = _mm256_or_si256(acc, _mm256_xor_si256(LoadU(a + i), LoadU(b + i)));
  uint32_t tail = 0;
  for (; i < n; ++i) tail |= static_cast<uint32_t>(a[i] ^ b[i]);
  // vptest + setcc: no branch on the data.
  const uint32_t vec_diff = static_cast<uint32_t>(_mm256_testz_si256(acc, acc) ^ 1);
  const uint32_t any = vec_diff | tail;
  return static_cast<uint8_t>(0u - ((any | (0u - any)) >> 31));
}

void CtSelect32(uint8_t dst[32], const uint8_t src[32], uint8_t mask) {
  const __m256i m = _mm256_set1_epi8(static_cast<char>(mask));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                      _mm256_blendv_epi8(LoadU(dst), LoadU(src), m));
}

void PolyFromMessage(Poly& a, const uint8_t m[kSymBytes]) {
  const __m256i bits = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                         8192, 16384, static_cast<int16_t>(0x8000));
  const __m256i half = _mm256_set1_epi16((kQ + 1) / 2);
  for (int i = 0; i < kN / 16; ++i) {
    const int16_t w = static_cast<int16_t>(m[2 * i] | (m[2 * i + 1] << 8));
    const __m256i sel = _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16(w), bits), bits);
    Store(a.c + 16 * i, _mm256_and_si256(sel, half));
  }
}

void PolyToMessage(uint8_t m[kSymBytes], const Poly& a) {
  // Compress_1(x) = 1 exactly for x in [833, 2496] (x canonical): (x - 833) in [0, 1663].
  const __m256i off = _mm256_set1_epi16(833);
  const __m256i lim = _mm256_set1_epi16(1664);
  const __m256i neg1 = _mm256_set1_epi16(-1);
  for (int i = 0; i < kN; i += 32) {
    const __m256i t0 = _mm256_sub_epi16(Load(a.c + i), off);
    const __m256i t1 = _mm256_sub_epi16(Load(a.c + i + 16), off);
    const __m256i m0 = _mm256_and_si256(_mm256_cmpgt_epi16(t0, neg1), _mm256_cmpgt_epi16(lim, t0));
    const __m256i m1 = _mm256_and_si256(_mm256_cmpgt_epi16(t1, neg1), _mm256_cmpgt_epi16(lim, t1));
    const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packs_epi16(m0, m1), 0xD8);
    const uint32_t word = static_cast<uint32_t>(_mm256_movemask_epi8(bytes));
    std::memcpy(m + i / 8, &word, 4);
  }
}

// ---- Sampling ---------------------------------------------------------------------------------

namespace {
// 16 12-bit candidates from bytes [0, 24) of p (reads 32 bytes): lane 0 takes bytes 0..11, lane 1
// bytes 12..23 (at lane offset 4 after the qword permutation 0,1,1,2).
PQCD_INLINE __m256i Candidates16(const uint8_t* p) {
  const __m256i idx = _mm256_setr_epi8(0, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 10, 10, 11,  //
                                       4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11, 12, 13, 14, 14, 15);
  const __m256i w = _mm256_shuffle_epi8(_mm256_permute4x64_epi64(LoadU(p), 0x94), idx);
  return _mm256_blend_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x0FFF)), _mm256_srli_epi16(w, 4),
                            0xAA);
}
PQCD_INLINE __m128i Compact8(__m128i v, uint32_t m) {
  return _mm_shuffle_epi8(v, _mm_load_si128(reinterpret_cast<const __m128i*>(kCompact[m].data())));
}
}  // namespace

namespace {
// Compacts the accepted candidates of one group (see RejectUniform) to dst; returns their number.
PQCD_INLINE int CompactGroup(int16_t* dst, __m256i v0, __m256i v1, uint32_t mask) {
  const uint32_t m0 = mask & 0xFF, m1 = (mask >> 8) & 0xFF, m2 = (mask >> 16) & 0xFF,
                 m3 = mask >> 24;
  const int n0 = _mm_popcnt_u32(m0), n2 = _mm_popcnt_u32(m2), n1 = _mm_popcnt_u32(m1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), Compact8(_mm256_castsi256_si128(v0), m0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n0),
                   Compact8(_mm256_extracti128_si256(v0, 1), m2));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n0 + n2),
                   Compact8(_mm256_castsi256_si128(v1), m1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n0 + n2 + n1),
                   Compact8(_mm256_extracti128_si256(v1, 1), m3));
  return _mm_popcnt_u32(mask);
}
}  // namespace

// Two passes. The first computes the candidates and acceptance masks of every 48-byte group
// (until enough are accepted) and keeps them at fixed stack addresses; the second compacts them.
// (In one pass, each group's input loads waited for the addresses of the previous group's stores,
// which depend on ctr, hence on the previous loads: a serial chain of ~25 cycles per group.)
// Groups whose 32 output slots all lie below `wanted` are compacted straight into out; the last
// one or two go to tmp, and the accepted values below `wanted` are copied out at the end.
int RejectUniform(int16_t* out, int wanted, const uint8_t* buf, size_t len) {
  constexpr int kMaxGroups = 11;  // 504 bytes (3 SHAKE128 blocks) = 10 groups of 48 + one of 24
  const __m256i q = _mm256_set1_epi16(kQ);
  alignas(32) __m256i cand[2 * kMaxGroups];
  uint32_t masks[kMaxGroups];
  int total = 0, groups = 0, direct = 0;
  size_t pos = 0;
  // Mask byte order after vpacksswb: v0 low, v1 low, v0 high, v1 high.
  for (; pos + 48 <= len && total < wanted && groups < kMaxGroups; pos += 48, ++groups) {
    const __m256i v0 = Candidates16(buf + pos);
    const __m256i v1 = Candidates16(buf + pos + 24);
    const uint32_t mask = static_cast<uint32_t>(_mm256_movemask_epi8(
        _mm256_packs_epi16(_mm256_cmpgt_epi16(q, v0), _mm256_cmpgt_epi16(q, v1))));
    cand[2 * groups] = v0;
    cand[2 * groups + 1] = v1;
    masks[groups] = mask;
    direct += total + 32 <= wanted ? 1 : 0;
    total += _mm_popcnt_u32(mask);
  }
  if (pos + 24 <= len && total < wanted && groups < kMaxGroups) {
    // A last half group: v1 = 0 with mask bytes 1 and 3 zero.
    const __m256i v0 = Candidates16(buf + pos);
    const uint32_t mask = static_cast<uint32_t>(_mm256_movemask_epi8(
        _mm256_packs_epi16(_mm256_cmpgt_epi16(q, v0), _mm256_setzero_si256())));
    cand[2 * groups] = v0;
    cand[2 * groups + 1] = _mm256_setzero_si256();
    masks[groups] = mask;
    direct += total + 32 <= wanted ? 1 : 0;
    ++groups;
    pos += 24;
  }
  int ctr = 0, g = 0;
  for (; g < direct; ++g) ctr += CompactGroup(out + ctr, cand[2 * g], cand[2 * g + 1], masks[g]);
  // The rest starts above wanted - 32 and stays below wanted + 32.
  alignas(32) int16_t tmp[96];
  const int base = ctr;
  int extra = 0;
  for (; g < groups; ++g) {
    extra += CompactGroup(tmp + extra, cand[2 * g], cand[2 * g + 1], masks[g]);
  }
  // Scalar tail (Alg. 7 steps 5-13) for lengths that are not whole 24-byte groups; values past
  // `wanted` are dropped below, exactly where the portable code stops.
  for (; pos + 3 <= len && base + extra < wanted; pos += 3) {
    const uint16_t d1 = static_cast<uint16_t>(buf[pos] | ((buf[pos + 1] & 0x0f) << 8));
    const uint16_t d2 = static_cast<uint16_t>((buf[pos + 1] >> 4) | (buf[pos + 2] << 4));
    tmp[extra] = static_cast<int16_t>(d1);
    extra += d1 < kQ ? 1 : 0;
    tmp[extra] = static_cast<int16_t>(d2);
    extra += d2 < kQ ? 1 : 0;
  }
  const int take = std::min(extra, wanted - base);
  std::memcpy(out + base, tmp, sizeof(int16_t) * static_cast<size_t>(take));
  return base + take;
}

namespace {

void Cbd2(Poly& a, const uint8_t* buf) {
  const __m128i m55 = _mm_set1_epi8(0x55), m33 = _mm_set1_epi8(0x33), m0f = _mm_set1_epi8(0x0F);
  const __m256i three = _mm256_set1_epi16(3);
  for (int i = 0; i < 8; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + 16 * i));
    // Per 2-bit field: number of set bits; per nibble (x, y) = (low field, high field).
    const __m128i d = _mm_add_epi8(_mm_and_si128(v, m55), _mm_and_si128(_mm_srli_epi16(v, 1), m55));
    const __m128i x = _mm_and_si128(d, m33);
    const __m128i y = _mm_and_si128(_mm_srli_epi16(d, 2), m33);
    const __m128i e = _mm_sub_epi8(_mm_add_epi8(x, m33), y);  // per nibble x - y + 3 in [1, 5]
    const __m128i lo = _mm_and_si128(e, m0f);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(e, 4), m0f);
    const __m256i c0 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(lo, hi));
    const __m256i c1 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(lo, hi));
    Store(a.c + 32 * i, _mm256_sub_epi16(c0, three));
    Store(a.c + 32 * i + 16, _mm256_sub_epi16(c1, three));
  }
}

void Cbd3(Poly& a, const uint8_t* buf) {
  const __m256i idx = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                                       4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1, 13, 14, 15, -1);
  const __m256i m249 = _mm256_set1_epi32(0x249249);
  const __m256i m3f = _mm256_set1_epi32(0x3F), m3f_hi = _mm256_set1_epi32(0x3F0000);
  const __m256i seven = _mm256_set1_epi16(7);
  for (int i = 0; i < 8; ++i) {
    const __m256i raw = _mm256_permute4x64_epi64(LoadU(buf + 24 * i), 0x94);
    const __m256i w = _mm256_shuffle_epi8(raw, idx);  // one 24-bit word per dword
    __m256i d = _mm256_and_si256(w, m249);
    d = _mm256_add_epi32(d, _mm256_and_si256(_mm256_srli_epi32(w, 1), m249));
    d = _mm256_add_epi32(d, _mm256_and_si256(_mm256_srli_epi32(w, 2), m249));
    // Four 6-bit fields (x: 3 bits, y: 3 bits) per dword -> fields (0, 1) and (2, 3) as int16
    // pairs.
    const __m256i f01 = _mm256_or_si256(_mm256_and_si256(d, m3f),
                                        _mm256_and_si256(_mm256_slli_epi32(d, 10), m3f_hi));
    const __m256i f23 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(d, 12), m3f),
                                        _mm256_and_si256(_mm256_srli_epi32(d, 2), m3f_hi));
    const __m256i u0 = _mm256_unpacklo_epi32(f01, f23);
    const __m256i u1 = _mm256_unpackhi_epi32(f01, f23);
    const __m256i o0 = _mm256_permute2x128_si256(u0, u1, 0x20);
    const __m256i o1 = _mm256_permute2x128_si256(u0, u1, 0x31);
    Store(a.c + 32 * i, _mm256_sub_epi16(_mm256_and_si256(o0, seven),
                                         _mm256_and_si256(_mm256_srli_epi16(o0, 3), seven)));
    Store(a.c + 32 * i + 16, _mm256_sub_epi16(_mm256_and_si256(o1, seven),
                                              _mm256_and_si256(_mm256_srli_epi16(o1, 3), seven)));
  }
}

}  // namespace

void Cbd(int eta, Poly& a, const uint8_t* buf) {
  if (eta == 2) {
    Cbd2(a, buf);
  } else {
    Cbd3(a, buf);
  }
}

}  // namespace pqcd::kernels::mlkem::avx2
