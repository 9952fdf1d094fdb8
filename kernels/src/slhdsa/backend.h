// The SLH-DSA backend table: multi-lane SHA-256 and SHA-512 compression for the SHA2 parameter
// sets (every F and PRF, and H of the n = 16 sets, is one SHA-256 compression after PK.seed's
// block; H of the n = 24, 32 sets one SHA-512 compression). The SHAKE sets need no table of their
// own: they run on the Keccak table.
//
// As for every family (keccak/backend.h): hooks default to the portable code, a backend table
// names only what it implements, the table in use follows the active ISA, and arch/backends.h
// lists which backend supplies which table. Declarations and constants only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::kernels {
enum class Isa : uint8_t;  // pqcd/kernels/isa.h
}  // namespace pqcd::kernels

namespace pqcd::kernels::slhdsa {

namespace portable {
// sha256_lanes for lanes = 1: Sha256CompressPortable(v, blocks[0]).
void Sha256Lanes1(uint32_t* v, const uint8_t* const* blocks);
// sha512_lanes for lanes = 1: Sha512Compress(v, blocks[0]).
void Sha512Lanes1(uint64_t* v, const uint8_t* const* blocks);
}  // namespace portable

struct Backend {
  // Lanes of sha256_compress_lanes: 1, 8 (AVX2) or 16 (AVX-512); at most 16 (thash.cc).
  uint8_t sha256_lanes = 1;
  // One SHA-256 compression (FIPS 180-4 §6.2.2) in each of the lanes: v holds the 8 chaining
  // words of every lane interleaved (word i of lane j at v[i * lanes + j]); blocks[j] points to
  // lane j's 64-byte block (every one readable; an idle lane gets a dummy block). Constant time.
  void (*sha256_compress_lanes)(uint32_t* v,
                                const uint8_t* const* blocks) = &portable::Sha256Lanes1;
  // Lanes of sha512_compress_lanes: 1, or 8 (AVX-512); at most 8 (thash.cc).
  uint8_t sha512_lanes = 1;
  // One SHA-512 compression (FIPS 180-4 §6.4.2) in each lane, laid out as sha256_compress_lanes
  // with 64-bit words and 128-byte blocks: for H and T_l of the n = 24, 32 sets. Constant time.
  void (*sha512_compress_lanes)(uint64_t* v,
                                const uint8_t* const* blocks) = &portable::Sha512Lanes1;
};

extern const Backend kPortable;
const Backend& ActiveBackend();
const Backend& BackendFor(Isa isa);

}  // namespace pqcd::kernels::slhdsa
