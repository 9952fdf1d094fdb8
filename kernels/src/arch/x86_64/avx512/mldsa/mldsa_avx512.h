// The AVX-512 ML-DSA polynomial kernels (poly_avx512.cc here; built with the avx512 flags:
// F/BW/VL/DQ, 16 int32 lanes per ZMM register).
//
// Plain function declarations. They are reached only through the avx512 ML-DSA table (backend.cc
// here), which uses a kernel of this file only where it was measured faster than the AVX2 one.
// Every function meets the contract of its hook in mldsa/backend.h and returns byte-identical
// results (same Montgomery representatives, same coefficient order);
// tests/kernels/test_mldsa_avx2.cc checks it for the avx512 table. Nothing inline is shared between
// baseline and AVX-512 code.
//
// Internal header of pqcd_mldsa; not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mldsa/poly.h"

namespace pqcd::kernels::mldsa::avx512 {

void Ntt(Poly& a);
void InvNttToMont(Poly& a);
void PointwiseMontgomery(Poly& c, const Poly& a, const Poly& b);
void PointwiseAccMontgomery(Poly& c, const Poly* a, const Poly* b, int n);
void PointwiseAccSubMontgomery(Poly& c, const Poly* a, const Poly* b, int n, const Poly& x,
                               const Poly& y);
void Reduce32(Poly& a);
void CAddQ(Poly& a);
void Add(Poly& c, const Poly& a, const Poly& b);
void Sub(Poly& c, const Poly& a, const Poly& b);
void ShiftLeftD(Poly& a);
void SplitLow9(Poly& lo, Poly& hi, const Poly& v);
uint32_t SplitLow9AddNorm(Poly& lo, Poly& hi, const Poly& v, const Poly& y, int32_t bound);
void Power2Round(Poly& t1, Poly& t0, const Poly& t);
// Gamma2 is (q-1)/88 (small) or (q-1)/32 (large).
void DecomposeSmall(Poly& r1, Poly& r0, const Poly& r);
void DecomposeLarge(Poly& r1, Poly& r0, const Poly& r);
unsigned MakeHintSmall(Poly& h, const Poly& a0, const Poly& a1);
unsigned MakeHintLarge(Poly& h, const Poly& a0, const Poly& a1);
void UseHintSmall(Poly& out, const Poly& r, const Poly& h);
void UseHintLarge(Poly& out, const Poly& r, const Poly& h);
uint32_t ExceedsNorm(const Poly& a, int32_t bound);
// Fused passes: CAddQ + Decompose + PackW1 (the signer's w), CAddQ + UseHint + PackW1 (the
// verifier's w1').
void DecomposePackW1Small(uint8_t* out, Poly& r1, Poly& r0, const Poly& r);
void DecomposePackW1Large(uint8_t* out, Poly& r1, Poly& r0, const Poly& r);
void UseHintPackW1Small(uint8_t* out, const Poly& r, const Poly& h);
void UseHintPackW1Large(uint8_t* out, const Poly& r, const Poly& h);
// Bit packing (FIPS 204 Alg. 16-19), same bytes as the portable kernels; the fused
// (r + s) mod q + Power2Round + PackT1 with t0 stored (t0 may alias r).
void PackT1(uint8_t* out, const Poly& t1);         // 320 bytes
void UnpackT1(Poly& t1, const uint8_t* in);        // 320 bytes
void UnpackT1Shifted(Poly& t, const uint8_t* in);  // 320 bytes, t1 * 2^13
void UnpackZ17(Poly& z, const uint8_t* in);        // 576 bytes
void UnpackZ19(Poly& z, const uint8_t* in);        // 640 bytes
void Power2RoundPackT1(uint8_t* t1_out, Poly& t0, const Poly& r, const Poly& s);
void PackEta2(uint8_t* out, const Poly& s);       // 96 bytes
void PackEta4(uint8_t* out, const Poly& s);       // 128 bytes
uint32_t UnpackEta4(Poly& s, const uint8_t* in);  // all-ones when a field is above 8
uint32_t UnpackEta2(Poly& s, const uint8_t* in);  // all-ones when a field is above 4
void PackT0(uint8_t* out, const Poly& t0);        // 416 bytes
void UnpackT0(Poly& t0, const uint8_t* in);       // 416 bytes
void PackZ17(uint8_t* out, const Poly& z);        // 576 bytes
void PackZ19(uint8_t* out, const Poly& z);        // 640 bytes
void PackW1Small(uint8_t* out, const Poly& w1);   // 192 bytes
void PackW1Large(uint8_t* out, const Poly& w1);   // 128 bytes
// RejNTTPoly's inner loop (public data), as the portable loop.
int RejectUniform(int32_t* a, int count, const uint8_t* buf, size_t len);
// RejBoundedPoly's inner loop (secret data; only the accept pattern is declassified), as the
// portable loop.
int RejectEta2(int32_t* a, int count, const uint8_t* buf, size_t len);
int RejectEta4(int32_t* a, int count, const uint8_t* buf, size_t len);
// SampleInBall's constant-time kernels (secret candidates and state), as the portable hooks.
void SampleInBallSteps(uint8_t* pos, int8_t* sgn, uint32_t& i, uint32_t first, uint64_t& signs,
                       const uint8_t* cand, size_t n);
void SampleInBallExpand(Poly& c, const uint8_t* pos, const int8_t* sgn, int used);

}  // namespace pqcd::kernels::mldsa::avx512
