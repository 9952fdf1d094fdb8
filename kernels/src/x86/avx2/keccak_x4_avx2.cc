// Keccak-f[1600] on 4 independent states in YMM registers (AVX2). Built with -mavx2 only; called
// only when the dispatcher has seen AVX2 and OS support for YMM state.
//
// Each of the 25 lanes of the 4 states is one __m256i. ρ and π are register renaming (the b*
// values), χ uses andnot, rotations by 8 and 56 use a byte shuffle (one uop instead of
// shift+shift+or).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace pqcd::kernels {
namespace {

constexpr uint64_t kRc[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL, 0x8000000080008000ULL,
    0x000000000000808bULL, 0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL,
    0x000000000000008aULL, 0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL, 0x8000000000008003ULL,
    0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800aULL, 0x800000008000000aULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL};

template <int N>
__attribute__((always_inline)) inline __m256i Rol(__m256i x) {
  if constexpr (N == 8) {
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

// One round from `in` to `out` (25 lanes each, one __m256i per lane), one output plane at a time so
// that only ~15 registers are live (AVX2 has 16): θ's parities, then for each plane the five lanes
// that ρ∘π bring there, χ, and ι on lane 0.
#define PQCD_X4_PLANE(y, s0, r0, s1, r1, s2, r2, s3, r3, s4, r4, d0, d1, d2, d3, d4) \
  {                                                                                  \
    const __m256i b0 = Rol<r0>(Xor(in[s0], d0)), b1 = Rol<r1>(Xor(in[s1], d1));      \
    const __m256i b2 = Rol<r2>(Xor(in[s2], d2)), b3 = Rol<r3>(Xor(in[s3], d3));      \
    const __m256i b4 = Rol<r4>(Xor(in[s4], d4));                                     \
    out[5 * y + 0] = Chi(b0, b1, b2);                                                \
    out[5 * y + 1] = Chi(b1, b2, b3);                                                \
    out[5 * y + 2] = Chi(b2, b3, b4);                                                \
    out[5 * y + 3] = Chi(b3, b4, b0);                                                \
    out[5 * y + 4] = Chi(b4, b0, b1);                                                \
  }

__attribute__((always_inline)) inline void Round(const __m256i* __restrict in,
                                                 __m256i* __restrict out, uint64_t rc) {
  const __m256i c0 = Xor(Xor(Xor(in[0], in[5]), Xor(in[10], in[15])), in[20]);
  const __m256i c1 = Xor(Xor(Xor(in[1], in[6]), Xor(in[11], in[16])), in[21]);
  const __m256i c2 = Xor(Xor(Xor(in[2], in[7]), Xor(in[12], in[17])), in[22]);
  const __m256i c3 = Xor(Xor(Xor(in[3], in[8]), Xor(in[13], in[18])), in[23]);
  const __m256i c4 = Xor(Xor(Xor(in[4], in[9]), Xor(in[14], in[19])), in[24]);
  const __m256i d0 = Xor(c4, Rol<1>(c1)), d1 = Xor(c0, Rol<1>(c2)), d2 = Xor(c1, Rol<1>(c3));
  const __m256i d3 = Xor(c2, Rol<1>(c4)), d4 = Xor(c3, Rol<1>(c0));
  {
    const __m256i b0 = Xor(in[0], d0), b1 = Rol<44>(Xor(in[6], d1));
    const __m256i b2 = Rol<43>(Xor(in[12], d2)), b3 = Rol<21>(Xor(in[18], d3));
    const __m256i b4 = Rol<14>(Xor(in[24], d4));
    out[0] = Xor(Chi(b0, b1, b2), _mm256_set1_epi64x(static_cast<long long>(rc)));
    out[1] = Chi(b1, b2, b3);
    out[2] = Chi(b2, b3, b4);
    out[3] = Chi(b3, b4, b0);
    out[4] = Chi(b4, b0, b1);
  }
  PQCD_X4_PLANE(1, 3, 28, 9, 20, 10, 3, 16, 45, 22, 61, d3, d4, d0, d1, d2)
  PQCD_X4_PLANE(2, 1, 1, 7, 6, 13, 25, 19, 8, 20, 18, d1, d2, d3, d4, d0)
  PQCD_X4_PLANE(3, 4, 27, 5, 36, 11, 10, 17, 15, 23, 56, d4, d0, d1, d2, d3)
  PQCD_X4_PLANE(4, 2, 62, 8, 55, 14, 39, 15, 41, 21, 2, d2, d3, d4, d0, d1)
}
#undef PQCD_X4_PLANE

}  // namespace

void KeccakF1600x4Avx2(uint64_t* st, size_t stride) {
  __m256i a[25], e[25];
  for (size_t i = 0; i < 25; ++i) {
    a[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(st + i * stride));
  }
  for (int round = 0; round < 24; round += 2) {
    Round(a, e, kRc[round]);
    Round(e, a, kRc[round + 1]);
  }
  for (size_t i = 0; i < 25; ++i) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(st + i * stride), a[i]);
  }
  // The local copies may hold secret state.
  const __m256i zero = _mm256_setzero_si256();
  for (size_t i = 0; i < 25; ++i) a[i] = e[i] = zero;
  __asm__ volatile("" : : "r"(a), "r"(e) : "memory");
}

}  // namespace pqcd::kernels
