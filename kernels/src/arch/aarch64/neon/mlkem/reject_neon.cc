// ML-KEM's rejection step of SampleNTT (FIPS 203 Alg. 7 steps 5-13) with NEON: 48 bytes (16
// triples, 32 12-bit candidates) per step. VLD3 splits the triples into their first, second and
// third bytes; d1 = b0 | (b1 & 15) << 8 and d2 = b1 >> 4 | b2 << 4 are built by byte zips, and the
// two are interleaved (d1[0], d2[0], d1[1], ...) by 16-bit zips, which is the order of Alg. 7.
// Each vector of eight candidates is compared with q; the eight acceptance bits index a table of
// TBL byte shuffles that packs the accepted lanes to the front, stored at the running count.
//
// Not constant time, by design: the input is XOF output expanded from the public seed rho (the
// matrix A), so the acceptance masks, the counts and the table indices derived from them are
// public (mlkem/backend.h lets reject_uniform branch on its data). Nothing secret reaches here.
//
// Output equals the portable RejectUniform: the first `wanted` accepted candidates in order, the
// same count. Stores of eight lanes go straight to out only while all 32 slots of a step lie below
// `wanted`; later steps go to a scratch buffer whose first wanted - count values are copied out,
// so out[wanted..) is never written.
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "arch/aarch64/neon/mlkem/poly_neon.h"

namespace pqcd::kernels::mlkem::neon {
namespace {

// kCompact[m]: TBL indices that move the 16-bit lanes whose bit is set in m to the front, in
// order (the other output lanes take byte 0xff indices, i.e. zero: scratch).
struct CompactTable {
  uint8_t idx[256][16];
};
consteval CompactTable MakeCompactTable() {
  CompactTable t{};
  for (int m = 0; m < 256; ++m) {
    int n = 0;
    for (int lane = 0; lane < 8; ++lane) {
      if ((m >> lane) & 1) {
        t.idx[m][2 * n] = static_cast<uint8_t>(2 * lane);
        t.idx[m][2 * n + 1] = static_cast<uint8_t>(2 * lane + 1);
        ++n;
      }
    }
    for (; n < 8; ++n) t.idx[m][2 * n] = t.idx[m][2 * n + 1] = 0xff;
  }
  return t;
}
alignas(16) constexpr CompactTable kCompact = MakeCompactTable();

constexpr uint16_t kLaneBits[8] = {1, 2, 4, 8, 16, 32, 64, 128};

// Stores the accepted lanes of v (those below q) at dst, eight lanes written; returns how many.
// The mask and the table index are public (see the top of the file).
inline int CompactStore(int16_t* dst, uint16x8_t v, uint16x8_t q, uint16x8_t lane_bits) {
  const uint16x8_t accept = vcltq_u16(v, q);
  const unsigned m = vaddvq_u16(vandq_u16(accept, lane_bits));
  const uint8x16_t packed = vqtbl1q_u8(vreinterpretq_u8_u16(v), vld1q_u8(kCompact.idx[m]));
  vst1q_s16(dst, vreinterpretq_s16_u8(packed));
  return __builtin_popcount(m);
}

// The 32 candidates of 48 bytes at p, accepted ones packed at dst (32 slots written); the count.
inline int Step48(int16_t* dst, const uint8_t* p, uint16x8_t q, uint16x8_t lane_bits) {
  const uint8x16x3_t b = vld3q_u8(p);
  const uint8x16_t lo4 = vdupq_n_u8(0x0f);
  const uint8x16_t d1_hi = vandq_u8(b.val[1], lo4);  // bits 8..11
  const uint8x16_t d2_lo = vorrq_u8(vshrq_n_u8(b.val[1], 4), vshlq_n_u8(b.val[2], 4));  // 0..7
  const uint8x16_t d2_hi = vshrq_n_u8(b.val[2], 4);  // bits 8..11
  // Little-endian 16-bit candidates of triples 0..7 and 8..15.
  const uint16x8_t d1a = vreinterpretq_u16_u8(vzip1q_u8(b.val[0], d1_hi));
  const uint16x8_t d1b = vreinterpretq_u16_u8(vzip2q_u8(b.val[0], d1_hi));
  const uint16x8_t d2a = vreinterpretq_u16_u8(vzip1q_u8(d2_lo, d2_hi));
  const uint16x8_t d2b = vreinterpretq_u16_u8(vzip2q_u8(d2_lo, d2_hi));
  int n = CompactStore(dst, vzip1q_u16(d1a, d2a), q, lane_bits);   // triples 0..3
  n += CompactStore(dst + n, vzip2q_u16(d1a, d2a), q, lane_bits);  // 4..7
  n += CompactStore(dst + n, vzip1q_u16(d1b, d2b), q, lane_bits);  // 8..11
  n += CompactStore(dst + n, vzip2q_u16(d1b, d2b), q, lane_bits);  // 12..15
  return n;
}

}  // namespace

int RejectUniform(int16_t* out, int wanted, const uint8_t* buf, size_t len) {
  const uint16x8_t q = vdupq_n_u16(static_cast<uint16_t>(kQ));
  const uint16x8_t lane_bits = vld1q_u16(kLaneBits);
  int ctr = 0;
  size_t pos = 0;
  // Steps whose 32 slots all lie below wanted: straight into out.
  for (; pos + 48 <= len && ctr + 32 <= wanted; pos += 48)
    ctr += Step48(out + ctr, buf + pos, q, lane_bits);
  // The rest into tmp (at most 64 slots written). If a step runs here, wanted - ctr < 32, so each
  // step starts at extra < 32 and writes 32 slots, and each triple of the scalar tail (lengths
  // that are not whole 48-byte steps) starts at extra < 32 and writes 2; if none does, the tail's
  // at most 15 triples write at most 30 slots from 0.
  alignas(16) int16_t tmp[64 + 8];
  int extra = 0;
  for (; pos + 48 <= len && ctr + extra < wanted; pos += 48) {
    extra += Step48(tmp + extra, buf + pos, q, lane_bits);
  }
  for (; pos + 3 <= len && ctr + extra < wanted; pos += 3) {
    const uint16_t d1 = static_cast<uint16_t>(buf[pos] | ((buf[pos + 1] & 0x0f) << 8));
    const uint16_t d2 = static_cast<uint16_t>((buf[pos + 1] >> 4) | (buf[pos + 2] << 4));
    tmp[extra] = static_cast<int16_t>(d1);
    extra += d1 < kQ ? 1 : 0;
    tmp[extra] = static_cast<int16_t>(d2);
    extra += d2 < kQ ? 1 : 0;
  }
  const int take = std::min(extra, wanted - ctr);
  if (take > 0) std::memcpy(out + ctr, tmp, sizeof(int16_t) * static_cast<size_t>(take));
  return ctr + std::max(take, 0);
}

}  // namespace pqcd::kernels::mlkem::neon
