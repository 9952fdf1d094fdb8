// The Keccak table of each ISA (arch/backends.h), the active one, and KeccakF1600 (sha3.h).
#include "keccak/backend.h"

#include <array>

#include "arch/backends.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels::keccak {

constinit const Backend kPortable{};

namespace {
constinit const std::array<const Backend*, kIsaCount> kByIsa =
    TablesByIsa(&ArchBackend::keccak, &kPortable);
}  // namespace

const Backend& BackendFor(Isa isa) {
  return *kByIsa[static_cast<size_t>(isa)];
}

const Backend& ActiveBackend() {
  return *kByIsa[static_cast<size_t>(ActiveIsa())];
}

}  // namespace pqcd::kernels::keccak

namespace pqcd::kernels {

// pqcd/kernels/sha3.h: the active backend's single-state permutation (on AVX2 machines, all of
// which have BMI1/BMI2, the portable code built with andn and rorx). Defined here, beside the
// table lookup, so that the sponges pay one call and one indirect call per permutation.
void KeccakF1600(uint64_t state[kKeccakLanes]) {
  keccak::ActiveBackend().f1600(state);
}

}  // namespace pqcd::kernels
