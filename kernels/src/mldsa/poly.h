// ML-DSA (FIPS 204) polynomial layer: arithmetic in R_q = Z_q[X]/(X^256 + 1), the NTT, rounding
// (Power2Round / Decompose / hints), norm checks and bit packing.
//
// This is the portable reference of every polynomial kernel. Each function states the bounds it
// expects on its input coefficients and guarantees on its output: that is the contract a SIMD
// backend must meet, byte for byte. "Standard representative" means [0, q).
//
// Everything here is constant time with respect to coefficient values: no branch, memory index or
// division depends on them (divisions by constants are multiply-shift sequences).
//
// Internal header of pqcd_mldsa; not part of the public API.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace pqcd::kernels::mldsa {

inline constexpr int kN = 256;
inline constexpr int32_t kQ = 8380417;  // 2^23 - 2^13 + 1
inline constexpr int kD = 13;           // dropped bits of t (FIPS 204 Table 1)

// One polynomial, 64-byte aligned so that vector loads never split a cache line.
struct alignas(64) Poly {
  int32_t coeffs[kN];
};
static_assert(sizeof(Poly) == 1024);

template <int N>
using PolyVec = std::array<Poly, N>;

// ---- Arithmetic ------------------------------------------------------------------------------

// Forward NTT (FIPS 204 Alg. 41), in place, bit-reversed output order, no final reduction.
// In: |a_i| < q. Out: |a_i| < 9q.
void Ntt(Poly& a);

// Inverse NTT (FIPS 204 Alg. 42) followed by multiplication by 2^32 ("to Montgomery"), so that
// InvNttToMont(PointwiseMontgomery(Ntt(a), Ntt(b))) = a * b exactly mod q.
// In: |a_i| <= q. Out: |a_i| < q.
void InvNttToMont(Poly& a);

// c_i = a_i * b_i * 2^-32 mod q. In: |a_i * b_i| < 2^31 q (e.g. both < 9q). Out: |c_i| < q.
void PointwiseMontgomery(Poly& c, const Poly& a, const Poly& b);

// c_i = sum_j a[j]_i * b[j]_i * 2^-32 mod q, accumulated in 64 bits with one reduction.
// In: sum_j |a[j]_i * b[j]_i| < 2^31 q (e.g. n <= 8, a[j] in [0, q), |b[j]_i| < 9q). Out: |c_i| <
// q.
void PointwiseAccMontgomery(Poly& c, const Poly* a, const Poly* b, int n);

// c_i = (sum_j a[j]_i * b[j]_i - x_i * y_i) * 2^-32 mod q, accumulated in 64 bits with one
// reduction (the verifier's A-hat z-hat - c-hat t1-hat). In: sum_j |a[j]_i * b[j]_i| + |x_i * y_i|
// < 2^31 q (e.g. n <= 7, a[j] in [0, q), |b[j]_i|, |x_i|, |y_i| < 9q). Out: |c_i| < q.
void PointwiseAccSubMontgomery(Poly& c, const Poly* a, const Poly* b, int n, const Poly& x,
                               const Poly& y);

// a_i = a_i mod q, a representative in [-6283008, 6283008]. In: a_i <= 2^31 - 2^22 - 1.
// A value whose centered representative v has |v| < 2097409 comes out as v exactly.
void Reduce32(Poly& a);

// Adds q to negative coefficients. In: |a_i| < q. Out: [0, q).
void CAddQ(Poly& a);

// c = a + b, c = a - b, no reduction. In: the sums must fit in int32 (callers keep |.| < 2^30).
void Add(Poly& c, const Poly& a, const Poly& b);
void Sub(Poly& c, const Poly& a, const Poly& b);

// a_i = a_i * 2^13. In: a_i in [0, 2^10). Out: [0, q).
void ShiftLeftD(Poly& a);

// Splits exact integers v_i = lo_i + 2^9 hi_i with lo_i in [-256, 256): lo_i = ((v_i + 256) mod
// 2^9) - 256, hi_i = (v_i - lo_i) / 2^9. In: |v_i| < 2^30. lo may alias v.
// The signer gets c s1 + 2^9 c s2 from one inverse NTT (|c s1|, |c s2| <= beta < 256) and splits
// it into c s1 (lo) and c s2 (hi).
void SplitLow9(Poly& lo, Poly& hi, const Poly& v);

// The signer's fused pass: x = Reduce32(v) (|v_i| < q), then SplitLow9(x) into lo and hi,
// lo_i += y_i; returns ExceedsNorm(lo, bound). In: |y_i| <= 2^20, bound in (0, 2^30). lo may alias
// v.
uint32_t SplitLow9AddNorm(Poly& lo, Poly& hi, const Poly& v, const Poly& y, int32_t bound);

// ---- Rounding (FIPS 204 §7.4) ----------------------------------------------------------------

// Power2Round (Alg. 35): t = t1 * 2^13 + t0. In: t_i in [0, q).
// Out: t1_i in [0, 2^10), t0_i in (-2^12, 2^12].
void Power2Round(Poly& t1, Poly& t0, const Poly& t);

// Decompose (Alg. 36): r = r1 * 2 gamma2 + r0 mod q, with the q-1 corner case folded to r1 = 0.
// In: r_i in [0, q). Out: r1_i in [0, (q-1)/(2 gamma2)), r0_i in [-gamma2, gamma2].
// Gamma2 is (q-1)/88 or (q-1)/32.
template <int32_t Gamma2>
void Decompose(Poly& r1, Poly& r0, const Poly& r);

