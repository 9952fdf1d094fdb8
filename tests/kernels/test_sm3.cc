// SM3 (GB/T 32905-2016) against sm3/sm3_vectors.json, one-shot and streaming with every split
// point of every message, plus a differential test against OpenSSL's SM3 where it has one.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sm3.h"

namespace pqcd::kernels {
namespace {

using ::pqcd::testing::FromHex;
using ::pqcd::testing::LoadVectorJson;
using ::pqcd::testing::ToHex;
using ::pqcd::testing::VectorCounter;
using Digest = std::array<uint8_t, Sm3::kDigestBytes>;

std::string Hex(const Digest& d) {
  return ToHex(d.data(), d.size());
}

// Every entry point on one message; returns the number of mismatches (each one reported).
int CheckMessage(const std::string& id, const std::vector<uint8_t>& msg, const std::string& want) {
  int bad = 0;
  auto check = [&](const std::string& how, const Digest& got) {
    if (Hex(got) != want) {
      ++bad;
      ADD_FAILURE() << "SM3 " << id << " via " << how << "\n  expected " << want << "\n  got      "
                    << Hex(got);
    }
  };
  Digest d{};
  Sm3Digest(msg, d);
  check("Sm3Digest", d);
  EXPECT_TRUE(Hash(HashAlgorithm::kSm3, msg, d).ok());
  check("Hash()", d);

  // Every split point, through the class and through the Hasher (reused via Reset).
  absl::StatusOr<Hasher> hasher = Hasher::Create(HashAlgorithm::kSm3);
  EXPECT_TRUE(hasher.ok());
  Sm3 sm3;
  for (size_t split = 0; split <= msg.size(); ++split) {
    sm3.Reset();
    sm3.Update(Bytes(msg.data(), split));
    sm3.Update(Bytes(msg.data() + split, msg.size() - split));
    sm3.Final(d);
    check("Sm3 split at " + std::to_string(split), d);
    hasher->Reset();
    hasher->Update(Bytes(msg.data(), split));
    hasher->Update(Bytes(msg.data() + split, msg.size() - split));
    EXPECT_TRUE(hasher->Finish(d).ok());
    check("Hasher split at " + std::to_string(split), d);
    if (bad > 4) return bad;  // enough detail
  }
  // Byte at a time with empty updates in between.
  sm3.Reset();
  for (uint8_t b : msg) {
    sm3.Update(Bytes(&b, 1));
    sm3.Update(Bytes());
  }
  sm3.Final(d);
  check("Sm3 byte at a time", d);
  return bad;
}

TEST(Sm3, Vectors) {
  const nlohmann::json doc = LoadVectorJson("sm3/sm3_vectors.json");
  ASSERT_FALSE(doc.is_null());
  VectorCounter counter("sm3/sm3_vectors.json");
  const Isa saved = ActiveIsa();
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!IsaSupported(isa)) continue;
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (const nlohmann::json& tc : doc["tests"]) {
      const std::string id = tc["id"].get<std::string>();
      const std::vector<uint8_t> msg = FromHex(tc["msg"].get<std::string>());
      ASSERT_EQ(msg.size(), tc["len_bytes"].get<size_t>()) << id;
      if (tc.contains("msg_ascii")) {
        EXPECT_EQ(std::string(msg.begin(), msg.end()), tc["msg_ascii"].get<std::string>()) << id;
      }
      if (CheckMessage(id, msg, tc["md"].get<std::string>()) == 0) {
        counter.Pass(std::string(IsaName(isa)));
      } else {
        counter.Fail(std::string(IsaName(isa)));
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TEST(Sm3, PaddingBoundaries) {
  // Lengths around the 55/56/64-byte padding boundaries, random chunking vs one shot.
  std::mt19937_64 rng(7);
  for (size_t len : {0, 1, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000}) {
    std::vector<uint8_t> msg(len);
    for (auto& b : msg) b = static_cast<uint8_t>(rng());
    Digest want{}, got{};
    Sm3Digest(msg, want);
    Sm3 h;
    for (size_t off = 0; off < len;) {
      const size_t n = std::min<size_t>(rng() % 70, len - off);
      h.Update(Bytes(msg.data() + off, n));
      off += n;
    }
    h.Final(got);
    EXPECT_EQ(Hex(got), Hex(want)) << "len " << len;
  }
}

TEST(Sm3, MatchesOpenSsl) {
  EVP_MD* md = EVP_MD_fetch(nullptr, "SM3", nullptr);
  if (md == nullptr) GTEST_SKIP() << "this OpenSSL build has no SM3";
  std::mt19937_64 rng(8);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> msg(rng() % 600);
    for (auto& b : msg) b = static_cast<uint8_t>(rng());
    Digest want{}, got{};
    unsigned int len = 0;
    ASSERT_EQ(EVP_Digest(msg.data(), msg.size(), want.data(), &len, md, nullptr), 1);
    Sm3Digest(msg, got);
    ASSERT_EQ(Hex(got), Hex(want)) << "len " << msg.size();
  }
  EVP_MD_free(md);
}

TEST(Sm3, CompressMultipleBlocksEqualsOneAtATime) {
  std::mt19937_64 rng(9);
  std::vector<uint8_t> blocks(5 * Sm3::kBlockBytes);
  for (auto& b : blocks) b = static_cast<uint8_t>(rng());
  uint32_t v1[8], v2[8];
  for (int i = 0; i < 8; ++i) v1[i] = v2[i] = static_cast<uint32_t>(rng());
  Sm3CompressPortable(v1, blocks.data(), 5);
  for (int b = 0; b < 5; ++b) Sm3CompressPortable(v2, blocks.data() + b * Sm3::kBlockBytes, 1);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(v1[i], v2[i]) << i;
}

}  // namespace
}  // namespace pqcd::kernels
