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

}  // namespace

void KeccakF1600x4Avx2(uint64_t* st, size_t stride) {
  auto ld = [&](int i) {
    return _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(st + static_cast<size_t>(i) * stride));
  };
  __m256i a00 = ld(0), a01 = ld(1), a02 = ld(2), a03 = ld(3), a04 = ld(4);
  __m256i a05 = ld(5), a06 = ld(6), a07 = ld(7), a08 = ld(8), a09 = ld(9);
  __m256i a10 = ld(10), a11 = ld(11), a12 = ld(12), a13 = ld(13), a14 = ld(14);
  __m256i a15 = ld(15), a16 = ld(16), a17 = ld(17), a18 = ld(18), a19 = ld(19);
  __m256i a20 = ld(20), a21 = ld(21), a22 = ld(22), a23 = ld(23), a24 = ld(24);
  for (int round = 0; round < 24; ++round) {
    const __m256i c0 = Xor(Xor(Xor(a00, a05), Xor(a10, a15)), a20);
    const __m256i c1 = Xor(Xor(Xor(a01, a06), Xor(a11, a16)), a21);
    const __m256i c2 = Xor(Xor(Xor(a02, a07), Xor(a12, a17)), a22);
    const __m256i c3 = Xor(Xor(Xor(a03, a08), Xor(a13, a18)), a23);
    const __m256i c4 = Xor(Xor(Xor(a04, a09), Xor(a14, a19)), a24);
    const __m256i d0 = Xor(c4, Rol<1>(c1));
    const __m256i d1 = Xor(c0, Rol<1>(c2));
    const __m256i d2 = Xor(c1, Rol<1>(c3));
    const __m256i d3 = Xor(c2, Rol<1>(c4));
    const __m256i d4 = Xor(c3, Rol<1>(c0));
    const __m256i b00 = Xor(a00, d0);
    const __m256i b01 = Rol<44>(Xor(a06, d1));
    const __m256i b02 = Rol<43>(Xor(a12, d2));
    const __m256i b03 = Rol<21>(Xor(a18, d3));
    const __m256i b04 = Rol<14>(Xor(a24, d4));
    const __m256i b05 = Rol<28>(Xor(a03, d3));
    const __m256i b06 = Rol<20>(Xor(a09, d4));
    const __m256i b07 = Rol<3>(Xor(a10, d0));
    const __m256i b08 = Rol<45>(Xor(a16, d1));
    const __m256i b09 = Rol<61>(Xor(a22, d2));
    const __m256i b10 = Rol<1>(Xor(a01, d1));
    const __m256i b11 = Rol<6>(Xor(a07, d2));
    const __m256i b12 = Rol<25>(Xor(a13, d3));
    const __m256i b13 = Rol<8>(Xor(a19, d4));
    const __m256i b14 = Rol<18>(Xor(a20, d0));
    const __m256i b15 = Rol<27>(Xor(a04, d4));
    const __m256i b16 = Rol<36>(Xor(a05, d0));
    const __m256i b17 = Rol<10>(Xor(a11, d1));
    const __m256i b18 = Rol<15>(Xor(a17, d2));
    const __m256i b19 = Rol<56>(Xor(a23, d3));
    const __m256i b20 = Rol<62>(Xor(a02, d2));
    const __m256i b21 = Rol<55>(Xor(a08, d3));
    const __m256i b22 = Rol<39>(Xor(a14, d4));
    const __m256i b23 = Rol<41>(Xor(a15, d0));
    const __m256i b24 = Rol<2>(Xor(a21, d1));
    a00 = Xor(Chi(b00, b01, b02), _mm256_set1_epi64x(static_cast<long long>(kRc[round])));
    a01 = Chi(b01, b02, b03);
    a02 = Chi(b02, b03, b04);
    a03 = Chi(b03, b04, b00);
    a04 = Chi(b04, b00, b01);
    a05 = Chi(b05, b06, b07);
    a06 = Chi(b06, b07, b08);
    a07 = Chi(b07, b08, b09);
    a08 = Chi(b08, b09, b05);
    a09 = Chi(b09, b05, b06);
    a10 = Chi(b10, b11, b12);
    a11 = Chi(b11, b12, b13);
    a12 = Chi(b12, b13, b14);
    a13 = Chi(b13, b14, b10);
    a14 = Chi(b14, b10, b11);
    a15 = Chi(b15, b16, b17);
    a16 = Chi(b16, b17, b18);
    a17 = Chi(b17, b18, b19);
    a18 = Chi(b18, b19, b15);
    a19 = Chi(b19, b15, b16);
    a20 = Chi(b20, b21, b22);
    a21 = Chi(b21, b22, b23);
    a22 = Chi(b22, b23, b24);
    a23 = Chi(b23, b24, b20);
    a24 = Chi(b24, b20, b21);
  }
  auto stv = [&](int i, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(st + static_cast<size_t>(i) * stride), v);
  };
  stv(0, a00), stv(1, a01), stv(2, a02), stv(3, a03), stv(4, a04);
  stv(5, a05), stv(6, a06), stv(7, a07), stv(8, a08), stv(9, a09);
  stv(10, a10), stv(11, a11), stv(12, a12), stv(13, a13), stv(14, a14);
  stv(15, a15), stv(16, a16), stv(17, a17), stv(18, a18), stv(19, a19);
  stv(20, a20), stv(21, a21), stv(22, a22), stv(23, a23), stv(24, a24);
}

}  // namespace pqcd::kernels
