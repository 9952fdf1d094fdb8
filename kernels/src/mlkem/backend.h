// The ML-KEM backend table: every polynomial kernel a SIMD backend may replace, with its contract
// (internal to pqcd_mlkem and its tests).
//
// Each hook works on whole polynomials (an NTT, a basemul-accumulate over a vector, the rejection
// sampling of one matrix entry), so one indirect call per hook costs nothing measurable. Every
// hook has the portable kernel as its default member initializer: a backend table names only the
// hooks it implements and keeps the portable code for the rest. A replacement must return exactly
// the portable result (same representatives, same bytes), which tests/kernels/test_mlkem_avx2.cc
// checks on edge and random inputs; the table in use follows the active ISA (ActiveBackend()), and
// arch/backends.h lists which backend supplies which table. The algorithm code calls the poly.h
// functions, which forward to the active table (mlkem/backend.cc).
//
// Common to every hook:
//  * Poly and PolyMulCache are 64-byte aligned (by their type); byte buffers have no alignment
//    requirement. Arguments do not alias unless a hook says so.
//  * Coefficients are int16 representatives mod q = 3329; "canonical" is [0, q). R = 2^16.
//    NTT-domain order as in poly.h (FIPS 203 §4.3).
//  * Constant time in coefficient and byte values (no data-dependent branch, index or division),
//    except decode_ek (public encapsulation key) and reject_uniform (public XOF output), which may
//    branch on their data.
//
// Declarations and constants only: included by baseline and ISA-flagged translation units alike.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlkem/poly.h"

namespace pqcd::kernels {
enum class Isa : uint8_t;  // pqcd/kernels/isa.h
}  // namespace pqcd::kernels

namespace pqcd::kernels::mlkem {

// The portable kernels (mlkem/poly.cc), the reference of every backend.
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
void PolyAddCompressEncode(int d, uint8_t* out, Poly& a, const Poly& b, const uint8_t* m);
void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w);
uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n);
void CtSelect32(uint8_t dst[32], const uint8_t src[32], uint8_t mask);
int RejectUniform(int16_t* out, int wanted, const uint8_t* buf, size_t len);
void Cbd(int eta, Poly& a, const uint8_t* buf);
}  // namespace portable

struct Backend {
  // ---- NTT domain ----
  // Forward NTT (FIPS 203 Alg. 9) in place. In: |a[i]| < q. Out: |â[i]| <= (q-1)/2, no Montgomery
  // factor.
  void (*ntt)(Poly& a) = &portable::PolyNtt;
  // R · NTT^-1 (Alg. 10 times R) in place. In: |â[i]| < q. Out: |a[i]| < q.
  void (*invntt_times_r)(Poly& a) = &portable::PolyInvNttTimesR;
  // cache[i] = b[2i+1] · ζ^(2·BitRev7(i)+1) mod q (i < 128), the representative a Montgomery
  // multiplication by the Montgomery-form constant gives. In: |b[i]| < q. Out: |cache[i]| < q.
  void (*mulcache_compute)(PolyMulCache& cache, const Poly& b) = &portable::PolyMulCacheCompute;
  // out = R^-1 · Σ_{j<k} a[j] ∘ b[j] (Alg. 11 summed over a vector, one Montgomery reduction per
  // coefficient at the end); cache[j] = mulcache_compute(b[j]). In: 1 <= k <= 4, |a[j][i]|,
  // |b[j][i]|, |cache[j][i]| < q. Out: |out[i]| < q. out may alias none of the inputs.
  void (*basemul_acc)(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache,
                      int k) = &portable::PolyBasemulAcc;
  // a = a · R mod q. In: any int16. Out: |a[i]| < q.
  void (*to_mont)(Poly& a) = &portable::PolyToMont;

  // ---- Coefficient-wise ----
  // r += a and r -= a, no reduction. In: the result fits in int16 (the caller guarantees it).
  void (*add)(Poly& r, const Poly& a) = &portable::PolyAdd;
  void (*sub)(Poly& r, const Poly& a) = &portable::PolySub;
  // Canonical representative. In: any int16. Out: [0, q), congruent.
  void (*reduce_canonical)(Poly& a) = &portable::PolyReduceCanonical;

