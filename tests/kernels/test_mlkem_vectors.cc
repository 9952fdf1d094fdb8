// ML-KEM against the NIST ACVP vectors (FIPS 203): keyGen and all four encapDecap functions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/mlkem.h"

namespace pqcd::kernels {
namespace {

using pqcd::testing::ScopedIsa;
using pqcd::testing::SupportedIsas;

using pqcd::testing::FromHex;
using pqcd::testing::LoadVectorJson;
using pqcd::testing::ToHex;
using pqcd::testing::VectorCounter;

// Every backend this CPU supports (the vectors run on each; counts are reported per backend).
// Parameter set from the group metadata ("ML-KEM-768" -> 3); 0 if unknown.
int KFromParameterSet(const std::string& name) {
  if (name == "ML-KEM-512") return 2;
  if (name == "ML-KEM-768") return 3;
  if (name == "ML-KEM-1024") return 4;
  return 0;
}

template <int K>
bool KeyGenCase(const nlohmann::json& tc) {
  using Kem = MlKem<K>;
  const auto d = FromHex(tc["d"].get<std::string>());
  const auto z = FromHex(tc["z"].get<std::string>());
  const auto ek_want = FromHex(tc["ek"].get<std::string>());
  const auto dk_want = FromHex(tc["dk"].get<std::string>());
  if (d.size() != 32 || z.size() != 32) return false;
  std::vector<uint8_t> ek(Kem::kEncapsKeyBytes), dk(Kem::kDecapsKeyBytes);
  Kem::KeyGenInternal(std::span<const uint8_t, 32>(d.data(), 32),
                      std::span<const uint8_t, 32>(z.data(), 32),
                      std::span<uint8_t, Kem::kEncapsKeyBytes>(ek.data(), ek.size()),
                      std::span<uint8_t, Kem::kDecapsKeyBytes>(dk.data(), dk.size()));
  EXPECT_EQ(ToHex(ek), ToHex(ek_want)) << "tcId " << tc["tcId"];
  EXPECT_EQ(ToHex(dk), ToHex(dk_want)) << "tcId " << tc["tcId"];
  bool ok = ek == ek_want && dk == dk_want;
  // The same key through the seed entry point d||z.
  std::vector<uint8_t> seed = d;
  seed.insert(seed.end(), z.begin(), z.end());
  std::vector<uint8_t> ek2(Kem::kEncapsKeyBytes), dk2(Kem::kDecapsKeyBytes);
  EXPECT_TRUE(Kem::KeyGenFromSeed(seed, ek2, dk2).ok());
  ok = ok && ek2 == ek_want && dk2 == dk_want;
  return ok;
}

template <int K>
bool EncapDecapCase(const std::string& function, const nlohmann::json& tc) {
  using Kem = MlKem<K>;
  if (function == "encapsulation") {
    const auto ek = FromHex(tc["ek"].get<std::string>());
    const auto dk = FromHex(tc["dk"].get<std::string>());
    const auto m = FromHex(tc["m"].get<std::string>());
    const auto c_want = FromHex(tc["c"].get<std::string>());
    const auto k_want = FromHex(tc["k"].get<std::string>());
    std::vector<uint8_t> c(Kem::kCiphertextBytes), k(32), k2(32);
    const absl::Status st = Kem::EncapsDerand(ek, m, c, k);
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_EQ(ToHex(c), ToHex(c_want)) << "tcId " << tc["tcId"];
    EXPECT_EQ(ToHex(k), ToHex(k_want)) << "tcId " << tc["tcId"];
    // And back: Decaps with the reference dk recovers the key.
    EXPECT_TRUE(Kem::Decaps(dk, c, k2).ok());
    return st.ok() && c == c_want && k == k_want && k2 == k_want;
  }
  if (function == "decapsulation") {
    // Includes "modified ciphertext" cases: the call succeeds and returns J(z||c).
    const auto dk = FromHex(tc["dk"].get<std::string>());
    const auto c = FromHex(tc["c"].get<std::string>());
    const auto k_want = FromHex(tc["k"].get<std::string>());
    std::vector<uint8_t> k(32);
    const absl::Status st = Kem::Decaps(dk, c, k);
    EXPECT_TRUE(st.ok()) << st << " tcId " << tc["tcId"];
    EXPECT_EQ(ToHex(k), ToHex(k_want)) << "tcId " << tc["tcId"] << " " << tc["reason"];
    return st.ok() && k == k_want;
  }
  if (function == "encapsulationKeyCheck") {
    const auto ek = FromHex(tc["ek"].get<std::string>());
    const bool want = tc["testPassed"].get<bool>();
    const absl::Status st = Kem::CheckEncapsKey(ek);
    EXPECT_EQ(st.ok(), want) << "tcId " << tc["tcId"] << " " << tc["reason"] << " " << st;
    // Encaps must refuse exactly the keys the check refuses.
    std::vector<uint8_t> m(32, 0x5a), c(Kem::kCiphertextBytes), k(32);
    const bool encaps_ok = Kem::EncapsDerand(ek, m, c, k).ok();
    EXPECT_EQ(encaps_ok, want) << "tcId " << tc["tcId"];
    return st.ok() == want && encaps_ok == want;
  }
  if (function == "decapsulationKeyCheck") {
    const auto dk = FromHex(tc["dk"].get<std::string>());
    const bool want = tc["testPassed"].get<bool>();
    const absl::Status st = Kem::CheckDecapsKey(dk);
    EXPECT_EQ(st.ok(), want) << "tcId " << tc["tcId"] << " " << tc["reason"] << " " << st;
    // Decaps must refuse exactly the keys the check refuses.
    std::vector<uint8_t> c(Kem::kCiphertextBytes, 0x33), k(32);
    const bool decaps_ok = Kem::Decaps(dk, c, k).ok();
    EXPECT_EQ(decaps_ok, want) << "tcId " << tc["tcId"];
    return st.ok() == want && decaps_ok == want;
  }
  ADD_FAILURE() << "unknown function " << function;
  return false;
}

TEST(MlKemVectors, AcvpKeyGen) {
  const nlohmann::json j = LoadVectorJson("acvp/ML-KEM-keyGen-FIPS203/internalProjection.json");
  ASSERT_FALSE(j.is_null());
  VectorCounter counter("acvp/ML-KEM-keyGen-FIPS203/internalProjection.json");
  ScopedIsa restore;
  const std::vector<Isa> backends = SupportedIsas();
  for (Isa isa : backends) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    const std::string backend(IsaName(isa));
    for (const auto& group : j["testGroups"]) {
      const std::string set = group["parameterSet"].get<std::string>();
      const int k = KFromParameterSet(set);
      ASSERT_NE(k, 0) << set;
      const std::string name = backend + "/" + set;
      for (const auto& tc : group["tests"]) {
        const bool ok = k == 2 ? KeyGenCase<2>(tc) : k == 3 ? KeyGenCase<3>(tc) : KeyGenCase<4>(tc);
        ok ? counter.Pass(name) : counter.Fail(name);
      }
    }
  }
  EXPECT_EQ(counter.total_passed(), 75u * backends.size());
  EXPECT_EQ(counter.total_failed(), 0u);
}

TEST(MlKemVectors, AcvpEncapDecap) {
  const nlohmann::json j = LoadVectorJson("acvp/ML-KEM-encapDecap-FIPS203/internalProjection.json");
  ASSERT_FALSE(j.is_null());
  VectorCounter counter("acvp/ML-KEM-encapDecap-FIPS203/internalProjection.json");
  ScopedIsa restore;
  const std::vector<Isa> backends = SupportedIsas();
  for (Isa isa : backends) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    const std::string backend(IsaName(isa));
    for (const auto& group : j["testGroups"]) {
      const std::string set = group["parameterSet"].get<std::string>();
      const std::string function = group["function"].get<std::string>();
      const int k = KFromParameterSet(set);
      ASSERT_NE(k, 0) << set;
      const std::string name = backend + "/" + set + "/" + function;
      for (const auto& tc : group["tests"]) {
        const bool ok = k == 2   ? EncapDecapCase<2>(function, tc)
                        : k == 3 ? EncapDecapCase<3>(function, tc)
                                 : EncapDecapCase<4>(function, tc);
        ok ? counter.Pass(name) : counter.Fail(name);
      }
    }
  }
  EXPECT_EQ(counter.total_passed(), 165u * backends.size());
  EXPECT_EQ(counter.total_failed(), 0u);
}

}  // namespace
}  // namespace pqcd::kernels
