// CPU feature detection and the process-wide backend choice. On x86-64, CPUID and XGETBV; on
// aarch64 (Linux), getauxval(AT_HWCAP); on every other architecture there is no SIMD backend
// (arch/backends.h), so nothing is detected and the portable backend is the only one.
#include "pqcd/kernels/isa.h"

#if defined(__x86_64__)  // the architecture of arch/x86_64/ (arch/backends.h)
#include <cpuid.h>
#define PQCD_ISA_X86 1
#endif
#if defined(__aarch64__) && defined(__linux__)  // the architecture of arch/aarch64/
#include <asm/hwcap.h>
#include <sys/auxv.h>
#define PQCD_ISA_AARCH64 1
#include "arch/backends.h"  // keccak::UseNeonSha3Keccak
#endif

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace pqcd::kernels {

bool BackendSelfTestPasses(Isa isa);  // isa_selftest.cc

namespace {

#if defined(PQCD_ISA_X86)
uint64_t ReadXcr0() {
  uint32_t eax, edx;
  // xgetbv with ecx = 0; only executed after CPUID reported OSXSAVE.
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures DetectX86() {
  CpuFeatures f;
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx) || eax < 7) return f;
  __cpuid_count(1, 0, eax, ebx, ecx, edx);
  const bool osxsave = (ecx >> 27) & 1;
  const bool avx = (ecx >> 28) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = ReadXcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;    // SSE + AVX state
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;  // + opmask, ZMM_Hi256, Hi16_ZMM
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool bmi1 = (ebx >> 3) & 1, avx2 = (ebx >> 5) & 1, bmi2 = (ebx >> 8) & 1;
  const bool f512 = (ebx >> 16) & 1, dq = (ebx >> 17) & 1, ifma = (ebx >> 21) & 1;
  const bool bw = (ebx >> 30) & 1, vl = (ebx >> 31) & 1;
  const bool vbmi = (ecx >> 1) & 1;
  f.avx2 = ymm_state && avx2 && bmi1 && bmi2;
  f.avx512 = f.avx2 && zmm_state && f512 && dq && bw && vl;
  f.avx512_vbmi = f.avx512 && vbmi;
  f.avx512_ifma = f.avx512 && ifma;
  return f;
}
#endif

#if defined(PQCD_ISA_AARCH64)
CpuFeatures DetectAarch64() {
  CpuFeatures f;
  const unsigned long hwcap = getauxval(AT_HWCAP);
  f.neon = (hwcap & HWCAP_ASIMD) != 0;
  f.sha3 = f.neon && (hwcap & HWCAP_SHA3) != 0;
  return f;
}
#endif

CpuFeatures Detect() {
#if defined(PQCD_ISA_X86)
  CpuFeatures f = DetectX86();
#elif defined(PQCD_ISA_AARCH64)
  CpuFeatures f = DetectAarch64();
#else
  CpuFeatures f;  // no SIMD backend on this architecture
#endif
  // A backend that the CPU has but that fails its known-answer check is treated as absent.
#if defined(PQCD_ISA_AARCH64)
  // The NEON row's Keccak runs the SHA-3-extension kernels when the CPU has them (arch/backends.h,
  // keccak::kNeonAuto): switched on before the NEON check so that the check runs them, and off
  // again (the scalar Keccak, the rest of NEON kept) if they fail it.
  if (f.sha3) {
    keccak::UseNeonSha3Keccak(true);
    if (!BackendSelfTestPasses(Isa::kNeon)) {
      std::fprintf(stderr, "pqcd: NEON SHA-3 Keccak failed its self-check; not using it\n");
      f.sha3 = false;
      keccak::UseNeonSha3Keccak(false);
    }
  }
#endif
  if (f.neon && !BackendSelfTestPasses(Isa::kNeon)) {
    std::fprintf(stderr, "pqcd: NEON backend failed its self-check; not using it\n");
    f.neon = f.sha3 = false;
  }
  if (f.avx512 && !BackendSelfTestPasses(Isa::kAvx512)) {
    std::fprintf(stderr, "pqcd: AVX-512 backend failed its self-check; not using it\n");
    f.avx512 = f.avx512_vbmi = f.avx512_ifma = false;
  }
  if (f.avx2 && !BackendSelfTestPasses(Isa::kAvx2)) {
    std::fprintf(stderr, "pqcd: AVX2 backend failed its self-check; not using it\n");
    f.avx2 = f.avx512 = f.avx512_vbmi = f.avx512_ifma = false;
  }
  return f;
}

CpuFeatures& Features() {
  static CpuFeatures features = Detect();
  return features;
}

std::atomic<int> g_active{-1};
std::once_flag g_env_once;

void ApplyEnvironmentOnce() {
  std::call_once(g_env_once, [] {
    if (g_active.load() >= 0) return;  // SetActiveIsa came first
    if (!InitIsaFromEnvironment().ok()) g_active.store(static_cast<int>(BestSupportedIsa()));
  });
}

}  // namespace

