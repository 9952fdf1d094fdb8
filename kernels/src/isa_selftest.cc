// Known-answer check of a SIMD backend against the portable code, run once before the backend is
// first selected. A backend whose results differ (a miscompiled or faulty unit, an untested CPU) is
// never used: the selection falls back to the next one.
#include <cstring>

#include "keccak/keccak_multi.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sm3.h"
#include "sm3/sm3_multi.h"

namespace pqcd::kernels {
namespace {

void FillPattern(uint8_t* p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = static_cast<uint8_t>(seed >> 24);
  }
}

bool KeccakMatches(void (*run)(uint64_t*), size_t lanes) {
  alignas(64) uint64_t st[25 * 8], ref[25 * 8];
  FillPattern(reinterpret_cast<uint8_t*>(st), sizeof(st), 0x5eed);
  std::memcpy(ref, st, sizeof(st));
  run(st);
  KeccakF1600xNPortable(ref, lanes);
  return std::memcmp(st, ref, lanes * 25 * sizeof(uint64_t)) == 0;
}

template <size_t N>
bool Sm3Matches(void (*compress)(uint32_t*, const uint8_t* const*)) {
  alignas(64) uint8_t blocks[N][64];
  const uint8_t* ptrs[N];
  alignas(64) uint32_t v[8 * N];
  FillPattern(&blocks[0][0], sizeof(blocks), 0xb10c);
  FillPattern(reinterpret_cast<uint8_t*>(v), sizeof(v), 0x1234);
  for (size_t j = 0; j < N; ++j) ptrs[j] = blocks[j];
  uint32_t ref[N][8];
  for (size_t j = 0; j < N; ++j) {
    for (int i = 0; i < 8; ++i) ref[j][i] = v[i * N + j];
    Sm3CompressPortable(ref[j], blocks[j], 1);
  }
  compress(v, ptrs);
  for (size_t j = 0; j < N; ++j) {
    for (int i = 0; i < 8; ++i) {
      if (v[i * N + j] != ref[j][i]) return false;
    }
  }
  return true;
}

}  // namespace

// Called by isa.cc only for ISAs the CPU supports.
bool BackendSelfTestPasses(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return true;
    case Isa::kAvx2:
      return KeccakMatches([](uint64_t* st) { KeccakF1600Bmi(st); }, 1) &&
             KeccakMatches([](uint64_t* st) { KeccakF1600x4Avx2(st, 4); }, 4) &&
             Sm3Matches<8>(&Sm3CompressX8Avx2);
    case Isa::kAvx512:
      return KeccakMatches([](uint64_t* st) { KeccakF1600x8Avx512(st); }, 8) &&
             KeccakMatches([](uint64_t* st) { KeccakF1600x4Avx512(st, 4); }, 4) &&
             Sm3Matches<16>(&Sm3CompressX16Avx512);
  }
  return false;
}

}  // namespace pqcd::kernels
