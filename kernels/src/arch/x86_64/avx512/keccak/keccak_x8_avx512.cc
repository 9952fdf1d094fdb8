// Keccak-f[1600] on 8 independent states in ZMM registers (AVX-512F), and on 4 states in YMM
// registers with AVX-512VL rotates. Built with AVX-512 flags; reached only through the avx512
// Keccak table (backend.cc here), used only once CPUID has shown AVX-512 F/BW/VL/DQ and OS support
// for ZMM and opmask state.
//
// Each of the 25 lanes is one register. ρ and π are register renaming, rotations are vprolq, θ's
// five-way XOR and χ are vpternlogq (0x96 = a^b^c, 0xd2 = a ^ (~b & c)).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "arch/x86_64/avx2/keccak/keccak_avx2.h"
#include "arch/x86_64/avx512/keccak/keccak_avx512.h"
#include "keccak/constants.h"

// GCC 12 reports _mm512_undefined_epi32() inside _mm512_rol_epi64 as uninitialized (a false
// positive in its own header).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace pqcd::kernels {
namespace {

constexpr const auto& kRc = keccak::kRoundConstants;

struct Zmm;
struct Ymm;
template <class Tag>
struct Ops;
template <>
struct Ops<Zmm> {
  using V = __m512i;
  template <int N>
  static __attribute__((always_inline)) inline __m512i Rol(__m512i x) {
    return _mm512_rol_epi64(x, N);
  }
  static __attribute__((always_inline)) inline __m512i Xor(__m512i a, __m512i b) {
    return _mm512_xor_si512(a, b);
  }
  static __attribute__((always_inline)) inline __m512i Xor3(__m512i a, __m512i b, __m512i c) {
    return _mm512_ternarylogic_epi64(a, b, c, 0x96);
  }
  static __attribute__((always_inline)) inline __m512i Chi(__m512i a, __m512i b, __m512i c) {
    return _mm512_ternarylogic_epi64(a, b, c, 0xd2);
  }
  static __attribute__((always_inline)) inline __m512i Set1(uint64_t v) {
    return _mm512_set1_epi64(static_cast<long long>(v));
  }
  static __attribute__((always_inline)) inline __m512i Load(const uint64_t* p) {
    return _mm512_loadu_si512(p);
  }
  static __attribute__((always_inline)) inline void Store(uint64_t* p, __m512i v) {
    _mm512_storeu_si512(p, v);
  }
};
template <>
struct Ops<Ymm> {
  using V = __m256i;
  template <int N>
  static __attribute__((always_inline)) inline __m256i Rol(__m256i x) {
    return _mm256_rol_epi64(x, N);
  }
  static __attribute__((always_inline)) inline __m256i Xor(__m256i a, __m256i b) {
    return _mm256_xor_si256(a, b);
  }
  static __attribute__((always_inline)) inline __m256i Xor3(__m256i a, __m256i b, __m256i c) {
    return _mm256_ternarylogic_epi64(a, b, c, 0x96);
  }
  static __attribute__((always_inline)) inline __m256i Chi(__m256i a, __m256i b, __m256i c) {
    return _mm256_ternarylogic_epi64(a, b, c, 0xd2);
  }
  static __attribute__((always_inline)) inline __m256i Set1(uint64_t v) {
    return _mm256_set1_epi64x(static_cast<long long>(v));
  }
  static __attribute__((always_inline)) inline __m256i Load(const uint64_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static __attribute__((always_inline)) inline void Store(uint64_t* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
};

// The permutation on one register per lane; stride = distance between lanes in uint64_t units.
template <class Tag>
__attribute__((always_inline)) inline void Permute(uint64_t* st, size_t stride) {
  using O = Ops<Tag>;
  using V = typename O::V;
  auto ld = [&](int i) { return O::Load(st + static_cast<size_t>(i) * stride); };
  V a00 = ld(0), a01 = ld(1), a02 = ld(2), a03 = ld(3), a04 = ld(4);
  V a05 = ld(5), a06 = ld(6), a07 = ld(7), a08 = ld(8), a09 = ld(9);
  V a10 = ld(10), a11 = ld(11), a12 = ld(12), a13 = ld(13), a14 = ld(14);
  V a15 = ld(15), a16 = ld(16), a17 = ld(17), a18 = ld(18), a19 = ld(19);
  V a20 = ld(20), a21 = ld(21), a22 = ld(22), a23 = ld(23), a24 = ld(24);
  for (int round = 0; round < 24; ++round) {
    const V c0 = O::Xor3(O::Xor3(a00, a05, a10), a15, a20);
    const V c1 = O::Xor3(O::Xor3(a01, a06, a11), a16, a21);
    const V c2 = O::Xor3(O::Xor3(a02, a07, a12), a17, a22);
    const V c3 = O::Xor3(O::Xor3(a03, a08, a13), a18, a23);
    const V c4 = O::Xor3(O::Xor3(a04, a09, a14), a19, a24);
    const V d0 = O::Xor(c4, O::template Rol<1>(c1));
    const V d1 = O::Xor(c0, O::template Rol<1>(c2));
    const V d2 = O::Xor(c1, O::template Rol<1>(c3));
    const V d3 = O::Xor(c2, O::template Rol<1>(c4));
    const V d4 = O::Xor(c3, O::template Rol<1>(c0));
    const V b00 = O::Xor(a00, d0);
    const V b01 = O::template Rol<44>(O::Xor(a06, d1));
    const V b02 = O::template Rol<43>(O::Xor(a12, d2));
    const V b03 = O::template Rol<21>(O::Xor(a18, d3));
    const V b04 = O::template Rol<14>(O::Xor(a24, d4));
    const V b05 = O::template Rol<28>(O::Xor(a03, d3));
    const V b06 = O::template Rol<20>(O::Xor(a09, d4));
    const V b07 = O::template Rol<3>(O::Xor(a10, d0));
    const V b08 = O::template Rol<45>(O::Xor(a16, d1));
    const V b09 = O::template Rol<61>(O::Xor(a22, d2));
    const V b10 = O::template Rol<1>(O::Xor(a01, d1));
    const V b11 = O::template Rol<6>(O::Xor(a07, d2));
    const V b12 = O::template Rol<25>(O::Xor(a13, d3));
    const V b13 = O::template Rol<8>(O::Xor(a19, d4));
    const V b14 = O::template Rol<18>(O::Xor(a20, d0));
    const V b15 = O::template Rol<27>(O::Xor(a04, d4));
    const V b16 = O::template Rol<36>(O::Xor(a05, d0));
    const V b17 = O::template Rol<10>(O::Xor(a11, d1));
    const V b18 = O::template Rol<15>(O::Xor(a17, d2));
    const V b19 = O::template Rol<56>(O::Xor(a23, d3));
    const V b20 = O::template Rol<62>(O::Xor(a02, d2));
    const V b21 = O::template Rol<55>(O::Xor(a08, d3));
    const V b22 = O::template Rol<39>(O::Xor(a14, d4));
    const V b23 = O::template Rol<41>(O::Xor(a15, d0));
    const V b24 = O::template Rol<2>(O::Xor(a21, d1));
    a00 = O::Xor(O::Chi(b00, b01, b02), O::Set1(kRc[round]));
    a01 = O::Chi(b01, b02, b03);
    a02 = O::Chi(b02, b03, b04);
    a03 = O::Chi(b03, b04, b00);
    a04 = O::Chi(b04, b00, b01);
    a05 = O::Chi(b05, b06, b07);
    a06 = O::Chi(b06, b07, b08);
    a07 = O::Chi(b07, b08, b09);
    a08 = O::Chi(b08, b09, b05);
    a09 = O::Chi(b09, b05, b06);
    a10 = O::Chi(b10, b11, b12);
    a11 = O::Chi(b11, b12, b13);
    a12 = O::Chi(b12, b13, b14);
    a13 = O::Chi(b13, b14, b10);
    a14 = O::Chi(b14, b10, b11);
    a15 = O::Chi(b15, b16, b17);
    a16 = O::Chi(b16, b17, b18);
    a17 = O::Chi(b17, b18, b19);
    a18 = O::Chi(b18, b19, b15);
    a19 = O::Chi(b19, b15, b16);
    a20 = O::Chi(b20, b21, b22);
    a21 = O::Chi(b21, b22, b23);
    a22 = O::Chi(b22, b23, b24);
    a23 = O::Chi(b23, b24, b20);
    a24 = O::Chi(b24, b20, b21);
  }
  auto stv = [&](int i, V v) { O::Store(st + static_cast<size_t>(i) * stride, v); };
  stv(0, a00), stv(1, a01), stv(2, a02), stv(3, a03), stv(4, a04);
  stv(5, a05), stv(6, a06), stv(7, a07), stv(8, a08), stv(9, a09);
  stv(10, a10), stv(11, a11), stv(12, a12), stv(13, a13), stv(14, a14);
  stv(15, a15), stv(16, a16), stv(17, a17), stv(18, a18), stv(19, a19);
  stv(20, a20), stv(21, a21), stv(22, a22), stv(23, a23), stv(24, a24);
}

}  // namespace

void KeccakF1600x8Avx512(uint64_t* st) {
  Permute<Zmm>(st, 8);
}
void KeccakF1600x4Avx512(uint64_t* st, size_t stride, unsigned /*live*/) {
  Permute<Ymm>(st, stride);
}
void KeccakF1600x4x1Avx512(uint64_t* st, size_t stride, unsigned live, uint64_t st1[25]) {
  KeccakF1600x4Avx512(st, stride, live);
  KeccakF1600Bmi(st1);
}

}  // namespace pqcd::kernels
