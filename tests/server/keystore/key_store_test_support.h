// Helpers shared by the key store tests: deterministic bytes, SecretBytes conversions, files with
// a given mode, and a fixture with a fresh data directory and KEK file per test.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "keystore/key_store.h"
#include "keystore/secret_bytes.h"

namespace pqcd::server::testing {

namespace fs = std::filesystem;

inline std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

inline SecretBytes Secret(const std::vector<uint8_t>& v) {
  return SecretBytes(v.data(), v.size());
}

inline std::vector<uint8_t> ToVec(const SecretBytes& s) {
  return {s.data(), s.data() + s.size()};
}

inline void WriteFile(const fs::path& p, const std::string& data,
                      fs::perms perms = fs::perms::owner_read | fs::perms::owner_write) {
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << data;
  }
  fs::permissions(p, perms);
}

// A temporary root per test with data/ (options_.data_dir) and a 64-hex-digit KEK file made of
// `kek_digit` (options_.kek_file); removed after the test.
class KeyStoreDirTest : public ::testing::Test {
 protected:
  explicit KeyStoreDirTest(char kek_digit) : kek_digit_(kek_digit) {}

  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/pqcd-keystore-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    root_ = templ;
    kek_path_ = root_ / "kek.hex";
    WriteFile(kek_path_, std::string(64, kek_digit_) + "\n");
    options_.data_dir = (root_ / "data").string();
    options_.kek_file = kek_path_.string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::unique_ptr<KeyStore> OpenStore(LoadReport* report = nullptr) {
    auto s = KeyStore::Open(options_, report);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  const char kek_digit_;
  fs::path root_, kek_path_;
  KeyStoreOptions options_;
};

}  // namespace pqcd::server::testing
