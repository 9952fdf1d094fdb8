// ML-DSA polynomial kernels: the portable reference, the default hooks of every backend table
// (mldsa/backend.h; poly.h states the same contracts). The poly.h functions forward to the active
// table (mldsa/backend.cc); PackHint and UnpackHint (public data, no backend hook) are here.
#include "mldsa/poly.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "mldsa/backend.h"
#include "mldsa/ntt_constants.h"
#include "pqcd/kernels/common.h"

namespace pqcd::kernels::mldsa {
namespace {

using ntt::kQInv;  // q^-1 mod 2^32 (mldsa/ntt_constants.h)

// Montgomery reduction: returns a * 2^-32 mod q. In: |a| < 2^31 q. Out: |r| < q.
// t = a q^-1 mod 2^32 (as a signed 32-bit value), so a - t q is divisible by 2^32, and
// |a - t q| < 2^31 q + 2^31 q = 2^32 q.
constexpr int32_t MontgomeryReduce(int64_t a) {
  const int32_t t = static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(kQInv));
  return static_cast<int32_t>((a - static_cast<int64_t>(t) * kQ) >> 32);
}

// a mod q in [-6283008, 6283008] for a <= 2^31 - 2^22 - 1: subtracts round(a / 2^23) * q.
constexpr int32_t Reduce32Coeff(int32_t a) {
  const int32_t t = (a + (1 << 22)) >> 23;
  return a - t * kQ;
}

constexpr int32_t CAddQCoeff(int32_t a) {
  return a + ((a >> 31) & kQ);
}

// ---- NTT twiddles: zeta^brv8(i) * 2^32 mod q, centered, zeta = 1753 (FIPS 204 Appendix B), and
// the inverse NTT's scale 2^64 / 256 mod q (mldsa/ntt_constants.h). ----
constexpr std::array<int32_t, kN> kZetas = ntt::Zetas();
using ntt::kInvNttScale;

// floor(x / Divisor) for 0 <= x < 2^24 by a multiply-shift (no hardware divide on secret data).
// With M = ceil(2^48 / D) = (2^48 + e) / D, 0 <= e < D: x M / 2^48 = x / D + x e / (D 2^48), and
// x e < 2^24 * 2^20 < 2^48, so the error term is below 1/D and cannot cross an integer.
template <uint32_t Divisor>
constexpr uint32_t DivFloor24(uint32_t x) {
  static_assert(Divisor > 0 && Divisor < (1u << 20));
  constexpr uint64_t kM = ((uint64_t{1} << 48) + Divisor - 1) / Divisor;
  return static_cast<uint32_t>((static_cast<uint64_t>(x) * kM) >> 48);
}

// Decompose one coefficient (Alg. 36). In: a in [0, q).
template <int32_t Gamma2>
inline void DecomposeCoeff(int32_t a, int32_t& r1, int32_t& r0) {
  constexpr int32_t kAlpha = 2 * Gamma2;
  constexpr int32_t kM = (kQ - 1) / kAlpha;  // 16 or 44
  // r0 = a mod+- alpha lies in (-gamma2, gamma2], so r1 = ceil((a - gamma2) / alpha)
  // = floor((a + gamma2 - 1) / alpha) <= kM.
  int32_t h = static_cast<int32_t>(DivFloor24<kAlpha>(static_cast<uint32_t>(a + Gamma2 - 1)));
  int32_t l = a - h * kAlpha;
  // Corner case a - l = q - 1: r1 = 0 and r0 = l - 1 (then r0 in [-gamma2, -1]).
  const uint32_t corner = ~CtMaskNonZero(static_cast<uint32_t>(h ^ kM));
  h &= static_cast<int32_t>(~corner);
  l -= static_cast<int32_t>(corner & 1u);
  r1 = h;
  r0 = l;
}

// Little-endian bit packing of 256 coefficients into 32 * Bits bytes; map(coeff) -> [0, 2^Bits).
// Groups of G coefficients fill a whole number of bytes (G Bits <= 128 bits): the group is built
// in one 64- or 128-bit accumulator with constant shifts and written with one memcpy.
template <int Bits>
inline constexpr int kPackGroup = Bits <= 16 ? 8 : 4;
template <int Bits>
using PackWord = std::conditional_t<kPackGroup<Bits> * Bits <= 64, uint64_t, unsigned __int128>;

template <int Bits, class Map>
inline void PackCoeffs(uint8_t* out, const Poly& a, Map map) {
  static_assert(Bits >= 1 && Bits <= 24);
  constexpr int kG = kPackGroup<Bits>;
  constexpr size_t kBytes = kG * Bits / 8;
  static_assert(kG * Bits % 8 == 0 && kG * Bits <= 128);
  using W = PackWord<Bits>;
  for (int i = 0; i < kN; i += kG, out += kBytes) {
    W acc = 0;
#pragma GCC unroll 8
    for (int j = 0; j < kG; ++j) acc |= static_cast<W>(map(a.coeffs[i + j])) << (j * Bits);
    std::memcpy(out, &acc, kBytes);
  }
}

template <int Bits, class Map>
inline void UnpackCoeffs(Poly& a, const uint8_t* in, Map map) {
  static_assert(Bits >= 1 && Bits <= 24);
  constexpr int kG = kPackGroup<Bits>;
  constexpr size_t kBytes = kG * Bits / 8;
  constexpr uint32_t kMask = (uint32_t{1} << Bits) - 1;
  using W = PackWord<Bits>;
  for (int i = 0; i < kN; i += kG, in += kBytes) {
    W acc = 0;
    std::memcpy(&acc, in, kBytes);
#pragma GCC unroll 8
    for (int j = 0; j < kG; ++j) {
      a.coeffs[i + j] = map(static_cast<uint32_t>(acc >> (j * Bits)) & kMask);
    }
  }
}

template <int Eta>
inline constexpr int kEtaBits = Eta == 2 ? 3 : 4;

}  // namespace

