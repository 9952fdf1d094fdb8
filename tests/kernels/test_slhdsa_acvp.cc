// SLH-DSA (FIPS 205) against the NIST ACVP sample vectors.
//
// keyGen: the official internalProjection (inputs and outputs). sigGen: the official prompt; its
// official expected results are not in this repository (tests/vectors/README.md says why), so
// each signature is compared with the SHA-256 in derivedResults.json, made from the same prompt by
// an independent implementation, and must verify; a changed byte must not.
//
// How much runs: in a plain build (tests/run.sh runs this program in its Release stage) every
// case on the backend chosen at start-up and a sample on the others; under a sanitizer or
// PQCD_TEST_QUICK=1 the sample only. The sample: every keyGen case of the 'f' sets, the first
// sigGen case of each 'f' group and of each SLH-DSA-*-128s group. PQCD_SLHDSA_FULL=1 runs every
// case everywhere.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/test_support.h"
#include "openssl/sha.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/slhdsa.h"
#include "slhdsa/backend.h"
#include "slhdsa/sha2.h"

namespace pqcd::kernels {
namespace {

using pqcd::testing::FromHex;
using pqcd::testing::LoadVectorJson;
using pqcd::testing::ToHex;
using pqcd::testing::VectorCounter;
using Json = nlohmann::json;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

bool Everywhere() {
  const char* v = std::getenv("PQCD_SLHDSA_FULL");
  return v != nullptr && v[0] == '1';
}
// Whether every case runs on this backend (the others run the sample).
bool FullRun(Isa isa, Isa chosen) {
  if (Everywhere()) return true;
  return !kSanitized && !pqcd::testing::QuickTests() && isa == chosen;
}

bool SmallSet(const std::string& set) {
  return set.back() == 'f' || set.find("-128s") != std::string::npos;
}

// Calls f.template operator()<SlhDsaXX>() for the named parameter set; false if unknown.
template <class F>
bool WithParameterSet(const std::string& name, F&& f) {
  bool found = false;
  auto one = [&]<class S>() {
    if (!found && name == S::kName) {
      found = true;
      f.template operator()<S>();
    }
  };
  one.template operator()<SlhDsaSha2_128s>();
  one.template operator()<SlhDsaSha2_128f>();
  one.template operator()<SlhDsaSha2_192s>();
  one.template operator()<SlhDsaSha2_192f>();
  one.template operator()<SlhDsaSha2_256s>();
  one.template operator()<SlhDsaSha2_256f>();
  one.template operator()<SlhDsaShake128s>();
  one.template operator()<SlhDsaShake128f>();
  one.template operator()<SlhDsaShake192s>();
  one.template operator()<SlhDsaShake192f>();
  one.template operator()<SlhDsaShake256s>();
  one.template operator()<SlhDsaShake256f>();
  return found;
}

std::vector<uint8_t> HexField(const Json& tc, const char* name) {
  return tc.contains(name) ? FromHex(tc.at(name).get<std::string>()) : std::vector<uint8_t>{};
}

std::string Sha256Hex(const std::vector<uint8_t>& v) {
  uint8_t d[SHA256_DIGEST_LENGTH];
  SHA256(v.data(), v.size(), d);
  return ToHex(d, sizeof(d));
}

TEST(SlhDsaAcvp, KeyGen) {
  const Json doc = LoadVectorJson("acvp/SLH-DSA-keyGen-FIPS205/internalProjection.json");
  ASSERT_FALSE(doc.is_null());
  VectorCounter counter("SLH-DSA-keyGen-FIPS205/internalProjection.json");
  const Isa chosen = ActiveIsa();
  pqcd::testing::ScopedIsa restore;
  size_t expected = 0;
  bool any_full = false;
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    const bool full = FullRun(isa, chosen);
    any_full |= full;
    const std::string backend = std::string(IsaName(isa)) + ":";
    for (const Json& group : doc.at("testGroups")) {
      const std::string set = group.at("parameterSet");
      if (!full && set.back() != 'f') continue;
      const std::string label = backend + set + "/keyGen";
      for (const Json& tc : group.at("tests")) {
        ++expected;
        std::vector<uint8_t> seed = HexField(tc, "skSeed");
        const auto prf = HexField(tc, "skPrf");
        const auto pk_seed = HexField(tc, "pkSeed");
        seed.insert(seed.end(), prf.begin(), prf.end());
        seed.insert(seed.end(), pk_seed.begin(), pk_seed.end());
        const auto want_pk = HexField(tc, "pk");
        const auto want_sk = HexField(tc, "sk");
        bool ok = false;
        ASSERT_TRUE(WithParameterSet(set, [&]<class S>() {
          std::vector<uint8_t> pk(S::kPublicKeyBytes), sk(S::kPrivateKeyBytes);
          const absl::Status s = S::KeyGenFromSeed(seed, pk, sk);
          EXPECT_TRUE(s.ok()) << s;
          EXPECT_EQ(ToHex(pk), ToHex(want_pk)) << label << " tcId " << tc.at("tcId");
          EXPECT_EQ(ToHex(sk), ToHex(want_sk)) << label << " tcId " << tc.at("tcId");
          // The key checks agree: a consistent key passes, a changed PK.root fails.
          EXPECT_TRUE(S::CheckExpandedPrivateKey(sk, pk).ok());
          std::vector<uint8_t> bad = sk;
          bad.back() ^= 1;
          EXPECT_FALSE(S::CheckExpandedPrivateKey(bad).ok());
          ok = s.ok() && pk == want_pk && sk == want_sk;
        })) << set;
        ok ? counter.Pass(label) : counter.Fail(label);
      }
    }
  }
  EXPECT_EQ(counter.total_passed(), expected);
  if (any_full) {
    EXPECT_GE(expected, 120u);
  }
}

// The SHA2 sets' one-block SHA-256 calls run one of three ways (slhdsa/sha2.h); the keyGen cases
// of the SHA2 sets under each path this CPU has, and each path's compression beside the portable
// one on random blocks and chaining values.
TEST(SlhDsaAcvp, Sha256Paths) {
  const Json doc = LoadVectorJson("acvp/SLH-DSA-keyGen-FIPS205/internalProjection.json");
  ASSERT_FALSE(doc.is_null());
  VectorCounter counter(
      "SLH-DSA-keyGen-FIPS205/internalProjection.json (SHA2 sets, SHA-256 paths)");
  pqcd::testing::ScopedIsa restore;
  struct PathCase {
    std::string name;
    slhdsa::Sha256Path path;
    Isa isa;
  };
  std::vector<PathCase> paths = {{"portable", slhdsa::Sha256Path::kPortable, ActiveIsa()}};
  if (slhdsa::Sha256ShaNiSupported()) {
    paths.push_back({"sha-ni", slhdsa::Sha256Path::kShaNi, ActiveIsa()});
  }
  // The lanes of every backend that has its own (AVX2 x8, AVX-512 x16).
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    if (slhdsa::BackendFor(isa).sha256_lanes > 1) {
      paths.push_back({"lanes:" + std::string(IsaName(isa)), slhdsa::Sha256Path::kLanes, isa});
    }
  }
  SeededRandom rng(uint64_t{205});
  for (const auto& [path_name, path, isa] : paths) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    slhdsa::SetSha256PathForTesting(path);
    // The compression itself, all the backend's lanes at a time where the path has lanes.
    const size_t lanes =
        path == slhdsa::Sha256Path::kLanes ? slhdsa::ActiveBackend().sha256_lanes : 1;
    for (int round = 0; round < 50; ++round) {
      std::vector<uint8_t> blocks(64 * lanes);
      std::vector<uint32_t> v(8 * lanes), want(8 * lanes);
      ASSERT_TRUE(rng.Generate(blocks).ok());
      ASSERT_TRUE(rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(v.data()), v.size() * 4)).ok());
      std::vector<const uint8_t*> ptrs(lanes);
      for (size_t j = 0; j < lanes; ++j) {
        ptrs[j] = blocks.data() + 64 * j;
        uint32_t h[8];
        for (int w = 0; w < 8; ++w) h[w] = v[w * lanes + j];
        slhdsa::Sha256CompressPortable(h, ptrs[j]);
        for (int w = 0; w < 8; ++w) want[w * lanes + j] = h[w];
      }
      if (path == slhdsa::Sha256Path::kLanes) {
        slhdsa::ActiveBackend().sha256_compress_lanes(v.data(), ptrs.data());
      } else {
        slhdsa::ActiveSha256Compress()(v.data(), ptrs[0]);
      }
      ASSERT_EQ(v, want) << path_name << " round " << round;
    }
    for (const Json& group : doc.at("testGroups")) {
      const std::string set = group.at("parameterSet");
      if (set.find("SHA2") == std::string::npos || set.back() != 'f') continue;
      const std::string label = path_name + ":" + set + "/keyGen";
      for (const Json& tc : group.at("tests")) {
        std::vector<uint8_t> seed = HexField(tc, "skSeed");
        const auto prf = HexField(tc, "skPrf");
        const auto pk_seed = HexField(tc, "pkSeed");
        seed.insert(seed.end(), prf.begin(), prf.end());
        seed.insert(seed.end(), pk_seed.begin(), pk_seed.end());
        bool ok = false;
        ASSERT_TRUE(WithParameterSet(set, [&]<class S>() {
          std::vector<uint8_t> pk(S::kPublicKeyBytes), sk(S::kPrivateKeyBytes);
          ok = S::KeyGenFromSeed(seed, pk, sk).ok() && pk == HexField(tc, "pk") &&
               sk == HexField(tc, "sk");
        }));
        EXPECT_TRUE(ok) << label << " tcId " << tc.at("tcId");
        ok ? counter.Pass(label) : counter.Fail(label);
      }
    }
  }
  slhdsa::SetSha256PathForTesting(slhdsa::Sha256Path::kAuto);
  EXPECT_EQ(counter.total_passed(), 30u * paths.size());
}

