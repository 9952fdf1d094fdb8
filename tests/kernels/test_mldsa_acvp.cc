// ML-DSA (FIPS 204) against the NIST ACVP sample vectors: keyGen, sigVer and sigGen (prompt joined
// with expectedResults). Every operation is picked from the group metadata. Each file runs once per
// backend the CPU supports (portable, avx2, avx512), counted under "<backend>:<label>".
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/mldsa.h"

namespace pqcd::kernels {
namespace {

using pqcd::testing::FromHex;
using pqcd::testing::LoadVectorJson;
using pqcd::testing::ToHex;
using pqcd::testing::VectorCounter;
using Json = nlohmann::json;

// Calls f.template operator()<MlDsaXX>() for the named parameter set; false if unknown.
template <class F>
bool WithParameterSet(const std::string& name, F&& f) {
  if (name == "ML-DSA-44") {
    f.template operator()<MlDsa44>();
  } else if (name == "ML-DSA-65") {
    f.template operator()<MlDsa65>();
  } else if (name == "ML-DSA-87") {
    f.template operator()<MlDsa87>();
  } else {
    return false;
  }
  return true;
}

// Every backend this CPU supports; restores the ISA that was active on destruction.
class BackendLoop {
 public:
  BackendLoop() : saved_(ActiveIsa()) {
    for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
      if (IsaSupported(isa)) isas_.push_back(isa);
    }
  }
  ~BackendLoop() { (void)SetActiveIsa(saved_); }
  const std::vector<Isa>& isas() const { return isas_; }
  size_t size() const { return isas_.size(); }

