// ML-DSA polynomial arithmetic with NEON: four int32 coefficients per 128-bit register, computing
// exactly the portable values (mldsa/poly.cc):
//  * Montgomery multiplication of 32-bit values (|a·b| < 2^31·q): (a·b − t·q) / 2^32 with
//    t = lo32(a·b)·q^-1 equals hi32(a·b) − hi32(t·q) (equal low halves). SQDMULH gives
//    2·hi32 + (bit 31 of the low half), the same bit for both products (no saturation: neither
//    product reaches 2^62), so SHSUB of the two is exact.
//  * Sums of products in int64 (SMLAL), then the same reduction as portable:
//    (acc − t·q) >> 32 with t = lo32(acc)·q^-1 (SMLSL, SHRN #32).
//  * reduce32: (a + 2^22) >> 23 is SRSHR #23 (no overflow for the documented inputs).
// Constant time: fixed-latency vector arithmetic only; the zeta tables are indexed by loop
// counters (public), and nothing branches on coefficient values.
#include <arm_neon.h>

#include <array>
#include <cstdint>

#include "arch/aarch64/neon/mldsa/mldsa_neon.h"
#include "mldsa/ntt_constants.h"

namespace pqcd::kernels::mldsa::neon {
namespace {

using ntt::kInvNttScale;
using ntt::kQInv;
// zetas[i] = 1753^BitRev8(i)·2^32 mod q, centered (FIPS 204 Appendix B in Montgomery form; from
// mldsa/ntt_constants.h).
alignas(64) constexpr std::array<int32_t, kN> kZetas = ntt::Zetas();

// a·b·2^-32 mod q lane by lane (see the top of the file).
inline int32x4_t MontMul(int32x4_t a, int32x4_t b) {
  const int32x4_t hi = vqdmulhq_s32(a, b);
  const int32x4_t t = vmulq_s32(a, vmulq_n_s32(b, kQInv));
  return vhsubq_s32(hi, vqdmulhq_n_s32(t, kQ));
}
// Montgomery reduction of two int64 sums to int32: (a − t·q) >> 32, t = lo32(a)·q^-1.
inline int32x2_t MontReduce64(int64x2_t a) {
  const int32x2_t t = vmul_n_s32(vmovn_s64(a), kQInv);
  return vshrn_n_s64(vmlsl_n_s32(a, t, kQ), 32);
}

inline void Butterfly(int32x4_t& x, int32x4_t& y, int32x4_t zeta) {
  const int32x4_t t = MontMul(zeta, y);
  y = vsubq_s32(x, t);
  x = vaddq_s32(x, t);
}
// zeta = −kZetas[...] (the inverse uses the negated twiddles).
inline void InvButterfly(int32x4_t& x, int32x4_t& y, int32x4_t zeta) {
  const int32x4_t t = x;
  x = vaddq_s32(t, y);
  y = MontMul(zeta, vsubq_s32(t, y));
}

inline int32x4_t Trn1(int32x4_t a, int32x4_t b) {  // [a.lo64, b.lo64]
  return vreinterpretq_s32_s64(vtrn1q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(b)));
}
inline int32x4_t Trn2(int32x4_t a, int32x4_t b) {  // [a.hi64, b.hi64]
  return vreinterpretq_s32_s64(vtrn2q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(b)));
}
inline int32x4_t Pair(int32_t z0, int32_t z1) {  // z0 z0 z1 z1
  return vcombine_s32(vdup_n_s32(z0), vdup_n_s32(z1));
}

}  // namespace

