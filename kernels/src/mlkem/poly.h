// ML-KEM polynomial arithmetic (FIPS 203 §4).
//
// Internal module of pqcd_mlkem: everything the ML-KEM algorithms do on polynomials goes through
// these functions, which forward to the active backend table (mlkem/backend.h: one hook per
// function, the portable kernels as defaults; the forwarding is in mlkem/backend.cc). Each hook's
// contract, in mlkem/hooks.def, gives the bounds it may assume on its inputs and the bounds (and
// exact values, where the result feeds the wire format) it must produce.
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

#include "hook_list.h"

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

// The hook functions: PolyNtt, PolyInvNttTimesR, PolyMulCacheCompute, PolyBasemulAcc, PolyToMont,
// PolyAdd, PolySub, PolyReduceCanonical, PolyEncode12, PolyDecode12, DecodeEncapsKeyPoly,
// PolyFromMessage, PolyToMessage, PolySubToMessage, CtDiffMask and CtSelect32, declared from the
// hook list (every PQCD_FORWARDED_HOOK line of mlkem/hooks.def, which gives each one's signature
// and contract) and defined in mlkem/backend.cc.
#define PQCD_FORWARDED_HOOK(hook, Kernel, Ret, Params, Args) \
  PQCD_HOOK_DECLARATION(hook, Kernel, Ret, Params)
#include "mlkem/hooks.def"

// ByteEncode_D(Compress_D(a)) for D in {4, 5, 10, 11} (Alg. 5 and §4.2.1 Compress), writing
// 32·D bytes. Rounding is exactly FIPS 203's round(2^D/q · x) mod 2^D, computed with a
// multiply-shift (no division: KyberSlash). In: canonical. (The compress_encode hook.)
template <int D>
void PolyCompressEncode(uint8_t* out, const Poly& a);
// Decompress_D(ByteDecode_D(in)) for D in {4, 5, 10, 11}, reading 32·D bytes. Out: canonical.
// (The decode_decompress hook.)
template <int D>
void PolyDecodeDecompress(Poly& a, const uint8_t* in);

// ByteEncode_D(Compress_D(canonical(a + b + μ))) with μ = Decompress_1(ByteDecode_1(m)) if m is
// not null, else μ = 0 (Alg. 14 steps 19-23). In: a + b + μ fits in int16. `a` is clobbered.
// (The add_compress_encode hook.)
template <int D>
void PolyAddCompressEncode(uint8_t* out, Poly& a, const Poly& b, const uint8_t* m);

// Sampling (SampleNTT, SamplePolyCBD) runs inside the fixed lane plans (mlkem/fixed_lanes.h) on the
// reject_uniform and cbd hooks of mlkem/backend.h.

}  // namespace pqcd::kernels::mlkem
