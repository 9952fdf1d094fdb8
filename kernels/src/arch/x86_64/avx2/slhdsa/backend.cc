// The SLH-DSA table of the avx2 backend (slhdsa/backend.h; listed in arch/backends.h): SHA-256
// eight blocks at a time, one per 32-bit lane of a YMM register.
#include <immintrin.h>

#include <cstring>

#include "slhdsa/backend.h"
#include "slhdsa/sha2.h"

namespace pqcd::kernels::slhdsa {
namespace {

template <int R>
inline __m256i Rotr(__m256i x) {
  return _mm256_or_si256(_mm256_srli_epi32(x, R), _mm256_slli_epi32(x, 32 - R));
}

uint32_t LoadBe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}

void Sha256CompressX8Avx2(uint32_t* v, const uint8_t* const* blocks) {
  __m256i w[64];
  for (int t = 0; t < 16; ++t) {
    w[t] = _mm256_set_epi32(static_cast<int>(LoadBe32(blocks[7] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[6] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[5] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[4] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[3] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[2] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[1] + 4 * t)),
                            static_cast<int>(LoadBe32(blocks[0] + 4 * t)));
  }
  for (int t = 16; t < 64; ++t) {
    const __m256i s0 = _mm256_xor_si256(_mm256_xor_si256(Rotr<7>(w[t - 15]), Rotr<18>(w[t - 15])),
                                        _mm256_srli_epi32(w[t - 15], 3));
    const __m256i s1 = _mm256_xor_si256(_mm256_xor_si256(Rotr<17>(w[t - 2]), Rotr<19>(w[t - 2])),
                                        _mm256_srli_epi32(w[t - 2], 10));
    w[t] = _mm256_add_epi32(_mm256_add_epi32(w[t - 16], s0), _mm256_add_epi32(w[t - 7], s1));
  }
  __m256i s[8];
  for (int i = 0; i < 8; ++i)
    s[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 8 * i));
  __m256i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
  for (int t = 0; t < 64; ++t) {
    const __m256i big_s1 = _mm256_xor_si256(_mm256_xor_si256(Rotr<6>(e), Rotr<11>(e)), Rotr<25>(e));
    const __m256i ch = _mm256_xor_si256(_mm256_and_si256(e, f), _mm256_andnot_si256(e, g));
    const __m256i t1 =
        _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(h, big_s1), _mm256_add_epi32(ch, w[t])),
                         _mm256_set1_epi32(static_cast<int>(kSha256K[t])));
    const __m256i big_s0 = _mm256_xor_si256(_mm256_xor_si256(Rotr<2>(a), Rotr<13>(a)), Rotr<22>(a));
    const __m256i maj =
        _mm256_xor_si256(_mm256_and_si256(a, b), _mm256_and_si256(c, _mm256_xor_si256(a, b)));
    const __m256i t2 = _mm256_add_epi32(big_s0, maj);
    h = g;
    g = f;
    f = e;
    e = _mm256_add_epi32(d, t1);
    d = c;
    c = b;
    b = a;
    a = _mm256_add_epi32(t1, t2);
  }
  const __m256i out[8] = {a, b, c, d, e, f, g, h};
  for (int i = 0; i < 8; ++i) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 8 * i), _mm256_add_epi32(s[i], out[i]));
  }
  for (__m256i& x : w) x = _mm256_setzero_si256();
}

}  // namespace

extern const Backend kAvx2;
constinit const Backend kAvx2{
    .sha256_lanes = 8,
    .sha256_compress_lanes = &Sha256CompressX8Avx2,
};

}  // namespace pqcd::kernels::slhdsa
