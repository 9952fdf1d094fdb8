// The NEON ML-KEM kernels (poly_neon.cc; built with the neon flags). Each meets the contract of
// its hook in mlkem/backend.h and returns exactly the portable result; they are reached only
// through the neon ML-KEM table (backend.cc here). Declarations only.
#pragma once

#include "mlkem/backend.h"

namespace pqcd::kernels::mlkem::neon {

void PolyNtt(Poly& a);
void PolyInvNttTimesR(Poly& a);
void PolyMulCacheCompute(PolyMulCache& cache, const Poly& b);
void PolyBasemulAcc(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache, int k);
void PolyToMont(Poly& a);
void PolyAdd(Poly& r, const Poly& a);
void PolySub(Poly& r, const Poly& a);
void PolyReduceCanonical(Poly& a);
void Cbd(int eta, Poly& a, const uint8_t* buf);
int RejectUniform(int16_t* out, int wanted, const uint8_t* buf, size_t len);  // reject_neon.cc
void PolyCompressEncode(int d, uint8_t* out, const Poly& a);
void PolyDecodeDecompress(int d, Poly& a, const uint8_t* in);
void PolyFromMessage(Poly& a, const uint8_t m[kSymBytes]);
void PolyToMessage(uint8_t m[kSymBytes], const Poly& a);
void PolyEncode12(uint8_t out[kPolyBytes], const Poly& a);
void PolyDecode12(Poly& a, const uint8_t in[kPolyBytes]);
bool DecodeEncapsKeyPoly(Poly& a, const uint8_t in[kPolyBytes]);
void PolyAddCompressEncode(int d, uint8_t* out, Poly& a, const Poly& b, const uint8_t* m);
void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w);
uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n);
void CtSelect32(uint8_t dst[32], const uint8_t src[32], uint8_t mask);

}  // namespace pqcd::kernels::mlkem::neon
