// Keccak-f[1600] on 4 independent states in YMM registers (AVX2), and the same fused with a fifth,
// single-state permutation in general-purpose registers. Built with the avx2 object library's
// flags (AVX2, BMI1/2); reached only through the avx2 and avx512 Keccak tables (backend.cc), which
// are used only once CPUID has shown AVX2 and OS support for YMM state.
//
// Each of the 25 lanes of the 4 states is one __m256i. ρ and π are register renaming, χ uses
// andnot, rotations by 8 and 56 use a byte shuffle (one uop instead of shift+shift+or). A round is
// computed one output plane at a time (θ's D first, then per plane five ρ∘π lanes and their χ).
//
// The fused x4+x1 permutation interleaves the single-state rounds (scalar andn/rorx/xor) with the
// vector rounds plane by plane, so that the out-of-order core runs both at once: on Zen 5 the pair
// costs ~1,370 TSC ticks against ~1,110 + ~760 run one after the other. The samplers use it to hash
// a long message (H(ek), J(z || c), H(pk)) while the matrix is being generated (KeccakRider).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "arch/x86_64/avx2/keccak/keccak_avx2.h"
#include "keccak/constants.h"

namespace pqcd::kernels {
namespace {

// The single-state round helpers (KeccakTheta, KeccakPlane<Y>, kKeccakRc), built here with BMI.
#include "keccak/keccak_f1600_body.inc"

constexpr const uint64_t* kRc = kKeccakRc;

template <int N>
__attribute__((always_inline)) inline __m256i Rol(__m256i x) {
  if constexpr (N % 64 == 0) {
    return x;
  } else if constexpr (N == 8) {
    const __m256i k = _mm256_setr_epi8(7, 0, 1, 2, 3, 4, 5, 6, 15, 8, 9, 10, 11, 12, 13, 14, 7, 0,
                                       1, 2, 3, 4, 5, 6, 15, 8, 9, 10, 11, 12, 13, 14);
    return _mm256_shuffle_epi8(x, k);
  } else if constexpr (N == 56) {
    const __m256i k = _mm256_setr_epi8(1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8, 1, 2,
                                       3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8);
    return _mm256_shuffle_epi8(x, k);
  } else {
    return _mm256_or_si256(_mm256_slli_epi64(x, N), _mm256_srli_epi64(x, 64 - N));
  }
}

__attribute__((always_inline)) inline __m256i Xor(__m256i a, __m256i b) {
  return _mm256_xor_si256(a, b);
}
// a ^ (~b & c)
__attribute__((always_inline)) inline __m256i Chi(__m256i a, __m256i b, __m256i c) {
  return _mm256_xor_si256(a, _mm256_andnot_si256(b, c));
}

// One 4-lane round split like the single-state one, so that the two can be interleaved: θ's D0..D4
// from the lanes A00..A24, then output plane y into E(5y)..E(5y+4) (ρ, π, χ; ι on plane 0). A and
// E are name prefixes of 25 local __m256i variables each.
#define PQCD_X4_THETA(A)                                                    \
  const __m256i C0 = Xor(Xor(Xor(A##00, A##05), Xor(A##10, A##15)), A##20); \
  const __m256i C1 = Xor(Xor(Xor(A##01, A##06), Xor(A##11, A##16)), A##21); \
  const __m256i C2 = Xor(Xor(Xor(A##02, A##07), Xor(A##12, A##17)), A##22); \
  const __m256i C3 = Xor(Xor(Xor(A##03, A##08), Xor(A##13, A##18)), A##23); \
  const __m256i C4 = Xor(Xor(Xor(A##04, A##09), Xor(A##14, A##19)), A##24); \
  const __m256i D0 = Xor(C4, Rol<1>(C1)), D1 = Xor(C0, Rol<1>(C2));         \
  const __m256i D2 = Xor(C1, Rol<1>(C3)), D3 = Xor(C2, Rol<1>(C4));         \
  const __m256i D4 = Xor(C3, Rol<1>(C0))

// Plane y: the five input lanes (s, rotation) that ρ∘π bring to it, and the output lanes o..o+4.
#define PQCD_X4_PLANE(A, E, s0, r0, s1, r1, s2, r2, s3, r3, s4, r4, d0, d1, d2, d3, d4, o0, o1, \
                      o2, o3, o4)                                                               \
  {                                                                                             \
    const __m256i B0 = Rol<r0>(Xor(A##s0, d0)), B1 = Rol<r1>(Xor(A##s1, d1));                   \
    const __m256i B2 = Rol<r2>(Xor(A##s2, d2)), B3 = Rol<r3>(Xor(A##s3, d3));                   \
    const __m256i B4 = Rol<r4>(Xor(A##s4, d4));                                                 \
    E##o0 = Chi(B0, B1, B2);                                                                    \
    E##o1 = Chi(B1, B2, B3);                                                                    \
    E##o2 = Chi(B2, B3, B4);                                                                    \
    E##o3 = Chi(B3, B4, B0);                                                                    \
    E##o4 = Chi(B4, B0, B1);                                                                    \
  }

// A 4-lane round (A -> E) and a single-state round (s_in -> s_out) interleaved plane by plane:
// the vector units run one while the integer units run the other.
// The five output planes with their input lanes and rotations (kKeccakSrc / kKeccakRho).
#define PQCD_X4_PLANE0(A, E, rc)                                                                  \
  PQCD_X4_PLANE(A, E, 00, 64, 06, 44, 12, 43, 18, 21, 24, 14, D0, D1, D2, D3, D4, 00, 01, 02, 03, \
                04);                                                                              \
  E##00 = Xor(E##00, _mm256_set1_epi64x(static_cast<long long>(rc)))
#define PQCD_X4_PLANE1(A, E) \
  PQCD_X4_PLANE(A, E, 03, 28, 09, 20, 10, 3, 16, 45, 22, 61, D3, D4, D0, D1, D2, 05, 06, 07, 08, 09)
#define PQCD_X4_PLANE2(A, E) \
  PQCD_X4_PLANE(A, E, 01, 1, 07, 6, 13, 25, 19, 8, 20, 18, D1, D2, D3, D4, D0, 10, 11, 12, 13, 14)
#define PQCD_X4_PLANE3(A, E)                                                                      \
  PQCD_X4_PLANE(A, E, 04, 27, 05, 36, 11, 10, 17, 15, 23, 56, D4, D0, D1, D2, D3, 15, 16, 17, 18, \
                19)
#define PQCD_X4_PLANE4(A, E) \
  PQCD_X4_PLANE(A, E, 02, 62, 08, 55, 14, 39, 15, 41, 21, 2, D2, D3, D4, D0, D1, 20, 21, 22, 23, 24)

// One 4-lane round A -> E.
#define PQCD_X4_ROUND(A, E, rc) \
  {                             \
    PQCD_X4_THETA(A);           \
    PQCD_X4_PLANE0(A, E, rc);   \
    PQCD_X4_PLANE1(A, E);       \
    PQCD_X4_PLANE2(A, E);       \
    PQCD_X4_PLANE3(A, E);       \
    PQCD_X4_PLANE4(A, E);       \
  }

// A 4-lane round (A -> E) and a single-state round (s_in -> s_out) interleaved plane by plane:
// the vector units run one while the integer units run the other.
#define PQCD_X4X1_ROUND(A, E, s_in, s_out, rc) \
  {                                            \
    PQCD_X4_THETA(A);                          \
    uint64_t sd[5];                            \
    KeccakTheta(s_in, sd);                     \
    PQCD_X4_PLANE0(A, E, rc);                  \
    KeccakPlane<0>(s_in, s_out, sd, rc);       \
    PQCD_X4_PLANE1(A, E);                      \
    KeccakPlane<1>(s_in, s_out, sd, rc);       \
    PQCD_X4_PLANE2(A, E);                      \
    KeccakPlane<2>(s_in, s_out, sd, rc);       \
    PQCD_X4_PLANE3(A, E);                      \
    KeccakPlane<3>(s_in, s_out, sd, rc);       \
    PQCD_X4_PLANE4(A, E);                      \
    KeccakPlane<4>(s_in, s_out, sd, rc);       \
  }

// Loads / stores the 25 lanes of 4 states (column `stride` apart) into a00..a24.
#define PQCD_X4_LOAD(st, stride)                                                 \
  auto ld = [&](int i) {                                                         \
    return _mm256_loadu_si256(                                                   \
        reinterpret_cast<const __m256i*>(st + static_cast<size_t>(i) * stride)); \
  };                                                                             \
  __m256i a00 = ld(0), a01 = ld(1), a02 = ld(2), a03 = ld(3), a04 = ld(4);       \
  __m256i a05 = ld(5), a06 = ld(6), a07 = ld(7), a08 = ld(8), a09 = ld(9);       \
  __m256i a10 = ld(10), a11 = ld(11), a12 = ld(12), a13 = ld(13), a14 = ld(14);  \
  __m256i a15 = ld(15), a16 = ld(16), a17 = ld(17), a18 = ld(18), a19 = ld(19);  \
  __m256i a20 = ld(20), a21 = ld(21), a22 = ld(22), a23 = ld(23), a24 = ld(24);  \
  __m256i e00, e01, e02, e03, e04, e05, e06, e07, e08, e09, e10, e11, e12;       \
  __m256i e13, e14, e15, e16, e17, e18, e19, e20, e21, e22, e23, e24
#define PQCD_X4_STORE(st, stride)                                                             \
  auto stv = [&](int i, __m256i v) {                                                          \
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(st + static_cast<size_t>(i) * stride), v); \
  };                                                                                          \
  stv(0, a00), stv(1, a01), stv(2, a02), stv(3, a03), stv(4, a04);                            \
  stv(5, a05), stv(6, a06), stv(7, a07), stv(8, a08), stv(9, a09);                            \
  stv(10, a10), stv(11, a11), stv(12, a12), stv(13, a13), stv(14, a14);                       \
  stv(15, a15), stv(16, a16), stv(17, a17), stv(18, a18), stv(19, a19);                       \
  stv(20, a20), stv(21, a21), stv(22, a22), stv(23, a23), stv(24, a24)

}  // namespace

void KeccakF1600x4x1Avx2(uint64_t* st, size_t stride, unsigned /*live*/, uint64_t st1[25]) {
  PQCD_X4_LOAD(st, stride);
  uint64_t tmp[25];
  for (int round = 0; round < 24; round += 2) {
    PQCD_X4X1_ROUND(a, e, st1, tmp, kRc[round]);
    PQCD_X4X1_ROUND(e, a, tmp, st1, kRc[round + 1]);
  }
  PQCD_X4_STORE(st, stride);
  // Wipe the single-state intermediate (it may be secret); the asm barrier keeps the stores alive.
  std::memset(tmp, 0, sizeof(tmp));
  __asm__ volatile("" : : "r"(tmp) : "memory");
}

// Plane-at-a-time with the lanes in named variables (the compiler keeps 16 in registers and spills
// the rest): measured 7% faster than computing all 25 ρ∘π values of a round before χ.
void KeccakF1600x4Avx2(uint64_t* st, size_t stride, unsigned /*live*/) {
  PQCD_X4_LOAD(st, stride);
  for (int round = 0; round < 24; round += 2) {
    PQCD_X4_ROUND(a, e, kRc[round]);
    PQCD_X4_ROUND(e, a, kRc[round + 1]);
  }
  PQCD_X4_STORE(st, stride);
}

void KeccakF1600x8ViaX4Avx2(uint64_t* st) {
  KeccakF1600x4Avx2(st, 8, keccak::kAllLanes);
  KeccakF1600x4Avx2(st + 4, 8, keccak::kAllLanes);
}

// Squeeze helper: words [0, words) of the 4 states in columns 0..3 (stride columns apart) to
// out[j] as little-endian bytes. Four words of the four states are one 4x4 transpose of 64-bit
// elements (unpack + 128-bit permute) instead of sixteen scalar load/store pairs.
void KeccakExtractLanes4Avx2(const uint64_t* st, size_t stride, size_t words,
                             uint8_t* const out[4]) {
  size_t w = 0;
  for (; w + 4 <= words; w += 4) {
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(st + w * stride));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(st + (w + 1) * stride));
    const __m256i v2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(st + (w + 2) * stride));
    const __m256i v3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(st + (w + 3) * stride));
    const __m256i t0 = _mm256_unpacklo_epi64(v0, v1);  // s0w0 s0w1 | s2w0 s2w1
    const __m256i t1 = _mm256_unpackhi_epi64(v0, v1);  // s1w0 s1w1 | s3w0 s3w1
    const __m256i t2 = _mm256_unpacklo_epi64(v2, v3);  // s0w2 s0w3 | s2w2 s2w3
    const __m256i t3 = _mm256_unpackhi_epi64(v2, v3);  // s1w2 s1w3 | s3w2 s3w3
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[0] + 8 * w),
                        _mm256_permute2x128_si256(t0, t2, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[1] + 8 * w),
                        _mm256_permute2x128_si256(t1, t3, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[2] + 8 * w),
                        _mm256_permute2x128_si256(t0, t2, 0x31));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[3] + 8 * w),
                        _mm256_permute2x128_si256(t1, t3, 0x31));
  }
  for (; w < words; ++w) {
    for (size_t j = 0; j < 4; ++j) std::memcpy(out[j] + 8 * w, st + w * stride + j, 8);
  }
}

}  // namespace pqcd::kernels
