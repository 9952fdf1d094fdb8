// ML-DSA: the complete check of an expanded private key (MlDsa::CheckExpandedPrivateKey), on
// every parameter set and every backend this CPU supports. Key generation's output passes; any
// change to t0, tr, rho, s1 or s2 (in range or not) or a public key that is not (rho, t1) is
// refused; K alone cannot be checked (it is random) and is documented as such.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::kernels {
namespace {

using ByteVec = std::vector<uint8_t>;
using pqcd::testing::ScopedIsa;
using pqcd::testing::SupportedIsas;

template <class Dsa>
struct KeyPair {
  ByteVec pk, sk;
};

template <class Dsa>
KeyPair<Dsa> MakeKeys(SeededRandom& rng) {
  KeyPair<Dsa> kp{ByteVec(Dsa::kPublicKeyBytes), ByteVec(Dsa::kPrivateKeyBytes)};
  EXPECT_TRUE(Dsa::KeyGen(kp.pk, kp.sk, rng).ok());
  return kp;
}

// Byte layout of skEncode (FIPS 204 Alg. 24): rho || K || tr || s1 || s2 || t0.
template <class Dsa>
struct SkLayout {
  static constexpr size_t kK = 32, kTr = 64, kS1 = 128;
  static constexpr size_t kS2 = kS1 + Dsa::Params::l * Dsa::kEtaPackedBytes;
  static constexpr size_t kT0 = kS2 + Dsa::Params::k * Dsa::kEtaPackedBytes;
};

template <class Dsa>
absl::Status Check(const ByteVec& sk, const ByteVec& pk = {}) {
  return Dsa::CheckExpandedPrivateKey(sk, pk);
}

template <class Dsa>
class MlDsaKeyCheckTest : public ::testing::Test {};
using ParameterSets = ::testing::Types<MlDsa44, MlDsa65, MlDsa87>;
TYPED_TEST_SUITE(MlDsaKeyCheckTest, ParameterSets);

TYPED_TEST(MlDsaKeyCheckTest, GeneratedKeysPassAndYieldTheirPublicKey) {
  using Dsa = TypeParam;
  ScopedIsa restore;
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    SCOPED_TRACE(std::string(IsaName(isa)));
    SeededRandom rng(uint64_t{1000} + static_cast<uint64_t>(isa));
    for (int i = 0; i < 4; ++i) {
      const auto kp = MakeKeys<Dsa>(rng);
      EXPECT_TRUE(Check<Dsa>(kp.sk).ok());
      EXPECT_TRUE(Check<Dsa>(kp.sk, kp.pk).ok());
      ByteVec pk_out(Dsa::kPublicKeyBytes);
      EXPECT_TRUE(Dsa::CheckExpandedPrivateKey(kp.sk, {}, pk_out).ok());
      EXPECT_EQ(pk_out, kp.pk);
    }
  }
}

TYPED_TEST(MlDsaKeyCheckTest, FlippedT0BitsAreRefused) {
  using Dsa = TypeParam;
  using Sk = SkLayout<Dsa>;
  ScopedIsa restore;
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    SCOPED_TRACE(std::string(IsaName(isa)));
    SeededRandom rng(uint64_t{2000} + static_cast<uint64_t>(isa));
    const auto kp = MakeKeys<Dsa>(rng);
    const size_t t0_bits = (Dsa::kPrivateKeyBytes - Sk::kT0) * 8;
    // 30 keys with 1-5 distinct random t0 bits flipped (issue 17: the pairwise check let 17 of 30
    // such ML-DSA-44 keys through).
    for (int round = 0; round < 30; ++round) {
      ByteVec bad = kp.sk;
      uint8_t r[1 + 5 * 4];
      ASSERT_TRUE(rng.Generate(r).ok());
      std::vector<size_t> flipped;
      for (int f = 0; f < 1 + r[0] % 5; ++f) {
        uint32_t v;
        std::memcpy(&v, r + 1 + 4 * f, 4);
        const size_t bit = v % t0_bits;
        if (std::find(flipped.begin(), flipped.end(), bit) != flipped.end()) continue;
        flipped.push_back(bit);
        bad[Sk::kT0 + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      }
      EXPECT_REFUSED(Check<Dsa>(bad), "t0");
      EXPECT_REFUSED(Check<Dsa>(bad, kp.pk), "t0");
    }
    for (size_t bit : {size_t{0}, t0_bits - 1}) {  // the ends of the t0 encoding
      ByteVec bad = kp.sk;
      bad[Sk::kT0 + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      EXPECT_REFUSED(Check<Dsa>(bad), "t0");
    }
  }
}

TYPED_TEST(MlDsaKeyCheckTest, S1AndS2OutOfRangeAreRefused) {
  using Dsa = TypeParam;
  using Sk = SkLayout<Dsa>;
  constexpr int kEta = Dsa::Params::eta;
  // BitPack(s, eta, eta) stores eta - s in 3 bits (eta = 2) or 4 bits (eta = 4): the codes above
  // 2 eta are coefficients outside [-eta, eta].
  constexpr uint8_t kMask = kEta == 2 ? 0x07 : 0x0f;
  ScopedIsa restore;
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    SCOPED_TRACE(std::string(IsaName(isa)));
    SeededRandom rng(uint64_t{3000} + static_cast<uint64_t>(isa));
    const auto kp = MakeKeys<Dsa>(rng);
    for (size_t offset : {Sk::kS1, Sk::kS2}) {
      for (int code = 2 * kEta + 1; code <= kMask; ++code) {
        ByteVec bad = kp.sk;
        bad[offset] = static_cast<uint8_t>((bad[offset] & ~kMask) | code);
        EXPECT_REFUSED(Check<Dsa>(bad), "outside [-eta, eta]");
      }
      // An in-range change of one coefficient is well formed but changes t: refused by t0.
      ByteVec other = kp.sk;
      const uint8_t code = other[offset] & kMask;
      other[offset] = static_cast<uint8_t>((other[offset] & ~kMask) | (code == 0 ? 1 : code - 1));
      EXPECT_REFUSED(Check<Dsa>(other), "t0");
    }
  }
}

