// The Keccak backend table: the hooks a SIMD backend may provide for Keccak-f[1600] (one state and
// several interleaved states) and the squeeze transpose, with their contracts.
//
// Every hook has the portable implementation as its default member initializer: a backend table
// names only the hooks it implements (designated initializers) and keeps the portable code for
// the rest. The tables are constants; the one in use follows the active ISA (ActiveBackend(), one
// load per call; chosen at start-up, switched only by SetActiveIsa in tests and benchmarks).
// Which backend supplies which table is listed in arch/backends.h.
//
// Interleaved layout ("lane-interleaved", keccak/keccak_multi.h): word i (0..24) of state j is
// st[i * stride + j]; a hook that takes a stride works on the states in columns [0, 4) of an array
// with `stride` >= 4 columns and leaves the other columns alone. Words are little-endian lanes as
// in FIPS 202 §3.1.2. No alignment is required of any pointer. Every hook runs in time
// independent of the state (the states may be secret).
//
// Only declarations and constants here: this header is included by baseline and ISA-flagged
// translation units alike, and nothing inline may be shared between them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::kernels {
enum class Isa : uint8_t;                      // pqcd/kernels/isa.h
void KeccakF1600Portable(uint64_t state[25]);  // pqcd/kernels/sha3.h
}  // namespace pqcd::kernels

namespace pqcd::kernels::keccak {

// `live` arguments: bit j set when column j holds a state the caller needs permuted.
inline constexpr unsigned kAllLanes = 0xf;

// The portable hooks (keccak/keccak_multi.cc): one state at a time with KeccakF1600Portable.
namespace portable {
void F1600x4(uint64_t* st, size_t stride, unsigned live);
void F1600x4x1(uint64_t* st, size_t stride, unsigned live, uint64_t st1[25]);
void F1600x8(uint64_t* st);
void ExtractLanes4(const uint64_t* st, size_t stride, size_t words, uint8_t* const out[4]);
}  // namespace portable

struct Backend {
  // How many independent sponges this backend runs side by side at full speed: batches of
  // independent hashes (KeccakDigestBatch, ML-KEM's batched G/H/J) go in groups of this many.
  // 1: one sponge after another. 4 or 8: multi-lane (KeccakMulti<4> / <8>).
  uint8_t lanes = 1;

  // Keccak-f[1600] (24 rounds) on one state st[0..25), in place.
  void (*f1600)(uint64_t st[25]) = &KeccakF1600Portable;

  // Keccak-f[1600] on the four interleaved states in columns [0, 4) of st (stride >= 4 columns).
  // A state whose bit in `live` is clear may be permuted or left alone (its value afterwards is
  // unspecified but it is not read by the caller); a vector backend permutes all four, the
  // portable one skips it. Words of columns >= 4 are not touched.
  void (*f1600x4)(uint64_t* st, size_t stride, unsigned live) = &portable::F1600x4;

  // f1600x4(st, stride, live) and f1600(st1) together (st1 contiguous, not aliasing st). A backend
  // may interleave the two (AVX2 runs the single state on the integer units beside the vectors).
  void (*f1600x4x1)(uint64_t* st, size_t stride, unsigned live,
                    uint64_t st1[25]) = &portable::F1600x4x1;

  // Keccak-f[1600] on the eight interleaved states of st (stride 8, st[0..200)).
  void (*f1600x8)(uint64_t* st) = &portable::F1600x8;

  // Squeeze transpose: for j < 4, writes words [0, words) of the state in column j to out[j] as
  // 8·words little-endian bytes (out[j] non-null, not overlapping st or each other; words <= 25).
  // Writes exactly 8·words bytes per output.
  void (*extract_lanes4)(const uint64_t* st, size_t stride, size_t words,
                         uint8_t* const out[4]) = &portable::ExtractLanes4;
};

// The portable table (every hook at its default).
extern const Backend kPortable;

// The table of the active ISA (ActiveIsa()).
const Backend& ActiveBackend();
// The table a given ISA uses (the portable one where this build has none for it); for the
// self-test and the differential tests.
const Backend& BackendFor(Isa isa);

}  // namespace pqcd::kernels::keccak
