// The NEON ML-DSA kernels (poly_neon.cc; built with the neon flags). Each meets the contract of
// its hook in mldsa/backend.h and returns exactly the portable result; they are reached only
// through the neon ML-DSA table (backend.cc here). Declarations only.
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

}  // namespace pqcd::kernels::mldsa::neon
