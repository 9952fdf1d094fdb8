// The Keccak kernels of the SHA-3 extension (keccak_sha3.cc; built with the neon_sha3 flags,
// -march=armv8.2-a+sha3). Each meets the contract of its hook in keccak/backend.h; they may run
// only on a CPU that reports HWCAP_SHA3, so they are reached only through the neon_sha3 Keccak
// table (backend.cc here), which the NEON row's dispatching table (arch/aarch64/neon/keccak/
// backend.cc) calls only while isa.cc has reported the extension. Plain declarations only (no
// inline code shared with other translation units).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::kernels {

// Keccak-f[1600] on two interleaved states with EOR3, RAX1, XAR and BCAX: words i of the two
// states are st[i * stride] and st[i * stride + 1] (one 128-bit vector per word).
void KeccakF1600x2Sha3(uint64_t* st, size_t stride);
// f1600: one state, in both halves of the same vectors (the x2 schedule, one state's work).
void KeccakF1600x1Sha3(uint64_t st[25]);
// f1600x4: columns (0, 1) and (2, 3) as two x2 permutations (all four whatever `live` says).
void KeccakF1600x4Sha3(uint64_t* st, size_t stride, unsigned live);
// f1600x4x1: the two x2 permutations of f1600x4, then st1 with the one-state path.
void KeccakF1600x4x1Sha3(uint64_t* st, size_t stride, unsigned live, uint64_t st1[25]);
// f1600x8: four x2 permutations (stride 8).
void KeccakF1600x8Sha3(uint64_t* st);

}  // namespace pqcd::kernels
