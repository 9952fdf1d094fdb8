// The ML-DSA backend table: every polynomial and sampling kernel a SIMD backend may replace, with
// its contract (internal to pqcd_mldsa and its tests).
//
// Each hook works on whole polynomials (an NTT, a pointwise product accumulated over a vector, a
// fused rounding + packing pass, one rejection-sampling call per XOF chunk), so one indirect call
// per hook costs nothing measurable. Every hook has the portable kernel as its default member
// initializer: a backend table names only the hooks it implements and keeps the portable code for
// the rest. A replacement must return exactly the portable result (same representatives, same
// bytes), which tests/kernels/test_mldsa_avx2.cc checks on edge and random inputs. The table in
// use follows the active ISA (ActiveBackend()); arch/backends.h lists which backend supplies which
// table. The algorithm code calls the poly.h / sample.h functions, which forward to the active
// table (mldsa/backend.cc); poly.h states the same contracts with the FIPS 204 references.
//
// Common to every hook:
//  * Poly is 256 int32 coefficients, 64-byte aligned (by its type); byte buffers have no alignment
//    requirement. Output polynomials may alias inputs only where a hook says so.
//  * q = 8380417; "standard" is [0, q). Montgomery factor 2^32.
//  * "small" / "large" name the two gamma2 values: small = (q-1)/88 (ML-DSA-44), large = (q-1)/32
//    (ML-DSA-65/87). Eta is 2 or 4, gamma1 = 2^17 or 2^19.
//  * Constant time in coefficient and byte values (no data-dependent branch, index or division),
//    except reject_uniform (public XOF output) and what reject_eta2/4 declassify (CtPublic: only
//    the accept pattern).
//
// Declarations and constants only: included by baseline and ISA-flagged translation units alike.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mldsa/poly.h"

namespace pqcd::kernels {
enum class Isa : uint8_t;  // pqcd/kernels/isa.h
}  // namespace pqcd::kernels

namespace pqcd::kernels::mldsa {

// SampleInBall's slot list (sample.h).
inline constexpr int kBallSlots = 64;

// The portable kernels (mldsa/poly.cc, mldsa/sample.cc), the reference of every backend.
namespace portable {
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
void DecomposeSmall(Poly& r1, Poly& r0, const Poly& r);
void DecomposeLarge(Poly& r1, Poly& r0, const Poly& r);
unsigned MakeHintSmall(Poly& h, const Poly& a0, const Poly& a1);
unsigned MakeHintLarge(Poly& h, const Poly& a0, const Poly& a1);
void UseHintSmall(Poly& out, const Poly& r, const Poly& h);
void UseHintLarge(Poly& out, const Poly& r, const Poly& h);
uint32_t ExceedsNorm(const Poly& a, int32_t bound);
void PackT1(uint8_t* out, const Poly& t1);
void UnpackT1(Poly& t1, const uint8_t* in);
void UnpackT1Shifted(Poly& t, const uint8_t* in);
void Power2RoundPackT1(uint8_t* t1_out, Poly& t0, const Poly& r, const Poly& s);
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
void DecomposePackW1Small(uint8_t* out, Poly& r1, Poly& r0, const Poly& r);
void DecomposePackW1Large(uint8_t* out, Poly& r1, Poly& r0, const Poly& r);
void UseHintPackW1Small(uint8_t* out, const Poly& r, const Poly& h);
void UseHintPackW1Large(uint8_t* out, const Poly& r, const Poly& h);
int RejectUniform(int32_t* a, int count, const uint8_t* buf, size_t len);
int RejectEta2(int32_t* a, int count, const uint8_t* buf, size_t len);
int RejectEta4(int32_t* a, int count, const uint8_t* buf, size_t len);
void SampleInBallSteps(uint8_t* pos, int8_t* sgn, uint32_t& i, uint32_t first, uint64_t& signs,
                       const uint8_t* cand, size_t n);
void SampleInBallExpand(Poly& c, const uint8_t* pos, const int8_t* sgn, int used);
}  // namespace portable

struct Backend {
  // ---- Arithmetic ----
  // Forward NTT (Alg. 41) in place, bit-reversed order, no final reduction.
  // In: |a_i| < q. Out: |a_i| < 9q.
  void (*ntt)(Poly& a) = &portable::Ntt;
  // Inverse NTT (Alg. 42) times 2^32. In: |a_i| <= q. Out: |a_i| < q.
  void (*invntt_to_mont)(Poly& a) = &portable::InvNttToMont;
  // c_i = a_i b_i 2^-32 mod q. In: |a_i b_i| < 2^31 q. Out: |c_i| < q. c may alias a or b.
  void (*pointwise_montgomery)(Poly& c, const Poly& a,
                               const Poly& b) = &portable::PointwiseMontgomery;
  // c_i = Σ_{j<n} a[j]_i b[j]_i 2^-32 mod q, one reduction of the 64-bit sum.
  // In: 1 <= n <= 8, Σ_j |a[j]_i b[j]_i| < 2^31 q. Out: |c_i| < q.
  void (*pointwise_acc_montgomery)(Poly& c, const Poly* a, const Poly* b,
                                   int n) = &portable::PointwiseAccMontgomery;
  // c_i = (Σ_{j<n} a[j]_i b[j]_i - x_i y_i) 2^-32 mod q, one reduction.
  // In: 1 <= n <= 7, Σ_j |a[j]_i b[j]_i| + |x_i y_i| < 2^31 q. Out: |c_i| < q.
  void (*pointwise_acc_sub_montgomery)(Poly& c, const Poly* a, const Poly* b, int n, const Poly& x,
                                       const Poly& y) = &portable::PointwiseAccSubMontgomery;
  // a_i mod q in [-6283008, 6283008] (subtracts round(a_i / 2^23) q). In: a_i <= 2^31 - 2^22 - 1.
  void (*reduce32)(Poly& a) = &portable::Reduce32;
  // Adds q to negative coefficients. In: |a_i| < q. Out: [0, q).
  void (*caddq)(Poly& a) = &portable::CAddQ;
  // c = a + b, c = a - b, no reduction. In: results fit in int32. c may alias a or b.
  void (*add)(Poly& c, const Poly& a, const Poly& b) = &portable::Add;
  void (*sub)(Poly& c, const Poly& a, const Poly& b) = &portable::Sub;
  // a_i <<= 13. In: [0, 2^10). Out: [0, q).
  void (*shift_left_d)(Poly& a) = &portable::ShiftLeftD;
  // v_i = lo_i + 2^9 hi_i with lo_i in [-256, 256). In: |v_i| < 2^30. lo may alias v.
  void (*split_low9)(Poly& lo, Poly& hi, const Poly& v) = &portable::SplitLow9;
  // x = reduce32(v) (|v_i| < q), split_low9(x) into lo and hi, lo_i += y_i; returns exceeds_norm
  // (lo, bound). In: |y_i| <= 2^20, bound in (0, 2^30). lo may alias v.
  uint32_t (*split_low9_add_norm)(Poly& lo, Poly& hi, const Poly& v, const Poly& y,
                                  int32_t bound) = &portable::SplitLow9AddNorm;

