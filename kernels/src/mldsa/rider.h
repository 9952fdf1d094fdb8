// GrowingRider: SHAKE256 of a message that is still being written, riding along the Keccak
// permutations of another multi-lane job (keccak/keccak_multi.h, KeccakRider). ML-DSA uses it for
// tr = H(pk) while ExpandA runs in key generation and verification.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "keccak/keccak_multi.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels::mldsa {

// SHAKE256(message, 64) of a message that is written while the hash runs (the public key in key
// generation grows row by row of t1): each ride absorbs the next block once its bytes are there
// (Available()), the padded final block once the whole message is. Public data only.
class GrowingRider final : public KeccakRider {
 public:
  GrowingRider(const uint8_t* message, size_t total) : msg_(message), total_(total) {}
  // Starts over with another message (state zeroed, nothing available yet).
  void Begin(const uint8_t* message, size_t total) {
    std::memset(state, 0, sizeof(state));
    msg_ = message;
    total_ = total;
    avail_ = done_ = 0;
    padded_ = false;
  }
  // Every block, the padded final one included, has been absorbed (and, once the permutation that
  // followed has run, Finish needs no permutation of its own).
  bool Absorbed() const { return padded_; }
  // Bytes [0, n) of the message are final.
  void Available(size_t n) { avail_ = n; }
  bool Step() override {
    constexpr size_t kRate = Shake256::kRateBytes;
    if (padded_) return false;
    if (done_ + kRate <= avail_) {
      XorBlock(msg_ + done_, kRate);
      done_ += kRate;
      return true;
    }
    if (avail_ < total_) return false;
    alignas(8) uint8_t block[kRate] = {};
    std::memcpy(block, msg_ + done_, total_ - done_);
    block[total_ - done_] ^= 0x1f;
    block[kRate - 1] ^= 0x80;
    XorBlock(block, kRate);
    done_ = total_;
    padded_ = true;
    return true;
  }
  // The whole message is available: absorbs what did not ride, squeezes n <= rate bytes.
  void Finish(uint8_t* out, size_t n = 64) {
    avail_ = total_;
    while (Step()) KeccakF1600(state);
    std::memcpy(out, state, n);  // little-endian lanes: the first n output bytes
  }

 private:
  void XorBlock(const uint8_t* p, size_t n) {
    for (size_t w = 0; w < n / 8; ++w) {
      uint64_t v;
      std::memcpy(&v, p + 8 * w, 8);
      state[w] ^= v;
    }
  }
  const uint8_t* msg_;
  size_t total_;
  size_t avail_ = 0;
  size_t done_ = 0;
  bool padded_ = false;
};

}  // namespace pqcd::kernels::mldsa