  // ---- Byte encoding ----
  // ByteEncode12 (Alg. 5) to 384 bytes. In: canonical.
  void (*encode12)(uint8_t out[kPolyBytes], const Poly& a) = &portable::PolyEncode12;
  // ByteDecode12 (Alg. 6) of 384 bytes with the reduction mod q; secret data. Out: canonical.
  void (*decode12)(Poly& a, const uint8_t in[kPolyBytes]) = &portable::PolyDecode12;
  // ByteDecode12 of 384 public bytes with the §7.2 modulus check: false if any value is >= q
  // (a then holds the unreduced 12-bit values); on true a is canonical. May branch on the data.
  bool (*decode_ek)(Poly& a, const uint8_t in[kPolyBytes]) = &portable::DecodeEncapsKeyPoly;
  // ByteEncode_d(Compress_d(a)), d in {4, 5, 10, 11}: 32·d bytes, FIPS 203's exact rounding.
  // In: canonical.
  void (*compress_encode)(int d, uint8_t* out, const Poly& a) = &portable::PolyCompressEncode;
  // Decompress_d(ByteDecode_d(in)), d in {4, 5, 10, 11}: reads 32·d bytes. Out: canonical.
  void (*decode_decompress)(int d, Poly& a, const uint8_t* in) = &portable::PolyDecodeDecompress;
  // μ = Decompress_1(ByteDecode_1(m)) from 32 bytes: coefficients 0 or 1665.
  void (*from_message)(Poly& a, const uint8_t m[kSymBytes]) = &portable::PolyFromMessage;
  // m = ByteEncode_1(Compress_1(a)) to 32 bytes. In: canonical.
  void (*to_message)(uint8_t m[kSymBytes], const Poly& a) = &portable::PolyToMessage;

  // ---- Fused passes ----
  // ByteEncode_d(Compress_d(canonical(a + b + μ))), μ = from_message(m) when m is non-null, else
  // 0; d in {4, 5, 10, 11}, 32·d bytes. In: a + b + μ fits in int16. a is clobbered.
  void (*add_compress_encode)(int d, uint8_t* out, Poly& a, const Poly& b,
                              const uint8_t* m) = &portable::PolyAddCompressEncode;
  // m = ByteEncode_1(Compress_1(canonical(v - w))), 32 bytes. In: v - w fits in int16. v is
  // clobbered.
  void (*sub_to_message)(uint8_t m[kSymBytes], Poly& v,
                         const Poly& w) = &portable::PolySubToMessage;

  // ---- Constant-time byte helpers (Alg. 18 steps 9-11) ----
  // 0xff if a[0..n) and b[0..n) differ, else 0x00 (any n, including 0).
  uint8_t (*ct_diff_mask)(const uint8_t* a, const uint8_t* b, size_t n) = &portable::CtDiffMask;
  // dst = mask ? src : dst over 32 bytes, mask in {0x00, 0xff}.
  void (*ct_select32)(uint8_t dst[32], const uint8_t src[32], uint8_t mask) = &portable::CtSelect32;

  // ---- Sampling ----
  // Rejection step of SampleNTT (Alg. 7 steps 5-13) for one matrix entry: reads 12-bit candidate
  // pairs from buf[0..len) (len % 3 == 0, len <= 3·168), appends those below q to out until
  // `wanted` (1..256) values are there, and returns how many it appended. buf must be readable
  // (any contents) up to len + 8 bytes; out[count..wanted) may be overwritten with scratch values,
  // out[wanted..) is never written. Public data: may branch on it.
  int (*reject_uniform)(int16_t* out, int wanted, const uint8_t* buf,
                        size_t len) = &portable::RejectUniform;
  // SamplePolyCBD_eta (Alg. 8), eta in {2, 3}, from 64·eta bytes; buf must be readable up to
  // 64·eta + 8 bytes. Out: coefficients in [-eta, eta]. Secret data.
  void (*cbd)(int eta, Poly& a, const uint8_t* buf) = &portable::Cbd;
};

// The portable table (every hook at its default).
extern const Backend kPortable;

// The table of the active ISA (ActiveIsa()); the algorithm code reaches it through poly.h.
const Backend& ActiveBackend();
// The table a given ISA uses (the portable one where this build has none); for the differential
// tests.
const Backend& BackendFor(Isa isa);

// True when every hook `be` sets to something other than the portable kernel returns exactly the
// portable result on fixed inputs inside its contract (backend_check.cc).
bool TableMatchesPortable(const Backend& be);
// TableMatchesPortable(BackendFor(isa)): the start-up check isa_selftest.cc runs, for a CPU that
// supports `isa`, before that backend is first selected (through a weak reference, so that
// programs without this family do not link it).
bool SelfCheck(Isa isa);

}  // namespace pqcd::kernels::mlkem
