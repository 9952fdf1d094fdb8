// ML-KEM polynomial kernels, AVX-512 (F/BW/VL/DQ only: no VBMI, VBMI2 or IFMA; the hooks of the
// avx512 table that were measured faster than AVX2, mlkem/backend.h). A polynomial is eight ZMM
// registers of 32 int16 coefficients in standard order; every kernel performs the same reductions
// as its portable counterpart in mlkem/poly.cc, so results are bit-identical:
//  * Montgomery multiplication a·b·R^-1: hi16(a·b) - hi16(lo16(a·(b·q^-1))·q) (vpmulhw/vpmullw);
//    equals the portable (a·b - t·q) >> 16 exactly since both products agree in their low 16 bits.
//  * Barrett: t = ((a·20159) >> 16 + 2^9) >> 10 (vpmulhw, then an add and an arithmetic shift,
//    which keeps the multipliers free) equals the portable (20159·a + 2^25) >> 26.
//  * Compress: a 16-bit multiply-high estimate corrected by one comparison (Compress32 below);
//    Decompress: one vpmulhrsw (DecodeDecompressD).
// Constant time: no branch or memory index on coefficient or message data (message bits and
// comparisons become opmasks that select lanes); byte masks and table indices depend only on
// lengths and positions.
//
// Everything here is file-local (anonymous namespace or the avx512:: entry points): no inline
// function or template is shared with a baseline translation unit.
#include "arch/x86_64/avx512/mlkem/poly_avx512.h"
#include "mlkem/ntt_constants.h"

#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

// GCC 12 reports _mm512_undefined_epi32() inside its own shuffle, unpack and shift intrinsics as
// uninitialized (a false positive in its header, as in the other avx512 kernels).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pqcd::kernels::mlkem::avx512 {
namespace {

using ntt::kBarrettV;
using ntt::kInvNttScale;
using ntt::kQ32;
using ntt::kRSquared;
constexpr int16_t kQInv16 = ntt::kQInv;  // q^-1 mod 2^16

// ---- Compile-time tables (consteval: nothing computed at run time) ----------------------------

consteval int16_t TimesQInv(int16_t z) {
  return static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint32_t>(z) * 62209u));
}

// The layers len = 16, 8, 4, 2 run on a pair of registers (x, y) holding 64 coefficients
// 64g..64g+63 (g = 0..3). A layout says which bit of the 6-bit local index each position bit
// holds: positions 0..4 are the bits of the lane (0..31), position 5 is the register (x = 0,
// y = 1). In standard order position i holds bit i. A butterfly of layer len = 2^b pairs x with y
// lane by lane, so it needs position 5 to hold bit b; SwapPos(p) below exchanges the register bit
// with lane bit p (two shuffles for the pair of registers). Forward: swaps 4, 3, 2, 1 before the
// layers 16, 8, 4, 2; inverse: swaps 1, 2, 3, 4 before the layers 2, 4, 8, 16; then one pair of
// word permutes (Restore) back to standard order. Zetas are per lane, from tables built here by
// following the layouts.
struct Layout {
  int bit[6];
};
consteval Layout Swapped(Layout l, int p) {
  const int t = l.bit[5];
  l.bit[5] = l.bit[p];
  l.bit[p] = t;
  return l;
}
// Local index (0..63) of the coefficient in lane `lane` of register x under layout l.
consteval int LocalIndexX(const Layout& l, int lane) {
  int idx = 0;
  for (int p = 0; p < 5; ++p) idx |= ((lane >> p) & 1) << l.bit[p];
  return idx;
}

// vpermt2w indices that take a register pair from layout l back to standard order: word w of the
// result register r (0: x, 1: y) is word idx[r][w] of the pair (x: 0..31, y: 32..63).
struct RestoreIndex {
  uint16_t idx[2][32];
};
consteval RestoreIndex MakeRestore(const Layout& l) {
  RestoreIndex t{};
  for (int i = 0; i < 64; ++i) {
    int src = 0;
    for (int p = 0; p < 6; ++p) src |= ((i >> l.bit[p]) & 1) << p;
    t.idx[i >> 5][i & 31] = static_cast<uint16_t>(src);
  }
  return t;
}

struct Tables {
  int16_t zetas[128];
  int16_t zetas_qinv[128];
  int16_t gammas[128];
  int16_t gammas_qinv[128];
  // Per-lane zetas of the layers that run on a register pair, [layer][pair g][lane]: forward
  // layers len = 16, 8, 4, 2 and inverse layers len = 2, 4, 8, 16, in the layouts above.
  int16_t fwd[4][4][32], fwd_qinv[4][4][32];
  int16_t inv[4][4][32], inv_qinv[4][4][32];
  // From the layout of the last pair layer back to standard order.
  RestoreIndex fwd_restore, inv_restore;
};

