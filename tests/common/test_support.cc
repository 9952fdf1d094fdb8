#include "common/test_support.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace pqcd::testing {

std::filesystem::path VectorsDir() {
  if (const char* env = std::getenv("PQCD_VECTORS_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return PQCD_DEFAULT_VECTORS_DIR;
}

bool QuickTests() {
  const char* env = std::getenv("PQCD_TEST_QUICK");
  return env != nullptr && std::string_view(env) == "1";
}

nlohmann::json LoadVectorJson(const std::string& relative) {
  const std::filesystem::path path = VectorsDir() / relative;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "vector file missing: " << path
                  << " (set PQCD_VECTORS_DIR to the folder of the official vectors, tests/vectors)";
    return nullptr;
  }
  return nlohmann::json::parse(in);
}

std::vector<uint8_t> FromHex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      ADD_FAILURE() << "bad hex digit in " << hex.substr(0, 32);
      return {};
    }
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

std::string ToHex(const uint8_t* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[data[i] >> 4];
    s[2 * i + 1] = kDigits[data[i] & 15];
  }
  return s;
}

std::vector<kernels::Isa> SupportedIsas() {
  return kernels::SupportedIsas();  // checked against the test's own list in test_isa.cc
}

bool CpuRunsIsa(kernels::Isa isa) {
  switch (isa) {
    case kernels::Isa::kPortable:
      return true;
#if defined(__x86_64__)
    case kernels::Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
             __builtin_cpu_supports("bmi2");
    case kernels::Isa::kAvx512:
      return CpuRunsIsa(kernels::Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq");
#endif
#if defined(__aarch64__) && defined(__linux__)
    case kernels::Isa::kNeon:
      return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#endif
    default:
      return false;
  }
}

size_t VectorCounter::total_passed() const {
  size_t n = 0;
  for (const auto& [k, v] : passed_) n += v;
  return n;
}
size_t VectorCounter::total_failed() const {
  size_t n = 0;
  for (const auto& [k, v] : failed_) n += v;
  return n;
}

VectorCounter::~VectorCounter() {
  std::printf("[vectors] %s:", file_.c_str());
  for (const auto& [group, n] : passed_) std::printf(" %s=%zu", group.c_str(), n);
  std::printf(" | passed %zu, failed %zu\n", total_passed(), total_failed());
  if (total_passed() + total_failed() == 0) {
    ADD_FAILURE() << "no vectors ran from " << file_;
  }
}

}  // namespace pqcd::testing
