// ML-DSA rejection sampling with NEON (RejNTTPoly's and RejBoundedPoly's inner loops, FIPS 204
// Alg. 30 / 31 with Alg. 14 / 15; mldsa/sample.cc has the portable loops).
//
// reject_uniform: 48 bytes (16 triples, 16 23-bit candidates) per step. VLD3 splits the triples
// into their first, second and third bytes; byte zips (the third byte masked to 7 bits, zipped
// with zero) and 16-bit zips build the 32-bit candidates in stream order, four per vector. Each
// vector is compared with q; its 4-bit acceptance mask indexes a table of TBL shuffles that moves
// the accepted lanes to the front, stored at the running count, which advances by the mask's
// popcount (a 16-entry table).
// Not constant time, by design: the input is SHAKE128 output of the public seed rho (the matrix
// A), so the masks, the table indices and the counts derived from them are public
// (mldsa/backend.h lets reject_uniform branch on its data). Nothing secret reaches it.
//
// reject_eta2/4 act on secret data (s1, s2): like the portable loop they declassify only the
// accept pattern (CtPublic), and only that pattern indexes a table or steers a store; see
// RejectEtaT below. SampleInBall's steps and expansion (secret state) are constant time by
// construction: compares and masked selects over every slot / position, no secret index or branch.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "arch/aarch64/neon/mldsa/mldsa_neon.h"
#include "pqcd/kernels/common.h"