namespace portable {

// ---- Arithmetic ------------------------------------------------------------------------------

void Ntt(Poly& p) {
  int32_t* a = p.coeffs;
  int k = 0;
  // Cooley-Tukey butterflies; each layer adds at most q to the bound (|t| < q).
  for (int len = 128; len > 0; len >>= 1) {
    for (int start = 0; start < kN; start += 2 * len) {
      const int64_t zeta = kZetas[++k];
      for (int j = start; j < start + len; ++j) {
        const int32_t t = MontgomeryReduce(zeta * a[j + len]);
        a[j + len] = a[j] - t;
        a[j] = a[j] + t;
      }
    }
  }
}

void InvNttToMont(Poly& p) {
  int32_t* a = p.coeffs;
  int k = kN;
  // Gentleman-Sande butterflies. The sums double per layer: after 8 layers |a_j| <= 256 q < 2^31.
  // Differences are reduced at once; |zeta * diff| < (q/2) * 256 q < 2^31 q.
  for (int len = 1; len < kN; len <<= 1) {
    for (int start = 0; start < kN; start += 2 * len) {
      const int64_t zeta = -kZetas[--k];
      for (int j = start; j < start + len; ++j) {
        const int32_t t = a[j];
        a[j] = t + a[j + len];
        a[j + len] = MontgomeryReduce(zeta * (t - a[j + len]));
      }
    }
  }
  for (int j = 0; j < kN; ++j) a[j] = MontgomeryReduce(static_cast<int64_t>(kInvNttScale) * a[j]);
}

void PointwiseMontgomery(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; ++i) {
    c.coeffs[i] = MontgomeryReduce(static_cast<int64_t>(a.coeffs[i]) * b.coeffs[i]);
  }
}

void PointwiseAccMontgomery(Poly& c, const Poly* a, const Poly* b, int n) {
  alignas(64) int64_t acc[kN];
  for (int i = 0; i < kN; ++i) acc[i] = static_cast<int64_t>(a[0].coeffs[i]) * b[0].coeffs[i];
  for (int j = 1; j < n; ++j) {
    for (int i = 0; i < kN; ++i) acc[i] += static_cast<int64_t>(a[j].coeffs[i]) * b[j].coeffs[i];
  }
  for (int i = 0; i < kN; ++i) c.coeffs[i] = MontgomeryReduce(acc[i]);
}

void PointwiseAccSubMontgomery(Poly& c, const Poly* a, const Poly* b, int n, const Poly& x,
                               const Poly& y) {
  for (int i = 0; i < kN; ++i) {
    int64_t acc = -static_cast<int64_t>(x.coeffs[i]) * y.coeffs[i];
    for (int j = 0; j < n; ++j) acc += static_cast<int64_t>(a[j].coeffs[i]) * b[j].coeffs[i];
    c.coeffs[i] = MontgomeryReduce(acc);
  }
}

void Reduce32(Poly& a) {
  for (int i = 0; i < kN; ++i) a.coeffs[i] = Reduce32Coeff(a.coeffs[i]);
}

