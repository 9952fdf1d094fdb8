// MaskCpuFeaturesForTesting: pretend the CPU lacks AVX-512 (and then AVX2). Asking for a masked
// ISA is an error that leaves the active backend alone. Masking cannot be undone, hence its own
// test program; the tests below run in order and each masks a little more.
#include <gtest/gtest.h>

#include <cstdlib>

#include "pqcd/kernels/isa.h"

namespace pqcd::kernels {
namespace {

TEST(IsaMasked, Avx512MissingThenAvx2Missing) {
  unsetenv("PQCD_ISA");
  // If the machine has AVX-512, start on it: masking must move the active ISA off it.
  const bool had_avx512 = IsaSupported(Isa::kAvx512);
  if (had_avx512) {
    ASSERT_TRUE(SetActiveIsa(Isa::kAvx512).ok());
  }

  CpuFeatures mask;
  mask.avx512 = true;
  MaskCpuFeaturesForTesting(mask);
  EXPECT_FALSE(IsaSupported(Isa::kAvx512));
  EXPECT_FALSE(DetectedCpuFeatures().avx512);
  EXPECT_FALSE(DetectedCpuFeatures().avx512_vbmi);
  EXPECT_FALSE(DetectedCpuFeatures().avx512_ifma);
  EXPECT_NE(BestSupportedIsa(), Isa::kAvx512);
  EXPECT_NE(ActiveIsa(), Isa::kAvx512);
  if (had_avx512) {
    EXPECT_EQ(ActiveIsa(), BestSupportedIsa());
  }

  // Asking for it now fails and changes nothing.
  ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
  const absl::Status s = SetActiveIsa(Isa::kAvx512);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(ActiveIsa(), Isa::kPortable);
  setenv("PQCD_ISA", "avx512", 1);
  EXPECT_EQ(InitIsaFromEnvironment().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ActiveIsa(), Isa::kPortable);
  unsetenv("PQCD_ISA");

  // AVX2 too (and NEON, the SIMD backend on aarch64): only the portable backend is left.
  const bool had_avx2 = IsaSupported(Isa::kAvx2);
  if (had_avx2) {
    ASSERT_TRUE(SetActiveIsa(Isa::kAvx2).ok());
  }
  CpuFeatures mask2;
  mask2.avx2 = true;
  mask2.neon = true;
  MaskCpuFeaturesForTesting(mask2);
  EXPECT_FALSE(IsaSupported(Isa::kAvx2));
  EXPECT_EQ(BestSupportedIsa(), Isa::kPortable);
  EXPECT_EQ(ActiveIsa(), Isa::kPortable);
  EXPECT_EQ(SetActiveIsa(Isa::kAvx2).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ActiveIsa(), Isa::kPortable);
  EXPECT_TRUE(SetActiveIsa(Isa::kPortable).ok());
}

}  // namespace
}  // namespace pqcd::kernels
