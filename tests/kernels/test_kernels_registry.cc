// The algorithm registry: every row has the functions of its family, names parse back to their
// row, public_key_of gives the public key of both private-key forms, and a prepared key computes
// what the key it was prepared from computes.
#include <gtest/gtest.h>

#include <vector>

#include "common/test_support.h"
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

// The message limits the server reads from the rows (max_context_bytes, external_mu_bytes) are the
// kernels' own: a context of the row's maximum is taken and one byte more refused, and external μ
// of the row's size is taken exactly where the row offers it. Verify of a zero signature (false,
// not an error) shows what the kernel accepts without signing.
TEST(Registry, MessageLimitsAreTheKernelsOwn) {
  for (const AlgorithmDescriptor& d : Registry()) {
    SCOPED_TRACE(std::string(d.name()));
    const AlgorithmFacts& f = *d.facts;
    if (d.family() != Family::kDsa) {
      EXPECT_EQ(f.max_context_bytes, 0u);
      EXPECT_EQ(f.external_mu_bytes, 0u);
      continue;
    }
    ASSERT_GT(f.max_context_bytes, 0u);
    const std::vector<uint8_t> pk(f.public_key_bytes), sig(f.signature_bytes);
    auto verify = [&](size_t context_bytes, bool external_mu, size_t message_bytes) {
      const std::vector<uint8_t> ctx(context_bytes, 1), m(message_bytes, 2);
      DsaVerifyItem item{pk, m, sig, {}, false, {}};
      item.options.context = ctx;
      item.options.external_mu = external_mu;
      d.dsa->verify_batch(std::span(&item, 1));
      EXPECT_FALSE(item.valid);
      return item.status;
    };
    EXPECT_TRUE(verify(f.max_context_bytes, false, 64).ok());
    EXPECT_EQ(verify(f.max_context_bytes + 1, false, 64).code(),
              absl::StatusCode::kInvalidArgument);
    if (f.external_mu_bytes > 0) {
      EXPECT_TRUE(verify(0, true, f.external_mu_bytes).ok());
      EXPECT_FALSE(verify(0, true, f.external_mu_bytes + 1).ok());
    } else {
      EXPECT_FALSE(verify(0, true, 64).ok());
    }
  }
}

// Under PQCD_TEST_QUICK (qemu) the SLH-DSA "s" sets are left out of the two key tests below:
// each of their keys and signatures is seconds of emulated SHA-2/SHAKE, the "f" sets run the same
// code, and SLH-DSA has no ARM-specific code (it was 424 s of the aarch64 stage).
bool SkipWhenQuick(const AlgorithmDescriptor& d) {
  const std::string_view name = d.name();
  return pqcd::testing::QuickTests() && name.starts_with("SLH-DSA") && name.ends_with("s");
}

// Key generation from a seed, then public_key_of of the seed and of the expanded key: both give
// the generated public key; a changed expanded key is refused.
TEST(Registry, PublicKeyOfBothPrivateKeyForms) {
  for (const AlgorithmDescriptor& d : Registry()) {
    if (d.family() == Family::kHash) continue;
    if (SkipWhenQuick(d)) continue;
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
    // SeedMatchesExpanded: the changed key no longer matches its seed; the original does.
    const absl::Status changed = SeedMatchesExpanded(d, seed, sk);
    EXPECT_TRUE(absl::IsInvalidArgument(changed)) << changed;
    EXPECT_NE(changed.message().find("do not match"), std::string_view::npos) << changed;
    sk[at] ^= 1;
    EXPECT_TRUE(SeedMatchesExpanded(d, seed, sk).ok());
    EXPECT_TRUE(absl::IsInvalidArgument(SeedMatchesExpanded(d, Bytes(seed).first(1), sk)));
    EXPECT_TRUE(absl::IsInvalidArgument(SeedMatchesExpanded(d, seed, Bytes(sk).first(1))));
  }
}