consteval Tables MakeTables() {
  Tables t{};
  constexpr std::array<int16_t, 128> zetas = ntt::Zetas(), gammas = ntt::Gammas();
  for (int k = 0; k < 128; ++k) {
    t.zetas[k] = zetas[k];
    t.zetas_qinv[k] = TimesQInv(zetas[k]);
    t.gammas[k] = gammas[k];
    t.gammas_qinv[k] = TimesQInv(gammas[k]);
  }
  Layout fwd{{0, 1, 2, 3, 4, 5}}, inv{{0, 1, 2, 3, 4, 5}};
  for (int li = 0; li < 4; ++li) {
    fwd = Swapped(fwd, 4 - li);  // layer len = 2^(4 - li)
    inv = Swapped(inv, 1 + li);  // layer len = 2^(1 + li)
    const int len_f = 1 << (4 - li), len_i = 1 << (1 + li);
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        const int bf = (64 * g + LocalIndexX(fwd, l)) / (2 * len_f);
        const int bi = (64 * g + LocalIndexX(inv, l)) / (2 * len_i);
        const int kf = 128 / len_f + bf;      // forward: k counts up from 128/len
        const int ki = 256 / len_i - 1 - bi;  // inverse: k counts down from 256/len - 1
        t.fwd[li][g][l] = t.zetas[kf];
        t.fwd_qinv[li][g][l] = t.zetas_qinv[kf];
        t.inv[li][g][l] = t.zetas[ki];
        t.inv_qinv[li][g][l] = t.zetas_qinv[ki];
      }
    }
  }
  t.fwd_restore = MakeRestore(fwd);
  t.inv_restore = MakeRestore(inv);
  return t;
}
alignas(64) constexpr Tables kT = MakeTables();

// ---- Vector helpers ---------------------------------------------------------------------------

#define PQCD_INLINE static inline __attribute__((always_inline))

PQCD_INLINE __m512i Load(const int16_t* p) {
  return _mm512_load_si512(p);
}
PQCD_INLINE void Store(int16_t* p, __m512i v) {
  _mm512_store_si512(p, v);
}
PQCD_INLINE __m512i Set1(int16_t x) {
  return _mm512_set1_epi16(x);
}

// Montgomery multiplication a·z·R^-1 with zq = z·q^-1 mod 2^16. Out: |r| < q when |a·z| < q·2^15.
PQCD_INLINE __m512i FqMul(__m512i a, __m512i z, __m512i zq) {
  const __m512i hi = _mm512_mulhi_epi16(a, z);
  const __m512i t = _mm512_mullo_epi16(a, zq);
  return _mm512_sub_epi16(hi, _mm512_mulhi_epi16(t, Set1(kQ)));
}
// Barrett reduction to the centered representative (as portable BarrettReduce).
PQCD_INLINE __m512i Barrett(__m512i a) {
  const __m512i t =
      _mm512_srai_epi16(_mm512_add_epi16(_mm512_mulhi_epi16(a, Set1(kBarrettV)), Set1(1 << 9)), 10);
  return _mm512_sub_epi16(a, _mm512_mullo_epi16(t, Set1(kQ)));
}
PQCD_INLINE __m512i CondAddQ(__m512i a) {
  return _mm512_add_epi16(a, _mm512_and_si512(_mm512_srai_epi16(a, 15), Set1(kQ)));
}

// Forward butterfly: (a, b) -> (a + z·b, a - z·b).
PQCD_INLINE void FwdButterfly(__m512i& a, __m512i& b, __m512i z, __m512i zq) {
  const __m512i t = FqMul(b, z, zq);
  b = _mm512_sub_epi16(a, t);
  a = _mm512_add_epi16(a, t);
}
// Inverse butterfly: (a, b) -> (Barrett(a + b), z·(b - a)).
PQCD_INLINE void InvButterfly(__m512i& a, __m512i& b, __m512i z, __m512i zq) {
  const __m512i t = a;
  a = Barrett(_mm512_add_epi16(t, b));
  b = FqMul(_mm512_sub_epi16(b, t), z, zq);
}

// SwapPos<p>(x, y): exchanges the register bit with lane bit p (see Layout). Lane bit 4 is the
// 256-bit half, 3 the 128-bit lane within it, 2 the qword within a 128-bit lane, 1 the dword
// within a qword.
template <int P>
PQCD_INLINE void SwapPos(__m512i& x, __m512i& y) {
  __m512i a = x, b = y;
  if constexpr (P == 4) {
    x = _mm512_shuffle_i64x2(a, b, 0x44);  // a.L0 a.L1 b.L0 b.L1
    y = _mm512_shuffle_i64x2(a, b, 0xEE);  // a.L2 a.L3 b.L2 b.L3
  } else if constexpr (P == 3) {
    x = _mm512_mask_shuffle_i64x2(a, 0xCC, b, b, 0x80);  // a.L0 b.L0 a.L2 b.L2
    y = _mm512_mask_shuffle_i64x2(b, 0x33, a, a, 0x31);  // a.L1 b.L1 a.L3 b.L3
  } else if constexpr (P == 2) {
    x = _mm512_unpacklo_epi64(a, b);
    y = _mm512_unpackhi_epi64(a, b);
  } else {
    static_assert(P == 1);
    x = _mm512_mask_shuffle_epi32(a, 0xAAAA, b, static_cast<_MM_PERM_ENUM>(0x80));  // a.d0 b.d0
    y = _mm512_mask_shuffle_epi32(b, 0x5555, a, static_cast<_MM_PERM_ENUM>(0x31));  // a.d1 b.d1
  }
}

