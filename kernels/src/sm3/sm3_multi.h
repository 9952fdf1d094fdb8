// Multi-buffer SM3: several independent messages hashed side by side, one 32-bit word of every lane
// in one SIMD register (8 lanes in YMM with AVX2, 16 in ZMM with AVX-512; sm3/backend.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "pqcd/kernels/common.h"

namespace pqcd::kernels {

// outs[i] = SM3(msgs[i]) for every i (each out 32 bytes). Runs as many lanes as the active SM3
// backend compresses at once (sm3/backend.h) and refills a lane as soon as its message is done, so
// messages of different lengths mix freely.
void Sm3DigestBatch(std::span<const Bytes> msgs, std::span<const MutBytes> outs);

}  // namespace pqcd::kernels
