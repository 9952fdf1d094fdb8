// Hybrid KEMs (hybrid.h): the X-Wing vectors of draft-connolly-cfrg-xwing-kem, the component
// order of draft-ietf-tls-ecdhe-mlkem checked against ML-KEM and OpenSSL on their own, both
// private-key forms, and the refusals (low-order X25519 share, points off the curve, scalars out
// of range, mismatching expanded keys).
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/hybrid.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::kernels {
namespace {

using pqcd::testing::FromHex;
using pqcd::testing::LoadVectorJson;
using pqcd::testing::ToHex;

struct KeyPair {
  std::vector<uint8_t> seed, ek, dk;
};

template <class H>
KeyPair Generate(Bytes seed = {}) {
  KeyPair kp{std::vector<uint8_t>(H::kSeedBytes), std::vector<uint8_t>(H::kEncapsKeyBytes),
             std::vector<uint8_t>(H::kDecapsKeyBytes)};
  KemKeyGenItem item{seed, kp.ek, kp.dk, seed.empty() ? MutBytes(kp.seed) : MutBytes{}, {}};
  H::KeyGenBatch(std::span(&item, 1), OsRandom());
  EXPECT_TRUE(item.status.ok()) << item.status;
  if (!seed.empty()) kp.seed.assign(seed.begin(), seed.end());
  return kp;
}

template <class H>
absl::Status Encaps(Bytes ek, std::vector<uint8_t>& ct, std::vector<uint8_t>& ss, Bytes m = {}) {
  ct.assign(H::kCiphertextBytes, 0);
  ss.assign(H::kSharedSecretBytes, 0);
  KemEncapsItem item{ek, m, ct, ss, {}};
  H::EncapsBatch(std::span(&item, 1), OsRandom());
  return item.status;
}

template <class H>
absl::Status Decaps(Bytes dk, Bytes ct, std::vector<uint8_t>& ss) {
  ss.assign(H::kSharedSecretBytes, 0);
  KemDecapsItem item{dk, ct, ss, {}};
  H::DecapsBatch(std::span(&item, 1));
  return item.status;
}

TEST(XWing, DraftVectors) {
  const nlohmann::json vectors = LoadVectorJson("xwing/test-vectors.json");
  ASSERT_EQ(vectors.size(), 3u);
  for (const auto& v : vectors) {
    const std::vector<uint8_t> seed = FromHex(v["seed"].get<std::string>());
    const KeyPair kp = Generate<XWing>(seed);
    EXPECT_EQ(ToHex(kp.ek), v["pk"].get<std::string>());
    EXPECT_EQ(ToHex(seed), v["sk"].get<std::string>());
    std::vector<uint8_t> ct, ss, ss_seed, ss_expanded;
    ASSERT_TRUE(Encaps<XWing>(kp.ek, ct, ss, FromHex(v["eseed"].get<std::string>())).ok());
    EXPECT_EQ(ToHex(ct), v["ct"].get<std::string>());
    EXPECT_EQ(ToHex(ss), v["ss"].get<std::string>());
    ASSERT_TRUE(Decaps<XWing>(seed, ct, ss_seed).ok());
    ASSERT_TRUE(Decaps<XWing>(kp.dk, ct, ss_expanded).ok());
    EXPECT_EQ(ss_seed, ss);
    EXPECT_EQ(ss_expanded, ss);
  }
  std::printf("X-Wing: %zu draft vectors\n", vectors.size());
}

// Round trips through both private-key forms, a batch of several items, and an implicit
// rejection in the ML-KEM part.
template <class H>
void RoundTrips() {
  constexpr int kItems = 5;
  std::vector<KeyPair> keys;
  for (int i = 0; i < kItems; ++i) keys.push_back(Generate<H>());
  std::vector<std::vector<uint8_t>> ct(kItems, std::vector<uint8_t>(H::kCiphertextBytes)),
      ss(kItems, std::vector<uint8_t>(H::kSharedSecretBytes)),
      ss2(kItems, std::vector<uint8_t>(H::kSharedSecretBytes)),
      ss3(kItems, std::vector<uint8_t>(H::kSharedSecretBytes));
  std::vector<KemEncapsItem> en;
  for (int i = 0; i < kItems; ++i) en.push_back({keys[i].ek, {}, ct[i], ss[i], {}});
  H::EncapsBatch(en, OsRandom());
  std::vector<KemDecapsItem> de, de_seed;
  for (int i = 0; i < kItems; ++i) {
    ASSERT_TRUE(en[i].status.ok()) << en[i].status;
    de.push_back({keys[i].dk, ct[i], ss2[i], {}});
    de_seed.push_back({keys[i].seed, ct[i], ss3[i], {}});
  }
  H::DecapsBatch(de);
  H::DecapsBatch(de_seed);
  for (int i = 0; i < kItems; ++i) {
    ASSERT_TRUE(de[i].status.ok()) << de[i].status;
    ASSERT_TRUE(de_seed[i].status.ok()) << de_seed[i].status;
    EXPECT_EQ(ss2[i], ss[i]);
    EXPECT_EQ(ss3[i], ss[i]);
  }
  // The middle byte of a ciphertext is in its ML-KEM part for every hybrid.
  std::vector<uint8_t> tampered = ct[0], ss_bad;
  tampered[tampered.size() / 2] ^= 1;
  ASSERT_TRUE(Decaps<H>(keys[0].dk, tampered, ss_bad).ok());
  EXPECT_NE(ss_bad, ss[0]);
  // Expanded-key check and public key of both forms.
  EXPECT_TRUE(H::CheckExpandedPrivateKey(keys[0].dk, keys[0].ek).ok());
  EXPECT_FALSE(H::CheckExpandedPrivateKey(keys[0].dk, keys[1].ek).ok());
  std::vector<uint8_t> pk(H::kEncapsKeyBytes);
  ASSERT_TRUE(H::PublicKeyOf(keys[0].seed, pk).ok());
  EXPECT_EQ(pk, keys[0].ek);
  ASSERT_TRUE(H::PublicKeyOf(keys[0].dk, pk).ok());
  EXPECT_EQ(pk, keys[0].ek);
  EXPECT_TRUE(H::CheckEncapsKey(keys[0].ek).ok());
  EXPECT_FALSE(H::CheckEncapsKey(Bytes(keys[0].ek).first(H::kEncapsKeyBytes - 1)).ok());
}

TEST(Hybrid, RoundTripsX25519MlKem768) {
  RoundTrips<X25519MlKem768>();
}
TEST(Hybrid, RoundTripsSecP256r1MlKem768) {
  RoundTrips<SecP256r1MlKem768>();
}
TEST(Hybrid, RoundTripsSecP384r1MlKem1024) {
  RoundTrips<SecP384r1MlKem1024>();
}
TEST(Hybrid, RoundTripsXWing) {
  RoundTrips<XWing>();
}

// X25519 through OpenSSL on its own, to check the X25519 half independently of hybrid.cc.
std::vector<uint8_t> X25519(Bytes sk, Bytes peer) {
  EVP_PKEY* key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, sk.data(), 32);
  EVP_PKEY* pub = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer.data(), 32);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(key, nullptr);
  std::vector<uint8_t> out(32);
  size_t len = 32;
  EXPECT_EQ(EVP_PKEY_derive_init(ctx), 1);
  EXPECT_EQ(EVP_PKEY_derive_set_peer(ctx, pub), 1);
  EXPECT_EQ(EVP_PKEY_derive(ctx, out.data(), &len), 1);
  EVP_PKEY_CTX_free(ctx);
  EVP_PKEY_free(pub);
  EVP_PKEY_free(key);
  return out;
}