// Standard order again from the layout the restore index r was made for.
PQCD_INLINE void Restore(__m512i& x, __m512i& y, const RestoreIndex& r) {
  const __m512i a = x;
  x = _mm512_permutex2var_epi16(a, _mm512_load_si512(r.idx[0]), y);
  y = _mm512_permutex2var_epi16(a, _mm512_load_si512(r.idx[1]), y);
}

PQCD_INLINE __m512i TableVec(const int16_t (&t)[32]) {
  return _mm512_load_si512(t);
}
PQCD_INLINE __m512i Zeta(int k) {
  return Set1(kT.zetas[k]);
}
PQCD_INLINE __m512i ZetaQ(int k) {
  return Set1(kT.zetas_qinv[k]);
}

}  // namespace

// ---- NTT --------------------------------------------------------------------------------------

// The whole polynomial stays in eight registers v[i] = coefficients 32i..32i+31. Every
// coefficient goes through the same butterflies with the same zetas as in the portable code
// (bit-identical results); only the order of independent butterflies differs.
void PolyNtt(Poly& p) {
  __m512i v[8];
  for (int i = 0; i < 8; ++i) v[i] = Load(p.c + 32 * i);
  // Layers len = 128, 64, 32: whole registers.
  for (int i = 0; i < 4; ++i) FwdButterfly(v[i], v[i + 4], Zeta(1), ZetaQ(1));
  FwdButterfly(v[0], v[2], Zeta(2), ZetaQ(2));
  FwdButterfly(v[1], v[3], Zeta(2), ZetaQ(2));
  FwdButterfly(v[4], v[6], Zeta(3), ZetaQ(3));
  FwdButterfly(v[5], v[7], Zeta(3), ZetaQ(3));
  for (int i = 0; i < 4; ++i) FwdButterfly(v[2 * i], v[2 * i + 1], Zeta(4 + i), ZetaQ(4 + i));
  // Layers len = 16, 8, 4, 2 on each register pair, then the final Barrett reduction.
  for (int g = 0; g < 4; ++g) {
    __m512i x = v[2 * g], y = v[2 * g + 1];
    SwapPos<4>(x, y);
    FwdButterfly(x, y, TableVec(kT.fwd[0][g]), TableVec(kT.fwd_qinv[0][g]));
    SwapPos<3>(x, y);
    FwdButterfly(x, y, TableVec(kT.fwd[1][g]), TableVec(kT.fwd_qinv[1][g]));
    SwapPos<2>(x, y);
    FwdButterfly(x, y, TableVec(kT.fwd[2][g]), TableVec(kT.fwd_qinv[2][g]));
    SwapPos<1>(x, y);
    FwdButterfly(x, y, TableVec(kT.fwd[3][g]), TableVec(kT.fwd_qinv[3][g]));
    x = Barrett(x);
    y = Barrett(y);
    Restore(x, y, kT.fwd_restore);
    Store(p.c + 64 * g, x);
    Store(p.c + 64 * g + 32, y);
  }
}

void PolyInvNttTimesR(Poly& p) {
  __m512i v[8];
  // Layers len = 2, 4, 8, 16 on each register pair, then len = 32 between its two registers.
  for (int g = 0; g < 4; ++g) {
    __m512i x = Load(p.c + 64 * g), y = Load(p.c + 64 * g + 32);
    SwapPos<1>(x, y);
    InvButterfly(x, y, TableVec(kT.inv[0][g]), TableVec(kT.inv_qinv[0][g]));
    SwapPos<2>(x, y);
    InvButterfly(x, y, TableVec(kT.inv[1][g]), TableVec(kT.inv_qinv[1][g]));
    SwapPos<3>(x, y);
    InvButterfly(x, y, TableVec(kT.inv[2][g]), TableVec(kT.inv_qinv[2][g]));
    SwapPos<4>(x, y);
    InvButterfly(x, y, TableVec(kT.inv[3][g]), TableVec(kT.inv_qinv[3][g]));
    Restore(x, y, kT.inv_restore);
    InvButterfly(x, y, Zeta(7 - g), ZetaQ(7 - g));
    v[2 * g] = x;
    v[2 * g + 1] = y;
  }
  // Layers len = 64, 128, then the final scaling by R^2/128.
  InvButterfly(v[0], v[2], Zeta(3), ZetaQ(3));
  InvButterfly(v[1], v[3], Zeta(3), ZetaQ(3));
  InvButterfly(v[4], v[6], Zeta(2), ZetaQ(2));
  InvButterfly(v[5], v[7], Zeta(2), ZetaQ(2));
  for (int i = 0; i < 4; ++i) InvButterfly(v[i], v[i + 4], Zeta(1), ZetaQ(1));
  const __m512i s = Set1(kInvNttScale);
  const __m512i sq = Set1(TimesQInv(kInvNttScale));
  for (int i = 0; i < 8; ++i) Store(p.c + 32 * i, FqMul(v[i], s, sq));
}

