// The ML-KEM NTT constants, once: the scalars of the Montgomery and Barrett arithmetic and the
// twiddle tables (FIPS 203 §4.3, Appendix A), computed at compile time. The portable kernels
// (poly.cc) and every backend (arch/<arch>/<isa>/mlkem/) derive their own tables from these in a
// constant expression (a backend lays them out per lane, with their q^-1 products): each keeps its
// own internal-linkage copy in the layout and alignment it loads, so this header adds no symbol
// and no load.
//
// Constants and consteval functions only (never emitted as code): included by baseline and
// ISA-flagged translation units alike.
#pragma once

#include <array>
#include <cstdint>

#include "mlkem/poly.h"

namespace pqcd::kernels::mlkem::ntt {

inline constexpr int32_t kQ32 = kQ;
// q^-1 mod 2^16, as a signed 16-bit value (62209 - 65536).
inline constexpr int16_t kQInv = -3327;
static_assert((kQ32 * 62209) % 65536 == 1 && 62209 - 65536 == kQInv);
// Barrett constant round(2^26 / q).
inline constexpr int16_t kBarrettV = 20159;
static_assert(kBarrettV == ((1 << 26) + kQ32 / 2) / kQ32);
// R^2 mod q (R = 2^16): a Montgomery multiplication by it gives x·R.
inline constexpr int16_t kRSquared = 1353;
static_assert(kRSquared == (int64_t{1} << 32) % kQ32);

consteval int32_t PowMod(int32_t base, int32_t exp) {
  int64_t r = 1, b = base % kQ32;
  while (exp > 0) {
    if (exp & 1) r = r * b % kQ32;
    b = b * b % kQ32;
    exp >>= 1;
  }
  return static_cast<int32_t>(r);
}
consteval int BitRev7(int k) {
  int r = 0;
  for (int i = 0; i < 7; ++i) r |= ((k >> i) & 1) << (6 - i);
  return r;
}
// x·R mod q as the representative in [-(q-1)/2, (q-1)/2].
consteval int16_t ToMontCentered(int32_t x) {
  int32_t r = static_cast<int32_t>((static_cast<int64_t>(x) << 16) % kQ32);
  if (r > kQ32 / 2) r -= kQ32;
  return static_cast<int16_t>(r);
}

// The final scale of the inverse NTT: R^2 / 128 mod q, so that the result is R · NTT^-1.
inline constexpr int16_t kInvNttScale = 1441;
static_assert(kInvNttScale == int64_t{kRSquared} * PowMod(128, kQ32 - 2) % kQ32);

// ζ = 17, a primitive 256-th root of unity mod q.
inline constexpr int32_t kZeta = 17;
static_assert(PowMod(kZeta, 128) == kQ32 - 1);

// zetas[k] = ζ^BitRev7(k) · R mod q, centered: the NTT's twiddles in the order its layers use them
// (k counts up through the forward layers, down through the inverse ones).
consteval std::array<int16_t, 128> Zetas() {
  std::array<int16_t, 128> z{};
  for (int k = 0; k < 128; ++k) z[k] = ToMontCentered(PowMod(kZeta, BitRev7(k)));
  return z;
}
// gammas[i] = ζ^(2·BitRev7(i)+1) · R mod q, centered: the moduli X^2 - gamma of the base
// multiplication (PolyMulCache).
consteval std::array<int16_t, 128> Gammas() {
  std::array<int16_t, 128> g{};
  for (int i = 0; i < 128; ++i) g[i] = ToMontCentered(PowMod(kZeta, 2 * BitRev7(i) + 1));
  return g;
}
static_assert(Zetas()[1] == -758 && Zetas()[127] == 1628 && Gammas()[0] == -1103,
              "zeta tables (FIPS 203 Appendix A, times R, centered)");

}  // namespace pqcd::kernels::mlkem::ntt
