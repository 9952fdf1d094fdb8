// ML-DSA (FIPS 204) samplers: the XOF-driven parts of ExpandA, ExpandS, ExpandMask and
// SampleInBall.
//
// Every multi-polynomial sampler takes n (seed, nonce) pairs that share one seed prefix and fills n
// polynomials: the shape a 4- or 8-lane Keccak backend consumes (one lane per polynomial). The
// portable versions below run the lanes one after another.
//
// Internal header of pqcd_mldsa; not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mldsa/backend.h"
#include "mldsa/poly.h"

namespace pqcd::kernels {
class KeccakRider;  // keccak/keccak_multi.h
}  // namespace pqcd::kernels

namespace pqcd::kernels::mldsa {

// RejNTTPoly (Alg. 30) as used by ExpandA (Alg. 32): *out[i] = RejNTTPoly(rho || nonce_i), the
// nonce as two little-endian bytes (ExpandA passes s | r << 8 for entry A[r][s]).
// Out: coefficients in [0, q), NTT domain. rho is public: the rejection branches are allowed.
// rider (optional): a single-sponge hash that rides along the 4-lane permutations (e.g. tr = H(pk)
// in verification; see KeccakMulti::SetRider). The caller finishes it afterwards.
// on_done (optional): called as on_done(ctx, m) each time polynomials [0, m) are complete (after
// each group of lanes; groups run in index order), so that a caller can consume rows of A-hat
// while they are in L1 and feed the rider (e.g. tr = H(pk) in key generation, where pk grows row
// by row).
using SampleDoneFn = void (*)(void* ctx, size_t done);
void SampleUniformPolys(Poly* const* out, const uint8_t rho[32], const uint16_t* nonces, size_t n,
                        KeccakRider* rider = nullptr, SampleDoneFn on_done = nullptr,
                        void* ctx = nullptr);

// RejBoundedPoly (Alg. 31) as used by ExpandS (Alg. 33): *out[i] = RejBoundedPoly(rho' || nonce_i).
// Out: coefficients in [-Eta, Eta]. rho' is secret: candidates are computed without branches; only
// the accept/reject decision per half-byte is revealed (it says nothing about accepted values).
template <int Eta>
void SampleEtaPolys(Poly* const* out, const uint8_t rho_prime[64], const uint16_t* nonces,
                    size_t n);

// RejBoundedPoly's inner loop: appends CoeffFromHalfByte(b) for the accepted half-bytes b of
// buf[0..len) (low half of each byte first) to a[count..256), stops at 256 and returns the new
// count. buf is secret; only the accept pattern is declassified (once per chunk, never per
// coefficient). Runs the active backend's reject_eta hook (mldsa/backend.h). a[new count..256) may
// be overwritten (scratch).
template <int Eta>
int RejectEta(int32_t* a, int count, const uint8_t* buf, size_t len);

// ExpandMask (Alg. 34) row: *out[i] = BitUnpack(H(rho'' || nonce_i, 32 (Gamma1Bits + 1)),
// gamma1 - 1, gamma1) with nonce_i = kappa + i. Out: coefficients in (-2^Gamma1Bits, 2^Gamma1Bits].
template <int Gamma1Bits>
void SampleMaskPolys(Poly* const* out, const uint8_t rho_pp[64], const uint16_t* nonces, size_t n);

// SampleInBall (Alg. 29): tau coefficients in {-1, +1}, the rest 0.
//
// SampleInBall is the signer's constant-time version: c_tilde and c are secret until the attempt
// is accepted (a rejected attempt's challenge leaks the key; see mldsa.cc). It squeezes one
// SHAKE256 block: 8 sign bytes, then a fixed budget of candidate bytes (SampleInBallBudget(tau),
// at most 128). Every candidate is processed the same way, with masks: accept = (i <= 255 and
// b <= i), and the Fisher-Yates step c[i] = c[b], c[b] = +-1 is applied to a list of the
// nonzero coefficients (position, sign): the entry at position b, if any, moves to position i
// (c[i] = c[b]), and (b, sign) is written to list slot i - (256 - tau), all as compares and
// blends over the 64 slots. At the end the list is expanded into c with compares over all 256
// positions. No branch or memory index depends on the XOF output. The only revealed bit is
// whether the budget produced all tau positions; it does not with probability below 2^-69 (tau
// 39: 80 bytes, 2^-77; tau 49: 96 bytes, 2^-69.5; tau 60: 128 bytes, 2^-87.7; exact
// computation of the accept chain). If not, the rest of the block and then whole further blocks
// (136 candidates each) are processed the same way, one fixed-size budget at a time. The output
// equals Alg. 29 exactly. first_budget (tests only) overrides the first budget, to exercise the
// continuation. Runs the active backend's sample_in_ball hooks (mldsa/backend.h).
inline constexpr size_t SampleInBallBudget(int tau) {
  return tau <= 39 ? 80 : tau <= 49 ? 96 : 128;
}
void SampleInBall(Poly& c, const uint8_t* c_tilde, size_t c_tilde_len, int tau,
                  size_t first_budget = 0);

// SampleInBall for a public c_tilde (verification): the plain FIPS 204 loop, with branches and
// memory indices that depend on c_tilde. Same output as SampleInBall.
void SampleInBallPublic(Poly& c, const uint8_t* c_tilde, size_t c_tilde_len, int tau);

// SampleInBall's constant-time kernels are the sample_in_ball_steps / sample_in_ball_expand hooks
// of mldsa/backend.h (state: a list of kBallSlots slots, pos[t] and sgn[t] (sign in {-1, +1}; 0
// for an unused slot, whose position is meaningless), i (the next position, 256 - tau .. 256; slot
// i - first is the next free one, first = 256 - tau) and signs (the unused sign bits, next one
// lowest)).

}  // namespace pqcd::kernels::mldsa
