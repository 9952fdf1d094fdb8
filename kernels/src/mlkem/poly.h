// ML-KEM polynomial arithmetic (FIPS 203 §4).
//
// Internal module of pqcd_mlkem: everything the ML-KEM algorithms do on polynomials goes through
// these functions, which forward to the active backend table (mlkem/backend.h: one hook per
// function, with the contract a replacement must meet, the portable kernels as defaults; the
// forwarding is in mlkem/backend.cc). Each function here documents the same contract: the bounds
// it may assume on its inputs and the bounds (and exact values, where the result feeds the wire
// format) it must produce.
//
// Representation: a polynomial is 256 signed 16-bit coefficients, 64-byte aligned. Coefficients
// are representatives mod q = 3329; "canonical" means in [0, q). R = 2^16 is the Montgomery
// factor. NTT-domain polynomials use the order of FIPS 203 §4.3 (pairs (â[2i], â[2i+1]) are
// residues mod X^2 - ζ^(2·BitRev7(i)+1)).
//
// Secret data: every function except DecodeEncapsKeyPoly runs in time
// independent of coefficient values (no data-dependent branch, index or division).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::kernels::mlkem {

inline constexpr int kN = 256;
inline constexpr int16_t kQ = 3329;
inline constexpr size_t kPolyBytes = 384;  // ByteEncode12 of one polynomial
inline constexpr size_t kSymBytes = 32;

struct alignas(64) Poly {
  int16_t c[kN];
};

// Precomputed products b[2i+1]·ζ^(2·BitRev7(i)+1) of a right-hand operand of BasemulAcc, so that
// the products are computed once per vector entry and reused for every row of the matrix.
struct alignas(64) PolyMulCache {
  int16_t c[kN / 2];
};

// ---- NTT domain -------------------------------------------------------------------------------

// Forward NTT (FIPS 203 Alg. 9) in place.
// In: |a[i]| < q. Out: NTT(a) (normal domain, no Montgomery factor), |â[i]| <= (q-1)/2.
void PolyNtt(Poly& a);

// Inverse NTT (FIPS 203 Alg. 10) in place, times R: out = R · NTT^-1(â) mod q, which cancels the
// R^-1 that BasemulAcc leaves. In: |â[i]| < q. Out: |a[i]| < q.
void PolyInvNttTimesR(Poly& a);

// cache[i] = b[2i+1] · ζ^(2·BitRev7(i)+1) mod q. In: |b[i]| < q. Out: |cache[i]| < q.
void PolyMulCacheCompute(PolyMulCache& cache, const Poly& b);

// out = R^-1 · Σ_{j<k} a[j] ∘ b[j] (FIPS 203 Alg. 11 MultiplyNTTs summed over a vector, with one
// Montgomery reduction per coefficient at the end). cache[j] must be PolyMulCacheCompute(b[j]).
// In: 1 <= k <= 4, |a[j][i]| < q, |b[j][i]| < q, |cache[j][i]| < q. Out: |out[i]| < q.
void PolyBasemulAcc(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache, int k);

// a = a · R mod q (undoes the R^-1 of BasemulAcc). In: any int16. Out: |a[i]| < q.
void PolyToMont(Poly& a);

// ---- Coefficient-wise -------------------------------------------------------------------------

// r[i] += a[i], no reduction. The caller guarantees the sum fits in int16.
void PolyAdd(Poly& r, const Poly& a);
// r[i] -= a[i], no reduction. The caller guarantees the difference fits in int16.
void PolySub(Poly& r, const Poly& a);
// Canonical representative. In: any int16. Out: [0, q), congruent mod q.
void PolyReduceCanonical(Poly& a);

// ---- Byte encoding ----------------------------------------------------------------------------

// ByteEncode12 (Alg. 5). In: canonical. Out: 384 bytes.
void PolyEncode12(uint8_t out[kPolyBytes], const Poly& a);
// ByteDecode12 (Alg. 6) including the reduction mod q FIPS 203 specifies for d = 12. Constant time
// (used for the secret ŝ). Out: canonical.
void PolyDecode12(Poly& a, const uint8_t in[kPolyBytes]);
// ByteDecode12 for public data with the §7.2 modulus check: returns false if any encoded value is
// >= q (then `a` holds the unreduced values). Out on success: canonical. May branch on the data.
bool DecodeEncapsKeyPoly(Poly& a, const uint8_t in[kPolyBytes]);

// ByteEncode_D(Compress_D(a)) for D in {4, 5, 10, 11} (Alg. 5 and §4.2.1 Compress), writing
// 32·D bytes. Rounding is exactly FIPS 203's round(2^D/q · x) mod 2^D, computed with a
// multiply-shift (no division: KyberSlash). In: canonical.
template <int D>
void PolyCompressEncode(uint8_t* out, const Poly& a);
// Decompress_D(ByteDecode_D(in)) for D in {4, 5, 10, 11}, reading 32·D bytes. Out: canonical.
template <int D>
void PolyDecodeDecompress(Poly& a, const uint8_t* in);

// μ = Decompress_1(ByteDecode_1(m)) (Alg. 14 step 20): coefficients 0 or 1665, constant time.
void PolyFromMessage(Poly& a, const uint8_t m[kSymBytes]);
// m = ByteEncode_1(Compress_1(a)) (Alg. 15 step 7), constant time. In: canonical.
void PolyToMessage(uint8_t m[kSymBytes], const Poly& a);

// ---- Fused steps (one pass instead of several) ------------------------------------------------

// ByteEncode_D(Compress_D(canonical(a + b + μ))) with μ = Decompress_1(ByteDecode_1(m)) if m is
// not null, else μ = 0 (Alg. 14 steps 19-23). In: a + b + μ fits in int16. `a` is clobbered.
template <int D>
void PolyAddCompressEncode(uint8_t* out, Poly& a, const Poly& b, const uint8_t* m);
// m = ByteEncode_1(Compress_1(canonical(v - w))) (Alg. 15 steps 6-7). In: v - w fits in int16.
// `v` is clobbered.
void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w);

// ---- Constant-time byte helpers (Alg. 18 steps 9-11) --------------------------------------------

// 0xff if a[0..n) and b[0..n) differ, else 0x00, without a data-dependent branch.
uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n);
// dst = mask ? src : dst (mask 0x00 or 0xff), 32 bytes, constant time.
void CtSelect32(uint8_t dst[32], const uint8_t src[32], uint8_t mask);

// Sampling (SampleNTT, SamplePolyCBD) runs inside the fixed lane plans (mlkem/fixed_lanes.h) on the
// reject_uniform and cbd hooks of mlkem/backend.h.

}  // namespace pqcd::kernels::mlkem
