// ML-DSA (FIPS 204) polynomial layer: arithmetic in R_q = Z_q[X]/(X^256 + 1), the NTT, rounding
// (Power2Round / Decompose / hints), norm checks and bit packing.
//
// The algorithm code calls these functions; they forward to the active backend table
// (mldsa/backend.h, forwarding in mldsa/backend.cc), whose portable kernels are the reference. Each
// function (here, or its hook in mldsa/hooks.def) states the bounds it expects on its input
// coefficients and guarantees on its output: that is the contract a SIMD backend must meet, byte
// for byte. "Standard representative" means [0, q).
//
// Everything here is constant time with respect to coefficient values: no branch, memory index or
// division depends on them (divisions by constants are multiply-shift sequences).
//
// Internal header of pqcd_mldsa; not part of the public API.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "hook_list.h"

namespace pqcd::kernels::mldsa {

inline constexpr int kN = 256;
inline constexpr int32_t kQ = 8380417;  // 2^23 - 2^13 + 1
inline constexpr int kD = 13;           // dropped bits of t (FIPS 204 Table 1)

// One polynomial, 64-byte aligned so that vector loads never split a cache line.
struct alignas(64) Poly {
  int32_t coeffs[kN];
};
static_assert(sizeof(Poly) == 1024);

template <int N>
using PolyVec = std::array<Poly, N>;

// The hook functions: Ntt, InvNttToMont, PointwiseMontgomery, PointwiseAccMontgomery,
// PointwiseAccSubMontgomery, Reduce32, CAddQ, Add, Sub, ShiftLeftD, SplitLow9, SplitLow9AddNorm,
// Power2Round, ExceedsNorm, PackT1, UnpackT1, UnpackT1Shifted, Power2RoundPackT1, PackT0 and
// UnpackT0, declared from the hook list (every PQCD_FORWARDED_HOOK line of mldsa/hooks.def, which
// gives each one's signature and contract) and defined in mldsa/backend.cc.
#define PQCD_FORWARDED_HOOK(hook, Kernel, Ret, Params, Args) \
  PQCD_HOOK_DECLARATION(hook, Kernel, Ret, Params)
#include "mldsa/hooks.def"

// ---- Rounding (FIPS 204 §7.4) ----------------------------------------------------------------

// Decompose (Alg. 36): r = r1 * 2 gamma2 + r0 mod q, with the q-1 corner case folded to r1 = 0.
// In: r_i in [0, q). Out: r1_i in [0, (q-1)/(2 gamma2)), r0_i in [-gamma2, gamma2].
// Gamma2 is (q-1)/88 or (q-1)/32.
template <int32_t Gamma2>
void Decompose(Poly& r1, Poly& r0, const Poly& r);

// The signer's MakeHint (Alg. 39) in the low-bits form: with a0 = LowBits(w) - c s2 + c t0 and
// a1 = HighBits(w), h_i = 1 iff HighBits(w - c s2 + c t0) != HighBits(w - c s2), which is
// h_i = [a0_i > gamma2 or a0_i < -gamma2 or (a0_i == -gamma2 and a1_i != 0)] whenever the
// signer's checks ||LowBits(w - c s2)|| < gamma2 - beta and ||c t0|| < gamma2 passed.
// In: |a0_i| < 2^30, a1_i in [0, (q-1)/(2 gamma2)). Out: h_i in {0, 1}; returns the number of ones.
template <int32_t Gamma2>
unsigned MakeHint(Poly& h, const Poly& a0, const Poly& a1);

// UseHint (Alg. 40). In: r_i in [0, q), h_i in {0, 1}. Out: [0, (q-1)/(2 gamma2)).
template <int32_t Gamma2>
void UseHint(Poly& out, const Poly& r, const Poly& h);

// ---- Bit packing (FIPS 204 §7.1, Alg. 16-19 specialized) --------------------------------------

// BitPack(s, eta, eta): 96 bytes (eta = 2) or 128 bytes (eta = 4). In: [-eta, eta].
template <int Eta>
void PackEta(uint8_t* out, const Poly& s);
// BitUnpack(.., eta, eta). Out: [eta - (2^bits - 1), eta]; returns all-ones when some coefficient
// is outside [-eta, eta] (a malformed private key), computed without branches.
template <int Eta>
uint32_t UnpackEta(Poly& s, const uint8_t* in);
template <int Eta>
inline constexpr size_t kEtaPackedBytes = Eta == 2 ? 96 : 128;

// BitPack(z, gamma1 - 1, gamma1), gamma1 = 2^Gamma1Bits: 32 * (Gamma1Bits + 1) bytes.
// In: (-gamma1, gamma1]. Unpack out: (-gamma1, gamma1] (every bit pattern is valid).
template <int Gamma1Bits>
void PackZ(uint8_t* out, const Poly& z);
template <int Gamma1Bits>
void UnpackZ(Poly& z, const uint8_t* in);

// SimpleBitPack(w1, (q-1)/(2 gamma2) - 1): 192 bytes (6 bits, gamma2 = (q-1)/88) or 128 bytes
// (4 bits, gamma2 = (q-1)/32). In: [0, (q-1)/(2 gamma2)).
template <int32_t Gamma2>
inline constexpr size_t kW1PackedBytes = Gamma2 == (kQ - 1) / 88 ? 192 : 128;
template <int32_t Gamma2>
void PackW1(uint8_t* out, const Poly& w1);

// The signer's fused pass: (r1, r0) = Decompose(CAddQ(r)), PackW1(out, r1). In: |r_i| < q.
// r1 or r0 may alias r.
template <int32_t Gamma2>
void DecomposePackW1(uint8_t* out, Poly& r1, Poly& r0, const Poly& r);

// The verifier's fused pass: PackW1(UseHint(CAddQ(r), h)). In: |r_i| < q, h_i in {0, 1}.
template <int32_t Gamma2>
void UseHintPackW1(uint8_t* out, const Poly& r, const Poly& h);

// HintBitPack (Alg. 20): omega + k bytes. In: h_i in {0, 1}, at most omega ones in total.
void PackHint(uint8_t* out, const Poly* h, int k, int omega);
// HintBitUnpack (Alg. 21). Returns false for a malformed encoding (indices not strictly
// increasing within a polynomial, counts decreasing or above omega, nonzero padding).
// Public data: may branch.
bool UnpackHint(Poly* h, const uint8_t* in, int k, int omega);

}  // namespace pqcd::kernels::mldsa