void Ntt(Poly& p) {
  int32_t* a = p.coeffs;
  int k = 0;
  for (int len = 128; len >= 4; len >>= 1) {
    for (int start = 0; start < kN; start += 2 * len) {
      const int32x4_t zeta = vdupq_n_s32(kZetas[++k]);
      for (int j = start; j < start + len; j += 4) {
        int32x4_t x = vld1q_s32(a + j), y = vld1q_s32(a + j + len);
        Butterfly(x, y, zeta);
        vst1q_s32(a + j, x);
        vst1q_s32(a + j + len, y);
      }
    }
  }
  // len = 2 and len = 1 on 8 coefficients at a time.
  for (int j = 0; j < kN; j += 8) {
    const int32x4_t v0 = vld1q_s32(a + j), v1 = vld1q_s32(a + j + 4);
    int32x4_t x = Trn1(v0, v1), y = Trn2(v0, v1);  // len = 2: blocks j/4, j/4 + 1
    Butterfly(x, y, Pair(kZetas[64 + j / 4], kZetas[65 + j / 4]));
    const int32x4_t w0 = Trn1(x, y), w1 = Trn2(x, y);
    x = vuzp1q_s32(w0, w1);  // len = 1: even and odd coefficients, blocks j/2 .. j/2 + 3
    y = vuzp2q_s32(w0, w1);
    Butterfly(x, y, vld1q_s32(kZetas.data() + 128 + j / 2));
    vst1q_s32(a + j, vzip1q_s32(x, y));
    vst1q_s32(a + j + 4, vzip2q_s32(x, y));
  }
}

void InvNttToMont(Poly& p) {
  int32_t* a = p.coeffs;
  const int32x4_t neg = vdupq_n_s32(0);
  // len = 1 and len = 2 on 8 coefficients at a time: block i of len = 1 uses −zetas[255 − i],
  // block i of len = 2 uses −zetas[127 − i].
  for (int j = 0; j < kN; j += 8) {
    const int32x4_t v0 = vld1q_s32(a + j), v1 = vld1q_s32(a + j + 4);
    int32x4_t x = vuzp1q_s32(v0, v1), y = vuzp2q_s32(v0, v1);
    // −zetas[255 − b − i] for i = 0..3: the four entries below 256 − b, reversed.
    const int32x4_t z1 = vld1q_s32(kZetas.data() + 252 - j / 2);
    const int32x4_t z1r = vrev64q_s32(vextq_s32(z1, z1, 2));
    InvButterfly(x, y, vsubq_s32(neg, z1r));
    const int32x4_t w0 = vzip1q_s32(x, y), w1 = vzip2q_s32(x, y);
    x = Trn1(w0, w1);
    y = Trn2(w0, w1);
    InvButterfly(x, y, vsubq_s32(neg, Pair(kZetas[127 - j / 4], kZetas[126 - j / 4])));
    vst1q_s32(a + j, Trn1(x, y));
    vst1q_s32(a + j + 4, Trn2(x, y));
  }
  int k = 64;
  for (int len = 4; len < kN; len <<= 1) {
    for (int start = 0; start < kN; start += 2 * len) {
      const int32x4_t zeta = vdupq_n_s32(-kZetas[--k]);
      for (int j = start; j < start + len; j += 4) {
        int32x4_t x = vld1q_s32(a + j), y = vld1q_s32(a + j + len);
        InvButterfly(x, y, zeta);
        vst1q_s32(a + j, x);
        vst1q_s32(a + j + len, y);
      }
    }
  }
  const int32x4_t scale = vdupq_n_s32(kInvNttScale);
  for (int j = 0; j < kN; j += 4) vst1q_s32(a + j, MontMul(vld1q_s32(a + j), scale));
}

void PointwiseMontgomery(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; i += 4) {
    vst1q_s32(c.coeffs + i, MontMul(vld1q_s32(a.coeffs + i), vld1q_s32(b.coeffs + i)));
  }
}

void PointwiseAccMontgomery(Poly& c, const Poly* a, const Poly* b, int n) {
  for (int i = 0; i < kN; i += 4) {
    int64x2_t lo = vdupq_n_s64(0), hi = lo;
    for (int j = 0; j < n; ++j) {
      const int32x4_t va = vld1q_s32(a[j].coeffs + i), vb = vld1q_s32(b[j].coeffs + i);
      lo = vmlal_s32(lo, vget_low_s32(va), vget_low_s32(vb));
      hi = vmlal_high_s32(hi, va, vb);
    }
    vst1q_s32(c.coeffs + i, vcombine_s32(MontReduce64(lo), MontReduce64(hi)));
  }
}

