// The AVX2 ML-KEM kernels (poly_avx2.cc; built with the avx2 flags). Each meets the contract of
// its hook in mlkem/backend.h and returns bit-identical results (same reductions in the same
// order), which tests/kernels/test_mlkem_avx2.cc checks on edge and random inputs. They are
// reached only through the avx2 ML-KEM table (backend.cc here), which the avx2 and avx512 backends
// use. Plain declarations only: nothing inline is shared between baseline and AVX2 code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlkem/poly.h"

namespace pqcd::kernels::mlkem::avx2 {

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
void CtSelect32(uint8_t dst[32], const uint8_t src[32], uint8_t mask);
// Reads buf up to len + 8 bytes; may write scratch values to out[count..wanted) (the hook's
// contract allows both).
int RejectUniform(int16_t* out, int wanted, const uint8_t* buf, size_t len);
// Reads buf up to 64·eta + 8 bytes.
void Cbd(int eta, Poly& a, const uint8_t* buf);

}  // namespace pqcd::kernels::mlkem::avx2
