// Keccak-f[1600] with the Armv8.2-A SHA-3 instructions (FEAT_SHA3): two states per 128-bit vector,
// one state per 64-bit half of each uint64x2_t, as in the plain NEON x2 code (arch/aarch64/neon/
// keccak/keccak_x2_neon.cc), but each step is one instruction: theta's column parities with EOR3
// (three-way XOR), its D words with RAX1 (XOR with a rotate by 1), theta's XOR fused with rho's
// rotation by XAR (XOR then rotate right by an immediate), chi with BCAX (bit clear and XOR). A
// round is 10 EOR3 + 5 RAX1 + 24 XAR + 1 EOR + 25 BCAX + 1 EOR (iota) for both states, against
// about 1.5x that per state on the integer unit. Written from FIPS 202 §3.2.
//
// rho and pi run in place along pi's single 24-word cycle (word 0 stays), so that the 25 state
// vectors, the 5 D vectors and one saved word fit the 32 vector registers.
//
// Constant time: EOR3, RAX1, XAR, BCAX, EOR and the loads and stores are fixed-latency data
// operations; the rotation amounts are immediates and no branch, table index or memory address
// depends on the states (the round constants are read in a fixed order).
//
// Built with -march=armv8.2-a+sha3 (PQCD_FLAGS_neon_sha3): everything here has internal linkage or
// is one of keccak_sha3.h's entry points, and no inline function is shared with code built with
// other flags (the linker could otherwise keep a copy that uses these instructions).
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "arch/aarch64/neon_sha3/keccak/keccak_sha3.h"
#include "keccak/constants.h"

namespace pqcd::kernels {
namespace {

constexpr const auto& kRoundConstants = keccak::kRoundConstants;
constexpr const auto& kRho = keccak::kRhoOffsets;  // indexed by word x + 5y

// pi moves word (x, y) to (y, 2x + 3y mod 5): the destination index of word i = x + 5y.
constexpr int PiDestination(int i) {
  const int x = i % 5, y = i / 5;
  return y + 5 * ((2 * x + 3 * y) % 5);
}

// pi's cycle through words 1..24 walked backwards from word 1: step k writes word dst[k] from
// word src[k] (src[k] = dst[k + 1]), so every word is read before it is overwritten except the
// last step's source, word 1, which is saved before the first step.
struct PiCycle {
  int dst[24];
  int src[24];
};
consteval PiCycle MakePiCycle() {
  PiCycle c{};
  int source_of[25] = {};
  for (int i = 0; i < 25; ++i) source_of[PiDestination(i)] = i;
  int d = 1;
  for (int k = 0; k < 24; ++k) {
    c.dst[k] = d;
    c.src[k] = source_of[d];
    d = source_of[d];
  }
  if (d != 1) throw "pi does not close a 24-word cycle through word 1";
  return c;
}
constexpr PiCycle kPi = MakePiCycle();

// Step K of rho and pi: word dst = ROL(word src ^ D[src mod 5], r[src]), as XAR's rotate right by
// 64 - r (an immediate).
// Everything below is forced inline and its loops fully unrolled, so that the 25 words stay in
// registers across a round (a call or a rolled loop would index the state array in memory).
#define PQCD_SHA3_INLINE inline __attribute__((always_inline))

template <int K>
PQCD_SHA3_INLINE void RhoPiStep(uint64x2_t a[25], const uint64x2_t d[5], uint64x2_t saved_word1) {
  constexpr int src = kPi.src[K], dst = kPi.dst[K];
  static_assert(kRho[src] != 0);
  const uint64x2_t v = K == 23 ? saved_word1 : a[src];
  a[dst] = vxarq_u64(v, d[src % 5], 64 - kRho[src]);
}

template <size_t... K>
PQCD_SHA3_INLINE void RhoPi(uint64x2_t a[25], const uint64x2_t d[5], std::index_sequence<K...>) {
  const uint64x2_t saved_word1 = a[1];
  (RhoPiStep<static_cast<int>(K)>(a, d, saved_word1), ...);
}

PQCD_SHA3_INLINE void Round(uint64x2_t a[25], uint64x2_t rc) {
  // theta: column parities C[x] (two EOR3 each), D[x] = C[x - 1] ^ ROL(C[x + 1], 1) (RAX1).
  uint64x2_t c[5], d[5];
#pragma GCC unroll 5
  for (int x = 0; x < 5; ++x) {
    c[x] = veor3q_u64(veor3q_u64(a[x], a[x + 5], a[x + 10]), a[x + 15], a[x + 20]);
  }
#pragma GCC unroll 5
  for (int x = 0; x < 5; ++x) d[x] = vrax1q_u64(c[(x + 4) % 5], c[(x + 1) % 5]);
  // theta's XOR for word 0 (rho does not rotate it, pi does not move it); rho and pi fused with
  // theta's XOR for the other 24 (XAR).
  a[0] = veorq_u64(a[0], d[0]);
  RhoPi(a, d, std::make_index_sequence<24>{});
  // chi, one row of five at a time: a[x] ^= ~a[x + 1] & a[x + 2] (BCAX), two words saved.
#pragma GCC unroll 5
  for (int y = 0; y < 25; y += 5) {
    const uint64x2_t a0 = a[y], a1 = a[y + 1];
    a[y + 0] = vbcaxq_u64(a[y + 0], a[y + 2], a[y + 1]);
    a[y + 1] = vbcaxq_u64(a[y + 1], a[y + 3], a[y + 2]);
    a[y + 2] = vbcaxq_u64(a[y + 2], a[y + 4], a[y + 3]);
    a[y + 3] = vbcaxq_u64(a[y + 3], a0, a[y + 4]);
    a[y + 4] = vbcaxq_u64(a[y + 4], a1, a0);
  }
  // iota
  a[0] = veorq_u64(a[0], rc);
}

PQCD_SHA3_INLINE void Rounds(uint64x2_t a[25]) {
  for (const uint64_t& rc : kRoundConstants) Round(a, vld1q_dup_u64(&rc));
}

#undef PQCD_SHA3_INLINE

}  // namespace

void KeccakF1600x2Sha3(uint64_t* st, size_t stride) {
  uint64x2_t a[25];
#pragma GCC unroll 25
  for (size_t i = 0; i < 25; ++i) a[i] = vld1q_u64(st + i * stride);
  Rounds(a);
#pragma GCC unroll 25
  for (size_t i = 0; i < 25; ++i) vst1q_u64(st + i * stride, a[i]);
}

void KeccakF1600x1Sha3(uint64_t st[25]) {
  // The state in both halves (LD1R); the two halves stay equal and the low one is stored.
  uint64x2_t a[25];
#pragma GCC unroll 25
  for (size_t i = 0; i < 25; ++i) a[i] = vld1q_dup_u64(st + i);
  Rounds(a);
#pragma GCC unroll 25
  for (size_t i = 0; i < 25; ++i) vst1_u64(st + i, vget_low_u64(a[i]));
}

void KeccakF1600x4Sha3(uint64_t* st, size_t stride, unsigned /*live*/) {
  KeccakF1600x2Sha3(st, stride);
  KeccakF1600x2Sha3(st + 2, stride);
}

void KeccakF1600x4x1Sha3(uint64_t* st, size_t stride, unsigned live, uint64_t st1[25]) {
  KeccakF1600x4Sha3(st, stride, live);
  KeccakF1600x1Sha3(st1);
}

void KeccakF1600x8Sha3(uint64_t* st) {
  for (size_t j = 0; j < 8; j += 2) KeccakF1600x2Sha3(st + j, 8);
}

}  // namespace pqcd::kernels
