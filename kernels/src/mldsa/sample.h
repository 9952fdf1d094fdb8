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
void SampleUniformPolys(Poly* const* out, const uint8_t rho[32], const uint16_t* nonces, size_t n,
                        KeccakRider* rider = nullptr);

// RejBoundedPoly (Alg. 31) as used by ExpandS (Alg. 33): *out[i] = RejBoundedPoly(rho' || nonce_i).
// Out: coefficients in [-Eta, Eta]. rho' is secret: candidates are computed without branches; only
// the accept/reject decision per half-byte is revealed (it says nothing about accepted values).
template <int Eta>
void SampleEtaPolys(Poly* const* out, const uint8_t rho_prime[64], const uint16_t* nonces,
                    size_t n);

// RejBoundedPoly's inner loop: appends CoeffFromHalfByte(b) for the accepted half-bytes b of
// buf[0..len) (low half of each byte first) to a[count..256), stops at 256 and returns the new
// count. buf is secret; only the accept pattern is declassified (once per chunk, never per
// coefficient). Dispatches to the AVX2 kernel when the active ISA allows. a[new count..256) may
// be overwritten (scratch).
template <int Eta>
int RejectEta(int32_t* a, int count, const uint8_t* buf, size_t len);

// ExpandMask (Alg. 34) row: *out[i] = BitUnpack(H(rho'' || nonce_i, 32 (Gamma1Bits + 1)),
// gamma1 - 1, gamma1) with nonce_i = kappa + i. Out: coefficients in (-2^Gamma1Bits, 2^Gamma1Bits].
template <int Gamma1Bits>
void SampleMaskPolys(Poly* const* out, const uint8_t rho_pp[64], const uint16_t* nonces, size_t n);

// SampleInBall (Alg. 29): tau coefficients in {-1, +1}, the rest 0. c_tilde is public (part of the
// signature; the signer declassifies it first).
void SampleInBall(Poly& c, const uint8_t* c_tilde, size_t c_tilde_len, int tau);

}  // namespace pqcd::kernels::mldsa
