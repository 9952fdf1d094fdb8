// The example keys published with the LAMPS documents (tests/vectors/lamps/, README there):
// every file decodes; seed-form keys expanded with the kernels give the published public key and
// expanded key; "both" files agree; the purposely bad keys are caught by the consistency checks
// the daemon applies (seed vs expanded key, the complete expanded-key check).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/encoding/key_encoding.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::encoding {
namespace {

using kernels::Facts;

std::vector<uint8_t> ReadLamps(const std::string& name) {
  const std::filesystem::path path = testing::VectorsDir() / "lamps" / name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  return {s.begin(), s.end()};
}

std::vector<uint8_t> ToVec(ByteView v) {
  return {v.begin(), v.end()};
}

struct Expanded {
  std::vector<uint8_t> pk, sk;
};

// Key generation from a seed through the registry's batch entry point.
Expanded ExpandSeed(AlgorithmId id, ByteView seed) {
  const kernels::AlgorithmDescriptor& d = kernels::Describe(id);
  Expanded out{std::vector<uint8_t>(Facts(id).public_key_bytes),
               std::vector<uint8_t>(Facts(id).private_key_bytes)};
  if (d.kem != nullptr) {
    kernels::KemKeyGenItem item{seed, out.pk, out.sk, {}, {}};
    d.kem->keygen_batch({&item, 1}, kernels::OsRandom());
    EXPECT_TRUE(item.status.ok()) << item.status;
  } else {
    kernels::DsaKeyGenItem item{seed, out.pk, out.sk, {}, {}};
    d.dsa->keygen_batch({&item, 1}, kernels::OsRandom());
    EXPECT_TRUE(item.status.ok()) << item.status;
  }
  return out;
}

// The check the daemon applies to an expanded key given alone.
absl::Status CheckExpanded(AlgorithmId id, ByteView sk) {
  const kernels::AlgorithmDescriptor& d = kernels::Describe(id);
  if (d.kem != nullptr) return d.kem->check_expanded_dk(sk, {});
  return d.dsa->check_expanded_sk(sk, {}, {});
}

struct Example {
  const char* name;
  AlgorithmId id;
};
constexpr Example kExamples[] = {
    {"ML-KEM-512", AlgorithmId::kMlKem512},   {"ML-KEM-768", AlgorithmId::kMlKem768},
    {"ML-KEM-1024", AlgorithmId::kMlKem1024}, {"ML-DSA-44", AlgorithmId::kMlDsa44},
    {"ML-DSA-65", AlgorithmId::kMlDsa65},     {"ML-DSA-87", AlgorithmId::kMlDsa87},
};

TEST(LampsExamples, DecodeAndExpand) {
  int files = 0;
  for (const Example& e : kExamples) {
    SCOPED_TRACE(e.name);
    const std::string base = e.name;
    absl::StatusOr<PublicKey> pub = DecodePublicKey(ReadLamps(base + ".pub"));
    ASSERT_TRUE(pub.ok()) << pub.status();
    EXPECT_EQ(pub->algorithm, e.id);

    absl::StatusOr<PrivateKey> seed = DecodePrivateKey(ReadLamps(base + "-seed.priv"));
    absl::StatusOr<PrivateKey> expanded = DecodePrivateKey(ReadLamps(base + "-expanded.priv"));
    absl::StatusOr<PrivateKey> both = DecodePrivateKey(ReadLamps(base + "-both.priv"));
    ASSERT_TRUE(seed.ok()) << seed.status();
    ASSERT_TRUE(expanded.ok()) << expanded.status();
    ASSERT_TRUE(both.ok()) << both.status();
    files += 4;
    EXPECT_EQ(seed->algorithm, e.id);
    EXPECT_EQ(expanded->algorithm, e.id);
    EXPECT_EQ(both->algorithm, e.id);
    ASSERT_EQ(seed->seed.size(), Facts(e.id).seed_bytes);
    EXPECT_TRUE(seed->expanded.empty());
    EXPECT_TRUE(expanded->seed.empty());
    ASSERT_EQ(expanded->expanded.size(), Facts(e.id).private_key_bytes);
    // All derived from the seed 00 01 02 ...
    for (size_t i = 0; i < seed->seed.size(); ++i) ASSERT_EQ(seed->seed.data()[i], i);

    // The registry's public_key_of on the seed gives the published public key.
    std::vector<uint8_t> pk(Facts(e.id).public_key_bytes);
    const kernels::AlgorithmDescriptor& d = kernels::Describe(e.id);
    ASSERT_TRUE(d.public_key_of(seed->seed.view(), pk).ok());
    EXPECT_EQ(pk, pub->key);
    // And on the expanded key.
    std::vector<uint8_t> pk2(pk.size());
    ASSERT_TRUE(d.public_key_of(expanded->expanded.view(), pk2).ok());
    EXPECT_EQ(pk2, pub->key);

    // Key generation from the seed gives the published expanded key; "both" holds the two.
    const Expanded gen = ExpandSeed(e.id, seed->seed.view());
    EXPECT_EQ(gen.pk, pub->key);
    EXPECT_EQ(gen.sk, ToVec(expanded->expanded.view()));
    EXPECT_EQ(ToVec(both->seed.view()), ToVec(seed->seed.view()));
    EXPECT_EQ(ToVec(both->expanded.view()), gen.sk);

    // Re-encoding gives the published bytes (PEM, 64-character lines).
    const std::vector<uint8_t> pub_file = ReadLamps(base + ".pub");
    EXPECT_EQ(*EncodePublicKey(e.id, pub->key, KeyFormat::kPem), pub_file);
    for (const char* form : {"-seed.priv", "-expanded.priv", "-both.priv"}) {
      const std::vector<uint8_t> file = ReadLamps(base + form);
      const PrivateKey& k = form[1] == 's' ? *seed : form[1] == 'e' ? *expanded : *both;
      absl::StatusOr<SecretBuffer> pem =
          EncodePrivateKey(e.id, k.seed.view(), k.expanded.view(), KeyFormat::kPem);
      ASSERT_TRUE(pem.ok()) << pem.status();
      EXPECT_EQ(ToVec(pem->view()), file) << form;
    }
  }
  EXPECT_EQ(files, 24);
}

TEST(LampsExamples, BadKeysCaught) {
  // 1 and 4: "both" whose seed and expanded key disagree (4: only in z).
  for (const char* name :
       {"bad-ML-KEM-512-1.priv", "bad-ML-KEM-512-4.priv", "bad-ML-DSA-44-1.priv"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<PrivateKey> k = DecodePrivateKey(ReadLamps(name));
    ASSERT_TRUE(k.ok()) << k.status();
    ASSERT_FALSE(k->seed.empty());
    ASSERT_FALSE(k->expanded.empty());
    const Expanded gen = ExpandSeed(k->algorithm, k->seed.view());
    EXPECT_NE(gen.sk, ToVec(k->expanded.view()));
  }
  // Expanded keys alone that fail the complete consistency check.
  for (const char* name : {"bad-ML-KEM-512-2.priv", "bad-ML-KEM-512-3.priv", "bad-ML-DSA-44-2.priv",
                           "bad-ML-DSA-44-3.priv"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<PrivateKey> k = DecodePrivateKey(ReadLamps(name));
    ASSERT_TRUE(k.ok()) << k.status();
    ASSERT_TRUE(k->seed.empty());
    EXPECT_FALSE(CheckExpanded(k->algorithm, k->expanded.view()).ok());
  }
}

TEST(LampsExamples, WrongAlgorithmRefused) {
  // An ML-KEM-768 public key where ML-KEM-1024 is expected; an ML-DSA key for ML-KEM.
  EXPECT_REFUSED(PublicKeyToRaw(AlgorithmId::kMlKem1024, ReadLamps("ML-KEM-768.pub")).status(),
                 "encoded for ML-KEM-768");
  EXPECT_REFUSED(PrivateKeyToRaw(AlgorithmId::kMlKem512, ReadLamps("ML-DSA-44-seed.priv")).status(),
                 "encoded for ML-DSA-44");
}

}  // namespace
}  // namespace pqcd::encoding
