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

// ADRSc (FIPS 205 §11.2): the 22-byte compressed address of the SHA2 sets.
inline constexpr size_t kAdrscBytes = 22;

// A batch of SHA-256 tweakable-hash chains (FIPS 205 §11.2: F, and optionally the PRF that makes
// each chain's first value): the WOTS+ chains of Alg. 5 and, with one step, the FORS leaves of
// Alg. 14-15. Chain i runs steps[i] steps of F; step t hashes ADRSc(adrsc[i] with hash address
// start[i] + t) || value || padding in one compression from `chain`. With prf_adrsc, the value
// chain i starts from is PRF = the compression of prf_adrsc[i] || sk_seed || padding (the hash
// address of prf_adrsc is taken as given), not values[i]'s input. Every count, start and step is
// public (chain lengths of the signed message); the values and sk_seed are secret.
struct Sha256ChainsArgs {
  const uint32_t* chain = nullptr;  // the 8 chaining words after PK.seed || 0^(64-n)
  // The one-block compression of the portable implementation (null: the portable one); the lane
  // implementations ignore it.
  void (*compress)(uint32_t* h, const uint8_t* block) = nullptr;
  size_t n = 16;                       // 16, 24 or 32
  size_t count = 0;                    // chains, any number
  const uint8_t* adrsc = nullptr;      // count × kAdrscBytes: F's address (hash address unused)
  const uint32_t* start = nullptr;     // count: the hash address of the first step
  const uint32_t* steps = nullptr;     // count: steps, 0 allowed (a chain is then left as is)
  const uint8_t* prf_adrsc = nullptr;  // null, or count × kAdrscBytes
  const uint8_t* sk_seed = nullptr;    // n bytes, read with prf_adrsc
  uint8_t* const* values = nullptr;    // count: n bytes each, the value in (unless prf) and out
};

// H of the n = 24, 32 sets (FIPS 205 §11.2.2), count independent calls: out[i] = the first n
// bytes of SHA-512 resumed from `chain` over adrsc[i] || in[i] (2n bytes) || padding. out[i] may
// be in[j] for j <= i (a tree level computed in place); each call reads its input before any later
// call's output is written.
struct Sha512HArgs {
  const uint64_t* chain = nullptr;  // the 8 chaining words after PK.seed || 0^(128-n)
  size_t n = 24;                    // 24 or 32
  size_t count = 0;
  const uint8_t* adrsc = nullptr;  // count × kAdrscBytes
  const uint8_t* const* in = nullptr;
  uint8_t* const* out = nullptr;
};

namespace portable {
// sha256_chains, one chain at a time on args.compress.
void Sha256Chains(const Sha256ChainsArgs& args);
// sha512_h, one call at a time on Sha512Compress.
void Sha512H(const Sha512HArgs& args);
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
  // Chains whose values stay in the lanes across their steps (1: the portable one at a time). A
  // backend names its own where its SHA-256 lanes are the chosen path (sha2.h, kLanes): each
  // step's block is then built from the lanes' chaining words in registers and the digests are
  // written out once per chain, not once per step. Constant time: every lane runs every step of
  // its group, a lane whose chain is done keeps its value through a mask made of the public
  // steps.
  uint8_t sha256_chain_lanes = 1;
  void (*sha256_chains)(const Sha256ChainsArgs& args) = &portable::Sha256Chains;
  // Lanes of sha512_compress_lanes: 1, 4 (AVX2) or 8 (AVX-512); at most 8 (thash.cc).
  uint8_t sha512_lanes = 1;
  // One SHA-512 compression (FIPS 180-4 §6.4.2) in each lane, laid out as sha256_compress_lanes
  // with 64-bit words and 128-byte blocks: for H and T_l of the n = 24, 32 sets. Constant time.
  void (*sha512_compress_lanes)(uint64_t* v,
                                const uint8_t* const* blocks) = &portable::Sha512Lanes1;
  // H of the n = 24, 32 sets with each block's words made in registers from the inputs and the
  // digests written straight to out (1: the portable one at a time; 8: AVX-512, used where
  // sha512_compress_lanes is). Constant time.
  uint8_t sha512_h_lanes = 1;
  void (*sha512_h)(const Sha512HArgs& args) = &portable::Sha512H;
};

extern const Backend kPortable;
const Backend& ActiveBackend();
const Backend& BackendFor(Isa isa);

}  // namespace pqcd::kernels::slhdsa