// The signer's MakeHint (Alg. 39) in the low-bits form: with a0 = LowBits(w) - c s2 + c t0 and
// a1 = HighBits(w), h_i = 1 iff HighBits(w - c s2 + c t0) != HighBits(w - c s2), which is
// h_i = [a0_i > gamma2 or a0_i < -gamma2 or (a0_i == -gamma2 and a1_i != 0)] whenever the
// signer's checks ||LowBits(w - c s2)|| < gamma2 - beta and ||c t0|| < gamma2 passed.
// In: |a0_i| < 2^30, a1_i in [0, (q-1)/(2 gamma2)). Out: h_i in {0, 1}; returns the number of ones.
template <int32_t Gamma2>
unsigned MakeHint(Poly& h, const Poly& a0, const Poly& a1);

// UseHint (Alg. 40). In: r_i in [0, q), h_i in {0, 1}. Out: [0, (q-1)/(2 gamma2)).
template <int32_t Gamma2>
void UseHint(Poly& out, const Poly& r, const Poly& h);

// All-ones when some |a_i| >= bound, else 0, without data-dependent branches (the caller
// declassifies the verdict). In: |a_i| < 2^31 - 1, bound <= (q-1)/8... any bound in (0, 2^31).
uint32_t ExceedsNorm(const Poly& a, int32_t bound);

// ---- Bit packing (FIPS 204 §7.1, Alg. 16-19 specialized) --------------------------------------

// SimpleBitPack(t1, 2^10 - 1): 320 bytes. In: [0, 2^10).
void PackT1(uint8_t out[320], const Poly& t1);
void UnpackT1(Poly& t1, const uint8_t in[320]);  // Out: [0, 2^10)

// UnpackT1 followed by ShiftLeftD: t1_i * 2^13 in [0, q).
void UnpackT1Shifted(Poly& t, const uint8_t in[320]);

// Key generation's fused pass: t = (r + s) mod q in [0, q) (as Reduce32 then CAddQ), then
// Power2Round(t): t1 packed into t1_out (PackT1, 320 bytes), t0 stored into t0 (may alias r).
// In: |r_i + s_i| <= 2^31 - 2^22 - 1 (e.g. |r_i| < q, |s_i| <= eta).
void Power2RoundPackT1(uint8_t t1_out[320], Poly& t0, const Poly& r, const Poly& s);

// BitPack(s, eta, eta): 96 bytes (eta = 2) or 128 bytes (eta = 4). In: [-eta, eta].
template <int Eta>
void PackEta(uint8_t* out, const Poly& s);
// BitUnpack(.., eta, eta). Out: [eta - (2^bits - 1), eta]; returns all-ones when some coefficient
// is outside [-eta, eta] (a malformed private key), computed without branches.
template <int Eta>
uint32_t UnpackEta(Poly& s, const uint8_t* in);
template <int Eta>
inline constexpr size_t kEtaPackedBytes = Eta == 2 ? 96 : 128;

// BitPack(t0, 2^12 - 1, 2^12): 416 bytes. In: (-2^12, 2^12]. Unpack out: same range.
void PackT0(uint8_t out[416], const Poly& t0);
void UnpackT0(Poly& t0, const uint8_t in[416]);

// BitPack(z, gamma1 - 1, gamma1), gamma1 = 2^Gamma1Bits: 32 * (Gamma1Bits + 1) bytes.
// In: (-gamma1, gamma1]. Unpack out: (-gamma1, gamma1] (every bit pattern is valid).
template <int Gamma1Bits>
void PackZ(uint8_t* out, const Poly& z);
template <int Gamma1Bits>
void UnpackZ(Poly& z, const uint8_t* in);

// SimpleBitPack(w1, (q-1)/(2 gamma2) - 1): 192 bytes (6 bits, gamma2 = (q-1)/88) or 128 bytes
// (4 bits, gamma2 = (q-1)/32). In: [0, (q-1)/(2 gamma2)).
template <int32_t Gamma2>
inline constexpr size_t kW1PackedBytes = Gamma2 == (kQ - 1) / 88 ? 192 : 128;
template <int32_t Gamma2>
void PackW1(uint8_t* out, const Poly& w1);

// The signer's fused pass: (r1, r0) = Decompose(CAddQ(r)), PackW1(out, r1). In: |r_i| < q.
// r1 or r0 may alias r.
template <int32_t Gamma2>
void DecomposePackW1(uint8_t* out, Poly& r1, Poly& r0, const Poly& r);

// The verifier's fused pass: PackW1(UseHint(CAddQ(r), h)). In: |r_i| < q, h_i in {0, 1}.
template <int32_t Gamma2>
void UseHintPackW1(uint8_t* out, const Poly& r, const Poly& h);

// HintBitPack (Alg. 20): omega + k bytes. In: h_i in {0, 1}, at most omega ones in total.
void PackHint(uint8_t* out, const Poly* h, int k, int omega);
// HintBitUnpack (Alg. 21). Returns false for a malformed encoding (indices not strictly
// increasing within a polynomial, counts decreasing or above omega, nonzero padding).
// Public data: may branch.
bool UnpackHint(Poly* h, const uint8_t* in, int k, int omega);

}  // namespace pqcd::kernels::mldsa
