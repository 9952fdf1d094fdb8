// Helpers shared by the tests: where the official vectors are, JSON loading, hex.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "pqcd/kernels/isa.h"

// Expects an INVALID_ARGUMENT absl::Status whose message names `what` (a key check's refusal).
#define EXPECT_REFUSED(status, what)                                          \
  do {                                                                        \
    const absl::Status s_ = (status);                                         \
    EXPECT_EQ(s_.code(), absl::StatusCode::kInvalidArgument) << s_;           \
    EXPECT_NE(std::string(s_.message()).find(what), std::string::npos) << s_; \
  } while (0)

namespace pqcd::testing {

// Polls `done` every `every` until it holds or `timeout` passes; returns how long that took, or
// -1 ms if it never held. Tests wait for a condition this way, with a generous
// deadline, never by sleeping a fixed time and then asserting.
template <typename F>
std::chrono::milliseconds TimeUntil(
    F done, std::chrono::milliseconds timeout,
    std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
  const auto start = std::chrono::steady_clock::now();
  const auto since = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  };
  while (since() < timeout) {
    if (done()) return since();
    std::this_thread::sleep_for(every);
  }
  return done() ? since() : std::chrono::milliseconds(-1);
}

// Whether `done` came to hold within `timeout` (polled as TimeUntil does).
template <typename F>
bool Eventually(F done, std::chrono::milliseconds timeout = std::chrono::seconds(30),
                std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
  return TimeUntil(done, timeout, every).count() >= 0;
}

// The vectors folder: $PQCD_VECTORS_DIR if set, else tests/vectors in this repository.
std::filesystem::path VectorsDir();
// Parses vectors/<relative>; fails the current test (and returns null) when it is missing.
nlohmann::json LoadVectorJson(const std::string& relative);

std::vector<uint8_t> FromHex(std::string_view hex);
std::string ToHex(const uint8_t* data, size_t n);
inline std::string ToHex(const std::vector<uint8_t>& v) {
  return ToHex(v.data(), v.size());
}

// PQCD_TEST_QUICK=1: the run is slow (e.g. emulated by qemu, tests/cross/run_aarch64.sh), so the
// longest tests take fewer iterations (Iterations) or leave out their longest cases. The default,
// unset, is the full test.
bool QuickTests();
// `full` normally, `quick` under PQCD_TEST_QUICK=1.
inline int Iterations(int full, int quick) {
  return QuickTests() ? quick : full;
}

// Every backend this CPU supports (portable first), for tests that run on each of them.
std::vector<kernels::Isa> SupportedIsas();

// Whether the CPU (and OS) can run `isa`'s instructions, asked of the compiler's runtime
// (__builtin_cpu_supports) or AT_HWCAP, not of pqcd's detection: a backend's start-up
// self-check must keep every such ISA (a wrong check would otherwise turn the SIMD tests into
// skips without a failure).
bool CpuRunsIsa(kernels::Isa isa);

// Restores the process-wide backend when the scope ends (tests switch with SetActiveIsa).
class ScopedIsa {
 public:
  ScopedIsa() : saved_(kernels::ActiveIsa()) {}
  ~ScopedIsa() { kernels::SetActiveIsa(saved_).IgnoreError(); }
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;

 private:
  kernels::Isa saved_;
};

// Counts cases per file/parameter set and prints a summary line at the end of the test program;
// a test that registers a file and runs zero cases of it fails.
class VectorCounter {
 public:
  explicit VectorCounter(std::string file) : file_(std::move(file)) {}
  ~VectorCounter();
  void Pass(const std::string& group) { ++passed_[group]; }
  void Fail(const std::string& group) { ++failed_[group]; }
  size_t total_passed() const;
  size_t total_failed() const;

 private:
  std::string file_;
  std::map<std::string, size_t> passed_, failed_;
};

}  // namespace pqcd::testing