// ---- Base multiplication ----------------------------------------------------------------------

void PolyMulCacheCompute(PolyMulCache& cache, const Poly& b) {
  // The odd coefficients of two registers, in order: word 2i+1 of (lo, hi) for i = 0..31.
  alignas(64) static constexpr auto kOdd = [] {
    std::array<uint16_t, 32> t{};
    for (int i = 0; i < 32; ++i) t[i] = static_cast<uint16_t>(2 * i + 1);
    return t;
  }();
  const __m512i idx = _mm512_load_si512(kOdd.data());
  for (int i = 0; i < kN / 2; i += 32) {
    const __m512i odd = _mm512_permutex2var_epi16(Load(b.c + 2 * i), idx, Load(b.c + 2 * i + 32));
    Store(cache.c + i, FqMul(odd, Load(kT.gammas + i), Load(kT.gammas_qinv + i)));
  }
}

namespace {
constexpr __mmask32 kOddWords = 0xAAAAAAAAu;

// Σ_j a[j] ∘ b[j] for coefficients i..i+31 as 32-bit sums: acc0 (even outputs: a0·b0 + a1·b1γ)
// and acc1 (odd outputs: a0·b1 + a1·b0), one dword per coefficient pair.
template <int K>
PQCD_INLINE void BasemulSums(const Poly* a, const Poly* b, const PolyMulCache* cache, int i,
                             __m512i& acc0, __m512i& acc1) {
  acc0 = _mm512_setzero_si512();
  acc1 = _mm512_setzero_si512();
  for (int j = 0; j < K; ++j) {
    const __m512i va = Load(a[j].c + i);
    const __m512i vb = Load(b[j].c + i);
    const __m256i cc = _mm256_load_si256(reinterpret_cast<const __m256i*>(cache[j].c + i / 2));
    const __m512i vc = _mm512_slli_epi32(_mm512_cvtepi16_epi32(cc), 16);
    const __m512i b0c = _mm512_mask_blend_epi16(kOddWords, vb, vc);  // (b0, b1·γ) per pair
    const __m512i b1b0 = _mm512_rol_epi32(vb, 16);                   // (b1, b0) per pair
    acc0 = _mm512_add_epi32(acc0, _mm512_madd_epi16(va, b0c));
    acc1 = _mm512_add_epi32(acc1, _mm512_madd_epi16(va, b1b0));
  }
}

template <int K>
void BasemulAccK(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache) {
  const __m512i qinv = Set1(kQInv16);
  const __m512i q = Set1(kQ);
  for (int i = 0; i < kN; i += 32) {
    __m512i acc0, acc1;
    BasemulSums<K>(a, b, cache, i, acc0, acc1);
    // Montgomery reduction of both sums at once: the high and low halves of acc0 (even words)
    // and acc1 (odd words) gathered into one register each, then hi - hi16(lo16(lo·q^-1)·q).
    const __m512i hi = _mm512_mask_blend_epi16(kOddWords, _mm512_srli_epi32(acc0, 16), acc1);
    const __m512i lo = _mm512_mask_blend_epi16(kOddWords, acc0, _mm512_slli_epi32(acc1, 16));
    const __m512i r = _mm512_sub_epi16(hi, _mm512_mulhi_epi16(_mm512_mullo_epi16(lo, qinv), q));
    Store(out.c + i, r);
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
  const __m512i z = Set1(kRSquared);
  const __m512i zq = Set1(TimesQInv(kRSquared));
  for (int i = 0; i < kN; i += 32) Store(a.c + i, FqMul(Load(a.c + i), z, zq));
}

// ---- Coefficient-wise -------------------------------------------------------------------------

void PolyAdd(Poly& r, const Poly& a) {
  for (int i = 0; i < kN; i += 32) Store(r.c + i, _mm512_add_epi16(Load(r.c + i), Load(a.c + i)));
}
void PolySub(Poly& r, const Poly& a) {
  for (int i = 0; i < kN; i += 32) Store(r.c + i, _mm512_sub_epi16(Load(r.c + i), Load(a.c + i)));
}
void PolyReduceCanonical(Poly& a) {
  for (int i = 0; i < kN; i += 32) Store(a.c + i, CondAddQ(Barrett(Load(a.c + i))));
}

// ---- Compression and bit packing ---------------------------------------------------------------

namespace {

// Compress_D(x) = round(2^D·x / q) mod 2^D on 32 canonical values: with V = round(2^(16+D) / q),
// y0 = (x·V) >> 16 is within 1 of floor(2^D·x / q), and with the remainder r = 2^D·x - y0·q
// (exact mod 2^16) round(2^D·x/q) = y0 + [r > (q-1)/2] (the argument of the AVX2 Compress16;
// equals the portable multiply-shift on every x in [0, q), which the differential test checks).
template <int D>
PQCD_INLINE __m512i Compress32(__m512i x) {
  constexpr int kV = static_cast<int>(((int64_t{1} << (16 + D)) + kQ32 / 2) / kQ32);
  static_assert(kV < 65536);
  const __m512i y0 = _mm512_mulhi_epu16(x, Set1(static_cast<int16_t>(kV)));
  const __m512i r = _mm512_sub_epi16(_mm512_slli_epi16(x, D), _mm512_mullo_epi16(y0, Set1(kQ)));
  const __mmask32 up = _mm512_cmpgt_epi16_mask(r, Set1((kQ - 1) / 2));
  return _mm512_and_si512(_mm512_mask_add_epi16(y0, up, y0, Set1(1)), Set1((1 << D) - 1));
}

// Packs 32 values of D bits (16-bit lanes, values 8L..8L+7 in 128-bit lane L) into D bytes at the
// bottom of each 128-bit lane (little-endian bit order, Alg. 5).
template <int D>
PQCD_INLINE __m512i PackLanes(__m512i v) {
  // Pairs -> 2D bits per dword, dword pairs -> 4D bits per qword.
  v = _mm512_madd_epi16(v, _mm512_set1_epi32((1 << D) << 16 | 1));
  v = _mm512_ternarylogic_epi64(v, _mm512_set1_epi64(0xFFFFFFFF),
                                _mm512_slli_epi64(_mm512_srli_epi64(v, 32), 2 * D), 0xEA);
  // Qword pairs -> 8D bits per 128-bit lane: q0 | q1 << 4D (q1's top bits into the high qword).
  const __m512i q0 = _mm512_maskz_mov_epi64(0x55, v);
  const __m512i q1_low = _mm512_slli_epi64(_mm512_bsrli_epi128(v, 8), 4 * D);
  if constexpr (D > 8) {
    const __m512i q1_high = _mm512_maskz_srli_epi64(0xAA, v, 64 - 4 * D);
    return _mm512_ternarylogic_epi64(q0, q1_low, q1_high, 0xFE);
  } else {
    return _mm512_or_si512(q0, q1_low);
  }
}

// Stores the low N bytes of v with plain stores of 32, 16, 8, 4, 2 and 1 bytes (no byte-masked
// store: the output is often read back at once, by the Keccak absorb of ek or the ciphertext
// compare of Decaps, and a masked store does not forward to those loads).
template <int N>
PQCD_INLINE void StoreLow(uint8_t* p, __m512i v) {
  static_assert(N > 0 && N <= 64);
  if constexpr (N >= 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_castsi512_si256(v));
    if constexpr (N > 32)
      StoreLow<N - 32>(p + 32, _mm512_castsi256_si512(_mm512_extracti64x4_epi64(v, 1)));
  } else if constexpr (N >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_castsi512_si128(v));
    if constexpr (N > 16)
      StoreLow<N - 16>(p + 16, _mm512_castsi128_si512(_mm512_extracti32x4_epi32(v, 1)));
  } else {
    const __m128i x = _mm512_castsi512_si128(v);
    if constexpr (N >= 8) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p), x);
      if constexpr (N > 8) StoreLow<N - 8>(p + 8, _mm512_castsi128_si512(_mm_srli_si128(x, 8)));
    } else if constexpr (N >= 4) {
      const uint32_t w = static_cast<uint32_t>(_mm_cvtsi128_si32(x));
      std::memcpy(p, &w, 4);
      if constexpr (N > 4) StoreLow<N - 4>(p + 4, _mm512_castsi128_si512(_mm_srli_si128(x, 4)));
    } else if constexpr (N >= 2) {
      const uint16_t w = static_cast<uint16_t>(_mm_cvtsi128_si32(x));
      std::memcpy(p, &w, 2);
      if constexpr (N > 2) StoreLow<N - 2>(p + 2, _mm512_castsi128_si512(_mm_srli_si128(x, 2)));
    } else {
      *p = static_cast<uint8_t>(_mm_cvtsi128_si32(x));
    }
  }
}

