// Batches of independent SHA-3/SHAKE hashes on multi-lane Keccak (x4 AVX2, x8 AVX-512).
#pragma once

#include <span>

#include "pqcd/kernels/common.h"

namespace pqcd::kernels {

// outs[i] = Keccak[rate, suffix](msgs[i]) squeezed to outs[i].size() bytes, for every i. Messages
// and output lengths may differ: a lane is refilled with the next message as soon as its current
// one is done. Runs as many lanes as the active Keccak backend has (keccak/backend.h: 8, 4, or one
// sponge at a time on the portable backend).
void KeccakDigestBatch(size_t rate, uint8_t suffix, std::span<const Bytes> msgs,
                       std::span<const MutBytes> outs);

}  // namespace pqcd::kernels
