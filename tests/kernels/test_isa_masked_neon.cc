// Masking NEON off (MaskCpuFeaturesForTesting) falls back to the portable backend and makes
// SetActiveIsa(kNeon) an error. Masking is process-wide and permanent, hence its own program.
// Skipped where the CPU has no NEON (every non-aarch64 build).
#include <gtest/gtest.h>

#include "pqcd/kernels/isa.h"

namespace pqcd::kernels {
namespace {

TEST(IsaMaskedNeon, MaskingNeonFallsBackToPortable) {
  if (!IsaSupported(Isa::kNeon)) GTEST_SKIP() << "no NEON on this CPU";
  ASSERT_TRUE(SetActiveIsa(Isa::kNeon).ok());
  EXPECT_EQ(ActiveIsa(), Isa::kNeon);
  CpuFeatures mask;
  mask.neon = true;
  MaskCpuFeaturesForTesting(mask);
  EXPECT_FALSE(IsaSupported(Isa::kNeon));
  EXPECT_FALSE(DetectedCpuFeatures().sha3);
  EXPECT_EQ(BestSupportedIsa(), Isa::kPortable);
  EXPECT_EQ(ActiveIsa(), Isa::kPortable);
  EXPECT_EQ(SetActiveIsa(Isa::kNeon).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ActiveIsa(), Isa::kPortable);
}

}  // namespace
}  // namespace pqcd::kernels
