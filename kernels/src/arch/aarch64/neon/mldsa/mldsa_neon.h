// The NEON ML-DSA kernels (poly_neon.cc, pack_neon.cc, sample_neon.cc; built with the neon flags).
// Each meets the contract of its hook in mldsa/backend.h and returns exactly the portable result;
// they are reached only through the neon ML-DSA table (backend.cc here). Declarations only.
#pragma once

#include "mldsa/backend.h"

namespace pqcd::kernels::mldsa::neon {

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
void Power2Round(Poly& t1, Poly& t0, const Poly& t);
void DecomposeSmall(Poly& r1, Poly& r0, const Poly& r);
void DecomposeLarge(Poly& r1, Poly& r0, const Poly& r);
unsigned MakeHintSmall(Poly& h, const Poly& a0, const Poly& a1);
unsigned MakeHintLarge(Poly& h, const Poly& a0, const Poly& a1);
void UseHintSmall(Poly& out, const Poly& r, const Poly& h);
void UseHintLarge(Poly& out, const Poly& r, const Poly& h);
uint32_t ExceedsNorm(const Poly& a, int32_t bound);
void SplitLow9(Poly& lo, Poly& hi, const Poly& v);
uint32_t SplitLow9AddNorm(Poly& lo, Poly& hi, const Poly& v, const Poly& y, int32_t bound);
void Power2RoundPackT1(uint8_t* t1_out, Poly& t0, const Poly& r, const Poly& s);
void DecomposePackW1Small(uint8_t* out, Poly& r1, Poly& r0, const Poly& r);
void DecomposePackW1Large(uint8_t* out, Poly& r1, Poly& r0, const Poly& r);
void UseHintPackW1Small(uint8_t* out, const Poly& r, const Poly& h);
void UseHintPackW1Large(uint8_t* out, const Poly& r, const Poly& h);

// pack_neon.cc
void PackT1(uint8_t* out, const Poly& t1);
void UnpackT1(Poly& t1, const uint8_t* in);
void UnpackT1Shifted(Poly& t, const uint8_t* in);
void PackEta2(uint8_t* out, const Poly& s);
void PackEta4(uint8_t* out, const Poly& s);
uint32_t UnpackEta2(Poly& s, const uint8_t* in);
uint32_t UnpackEta4(Poly& s, const uint8_t* in);
void PackT0(uint8_t* out, const Poly& t0);
void UnpackT0(Poly& t0, const uint8_t* in);
void PackZ17(uint8_t* out, const Poly& z);
void PackZ19(uint8_t* out, const Poly& z);
void UnpackZ17(Poly& z, const uint8_t* in);
void UnpackZ19(Poly& z, const uint8_t* in);
void PackW1Small(uint8_t* out, const Poly& w1);
void PackW1Large(uint8_t* out, const Poly& w1);

// sample_neon.cc
int RejectUniform(int32_t* a, int count, const uint8_t* buf, size_t len);
int RejectEta2(int32_t* a, int count, const uint8_t* buf, size_t len);
int RejectEta4(int32_t* a, int count, const uint8_t* buf, size_t len);
void SampleInBallSteps(uint8_t* pos, int8_t* sgn, uint32_t& i, uint32_t first, uint64_t& signs,
                       const uint8_t* cand, size_t n);
void SampleInBallExpand(Poly& c, const uint8_t* pos, const int8_t* sgn, int used);

}  // namespace pqcd::kernels::mldsa::neon
