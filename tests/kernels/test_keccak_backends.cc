// Differential tests: every hook of every non-portable Keccak table this CPU supports (AVX2 and
// AVX-512 on x86-64; on aarch64 the NEON row's, the plain-NEON x2 one and, with HWCAP_SHA3, the
// SHA-3-extension one; keccak/backend.h, BackendFor(isa), arch/backends.h) against the portable
// permutation, on edge states (all zeros, all ones) and random states: >= 10,000 states per hook
// (2,500 calls of the four-state hooks), fewer under PQCD_TEST_QUICK. Hooks a table leaves at the
// portable default are skipped, and so is the whole test where the CPU has no SIMD backend.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "arch/backends.h"
#include "common/test_support.h"
#include "keccak/backend.h"
#include "keccak/keccak_multi.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels::keccak {

namespace {

constexpr Isa kSimdIsas[] = {Isa::kAvx2, Isa::kAvx512, Isa::kNeon};

struct NamedTable {
  std::string name;
  const Backend* table;
};

// The tables of the ISAs' rows, and on aarch64 the two that are in no row: the plain-NEON x2
// permutation (keccak::kNeon, kept tested for hybrid scalar/NEON work) and the SHA-3-extension
// one (keccak::kNeonSha3, which the NEON row reaches through kNeonAuto only while the CPU reports
// HWCAP_SHA3, so the row's entry tests it as well where it is used).
std::vector<NamedTable> TablesToTest() {
  std::vector<NamedTable> out;
  for (Isa isa : kSimdIsas) {
    if (IsaSupported(isa) && &BackendFor(isa) != &kPortable) {
      out.push_back({std::string(IsaName(isa)), &BackendFor(isa)});
    }
  }
#if defined(__aarch64__)
  if (IsaSupported(Isa::kNeon)) out.push_back({"neon (plain x2)", &kNeon});
  if (IsaSupported(Isa::kNeon) && DetectedCpuFeatures().sha3) {
    out.push_back({"neon_sha3", &kNeonSha3});
  }
#endif
  return out;
}

// Portable permutation of column j of an interleaved array with `stride` columns.
void PermuteColumn(uint64_t* st, size_t stride, size_t j) {
  uint64_t one[kKeccakLanes];
  for (size_t i = 0; i < kKeccakLanes; ++i) one[i] = st[i * stride + j];
  KeccakF1600Portable(one);
  for (size_t i = 0; i < kKeccakLanes; ++i) st[i * stride + j] = one[i];
}

class KeccakBackends : public ::testing::Test {
 public:
  void SetUp() override {
    tables_ = TablesToTest();
    if (tables_.empty()) GTEST_SKIP() << "no SIMD Keccak backend on this CPU";
  }
  // Random words; call k in {0, 1} gives all zeros / all ones.
  void Fill(uint64_t* w, size_t n, int call) {
    for (size_t i = 0; i < n; ++i) w[i] = call == 0 ? 0 : call == 1 ? ~uint64_t{0} : rng_();
  }
  int Calls(int states_per_call) const {
    return pqcd::testing::Iterations(10000, 1000) / states_per_call + 2;
  }
  std::vector<NamedTable> tables_;
  std::mt19937_64 rng_{0x6b656363616b};
};

TEST_F(KeccakBackends, F1600) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.f1600 == kPortable.f1600) continue;
    for (int k = 0; k < Calls(1); ++k) {
      uint64_t got[kKeccakLanes], want[kKeccakLanes];
      Fill(got, kKeccakLanes, k);
      std::memcpy(want, got, sizeof(got));
      be.f1600(got);
      KeccakF1600Portable(want);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << t.name << " call " << k;
    }
  }
}

TEST_F(KeccakBackends, F1600x4AnyStrideLeavesOtherColumns) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.f1600x4 == kPortable.f1600x4) continue;
    for (int k = 0; k < Calls(4); ++k) {
      for (size_t stride : {4, 5, 8}) {
        std::vector<uint64_t> got(kKeccakLanes * stride), want;
        Fill(got.data(), got.size(), k);
        want = got;
        be.f1600x4(got.data(), stride, k % 16);  // any `live`: all live columns are permuted
        for (size_t j = 0; j < 4; ++j) {
          if ((k % 16) >> j & 1) PermuteColumn(want.data(), stride, j);
        }
        for (size_t i = 0; i < kKeccakLanes; ++i) {
          for (size_t j = 0; j < stride; ++j) {
            if (j < 4 && ((k % 16) >> j & 1) == 0) continue;  // unspecified
            ASSERT_EQ(got[i * stride + j], want[i * stride + j])
                << t.name << " call " << k << " stride " << stride << " word " << i << " column "
                << j;
          }
        }
      }
    }
  }
}