namespace pqcd::kernels::mldsa::neon {
namespace {

// kCompact4[m]: TBL indices that move the 32-bit lanes whose bit is set in m to the front, in
// order (the other lanes: zero, scratch). kPop4[m]: the number of set bits.
struct Compact4 {
  uint8_t idx[16][16];
  uint8_t pop[16];
};
consteval Compact4 MakeCompact4() {
  Compact4 t{};
  for (int m = 0; m < 16; ++m) {
    int n = 0;
    for (int lane = 0; lane < 4; ++lane) {
      if ((m >> lane) & 1) {
        for (int b = 0; b < 4; ++b) t.idx[m][4 * n + b] = static_cast<uint8_t>(4 * lane + b);
        ++n;
      }
    }
    t.pop[m] = static_cast<uint8_t>(n);
    for (; n < 4; ++n) {
      for (int b = 0; b < 4; ++b) t.idx[m][4 * n + b] = 0xff;
    }
  }
  return t;
}
alignas(16) constexpr Compact4 kCompact4 = MakeCompact4();
alignas(16) constexpr uint32_t kLaneBits4[4] = {1, 2, 4, 8};

// Stores the lanes of v below q at dst (four lanes written); returns how many. Public data only.
inline int CompactStoreUniform(int32_t* dst, uint32x4_t v, uint32x4_t q, uint32x4_t lane_bits) {
  const unsigned m = vaddvq_u32(vandq_u32(vcltq_u32(v, q), lane_bits));
  vst1q_u8(reinterpret_cast<uint8_t*>(dst),
           vqtbl1q_u8(vreinterpretq_u8_u32(v), vld1q_u8(kCompact4.idx[m])));
  return kCompact4.pop[m];
}

// ---- reject_eta2/4 (secret data) ----
// kCompact8[m]: TBL byte indices that move the bytes whose bit is set in m to the front, in order
// (the other lanes: 0xff, i.e. zero).
struct Compact8 {
  uint8_t idx[256][8];
  uint8_t pop[256];
};
consteval Compact8 MakeCompact8() {
  Compact8 t{};
  for (int m = 0; m < 256; ++m) {
    int n = 0;
    for (int lane = 0; lane < 8; ++lane) {
      if ((m >> lane) & 1) t.idx[m][n++] = static_cast<uint8_t>(lane);
    }
    t.pop[m] = static_cast<uint8_t>(n);
    for (; n < 8; ++n) t.idx[m][n] = 0xff;
  }
  return t;
}
alignas(16) constexpr Compact8 kCompact8 = MakeCompact8();
alignas(16) constexpr uint8_t kByteBits[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                               1, 2, 4, 8, 16, 32, 64, 128};

// CoeffFromHalfByte (Alg. 15) as in sample.cc: the coefficient of half-byte b < 16 and its accept
// bit, branch-free.
template <int Eta>
inline int32_t ScalarCoeff(uint32_t b, uint32_t& accept) {
  if constexpr (Eta == 2) {
    accept = static_cast<uint32_t>(static_cast<int32_t>(b) - 15) >> 31;  // b < 15
    const uint32_t mod5 = b - 5 * ((b * 205) >> 10);
    return 2 - static_cast<int32_t>(mod5);
  } else {
    accept = static_cast<uint32_t>(static_cast<int32_t>(b) - 9) >> 31;  // b < 9
    return 4 - static_cast<int32_t>(b);
  }
}

// The 16 half-bytes of 8 bytes in stream order (byte i: lanes 2i (low half), 2i + 1 (high)).
inline uint8x16_t HalfBytes(const uint8_t* p) {
  const uint8x8_t v = vld1_u8(p);
  const uint8x8_t lo = vand_u8(v, vdup_n_u8(15)), hi = vshr_n_u8(v, 4);
  return vcombine_u8(vzip1_u8(lo, hi), vzip2_u8(lo, hi));
}

// The coefficients as signed bytes: eta - b (eta 4), 2 - (b mod 5) (eta 2; b mod 5 by two
// compare-and-subtract steps, exact for every accepted b < 15).
template <int Eta>
inline int8x16_t EtaCoeffs(uint8x16_t b) {
  if constexpr (Eta == 2) {
    const uint8x16_t five = vdupq_n_u8(5);
    uint8x16_t r = vsubq_u8(b, vandq_u8(vcgtq_u8(b, vdupq_n_u8(4)), five));
    r = vsubq_u8(r, vandq_u8(vcgtq_u8(b, vdupq_n_u8(9)), five));
    return vsubq_s8(vdupq_n_s8(2), vreinterpretq_s8_u8(r));
  } else {
    return vsubq_s8(vdupq_n_s8(4), vreinterpretq_s8_u8(b));
  }
}

// Eight signed-byte coefficients compacted by the (declassified) pattern m, widened and stored as
// eight int32 at dst; returns how many are accepted.
inline int CompactStoreEta(int32_t* dst, int8x8_t c, unsigned m) {
  const int8x8_t packed = vtbl1_s8(c, vreinterpret_s8_u8(vld1_u8(kCompact8.idx[m])));
  const int16x8_t w = vmovl_s8(packed);
  vst1q_s32(dst, vmovl_s16(vget_low_s16(w)));
  vst1q_s32(dst + 4, vmovl_high_s16(w));
  return kCompact8.pop[m];
}

// RejBoundedPoly's inner loop. As the portable loop (sample.cc): the accept bits of a chunk of 256
// bytes are computed first without branches (vector compares), and that accept pattern, which is
// independent of the accepted values, is declassified with one CtPublic() call over the same bits
// as the portable code. Only then do the pattern's bytes index the compaction table and steer the
// stores and the count; the coefficient values go through vector arithmetic and TBL lanes only
// (never an index, address or branch). Stores of eight lanes run while they stay below a[256];
// the lanes past the accepted ones are zero (scratch, a[new count..256) may be overwritten). The
// end of a polynomial and the bytes of a chunk that are not a whole 8-byte unit go one half-byte at
// a time, steered by the public pattern only, as in the portable loop.
template <int Eta>
int RejectEtaT(int32_t* a, int count, const uint8_t* buf, size_t len) {
  constexpr size_t kChunkBytes = 256;
  uint64_t bits[2 * kChunkBytes / 64];
  const uint8x16_t bound = vdupq_n_u8(Eta == 2 ? 15 : 9);
  const uint8x16_t byte_bits = vld1q_u8(kByteBits);
  size_t pos = 0;
  while (pos < len && count < kN) {
    const size_t chunk = len - pos < kChunkBytes ? len - pos : kChunkBytes;
    const uint8_t* p = buf + pos;
    const size_t words = (2 * chunk + 63) / 64;
    const size_t units = chunk / 8;
    for (size_t w = 0; w < words; ++w) bits[w] = 0;
    for (size_t u = 0; u < units; ++u) {
      const uint8x16_t acc = vandq_u8(vcltq_u8(HalfBytes(p + 8 * u), bound), byte_bits);
      const uint64_t m = vaddv_u8(vget_low_u8(acc)) | uint64_t{vaddv_u8(vget_high_u8(acc))} << 8;
      bits[u / 4] |= m << (16 * (u % 4));
    }
    for (size_t i = 8 * units; i < chunk; ++i) {
      uint32_t accept0, accept1;
      ScalarCoeff<Eta>(p[i] & 15u, accept0);
      ScalarCoeff<Eta>(static_cast<uint32_t>(p[i]) >> 4, accept1);
      bits[i / 32] |= static_cast<uint64_t>(accept0 | accept1 << 1) << (2 * (i % 32));
    }
    CtPublic(bits, words * sizeof(bits[0]));
    size_t i = 0;  // half-byte index in the chunk
    for (size_t u = 0; u < units && count <= kN - 16; ++u, i += 16) {
      const unsigned m = static_cast<unsigned>(bits[u / 4] >> (16 * (u % 4))) & 0xffffu;
      const int8x16_t c = EtaCoeffs<Eta>(HalfBytes(p + 8 * u));
      count += CompactStoreEta(a + count, vget_low_s8(c), m & 0xffu);
      count += CompactStoreEta(a + count, vget_high_s8(c), m >> 8);
    }
    for (; i < 2 * chunk && count < kN; ++i) {
      const uint32_t byte = p[i / 2];
      uint32_t unused;
      const int32_t c = ScalarCoeff<Eta>(i % 2 ? byte >> 4 : byte & 15u, unused);
      if ((bits[i / 64] >> (i % 64)) & 1) a[count++] = c;
    }
    pos += chunk;
  }
  return count;
}

}  // namespace

int RejectEta2(int32_t* a, int count, const uint8_t* buf, size_t len) {
  return RejectEtaT<2>(a, count, buf, len);
}
int RejectEta4(int32_t* a, int count, const uint8_t* buf, size_t len) {
  return RejectEtaT<4>(a, count, buf, len);
}

// SampleInBall's constant-time kernels (sample.h) on secret state: the same per-candidate
// formulas as the portable ones, with the 64-slot list (pos, sgn) in four byte vectors. Per
// candidate, the accept bit is the portable branch-free scalar formula; every slot is compared
// (CMEQ) and updated by masked selects (BSL), so no address, index or branch depends on a
// candidate, a position or a sign.
void SampleInBallSteps(uint8_t* pos_io, int8_t* sgn_io, uint32_t& i_io, uint32_t first,
                       uint64_t& signs_io, const uint8_t* cand, size_t n) {
  static_assert(kBallSlots == 64);
  alignas(16) static constexpr uint8_t kLane[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                    8, 9, 10, 11, 12, 13, 14, 15};
  uint8x16_t slot_idx[4], pos[4], sgn[4];
  for (int h = 0; h < 4; ++h) {
    slot_idx[h] = vaddq_u8(vld1q_u8(kLane), vdupq_n_u8(static_cast<uint8_t>(16 * h)));
    pos[h] = vld1q_u8(pos_io + 16 * h);
    sgn[h] = vld1q_u8(reinterpret_cast<const uint8_t*>(sgn_io) + 16 * h);
  }
  uint32_t i = i_io;
  uint64_t signs = signs_io;
  // Position i and slot i - first as byte vectors; both advance by one per accepted candidate.
  uint8x16_t iv = vdupq_n_u8(static_cast<uint8_t>(i));
  uint8x16_t slotv = vdupq_n_u8(static_cast<uint8_t>(i - first));
  for (size_t t = 0; t < n; ++t) {
    const uint32_t b = cand[t];
    // accept = i <= 255 and b <= i (as the portable kernel).
    const uint32_t a = (i - 256) >> 31 & ((b - i - 1) >> 31);
    const uint8x16_t am = vdupq_n_u8(static_cast<uint8_t>(0u - a));
    const uint8x16_t bv = vdupq_n_u8(static_cast<uint8_t>(b));
    const uint8x16_t sv = vdupq_n_u8(static_cast<uint8_t>(1 - 2 * static_cast<int32_t>(signs & 1)));
    for (int h = 0; h < 4; ++h) {
      // c[i] = c[b]: the entry at position b (if any) moves to i; then (b, s) into the free slot.
      const uint8x16_t move = vandq_u8(vceqq_u8(pos[h], bv), am);
      const uint8x16_t put = vandq_u8(vceqq_u8(slot_idx[h], slotv), am);
      pos[h] = vbslq_u8(put, bv, vbslq_u8(move, iv, pos[h]));
      sgn[h] = vbslq_u8(put, sv, sgn[h]);
    }
    iv = vsubq_u8(iv, am);
    slotv = vsubq_u8(slotv, am);
    i += a;
    signs >>= a;
  }
  for (int h = 0; h < 4; ++h) {
    vst1q_u8(pos_io + 16 * h, pos[h]);
    vst1q_u8(reinterpret_cast<uint8_t*>(sgn_io) + 16 * h, sgn[h]);
  }
  i_io = i;
  signs_io = signs;
}

// c from slots [0, used): every coefficient position is compared with every used slot's position
// (CMEQ) and takes the slot's sign through an AND mask (positions are distinct), eight vectors of
// 16 positions at a time; then widened to int32. No secret index or branch (used is public: tau).
void SampleInBallExpand(Poly& c, const uint8_t* pos, const int8_t* sgn, int used) {
  alignas(16) static constexpr uint8_t kLane[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                    8, 9, 10, 11, 12, 13, 14, 15};
  const uint8x16_t lane = vld1q_u8(kLane);
  for (int half = 0; half < 2; ++half) {
    uint8x16_t idx[8], out[8];
    for (int k = 0; k < 8; ++k) {
      idx[k] = vaddq_u8(lane, vdupq_n_u8(static_cast<uint8_t>(128 * half + 16 * k)));
      out[k] = vdupq_n_u8(0);
    }
    for (int t = 0; t < used; ++t) {
      const uint8x16_t p = vdupq_n_u8(pos[t]);
      const uint8x16_t v = vdupq_n_u8(static_cast<uint8_t>(sgn[t]));
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) out[k] = vorrq_u8(out[k], vandq_u8(vceqq_u8(idx[k], p), v));
    }
    for (int k = 0; k < 8; ++k) {
      int32_t* r = c.coeffs + 128 * half + 16 * k;
      const int8x16_t o = vreinterpretq_s8_u8(out[k]);
      const int16x8_t lo = vmovl_s8(vget_low_s8(o)), hi = vmovl_high_s8(o);
      vst1q_s32(r, vmovl_s16(vget_low_s16(lo)));
      vst1q_s32(r + 4, vmovl_high_s16(lo));
      vst1q_s32(r + 8, vmovl_s16(vget_low_s16(hi)));
      vst1q_s32(r + 12, vmovl_high_s16(hi));
    }
  }
}