// Values 32g..32g+31 of a polynomial packed at out (32·D bytes, 4D of them here). Full-width
// stores while they stay inside the 32·D bytes (the next group overwrites the excess), else
// exact ones: never a byte outside the output.
template <int D>
PQCD_INLINE void PackGroup(uint8_t* out, int g, __m512i v) {
  if constexpr (D == 4) {
    // Two nibbles per byte: dword w0 | w1 << 16 -> low byte w0 | w1 << 4; one byte per dword.
    const __m512i t = _mm512_or_si512(v, _mm512_srli_epi32(v, 12));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * g), _mm512_cvtepi32_epi8(t));
  } else if constexpr (D % 2 == 0) {
    // D/2 words per 128-bit lane -> 2D contiguous words, one store.
    alignas(64) static constexpr auto kIdx = [] {
      std::array<uint16_t, 32> t{};
      for (int w = 0; w < 2 * D; ++w) t[w] = static_cast<uint16_t>(8 * (w / (D / 2)) + w % (D / 2));
      return t;
    }();
    v = _mm512_permutexvar_epi16(_mm512_load_si512(kIdx.data()), PackLanes<D>(v));
    if (4 * D * g + 64 <= 32 * D) {
      _mm512_storeu_si512(out + 4 * D * g, v);
    } else {
      StoreLow<4 * D>(out + 4 * D * g, v);
    }
  } else {
    // D odd: one store per 128-bit lane (measured faster than two word permutes).
    v = PackLanes<D>(v);
    const __m512i lanes[4] = {v, _mm512_castsi128_si512(_mm512_extracti32x4_epi32(v, 1)),
                              _mm512_castsi128_si512(_mm512_extracti32x4_epi32(v, 2)),
                              _mm512_castsi128_si512(_mm512_extracti32x4_epi32(v, 3))};
    for (int l = 0; l < 4; ++l) {
      uint8_t* p = out + 4 * D * g + D * l;
      if (4 * D * g + D * l + 16 <= 32 * D) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_castsi512_si128(lanes[l]));
      } else {
        StoreLow<D>(p, lanes[l]);
      }
    }
  }
}