void PointwiseAccSubMontgomery(Poly& c, const Poly* a, const Poly* b, int n, const Poly& x,
                               const Poly& y) {
  for (int i = 0; i < kN; i += 4) {
    const int32x4_t vx = vld1q_s32(x.coeffs + i), vy = vld1q_s32(y.coeffs + i);
    int64x2_t lo = vmull_s32(vget_low_s32(vx), vget_low_s32(vy));
    int64x2_t hi = vmull_high_s32(vx, vy);
    lo = vnegq_s64(lo);
    hi = vnegq_s64(hi);
    for (int j = 0; j < n; ++j) {
      const int32x4_t va = vld1q_s32(a[j].coeffs + i), vb = vld1q_s32(b[j].coeffs + i);
      lo = vmlal_s32(lo, vget_low_s32(va), vget_low_s32(vb));
      hi = vmlal_high_s32(hi, va, vb);
    }
    vst1q_s32(c.coeffs + i, vcombine_s32(MontReduce64(lo), MontReduce64(hi)));
  }
}

void Reduce32(Poly& a) {
  for (int i = 0; i < kN; i += 4) {
    const int32x4_t v = vld1q_s32(a.coeffs + i);
    vst1q_s32(a.coeffs + i, vmlsq_n_s32(v, vrshrq_n_s32(v, 23), kQ));
  }
}

void CAddQ(Poly& a) {
  for (int i = 0; i < kN; i += 4) {
    const int32x4_t v = vld1q_s32(a.coeffs + i);
    vst1q_s32(a.coeffs + i, vaddq_s32(v, vandq_s32(vshrq_n_s32(v, 31), vdupq_n_s32(kQ))));
  }
}

void Add(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; i += 4) {
    vst1q_s32(c.coeffs + i, vaddq_s32(vld1q_s32(a.coeffs + i), vld1q_s32(b.coeffs + i)));
  }
}

void Sub(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; i += 4) {
    vst1q_s32(c.coeffs + i, vsubq_s32(vld1q_s32(a.coeffs + i), vld1q_s32(b.coeffs + i)));
  }
}

void ShiftLeftD(Poly& a) {
  static_assert(kD == 13);
  for (int i = 0; i < kN; i += 4) vst1q_s32(a.coeffs + i, vshlq_n_s32(vld1q_s32(a.coeffs + i), 13));
}

// v = lo + 2^9 hi, lo in [-256, 256): the portable formulas lane by lane (lo may alias v).
void SplitLow9(Poly& lo, Poly& hi, const Poly& v) {
  const int32x4_t h = vdupq_n_s32(256), m = vdupq_n_s32(511);
  for (int i = 0; i < kN; i += 4) {
    const int32x4_t x = vld1q_s32(v.coeffs + i);
    const int32x4_t l = vsubq_s32(vandq_s32(vaddq_s32(x, h), m), h);
    vst1q_s32(hi.coeffs + i, vshrq_n_s32(vsubq_s32(x, l), 9));
    vst1q_s32(lo.coeffs + i, l);
  }
}

uint32_t SplitLow9AddNorm(Poly& lo, Poly& hi, const Poly& v, const Poly& y, int32_t bound) {
  const int32x4_t h = vdupq_n_s32(256), m = vdupq_n_s32(511), b1 = vdupq_n_s32(bound - 1);
  uint32x4_t bad = vdupq_n_u32(0);
  for (int i = 0; i < kN; i += 4) {
    int32x4_t x = vld1q_s32(v.coeffs + i);
    x = vmlsq_n_s32(x, vrshrq_n_s32(x, 23), kQ);  // reduce32
    const int32x4_t l = vsubq_s32(vandq_s32(vaddq_s32(x, h), m), h);
    vst1q_s32(hi.coeffs + i, vshrq_n_s32(vsubq_s32(x, l), 9));
    const int32x4_t z = vaddq_s32(l, vld1q_s32(y.coeffs + i));
    vst1q_s32(lo.coeffs + i, z);
    // As exceeds_norm: bound - 1 - |z| < 0 sets bad (no branch).
    bad = vorrq_u32(bad, vshrq_n_u32(vreinterpretq_u32_s32(vsubq_s32(b1, vabsq_s32(z))), 31));
  }
  return 0u - vmaxvq_u32(bad);
}