TYPED_TEST(MlDsaKeyCheckTest, TrRhoAndPublicKeyMismatchesAreRefused) {
  using Dsa = TypeParam;
  using Sk = SkLayout<Dsa>;
  ScopedIsa restore;
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    SCOPED_TRACE(std::string(IsaName(isa)));
    SeededRandom rng(uint64_t{4000} + static_cast<uint64_t>(isa));
    const auto kp = MakeKeys<Dsa>(rng);
    for (size_t byte : {Sk::kTr, Sk::kTr + 31, Sk::kTr + 63}) {
      ByteVec bad = kp.sk;
      bad[byte] ^= 0x10;
      EXPECT_REFUSED(Check<Dsa>(bad), "tr");
    }
    {  // Another rho: another A, so another t.
      ByteVec bad = kp.sk;
      bad[5] ^= 0x01;
      EXPECT_FALSE(Check<Dsa>(bad).ok());
    }
    {  // The public key of another key pair, and single-bit changes of rho and t1.
      const auto other = MakeKeys<Dsa>(rng);
      EXPECT_REFUSED(Check<Dsa>(kp.sk, other.pk), "public key");
      for (size_t byte : {size_t{0}, size_t{31}, size_t{32}, Dsa::kPublicKeyBytes - 1}) {
        ByteVec pk = kp.pk;
        pk[byte] ^= 0x04;
        EXPECT_REFUSED(Check<Dsa>(kp.sk, pk), "public key");
      }
    }
    {  // K is random: nothing to recompute it from. It passes (documented limitation).
      ByteVec k_changed = kp.sk;
      k_changed[Sk::kK] ^= 0x01;
      EXPECT_TRUE(Check<Dsa>(k_changed, kp.pk).ok());
    }
  }
}

TYPED_TEST(MlDsaKeyCheckTest, LengthsAndTheRunTimeEntryPoint) {
  using Dsa = TypeParam;
  SeededRandom rng(uint64_t{5000});
  const auto kp = MakeKeys<Dsa>(rng);
  EXPECT_FALSE(Check<Dsa>(ByteVec(32)).ok());  // a seed is not an expanded key
  EXPECT_FALSE(Check<Dsa>(ByteVec(Dsa::kPrivateKeyBytes - 1)).ok());
  EXPECT_FALSE(Check<Dsa>(kp.sk, ByteVec(Dsa::kPublicKeyBytes + 1)).ok());
  ByteVec small(Dsa::kPublicKeyBytes - 1);
  EXPECT_FALSE(Dsa::CheckExpandedPrivateKey(kp.sk, {}, small).ok());

  const DsaAlgorithm alg = Dsa::Params::k == 4   ? DsaAlgorithm::kMlDsa44
                           : Dsa::Params::k == 6 ? DsaAlgorithm::kMlDsa65
                                                 : DsaAlgorithm::kMlDsa87;
  ByteVec pk_out(Dsa::kPublicKeyBytes);
  EXPECT_TRUE(CheckExpandedPrivateKey(alg, kp.sk, kp.pk, pk_out).ok());
  EXPECT_EQ(pk_out, kp.pk);
  ByteVec bad = kp.sk;
  bad.back() ^= 0x80;
  EXPECT_FALSE(CheckExpandedPrivateKey(alg, bad).ok());
  EXPECT_FALSE(Describe(IdOf(alg)).dsa->check_expanded_sk(bad, kp.pk, {}).ok());
}

}  // namespace
}  // namespace pqcd::kernels
