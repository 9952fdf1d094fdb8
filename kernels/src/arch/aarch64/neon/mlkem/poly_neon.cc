// ML-KEM polynomial arithmetic with NEON: eight int16 coefficients per 128-bit register. The same
// reductions as the portable kernels (mlkem/poly.cc), vectorized so that every lane computes the
// portable value exactly:
//  * Montgomery multiplication by a vector b (|a·b| < q·2^15, never a = b = -2^15):
//    (a·b − t·q) / 2^16 with t = lo16(a·b)·q^-1 equals hi16(a·b) − hi16(t·q), because the low
//    halves of a·b and t·q are equal. SQDMULH gives 2·hi16 + (bit 15 of the low half), the same
//    bit for both products, so SHSUB (halving subtract) of the two SQDMULH results is exact.
//  * Barrett: floor((v·a + 2^25) / 2^26) = (floor(v·a / 2^15) + 2^10) >> 11 (adding the dropped
//    fraction cannot cross a multiple of 2^11), i.e. SQDMULH then a rounding shift (SRSHR #11).
//  * The basemul sums in int32 (SMLAL) and one Montgomery reduction per coefficient, as portable.
// Constant time: only fixed-latency vector arithmetic; the zeta tables are indexed by the loop
// counters only (public), and there is no branch on coefficient values.
#include <arm_neon.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "arch/aarch64/neon/mlkem/poly_neon.h"
#include "mlkem/ntt_constants.h"