// draft-ietf-tls-ecdhe-mlkem: X25519MLKEM768 puts ML-KEM first in the shares and the secret.
TEST(Hybrid, X25519MlKem768ComponentOrder) {
  const KeyPair kp = Generate<X25519MlKem768>();
  std::vector<uint8_t> ct, ss;
  ASSERT_TRUE(Encaps<X25519MlKem768>(kp.ek, ct, ss).ok());
  // ML-KEM half: the first 2400 bytes of dk, 1088 of ct, 32 of ss.
  std::vector<uint8_t> ss_m(32);
  ASSERT_TRUE(MlKem768::Decaps(Bytes(kp.dk).first(2400), Bytes(ct).first(1088), ss_m).ok());
  EXPECT_EQ(std::vector<uint8_t>(ss.begin(), ss.begin() + 32), ss_m);
  EXPECT_TRUE(MlKem768::CheckEncapsKey(Bytes(kp.ek).first(1184)).ok());
  // X25519 half: dk = dk_M || sk_X || pk_X; sk_X with the server's share.
  EXPECT_EQ(X25519(Bytes(kp.dk).subspan(2400, 32), Bytes(ct).last(32)),
            std::vector<uint8_t>(ss.begin() + 32, ss.end()));
}

// The NIST-curve hybrids put the curve first; points are uncompressed.
template <class H>
void CurveFirst() {
  const KeyPair kp = Generate<H>();
  std::vector<uint8_t> ct, ss;
  ASSERT_TRUE(Encaps<H>(kp.ek, ct, ss).ok());
  using Ml = typename H::Ml;
  EXPECT_EQ(kp.ek[0], 0x04);
  EXPECT_EQ(ct[0], 0x04);
  std::vector<uint8_t> ss_m(32);
  ASSERT_TRUE(
      Ml::Decaps(Bytes(kp.dk).subspan(H::kCurvePrivate), Bytes(ct).subspan(H::kCurvePoint), ss_m)
          .ok());
  EXPECT_EQ(std::vector<uint8_t>(ss.begin() + H::kCurveSecret, ss.end()), ss_m);
  // A point off the curve, a compressed point, and the public key's own refusal.
  std::vector<uint8_t> bad = ct, out;
  bad[H::kCurvePoint - 1] ^= 1;
  absl::Status st = Decaps<H>(kp.dk, bad, out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(out, std::vector<uint8_t>(H::kSharedSecretBytes, 0));
  bad = ct;
  bad[0] = 0x02;
  EXPECT_EQ(Decaps<H>(kp.dk, bad, out).code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> bad_ek = kp.ek;
  bad_ek[H::kCurvePoint - 1] ^= 1;
  EXPECT_EQ(H::CheckEncapsKey(bad_ek).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Encaps<H>(bad_ek, ct, ss).code(), absl::StatusCode::kInvalidArgument);
  // Scalars 0 and n (out of [1, n-1]) in a seed.
  std::vector<uint8_t> seed = kp.seed;
  std::fill(seed.begin(), seed.begin() + H::kCurvePrivate, 0);
  EXPECT_FALSE(H::CheckDecapsKey(seed).ok());
  std::vector<uint8_t> e(H::kEncapsKeyBytes), d(H::kDecapsKeyBytes);
  KemKeyGenItem item{seed, e, d, {}, {}};
  H::KeyGenBatch(std::span(&item, 1), OsRandom());
  EXPECT_EQ(item.status.code(), absl::StatusCode::kInvalidArgument);
  std::fill(seed.begin(), seed.begin() + H::kCurvePrivate, 0xff);  // above n
  EXPECT_FALSE(H::CheckDecapsKey(seed).ok());
}

TEST(Hybrid, SecP256r1MlKem768CurveFirst) {
  CurveFirst<SecP256r1MlKem768>();
}
TEST(Hybrid, SecP384r1MlKem1024CurveFirst) {
  CurveFirst<SecP384r1MlKem1024>();
}

// A low-order X25519 share (u = 0 gives an all-zero secret) is refused, and nothing of the
// secret is left in the output.
TEST(Hybrid, AllZeroX25519SecretRefused) {
  const KeyPair kp = Generate<X25519MlKem768>();
  std::vector<uint8_t> ct, ss;
  ASSERT_TRUE(Encaps<X25519MlKem768>(kp.ek, ct, ss).ok());
  std::fill(ct.end() - 32, ct.end(), 0);
  absl::Status st = Decaps<X25519MlKem768>(kp.dk, ct, ss);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(ss, std::vector<uint8_t>(64, 0));
  std::vector<uint8_t> ek = kp.ek;
  std::fill(ek.end() - 32, ek.end(), 0);
  EXPECT_EQ(Encaps<X25519MlKem768>(ek, ct, ss).code(), absl::StatusCode::kInvalidArgument);
  const KeyPair xw = Generate<XWing>();
  ASSERT_TRUE(Encaps<XWing>(xw.ek, ct, ss).ok());
  std::fill(ct.end() - 32, ct.end(), 0);
  EXPECT_EQ(Decaps<XWing>(xw.seed, ct, ss).code(), absl::StatusCode::kInvalidArgument);
}

// CheckEncapsKey (the TLS provider's check of a client share, and key import) refuses an X25519
// part of low order in every encoding (bit 255 is ignored; p and p + 1 are 0 and 1); X-Wing,
// whose combiner hashes the shares, takes any 32 bytes.
TEST(Hybrid, LowOrderX25519KeysRefusedByTheCheck) {
  const KeyPair kp = Generate<X25519MlKem768>();
  ASSERT_TRUE(X25519MlKem768::CheckEncapsKey(kp.ek).ok());
  std::vector<std::vector<uint8_t>> low;
  for (uint8_t v : {0, 1}) {
    std::vector<uint8_t> u(32, 0);
    u[0] = v;
    low.push_back(u);
    u[31] = 0x80;
    low.push_back(u);
  }
  for (uint8_t last : {0xec, 0xed, 0xee}) {  // p - 1, p, p + 1
    std::vector<uint8_t> u(32, 0xff);
    u[0] = last;
    u[31] = 0x7f;
    low.push_back(u);
  }
  low.push_back({0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3,
                 0xfa, 0xf1, 0x9f, 0xc4, 0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32,
                 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00});
  low.push_back({0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1,
                 0x55, 0x9c, 0x83, 0xef, 0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c,
                 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57});
  for (const auto& u : low) {
    std::vector<uint8_t> ek = kp.ek;
    std::copy(u.begin(), u.end(), ek.end() - 32);
    const absl::Status st = X25519MlKem768::CheckEncapsKey(ek);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << static_cast<int>(u[0]);
    EXPECT_NE(std::string(st.message()).find("low order"), std::string::npos) << st;
    // The Encaps itself refuses it too (the all-zero result), with nothing left in the output.
    std::vector<uint8_t> ct, ss;
    EXPECT_EQ(Encaps<X25519MlKem768>(ek, ct, ss).code(), absl::StatusCode::kInvalidArgument);
  }
  const KeyPair xw = Generate<XWing>();
  std::vector<uint8_t> ek = xw.ek;
  std::fill(ek.end() - 32, ek.end(), 0);
  EXPECT_TRUE(XWing::CheckEncapsKey(ek).ok());
}

// Wrong sizes name the field; one bad item of a batch does not affect the others.
TEST(Hybrid, BadItemsAreIsolated) {
  const KeyPair kp = Generate<SecP256r1MlKem768>();
  std::vector<uint8_t> ct1(SecP256r1MlKem768::kCiphertextBytes), ss1(64), ct2(10), ss2(64);
  std::vector<KemEncapsItem> items = {{kp.ek, {}, ct2, ss2, {}}, {kp.ek, {}, ct1, ss1, {}}};
  SecP256r1MlKem768::EncapsBatch(items, OsRandom());
  EXPECT_EQ(items[0].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(items[0].status.message()).find("ciphertext"), std::string::npos);
  EXPECT_TRUE(items[1].status.ok()) << items[1].status;
  std::vector<uint8_t> ss;
  ASSERT_TRUE(Decaps<SecP256r1MlKem768>(kp.dk, ct1, ss).ok());
  EXPECT_EQ(ss, ss1);
}

}  // namespace
}  // namespace pqcd::kernels