void CAddQ(Poly& a) {
  for (int i = 0; i < kN; ++i) a.coeffs[i] = CAddQCoeff(a.coeffs[i]);
}

void Add(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; ++i) c.coeffs[i] = a.coeffs[i] + b.coeffs[i];
}

void Sub(Poly& c, const Poly& a, const Poly& b) {
  for (int i = 0; i < kN; ++i) c.coeffs[i] = a.coeffs[i] - b.coeffs[i];
}

void ShiftLeftD(Poly& a) {
  for (int i = 0; i < kN; ++i) a.coeffs[i] <<= kD;
}

void SplitLow9(Poly& lo, Poly& hi, const Poly& v) {
  for (int i = 0; i < kN; ++i) {
    const int32_t x = v.coeffs[i];
    const int32_t l = ((x + 256) & 511) - 256;
    hi.coeffs[i] = (x - l) >> 9;  // exact: x - l is a multiple of 2^9
    lo.coeffs[i] = l;
  }
}

uint32_t SplitLow9AddNorm(Poly& lo, Poly& hi, const Poly& v, const Poly& y, int32_t bound) {
  uint32_t bad = 0;
  for (int i = 0; i < kN; ++i) {
    const int32_t x = Reduce32Coeff(v.coeffs[i]);
    const int32_t l = ((x + 256) & 511) - 256;
    hi.coeffs[i] = (x - l) >> 9;  // exact: x - l is a multiple of 2^9
    const int32_t z = l + y.coeffs[i];
    lo.coeffs[i] = z;
    const int32_t sign = z >> 31;
    bad |= static_cast<uint32_t>(bound - 1 - ((z ^ sign) - sign)) >> 31;
  }
  return 0u - bad;
}

// ---- Rounding --------------------------------------------------------------------------------

void Power2Round(Poly& t1, Poly& t0, const Poly& t) {
  for (int i = 0; i < kN; ++i) {
    const int32_t a = t.coeffs[i];
    // t0 = a mod+- 2^13 in (-2^12, 2^12], so t1 = ceil((a - 2^12) / 2^13) = (a + 2^12 - 1) >> 13.
    const int32_t hi = (a + (1 << (kD - 1)) - 1) >> kD;
    t0.coeffs[i] = a - (hi << kD);
    t1.coeffs[i] = hi;
  }
}

template <int32_t Gamma2>
void DecomposeT(Poly& r1, Poly& r0, const Poly& r) {
  for (int i = 0; i < kN; ++i) {
    int32_t hi, lo;
    DecomposeCoeff<Gamma2>(r.coeffs[i], hi, lo);
    r1.coeffs[i] = hi;
    r0.coeffs[i] = lo;
  }
}

template <int32_t Gamma2>
unsigned MakeHintT(Poly& h, const Poly& a0, const Poly& a1) {
  unsigned count = 0;
  for (int i = 0; i < kN; ++i) {
    const int32_t lo = a0.coeffs[i];
    const uint32_t above = static_cast<uint32_t>(Gamma2 - lo) >> 31;  // lo > gamma2
    const uint32_t below = static_cast<uint32_t>(lo + Gamma2) >> 31;  // lo < -gamma2
    const uint32_t at_neg = ~CtMaskNonZero(static_cast<uint32_t>(lo + Gamma2)) &
                            CtMaskNonZero(static_cast<uint32_t>(a1.coeffs[i])) & 1u;
    const uint32_t bit = above | below | at_neg;
    h.coeffs[i] = static_cast<int32_t>(bit);
    count += bit;
  }
  return count;
}

template <int32_t Gamma2>
void UseHintT(Poly& out, const Poly& r, const Poly& h) {
  constexpr int32_t kM = (kQ - 1) / (2 * Gamma2);
  for (int i = 0; i < kN; ++i) {
    int32_t hi, lo;
    DecomposeCoeff<Gamma2>(r.coeffs[i], hi, lo);
    // h = 1: r1 + 1 if r0 > 0 else r1 - 1, modulo m.
    const int32_t positive = static_cast<int32_t>(static_cast<uint32_t>(-lo) >> 31);
    int32_t v = hi + h.coeffs[i] * (2 * positive - 1);
    v += (v >> 31) & kM;
    v -= ((kM - 1 - v) >> 31) & kM;
    out.coeffs[i] = v;
  }
}

uint32_t ExceedsNorm(const Poly& a, int32_t bound) {
  uint32_t bad = 0;
  for (int i = 0; i < kN; ++i) {
    const int32_t x = a.coeffs[i];
    const int32_t sign = x >> 31;
    const int32_t abs = (x ^ sign) - sign;
    bad |= static_cast<uint32_t>(bound - 1 - abs) >> 31;
  }
  return 0u - bad;
}

