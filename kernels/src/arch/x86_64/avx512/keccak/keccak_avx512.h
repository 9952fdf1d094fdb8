// The AVX-512 Keccak kernels (keccak_x8_avx512.cc, keccak_x1_avx512.cc; built with the avx512
// flags). Each meets the contract of its hook in keccak/backend.h; they are reached only through
// the avx512 Keccak table (backend.cc here). Plain declarations only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::kernels {

// f1600: one state in five ZMM registers (a row or a column per register, vpternlogq, vprolvq).
void KeccakF1600x1Avx512(uint64_t st[25]);

// f1600x8: 8 states in ZMM registers.
void KeccakF1600x8Avx512(uint64_t* st);
// f1600x4: 4 states in YMM registers with AVX-512VL rotates (all four whatever `live` says).
void KeccakF1600x4Avx512(uint64_t* st, size_t stride, unsigned live);
// f1600x4x1: KeccakF1600x4Avx512 then the BMI single-state permutation of st1.
void KeccakF1600x4x1Avx512(uint64_t* st, size_t stride, unsigned live, uint64_t st1[25]);

}  // namespace pqcd::kernels
