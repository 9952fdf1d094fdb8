// Several independent Keccak sponges processed side by side (multi-lane Keccak).
//
// State layout ("lane-interleaved"): lane i (0..24) of state j (0..N-1) is st[i * N + j], so one
// 64-bit lane of all N states is contiguous and loads into one SIMD register (N = 4: YMM, N = 8:
// ZMM). The permutation is dispatched on the active ISA: AVX-512 runs 8 states in ZMM registers,
// AVX2 runs 4 at a time in YMM registers, N = 5 runs the fifth state on the integer units beside
// the four vector lanes (for 5, 9, 13 ... streams, where a fifth lane is cheap and a second x4 call
// would be mostly empty), the portable path permutes each state in turn. Results are identical.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pqcd/kernels/common.h"

namespace pqcd::kernels {

// Permutes n interleaved states: n = 4 and 8 in vector registers, n = 5 as four in vector registers
// plus one in general-purpose registers (fused on AVX2), multiples of 4 on AVX2 four at a time;
// any other n, and everything on the portable backend, one state at a time.
void KeccakF1600xN(uint64_t* st, size_t n);

// Backend entry points (only call those the CPU supports; KeccakF1600xN does the dispatch).
// x4: the 4 states at columns [offset, offset+4) of an interleaved array with `stride` columns.
void KeccakF1600x4Avx2(uint64_t* st, size_t stride);
void KeccakF1600x8Avx512(uint64_t* st);
void KeccakF1600x4Avx512(uint64_t* st, size_t stride);  // YMM registers with AVX-512VL rotates
void KeccakF1600xNPortable(uint64_t* st, size_t n);
// The single-state permutation built with BMI1/BMI2 (andn, rorx); on any CPU with AVX2.
void KeccakF1600Bmi(uint64_t state[25]);
// 4 states (as KeccakF1600x4Avx2) and one more single state st1, interleaved in one instruction
// stream so that the scalar permutation runs on the integer units beside the vector one.
void KeccakF1600x4x1Avx2(uint64_t* st, size_t stride, uint64_t st1[25]);
// Writes words [0, words) of the states in columns 0..3 to out[0..3] (all non-null); AVX2 only.
void KeccakExtractLanes4Avx2(const uint64_t* st, size_t stride, size_t words,
                             uint8_t* const out[4]);
// KeccakF1600xN(st, n) and KeccakF1600(st1): fused on AVX2, one after the other elsewhere.
void KeccakF1600xNWithRider(uint64_t* st, size_t n, uint64_t st1[25]);

// A single Keccak state that rides along with a KeccakMulti: before each multi-lane permutation
// the multi-lane sponge calls Step(); when it returns true (the rider has prepared its state for a
// permutation) the rider's state is permuted together with the lanes, fused into one call on AVX2.
// Work that one operation must do on a single sponge anyway (H(ek) beside ML-KEM's matrix, H(pk)
// beside ML-DSA's) then costs a fraction of a permutation instead of a whole one.
class KeccakRider {
 public:
  virtual ~KeccakRider();
  // Prepares state for its next permutation and returns true, or returns false (state untouched)
  // when the rider needs no permutation now. A true return obliges the caller to permute state.
  virtual bool Step() = 0;

  alignas(64) uint64_t state[25] = {};
};

// Hashes first || second with a SHA-3 / SHAKE sponge (rate, domain suffix), one block per ride.
// Finish() runs alone whatever the rides did not cover, then squeezes the output.
class AbsorbRider final : public KeccakRider {
 public:
  AbsorbRider(size_t rate_bytes, uint8_t suffix) : rate_(rate_bytes), suffix_(suffix) {}
  ~AbsorbRider() override;
  AbsorbRider(const AbsorbRider&) = delete;
  AbsorbRider& operator=(const AbsorbRider&) = delete;

  // Starts a new message (the spans must stay valid until Finish).
  void Begin(Bytes first, Bytes second = {});
  // XORs the next block (the padded final one last) into state; false once all are absorbed.
  bool Step() override;
  // Absorbs the rest alone and squeezes out.size() bytes (any length).
  void Finish(MutBytes out);

 private:
  void Gather(size_t from, size_t n, uint8_t* dst) const;
  size_t rate_;
  uint8_t suffix_;
  Bytes first_, second_;
  size_t done_ = 0;      // message bytes absorbed
  bool padded_ = false;  // the final (padded) block has been absorbed
};

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

  // Every permutation of these lanes also advances `rider` (see KeccakRider) while it needs it;
  // nullptr detaches. The rider must outlive its use here. Reset() keeps the rider.
  void SetRider(KeccakRider* rider) { rider_ = rider; }

 private:
  void Permute();
  alignas(64) uint64_t st_[25 * N];
  KeccakRider* rider_ = nullptr;
  size_t rate_;
  size_t pos_;  // squeeze position within the current block
  uint8_t suffix_;
};

extern template class KeccakMulti<4>;
extern template class KeccakMulti<5>;
extern template class KeccakMulti<8>;

}  // namespace pqcd::kernels