// The SHA-512 lanes of every backend that has them (H and T of the n = 24, 32 sets) beside the
// portable compression, on random blocks and chaining values; the keyGen and sigGen cases of
// those sets run on them wherever the backend is active.
TEST(SlhDsaAcvp, Sha512Lanes) {
  SeededRandom rng(uint64_t{512});
  size_t checked = 0;
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    const slhdsa::Backend& backend = slhdsa::BackendFor(isa);
    const size_t lanes = backend.sha512_lanes;
    if (lanes < 2) continue;
    for (int round = 0; round < 50; ++round) {
      std::vector<uint8_t> blocks(128 * lanes);
      std::vector<uint64_t> v(8 * lanes), want(8 * lanes);
      ASSERT_TRUE(rng.Generate(blocks).ok());
      ASSERT_TRUE(rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(v.data()), v.size() * 8)).ok());
      std::vector<const uint8_t*> ptrs(lanes);
      for (size_t j = 0; j < lanes; ++j) {
        ptrs[j] = blocks.data() + 128 * j;
        uint64_t h[8];
        for (int w = 0; w < 8; ++w) h[w] = v[w * lanes + j];
        slhdsa::Sha512Compress(h, ptrs[j]);
        for (int w = 0; w < 8; ++w) want[w * lanes + j] = h[w];
      }
      backend.sha512_compress_lanes(v.data(), ptrs.data());
      ASSERT_EQ(v, want) << IsaName(isa) << " round " << round;
    }
    ++checked;
  }
  std::printf("[sha-512 lanes] %zu backend(s) checked\n", checked);
}

