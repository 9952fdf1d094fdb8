// The SM3 backend table: multi-buffer compression (several independent messages side by side),
// with its contract. Single-stream SM3 (Sm3, Sm3Digest) always runs the portable compression.
//
// As for every family (see keccak/backend.h): hooks default to the portable code, a backend table
// names only what it implements, the table in use follows the active ISA, and arch/backends.h
// lists which backend supplies which table. Declarations and constants only (included by
// ISA-flagged translation units too).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::kernels {
enum class Isa : uint8_t;  // pqcd/kernels/isa.h
}  // namespace pqcd::kernels

namespace pqcd::kernels::sm3 {

namespace portable {
// compress_lanes for lanes = 1: Sm3CompressPortable(v, blocks[0], 1).
void CompressLanes1(uint32_t* v, const uint8_t* const* blocks);
}  // namespace portable

struct Backend {
  // Lanes of compress_lanes: 1 (Sm3DigestBatch hashes the messages one after another), 4, 8 or 16.
  uint8_t lanes = 1;

  // One compression step CF (GB/T 32905-2016 §5.3) for each of the `lanes` lanes: v holds the
  // 8 chaining words of every lane interleaved (word i of lane j at v[i * lanes + j], 8·lanes
  // words, no alignment required); blocks[j] points to lane j's next 64-byte block (every one
  // readable, any alignment; an idle lane gets a dummy block and its result is ignored).
  // Constant time in v and the blocks.
  void (*compress_lanes)(uint32_t* v, const uint8_t* const* blocks) = &portable::CompressLanes1;
};

extern const Backend kPortable;
const Backend& ActiveBackend();
const Backend& BackendFor(Isa isa);

}  // namespace pqcd::kernels::sm3
