// Several independent Keccak sponges processed side by side (multi-lane Keccak).
//
// State layout ("lane-interleaved"): lane i (0..24) of state j (0..N-1) is st[i * N + j], so one
// 64-bit lane of all N states is contiguous and loads into one SIMD register (N = 4: YMM, N = 8:
// ZMM). The permutation is dispatched on the active ISA: AVX-512 runs 8 states in ZMM registers,
// AVX2 runs 4 at a time in YMM registers, the portable path permutes each state in turn. Results
// are identical.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::kernels {

// Permutes N interleaved states (N = 4 or 8; other N take the portable path).
void KeccakF1600xN(uint64_t* st, size_t n);

// Backend entry points (only call those the CPU supports; KeccakF1600xN does the dispatch).
// x4: the 4 states at columns [offset, offset+4) of an interleaved array with `stride` columns.
void KeccakF1600x4Avx2(uint64_t* st, size_t stride);
void KeccakF1600x8Avx512(uint64_t* st);
void KeccakF1600x4Avx512(uint64_t* st, size_t stride);  // YMM registers with AVX-512VL rotates
void KeccakF1600xNPortable(uint64_t* st, size_t n);
// The single-state permutation built with BMI1/BMI2 (andn, rorx); on any CPU with AVX2.
void KeccakF1600Bmi(uint64_t state[25]);

// N sponges with the same rate and suffix that absorb inputs of one common length and then squeeze
// in lockstep: SHAKE128 matrix rows, ExpandMask streams, G/H/J of a batch of requests.
template <size_t N>
class KeccakMulti {
 public:
  KeccakMulti(size_t rate_bytes, uint8_t suffix) : rate_(rate_bytes), suffix_(suffix) { Reset(); }
  ~KeccakMulti();
  KeccakMulti(const KeccakMulti&) = delete;
  KeccakMulti& operator=(const KeccakMulti&) = delete;

  void Reset();
  // Absorbs in[j][0..len) into sponge j for every j (null pointers allowed for unused lanes: they
  // absorb zeros), pads, and makes the sponges ready to squeeze.
  void AbsorbOnce(const uint8_t* const in[N], size_t len);
  // Two-part input (e.g. seed || index bytes) without a copy: in[j] || tail[j][0..tail_len).
  void AbsorbOnce2(const uint8_t* const in[N], size_t len, const uint8_t* const tail[N],
                   size_t tail_len);
  // Writes nblocks * rate bytes to out[j] for every non-null out[j].
  void SqueezeBlocks(uint8_t* const out[N], size_t nblocks);
  // Squeezes len bytes (any length) into every non-null out[j]; may be called repeatedly.
  void Squeeze(uint8_t* const out[N], size_t len);

  size_t rate() const { return rate_; }

 private:
  void XorByte(size_t lane, size_t pos, uint8_t b);
  alignas(64) uint64_t st_[25 * N];
  size_t rate_;
  size_t pos_;  // squeeze position within the current block
  uint8_t suffix_;
};

extern template class KeccakMulti<4>;
extern template class KeccakMulti<8>;

}  // namespace pqcd::kernels
