// The AVX-512 SM3 kernel (sm3_x16_avx512.cc; built with the avx512 flags), reached only through
// the avx512 SM3 table (backend.cc here). Plain declarations only.
#pragma once

#include <cstdint>

namespace pqcd::kernels {

// compress_lanes of sm3/backend.h for 16 lanes (ZMM registers).
void Sm3CompressX16Avx512(uint32_t* v, const uint8_t* const blocks[16]);

}  // namespace pqcd::kernels