  // ---- Rounding ----
  // Power2Round (Alg. 35). In: [0, q). Out: t1 in [0, 2^10), t0 in (-2^12, 2^12].
  void (*power2round)(Poly& t1, Poly& t0, const Poly& t) = &portable::Power2Round;
  // Decompose (Alg. 36) with the q-1 corner case. In: [0, q).
  // Out: r1 in [0, (q-1)/(2 gamma2)), r0 in [-gamma2, gamma2].
  void (*decompose_small)(Poly& r1, Poly& r0, const Poly& r) = &portable::DecomposeSmall;
  void (*decompose_large)(Poly& r1, Poly& r0, const Poly& r) = &portable::DecomposeLarge;
  // The signer's MakeHint in the low-bits form (poly.h). In: |a0_i| < 2^30,
  // a1_i in [0, (q-1)/(2 gamma2)). Out: h_i in {0, 1}; returns the number of ones.
  unsigned (*make_hint_small)(Poly& h, const Poly& a0, const Poly& a1) = &portable::MakeHintSmall;
  unsigned (*make_hint_large)(Poly& h, const Poly& a0, const Poly& a1) = &portable::MakeHintLarge;
  // UseHint (Alg. 40). In: r_i in [0, q), h_i in {0, 1}. Out: [0, (q-1)/(2 gamma2)). out may alias
  // r.
  void (*use_hint_small)(Poly& out, const Poly& r, const Poly& h) = &portable::UseHintSmall;
  void (*use_hint_large)(Poly& out, const Poly& r, const Poly& h) = &portable::UseHintLarge;
  // All-ones when some |a_i| >= bound, else 0. In: |a_i| < 2^31 - 1, bound in (0, 2^31).
  uint32_t (*exceeds_norm)(const Poly& a, int32_t bound) = &portable::ExceedsNorm;

