// The NEON Keccak kernels (keccak_x2_neon.cc; built with the neon flags). Each meets the contract
// of its hook in keccak/backend.h; they are reached only through the neon Keccak table
// (backend.cc here). Plain declarations only (no inline code shared with other translation units).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::kernels {

// Keccak-f[1600] on two interleaved states: words i of the two states are st[i * stride] and
// st[i * stride + 1] (one 128-bit vector per word).
void KeccakF1600x2Neon(uint64_t* st, size_t stride);
// f1600x4: columns (0, 1) and (2, 3) as two x2 permutations (all four are permuted whatever
// `live` says).
void KeccakF1600x4Neon(uint64_t* st, size_t stride, unsigned live);
// f1600x4x1: the x4 permutation, then the single state st1 with the portable code.
void KeccakF1600x4x1Neon(uint64_t* st, size_t stride, unsigned live, uint64_t st1[25]);
// f1600x8: four x2 permutations (stride 8).
void KeccakF1600x8Neon(uint64_t* st);

}  // namespace pqcd::kernels
