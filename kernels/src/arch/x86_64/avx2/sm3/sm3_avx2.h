// The AVX2 SM3 kernel (sm3_x8_avx2.cc; built with the avx2 flags), reached only through the avx2
// SM3 table (backend.cc here). Plain declarations only.
#pragma once

#include <cstdint>

namespace pqcd::kernels {

// compress_lanes of sm3/backend.h for 8 lanes (YMM registers).
void Sm3CompressX8Avx2(uint32_t* v, const uint8_t* const blocks[8]);

}  // namespace pqcd::kernels