template <int D>
void CompressEncodeD(uint8_t* out, const Poly& a) {
  for (int g = 0; g < kN / 32; ++g) PackGroup<D>(out, g, Compress32<D>(Load(a.c + 32 * g)));
}

// ByteEncode_D(Compress_D(canonical(a + b [+ μ]))) in one pass: the same additions, Barrett
// reduction and conditional add of q as PolyAdd, PolyReduceCanonical, PolyCompressEncode. μ for
// coefficients 32g..32g+31 is 1665 where bit i of the 32-bit word m[4g..4g+3] is set.
template <int D, bool kMsg>
void AddCompressEncodeD(uint8_t* out, const Poly& a, const Poly& b, const uint8_t* m) {
  for (int g = 0; g < kN / 32; ++g) {
    __m512i x = _mm512_add_epi16(Load(a.c + 32 * g), Load(b.c + 32 * g));
    if constexpr (kMsg) {
      uint32_t bits;
      std::memcpy(&bits, m + 4 * g, 4);
      x = _mm512_mask_add_epi16(x, _cvtu32_mask32(bits), x, Set1((kQ + 1) / 2));
    }
    PackGroup<D>(out, g, Compress32<D>(CondAddQ(Barrett(x))));
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

// Values 32g..32g+31 (D bits each, little-endian bit order, Alg. 6) of a buffer of 32·D bytes,
// reading only the 4D bytes of the group (byte-masked load). A word permute gives 128-bit lane L
// the 16 bytes from word floor(D·L/2) (lane L's values start at byte D·L); a byte shuffle puts
// the two bytes holding value i (of 8) into word i, a third for D = 11 (where a value can span
// three bytes), then variable word shifts align it.
template <int D>
struct UnpackTables {
  uint16_t words[32];
  uint8_t lo[64], hi[64];  // bytes s, s+1 and byte s+2 of value i -> word i
  uint16_t shift_right[32], shift_left[32];
};
template <int D>
consteval UnpackTables<D> MakeUnpack() {
  UnpackTables<D> t{};
  for (int lane = 0; lane < 4; ++lane) {
    const int first_word = D * lane / 2;
    for (int i = 0; i < 8; ++i) {
      t.words[8 * lane + i] = static_cast<uint16_t>(first_word + i < 32 ? first_word + i : 31);
      const int bit = D * lane * 8 + D * i - 16 * first_word;  // from the lane's first byte
      const int w = 8 * lane + i;
      t.lo[2 * w] = static_cast<uint8_t>(bit / 8);
      t.lo[2 * w + 1] = static_cast<uint8_t>(bit / 8 + 1);
      t.hi[2 * w] = static_cast<uint8_t>(bit / 8 + 2 < 16 ? bit / 8 + 2 : 0x80);
      t.hi[2 * w + 1] = 0x80;
      t.shift_right[w] = static_cast<uint16_t>(bit % 8);
      t.shift_left[w] = static_cast<uint16_t>(16 - bit % 8);
    }
  }
  return t;
}
template <int D>
alignas(64) constexpr UnpackTables<D> kUnpack = MakeUnpack<D>();

template <int D>
PQCD_INLINE __m512i Unpack32(const uint8_t* in, int g) {
  const UnpackTables<D>& t = kUnpack<D>;
  const __m512i raw = _mm512_maskz_loadu_epi8((__mmask64{1} << (4 * D)) - 1, in + 4 * D * g);
  const __m512i lanes = _mm512_permutexvar_epi16(_mm512_load_si512(t.words), raw);
  __m512i v = _mm512_srlv_epi16(_mm512_shuffle_epi8(lanes, _mm512_load_si512(t.lo)),
                                _mm512_load_si512(t.shift_right));
  if constexpr (D == 11) {
    const __m512i top = _mm512_sllv_epi16(_mm512_shuffle_epi8(lanes, _mm512_load_si512(t.hi)),
                                          _mm512_load_si512(t.shift_left));
    return _mm512_ternarylogic_epi32(v, top, Set1((1 << D) - 1), 0xA8);  // (v | top) & mask
  } else {
    static_assert(D == 4 || D == 5 || D == 10 || D == 12);  // value within two bytes
    return _mm512_and_si512(v, Set1((1 << D) - 1));
  }
}

// Decompress_D(y) = (q·y + 2^(D-1)) >> D = vpmulhrsw(y·2^(12-D), 8q): (y·q·2^(15-D) + 2^14) >> 15,
// exact, with both factors below 2^15.
template <int D>
void DecodeDecompressD(Poly& a, const uint8_t* in) {
  for (int g = 0; g < kN / 32; ++g) {
    const __m512i y = _mm512_slli_epi16(Unpack32<D>(in, g), 12 - D);
    Store(a.c + 32 * g, _mm512_mulhrs_epi16(y, Set1(8 * kQ)));
  }
}

}  // namespace

void PolyDecode12(Poly& a, const uint8_t in[kPolyBytes]) {
  for (int g = 0; g < kN / 32; ++g) {
    Store(a.c + 32 * g, CondAddQ(_mm512_sub_epi16(Unpack32<12>(in, g), Set1(kQ))));
  }
}

bool DecodeEncapsKeyPoly(Poly& a, const uint8_t in[kPolyBytes]) {
  __mmask32 bad = 0;
  for (int g = 0; g < kN / 32; ++g) {
    const __m512i v = Unpack32<12>(in, g);
    bad |= _mm512_cmpgt_epi16_mask(v, Set1(kQ - 1));
    Store(a.c + 32 * g, v);
  }
  return bad == 0;
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

void PolyEncode12(uint8_t out[kPolyBytes], const Poly& a) {
  for (int g = 0; g < kN / 32; ++g) PackGroup<12>(out, g, Load(a.c + 32 * g));
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

void PolyAddCompressEncode(int d, uint8_t* out, Poly& a, const Poly& b, const uint8_t* m) {
  m != nullptr ? AddCompressEncodeM<true>(d, out, a, b, m)
               : AddCompressEncodeM<false>(d, out, a, b, nullptr);
}

// ---- Messages and the constant-time compare -----------------------------------------------------

namespace {
// Compress_1 of 32 canonical values as a bit mask: 1 exactly for x in [833, 2496], i.e. x - 833
// (unsigned) below 1664.
PQCD_INLINE uint32_t MessageBits(__m512i x) {
  return _cvtmask32_u32(_mm512_cmplt_epu16_mask(_mm512_sub_epi16(x, Set1(833)), Set1(1664)));
}
}  // namespace

void PolyFromMessage(Poly& a, const uint8_t m[kSymBytes]) {
  for (int g = 0; g < kN / 32; ++g) {
    uint32_t bits;
    std::memcpy(&bits, m + 4 * g, 4);
    Store(a.c + 32 * g, _mm512_maskz_mov_epi16(_cvtu32_mask32(bits), Set1((kQ + 1) / 2)));
  }
}

void PolyToMessage(uint8_t m[kSymBytes], const Poly& a) {
  for (int g = 0; g < kN / 32; ++g) {
    const uint32_t bits = MessageBits(Load(a.c + 32 * g));
    std::memcpy(m + 4 * g, &bits, 4);
  }
}

void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w) {
  // As PolySub, PolyReduceCanonical, PolyToMessage.
  for (int g = 0; g < kN / 32; ++g) {
    const __m512i x = CondAddQ(Barrett(_mm512_sub_epi16(Load(v.c + 32 * g), Load(w.c + 32 * g))));
    const uint32_t bits = MessageBits(x);
    std::memcpy(m + 4 * g, &bits, 4);
  }
}

namespace {
PQCD_INLINE __m256i LoadU256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
PQCD_INLINE __m128i LoadU128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
}  // namespace

uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n) {
  __m512i acc = _mm512_setzero_si512();
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc = _mm512_ternarylogic_epi64(acc, _mm512_loadu_si512(a + i), _mm512_loadu_si512(b + i),
                                    0xF6);  // acc | (a ^ b)
  }
  // The last n % 64 bytes (n is public): 32 and 16 at a time, then bytes.
  if (i + 32 <= n) {
    acc = _mm512_ternarylogic_epi64(acc, _mm512_zextsi256_si512(LoadU256(a + i)),
                                    _mm512_zextsi256_si512(LoadU256(b + i)), 0xF6);
    i += 32;
  }
  if (i + 16 <= n) {
    acc = _mm512_ternarylogic_epi64(acc, _mm512_zextsi128_si512(LoadU128(a + i)),
                                    _mm512_zextsi128_si512(LoadU128(b + i)), 0xF6);
    i += 16;
  }
  uint32_t tail = 0;
  for (; i < n; ++i) tail |= static_cast<uint32_t>(a[i] ^ b[i]);
  // A qword mask, then 0xff iff nonzero, without a branch on it.
  const uint32_t any = _cvtmask8_u32(_mm512_test_epi64_mask(acc, acc)) | tail;
  return static_cast<uint8_t>(0u - ((any | (0u - any)) >> 31));
}

