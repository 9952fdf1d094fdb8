// Keys.Import against the real daemon (issue 17, items 1 and 2): a private key with its own public
// key is accepted for all six algorithms in both forms (seed and expanded), a different public
// key is refused, and an expanded key that is not internally consistent (flipped ML-DSA t0 bits,
// a changed ML-KEM dk_PKE) is refused with INVALID_ARGUMENT.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon_fixture.h"
#include "gtest/gtest.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return ctx;
}

class ImportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon;
    sock_ = daemon_->dir() / "s.sock";
    // Held keys need an authenticated caller: the Unix socket. A generous start timeout for
    // sanitizer builds (the self-tests run before SERVING).
    ASSERT_TRUE(daemon_->Start({"--unix", sock_}, std::chrono::seconds(120))) << daemon_->log();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Terminate(), 0);
    delete daemon_;
    daemon_ = nullptr;
  }
  static std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel("unix:" + sock_, grpc::InsecureChannelCredentials());
  }

  static KeyGenResponse KeyGen(Algorithm alg) {
    KeyGenRequest req;
    req.set_algorithm(alg);
    KeyGenResponse resp;
    const grpc::Status s = Crypto::NewStub(Channel())->KeyGen(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  // Imports under a fresh key id; returns the status and fills *info.
  static grpc::Status Import(Algorithm alg, const std::string& private_key,
                             const std::string& public_key, KeyInfo* info) {
    ImportKeyRequest req;
    req.set_algorithm(alg);
    // StrCat, not "k" + std::to_string(...): GCC 12 at -O3 reports a false -Wrestrict inside
    // operator+(const char*, std::string&&).
    req.set_key_id(absl::StrCat("k", next_id_++));
    req.set_private_key(private_key);
    if (!public_key.empty()) req.set_public_key(public_key);
    return Keys::NewStub(Channel())->Import(Ctx().get(), req, info);
  }

  static Daemon* daemon_;
  static std::string sock_;
  static int next_id_;
};
Daemon* ImportTest::daemon_ = nullptr;
std::string ImportTest::sock_;
int ImportTest::next_id_ = 0;

constexpr Algorithm kAlgorithms[] = {ML_KEM_512, ML_KEM_768, ML_KEM_1024,
                                     ML_DSA_44,  ML_DSA_65,  ML_DSA_87};

TEST_F(ImportTest, MatchingPublicKeyIsAcceptedAndAnyOtherRefused) {
  for (Algorithm alg : kAlgorithms) {
    SCOPED_TRACE(Algorithm_Name(alg));
    const KeyGenResponse key = KeyGen(alg);
    const KeyGenResponse other = KeyGen(alg);
    ASSERT_FALSE(key.seed().empty());
    ASSERT_FALSE(key.private_key().empty());
    std::string flipped = key.public_key();
    flipped[flipped.size() / 2] ^= 0x01;
    for (const std::string* sk : {&key.seed(), &key.private_key()}) {
      SCOPED_TRACE(sk == &key.seed() ? "seed" : "expanded");
      KeyInfo info;
      grpc::Status s = Import(alg, *sk, key.public_key(), &info);
      ASSERT_TRUE(s.ok()) << s.error_message();
      EXPECT_EQ(info.public_key(), key.public_key());
      EXPECT_EQ(info.algorithm(), alg);

      s = Import(alg, *sk, other.public_key(), &info);
      EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << s.error_message();
      EXPECT_NE(s.error_message().find("public_key"), std::string::npos) << s.error_message();
      s = Import(alg, *sk, flipped, &info);
      EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << s.error_message();

      // Without a public key: derived from either form (an expanded ML-DSA key by recomputing
      // t = A·s1 + s2, which its complete check does anyway; keys.proto).
      s = Import(alg, *sk, "", &info);
      ASSERT_TRUE(s.ok()) << s.error_message();
      EXPECT_EQ(info.public_key(), key.public_key());
    }
  }
}

// Issue 17: 30 ML-DSA-44 expanded keys with 1-5 random t0 bits flipped, given with their true
// public key. The pairwise sign/verify check let 17 of 30 through; the complete check refuses all.
TEST_F(ImportTest, ExpandedMlDsaKeyWithFlippedT0BitsIsRefused) {
  constexpr size_t kT0Offset = 32 + 32 + 64 + (4 + 4) * 96;  // ML-DSA-44 skEncode
  const KeyGenResponse key = KeyGen(ML_DSA_44);
  ASSERT_EQ(key.private_key().size(), 2560u);
  const size_t t0_bits = (key.private_key().size() - kT0Offset) * 8;
  std::mt19937_64 rng(17);
  int refused = 0;
  for (int round = 0; round < 30; ++round) {
    std::string sk = key.private_key();
    std::vector<size_t> flipped;
    const int flips = 1 + static_cast<int>(rng() % 5);
    while (static_cast<int>(flipped.size()) < flips) {
      const size_t bit = rng() % t0_bits;
      if (std::find(flipped.begin(), flipped.end(), bit) != flipped.end()) continue;
      flipped.push_back(bit);
      sk[kT0Offset + bit / 8] = static_cast<char>(sk[kT0Offset + bit / 8] ^ (1 << (bit % 8)));
    }
    KeyInfo info;
    const grpc::Status s = Import(ML_DSA_44, sk, key.public_key(), &info);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT)
        << "round " << round << ": " << s.error_message();
    EXPECT_NE(s.error_message().find("t0"), std::string::npos) << s.error_message();
    refused += s.error_code() == grpc::INVALID_ARGUMENT;
  }
  EXPECT_EQ(refused, 30);
}

