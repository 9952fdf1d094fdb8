// The AVX-512 ML-KEM kernels (poly_avx512.cc; built with the avx512 flags: F/BW/VL/DQ, 32 int16
// lanes per ZMM register). Each meets the contract of its hook in mlkem/backend.h and returns
// bit-identical results (same reductions in the same order as the portable kernels), which
// tests/kernels/test_mlkem_avx2.cc checks for the avx512 table too. Reached only through the
// avx512 ML-KEM table (backend.cc here), which uses a kernel of this file only where it was
// measured faster than the AVX2 one. Plain declarations only: nothing inline is shared between
// baseline and AVX-512 code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlkem/poly.h"

namespace pqcd::kernels::mlkem::avx512 {

void PolyNtt(Poly& a);
void PolyInvNttTimesR(Poly& a);
void PolyMulCacheCompute(PolyMulCache& cache, const Poly& b);
void PolyBasemulAcc(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache, int k);
void PolyToMont(Poly& a);
void PolyAdd(Poly& r, const Poly& a);
void PolySub(Poly& r, const Poly& a);
void PolyReduceCanonical(Poly& a);
void PolyEncode12(uint8_t out[kPolyBytes], const Poly& a);
void PolyDecode12(Poly& a, const uint8_t in[kPolyBytes]);
bool DecodeEncapsKeyPoly(Poly& a, const uint8_t in[kPolyBytes]);
void PolyCompressEncode(int d, uint8_t* out, const Poly& a);
void PolyDecodeDecompress(int d, Poly& a, const uint8_t* in);
void PolyFromMessage(Poly& a, const uint8_t m[kSymBytes]);
void PolyToMessage(uint8_t m[kSymBytes], const Poly& a);
void PolyAddCompressEncode(int d, uint8_t* out, Poly& a, const Poly& b, const uint8_t* m);
void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w);
uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n);
// Reads buf up to 64·eta + 8 bytes.
void Cbd(int eta, Poly& a, const uint8_t* buf);

}  // namespace pqcd::kernels::mlkem::avx512
