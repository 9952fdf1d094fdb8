// The Keccak tables of the neon backend (keccak/backend.h; declared in arch/backends.h):
//
// - kNeonAuto, the NEON row's: the SHA-3-extension kernels (arch/aarch64/neon_sha3/keccak/) while
//   isa.cc reports HWCAP_SHA3 (UseNeonSha3Keccak), else the portable (scalar) ones. A CPU with
//   ASIMD but without SHA3 (Cortex-A72, Neoverse N1, ...) must never reach an EOR3, and there is
//   one Isa for both, so the choice is made per call from a flag that isa.cc sets once, at
//   detection (and again only when a test masks the feature). The flag is public (a CPU feature),
//   never secret data.
// - kNeon: the plain-ASIMD two-states-per-vector permutation (keccak_x2_neon.cc). In no row: under
//   qemu it ran 1.5x the instructions of the scalar permutation (bench/RESULTS.md); tested by
//   test_keccak_backends.
#include "keccak/backend.h"

#include <atomic>

#include "arch/aarch64/neon/keccak/keccak_neon.h"
#include "arch/aarch64/neon_sha3/keccak/keccak_sha3.h"

namespace pqcd::kernels::keccak {

extern const Backend kNeon;
constinit const Backend kNeon{
    .lanes = 4,
    .f1600x4 = &KeccakF1600x4Neon,
    .f1600x4x1 = &KeccakF1600x4x1Neon,
    .f1600x8 = &KeccakF1600x8Neon,
};

namespace {

std::atomic<bool> g_use_sha3{false};

inline bool Sha3() {
  return g_use_sha3.load(std::memory_order_relaxed);
}

void AutoF1600(uint64_t st[25]) {
  if (Sha3()) {
    KeccakF1600x1Sha3(st);
  } else {
    KeccakF1600Portable(st);
  }
}

void AutoF1600x4(uint64_t* st, size_t stride, unsigned live) {
  if (Sha3()) {
    KeccakF1600x4Sha3(st, stride, live);
  } else {
    portable::F1600x4(st, stride, live);
  }
}

void AutoF1600x4x1(uint64_t* st, size_t stride, unsigned live, uint64_t st1[25]) {
  if (Sha3()) {
    KeccakF1600x4x1Sha3(st, stride, live, st1);
  } else {
    portable::F1600x4x1(st, stride, live, st1);
  }
}

void AutoF1600x8(uint64_t* st) {
  if (Sha3()) {
    KeccakF1600x8Sha3(st);
  } else {
    portable::F1600x8(st);
  }
}

}  // namespace

void UseNeonSha3Keccak(bool on) {
  g_use_sha3.store(on, std::memory_order_relaxed);
}

bool NeonSha3KeccakInUse() {
  return Sha3();
}

// lanes = 4 in both cases: with SHA3, two x2 permutations per f1600x4; without, the batched
// callers (KeccakDigestBatch, ML-DSA's SHAKE256 jobs) interleave four sponges that the portable
// hooks permute one after another, which costs only the interleaving copies.
extern const Backend kNeonAuto;
constinit const Backend kNeonAuto{
    .lanes = 4,
    .f1600 = &AutoF1600,
    .f1600x4 = &AutoF1600x4,
    .f1600x4x1 = &AutoF1600x4x1,
    .f1600x8 = &AutoF1600x8,
};

}  // namespace pqcd::kernels::keccak
