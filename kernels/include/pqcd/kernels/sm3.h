// SM3 hash (GB/T 32905-2016): 256-bit digest, 64-byte blocks.
#pragma once

#include <array>

#include "pqcd/kernels/common.h"

namespace pqcd::kernels {

class Sm3 {
 public:
  static constexpr size_t kDigestBytes = 32;
  static constexpr size_t kBlockBytes = 64;

  Sm3() { Reset(); }
  void Reset();
  void Update(Bytes in);
  void Final(std::span<uint8_t, kDigestBytes> out);

 private:
  uint32_t v_[8];
  uint8_t block_[kBlockBytes];
  uint64_t total_bytes_;
  size_t used_;
};

// Compression function: V <- CF(V, B) for nblocks consecutive 64-byte blocks.
void Sm3CompressPortable(uint32_t v[8], const uint8_t* blocks, size_t nblocks);

void Sm3Digest(Bytes in, std::span<uint8_t, Sm3::kDigestBytes> out);

}  // namespace pqcd::kernels