// ---- Sampling ---------------------------------------------------------------------------------

namespace {

// SamplePolyCBD_2 on 128 bytes: per byte, two 4-bit fields (x: bits 0-1, y: bits 2-3) -> x - y.
// 32-byte loads: the buffer was just written by the Keccak lane extraction with 32-byte stores,
// and a 64-byte load spanning two of them would not be forwarded from the store buffer (measured
// slower than AVX2 that way).
void Cbd2(Poly& a, const uint8_t* buf) {
  const __m256i m55 = _mm256_set1_epi8(0x55), m33 = _mm256_set1_epi8(0x33);
  const __m512i nibbles = _mm512_set1_epi32(0x000F000F), three = Set1(3);
  for (int h = 0; h < 4; ++h) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(buf + 32 * h));
    // Per 2-bit field: number of set bits; per nibble x - y + 3 in [1, 5].
    const __m256i d =
        _mm256_add_epi8(_mm256_and_si256(v, m55), _mm256_and_si256(_mm256_srli_epi16(v, 1), m55));
    const __m256i e = _mm256_sub_epi8(_mm256_add_epi8(_mm256_and_si256(d, m33), m33),
                                      _mm256_and_si256(_mm256_srli_epi16(d, 2), m33));
    const __m128i parts[2] = {_mm256_castsi256_si128(e), _mm256_extracti128_si256(e, 1)};
    for (int k = 0; k < 2; ++k) {
      // One byte per dword -> low nibble in the low word, high nibble in the high word.
      const __m512i t = _mm512_cvtepu8_epi32(parts[k]);
      const __m512i c = _mm512_and_si512(_mm512_or_si512(t, _mm512_slli_epi32(t, 12)), nibbles);
      Store(a.c + 64 * h + 32 * k, _mm512_sub_epi16(c, three));
    }
  }
}

