// AVX2 data movement for the fixed lane plans (mlkem/fixed_lanes.h), compiled with -mavx2 only;
// declared in mlkem/poly_backend.h. No inline function is shared with a baseline translation unit.
#include <immintrin.h>

#include "mlkem/poly_backend.h"

namespace pqcd::kernels::mlkem::avx2 {

void LanesToBytes(const uint64_t* st, uint8_t* const out[4], size_t words) {
  // 4x4 transposes of 64-bit words: rows r0..r3 hold words w..w+3 of all four states.
  for (size_t w = 0; w < words; w += 4) {
    const __m256i r0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(st + 4 * w));
    const __m256i r1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(st + 4 * w + 4));
    const __m256i r2 = _mm256_load_si256(reinterpret_cast<const __m256i*>(st + 4 * w + 8));
    const __m256i r3 = _mm256_load_si256(reinterpret_cast<const __m256i*>(st + 4 * w + 12));
    const __m256i t0 = _mm256_unpacklo_epi64(r0, r1);  // (r0.0, r1.0, r0.2, r1.2)
    const __m256i t1 = _mm256_unpackhi_epi64(r0, r1);  // (r0.1, r1.1, r0.3, r1.3)
    const __m256i t2 = _mm256_unpacklo_epi64(r2, r3);
    const __m256i t3 = _mm256_unpackhi_epi64(r2, r3);
    const size_t o = 8 * w;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[0] + o),
                        _mm256_permute2x128_si256(t0, t2, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[1] + o),
                        _mm256_permute2x128_si256(t1, t3, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[2] + o),
                        _mm256_permute2x128_si256(t0, t2, 0x31));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[3] + o),
                        _mm256_permute2x128_si256(t1, t3, 0x31));
  }
}

}  // namespace pqcd::kernels::mlkem::avx2
