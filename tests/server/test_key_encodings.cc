// Standard key encodings against the real daemon (docs/encodings.md): the LAMPS example keys
// (tests/vectors/lamps/) imported as PKCS#8 PEM, GetPublicKey in DER and PEM, Encaps with a
// SubjectPublicKeyInfo, Decaps / Sign / Verify with PEM keys, KeyGen answers in PEM, and the
// refusals: a PKCS#8 "both" whose seed and expanded key disagree, a key for another algorithm.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "daemon_fixture.h"
#include "gtest/gtest.h"
#include "pqcd/encoding/key_encoding.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return ctx;
}

std::string Lamps(const std::string& name) {
  std::ifstream in(VectorsDir() / "lamps" / name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing lamps/" << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

encoding::ByteView View(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

class KeyEncodingsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon;
    sock_ = daemon_->dir() / "s.sock";
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
  static Daemon* daemon_;
  static std::string sock_;
};
Daemon* KeyEncodingsTest::daemon_ = nullptr;
std::string KeyEncodingsTest::sock_;

TEST_F(KeyEncodingsTest, ImportPemThenGetPublicKeyInEveryFormat) {
  ImportKeyRequest req;
  req.set_algorithm(ML_KEM_768);
  req.set_key_id("lamps-768");
  req.set_private_key(Lamps("ML-KEM-768-seed.priv"));
  KeyInfo info;
  grpc::Status s = Keys::NewStub(Channel())->Import(Ctx().get(), req, &info);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::string pub_pem = Lamps("ML-KEM-768.pub");
  absl::StatusOr<encoding::PublicKey> pub = encoding::DecodePublicKey(View(pub_pem));
  ASSERT_TRUE(pub.ok()) << pub.status();
  EXPECT_EQ(info.public_key(), std::string(pub->key.begin(), pub->key.end()));

  for (KeyFormat f : {KEY_FORMAT_RAW, KEY_FORMAT_DER, KEY_FORMAT_PEM}) {
    GetPublicKeyRequest get;
    get.set_key_id("lamps-768");
    get.set_format(f);
    KeyInfo got;
    s = Keys::NewStub(Channel())->GetPublicKey(Ctx().get(), get, &got);
    ASSERT_TRUE(s.ok()) << s.error_message();
    if (f == KEY_FORMAT_RAW) {
      EXPECT_EQ(got.public_key(), info.public_key());
    }
    if (f == KEY_FORMAT_PEM) {
      EXPECT_EQ(got.public_key(), pub_pem);  // byte for byte
    }
    if (f == KEY_FORMAT_DER) {
      absl::StatusOr<encoding::PublicKey> der = encoding::DecodeSpkiDer(View(got.public_key()));
      ASSERT_TRUE(der.ok()) << der.status();
      EXPECT_EQ(der->key, pub->key);
    }
  }
}

TEST_F(KeyEncodingsTest, EncapsWithSpkiDecapsWithPkcs8) {
  const std::string pub_pem = Lamps("ML-KEM-512.pub");
  absl::StatusOr<encoding::PublicKey> pub = encoding::DecodePublicKey(View(pub_pem));
  ASSERT_TRUE(pub.ok());
  const std::vector<uint8_t> der = *encoding::EncodePublicKey(kernels::AlgorithmId::kMlKem512,
                                                              pub->key, encoding::KeyFormat::kDer);
  for (const std::string& key : {std::string(der.begin(), der.end()), pub_pem}) {
    EncapsRequest enc;
    enc.set_algorithm(ML_KEM_512);
    enc.set_public_key(key);
    EncapsResponse er;
    grpc::Status s = Crypto::NewStub(Channel())->Encaps(Ctx().get(), enc, &er);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(er.ciphertext().size(), 768u);
    for (const char* priv :
         {"ML-KEM-512-seed.priv", "ML-KEM-512-expanded.priv", "ML-KEM-512-both.priv"}) {
      DecapsRequest dec;
      dec.set_algorithm(ML_KEM_512);
      dec.set_private_key(Lamps(priv));
      dec.set_ciphertext(er.ciphertext());
      DecapsResponse dr;
      s = Crypto::NewStub(Channel())->Decaps(Ctx().get(), dec, &dr);
      ASSERT_TRUE(s.ok()) << priv << ": " << s.error_message();
      EXPECT_EQ(dr.shared_secret(), er.shared_secret()) << priv;
    }
  }
}

TEST_F(KeyEncodingsTest, InconsistentBothRefused) {
  // bad-ML-KEM-512-1 / -4 and bad-ML-DSA-44-1: PKCS#8 "both" whose seed and expanded key differ.
  struct Bad {
    const char* file;
    Algorithm alg;
  };
  for (Bad b : {Bad{"bad-ML-KEM-512-1.priv", ML_KEM_512}, Bad{"bad-ML-KEM-512-4.priv", ML_KEM_512},
                Bad{"bad-ML-DSA-44-1.priv", ML_DSA_44}}) {
    ImportKeyRequest req;
    req.set_algorithm(b.alg);
    req.set_key_id("bad");
    req.set_private_key(Lamps(b.file));
    KeyInfo info;
    grpc::Status s = Keys::NewStub(Channel())->Import(Ctx().get(), req, &info);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << b.file;
    EXPECT_NE(s.error_message().find("seed and expanded key do not match"), std::string::npos)
        << s.error_message();
  }
  DecapsRequest dec;
  dec.set_algorithm(ML_KEM_512);
  dec.set_private_key(Lamps("bad-ML-KEM-512-4.priv"));
  dec.set_ciphertext(std::string(768, '\1'));
  DecapsResponse dr;
  grpc::Status s = Crypto::NewStub(Channel())->Decaps(Ctx().get(), dec, &dr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
}

TEST_F(KeyEncodingsTest, WrongAlgorithmRefused) {
  EncapsRequest enc;
  enc.set_algorithm(ML_KEM_1024);
  enc.set_public_key(Lamps("ML-KEM-768.pub"));
  EncapsResponse er;
  grpc::Status s = Crypto::NewStub(Channel())->Encaps(Ctx().get(), enc, &er);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("encoded for ML-KEM-768, the request names ML-KEM-1024"),
            std::string::npos)
      << s.error_message();

  SignRequest sign;
  sign.set_algorithm(ML_DSA_44);
  sign.set_private_key(Lamps("ML-KEM-512-seed.priv"));
  sign.set_message("m");
  SignResponse sr;
  s = Crypto::NewStub(Channel())->Sign(Ctx().get(), sign, &sr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();

  // Neither raw nor a valid encoding.
  enc.set_algorithm(ML_KEM_768);
  enc.set_public_key("-----BEGIN PUBLIC KEY-----\n*\n-----END PUBLIC KEY-----\n");
  s = Crypto::NewStub(Channel())->Encaps(Ctx().get(), enc, &er);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("base64"), std::string::npos) << s.error_message();
}

TEST_F(KeyEncodingsTest, KeyGenPemSignsAndVerifies) {
  KeyGenRequest req;
  req.set_algorithm(ML_DSA_65);
  req.set_seed(std::string(32, '\7'));
  req.set_key_format(KEY_FORMAT_PEM);
  KeyGenResponse kg;
  grpc::Status s = Crypto::NewStub(Channel())->KeyGen(Ctx().get(), req, &kg);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(kg.public_key().starts_with("-----BEGIN PUBLIC KEY-----\n"));
  ASSERT_TRUE(kg.private_key().starts_with("-----BEGIN PRIVATE KEY-----\n"));
  EXPECT_EQ(kg.seed(), std::string(32, '\7'));
  absl::StatusOr<encoding::PrivateKey> sk = encoding::DecodePrivateKey(View(kg.private_key()));
  ASSERT_TRUE(sk.ok()) << sk.status();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sk->seed.data()), sk->seed.size()),
            kg.seed());  // the seed form
  EXPECT_TRUE(sk->expanded.empty());

  SignRequest sign;
  sign.set_algorithm(ML_DSA_65);
  sign.set_private_key(kg.private_key());
  sign.set_message("hello");
  SignResponse sr;
  s = Crypto::NewStub(Channel())->Sign(Ctx().get(), sign, &sr);
  ASSERT_TRUE(s.ok()) << s.error_message();
  VerifyRequest ver;
  ver.set_algorithm(ML_DSA_65);
  ver.set_public_key(kg.public_key());
  ver.set_message("hello");
  ver.set_signature(sr.signature());
  VerifyResponse vr;
  s = Crypto::NewStub(Channel())->Verify(Ctx().get(), ver, &vr);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(vr.valid());

  // A held key answers with its public key in the format asked for.
  req.set_hold(true);
  req.set_key_id("held-pem");
  req.set_key_format(KEY_FORMAT_DER);
  KeyGenResponse held;
  s = Crypto::NewStub(Channel())->KeyGen(Ctx().get(), req, &held);
  ASSERT_TRUE(s.ok()) << s.error_message();
  absl::StatusOr<encoding::PublicKey> der = encoding::DecodeSpkiDer(View(held.public_key()));
  ASSERT_TRUE(der.ok()) << der.status();
  EXPECT_TRUE(held.private_key().empty());
}

}  // namespace
}  // namespace pqcd::testing
