// The ML-DSA NTT constants, once: q^-1, the inverse NTT's scale and the twiddle table (FIPS 204
// Appendix B), computed at compile time. The portable kernels (poly.cc) and every backend
// (arch/<arch>/<isa>/mldsa/) derive their own tables from these in a constant expression (a
// backend adds the q^-1 products, the negated inverse twiddles and its per-lane layouts): each
// keeps its own internal-linkage copy in the layout and alignment it loads, so this header adds no
// symbol and no load.
//
// Constants and consteval functions only (never emitted as code): included by baseline and
// ISA-flagged translation units alike.
#pragma once

#include <array>
#include <cstdint>

#include "mldsa/poly.h"

namespace pqcd::kernels::mldsa::ntt {

// q^-1 mod 2^32.
inline constexpr int32_t kQInv = 58728449;
static_assert(static_cast<uint32_t>(kQ) * static_cast<uint32_t>(kQInv) == 1u);

// 2^64 / 256 mod q: the inverse NTT's 1/256 scaling, times 2^32 twice (one is removed by the
// Montgomery reduction, the other makes the output "to Montgomery").
inline constexpr int32_t kInvNttScale = 41978;
static_assert((static_cast<uint64_t>(kInvNttScale) * 256) % kQ ==
              ((((uint64_t{1} << 32) % kQ) * ((uint64_t{1} << 32) % kQ)) % kQ));

// ζ = 1753, a primitive 512-th root of unity mod q.
inline constexpr int32_t kZeta = 1753;

consteval uint32_t BitRev8(uint32_t x) {
  uint32_t r = 0;
  for (int i = 0; i < 8; ++i) r |= ((x >> i) & 1u) << (7 - i);
  return r;
}

// zetas[i] = ζ^BitRev8(i) · 2^32 mod q, centered: the NTT's twiddles in the order its layers use
// them (k counts up through the forward layers, down through the inverse ones, negated there).
consteval std::array<int32_t, kN> Zetas() {
  std::array<int32_t, kN> z{};
  for (uint32_t i = 0; i < kN; ++i) {
    uint64_t v = 1;
    for (uint32_t e = 0; e < BitRev8(i); ++e) v = v * kZeta % kQ;
    v = (v << 32) % kQ;  // Montgomery form
    z[i] = static_cast<int32_t>(v > static_cast<uint64_t>(kQ / 2) ? static_cast<int64_t>(v) - kQ
                                                                  : static_cast<int64_t>(v));
  }
  return z;
}
static_assert(Zetas()[1] == 25847 && Zetas()[255] == 1976782, "zeta table (FIPS 204 Appendix B)");

}  // namespace pqcd::kernels::mldsa::ntt
