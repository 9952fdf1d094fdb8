// SM3 compression on 8 independent lanes in YMM registers (AVX2), GB/T 32905-2016 §5.3.
// Built with the avx2 flags; reached only through the avx2 SM3 table (backend.cc here), used only
// once CPUID has shown AVX2 and OS YMM support.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "arch/x86_64/avx2/sm3/sm3_avx2.h"

namespace pqcd::kernels {
namespace {

template <int N>
__attribute__((always_inline)) inline __m256i Rol(__m256i x) {
  return _mm256_or_si256(_mm256_slli_epi32(x, N), _mm256_srli_epi32(x, 32 - N));
}
__attribute__((always_inline)) inline __m256i Xor3(__m256i a, __m256i b, __m256i c) {
  return _mm256_xor_si256(_mm256_xor_si256(a, b), c);
}
__attribute__((always_inline)) inline __m256i Add(__m256i a, __m256i b) {
  return _mm256_add_epi32(a, b);
}
__attribute__((always_inline)) inline __m256i P0(__m256i x) {
  return Xor3(x, Rol<9>(x), Rol<17>(x));
}
__attribute__((always_inline)) inline __m256i P1(__m256i x) {
  return Xor3(x, Rol<15>(x), Rol<23>(x));
}

// T_j <<< (j mod 32), as in the portable code.
struct RotatedT {
  uint32_t t[64];
  constexpr RotatedT() : t() {
    for (int j = 0; j < 64; ++j) {
      const uint32_t base = j < 16 ? 0x79cc4519u : 0x7a879d8au;
      const int r = j % 32;
      t[j] = r == 0 ? base : (base << r) | (base >> (32 - r));
    }
  }
};
constexpr RotatedT kT;

}  // namespace

void Sm3CompressX8Avx2(uint32_t* v, const uint8_t* const blocks[8]) {
  // Message words, word j of lane l at m[j][l]; byte-swapped to big-endian order.
  alignas(32) uint32_t m[16][8];
  for (int l = 0; l < 8; ++l) {
    for (int j = 0; j < 16; ++j) {
      uint32_t w;
      std::memcpy(&w, blocks[l] + 4 * j, 4);
      m[j][l] = __builtin_bswap32(w);
    }
  }
  __m256i w[68];
  for (int j = 0; j < 16; ++j) w[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m[j]));
  for (int j = 16; j < 68; ++j) {
    w[j] = Xor3(P1(Xor3(w[j - 16], w[j - 9], Rol<15>(w[j - 3]))), Rol<7>(w[j - 13]), w[j - 6]);
  }
  auto ld = [&](int i) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 8 * i)); };
  __m256i a = ld(0), b = ld(1), c = ld(2), d = ld(3), e = ld(4), f = ld(5), g = ld(6), h = ld(7);
  const __m256i a0 = a, b0 = b, c0 = c, d0 = d, e0 = e, f0 = f, g0 = g, h0 = h;
  for (int j = 0; j < 64; ++j) {
    const __m256i a12 = Rol<12>(a);
    const __m256i ss1 = Rol<7>(Add(Add(a12, e), _mm256_set1_epi32(static_cast<int>(kT.t[j]))));
    const __m256i ss2 = _mm256_xor_si256(ss1, a12);
    __m256i ff, gg;
    if (j < 16) {
      ff = Xor3(a, b, c);
      gg = Xor3(e, f, g);
    } else {
      ff = _mm256_or_si256(_mm256_and_si256(a, b), _mm256_and_si256(c, _mm256_or_si256(a, b)));
      gg = _mm256_or_si256(_mm256_and_si256(e, f), _mm256_andnot_si256(e, g));
    }
    const __m256i tt1 = Add(Add(ff, d), Add(ss2, _mm256_xor_si256(w[j], w[j + 4])));
    const __m256i tt2 = Add(Add(gg, h), Add(ss1, w[j]));
    d = c;
    c = Rol<9>(b);
    b = a;
    a = tt1;
    h = g;
    g = Rol<19>(f);
    f = e;
    e = P0(tt2);
  }
  auto st = [&](int i, __m256i x) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 8 * i), x);
  };
  st(0, _mm256_xor_si256(a, a0));
  st(1, _mm256_xor_si256(b, b0));
  st(2, _mm256_xor_si256(c, c0));
  st(3, _mm256_xor_si256(d, d0));
  st(4, _mm256_xor_si256(e, e0));
  st(5, _mm256_xor_si256(f, f0));
  st(6, _mm256_xor_si256(g, g0));
  st(7, _mm256_xor_si256(h, h0));
}

}  // namespace pqcd::kernels
