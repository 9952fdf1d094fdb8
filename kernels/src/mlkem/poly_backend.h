// ML-KEM polynomial kernels per backend (internal to pqcd_mlkem and its tests).
//
// poly.h's functions dispatch on ActiveIsa(): the portable kernels below always stay compiled in;
// the AVX2 kernels (mlkem/avx2/poly_avx2.cc, built with -mavx2 only) are used on the avx2 and
// avx512 backends. Every AVX2 kernel meets the contract of the poly.h function it replaces and
// returns bit-identical results (same reductions in the same order), which the differential tests
// (tests/kernels/test_mlkem_avx2.cc) check on edge and random inputs.
//
// Only plain function declarations here: nothing inline is shared between the baseline and the
// AVX2 translation units.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlkem/poly.h"

namespace pqcd::kernels::mlkem {

// True when the active backend uses the AVX2 kernels (avx2 and avx512).
bool UseAvx2Kernels();

namespace portable {
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
// ByteEncode_d(Compress_d(canonical(a + b + μ))) with μ = Decompress_1(ByteDecode_1(m)) when m is
// not null (PolyAdd, [PolyFromMessage, PolyAdd,] PolyReduceCanonical, PolyCompressEncode in one
// pass); d in {4, 5, 10, 11}. a + b + μ must fit in int16; a is clobbered.
void PolyAddCompressEncode(int d, uint8_t* out, Poly& a, const Poly& b, const uint8_t* m);
// m = ByteEncode_1(Compress_1(canonical(v - w))) (PolySub, PolyReduceCanonical, PolyToMessage);
// v - w must fit in int16; v is clobbered.
void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w);
// Rejection step of SampleNTT (Alg. 7 steps 5-13) on len bytes (len % 3 == 0); appends at most
// `wanted` coefficients to out and returns how many.
int RejectUniform(int16_t* out, int wanted, const uint8_t* buf, size_t len);
// SamplePolyCBD_eta on 64·eta bytes.
void Cbd(int eta, Poly& a, const uint8_t* buf);
}  // namespace portable

namespace avx2 {
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
// d in {4, 5, 10, 11}.
void PolyCompressEncode(int d, uint8_t* out, const Poly& a);
void PolyDecodeDecompress(int d, Poly& a, const uint8_t* in);
void PolyFromMessage(Poly& a, const uint8_t m[kSymBytes]);
void PolyToMessage(uint8_t m[kSymBytes], const Poly& a);
void PolyAddCompressEncode(int d, uint8_t* out, Poly& a, const Poly& b, const uint8_t* m);
void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w);
// 0xff if a[0..n) != b[0..n) else 0x00, in constant time (the FO re-encryption check).
uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n);
// dst = mask ? src : dst for mask in {0x00, 0xff}, 32 bytes, constant time.
void CtSelect32(uint8_t dst[32], const uint8_t src[32], uint8_t mask);
// As portable::RejectUniform (wanted <= kN), but `buf` must be readable (any contents) up to
// len + 8 bytes, and out[count..wanted) may be overwritten with scratch values.
int RejectUniform(int16_t* out, int wanted, const uint8_t* buf, size_t len);
// As portable::Cbd, but `buf` must be readable up to 64·eta + 8 bytes.
void Cbd(int eta, Poly& a, const uint8_t* buf);
}  // namespace avx2

}  // namespace pqcd::kernels::mlkem