// ---- Packing ---------------------------------------------------------------------------------

void PackT1(uint8_t out[320], const Poly& t1) {
  PackCoeffs<10>(out, t1, [](int32_t c) { return static_cast<uint32_t>(c); });
}
void UnpackT1(Poly& t1, const uint8_t in[320]) {
  UnpackCoeffs<10>(t1, in, [](uint32_t v) { return static_cast<int32_t>(v); });
}

void UnpackT1Shifted(Poly& t, const uint8_t in[320]) {
  UnpackCoeffs<10>(t, in, [](uint32_t v) { return static_cast<int32_t>(v << kD); });
}

void Power2RoundPackT1(uint8_t t1_out[320], Poly& t0, const Poly& r, const Poly& s) {
  Poly t1;  // becomes public (the public key)
  for (int i = 0; i < kN; ++i) {
    const int32_t a = CAddQCoeff(Reduce32Coeff(r.coeffs[i] + s.coeffs[i]));
    const int32_t hi = (a + (1 << (kD - 1)) - 1) >> kD;
    t0.coeffs[i] = a - (hi << kD);
    t1.coeffs[i] = hi;
  }
  PackCoeffs<10>(t1_out, t1, [](int32_t c) { return static_cast<uint32_t>(c); });
}

template <int Eta>
void PackEtaT(uint8_t* out, const Poly& s) {
  PackCoeffs<kEtaBits<Eta>>(out, s, [](int32_t c) { return static_cast<uint32_t>(Eta - c); });
}

template <int Eta>
uint32_t UnpackEtaT(Poly& s, const uint8_t* in) {
  uint32_t bad = 0;
  UnpackCoeffs<kEtaBits<Eta>>(s, in, [&bad](uint32_t v) {
    bad |= static_cast<uint32_t>(2 * Eta - static_cast<int32_t>(v)) >> 31;  // v > 2 eta
    return Eta - static_cast<int32_t>(v);
  });
  return 0u - bad;
}

void PackT0(uint8_t out[416], const Poly& t0) {
  PackCoeffs<kD>(out, t0, [](int32_t c) { return static_cast<uint32_t>((1 << (kD - 1)) - c); });
}
void UnpackT0(Poly& t0, const uint8_t in[416]) {
  UnpackCoeffs<kD>(t0, in, [](uint32_t v) { return (1 << (kD - 1)) - static_cast<int32_t>(v); });
}

template <int Gamma1Bits>
void PackZT(uint8_t* out, const Poly& z) {
  PackCoeffs<Gamma1Bits + 1>(
      out, z, [](int32_t c) { return static_cast<uint32_t>((1 << Gamma1Bits) - c); });
}
template <int Gamma1Bits>
void UnpackZT(Poly& z, const uint8_t* in) {
  UnpackCoeffs<Gamma1Bits + 1>(
      z, in, [](uint32_t v) { return (1 << Gamma1Bits) - static_cast<int32_t>(v); });
}

template <int32_t Gamma2>
void PackW1T(uint8_t* out, const Poly& w1) {
  constexpr int kBits = Gamma2 == (kQ - 1) / 88 ? 6 : 4;
  static_assert(kW1PackedBytes<Gamma2> == 32 * kBits);
  PackCoeffs<kBits>(out, w1, [](int32_t c) { return static_cast<uint32_t>(c); });
}

template <int32_t Gamma2>
void DecomposePackW1T(uint8_t* out, Poly& r1, Poly& r0, const Poly& r) {
  for (int i = 0; i < kN; ++i) {
    int32_t hi, lo;
    DecomposeCoeff<Gamma2>(CAddQCoeff(r.coeffs[i]), hi, lo);
    r1.coeffs[i] = hi;
    r0.coeffs[i] = lo;
  }
  PackW1T<Gamma2>(out, r1);
}

template <int32_t Gamma2>
void UseHintPackW1T(uint8_t* out, const Poly& r, const Poly& h) {
  Poly w;  // public (verification)
  for (int i = 0; i < kN; ++i) w.coeffs[i] = CAddQCoeff(r.coeffs[i]);
  UseHintT<Gamma2>(w, w, h);
  PackW1T<Gamma2>(out, w);
}

// ---- The named kernels of mldsa/backend.h for each parameter ----------------------------------

