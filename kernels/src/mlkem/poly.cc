// ML-KEM polynomial arithmetic: the portable kernels, the default hooks of every backend table
// (mlkem/backend.h, which states the contracts). The poly.h functions forward to the active table
// (mlkem/backend.cc).
#include "mlkem/poly.h"

#include <array>
#include <cstring>

#include "mlkem/backend.h"
#include "mlkem/ntt_constants.h"
#include "pqcd/kernels/common.h"

namespace pqcd::kernels::mlkem {
namespace {

// ---- Constants --------------------------------------------------------------------------------

// The scalars and twiddles of mlkem/ntt_constants.h: zetas[k] = ζ^BitRev7(k) · R mod q and
// gammas[i] = ζ^(2·BitRev7(i)+1) · R mod q, centered.
using ntt::kBarrettV;
using ntt::kInvNttScale;
using ntt::kQ32;
using ntt::kQInv;
using ntt::kRSquared;
alignas(64) constexpr std::array<int16_t, 128> kZetas = ntt::Zetas();
alignas(64) constexpr std::array<int16_t, 128> kGammas = ntt::Gammas();

// ---- Scalar reductions (file-local on purpose: never shared with an ISA-specific file) --------

// Montgomery reduction: returns a·R^-1 mod q. In: |a| < q·2^15. Out: |r| < q.
inline int16_t MontgomeryReduce(int32_t a) {
  const int16_t t = static_cast<int16_t>(static_cast<int16_t>(a) * kQInv);
  return static_cast<int16_t>((a - static_cast<int32_t>(t) * kQ32) >> 16);
}
// Montgomery multiplication: a·b·R^-1 mod q. In: |a·b| < q·2^15. Out: |r| < q.
inline int16_t FqMul(int16_t a, int16_t b) {
  return MontgomeryReduce(static_cast<int32_t>(a) * b);
}
// Barrett reduction. In: any int16. Out: centered representative in [-(q-1)/2, (q-1)/2].
inline int16_t BarrettReduce(int16_t a) {
  const int32_t t = (kBarrettV * a + (1 << 25)) >> 26;
  return static_cast<int16_t>(a - t * kQ32);
}
// Adds q to negative values. In: (-q, q). Out: [0, q).
inline int16_t CondAddQ(int16_t a) {
  return static_cast<int16_t>(a + ((a >> 15) & kQ));
}

// ---- Bit packing: 8 values of D bits <-> D bytes, little-endian bit order (Alg. 3/4) ----------

template <int D>
inline void Pack8(uint8_t* out, const uint16_t v[8]) {
  unsigned __int128 acc = 0;
  for (int i = 0; i < 8; ++i) acc |= static_cast<unsigned __int128>(v[i]) << (D * i);
  for (int b = 0; b < D; ++b) out[b] = static_cast<uint8_t>(acc >> (8 * b));
}
template <int D>
inline void Unpack8(uint16_t v[8], const uint8_t* in) {
  unsigned __int128 acc = 0;
  for (int b = 0; b < D; ++b) acc |= static_cast<unsigned __int128>(in[b]) << (8 * b);
  for (int i = 0; i < 8; ++i) v[i] = static_cast<uint16_t>(acc >> (D * i)) & ((1u << D) - 1);
}

// Compress_D(x) = round(2^D/q · x) mod 2^D for x in [0, q) (§4.2.1), without division:
// round(2^D·x/q) = floor((2^(D+1)·x + q) / 2q), and n / 2q = (n·M) >> 38 with M = ceil(2^38 / 2q)
// is exact for n < 2^25 (the error term n·(M·2q − 2^38) stays below 2^38). Checked exhaustively
// in tests/kernels/test_mlkem_poly.cc.
constexpr uint64_t kCompressShift = 38;
constexpr uint64_t kCompressMul = ((uint64_t{1} << kCompressShift) + 2 * kQ32 - 1) / (2 * kQ32);
template <int D>
inline uint16_t Compress(int16_t x) {
  const uint64_t n = (static_cast<uint64_t>(static_cast<uint16_t>(x)) << (D + 1)) + kQ32;
  return static_cast<uint16_t>((n * kCompressMul) >> kCompressShift) & ((1u << D) - 1);
}
// Decompress_D(y) = round(q/2^D · y) = (q·y + 2^(D-1)) >> D (§4.2.1).
template <int D>
inline int16_t Decompress(uint16_t y) {
  return static_cast<int16_t>((static_cast<uint32_t>(y) * kQ32 + (1u << (D - 1))) >> D);
}

inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint32_t Load24(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16;
}

}  // namespace

namespace portable {

// ---- NTT --------------------------------------------------------------------------------------

void PolyNtt(Poly& a) {
  // Alg. 9 with Montgomery multiplications by zetas in Montgomery form. Each layer grows the bound
  // by less than q: input |a| < q gives |a| < 8q = 26632 after 7 layers (fits int16), and every
  // FqMul input stays below (q/2)·7q < q·2^15.
  int k = 1;
  for (int len = 128; len >= 2; len >>= 1) {
    for (int start = 0; start < kN; start += 2 * len) {
      const int16_t zeta = kZetas[k++];
      for (int j = start; j < start + len; ++j) {
        const int16_t t = FqMul(zeta, a.c[j + len]);
        a.c[j + len] = static_cast<int16_t>(a.c[j] - t);
        a.c[j] = static_cast<int16_t>(a.c[j] + t);
      }
    }
  }
  for (int i = 0; i < kN; ++i) a.c[i] = BarrettReduce(a.c[i]);
}

void PolyInvNttTimesR(Poly& a) {
  // Alg. 10. Invariant |a| < q at every layer: sums (< 2q) are Barrett-reduced, differences
  // (< 2q) go through a Montgomery multiplication by a zeta (|zeta| <= q/2).
  int k = 127;
  for (int len = 2; len <= 128; len <<= 1) {
    for (int start = 0; start < kN; start += 2 * len) {
      const int16_t zeta = kZetas[k--];
      for (int j = start; j < start + len; ++j) {
        const int16_t t = a.c[j];
        a.c[j] = BarrettReduce(static_cast<int16_t>(t + a.c[j + len]));
        a.c[j + len] = FqMul(zeta, static_cast<int16_t>(a.c[j + len] - t));
      }
    }
  }
  // Times 128^-1 (Alg. 10 step 14) and R.
  for (int i = 0; i < kN; ++i) a.c[i] = FqMul(a.c[i], kInvNttScale);
}

void PolyMulCacheCompute(PolyMulCache& cache, const Poly& b) {
  for (int i = 0; i < kN / 2; ++i) cache.c[i] = FqMul(b.c[2 * i + 1], kGammas[i]);
}

void PolyBasemulAcc(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache, int k) {
  // BaseCaseMultiply (Alg. 12) for every pair, summed over j before one Montgomery reduction:
  // c0 = Σ a0·b0 + a1·(b1·γ), c1 = Σ a0·b1 + a1·b0. With all inputs below q in absolute value the
  // sum of 2k <= 8 products is below 8·(q-1)^2 < q·2^15, the input range of MontgomeryReduce.
  alignas(64) int32_t acc0[kN / 2] = {};
  alignas(64) int32_t acc1[kN / 2] = {};
  for (int j = 0; j < k; ++j) {
    const int16_t* pa = a[j].c;
    const int16_t* pb = b[j].c;
    const int16_t* pc = cache[j].c;
    for (int i = 0; i < kN / 2; ++i) {
      const int32_t a0 = pa[2 * i], a1 = pa[2 * i + 1];
      const int32_t b0 = pb[2 * i], b1 = pb[2 * i + 1];
      acc0[i] += a0 * b0 + a1 * pc[i];
      acc1[i] += a0 * b1 + a1 * b0;
    }
  }
  for (int i = 0; i < kN / 2; ++i) {
    out.c[2 * i] = MontgomeryReduce(acc0[i]);
    out.c[2 * i + 1] = MontgomeryReduce(acc1[i]);
  }
}

void PolyToMont(Poly& a) {
  for (int i = 0; i < kN; ++i) a.c[i] = FqMul(a.c[i], kRSquared);
}

// ---- Coefficient-wise -------------------------------------------------------------------------

void PolyAdd(Poly& r, const Poly& a) {
  for (int i = 0; i < kN; ++i) r.c[i] = static_cast<int16_t>(r.c[i] + a.c[i]);
}
void PolySub(Poly& r, const Poly& a) {
  for (int i = 0; i < kN; ++i) r.c[i] = static_cast<int16_t>(r.c[i] - a.c[i]);
}
void PolyReduceCanonical(Poly& a) {
  for (int i = 0; i < kN; ++i) a.c[i] = CondAddQ(BarrettReduce(a.c[i]));
}

// ---- Encoding ---------------------------------------------------------------------------------

void PolyEncode12(uint8_t out[kPolyBytes], const Poly& a) {
  for (int i = 0; i < kN / 8; ++i) {
    uint16_t v[8];
    for (int j = 0; j < 8; ++j) v[j] = static_cast<uint16_t>(a.c[8 * i + j]);
    Pack8<12>(out + 12 * i, v);
  }
}

void PolyDecode12(Poly& a, const uint8_t in[kPolyBytes]) {
  for (int i = 0; i < kN / 8; ++i) {
    uint16_t v[8];
    Unpack8<12>(v, in + 12 * i);
    // Values are below 2^12 < 2q: one conditional subtraction, done with a mask.
    for (int j = 0; j < 8; ++j) a.c[8 * i + j] = CondAddQ(static_cast<int16_t>(v[j] - kQ));
  }
}

bool DecodeEncapsKeyPoly(Poly& a, const uint8_t in[kPolyBytes]) {
  uint16_t bad = 0;
  for (int i = 0; i < kN / 8; ++i) {
    uint16_t v[8];
    Unpack8<12>(v, in + 12 * i);
    for (int j = 0; j < 8; ++j) {
      bad |= static_cast<uint16_t>(v[j] >= kQ);
      a.c[8 * i + j] = static_cast<int16_t>(v[j]);
    }
  }
  return bad == 0;
}

template <int D>
void CompressEncodeD(uint8_t* out, const Poly& a) {
  for (int i = 0; i < kN / 8; ++i) {
    uint16_t v[8];
    for (int j = 0; j < 8; ++j) v[j] = Compress<D>(a.c[8 * i + j]);
    Pack8<D>(out + D * i, v);
  }
}

template <int D>
void DecodeDecompressD(Poly& a, const uint8_t* in) {
  for (int i = 0; i < kN / 8; ++i) {
    uint16_t v[8];
    Unpack8<D>(v, in + D * i);
    for (int j = 0; j < 8; ++j) a.c[8 * i + j] = Decompress<D>(v[j]);
  }
}

void PolyFromMessage(Poly& a, const uint8_t m[kSymBytes]) {
  for (int i = 0; i < kN; ++i) {
    const int16_t bit = static_cast<int16_t>((m[i / 8] >> (i % 8)) & 1);
    a.c[i] = static_cast<int16_t>(-bit & ((kQ + 1) / 2));  // 0 or 1665, no branch
  }
}

void PolyToMessage(uint8_t m[kSymBytes], const Poly& a) {
  for (int i = 0; i < kN / 8; ++i) {
    uint8_t byte = 0;
    for (int j = 0; j < 8; ++j) byte |= static_cast<uint8_t>(Compress<1>(a.c[8 * i + j]) << j);
    m[i] = byte;
  }
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

// SamplePolyCBD_2 (Alg. 8, eta = 2) on 128 bytes.
static void Cbd2(Poly& a, const uint8_t* buf) {
  for (int i = 0; i < kN / 8; ++i) {
    const uint32_t w = Load32(buf + 4 * i);
    const uint32_t d = (w & 0x55555555u) + ((w >> 1) & 0x55555555u);
    for (int j = 0; j < 8; ++j) {
      const int16_t x = static_cast<int16_t>((d >> (4 * j)) & 3);
      const int16_t y = static_cast<int16_t>((d >> (4 * j + 2)) & 3);
      a.c[8 * i + j] = static_cast<int16_t>(x - y);
    }
  }
}
// SamplePolyCBD_3 (Alg. 8, eta = 3) on 192 bytes.
static void Cbd3(Poly& a, const uint8_t* buf) {
  for (int i = 0; i < kN / 4; ++i) {
    const uint32_t w = Load24(buf + 3 * i);
    const uint32_t d = (w & 0x249249u) + ((w >> 1) & 0x249249u) + ((w >> 2) & 0x249249u);
    for (int j = 0; j < 4; ++j) {
      const int16_t x = static_cast<int16_t>((d >> (6 * j)) & 7);
      const int16_t y = static_cast<int16_t>((d >> (6 * j + 3)) & 7);
      a.c[4 * i + j] = static_cast<int16_t>(x - y);
    }
  }
}

int RejectUniform(int16_t* out, int wanted, const uint8_t* buf, size_t len) {
  int ctr = 0;
  for (size_t pos = 0; pos + 3 <= len && ctr < wanted; pos += 3) {
    const uint16_t d1 = static_cast<uint16_t>(buf[pos] | ((buf[pos + 1] & 0x0f) << 8));
    const uint16_t d2 = static_cast<uint16_t>((buf[pos + 1] >> 4) | (buf[pos + 2] << 4));
    if (d1 < kQ) out[ctr++] = static_cast<int16_t>(d1);
    if (d2 < kQ && ctr < wanted) out[ctr++] = static_cast<int16_t>(d2);
  }
  return ctr;
}

void Cbd(int eta, Poly& a, const uint8_t* buf) {
  if (eta == 2) {
    Cbd2(a, buf);
  } else {
    Cbd3(a, buf);
  }
}

void PolyAddCompressEncode(int d, uint8_t* out, Poly& a, const Poly& b, const uint8_t* m) {
  for (int i = 0; i < kN; ++i) {
    int16_t x = static_cast<int16_t>(a.c[i] + b.c[i]);
    if (m != nullptr) {
      const int16_t bit = static_cast<int16_t>((m[i / 8] >> (i % 8)) & 1);
      x = static_cast<int16_t>(x + (-bit & ((kQ + 1) / 2)));
    }
    a.c[i] = x;
  }
  portable::PolyReduceCanonical(a);
  portable::PolyCompressEncode(d, out, a);
}

void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w) {
  portable::PolySub(v, w);
  portable::PolyReduceCanonical(v);
  portable::PolyToMessage(m, v);
}

uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n) {
  return static_cast<uint8_t>(CtMaskNonZero(CtCompare(a, b, n)));
}

void CtSelect32(uint8_t dst[32], const uint8_t src[32], uint8_t mask) {
  CtSelect(dst, src, 32, mask);
}

}  // namespace portable

}  // namespace pqcd::kernels::mlkem
