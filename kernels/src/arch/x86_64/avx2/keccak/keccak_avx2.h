// The AVX2 Keccak kernels (keccak_x4_avx2.cc, keccak_x1_bmi.cc; built with the avx2 flags). Each
// meets the contract of its hook in keccak/backend.h; they are reached only through the avx2 and
// avx512 Keccak tables (backend.cc here, arch/x86_64/avx512/keccak/backend.cc).
// Plain declarations only (no inline code shared with other translation units).
#pragma once

#include <cstddef>
#include <cstdint>

#include "keccak/backend.h"

namespace pqcd::kernels {

// f1600x4: the 4 states in YMM registers (all four are permuted whatever `live` says).
void KeccakF1600x4Avx2(uint64_t* st, size_t stride, unsigned live);
// f1600x4x1: the x4 permutation with the single state st1 interleaved on the integer units.
void KeccakF1600x4x1Avx2(uint64_t* st, size_t stride, unsigned live, uint64_t st1[25]);
// f1600x8: two x4 calls (stride 8).
void KeccakF1600x8ViaX4Avx2(uint64_t* st);
// extract_lanes4: 4x4 transposes of 64-bit words.
void KeccakExtractLanes4Avx2(const uint64_t* st, size_t stride, size_t words,
                             uint8_t* const out[4]);
// f1600: the portable single-state code built with BMI1/BMI2 (andn, rorx).
void KeccakF1600Bmi(uint64_t state[25]);

}  // namespace pqcd::kernels
