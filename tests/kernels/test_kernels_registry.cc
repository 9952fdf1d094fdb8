// The algorithm registry: every row has the functions of its family, names parse back to their
// row, and public_key_of gives the public key of both private-key forms.
#include <gtest/gtest.h>

#include <vector>

#include "pqcd/kernels/random.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::kernels {
namespace {

TEST(Registry, EveryRowHasItsFamilysFunctions) {
  ASSERT_EQ(Registry().size(), kNumAlgorithms);
  for (const AlgorithmDescriptor& d : Registry()) {
    SCOPED_TRACE(std::string(d.name()));
    EXPECT_EQ(&Describe(d.id()), &d);
    EXPECT_EQ(d.kem != nullptr, d.family() == Family::kKem);
    EXPECT_EQ(d.dsa != nullptr, d.family() == Family::kDsa);
    EXPECT_EQ(d.public_key_of != nullptr, d.family() != Family::kHash);
    EXPECT_EQ(ParseAlgorithmName(d.name()), d.id());
  }
  EXPECT_EQ(ParseAlgorithmName("SHAKE-128"), AlgorithmId::kShake128);
  EXPECT_EQ(ParseAlgorithmName("sha512/224"), AlgorithmId::kSha2_512_224);
  EXPECT_EQ(ParseAlgorithmName("mlkem768"), AlgorithmId::kMlKem768);
  EXPECT_FALSE(ParseAlgorithmName("ML-KEM-769").has_value());
}

// Key generation from a seed, then public_key_of of the seed and of the expanded key: both give
// the generated public key; a changed expanded key is refused.
TEST(Registry, PublicKeyOfBothPrivateKeyForms) {
  for (const AlgorithmDescriptor& d : Registry()) {
    if (d.family() == Family::kHash) continue;
    SCOPED_TRACE(std::string(d.name()));
    const AlgorithmFacts& f = *d.facts;
    std::vector<uint8_t> seed(f.seed_bytes, 0x5a), pk(f.public_key_bytes), sk(f.private_key_bytes);
    absl::Status st;
    if (d.kem != nullptr) {
      KemKeyGenItem item{seed, pk, sk, {}, {}};
      d.kem->keygen_batch(std::span(&item, 1), OsRandom());
      st = item.status;
    } else {
      DsaKeyGenItem item{seed, pk, sk, {}, {}};
      d.dsa->keygen_batch(std::span(&item, 1), OsRandom());
      st = item.status;
    }
    ASSERT_TRUE(st.ok()) << st;
    std::vector<uint8_t> from_seed(pk.size()), from_sk(pk.size());
    ASSERT_TRUE(d.public_key_of(seed, MutBytes(from_seed)).ok());
    ASSERT_TRUE(d.public_key_of(sk, MutBytes(from_sk)).ok());
    EXPECT_EQ(from_seed, pk);
    EXPECT_EQ(from_sk, pk);
    // A changed byte of the ML-KEM / ML-DSA part. (The hybrids with the curve first keep the
    // curve's scalar in front, and any other valid scalar is a valid key: nothing to detect.)
    const size_t at = d.id() == AlgorithmId::kSecP256r1MlKem768    ? 32
                      : d.id() == AlgorithmId::kSecP384r1MlKem1024 ? 48
                                                                   : 0;
    sk[at] ^= 1;
    EXPECT_FALSE(d.public_key_of(sk, MutBytes(from_sk)).ok());
    EXPECT_FALSE(d.public_key_of(Bytes(seed).first(seed.size() - 1), MutBytes(from_sk)).ok());
  }
}

}  // namespace
}  // namespace pqcd::kernels