// SamplePolyCBD_3 on 192 bytes: per 3 bytes, four 6-bit fields (x: 3 bits, y: 3 bits) -> x - y.
// 24 bytes per register: qword j takes bytes 3j..3j+2 (128-bit lane L holds bytes 6L..6L+5, from
// qwords {0,1}, {0,1}, {1,2}, {2,3} of the 32 bytes read).
struct Cbd3Tables {
  uint64_t qwords[8];
  uint8_t bytes[64];
};
consteval Cbd3Tables MakeCbd3Tables() {
  Cbd3Tables t{{0, 1, 0, 1, 1, 2, 2, 3}, {}};
  constexpr int kLaneBase[4] = {0, 0, 8, 16};
  for (int j = 0; j < 8; ++j) {
    for (int b = 0; b < 8; ++b) {
      t.bytes[8 * j + b] = b < 3 ? static_cast<uint8_t>(3 * j + b - kLaneBase[j / 2]) : 0x80;
    }
  }
  return t;
}
alignas(64) constexpr Cbd3Tables kCbd3 = MakeCbd3Tables();

void Cbd3(Poly& a, const uint8_t* buf) {
  const __m512i qidx = _mm512_load_si512(kCbd3.qwords);
  const __m512i bidx = _mm512_load_si512(kCbd3.bytes);
  const __m512i m249 = _mm512_set1_epi64(0x249249);
  const __m512i m12 = _mm512_set1_epi64(0x00000FFF00000FFF);
  const __m512i m6 = _mm512_set1_epi32(0x003F003F), seven = Set1(7);
  for (int i = 0; i < 8; ++i) {
    const __m512i raw =
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(buf + 24 * i)));
    const __m512i w = _mm512_shuffle_epi8(_mm512_permutexvar_epi64(qidx, raw), bidx);
    __m512i d = _mm512_and_si512(w, m249);
    d = _mm512_add_epi64(d, _mm512_and_si512(_mm512_srli_epi64(w, 1), m249));
    d = _mm512_add_epi64(d, _mm512_and_si512(_mm512_srli_epi64(w, 2), m249));
    // 24 bits -> 12 per dword -> 6 per word (x | y << 3).
    d = _mm512_and_si512(_mm512_or_si512(d, _mm512_slli_epi64(d, 20)), m12);
    d = _mm512_and_si512(_mm512_or_si512(d, _mm512_slli_epi32(d, 10)), m6);
    Store(a.c + 32 * i, _mm512_sub_epi16(_mm512_and_si512(d, seven),
                                         _mm512_and_si512(_mm512_srli_epi16(d, 3), seven)));
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

}  // namespace pqcd::kernels::mlkem::avx512