// Other inconsistencies of expanded keys: ML-DSA s1 out of range and tr, ML-KEM dk_PKE (which
// the §7.3 hash check does not cover).
TEST_F(ImportTest, OtherInconsistentExpandedKeysAreRefused) {
  {
    const KeyGenResponse key = KeyGen(ML_DSA_65);  // eta = 4: codes 9..15 are out of range
    std::string sk = key.private_key();
    sk[128] = static_cast<char>((sk[128] & 0xf0) | 0x0f);
    KeyInfo info;
    grpc::Status s = Import(ML_DSA_65, sk, key.public_key(), &info);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << s.error_message();
    sk = key.private_key();
    sk[64] ^= 0x01;  // tr
    s = Import(ML_DSA_65, sk, key.public_key(), &info);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find("tr"), std::string::npos) << s.error_message();
  }
  for (Algorithm alg : {ML_KEM_512, ML_KEM_768, ML_KEM_1024}) {
    SCOPED_TRACE(Algorithm_Name(alg));
    const KeyGenResponse key = KeyGen(alg);
    std::string dk = key.private_key();
    dk[100] ^= 0x01;  // in dk_PKE: ŝ no longer matches t̂
    KeyInfo info;
    grpc::Status s = Import(alg, dk, "", &info);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find("private_key"), std::string::npos) << s.error_message();
    s = Import(alg, dk, key.public_key(), &info);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << s.error_message();
  }
}

// An imported expanded key works: sign with the held ML-DSA key, verify with its public key.
TEST_F(ImportTest, ImportedExpandedKeySigns) {
  const KeyGenResponse key = KeyGen(ML_DSA_87);
  ImportKeyRequest req;
  req.set_algorithm(ML_DSA_87);
  req.set_key_id("signer-87");
  req.set_private_key(key.private_key());
  req.set_public_key(key.public_key());
  KeyInfo info;
  grpc::Status s = Keys::NewStub(Channel())->Import(Ctx().get(), req, &info);
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto crypto = Crypto::NewStub(Channel());
  SignRequest sr;
  sr.set_algorithm(ML_DSA_87);
  sr.mutable_key_ref()->set_key_id("signer-87");
  sr.set_message("imported");
  SignResponse sig;
  s = crypto->Sign(Ctx().get(), sr, &sig);
  ASSERT_TRUE(s.ok()) << s.error_message();
  VerifyRequest vr;
  vr.set_algorithm(ML_DSA_87);
  vr.set_public_key(key.public_key());
  vr.set_message("imported");
  vr.set_signature(sig.signature());
  VerifyResponse v;
  s = crypto->Verify(Ctx().get(), vr, &v);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(v.valid());
}

}  // namespace
}  // namespace pqcd::testing
