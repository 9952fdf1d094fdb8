// What the start-up hook checks of the families share (mlkem/backend_check.cc,
// mldsa/backend_check.cc): a fixed pseudo-random input generator, the comparison of one call on
// the portable table and on a backend's, and the walk over the family's hook list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pqcd::kernels::hook_check {

// A 64-bit LCG: the same inputs in every process, no dependence on the random source.
struct Gen {
  uint64_t s;
  uint32_t Next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 32);
  }
  // Uniform-ish in [lo, hi] (the modulo bias is irrelevant here).
  int64_t In(int64_t lo, int64_t hi) {
    const uint64_t r = (static_cast<uint64_t>(Next()) << 32) | Next();
    return lo + static_cast<int64_t>(r % static_cast<uint64_t>(hi - lo + 1));
  }
  // Coefficients in [lo, hi].
  template <class T, size_t N>
  void Fill(T (&c)[N], int64_t lo, int64_t hi) {
    for (T& x : c) x = static_cast<T>(In(lo, hi));
  }
  void Bytes(uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(Next() >> 24);
  }
};

// Runs call(table, out) with the portable table into `ref` and with `be` into `got`, both
// pre-filled alike, and compares everything (a write past an encoding shows as a difference too).
template <class Out, class Backend, class Call>
bool SameOutputs(Out& ref, Out& got, const Backend& portable, const Backend& be, Call&& call) {
  std::memset(&ref, 0x5a, sizeof(ref));
  std::memset(&got, 0x5a, sizeof(got));
  call(portable, ref);
  call(be, got);
  return std::memcmp(&ref, &got, sizeof(ref)) == 0;
}

}  // namespace pqcd::kernels::hook_check