TEST_F(KeccakBackends, F1600x4x1) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.f1600x4x1 == kPortable.f1600x4x1) continue;
    for (int k = 0; k < Calls(5); ++k) {
      constexpr size_t kStride = 4;
      uint64_t got[kKeccakLanes * kStride], want[kKeccakLanes * kStride];
      uint64_t one[kKeccakLanes], one_want[kKeccakLanes];
      Fill(got, std::size(got), k);
      Fill(one, kKeccakLanes, k);
      std::memcpy(want, got, sizeof(got));
      std::memcpy(one_want, one, sizeof(one));
      be.f1600x4x1(got, kStride, kAllLanes, one);
      for (size_t j = 0; j < 4; ++j) PermuteColumn(want, kStride, j);
      KeccakF1600Portable(one_want);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << t.name << " call " << k;
      ASSERT_EQ(std::memcmp(one, one_want, sizeof(one)), 0) << t.name << " call " << k;
    }
  }
}

TEST_F(KeccakBackends, F1600x8) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.f1600x8 == kPortable.f1600x8) continue;
    for (int k = 0; k < Calls(8); ++k) {
      uint64_t got[kKeccakLanes * 8], want[kKeccakLanes * 8];
      Fill(got, std::size(got), k);
      std::memcpy(want, got, sizeof(got));
      be.f1600x8(got);
      for (size_t j = 0; j < 8; ++j) PermuteColumn(want, 8, j);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << t.name << " call " << k;
    }
  }
}

TEST_F(KeccakBackends, ExtractLanes4) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.extract_lanes4 == kPortable.extract_lanes4) continue;
    for (int k = 0; k < Calls(4); ++k) {
      const size_t stride = 4 + k % 5, words = k % 26;
      std::vector<uint64_t> st(kKeccakLanes * stride);
      Fill(st.data(), st.size(), k);
      uint8_t got[4][8 * kKeccakLanes + 8], want[4][8 * kKeccakLanes + 8];
      std::memset(got, 0xa5, sizeof(got));
      std::memset(want, 0xa5, sizeof(want));
      uint8_t* const got_p[4] = {got[0], got[1], got[2], got[3]};
      uint8_t* const want_p[4] = {want[0], want[1], want[2], want[3]};
      be.extract_lanes4(st.data(), stride, words, got_p);
      kPortable.extract_lanes4(st.data(), stride, words, want_p);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << t.name << " call " << k;
    }
  }
}

#if defined(__aarch64__)
// The NEON row's table (kNeonAuto) follows the SHA-3 feature as isa.cc detected it, and with the
// switch off it runs the portable kernels (the path of CPUs with ASIMD but without SHA3): every
// hook against the portable permutation, then the switch is put back.
TEST_F(KeccakBackends, NeonRowWithAndWithoutSha3) {
  if (!IsaSupported(Isa::kNeon)) GTEST_SKIP() << "no NEON on this CPU";
  const bool sha3 = DetectedCpuFeatures().sha3;
  EXPECT_EQ(&BackendFor(Isa::kNeon), &kNeonAuto);
  EXPECT_EQ(NeonSha3KeccakInUse(), sha3);
  for (bool on : {false, sha3}) {
    UseNeonSha3Keccak(on);
    for (int k = 0; k < Calls(8); ++k) {
      alignas(16) uint64_t got[kKeccakLanes * 8], want[kKeccakLanes * 8];
      Fill(got, std::size(got), k);
      std::memcpy(want, got, sizeof(got));
      kNeonAuto.f1600(got);
      KeccakF1600Portable(want);
      kNeonAuto.f1600x4(got + 25, 5, kAllLanes);
      for (size_t j = 0; j < 4; ++j) PermuteColumn(want + 25, 5, j);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << "sha3 " << on << " call " << k;
      kNeonAuto.f1600x4x1(got + 25, 5, kAllLanes, got);
      for (size_t j = 0; j < 4; ++j) PermuteColumn(want + 25, 5, j);
      KeccakF1600Portable(want);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << "sha3 " << on << " call " << k;
      kNeonAuto.f1600x8(got);
      KeccakF1600xNPortable(want, 8);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << "sha3 " << on << " call " << k;
    }
  }
  UseNeonSha3Keccak(sha3);
  EXPECT_EQ(NeonSha3KeccakInUse(), sha3);
}
#endif

}  // namespace
}  // namespace pqcd::kernels::keccak