// ---- Rounding (Alg. 35, 36, 39, 40) ----
// The portable formulas lane by lane; every select is a compare mask (CMGT/CMEQ/CMTST) and
// BIC/BSL, never a branch. Decompose's division by 2·gamma2 is the portable multiply-shift
// (x·ceil(2^48 / alpha)) >> 48 in 64-bit lanes (UMULL). The fused passes (power2round_pack_t1,
// decompose_pack_w1_*, use_hint_pack_w1_*) round into a polynomial and call the NEON packers.

namespace {
template <int32_t Gamma2>
inline void DecomposeV(int32x4_t a, int32x4_t& r1, int32x4_t& r0) {
  constexpr int32_t kAlpha = 2 * Gamma2;
  constexpr int32_t kM = (kQ - 1) / kAlpha;
  constexpr uint64_t kMul = ((uint64_t{1} << 48) + kAlpha - 1) / kAlpha;
  static_assert(kMul < (uint64_t{1} << 32));
  const uint32x4_t x = vreinterpretq_u32_s32(vaddq_s32(a, vdupq_n_s32(Gamma2 - 1)));
  const uint32x2_t m = vdup_n_u32(static_cast<uint32_t>(kMul));
  const uint32x4_t h =
      vcombine_u32(vmovn_u64(vshrq_n_u64(vmull_u32(vget_low_u32(x), m), 48)),
                   vmovn_u64(vshrq_n_u64(vmull_high_u32(x, vcombine_u32(m, m)), 48)));
  int32x4_t hi = vreinterpretq_s32_u32(h);
  int32x4_t lo = vmlsq_n_s32(a, hi, kAlpha);
  // Corner case hi = m: r1 = 0, r0 = lo - 1 (corner is all ones there, i.e. -1).
  const int32x4_t corner = vreinterpretq_s32_u32(vceqq_s32(hi, vdupq_n_s32(kM)));
  r1 = vbicq_s32(hi, corner);
  r0 = vaddq_s32(lo, corner);
}

template <int32_t Gamma2>
void DecomposeT(Poly& r1, Poly& r0, const Poly& r) {
  for (int i = 0; i < kN; i += 4) {
    int32x4_t hi, lo;
    DecomposeV<Gamma2>(vld1q_s32(r.coeffs + i), hi, lo);
    vst1q_s32(r1.coeffs + i, hi);
    vst1q_s32(r0.coeffs + i, lo);
  }
}

template <int32_t Gamma2>
unsigned MakeHintT(Poly& h, const Poly& a0, const Poly& a1) {
  uint32x4_t count = vdupq_n_u32(0);
  const int32x4_t g = vdupq_n_s32(Gamma2), neg_g = vdupq_n_s32(-Gamma2);
  for (int i = 0; i < kN; i += 4) {
    const int32x4_t lo = vld1q_s32(a0.coeffs + i), hi = vld1q_s32(a1.coeffs + i);
    const uint32x4_t outside = vorrq_u32(vcgtq_s32(lo, g), vcltq_s32(lo, neg_g));
    const uint32x4_t at_neg = vandq_u32(vceqq_s32(lo, neg_g), vtstq_s32(hi, hi));
    const uint32x4_t bit = vshrq_n_u32(vorrq_u32(outside, at_neg), 31);
    vst1q_s32(h.coeffs + i, vreinterpretq_s32_u32(bit));
    count = vaddq_u32(count, bit);
  }
  return vaddvq_u32(count);
}

template <int32_t Gamma2>
inline int32x4_t UseHintV(int32x4_t r, int32x4_t hv) {
  constexpr int32_t kM = (kQ - 1) / (2 * Gamma2);
  const int32x4_t m = vdupq_n_s32(kM);
  int32x4_t hi, lo;
  DecomposeV<Gamma2>(r, hi, lo);
  // r1 + h where r0 > 0, r1 - h elsewhere; then into [0, m).
  int32x4_t v = vaddq_s32(hi, vbslq_s32(vcgtq_s32(lo, vdupq_n_s32(0)), hv, vnegq_s32(hv)));
  v = vaddq_s32(v, vandq_s32(vshrq_n_s32(v, 31), m));
  return vsubq_s32(v, vandq_s32(vshrq_n_s32(vsubq_s32(vdupq_n_s32(kM - 1), v), 31), m));
}

template <int32_t Gamma2>
void UseHintT(Poly& out, const Poly& r, const Poly& h) {
  for (int i = 0; i < kN; i += 4) {
    vst1q_s32(out.coeffs + i, UseHintV<Gamma2>(vld1q_s32(r.coeffs + i), vld1q_s32(h.coeffs + i)));
  }
}

inline int32x4_t CAddQV(int32x4_t v) {
  return vaddq_s32(v, vandq_s32(vshrq_n_s32(v, 31), vdupq_n_s32(kQ)));
}

// The fused passes: the vector rounding into a polynomial, then the NEON packer (pack_neon.cc).
template <int32_t Gamma2>
void DecomposePackW1T(uint8_t* out, Poly& r1, Poly& r0, const Poly& r) {
  for (int i = 0; i < kN; i += 4) {
    int32x4_t hi, lo;
    DecomposeV<Gamma2>(CAddQV(vld1q_s32(r.coeffs + i)), hi, lo);
    vst1q_s32(r1.coeffs + i, hi);
    vst1q_s32(r0.coeffs + i, lo);
  }
  if constexpr (Gamma2 == (kQ - 1) / 88) {
    neon::PackW1Small(out, r1);
  } else {
    neon::PackW1Large(out, r1);
  }
}

template <int32_t Gamma2>
void UseHintPackW1T(uint8_t* out, const Poly& r, const Poly& h) {
  Poly w;  // public (verification)
  for (int i = 0; i < kN; i += 4) {
    vst1q_s32(w.coeffs + i,
              UseHintV<Gamma2>(CAddQV(vld1q_s32(r.coeffs + i)), vld1q_s32(h.coeffs + i)));
  }
  if constexpr (Gamma2 == (kQ - 1) / 88) {
    neon::PackW1Small(out, w);
  } else {
    neon::PackW1Large(out, w);
  }
}
}  // namespace