int RejectUniform(int32_t* a, int count, const uint8_t* buf, size_t len) {
  const uint32x4_t q = vdupq_n_u32(static_cast<uint32_t>(kQ));
  const uint32x4_t lane_bits = vld1q_u32(kLaneBits4);
  const uint8x16_t low7 = vdupq_n_u8(0x7f), zero = vdupq_n_u8(0);
  size_t pos = 0;
  // 16 candidates per step while all 16 store slots lie inside a[0..256) (slots past the new
  // count are scratch, rewritten by later steps or left past the returned count).
  for (; pos + 48 <= len && count <= kN - 16; pos += 48) {
    const uint8x16x3_t b = vld3q_u8(buf + pos);
    const uint8x16_t b2 = vandq_u8(b.val[2], low7);
    const uint16x8_t lo_a = vreinterpretq_u16_u8(vzip1q_u8(b.val[0], b.val[1]));  // bits 0..15
    const uint16x8_t lo_b = vreinterpretq_u16_u8(vzip2q_u8(b.val[0], b.val[1]));
    const uint16x8_t hi_a = vreinterpretq_u16_u8(vzip1q_u8(b2, zero));  // bits 16..22
    const uint16x8_t hi_b = vreinterpretq_u16_u8(vzip2q_u8(b2, zero));
    const uint32x4_t c0 = vreinterpretq_u32_u16(vzip1q_u16(lo_a, hi_a));  // candidates 0..3
    const uint32x4_t c1 = vreinterpretq_u32_u16(vzip2q_u16(lo_a, hi_a));  // 4..7
    const uint32x4_t c2 = vreinterpretq_u32_u16(vzip1q_u16(lo_b, hi_b));  // 8..11
    const uint32x4_t c3 = vreinterpretq_u32_u16(vzip2q_u16(lo_b, hi_b));  // 12..15
    count += CompactStoreUniform(a + count, c0, q, lane_bits);
    count += CompactStoreUniform(a + count, c1, q, lane_bits);
    count += CompactStoreUniform(a + count, c2, q, lane_bits);
    count += CompactStoreUniform(a + count, c3, q, lane_bits);
  }
  // The rest (at most 15 more coefficients, or a length that is not a whole step) one at a time.
  for (; pos + 3 <= len && count < kN; pos += 3) {
    const uint32_t t = static_cast<uint32_t>(buf[pos]) | static_cast<uint32_t>(buf[pos + 1]) << 8 |
                       static_cast<uint32_t>(buf[pos + 2] & 0x7f) << 16;
    if (t < static_cast<uint32_t>(kQ)) a[count++] = static_cast<int32_t>(t);
  }
  return count;
}

}  // namespace pqcd::kernels::mldsa::neon
