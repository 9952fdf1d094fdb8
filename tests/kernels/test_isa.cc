// ISA names, detection sanity, SetActiveIsa and the PQCD_ISA environment override. Feature masking
// is process-wide and permanent, so it lives in test_isa_masked.cc (its own process).
#include "pqcd/kernels/isa.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

namespace pqcd::kernels {
namespace {

// The backends as this test expects them, written independently of isa.h's kAllIsas.
constexpr Isa kExpectedIsas[] = {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kNeon};

// Sets or clears PQCD_ISA for one scope and restores the previous value and active ISA.
class ScopedIsaEnv {
 public:
  explicit ScopedIsaEnv(const char* value) : saved_isa_(ActiveIsa()) {
    if (const char* old = std::getenv("PQCD_ISA")) {
      had_ = true;
      old_ = old;
    }
    if (value != nullptr) {
      setenv("PQCD_ISA", value, 1);
    } else {
      unsetenv("PQCD_ISA");
    }
  }
  ~ScopedIsaEnv() {
    if (had_) {
      setenv("PQCD_ISA", old_.c_str(), 1);
    } else {
      unsetenv("PQCD_ISA");
    }
    (void)SetActiveIsa(saved_isa_);
  }

 private:
  Isa saved_isa_;
  bool had_ = false;
  std::string old_;
};

TEST(Isa, NamesRoundTrip) {
  for (Isa isa : kExpectedIsas) {
    absl::StatusOr<Isa> back = ParseIsa(IsaName(isa));
    ASSERT_TRUE(back.ok()) << IsaName(isa);
    EXPECT_EQ(*back, isa);
  }
  // kIsaCount is the list every consumer walks (pqcd --isa, pqc-bench, ParseIsa): a backend added
  // to the enum and IsaName but not counted would be refused or skipped everywhere.
  EXPECT_EQ(std::size(kExpectedIsas), kIsaCount);
  ASSERT_EQ(kAllIsas.size(), kIsaCount);
  for (size_t i = 0; i < kIsaCount; ++i) EXPECT_EQ(kAllIsas[i], kExpectedIsas[i]) << i;
  EXPECT_EQ(AllIsaNames("|"), "portable|avx2|avx512|neon");
  // SupportedIsas: exactly the supported ones, in order; portable always.
  std::vector<Isa> supported;
  std::string supported_names;
  for (Isa isa : kExpectedIsas) {
    if (!IsaSupported(isa)) continue;
    supported.push_back(isa);
    supported_names += (supported_names.empty() ? "" : ", ") + std::string(IsaName(isa));
  }
  EXPECT_EQ(SupportedIsas(), supported);
  EXPECT_EQ(SupportedIsaNames(", "), supported_names);
  ASSERT_FALSE(supported.empty());
  EXPECT_EQ(supported.front(), Isa::kPortable);
  EXPECT_EQ(IsaName(static_cast<Isa>(kIsaCount)), "unknown");
  const std::string unknown(ParseIsa("bogus").status().message());
  for (size_t i = 0; i < kIsaCount; ++i) {
    const std::string_view name = IsaName(static_cast<Isa>(i));
    EXPECT_NE(name, "unknown") << i;
    EXPECT_NE(unknown.find(name), std::string::npos) << name << " not in: " << unknown;
  }
  EXPECT_EQ(IsaName(Isa::kPortable), "portable");
  EXPECT_EQ(IsaName(Isa::kAvx2), "avx2");
  EXPECT_EQ(IsaName(Isa::kAvx512), "avx512");
  EXPECT_EQ(IsaName(Isa::kNeon), "neon");
  EXPECT_EQ(*ParseIsa("ref"), Isa::kPortable);
  EXPECT_EQ(*ParseIsa("scalar"), Isa::kPortable);
  for (const char* bad : {"", "bogus", "avx", "avx-512", "sse2", "asimd"}) {
    const absl::StatusOr<Isa> r = ParseIsa(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
}

TEST(Isa, DetectionIsConsistent) {
  const CpuFeatures& f = DetectedCpuFeatures();
  // Informational only: CI machines differ.
  std::printf(
      "[isa] detected: avx2=%d avx512=%d avx512_vbmi=%d avx512_ifma=%d neon=%d sha3=%d, best=%s\n",
      f.avx2, f.avx512, f.avx512_vbmi, f.avx512_ifma, f.neon, f.sha3,
      std::string(IsaName(BestSupportedIsa())).c_str());
  EXPECT_TRUE(IsaSupported(Isa::kPortable));
  EXPECT_EQ(IsaSupported(Isa::kAvx2), f.avx2);
  EXPECT_EQ(IsaSupported(Isa::kAvx512), f.avx512);
  EXPECT_EQ(IsaSupported(Isa::kNeon), f.neon);
  if (f.sha3) {
    EXPECT_TRUE(f.neon);
  }
  if (f.avx512) {
    EXPECT_TRUE(f.avx2);
  }
  if (f.avx512_vbmi || f.avx512_ifma) {
    EXPECT_TRUE(f.avx512);
  }
  EXPECT_TRUE(IsaSupported(BestSupportedIsa()));
  for (Isa isa : kExpectedIsas) {
    if (IsaSupported(isa)) {
      EXPECT_GE(static_cast<int>(BestSupportedIsa()), static_cast<int>(isa));
    }
  }
  EXPECT_TRUE(IsaSupported(ActiveIsa()));
}

TEST(Isa, SetActiveIsaOnEverySupportedBackend) {
  const Isa saved = ActiveIsa();
  for (Isa isa : kExpectedIsas) {
    const absl::Status s = SetActiveIsa(isa);
    if (IsaSupported(isa)) {
      EXPECT_TRUE(s.ok()) << s;
      EXPECT_EQ(ActiveIsa(), isa);
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << IsaName(isa);
      EXPECT_NE(ActiveIsa(), isa);
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TEST(Isa, EnvironmentOverride) {
  {
    ScopedIsaEnv env("bogus");
    ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
    const absl::Status s = InitIsaFromEnvironment();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("bogus"), std::string::npos) << s.message();
    EXPECT_EQ(ActiveIsa(), Isa::kPortable);  // unchanged
  }
  {
    ScopedIsaEnv env("portable");
    ASSERT_TRUE(SetActiveIsa(BestSupportedIsa()).ok());
    EXPECT_TRUE(InitIsaFromEnvironment().ok());
    EXPECT_EQ(ActiveIsa(), Isa::kPortable);
  }
  for (const char* automatic : {static_cast<const char*>(nullptr), "", "auto"}) {
    ScopedIsaEnv env(automatic);
    ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
    EXPECT_TRUE(InitIsaFromEnvironment().ok());
    EXPECT_EQ(ActiveIsa(), BestSupportedIsa()) << (automatic ? automatic : "(unset)");
  }
  for (Isa isa : kExpectedIsas) {
    ScopedIsaEnv env(std::string(IsaName(isa)).c_str());
    ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
    const absl::Status s = InitIsaFromEnvironment();
    if (IsaSupported(isa)) {
      EXPECT_TRUE(s.ok()) << s;
      EXPECT_EQ(ActiveIsa(), isa);
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << IsaName(isa);
      EXPECT_EQ(ActiveIsa(), Isa::kPortable);
    }
  }
}

}  // namespace
}  // namespace pqcd::kernels