 private:
  Isa saved_;
  std::vector<Isa> isas_;
};

std::vector<uint8_t> HexField(const Json& tc, const char* name) {
  return tc.contains(name) ? FromHex(tc.at(name).get<std::string>()) : std::vector<uint8_t>{};
}

TEST(MlDsaAcvp, KeyGen) {
  const Json doc = LoadVectorJson("acvp/ML-DSA-keyGen-FIPS204/internalProjection.json");
  ASSERT_FALSE(doc.is_null());
  VectorCounter counter("ML-DSA-keyGen-FIPS204/internalProjection.json");
  BackendLoop backends;
  for (Isa isa : backends.isas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    const std::string backend = std::string(IsaName(isa)) + ":";
    for (const Json& group : doc.at("testGroups")) {
      const std::string set = group.at("parameterSet");
      const std::string label = backend + set + "/keyGen";
      for (const Json& tc : group.at("tests")) {
        const int tc_id = tc.at("tcId");
        const auto seed = HexField(tc, "seed");
        const auto want_pk = HexField(tc, "pk");
        const auto want_sk = HexField(tc, "sk");
        bool ok = false;
        ASSERT_TRUE(WithParameterSet(set, [&]<class Dsa>() {
          std::vector<uint8_t> pk(Dsa::kPublicKeyBytes), sk(Dsa::kPrivateKeyBytes);
          const absl::Status s = Dsa::KeyGenFromSeed(seed, pk, sk);
          ok = s.ok() && pk == want_pk && sk == want_sk;
          EXPECT_TRUE(s.ok()) << s;
          EXPECT_EQ(ToHex(pk), ToHex(want_pk)) << "tcId " << tc_id;
          EXPECT_EQ(ToHex(sk), ToHex(want_sk)) << "tcId " << tc_id;
        })) << set;
        ok ? counter.Pass(label) : counter.Fail(label);
      }
    }
  }
  EXPECT_EQ(counter.total_passed(), 75u * backends.size());
}

TEST(MlDsaAcvp, SigVer) {
  const Json doc = LoadVectorJson("acvp/ML-DSA-sigVer-FIPS204/internalProjection.json");
  ASSERT_FALSE(doc.is_null());
  VectorCounter counter("ML-DSA-sigVer-FIPS204/internalProjection.json");
  BackendLoop backends;
  for (Isa isa : backends.isas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    const std::string backend = std::string(IsaName(isa)) + ":";
    for (const Json& group : doc.at("testGroups")) {
      const std::string set = group.at("parameterSet");
      const std::string interface = group.at("signatureInterface");
      const std::string prehash = group.value("preHash", "none");
      const bool external_mu = group.value("externalMu", false);
      const std::string label =
          backend + set + "/sigVer/" + interface + "/" +
          (interface == "external" ? prehash : (external_mu ? "externalMu" : "message"));
      for (const Json& tc : group.at("tests")) {
        const int tc_id = tc.at("tcId");
        const bool want = tc.at("testPassed");
        const auto pk = HexField(tc, "pk");
        const auto sig = HexField(tc, "signature");
        const auto message = HexField(tc, external_mu ? "mu" : "message");
        DsaMessageOptions options;
        const auto context = HexField(tc, "context");
        options.context = context;
        options.external_mu = external_mu;
        if (interface == "external" && prehash == "preHash") {
          const std::string alg = tc.at("hashAlg");
          const std::optional<PreHash> ph = ParsePreHashName(alg);
          ASSERT_TRUE(ph.has_value() && *ph != PreHash::kNone) << alg;
          options.prehash = *ph;
        }
        absl::StatusOr<bool> got = absl::InternalError("not run");
        ASSERT_TRUE(WithParameterSet(set, [&]<class Dsa>() {
          if (interface == "internal" && !external_mu) {
            got = Dsa::VerifyInternal(pk, message, sig);
          } else {
            got = Dsa::Verify(pk, message, sig, options);
          }
        })) << set;
        const bool ok = got.ok() && *got == want;
        EXPECT_TRUE(ok) << label << " tcId " << tc_id << " reason " << tc.value("reason", "")
                        << " status " << got.status();
        ok ? counter.Pass(label) : counter.Fail(label);
      }
    }
  }
  EXPECT_EQ(counter.total_passed(), 180u * backends.size());
}

TEST(MlDsaAcvp, SigGen) {
  const Json prompt = LoadVectorJson("acvp/ML-DSA-sigGen-FIPS204/prompt.json");
  const Json expected = LoadVectorJson("acvp/ML-DSA-sigGen-FIPS204/expectedResults.json");
  ASSERT_FALSE(prompt.is_null());
  ASSERT_FALSE(expected.is_null());
  std::map<std::pair<int, int>, std::string> want_sigs;
  for (const Json& group : expected.at("testGroups")) {
    for (const Json& tc : group.at("tests")) {
      want_sigs[{group.at("tgId").get<int>(), tc.at("tcId").get<int>()}] = tc.at("signature");
    }
  }
  VectorCounter counter("ML-DSA-sigGen-FIPS204/prompt.json+expectedResults.json");
  SeededRandom unused_rng(uint64_t{1});
  BackendLoop backends;
  for (Isa isa : backends.isas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    const std::string backend = std::string(IsaName(isa)) + ":";
    for (const Json& group : prompt.at("testGroups")) {
      const int tg_id = group.at("tgId");
      const std::string set = group.at("parameterSet");
      const bool deterministic = group.at("deterministic");
      const std::string interface = group.at("signatureInterface");
      const std::string prehash = group.value("preHash", "none");
      const bool external_mu = group.value("externalMu", false);
      const std::string label =
          backend + set + "/sigGen/" + interface + "/" +
          (interface == "external" ? prehash : (external_mu ? "externalMu" : "message")) + "/" +
          (deterministic ? "deterministic" : "hedged");
      for (const Json& tc : group.at("tests")) {
        const int tc_id = tc.at("tcId");
        const auto it = want_sigs.find({tg_id, tc_id});
        ASSERT_NE(it, want_sigs.end()) << "no expected result for tg " << tg_id << " tc " << tc_id;
        const std::vector<uint8_t> want = FromHex(it->second);
        const auto sk = HexField(tc, "sk");
        const auto message = HexField(tc, external_mu ? "mu" : "message");
        const auto context = HexField(tc, "context");
        std::vector<uint8_t> rnd = HexField(tc, "rnd");
        if (deterministic) {
          ASSERT_TRUE(rnd.empty());
        } else {
          ASSERT_EQ(rnd.size(), 32u);
        }
        DsaSignOptions options;
        options.context = context;
        options.external_mu = external_mu;
        options.deterministic = deterministic;
        options.rnd = rnd;
        if (interface == "external" && prehash == "preHash") {
          const std::optional<PreHash> ph = ParsePreHashName(tc.at("hashAlg").get<std::string>());
          ASSERT_TRUE(ph.has_value() && *ph != PreHash::kNone);
          options.prehash = *ph;
        }
        std::vector<uint8_t> sig;
        absl::Status status;
        ASSERT_TRUE(WithParameterSet(set, [&]<class Dsa>() {
          sig.assign(Dsa::kSignatureBytes, 0);
          if (interface == "internal" && !external_mu) {
            if (deterministic) rnd.assign(32, 0);
            status = Dsa::SignInternal(sk, message, rnd, sig);
          } else {
            status = Dsa::Sign(sk, message, options, sig, unused_rng);
          }
        })) << set;
        const bool ok = status.ok() && sig == want;
        EXPECT_TRUE(status.ok()) << status;
        EXPECT_EQ(ToHex(sig), ToHex(want)) << label << " tgId " << tg_id << " tcId " << tc_id;
        ok ? counter.Pass(label) : counter.Fail(label);
      }
    }
  }
  EXPECT_EQ(counter.total_passed(), 360u * backends.size());
}

}  // namespace
}  // namespace pqcd::kernels
