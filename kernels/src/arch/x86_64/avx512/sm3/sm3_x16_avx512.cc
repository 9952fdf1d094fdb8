// SM3 compression on 16 independent lanes in ZMM registers (AVX-512F), GB/T 32905-2016 §5.3.
// vprold rotates; vpternlogd for the three-way XORs (0x96), majority FF (0xe8) and choice GG
// (0xca).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "arch/x86_64/avx512/sm3/sm3_avx512.h"

// GCC 12 reports _mm512_undefined_epi32() inside _mm512_rol_epi32 as uninitialized (a false
// positive in its own header).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace pqcd::kernels {
namespace {

template <int N>
__attribute__((always_inline)) inline __m512i Rol(__m512i x) {
  return _mm512_rol_epi32(x, N);
}
__attribute__((always_inline)) inline __m512i Xor3(__m512i a, __m512i b, __m512i c) {
  return _mm512_ternarylogic_epi32(a, b, c, 0x96);
}
__attribute__((always_inline)) inline __m512i Add(__m512i a, __m512i b) {
  return _mm512_add_epi32(a, b);
}
__attribute__((always_inline)) inline __m512i P0(__m512i x) {
  return Xor3(x, Rol<9>(x), Rol<17>(x));
}
__attribute__((always_inline)) inline __m512i P1(__m512i x) {
  return Xor3(x, Rol<15>(x), Rol<23>(x));
}

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

void Sm3CompressX16Avx512(uint32_t* v, const uint8_t* const blocks[16]) {
  alignas(64) uint32_t m[16][16];
  for (int l = 0; l < 16; ++l) {
    for (int j = 0; j < 16; ++j) {
      uint32_t w;
      std::memcpy(&w, blocks[l] + 4 * j, 4);
      m[j][l] = __builtin_bswap32(w);
    }
  }
  __m512i w[68];
  for (int j = 0; j < 16; ++j) w[j] = _mm512_load_si512(m[j]);
  for (int j = 16; j < 68; ++j) {
    w[j] = Xor3(P1(Xor3(w[j - 16], w[j - 9], Rol<15>(w[j - 3]))), Rol<7>(w[j - 13]), w[j - 6]);
  }
  auto ld = [&](int i) { return _mm512_loadu_si512(v + 16 * i); };
  __m512i a = ld(0), b = ld(1), c = ld(2), d = ld(3), e = ld(4), f = ld(5), g = ld(6), h = ld(7);
  const __m512i a0 = a, b0 = b, c0 = c, d0 = d, e0 = e, f0 = f, g0 = g, h0 = h;
  for (int j = 0; j < 64; ++j) {
    const __m512i a12 = Rol<12>(a);
    const __m512i ss1 = Rol<7>(Add(Add(a12, e), _mm512_set1_epi32(static_cast<int>(kT.t[j]))));
    const __m512i ss2 = _mm512_xor_si512(ss1, a12);
    __m512i ff, gg;
    if (j < 16) {
      ff = Xor3(a, b, c);
      gg = Xor3(e, f, g);
    } else {
      ff = _mm512_ternarylogic_epi32(a, b, c, 0xe8);
      gg = _mm512_ternarylogic_epi32(e, f, g, 0xca);
    }
    const __m512i tt1 = Add(Add(ff, d), Add(ss2, _mm512_xor_si512(w[j], w[j + 4])));
    const __m512i tt2 = Add(Add(gg, h), Add(ss1, w[j]));
    d = c;
    c = Rol<9>(b);
    b = a;
    a = tt1;
    h = g;
    g = Rol<19>(f);
    f = e;
    e = P0(tt2);
  }
  auto st = [&](int i, __m512i x) { _mm512_storeu_si512(v + 16 * i, x); };
  st(0, _mm512_xor_si512(a, a0));
  st(1, _mm512_xor_si512(b, b0));
  st(2, _mm512_xor_si512(c, c0));
  st(3, _mm512_xor_si512(d, d0));
  st(4, _mm512_xor_si512(e, e0));
  st(5, _mm512_xor_si512(f, f0));
  st(6, _mm512_xor_si512(g, g0));
  st(7, _mm512_xor_si512(h, h0));
}

}  // namespace pqcd::kernels