  // ---- Bit packing (FIPS 204 §7.1; little-endian bit order, exact sizes, nothing written past
  // the encoding) ----
  // t1: 10 bits, 320 bytes. Pack in: [0, 2^10). Unpack out: [0, 2^10); shifted: t1_i 2^13.
  void (*pack_t1)(uint8_t* out, const Poly& t1) = &portable::PackT1;
  void (*unpack_t1)(Poly& t1, const uint8_t* in) = &portable::UnpackT1;
  void (*unpack_t1_shifted)(Poly& t, const uint8_t* in) = &portable::UnpackT1Shifted;
  // Key generation's fused pass: t = (r + s) mod q in [0, q), Power2Round(t), t1 packed to t1_out
  // (320 bytes), t0 stored (t0 may alias r). In: |r_i + s_i| <= 2^31 - 2^22 - 1.
  void (*power2round_pack_t1)(uint8_t* t1_out, Poly& t0, const Poly& r,
                              const Poly& s) = &portable::Power2RoundPackT1;
  // s: 3 bits (eta 2, 96 bytes) or 4 bits (eta 4, 128 bytes). Pack in: [-eta, eta]. Unpack out:
  // [eta - (2^bits - 1), eta]; returns all-ones when a field is above 2 eta, else 0.
  void (*pack_eta2)(uint8_t* out, const Poly& s) = &portable::PackEta2;
  void (*pack_eta4)(uint8_t* out, const Poly& s) = &portable::PackEta4;
  uint32_t (*unpack_eta2)(Poly& s, const uint8_t* in) = &portable::UnpackEta2;
  uint32_t (*unpack_eta4)(Poly& s, const uint8_t* in) = &portable::UnpackEta4;
  // t0: 13 bits, 416 bytes. In / out: (-2^12, 2^12].
  void (*pack_t0)(uint8_t* out, const Poly& t0) = &portable::PackT0;
  void (*unpack_t0)(Poly& t0, const uint8_t* in) = &portable::UnpackT0;
  // z: 18 bits (gamma1 2^17, 576 bytes) or 20 bits (2^19, 640 bytes). In / out:
  // (-gamma1, gamma1] (every bit pattern is valid).
  void (*pack_z17)(uint8_t* out, const Poly& z) = &portable::PackZ17;
  void (*pack_z19)(uint8_t* out, const Poly& z) = &portable::PackZ19;
  void (*unpack_z17)(Poly& z, const uint8_t* in) = &portable::UnpackZ17;
  void (*unpack_z19)(Poly& z, const uint8_t* in) = &portable::UnpackZ19;
  // w1: 6 bits (small, 192 bytes) or 4 bits (large, 128 bytes). In: [0, (q-1)/(2 gamma2)).
  void (*pack_w1_small)(uint8_t* out, const Poly& w1) = &portable::PackW1Small;
  void (*pack_w1_large)(uint8_t* out, const Poly& w1) = &portable::PackW1Large;
  // The signer's fused pass: (r1, r0) = Decompose(CAddQ(r)), pack_w1(out, r1). In: |r_i| < q.
  // r1 or r0 may alias r.
  void (*decompose_pack_w1_small)(uint8_t* out, Poly& r1, Poly& r0,
                                  const Poly& r) = &portable::DecomposePackW1Small;
  void (*decompose_pack_w1_large)(uint8_t* out, Poly& r1, Poly& r0,
                                  const Poly& r) = &portable::DecomposePackW1Large;
  // The verifier's fused pass: pack_w1(UseHint(CAddQ(r), h)). In: |r_i| < q, h_i in {0, 1}.
  void (*use_hint_pack_w1_small)(uint8_t* out, const Poly& r,
                                 const Poly& h) = &portable::UseHintPackW1Small;
  void (*use_hint_pack_w1_large)(uint8_t* out, const Poly& r,
                                 const Poly& h) = &portable::UseHintPackW1Large;

  // ---- Sampling (sample.h) ----
  // RejNTTPoly's inner loop on public data: appends the 23-bit candidates (3 bytes each) of
  // buf[0..len) that are below q to a[count..256), stops at 256, returns the new count.
  // In: 0 <= count <= 256. May branch on the data.
  int (*reject_uniform)(int32_t* a, int count, const uint8_t* buf,
                        size_t len) = &portable::RejectUniform;
  // RejBoundedPoly's inner loop on secret data: appends CoeffFromHalfByte of the accepted
  // half-bytes of buf[0..len) (low half first) to a[count..256), stops at 256, returns the new
  // count; a[new count..256) may be overwritten (scratch). Only the accept pattern is declassified
  // (CtPublic), never a value.
  int (*reject_eta2)(int32_t* a, int count, const uint8_t* buf, size_t len) = &portable::RejectEta2;
  int (*reject_eta4)(int32_t* a, int count, const uint8_t* buf, size_t len) = &portable::RejectEta4;
  // SampleInBall's constant-time kernels on secret state (sample.h): steps processes candidate
  // bytes cand[0..n) (n <= 136) on the kBallSlots-slot list (pos, sgn), the next position i
  // (256 - tau .. 256; first = 256 - tau) and the unused sign bits; expand writes c from slots
  // [0, used) (distinct positions). Same state afterwards as the portable kernels.
  void (*sample_in_ball_steps)(uint8_t* pos, int8_t* sgn, uint32_t& i, uint32_t first,
                               uint64_t& signs, const uint8_t* cand,
                               size_t n) = &portable::SampleInBallSteps;
  void (*sample_in_ball_expand)(Poly& c, const uint8_t* pos, const int8_t* sgn,
                                int used) = &portable::SampleInBallExpand;
};

// The portable table (every hook at its default).
extern const Backend kPortable;

// The table of the active ISA (ActiveIsa()); the algorithm code reaches it through poly.h and
// sample.h.
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

}  // namespace pqcd::kernels::mldsa