namespace pqcd::kernels::mlkem::neon {
namespace {

using ntt::kBarrettV;
using ntt::kInvNttScale;
using ntt::kQ32;
using ntt::kQInv;
using ntt::kRSquared;

// zetas[k] = ζ^BitRev7(k)·R mod q, gammas[i] = ζ^(2·BitRev7(i)+1)·R mod q (centered, ζ = 17), from
// mlkem/ntt_constants.h.
alignas(64) constexpr std::array<int16_t, 128> kZetas = ntt::Zetas();
alignas(64) constexpr std::array<int16_t, 128> kGammas = ntt::Gammas();

// Montgomery multiplication a·b·R^-1 mod q, lane by lane (see the top of the file).
inline int16x8_t FqMul(int16x8_t a, int16x8_t b) {
  const int16x8_t hi = vqdmulhq_s16(a, b);
  const int16x8_t t = vmulq_s16(a, vmulq_n_s16(b, kQInv));
  const int16x8_t tq = vqdmulhq_n_s16(t, kQ);
  return vhsubq_s16(hi, tq);
}
// Montgomery reduction of int32 sums (|a| < q·2^15) to int16: (a − t·q) >> 16, t = lo16(a)·q^-1.
inline int16x4_t MontgomeryReduce(int32x4_t a) {
  const int16x4_t t = vmul_n_s16(vmovn_s32(a), kQInv);
  return vshrn_n_s32(vmlsl_n_s16(a, t, kQ), 16);
}
// Centered representative of any int16.
inline int16x8_t BarrettReduce(int16x8_t a) {
  const int16x8_t t = vrshrq_n_s16(vqdmulhq_n_s16(a, kBarrettV), 11);
  return vmlsq_n_s16(a, t, kQ);
}
// (-q, q) -> [0, q): adds q where the sign bit is set (a mask, no branch).
inline int16x8_t CondAddQ(int16x8_t a) {
  return vaddq_s16(a, vandq_s16(vshrq_n_s16(a, 15), vdupq_n_s16(kQ)));
}

// One butterfly of the forward NTT: (x, y) -> (x + ζy, x − ζy).
inline void Butterfly(int16x8_t& x, int16x8_t& y, int16x8_t zeta) {
  const int16x8_t t = FqMul(zeta, y);
  y = vsubq_s16(x, t);
  x = vaddq_s16(x, t);
}
// One butterfly of the inverse NTT: (x, y) -> (Barrett(x + y), ζ(y − x)).
inline void InvButterfly(int16x8_t& x, int16x8_t& y, int16x8_t zeta) {
  const int16x8_t t = x;
  x = BarrettReduce(vaddq_s16(t, y));
  y = FqMul(zeta, vsubq_s16(y, t));
}

// Zetas for the len = 4 layer: two blocks of 8, lanes 0-3 take z[0], 4-7 take z[1].
inline int16x8_t Zetas4(const int16_t* z) {
  return vcombine_s16(vdup_n_s16(z[0]), vdup_n_s16(z[1]));
}
// Zetas for the len = 2 layer: four blocks of 4, each zeta twice (z0 z0 z1 z1 z2 z2 z3 z3).
inline int16x8_t Zetas2(const int16_t* z) {
  const int16x4_t v = vld1_s16(z);
  return vzip1q_s16(vcombine_s16(v, v), vcombine_s16(v, v));
}

}  // namespace

void PolyNtt(Poly& a) {
  int16_t* c = a.c;
  int k = 1;
  for (int len = 128; len >= 8; len >>= 1) {
    for (int start = 0; start < kN; start += 2 * len) {
      const int16x8_t zeta = vdupq_n_s16(kZetas[k++]);
      for (int j = start; j < start + len; j += 8) {
        int16x8_t x = vld1q_s16(c + j), y = vld1q_s16(c + j + len);
        Butterfly(x, y, zeta);
        vst1q_s16(c + j, x);
        vst1q_s16(c + j + len, y);
      }
    }
  }
  // len = 4 and len = 2 on 16 coefficients at a time (four 4-blocks, then eight 2-blocks).
  for (int j = 0; j < kN; j += 16) {
    const int16x8_t v0 = vld1q_s16(c + j), v1 = vld1q_s16(c + j + 8);
    // len = 4: x = first halves of the two 8-blocks, y = second halves.
    int16x8_t x =
        vreinterpretq_s16_s64(vtrn1q_s64(vreinterpretq_s64_s16(v0), vreinterpretq_s64_s16(v1)));
    int16x8_t y =
        vreinterpretq_s16_s64(vtrn2q_s64(vreinterpretq_s64_s16(v0), vreinterpretq_s64_s16(v1)));
    Butterfly(x, y, Zetas4(&kZetas[32 + j / 8]));
    // Back to coefficient order, then len = 2: x = pairs 0-1 of every 4-block, y = pairs 2-3.
    const int16x8_t w0 =
        vreinterpretq_s16_s64(vtrn1q_s64(vreinterpretq_s64_s16(x), vreinterpretq_s64_s16(y)));
    const int16x8_t w1 =
        vreinterpretq_s16_s64(vtrn2q_s64(vreinterpretq_s64_s16(x), vreinterpretq_s64_s16(y)));
    x = vreinterpretq_s16_s32(vuzp1q_s32(vreinterpretq_s32_s16(w0), vreinterpretq_s32_s16(w1)));
    y = vreinterpretq_s16_s32(vuzp2q_s32(vreinterpretq_s32_s16(w0), vreinterpretq_s32_s16(w1)));
    Butterfly(x, y, Zetas2(&kZetas[64 + j / 4]));
    x = BarrettReduce(x);
    y = BarrettReduce(y);
    vst1q_s16(c + j, vreinterpretq_s16_s32(
                         vzip1q_s32(vreinterpretq_s32_s16(x), vreinterpretq_s32_s16(y))));
    vst1q_s16(c + j + 8, vreinterpretq_s16_s32(
                             vzip2q_s32(vreinterpretq_s32_s16(x), vreinterpretq_s32_s16(y))));
  }
}

void PolyInvNttTimesR(Poly& a) {
  int16_t* c = a.c;
  // len = 2 and len = 4 on 16 coefficients at a time; zetas run downwards as in Alg. 10.
  for (int j = 0; j < kN; j += 16) {
    const int16x8_t v0 = vld1q_s16(c + j), v1 = vld1q_s16(c + j + 8);
    int16x8_t x =
        vreinterpretq_s16_s32(vuzp1q_s32(vreinterpretq_s32_s16(v0), vreinterpretq_s32_s16(v1)));
    int16x8_t y =
        vreinterpretq_s16_s32(vuzp2q_s32(vreinterpretq_s32_s16(v0), vreinterpretq_s32_s16(v1)));
    // len = 2 uses zetas[127 - i] for block i: blocks j/4 .. j/4 + 3.
    const int b2 = j / 4;
    const int16_t z2[4] = {kZetas[127 - b2], kZetas[126 - b2], kZetas[125 - b2], kZetas[124 - b2]};
    InvButterfly(x, y, Zetas2(z2));
    const int16x8_t w0 =
        vreinterpretq_s16_s32(vzip1q_s32(vreinterpretq_s32_s16(x), vreinterpretq_s32_s16(y)));
    const int16x8_t w1 =
        vreinterpretq_s16_s32(vzip2q_s32(vreinterpretq_s32_s16(x), vreinterpretq_s32_s16(y)));
    x = vreinterpretq_s16_s64(vtrn1q_s64(vreinterpretq_s64_s16(w0), vreinterpretq_s64_s16(w1)));
    y = vreinterpretq_s16_s64(vtrn2q_s64(vreinterpretq_s64_s16(w0), vreinterpretq_s64_s16(w1)));
    // len = 4 uses zetas[63 - i] for block i: blocks j/8, j/8 + 1.
    const int b4 = j / 8;
    const int16_t z4[2] = {kZetas[63 - b4], kZetas[62 - b4]};
    InvButterfly(x, y, Zetas4(z4));
    vst1q_s16(c + j, vreinterpretq_s16_s64(
                         vtrn1q_s64(vreinterpretq_s64_s16(x), vreinterpretq_s64_s16(y))));
    vst1q_s16(c + j + 8, vreinterpretq_s16_s64(
                             vtrn2q_s64(vreinterpretq_s64_s16(x), vreinterpretq_s64_s16(y))));
  }
  int k = 31;
  for (int len = 8; len <= 128; len <<= 1) {
    for (int start = 0; start < kN; start += 2 * len) {
      const int16x8_t zeta = vdupq_n_s16(kZetas[k--]);
      for (int j = start; j < start + len; j += 8) {
        int16x8_t x = vld1q_s16(c + j), y = vld1q_s16(c + j + len);
        InvButterfly(x, y, zeta);
        vst1q_s16(c + j, x);
        vst1q_s16(c + j + len, y);
      }
    }
  }
  const int16x8_t scale = vdupq_n_s16(kInvNttScale);
  for (int i = 0; i < kN; i += 8) vst1q_s16(c + i, FqMul(vld1q_s16(c + i), scale));
}

void PolyMulCacheCompute(PolyMulCache& cache, const Poly& b) {
  for (int i = 0; i < kN / 2; i += 8) {
    const int16x8x2_t v = vld2q_s16(b.c + 2 * i);  // val[1]: b[2i+1]
    vst1q_s16(cache.c + i, FqMul(v.val[1], vld1q_s16(kGammas.data() + i)));
  }
}

void PolyBasemulAcc(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache, int k) {
  // Eight coefficient pairs at a time; the sums over j stay in int32 (< q·2^15, see portable).
  for (int i = 0; i < kN / 2; i += 8) {
    int32x4_t c0lo = vdupq_n_s32(0), c0hi = c0lo, c1lo = c0lo, c1hi = c0lo;
    for (int j = 0; j < k; ++j) {
      const int16x8x2_t va = vld2q_s16(a[j].c + 2 * i);
      const int16x8x2_t vb = vld2q_s16(b[j].c + 2 * i);
      const int16x8_t vc = vld1q_s16(cache[j].c + i);
      c0lo = vmlal_s16(c0lo, vget_low_s16(va.val[0]), vget_low_s16(vb.val[0]));
      c0hi = vmlal_high_s16(c0hi, va.val[0], vb.val[0]);
      c0lo = vmlal_s16(c0lo, vget_low_s16(va.val[1]), vget_low_s16(vc));
      c0hi = vmlal_high_s16(c0hi, va.val[1], vc);
      c1lo = vmlal_s16(c1lo, vget_low_s16(va.val[0]), vget_low_s16(vb.val[1]));
      c1hi = vmlal_high_s16(c1hi, va.val[0], vb.val[1]);
      c1lo = vmlal_s16(c1lo, vget_low_s16(va.val[1]), vget_low_s16(vb.val[0]));
      c1hi = vmlal_high_s16(c1hi, va.val[1], vb.val[0]);
    }
    int16x8x2_t r;
    r.val[0] = vcombine_s16(MontgomeryReduce(c0lo), MontgomeryReduce(c0hi));
    r.val[1] = vcombine_s16(MontgomeryReduce(c1lo), MontgomeryReduce(c1hi));
    vst2q_s16(out.c + 2 * i, r);
  }
}

void PolyToMont(Poly& a) {
  const int16x8_t r2 = vdupq_n_s16(kRSquared);
  for (int i = 0; i < kN; i += 8) vst1q_s16(a.c + i, FqMul(vld1q_s16(a.c + i), r2));
}

void PolyAdd(Poly& r, const Poly& a) {
  for (int i = 0; i < kN; i += 8) {
    vst1q_s16(r.c + i, vaddq_s16(vld1q_s16(r.c + i), vld1q_s16(a.c + i)));
  }
}

void PolySub(Poly& r, const Poly& a) {
  for (int i = 0; i < kN; i += 8) {
    vst1q_s16(r.c + i, vsubq_s16(vld1q_s16(r.c + i), vld1q_s16(a.c + i)));
  }
}

void PolyReduceCanonical(Poly& a) {
  for (int i = 0; i < kN; i += 8) vst1q_s16(a.c + i, CondAddQ(BarrettReduce(vld1q_s16(a.c + i))));
}

// ---- SamplePolyCBD_eta (Alg. 8) -----------------------------------------------------------------
// Each coefficient is popcount(eta bits) − popcount(next eta bits), taken with CNT (fixed latency,
// per byte) on masked bytes: no table, no branch on the (secret) input.

namespace {
inline int8x16_t CountDiff(uint8x16_t v, uint8_t mask_x, uint8_t mask_y) {
  return vsubq_s8(vreinterpretq_s8_u8(vcntq_u8(vandq_u8(v, vdupq_n_u8(mask_x)))),
                  vreinterpretq_s8_u8(vcntq_u8(vandq_u8(v, vdupq_n_u8(mask_y)))));
}
inline void StoreWidened(int16_t* out, int8x16_t lo, int8x16_t hi) {
  vst1q_s16(out, vmovl_s8(vget_low_s8(lo)));
  vst1q_s16(out + 8, vmovl_high_s8(lo));
  vst1q_s16(out + 16, vmovl_s8(vget_low_s8(hi)));
  vst1q_s16(out + 24, vmovl_high_s8(hi));
}
}  // namespace

void Cbd(int eta, Poly& a, const uint8_t* buf) {
  if (eta == 2) {  // eta is public (the parameter set)
    // Byte i gives coefficients 2i (bits 0-1 minus bits 2-3) and 2i+1 (bits 4-5 minus 6-7).
    for (int i = 0; i < 128; i += 16) {
      const uint8x16_t v = vld1q_u8(buf + i);
      const int8x16_t even = CountDiff(v, 0x03, 0x0c), odd = CountDiff(v, 0x30, 0xc0);
      StoreWidened(a.c + 2 * i, vzip1q_s8(even, odd), vzip2q_s8(even, odd));
    }
  } else {
    // Three bytes b0 b1 b2 give four 6-bit fields (coefficients 4g .. 4g+3), each bits 0-2 minus
    // bits 3-5.
    for (int g = 0; g < 64; g += 16) {
      const uint8x16x3_t v = vld3q_u8(buf + 3 * g);
      const uint8x16_t f0 = v.val[0];
      const uint8x16_t f1 = vorrq_u8(vshrq_n_u8(v.val[0], 6), vshlq_n_u8(v.val[1], 2));
      const uint8x16_t f2 = vorrq_u8(vshrq_n_u8(v.val[1], 4), vshlq_n_u8(v.val[2], 4));
      const uint8x16_t f3 = vshrq_n_u8(v.val[2], 2);
      const int8x16_t c0 = CountDiff(f0, 0x07, 0x38), c1 = CountDiff(f1, 0x07, 0x38);
      const int8x16_t c2 = CountDiff(f2, 0x07, 0x38), c3 = CountDiff(f3, 0x07, 0x38);
      // Interleave to coefficient order c0[g] c1[g] c2[g] c3[g] c0[g+1] ... in registers.
      const int8x16_t z02l = vzip1q_s8(c0, c2), z02h = vzip2q_s8(c0, c2);
      const int8x16_t z13l = vzip1q_s8(c1, c3), z13h = vzip2q_s8(c1, c3);
      StoreWidened(a.c + 4 * g, vzip1q_s8(z02l, z13l), vzip2q_s8(z02l, z13l));
      StoreWidened(a.c + 4 * g + 32, vzip1q_s8(z02h, z13h), vzip2q_s8(z02h, z13h));
    }
  }
}

// ---- Compression and messages (§4.2.1)
// ------------------------------------------------------------ Compress_D as portable: ((x <<
// (D+1)) + q)·M >> 38 with M = ceil(2^38 / 2q), in 64-bit lanes (UMULL); Decompress_D = (q·y +
// 2^(D-1)) >> D, a rounding narrowing shift (RSHRN). The bit packing of D-bit values is the
// portable little-endian order, done with fixed shifts.

namespace {
constexpr uint32_t kCompressMul =
    static_cast<uint32_t>(((uint64_t{1} << 38) + 2 * kQ32 - 1) / (2 * kQ32));

template <int D>
inline uint16x8_t CompressV(int16x8_t x) {
  const uint16x8_t ux = vreinterpretq_u16_s16(x);
  const uint32x4_t lo = vaddq_u32(vshll_n_u16(vget_low_u16(ux), D + 1), vdupq_n_u32(kQ32));
  const uint32x4_t hi = vaddq_u32(vshll_high_n_u16(ux, D + 1), vdupq_n_u32(kQ32));
  const uint32x2_t m = vdup_n_u32(kCompressMul);
  // (n·M) >> 38 = ((n·M) >> 32) >> 6; the results are below 2^(D+1), so 16 bits hold them.
  const uint32x4_t qlo =
      vcombine_u32(vshrn_n_u64(vmull_u32(vget_low_u32(lo), m), 32),
                   vshrn_n_u64(vmull_high_u32(lo, vdupq_n_u32(kCompressMul)), 32));
  const uint32x4_t qhi =
      vcombine_u32(vshrn_n_u64(vmull_u32(vget_low_u32(hi), m), 32),
                   vshrn_n_u64(vmull_high_u32(hi, vdupq_n_u32(kCompressMul)), 32));
  const uint16x8_t r = vcombine_u16(vshrn_n_u32(qlo, 6), vshrn_n_u32(qhi, 6));
  return vandq_u16(r, vdupq_n_u16((1u << D) - 1));
}

template <int D>
inline int16x8_t DecompressV(uint16x8_t y) {
  const uint16x4_t q = vdup_n_u16(kQ);
  return vreinterpretq_s16_u16(vcombine_u16(vrshrn_n_u32(vmull_u16(vget_low_u16(y), q), D),
                                            vrshrn_n_u32(vmull_high_u16(y, vdupq_n_u16(kQ)), D)));
}

template <int D>
inline void Pack8(uint8_t* out, const uint16_t v[8]) {
  uint64_t acc = 0;  // 8·D <= 88 bits: two words
  uint64_t acc_hi = 0;
  for (int i = 0; i < 8; ++i) {
    const int bit = D * i;
    if (bit < 64) {
      acc |= static_cast<uint64_t>(v[i]) << bit;
      if (bit + D > 64) acc_hi |= static_cast<uint64_t>(v[i]) >> (64 - bit);
    } else {
      acc_hi |= static_cast<uint64_t>(v[i]) << (bit - 64);
    }
  }
  for (int b = 0; b < D; ++b) {
    out[b] = static_cast<uint8_t>(b < 8 ? acc >> (8 * b) : acc_hi >> (8 * (b - 8)));
  }
}
template <int D>
inline void Unpack8(uint16_t v[8], const uint8_t* in) {
  uint64_t acc = 0, acc_hi = 0;
  for (int b = 0; b < D; ++b) {
    if (b < 8) {
      acc |= static_cast<uint64_t>(in[b]) << (8 * b);
    } else {
      acc_hi |= static_cast<uint64_t>(in[b]) << (8 * (b - 8));
    }
  }
  for (int i = 0; i < 8; ++i) {
    const int bit = D * i;
    uint64_t x = bit < 64 ? acc >> bit : acc_hi >> (bit - 64);
    if (bit < 64 && bit + D > 64) x |= acc_hi << (64 - bit);
    v[i] = static_cast<uint16_t>(x & ((1u << D) - 1));
  }
}

template <int D>
void CompressEncodeD(uint8_t* out, const Poly& a) {
  for (int i = 0; i < kN; i += 8) {
    uint16_t v[8];
    vst1q_u16(v, CompressV<D>(vld1q_s16(a.c + i)));
    Pack8<D>(out + D * (i / 8), v);
  }
}
template <int D>
void DecodeDecompressD(Poly& a, const uint8_t* in) {
  for (int i = 0; i < kN; i += 8) {
    uint16_t v[8];
    Unpack8<D>(v, in + D * (i / 8));
    vst1q_s16(a.c + i, DecompressV<D>(vld1q_u16(v)));
  }
}

// Bit j of each lane: 1 << j.
inline uint16x8_t BitWeights() {
  const uint16_t w[8] = {1, 2, 4, 8, 16, 32, 64, 128};
  return vld1q_u16(w);
}
}  // namespace

void PolyCompressEncode(int d, uint8_t* out, const Poly& a) {
  switch (d) {  // d is public (the parameter set)
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

void PolyFromMessage(Poly& a, const uint8_t m[kSymBytes]) {
  // Lane j of group i: all ones where bit j of m[i] is set (CMTST), then AND 1665: no branch.
  const uint16x8_t w = BitWeights();
  for (int i = 0; i < kN / 8; ++i) {
    const uint16x8_t mask = vtstq_u16(vdupq_n_u16(m[i]), w);
    vst1q_s16(a.c + 8 * i, vreinterpretq_s16_u16(vandq_u16(mask, vdupq_n_u16((kQ + 1) / 2))));
  }
}

void PolyToMessage(uint8_t m[kSymBytes], const Poly& a) {
  const uint16x8_t w = BitWeights();
  for (int i = 0; i < kN / 8; ++i) {
    // Compress_1 gives 0 or 1 per lane; weight and add across the lanes (ADDV) for the byte.
    const uint16x8_t bits = CompressV<1>(vld1q_s16(a.c + 8 * i));
    m[i] = static_cast<uint8_t>(vaddvq_u16(vmulq_u16(bits, w)));
  }
}

// ---- ByteEncode12 / ByteDecode12 (Alg. 5, 6)
// ------------------------------------------------------ Three bytes hold two 12-bit values:
// LD3/ST3 split 48 bytes into the first, second and third byte of 16 groups, and LD2/ST2 split 32
// coefficients into even and odd ones.

namespace {
// The 12-bit values of 32 coefficients from 48 bytes: val[0] even, val[1] odd coefficients.
inline uint16x8x2_t Unpack12Lo(const uint8x16x3_t& v) {
  uint16x8x2_t r;
  const uint16x8_t b0 = vmovl_u8(vget_low_u8(v.val[0])), b1 = vmovl_u8(vget_low_u8(v.val[1])),
                   b2 = vmovl_u8(vget_low_u8(v.val[2]));
  r.val[0] = vorrq_u16(b0, vshlq_n_u16(vandq_u16(b1, vdupq_n_u16(0x0f)), 8));
  r.val[1] = vorrq_u16(vshrq_n_u16(b1, 4), vshlq_n_u16(b2, 4));
  return r;
}
inline uint16x8x2_t Unpack12Hi(const uint8x16x3_t& v) {
  uint16x8x2_t r;
  const uint16x8_t b0 = vmovl_high_u8(v.val[0]), b1 = vmovl_high_u8(v.val[1]),
                   b2 = vmovl_high_u8(v.val[2]);
  r.val[0] = vorrq_u16(b0, vshlq_n_u16(vandq_u16(b1, vdupq_n_u16(0x0f)), 8));
  r.val[1] = vorrq_u16(vshrq_n_u16(b1, 4), vshlq_n_u16(b2, 4));
  return r;
}
// x in [0, 2^12) < 2q: x - q, plus q where negative (portable CondAddQ(x - q)).
inline uint16x8_t ReduceOnce(uint16x8_t x) {
  return vreinterpretq_u16_s16(CondAddQ(vsubq_s16(vreinterpretq_s16_u16(x), vdupq_n_s16(kQ))));
}
}  // namespace

void PolyEncode12(uint8_t out[kPolyBytes], const Poly& a) {
  for (int i = 0; i < kN; i += 32) {
    const int16x8x2_t lo = vld2q_s16(a.c + i), hi = vld2q_s16(a.c + i + 16);
    const uint16x8_t e0 = vreinterpretq_u16_s16(lo.val[0]), o0 = vreinterpretq_u16_s16(lo.val[1]);
    const uint16x8_t e1 = vreinterpretq_u16_s16(hi.val[0]), o1 = vreinterpretq_u16_s16(hi.val[1]);
    uint8x16x3_t v;
    v.val[0] = vcombine_u8(vmovn_u16(e0), vmovn_u16(e1));
    v.val[1] = vcombine_u8(vmovn_u16(vorrq_u16(vshrq_n_u16(e0, 8), vshlq_n_u16(o0, 4))),
                           vmovn_u16(vorrq_u16(vshrq_n_u16(e1, 8), vshlq_n_u16(o1, 4))));
    v.val[2] = vcombine_u8(vmovn_u16(vshrq_n_u16(o0, 4)), vmovn_u16(vshrq_n_u16(o1, 4)));
    vst3q_u8(out + 3 * i / 2, v);
  }
}

void PolyDecode12(Poly& a, const uint8_t in[kPolyBytes]) {
  for (int i = 0; i < kN; i += 32) {
    const uint8x16x3_t v = vld3q_u8(in + 3 * i / 2);
    uint16x8x2_t lo = Unpack12Lo(v), hi = Unpack12Hi(v);
    for (uint16x8_t& x : lo.val) x = ReduceOnce(x);
    for (uint16x8_t& x : hi.val) x = ReduceOnce(x);
    vst2q_u16(reinterpret_cast<uint16_t*>(a.c + i), lo);
    vst2q_u16(reinterpret_cast<uint16_t*>(a.c + i + 16), hi);
  }
}

bool DecodeEncapsKeyPoly(Poly& a, const uint8_t in[kPolyBytes]) {
  uint16x8_t bad = vdupq_n_u16(0);
  const uint16x8_t q1 = vdupq_n_u16(kQ - 1);
  for (int i = 0; i < kN; i += 32) {
    const uint8x16x3_t v = vld3q_u8(in + 3 * i / 2);
    const uint16x8x2_t lo = Unpack12Lo(v), hi = Unpack12Hi(v);
    for (const uint16x8_t& x : lo.val) bad = vorrq_u16(bad, vcgtq_u16(x, q1));
    for (const uint16x8_t& x : hi.val) bad = vorrq_u16(bad, vcgtq_u16(x, q1));
    vst2q_u16(reinterpret_cast<uint16_t*>(a.c + i), lo);
    vst2q_u16(reinterpret_cast<uint16_t*>(a.c + i + 16), hi);
  }
  return vmaxvq_u16(bad) == 0;  // public key: the result may be branched on
}

// ---- Fused passes: the same steps as portable, each one the NEON kernel above -------------------

void PolyAddCompressEncode(int d, uint8_t* out, Poly& a, const Poly& b, const uint8_t* m) {
  if (m != nullptr) {  // whether a message is added is public (which ciphertext part this is)
    Poly mu;
    neon::PolyFromMessage(mu, m);
    neon::PolyAdd(a, mu);
  }
  neon::PolyAdd(a, b);
  neon::PolyReduceCanonical(a);
  neon::PolyCompressEncode(d, out, a);
}

void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w) {
  neon::PolySub(v, w);
  neon::PolyReduceCanonical(v);
  neon::PolyToMessage(m, v);
}

// ---- Constant-time byte helpers (Alg. 18 steps 9-11)
// --------------------------------------------- Every byte is read whatever the contents (the loop
// bounds depend on n only), the differences are OR-ed, and the mask comes from arithmetic, not a
// comparison branch.

uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n) {
  uint8x16_t acc = vdupq_n_u8(0);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) acc = vorrq_u8(acc, veorq_u8(vld1q_u8(a + i), vld1q_u8(b + i)));
  uint32_t diff = vmaxvq_u8(acc);
  for (; i < n; ++i) diff |= static_cast<uint32_t>(a[i] ^ b[i]);
  // diff != 0 -> bit 31 of (diff | -diff) is set -> 0xff; diff == 0 -> 0.
  return static_cast<uint8_t>(0u - ((diff | (0u - diff)) >> 31));
}

void CtSelect32(uint8_t dst[32], const uint8_t src[32], uint8_t mask) {
  const uint8x16_t m = vdupq_n_u8(mask);  // BSL: src bits where mask is set, dst elsewhere
  vst1q_u8(dst, vbslq_u8(m, vld1q_u8(src), vld1q_u8(dst)));
  vst1q_u8(dst + 16, vbslq_u8(m, vld1q_u8(src + 16), vld1q_u8(dst + 16)));
}

}  // namespace pqcd::kernels::mlkem::neon
