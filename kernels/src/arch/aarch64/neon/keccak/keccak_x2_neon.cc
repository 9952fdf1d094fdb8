// Keccak-f[1600] on two states at once, one state per 64-bit half of each 128-bit NEON register
// (uint64x2_t). Written from FIPS 202 §3.2: theta, rho and pi fused, chi with BIC, iota.
//
// Constant time: only fixed-latency vector operations (EOR, BIC, shifts by immediate); no branch,
// table index or memory address depends on the states.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "arch/aarch64/neon/keccak/keccak_neon.h"
#include "keccak/constants.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

constexpr const auto& kRoundConstants = keccak::kRoundConstants;
constexpr const auto& kRho = keccak::kRhoOffsets;  // indexed by word x + 5y

// pi moves word (x, y) to (y, 2x + 3y mod 5): the destination index of word i = x + 5y.
constexpr int PiDestination(int i) {
  const int x = i % 5, y = i / 5;
  return y + 5 * ((2 * x + 3 * y) % 5);
}

template <int N>
inline uint64x2_t Rol(uint64x2_t v) {
  if constexpr (N == 0) {
    return v;
  } else {
    // Shift left, then insert the bits shifted out at the bottom (SRI).
    return vsriq_n_u64(vshlq_n_u64(v, N), v, 64 - N);
  }
}

template <size_t... I>
inline void RhoPi(const uint64x2_t* a, uint64x2_t* b, std::index_sequence<I...>) {
  ((b[PiDestination(I)] = Rol<kRho[I]>(a[I])), ...);
}

inline void Round(uint64x2_t a[25], uint64_t rc) {
  uint64x2_t c[5], d[5], b[25];
  for (int x = 0; x < 5; ++x) {
    c[x] =
        veorq_u64(veorq_u64(a[x], a[x + 5]), veorq_u64(a[x + 10], veorq_u64(a[x + 15], a[x + 20])));
  }
  for (int x = 0; x < 5; ++x) d[x] = veorq_u64(c[(x + 4) % 5], Rol<1>(c[(x + 1) % 5]));
  for (int i = 0; i < 25; ++i) a[i] = veorq_u64(a[i], d[i % 5]);
  RhoPi(a, b, std::make_index_sequence<25>{});
  for (int y = 0; y < 25; y += 5) {
    for (int x = 0; x < 5; ++x) {
      // b[x + 2] & ~b[x + 1]
      a[y + x] = veorq_u64(b[y + x], vbicq_u64(b[y + (x + 2) % 5], b[y + (x + 1) % 5]));
    }
  }
  a[0] = veorq_u64(a[0], vdupq_n_u64(rc));
}

}  // namespace

void KeccakF1600x2Neon(uint64_t* st, size_t stride) {
  uint64x2_t a[25];
  for (size_t i = 0; i < 25; ++i) a[i] = vld1q_u64(st + i * stride);
  for (uint64_t rc : kRoundConstants) Round(a, rc);
  for (size_t i = 0; i < 25; ++i) vst1q_u64(st + i * stride, a[i]);
}

void KeccakF1600x4Neon(uint64_t* st, size_t stride, unsigned /*live*/) {
  KeccakF1600x2Neon(st, stride);
  KeccakF1600x2Neon(st + 2, stride);
}

void KeccakF1600x4x1Neon(uint64_t* st, size_t stride, unsigned live, uint64_t st1[25]) {
  KeccakF1600x4Neon(st, stride, live);
  KeccakF1600Portable(st1);
}

void KeccakF1600x8Neon(uint64_t* st) {
  for (size_t j = 0; j < 8; j += 2) KeccakF1600x2Neon(st + j, 8);
}

}  // namespace pqcd::kernels
