// Several independent Keccak sponges processed side by side (multi-lane Keccak).
//
// State layout ("lane-interleaved"): lane i (0..24) of state j (0..N-1) is st[i * N + j], so one
// 64-bit lane of all N states is contiguous and loads into one SIMD register (N = 4: YMM, N = 8:
// ZMM). The permutation goes through the active backend's table (keccak/backend.h): AVX-512 runs
// 8 states in ZMM registers, AVX2 runs 4 at a time in YMM registers, N = 5 runs the fifth state on
// the integer units beside the four vector lanes (for 5, 9, 13 ... streams, where a fifth lane is
// cheap and a second x4 call would be mostly empty), the portable table permutes each state in
// turn. Results are identical.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pqcd/kernels/common.h"

namespace pqcd::kernels {

namespace keccak {
struct Backend;  // keccak/backend.h
}  // namespace keccak

// Permutes n interleaved states with the active backend's hooks (keccak/backend.h): n = 8 with
// f1600x8, n = 4 with f1600x4, n = 5 as four states in f1600x4x1 plus the fifth as its single
// state, other multiples of 4 four at a time, any other n one state at a time. Results are
// identical on every backend.
void KeccakF1600xN(uint64_t* st, size_t n);

// The portable reference: each of the n interleaved states in turn with KeccakF1600Portable.
void KeccakF1600xNPortable(uint64_t* st, size_t n);
// KeccakF1600xN(st, n) and KeccakF1600(st1): for n = 4 one f1600x4x1 call (fused on AVX2).
void KeccakF1600xNWithRider(uint64_t* st, size_t n, uint64_t st1[25]);
// The same with a given table (callers that permute many times take the active one once).
void KeccakF1600xN(const keccak::Backend& be, uint64_t* st, size_t n);
void KeccakF1600xNWithRider(const keccak::Backend& be, uint64_t* st, size_t n, uint64_t st1[25]);

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
  // Permutes with the Keccak table active when it is constructed (keccak/backend.h).
  KeccakMulti(size_t rate_bytes, uint8_t suffix);
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
  const keccak::Backend& be_;
  KeccakRider* rider_ = nullptr;
  size_t rate_;
  size_t pos_;  // squeeze position within the current block
  uint8_t suffix_;
};

extern template class KeccakMulti<4>;
extern template class KeccakMulti<5>;
extern template class KeccakMulti<8>;

}  // namespace pqcd::kernels