void Power2Round(Poly& t1, Poly& t0, const Poly& t) {
  for (int i = 0; i < kN; i += 4) {
    const int32x4_t a = vld1q_s32(t.coeffs + i);
    const int32x4_t hi = vshrq_n_s32(vaddq_s32(a, vdupq_n_s32((1 << (kD - 1)) - 1)), kD);
    vst1q_s32(t0.coeffs + i, vsubq_s32(a, vshlq_n_s32(hi, kD)));
    vst1q_s32(t1.coeffs + i, hi);
  }
}

void Power2RoundPackT1(uint8_t* t1_out, Poly& t0, const Poly& r, const Poly& s) {
  Poly t1;  // becomes public (the public key)
  for (int i = 0; i < kN; i += 4) {
    int32x4_t a = vaddq_s32(vld1q_s32(r.coeffs + i), vld1q_s32(s.coeffs + i));
    a = CAddQV(vmlsq_n_s32(a, vrshrq_n_s32(a, 23), kQ));  // reduce32, caddq
    const int32x4_t hi = vshrq_n_s32(vaddq_s32(a, vdupq_n_s32((1 << (kD - 1)) - 1)), kD);
    vst1q_s32(t0.coeffs + i, vsubq_s32(a, vshlq_n_s32(hi, kD)));
    vst1q_s32(t1.coeffs + i, hi);
  }
  neon::PackT1(t1_out, t1);
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
  // |x| (ABS wraps INT32_MIN like the portable (x ^ sign) - sign); bound - 1 - |x| < 0 sets bad.
  uint32x4_t bad = vdupq_n_u32(0);
  const int32x4_t b1 = vdupq_n_s32(bound - 1);
  for (int i = 0; i < kN; i += 4) {
    const int32x4_t d = vsubq_s32(b1, vabsq_s32(vld1q_s32(a.coeffs + i)));
    bad = vorrq_u32(bad, vshrq_n_u32(vreinterpretq_u32_s32(d), 31));
  }
  return 0u - vmaxvq_u32(bad);
}

}  // namespace pqcd::kernels::mldsa::neon
