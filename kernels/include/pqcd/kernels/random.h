// The one source of randomness the kernels use. Production code takes OsRandom(); tests inject a
// SeededRandom so that "random" operations become reproducible.
#pragma once

#include <array>

#include "absl/status/status.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // Fills out completely or returns an error (the OS refused); never returns partial output.
  virtual absl::Status Generate(MutBytes out) = 0;
};

// getrandom(2) backed source; thread-safe, no state.
RandomSource& OsRandom();

// Deterministic stream: SHAKE256(seed), read sequentially. Not thread-safe; for tests and
// benchmarks.
class SeededRandom final : public RandomSource {
 public:
  explicit SeededRandom(Bytes seed);
  explicit SeededRandom(uint64_t seed);
  absl::Status Generate(MutBytes out) override;

 private:
  Shake256 xof_;
};

}  // namespace pqcd::kernels
