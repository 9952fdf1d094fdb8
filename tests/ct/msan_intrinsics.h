// Forced into every translation unit of the MemorySanitizer constant-time build (-include, set in
// the top-level CMakeLists.txt for PQCD_SANITIZE=memory on x86-64), never into a product build.
//
// MemorySanitizer (clang 14) propagates its shadow through plain vector arithmetic, shifts,
// rotates, shuffles and most SIMD intrinsics, but a handful of x86 intrinsics have no shadow rule:
// it then checks that every operand is fully defined, as it does for a branch condition. In the
// constant-time check every secret byte is "undefined", so such an intrinsic would be reported
// although it is straight-line arithmetic (vpternlog, vpmaddwd on ZMM, vptest, vpcompressd). Here
// each of them is spelled as the same bitwise or integer arithmetic on GCC vector types, which
// MemorySanitizer follows bit for bit; results are identical (tests/ct/ct_check compares against
// the portable backend's outputs). Branches and memory indexes, what the check is about, are the
// kernels' own and are left alone.
#pragma once

#if defined(__x86_64__) && defined(__has_feature)
#if __has_feature(memory_sanitizer)

#include <immintrin.h>

// vpternlog{d,q}: bit i of imm is the result for the inputs (a, b, c) = (i >> 2 & 1, i >> 1 & 1,
// i & 1); the sum of the minterms selected by imm, for a constant imm.
#define PQCD_MSAN_TERNLOG(T, A, B, C, IMM)                                                       \
  (__extension__({                                                                               \
    const T pqcd_a_ = (T)(A), pqcd_b_ = (T)(B), pqcd_c_ = (T)(C);                                \
    T pqcd_r_ = {};                                                                              \
    for (int pqcd_i_ = 0; pqcd_i_ < 8; ++pqcd_i_) {                                              \
      if (((IMM) >> pqcd_i_) & 1) {                                                              \
        pqcd_r_ |= ((pqcd_i_ & 4) ? pqcd_a_ : ~pqcd_a_) & ((pqcd_i_ & 2) ? pqcd_b_ : ~pqcd_b_) & \
                   ((pqcd_i_ & 1) ? pqcd_c_ : ~pqcd_c_);                                         \
      }                                                                                          \
    }                                                                                            \
    pqcd_r_;                                                                                     \
  }))

#undef _mm512_ternarylogic_epi32
#undef _mm512_ternarylogic_epi64
#undef _mm256_ternarylogic_epi32
#undef _mm256_ternarylogic_epi64
#undef _mm_ternarylogic_epi32
#undef _mm_ternarylogic_epi64
#define _mm512_ternarylogic_epi32(A, B, C, IMM) PQCD_MSAN_TERNLOG(__m512i, A, B, C, IMM)
#define _mm512_ternarylogic_epi64(A, B, C, IMM) PQCD_MSAN_TERNLOG(__m512i, A, B, C, IMM)
#define _mm256_ternarylogic_epi32(A, B, C, IMM) PQCD_MSAN_TERNLOG(__m256i, A, B, C, IMM)
#define _mm256_ternarylogic_epi64(A, B, C, IMM) PQCD_MSAN_TERNLOG(__m256i, A, B, C, IMM)
#define _mm_ternarylogic_epi32(A, B, C, IMM) PQCD_MSAN_TERNLOG(__m128i, A, B, C, IMM)
#define _mm_ternarylogic_epi64(A, B, C, IMM) PQCD_MSAN_TERNLOG(__m128i, A, B, C, IMM)

// vpmaddwd on ZMM: each 32-bit lane is lo16(a) * lo16(b) + hi16(a) * hi16(b), signed 16-bit
// factors, wrapping like the instruction (0x8000 * 0x8000 twice is 0x80000000).
typedef int pqcd_msan_v16si __attribute__((vector_size(64)));
typedef unsigned pqcd_msan_v16su __attribute__((vector_size(64)));
#define _mm512_madd_epi16(A, B)                                                              \
  (__extension__({                                                                           \
    const pqcd_msan_v16si pqcd_a_ = (pqcd_msan_v16si)(A), pqcd_b_ = (pqcd_msan_v16si)(B);    \
    const pqcd_msan_v16su pqcd_lo_ =                                                         \
        (pqcd_msan_v16su)((pqcd_a_ << 16) >> 16) * (pqcd_msan_v16su)((pqcd_b_ << 16) >> 16); \
    const pqcd_msan_v16su pqcd_hi_ =                                                         \
        (pqcd_msan_v16su)(pqcd_a_ >> 16) * (pqcd_msan_v16su)(pqcd_b_ >> 16);                 \
    (__m512i)(pqcd_lo_ + pqcd_hi_);                                                          \
  }))

// vptest (ZF): 1 when a & b is all zero, computed without a flag.
#define _mm256_testz_si256(A, B)                                                 \
  (__extension__({                                                               \
    const __m256i pqcd_t_ = (__m256i)(A) & (__m256i)(B);                         \
    const unsigned long long pqcd_o_ =                                           \
        (unsigned long long)(pqcd_t_[0] | pqcd_t_[1] | pqcd_t_[2] | pqcd_t_[3]); \
    (int)(((pqcd_o_ | (0 - pqcd_o_)) >> 63) ^ 1);                                \
  }))

// vpcompressd with a zeroing mask: the selected lanes, packed towards lane 0. The kernels use it
// only with a public mask (a declassified rejection pattern), so branching on the mask here
// checks exactly that: a mask that is still secret is reported.
typedef int pqcd_msan_v16si_c __attribute__((vector_size(64)));
#undef _mm512_maskz_compress_epi32
#define _mm512_maskz_compress_epi32(M, A)                                  \
  (__extension__({                                                         \
    const unsigned pqcd_m_ = (unsigned)(M);                                \
    const pqcd_msan_v16si_c pqcd_a_ = (pqcd_msan_v16si_c)(A);              \
    pqcd_msan_v16si_c pqcd_r_ = {};                                        \
    int pqcd_j_ = 0;                                                       \
    for (int pqcd_i_ = 0; pqcd_i_ < 16; ++pqcd_i_) {                       \
      if ((pqcd_m_ >> pqcd_i_) & 1) pqcd_r_[pqcd_j_++] = pqcd_a_[pqcd_i_]; \
    }                                                                      \
    (__m512i) pqcd_r_;                                                     \
  }))

#endif  // __has_feature(memory_sanitizer)
#endif  // __x86_64__ && __has_feature
