// Instruction-set backends and their run-time selection.
//
// The backend is chosen once, at first use, from CPUID and XGETBV on x86-64 (the OS must save
// YMM/ZMM state), getauxval(AT_HWCAP) on aarch64 (other architectures have only the portable
// backend) and a known-answer check of each SIMD backend against the portable code: the best
// supported one, unless the environment variable PQCD_ISA=portable|avx2|avx512|neon asks for
// another. Tests and benchmarks may switch with SetActiveIsa(); asking for an ISA the CPU lacks is
// an error, never an illegal instruction.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pqcd::kernels {

// Every value exists on every architecture; the ones a build has no backend for (avx2 and avx512
// off x86-64, neon off aarch64) are simply never supported. The SIMD backends of each architecture
// and what they provide are listed in kernels/src/arch/backends.h. kNeon: Advanced SIMD (ASIMD) on
// aarch64 (arch/aarch64/neon/).
enum class Isa : uint8_t { kPortable = 0, kAvx2 = 1, kAvx512 = 2, kNeon = 3 };
inline constexpr size_t kIsaCount = 4;  // number of Isa values (tables indexed by Isa)
// Every Isa value, in order: the one list that flag choices, usage texts and loops over
// backends iterate.
inline constexpr std::array<Isa, kIsaCount> kAllIsas = {Isa::kPortable, Isa::kAvx2, Isa::kAvx512,
                                                        Isa::kNeon};

std::string_view IsaName(Isa isa);
absl::StatusOr<Isa> ParseIsa(std::string_view name);
// IsaName of every value of kAllIsas, joined by `separator` ("portable|avx2|avx512|neon").
std::string AllIsaNames(std::string_view separator);

// What the CPU and OS support (independent of what is active).
struct CpuFeatures {
  bool avx2 = false;    // AVX2 + BMI1 + BMI2 + OS-enabled YMM state
  bool avx512 = false;  // AVX-512 F+BW+VL+DQ + OS-enabled ZMM/opmask state
  bool avx512_vbmi = false;
  bool avx512_ifma = false;
  bool neon = false;  // aarch64: ASIMD (getauxval(AT_HWCAP) & HWCAP_ASIMD)
  bool sha3 = false;  // aarch64: the SHA-3 extension (HWCAP_SHA3; EOR3, RAX1, XAR, BCAX)
};
const CpuFeatures& DetectedCpuFeatures();
bool IsaSupported(Isa isa);
Isa BestSupportedIsa();
// The backends this CPU and OS can run, in kAllIsas order; and their names joined by `separator`.
std::vector<Isa> SupportedIsas();
std::string SupportedIsaNames(std::string_view separator);

// The backend in use. The first call reads PQCD_ISA (an unknown or unsupported value is reported by
// InitIsaFromEnvironment and otherwise falls back to the best supported backend).
Isa ActiveIsa();
absl::Status SetActiveIsa(Isa isa);
// Applies PQCD_ISA; returns the error for an unknown or unsupported value (the daemon exits on it).
absl::Status InitIsaFromEnvironment();

// For tests: pretend the CPU lacks features (masking), then re-run detection-dependent checks.
void MaskCpuFeaturesForTesting(const CpuFeatures& mask_off);

}  // namespace pqcd::kernels
