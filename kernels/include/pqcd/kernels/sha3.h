// FIPS 202: Keccak-f[1600], SHA3-224/256/384/512 and SHAKE128/256.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "pqcd/kernels/common.h"

namespace pqcd::kernels {

inline constexpr size_t kKeccakLanes = 25;

// Keccak-f[1600] on one state (24 rounds). Lane i is state[x + 5y] as in FIPS 202 §3.1.2 (little
// endian lanes). Uses the best single-state backend available.
void KeccakF1600(uint64_t state[kKeccakLanes]);
// The portable implementation, always compiled in (reference for the SIMD backends).
void KeccakF1600Portable(uint64_t state[kKeccakLanes]);

// A Keccak sponge with byte-granular absorb and squeeze (FIPS 202 §4, pad10*1 with the domain
// separation suffix folded into `suffix`: 0x06 for SHA-3, 0x1f for SHAKE).
class KeccakSponge {
 public:
  KeccakSponge(size_t rate_bytes, uint8_t suffix);
  ~KeccakSponge();
  KeccakSponge(const KeccakSponge&) = default;
  KeccakSponge& operator=(const KeccakSponge&) = default;

  // Absorbs more input. Must not be called after Squeeze/Finalize (until Reset).
  void Absorb(Bytes in);
  // Pads and switches to squeezing. Called implicitly by the first Squeeze.
  void Finalize();
  // Produces the next out.size() bytes of output; may be called repeatedly (XOF).
  void Squeeze(MutBytes out);
  // Squeezes whole rate-sized blocks straight from the state (the caller's buffer holds
  // nblocks * rate() bytes). Only valid at a block boundary (right after Finalize or a previous
  // SqueezeBlocks).
  void SqueezeBlocks(uint8_t* out, size_t nblocks);
  // Back to the empty state with the same rate and suffix; wipes the state.
  void Reset();

  size_t rate() const { return rate_; }
  const uint64_t* state() const { return state_; }

 private:
  alignas(64) uint64_t state_[kKeccakLanes];
  uint16_t rate_;
  uint16_t pos_;
  uint8_t suffix_;
  bool squeezing_;
};

class Sha3_224 : public KeccakSponge {
 public:
  static constexpr size_t kDigestBytes = 28;
  Sha3_224() : KeccakSponge(144, 0x06) {}
  void Final(std::span<uint8_t, kDigestBytes> out) { Squeeze(out); }
};
class Sha3_256 : public KeccakSponge {
 public:
  static constexpr size_t kDigestBytes = 32;
  Sha3_256() : KeccakSponge(136, 0x06) {}
  void Final(std::span<uint8_t, kDigestBytes> out) { Squeeze(out); }
};
class Sha3_384 : public KeccakSponge {
 public:
  static constexpr size_t kDigestBytes = 48;
  Sha3_384() : KeccakSponge(104, 0x06) {}
  void Final(std::span<uint8_t, kDigestBytes> out) { Squeeze(out); }
};
class Sha3_512 : public KeccakSponge {
 public:
  static constexpr size_t kDigestBytes = 64;
  Sha3_512() : KeccakSponge(72, 0x06) {}
  void Final(std::span<uint8_t, kDigestBytes> out) { Squeeze(out); }
};
class Shake128 : public KeccakSponge {
 public:
  static constexpr size_t kRateBytes = 168;
  Shake128() : KeccakSponge(kRateBytes, 0x1f) {}
};
class Shake256 : public KeccakSponge {
 public:
  static constexpr size_t kRateBytes = 136;
  Shake256() : KeccakSponge(kRateBytes, 0x1f) {}
};

// One-shot helpers.
void Sha3_224Digest(Bytes in, std::span<uint8_t, 28> out);
void Sha3_256Digest(Bytes in, std::span<uint8_t, 32> out);
void Sha3_384Digest(Bytes in, std::span<uint8_t, 48> out);
void Sha3_512Digest(Bytes in, std::span<uint8_t, 64> out);
void Shake128Digest(Bytes in, MutBytes out);
void Shake256Digest(Bytes in, MutBytes out);

}  // namespace pqcd::kernels