TEST(SlhDsaAcvp, SigGen) {
  const Json prompt = LoadVectorJson("acvp/SLH-DSA-sigGen-FIPS205/prompt.json");
  const Json derived = LoadVectorJson("acvp/SLH-DSA-sigGen-FIPS205/derivedResults.json");
  ASSERT_FALSE(prompt.is_null());
  ASSERT_FALSE(derived.is_null());
  std::map<std::pair<int, int>, std::string> want;
  for (const Json& group : derived.at("testGroups")) {
    for (const Json& tc : group.at("tests")) {
      want[{group.at("tgId").get<int>(), tc.at("tcId").get<int>()}] = tc.at("signatureSha256");
    }
  }
  VectorCounter counter("SLH-DSA-sigGen-FIPS205/prompt.json+derivedResults.json");
  const Isa chosen = ActiveIsa();
  pqcd::testing::ScopedIsa restore;
  size_t expected = 0;
  bool any_full = false;
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    const bool full = FullRun(isa, chosen);
    any_full |= full;
    const std::string backend = std::string(IsaName(isa)) + ":";
    for (const Json& group : prompt.at("testGroups")) {
      const int tg_id = group.at("tgId");
      const std::string set = group.at("parameterSet");
      if (!full && !SmallSet(set)) continue;
      const bool deterministic = group.at("deterministic");
      const std::string interface = group.at("signatureInterface");
      const std::string prehash = group.value("preHash", "none");
      const std::string label = backend + set + "/sigGen/" + interface + "/" +
                                (interface == "external" ? prehash : "message") + "/" +
                                (deterministic ? "deterministic" : "hedged");
      size_t in_group = 0;
      for (const Json& tc : group.at("tests")) {
        if (!full && in_group++ > 0) break;
        ++expected;
        const int tc_id = tc.at("tcId");
        const auto it = want.find({tg_id, tc_id});
        ASSERT_NE(it, want.end()) << "no derived result for tg " << tg_id << " tc " << tc_id;
        const auto sk = HexField(tc, "sk");
        const auto message = HexField(tc, "message");
        const auto context = HexField(tc, "context");
        const auto addrnd = HexField(tc, "additionalRandomness");
        ASSERT_EQ(deterministic, addrnd.empty()) << label << " tcId " << tc_id;
        DsaSignOptions options;
        options.context = context;
        options.deterministic = deterministic;
        options.rnd = addrnd;
        if (interface == "external" && prehash == "preHash") {
          const std::optional<PreHash> ph = ParsePreHashName(tc.at("hashAlg").get<std::string>());
          ASSERT_TRUE(ph.has_value() && *ph != PreHash::kNone) << tc.at("hashAlg");
          options.prehash = *ph;
        }
        bool ok = false;
        ASSERT_TRUE(WithParameterSet(set, [&]<class S>() {
          std::vector<uint8_t> sig(S::kSignatureBytes);
          const std::vector<uint8_t> pk(sk.begin() + 2 * S::kN, sk.end());
          absl::Status s;
          absl::StatusOr<bool> verified = false;
          std::vector<uint8_t> changed;
          absl::StatusOr<bool> changed_verified = true;
          SeededRandom unused(uint64_t{1});
          if (interface == "internal") {
            // Alg. 19 with addrnd = PK.seed for the deterministic variant.
            const std::vector<uint8_t> rnd =
                deterministic ? std::vector<uint8_t>(sk.begin() + 2 * S::kN, sk.begin() + 3 * S::kN)
                              : addrnd;
            s = S::SignInternal(sk, message, rnd, sig);
            verified = S::VerifyInternal(pk, message, sig);
            changed = sig;
            changed[changed.size() / 2] ^= 0x10;
            changed_verified = S::VerifyInternal(pk, message, changed);
          } else {
            s = S::Sign(sk, message, options, sig, unused);
            verified = S::Verify(pk, message, sig, options);
            changed = sig;
            changed[changed.size() / 2] ^= 0x10;
            changed_verified = S::Verify(pk, message, changed, options);
          }
          EXPECT_TRUE(s.ok()) << s;
          const std::string got = Sha256Hex(sig);
          EXPECT_EQ(got, it->second) << label << " tcId " << tc_id;
          EXPECT_TRUE(verified.ok() && *verified) << label << " tcId " << tc_id;
          EXPECT_TRUE(changed_verified.ok() && !*changed_verified) << label << " tcId " << tc_id;
          ok = s.ok() && got == it->second && verified.ok() && *verified && changed_verified.ok() &&
               !*changed_verified;
        })) << set;
        ok ? counter.Pass(label) : counter.Fail(label);
      }
    }
  }
  EXPECT_EQ(counter.total_passed(), expected);
  if (any_full) {
    EXPECT_GE(expected, want.size());
  }
}

}  // namespace
}  // namespace pqcd::kernels
