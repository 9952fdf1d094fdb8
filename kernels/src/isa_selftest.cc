// Known-answer check of a SIMD backend against the portable code, run once before the backend is
// first selected. A backend whose results differ (a miscompiled or faulty unit, an untested CPU) is
// never used: the selection falls back to the next one.
//
// Generic over the backend tables (keccak/backend.h, sm3/backend.h, and through their families'
// SelfCheck mlkem/backend.h and mldsa/backend.h): every hook a backend's table sets to something
// other than the portable kernel is run on fixed pseudo-random inputs and compared with the
// portable result, so a new backend is checked without code here.
#include <cstring>

#include "keccak/backend.h"
#include "keccak/keccak_multi.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"
#include "pqcd/kernels/sm3.h"
#include "sm3/backend.h"

namespace pqcd::kernels {
namespace {

void FillPattern(void* out, size_t n, uint32_t seed) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = static_cast<uint8_t>(seed >> 24);
  }
}

// Portable permutation of the state in column j of an interleaved array with `stride` columns.
void PermuteColumn(uint64_t* st, size_t stride, size_t j) {
  uint64_t one[kKeccakLanes];
  for (size_t i = 0; i < kKeccakLanes; ++i) one[i] = st[i * stride + j];
  KeccakF1600Portable(one);
  for (size_t i = 0; i < kKeccakLanes; ++i) st[i * stride + j] = one[i];
}

bool KeccakTableMatches(const keccak::Backend& be) {
  const keccak::Backend& ref = keccak::kPortable;
  alignas(64) uint64_t st[kKeccakLanes * 8], want[kKeccakLanes * 8];
  uint64_t one[kKeccakLanes], one_want[kKeccakLanes];
  bool ok = true;
  if (be.f1600 != ref.f1600) {
    FillPattern(one, sizeof(one), 0x5eed);
    std::memcpy(one_want, one, sizeof(one));
    be.f1600(one);
    KeccakF1600Portable(one_want);
    ok &= std::memcmp(one, one_want, sizeof(one)) == 0;
  }
  if (be.f1600x4 != ref.f1600x4) {  // columns 0..3 of 5; column 4 untouched
    FillPattern(st, sizeof(st), 0x5eed4);
    std::memcpy(want, st, sizeof(st));
    be.f1600x4(st, 5, keccak::kAllLanes);
    for (size_t j = 0; j < 4; ++j) PermuteColumn(want, 5, j);
    ok &= std::memcmp(st, want, kKeccakLanes * 5 * sizeof(uint64_t)) == 0;
  }
  if (be.f1600x4x1 != ref.f1600x4x1) {
    FillPattern(st, sizeof(st), 0x5eed41);
    FillPattern(one, sizeof(one), 0x0e41);
    std::memcpy(want, st, sizeof(st));
    std::memcpy(one_want, one, sizeof(one));
    be.f1600x4x1(st, 4, keccak::kAllLanes, one);
    for (size_t j = 0; j < 4; ++j) PermuteColumn(want, 4, j);
    KeccakF1600Portable(one_want);
    ok &= std::memcmp(st, want, kKeccakLanes * 4 * sizeof(uint64_t)) == 0 &&
          std::memcmp(one, one_want, sizeof(one)) == 0;
  }
  if (be.f1600x8 != ref.f1600x8) {
    FillPattern(st, sizeof(st), 0x5eed8);
    std::memcpy(want, st, sizeof(st));
    be.f1600x8(st);
    KeccakF1600xNPortable(want, 8);
    ok &= std::memcmp(st, want, sizeof(st)) == 0;
  }
  if (be.extract_lanes4 != ref.extract_lanes4) {  // 21 words (SHAKE128's rate), stride 5
    constexpr size_t kWords = 21;
    uint8_t got[4][8 * kWords + 8], exp[4][8 * kWords + 8];
    FillPattern(st, sizeof(st), 0xe47);
    std::memset(got, 0xa5, sizeof(got));
    std::memset(exp, 0xa5, sizeof(exp));
    uint8_t* const got_p[4] = {got[0], got[1], got[2], got[3]};
    uint8_t* const exp_p[4] = {exp[0], exp[1], exp[2], exp[3]};
    be.extract_lanes4(st, 5, kWords, got_p);
    ref.extract_lanes4(st, 5, kWords, exp_p);
    ok &= std::memcmp(got, exp, sizeof(got)) == 0;
  }
  return ok;
}

bool Sm3TableMatches(const sm3::Backend& be) {
  constexpr size_t kMaxLanes = 16;
  const size_t n = be.lanes;
  if (be.compress_lanes == sm3::kPortable.compress_lanes) return true;
  if (n == 0 || n > kMaxLanes) return false;
  alignas(64) uint8_t blocks[kMaxLanes][64];
  const uint8_t* ptrs[kMaxLanes];
  alignas(64) uint32_t v[8 * kMaxLanes];
  FillPattern(blocks, sizeof(blocks), 0xb10c);
  FillPattern(v, sizeof(v), 0x1234);
  for (size_t j = 0; j < n; ++j) ptrs[j] = blocks[j];
  uint32_t ref[kMaxLanes][8];
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < 8; ++i) ref[j][i] = v[i * n + j];
    Sm3CompressPortable(ref[j], blocks[j], 1);
  }
  be.compress_lanes(v, ptrs);
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < 8; ++i) {
      if (v[i * n + j] != ref[j][i]) return false;
    }
  }
  return true;
}

}  // namespace

// The ML-KEM and ML-DSA checks (mlkem/backend_check.cc, mldsa/backend_check.cc) live in their
// families' libraries, which link this one: weak references, null in a program without that
// family (nothing of it can run there), resolved wherever the family is linked (its backend.cc,
// which defines SelfCheck, holds the forwarders every operation calls).
namespace mlkem {
[[gnu::weak]] bool SelfCheck(Isa isa);
}  // namespace mlkem
namespace mldsa {
[[gnu::weak]] bool SelfCheck(Isa isa);
}  // namespace mldsa

// Called by isa.cc only for ISAs the CPU supports.
bool BackendSelfTestPasses(Isa isa) {
  if (isa == Isa::kPortable) return true;
  bool ok = KeccakTableMatches(keccak::BackendFor(isa)) && Sm3TableMatches(sm3::BackendFor(isa));
  if (ok && mlkem::SelfCheck != nullptr) ok = mlkem::SelfCheck(isa);
  if (ok && mldsa::SelfCheck != nullptr) ok = mldsa::SelfCheck(isa);
  return ok;
}

}  // namespace pqcd::kernels