inline constexpr int32_t kGamma2Small = (kQ - 1) / 88;  // ML-DSA-44
inline constexpr int32_t kGamma2Large = (kQ - 1) / 32;  // ML-DSA-65/87

void DecomposeSmall(Poly& r1, Poly& r0, const Poly& r) {
  DecomposeT<kGamma2Small>(r1, r0, r);
}
void DecomposeLarge(Poly& r1, Poly& r0, const Poly& r) {
  DecomposeT<kGamma2Large>(r1, r0, r);
}
unsigned MakeHintSmall(Poly& h, const Poly& a0, const Poly& a1) {
  return MakeHintT<kGamma2Small>(h, a0, a1);
}
unsigned MakeHintLarge(Poly& h, const Poly& a0, const Poly& a1) {
  return MakeHintT<kGamma2Large>(h, a0, a1);
}
void UseHintSmall(Poly& out, const Poly& r, const Poly& h) {
  UseHintT<kGamma2Small>(out, r, h);
}
void UseHintLarge(Poly& out, const Poly& r, const Poly& h) {
  UseHintT<kGamma2Large>(out, r, h);
}
void PackEta2(uint8_t* out, const Poly& s) {
  PackEtaT<2>(out, s);
}
void PackEta4(uint8_t* out, const Poly& s) {
  PackEtaT<4>(out, s);
}
uint32_t UnpackEta2(Poly& s, const uint8_t* in) {
  return UnpackEtaT<2>(s, in);
}
uint32_t UnpackEta4(Poly& s, const uint8_t* in) {
  return UnpackEtaT<4>(s, in);
}
void PackZ17(uint8_t* out, const Poly& z) {
  PackZT<17>(out, z);
}
void PackZ19(uint8_t* out, const Poly& z) {
  PackZT<19>(out, z);
}
void UnpackZ17(Poly& z, const uint8_t* in) {
  UnpackZT<17>(z, in);
}
void UnpackZ19(Poly& z, const uint8_t* in) {
  UnpackZT<19>(z, in);
}
void PackW1Small(uint8_t* out, const Poly& w1) {
  PackW1T<kGamma2Small>(out, w1);
}
void PackW1Large(uint8_t* out, const Poly& w1) {
  PackW1T<kGamma2Large>(out, w1);
}
void DecomposePackW1Small(uint8_t* out, Poly& r1, Poly& r0, const Poly& r) {
  DecomposePackW1T<kGamma2Small>(out, r1, r0, r);
}
void DecomposePackW1Large(uint8_t* out, Poly& r1, Poly& r0, const Poly& r) {
  DecomposePackW1T<kGamma2Large>(out, r1, r0, r);
}
void UseHintPackW1Small(uint8_t* out, const Poly& r, const Poly& h) {
  UseHintPackW1T<kGamma2Small>(out, r, h);
}
void UseHintPackW1Large(uint8_t* out, const Poly& r, const Poly& h) {
  UseHintPackW1T<kGamma2Large>(out, r, h);
}

}  // namespace portable

// ---- Not backend hooks ----------------------------------------------------------------------

void PackHint(uint8_t* out, const Poly* h, int k, int omega) {
  // Runs only on the accepted signature, whose hint is public.
  // Indices are collected without a branch per coefficient (every j is written, the count
  // advances only for ones), then at most omega of them are copied.
  std::memset(out, 0, static_cast<size_t>(omega + k));
  int index = 0;
  uint8_t idx[kN];
  for (int i = 0; i < k; ++i) {
    int n = 0;
    for (int j = 0; j < kN; ++j) {
      idx[n] = static_cast<uint8_t>(j);
      n += h[i].coeffs[j] != 0;
    }
    n = std::min(n, omega - index);
    std::memcpy(out + index, idx, static_cast<size_t>(n));
    index += n;
    out[omega + i] = static_cast<uint8_t>(index);
  }
}

bool UnpackHint(Poly* h, const uint8_t* in, int k, int omega) {
  for (int i = 0; i < k; ++i) std::memset(h[i].coeffs, 0, sizeof(h[i].coeffs));
  int index = 0;
  for (int i = 0; i < k; ++i) {
    const int limit = in[omega + i];
    if (limit < index || limit > omega) return false;
    const int first = index;
    for (; index < limit; ++index) {
      if (index > first && in[index - 1] >= in[index]) return false;  // strictly increasing
      h[i].coeffs[in[index]] = 1;
    }
  }
  for (; index < omega; ++index) {
    if (in[index] != 0) return false;  // padding must be zero
  }
  return true;
}

}  // namespace pqcd::kernels::mldsa