// prepare_private_key of either form of a key gives the same prepared bytes, which decapsulate /
// sign (deterministically) exactly as the seed does, alone and in a batch beside unprepared items;
// wrong sizes and a changed expanded key are refused.
TEST(Registry, PreparedKeysComputeAsTheirKeys) {
  for (const AlgorithmDescriptor& d : Registry()) {
    if (d.family() == Family::kHash) continue;
    if (SkipWhenQuick(d)) continue;
    SCOPED_TRACE(std::string(d.name()));
    const AlgorithmFacts& f = *d.facts;
    ASSERT_NE(d.prepare_private_key, nullptr);
    ASSERT_GT(d.prepared_private_key_bytes, 0u);
    std::vector<uint8_t> seed(f.seed_bytes, 0x3c), pk(f.public_key_bytes), sk(f.private_key_bytes);
    if (d.kem != nullptr) {
      KemKeyGenItem item{seed, pk, sk, {}, {}};
      d.kem->keygen_batch(std::span(&item, 1), OsRandom());
      ASSERT_TRUE(item.status.ok()) << item.status;
    } else {
      DsaKeyGenItem item{seed, pk, sk, {}, {}};
      d.dsa->keygen_batch(std::span(&item, 1), OsRandom());
      ASSERT_TRUE(item.status.ok()) << item.status;
    }
    std::vector<uint8_t> from_seed(d.prepared_private_key_bytes, 0xee);
    std::vector<uint8_t> from_sk(d.prepared_private_key_bytes, 0x11);
    ASSERT_TRUE(d.prepare_private_key(seed, MutBytes(from_seed)).ok());
    ASSERT_TRUE(d.prepare_private_key(sk, MutBytes(from_sk)).ok());
    EXPECT_EQ(from_seed, from_sk);

    if (d.kem != nullptr) {
      std::vector<uint8_t> ct(f.ciphertext_bytes), ss(f.secret_bytes);
      KemEncapsItem enc{pk, {}, ct, ss, {}};
      d.kem->encaps_batch(std::span(&enc, 1), OsRandom());
      ASSERT_TRUE(enc.status.ok()) << enc.status;
      // Alone, then a batch of prepared, seed and prepared (the cross-request path).
      std::vector<uint8_t> got(f.secret_bytes);
      KemDecapsItem one{from_seed, ct, got, {}, /*prepared=*/true};
      d.kem->decaps_batch(std::span(&one, 1));
      ASSERT_TRUE(one.status.ok()) << one.status;
      EXPECT_EQ(got, ss);
      std::vector<std::vector<uint8_t>> out(3, std::vector<uint8_t>(f.secret_bytes));
      std::vector<KemDecapsItem> batch{{from_seed, ct, out[0], {}, true},
                                       {seed, ct, out[1], {}, false},
                                       {from_sk, ct, out[2], {}, true}};
      d.kem->decaps_batch(batch);
      for (size_t i = 0; i < batch.size(); ++i) {
        ASSERT_TRUE(batch[i].status.ok()) << i << ": " << batch[i].status;
        EXPECT_EQ(out[i], ss) << i;
      }
      // A seed-sized key marked prepared is refused.
      if (seed.size() != from_seed.size()) {
        KemDecapsItem bad{seed, ct, got, {}, true};
        d.kem->decaps_batch(std::span(&bad, 1));
        EXPECT_FALSE(bad.status.ok());
      }
    } else {
      const std::string msg = "prepared keys sign as their seeds do";
      const Bytes m(reinterpret_cast<const uint8_t*>(msg.data()), msg.size());
      std::vector<std::vector<uint8_t>> sig(4, std::vector<uint8_t>(f.signature_bytes));
      std::vector<DsaSignItem> batch(4);
      const Bytes keys[4] = {seed, from_seed, sk, from_sk};
      const bool prepared[4] = {false, true, false, true};
      for (size_t i = 0; i < 4; ++i) {
        batch[i].sk = keys[i];
        batch[i].message = m;
        batch[i].options.deterministic = true;
        batch[i].sig = sig[i];
        batch[i].prepared = prepared[i];
      }
      d.dsa->sign_batch(batch, OsRandom());
      for (size_t i = 0; i < 4; ++i) {
        ASSERT_TRUE(batch[i].status.ok()) << i << ": " << batch[i].status;
        EXPECT_EQ(sig[i], sig[0]) << i;
      }
      DsaVerifyItem v{pk, m, sig[1], {}, false, {}};
      d.dsa->verify_batch(std::span(&v, 1));
      ASSERT_TRUE(v.status.ok());
      EXPECT_TRUE(v.valid);
      // A prepared key alone, with a buffer that is not aligned for the signer's form (copied).
      std::vector<uint8_t> shifted(from_seed.size() + 8);
      std::copy(from_seed.begin(), from_seed.end(), shifted.begin() + 8);
      DsaSignItem one;
      one.sk = Bytes(shifted).subspan(8);
      one.message = m;
      one.options.deterministic = true;
      std::vector<uint8_t> sig1(f.signature_bytes);
      one.sig = sig1;
      one.prepared = true;
      d.dsa->sign_batch(std::span(&one, 1), OsRandom());
      ASSERT_TRUE(one.status.ok()) << one.status;
      EXPECT_EQ(sig1, sig[0]);
      // A prepared item of the wrong size is refused.
      one.sk = sk;
      d.dsa->sign_batch(std::span(&one, 1), OsRandom());
      EXPECT_FALSE(one.status.ok());
    }

    // Wrong sizes and a changed expanded key.
    std::vector<uint8_t> small(d.prepared_private_key_bytes - 1);
    EXPECT_FALSE(d.prepare_private_key(seed, MutBytes(small)).ok());
    EXPECT_FALSE(d.prepare_private_key(Bytes(seed).first(seed.size() - 1), MutBytes(from_sk)).ok());
    const size_t at = d.id() == AlgorithmId::kSecP256r1MlKem768    ? 32
                      : d.id() == AlgorithmId::kSecP384r1MlKem1024 ? 48
                                                                   : 0;
    sk[at] ^= 1;
    EXPECT_FALSE(d.prepare_private_key(sk, MutBytes(from_sk)).ok());
  }
}

}  // namespace
}  // namespace pqcd::kernels