std::string_view IsaName(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return "portable";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kNeon:
      return "neon";
  }
  return "unknown";
}

// Every name IsaName gives (the one list of backends), plus "ref" and "scalar" for portable.
absl::StatusOr<Isa> ParseIsa(std::string_view name) {
  if (name == "ref" || name == "scalar") return Isa::kPortable;
  for (const Isa isa : kAllIsas) {
    if (name == IsaName(isa)) return isa;
  }
  return absl::InvalidArgumentError("unknown ISA '" + std::string(name) + "' (expected one of " +
                                    AllIsaNames(", ") + ")");
}

namespace {

std::string JoinNames(const auto& isas, std::string_view separator) {
  std::string out;
  for (const Isa isa : isas) {
    if (!out.empty()) out += separator;
    out += IsaName(isa);
  }
  return out;
}

}  // namespace

std::string AllIsaNames(std::string_view separator) {
  return JoinNames(kAllIsas, separator);
}

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> out;
  for (const Isa isa : kAllIsas) {
    if (IsaSupported(isa)) out.push_back(isa);
  }
  return out;
}

std::string SupportedIsaNames(std::string_view separator) {
  return JoinNames(SupportedIsas(), separator);
}

const CpuFeatures& DetectedCpuFeatures() {
  return Features();
}

bool IsaSupported(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return true;
    case Isa::kAvx2:
      return Features().avx2;
    case Isa::kAvx512:
      return Features().avx512;
    case Isa::kNeon:
      return Features().neon;
  }
  return false;
}

Isa BestSupportedIsa() {
  if (IsaSupported(Isa::kAvx512)) return Isa::kAvx512;
  if (IsaSupported(Isa::kAvx2)) return Isa::kAvx2;
  if (IsaSupported(Isa::kNeon)) return Isa::kNeon;
  return Isa::kPortable;
}

Isa ActiveIsa() {
  int v = g_active.load(std::memory_order_acquire);
  if (v < 0) {
    ApplyEnvironmentOnce();
    v = g_active.load(std::memory_order_acquire);
  }
  return static_cast<Isa>(v);
}

absl::Status SetActiveIsa(Isa isa) {
  if (!IsaSupported(isa)) {
    return absl::FailedPreconditionError("ISA '" + std::string(IsaName(isa)) +
                                         "' is not supported by this CPU/OS");
  }
  g_active.store(static_cast<int>(isa), std::memory_order_release);
  return absl::OkStatus();
}

absl::Status InitIsaFromEnvironment() {
  const char* env = std::getenv("PQCD_ISA");
  if (env == nullptr || *env == '\0' || std::string_view(env) == "auto") {
    g_active.store(static_cast<int>(BestSupportedIsa()), std::memory_order_release);
    return absl::OkStatus();
  }
  absl::StatusOr<Isa> isa = ParseIsa(env);
  if (!isa.ok()) return isa.status();
  return SetActiveIsa(*isa);
}

void MaskCpuFeaturesForTesting(const CpuFeatures& mask_off) {
  CpuFeatures& f = Features();
  if (mask_off.avx2) f.avx2 = false;
  if (mask_off.avx2 || mask_off.avx512) f.avx512 = false;
  if (!f.avx512 || mask_off.avx512_vbmi) f.avx512_vbmi = false;
  if (!f.avx512 || mask_off.avx512_ifma) f.avx512_ifma = false;
  if (mask_off.neon) f.neon = false;
  if (!f.neon || mask_off.sha3) f.sha3 = false;
#if defined(PQCD_ISA_AARCH64)
  keccak::UseNeonSha3Keccak(f.sha3);
#endif
  const int active = g_active.load();
  if (active >= 0 && !IsaSupported(static_cast<Isa>(active))) {
    g_active.store(static_cast<int>(BestSupportedIsa()));
  }
}

}  // namespace pqcd::kernels
