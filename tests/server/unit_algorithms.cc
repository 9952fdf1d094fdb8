// The API's enums against the algorithm registry, and the server's size checks (no daemon).
#include <gtest/gtest.h>

#include "pqc/v1/common.pb.h"
#include "pqcd/server/algorithms.h"

namespace pqcd::server {
namespace {

// Every pqc.v1.Algorithm value names a registry row with the same number and name (the proto's
// "SHA512_224" and the registry's "SHA2-512/224" are spellings of one name), and every row has a
// proto value: adding an algorithm to one and not the other fails here.
TEST(Algorithms, ProtoEnumAndRegistryAgree) {
  const google::protobuf::EnumDescriptor* e = pqc::v1::Algorithm_descriptor();
  int named = 0;
  for (int i = 0; i < e->value_count(); ++i) {
    const int number = e->value(i)->number();
    const std::string& name = e->value(i)->name();
    if (number == pqc::v1::ALGORITHM_UNSPECIFIED) {
      EXPECT_EQ(LookupAlgorithm(number), nullptr);
      continue;
    }
    const AlgorithmDescriptor* d = LookupAlgorithm(number);
    ASSERT_NE(d, nullptr) << name << " has no registry row";
    EXPECT_EQ(kernels::ParseAlgorithmName(name), d->id()) << name << " vs " << d->name();
    EXPECT_EQ(AlgorithmLabel(number), std::string(d->name()));
    ++named;
  }
  EXPECT_EQ(static_cast<size_t>(named), kernels::kNumAlgorithms);
  for (const kernels::AlgorithmFacts& f : kernels::kAlgorithms) {
    EXPECT_TRUE(pqc::v1::Algorithm_IsValid(f.api_value)) << f.name;
  }
  EXPECT_EQ(AlgorithmLabel(9999), "unknown");
}

TEST(Algorithms, PreHashesMapValueForValue) {
  EXPECT_EQ(ToKernelPreHash(pqc::v1::PRE_HASH_NONE), kernels::PreHash::kNone);
  const google::protobuf::EnumDescriptor* e = pqc::v1::PreHash_descriptor();
  for (int i = 0; i < e->value_count(); ++i) {
    const int number = e->value(i)->number();
    const auto ph = ToKernelPreHash(number);
    ASSERT_TRUE(ph.has_value()) << e->value(i)->name();
    if (number == pqc::v1::PRE_HASH_NONE) continue;
    // "PRE_HASH_SHA2_256" names the registry's "SHA2-256".
    const kernels::PreHashFacts* p = kernels::FindPreHash(*ph);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(kernels::ParseAlgorithmName(e->value(i)->name().substr(9)), p->hash);
  }
  EXPECT_FALSE(ToKernelPreHash(13).has_value());
  EXPECT_FALSE(ToKernelPreHash(-1).has_value());
}

TEST(Algorithms, OneValidationPlaceWithRegistrySizes) {
  const AlgorithmDescriptor& kem = *LookupAlgorithm(pqc::v1::ML_KEM_768);
  EXPECT_TRUE(CheckPrivateKeySize(kem, 64, "private_key").ok());
  EXPECT_TRUE(CheckPrivateKeySize(kem, 2400, "private_key").ok());
  absl::Status s = CheckPrivateKeySize(kem, 100, "private_key");
  EXPECT_EQ(s.message(),
            "private_key: expected 64 (seed) or 2400 (expanded) bytes for ML-KEM-768, got 100");
  s = CheckCiphertextSize(kem, 1087, "ciphertext");
  EXPECT_EQ(s.message(), "ciphertext: expected 1088 bytes for ML-KEM-768, got 1087");
  EXPECT_TRUE(CheckSeedSize(kem, 0, "seed").ok());
  EXPECT_FALSE(CheckSeedSize(kem, 32, "seed").ok());

  const AlgorithmDescriptor& dsa = *LookupAlgorithm(pqc::v1::ML_DSA_65);
  s = CheckPublicKeySize(dsa, 1, "public_key");
  EXPECT_EQ(s.message(), "public_key: expected 1952 bytes for ML-DSA-65, got 1");

  auto family = RequireFamily(pqc::v1::SHA3_256, Family::kKem, "Encaps");
  EXPECT_EQ(family.status().message(), "algorithm: Encaps needs an ML-KEM algorithm, got SHA3-256");
  EXPECT_FALSE(RequireFamily(0, Family::kHash, "Hash").ok());

  const AlgorithmDescriptor& shake = *LookupAlgorithm(pqc::v1::SHAKE128);
  EXPECT_EQ(*HashOutputLength(shake, 0, 1000), 32u);
  EXPECT_EQ(*HashOutputLength(shake, 999, 1000), 999u);
  EXPECT_FALSE(HashOutputLength(shake, 1001, 1000).ok());
  const AlgorithmDescriptor& sha = *LookupAlgorithm(pqc::v1::SHA384);
  EXPECT_EQ(*HashOutputLength(sha, 0, 1000), 48u);
  EXPECT_EQ(*HashOutputLength(sha, 48, 1000), 48u);
  EXPECT_FALSE(HashOutputLength(sha, 32, 1000).ok());
}

}  // namespace
}  // namespace pqcd::server
