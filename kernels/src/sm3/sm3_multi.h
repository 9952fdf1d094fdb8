// Multi-buffer SM3: several independent messages hashed side by side, one 32-bit word of every lane
// in one SIMD register (8 lanes in YMM with AVX2, 16 in ZMM with AVX-512).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "pqcd/kernels/common.h"

namespace pqcd::kernels {

// One compression step for every lane: v holds the 8 chaining words of each lane interleaved
// (word i of lane j at v[i * N + j]); blocks[j] is lane j's next 64-byte block.
void Sm3CompressX8Avx2(uint32_t* v, const uint8_t* const blocks[8]);
void Sm3CompressX16Avx512(uint32_t* v, const uint8_t* const blocks[16]);

// outs[i] = SM3(msgs[i]) for every i (each out 32 bytes). Uses the widest backend available and
// refills a lane as soon as its message is done, so messages of different lengths mix freely.
void Sm3DigestBatch(std::span<const Bytes> msgs, std::span<const MutBytes> outs);

}  // namespace pqcd::kernels
