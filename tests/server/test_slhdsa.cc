// SLH-DSA (FIPS 205) through the real daemon: unary KeyGen / Sign / Verify (seed and private-key
// forms, context, pre-hash, deterministic equal to the kernels, hedged), refusals, a Batch of 16
// signatures, the Stream, held keys (create, sign, rotate, verify an old version) and Import of a
// PKCS#8 key. The 'f' sets only: an 's'-set signature takes about a second.
#include <unistd.h>

#include <map>
#include <thread>

#include "daemon_fixture.h"
#include "gtest/gtest.h"
#include "pqcd/encoding/key_encoding.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using kernels::MutBytes;

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return ctx;
}

struct Case {
  Algorithm alg;
  kernels::AlgorithmId id;
};
const Case kCases[] = {{SLH_DSA_SHA2_128F, kernels::AlgorithmId::kSlhDsaSha2_128f},
                       {SLH_DSA_SHAKE_128F, kernels::AlgorithmId::kSlhDsaShake128f}};

class SlhDsaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon;
    sock_ = daemon_->dir() / "s.sock";
    ASSERT_TRUE(daemon_->Start({"--unix", sock_, "--log-level", "warn"}));
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Terminate(), 0) << daemon_->log();
    delete daemon_;
  }
  void SetUp() override {
    ASSERT_NE(daemon_, nullptr);
    ASSERT_TRUE(daemon_->running());
    auto channel = grpc::CreateChannel("unix:" + sock_, grpc::InsecureChannelCredentials());
    crypto_ = Crypto::NewStub(channel);
    keys_ = Keys::NewStub(channel);
  }
  static Daemon* daemon_;
  static std::string sock_;
  std::unique_ptr<Crypto::Stub> crypto_;
  std::unique_ptr<Keys::Stub> keys_;
};
Daemon* SlhDsaTest::daemon_ = nullptr;
std::string SlhDsaTest::sock_;

TEST_F(SlhDsaTest, UnaryMatchesKernelsAndRefusesBadInput) {
  for (const Case& c : kCases) {
    const kernels::AlgorithmDescriptor& d = kernels::Describe(c.id);
    const kernels::AlgorithmFacts& f = *d.facts;
    SCOPED_TRACE(std::string(f.name));
    std::vector<uint8_t> seed(f.seed_bytes);
    kernels::SeededRandom(uint64_t{static_cast<uint64_t>(c.alg)}).Generate(seed).IgnoreError();
    std::vector<uint8_t> pk(f.public_key_bytes), sk(f.private_key_bytes);
    kernels::DsaKeyGenItem kgi{seed, pk, sk, {}, {}};
    d.dsa->keygen_batch(std::span(&kgi, 1), kernels::OsRandom());
    ASSERT_TRUE(kgi.status.ok());

    KeyGenRequest kg;
    kg.set_algorithm(c.alg);
    kg.set_seed(Bytes(seed));
    KeyGenResponse keys;
    auto s = crypto_->KeyGen(Ctx().get(), kg, &keys);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(keys.public_key(), Bytes(pk));
    EXPECT_EQ(keys.private_key(), Bytes(sk));
    EXPECT_EQ(keys.seed(), Bytes(seed));

    const std::string message = "firmware image 1.2.3", context = "pqcd-test";
    const std::vector<uint8_t> msg = Vec(message), ctxb = Vec(context);
    for (auto ph : {PRE_HASH_NONE, PRE_HASH_SHA2_256, PRE_HASH_SHAKE256}) {
      std::vector<uint8_t> want(f.signature_bytes);
      kernels::DsaSignItem si;
      si.sk = sk;
      si.message = msg;
      si.options.context = ctxb;
      si.options.prehash = static_cast<kernels::PreHash>(ph);
      si.options.deterministic = true;
      si.sig = want;
      d.dsa->sign_batch(std::span(&si, 1), kernels::OsRandom());
      ASSERT_TRUE(si.status.ok()) << si.status;
      // Deterministic signing with the private key and with its seed: the kernels' signature.
      for (const std::string& key : {keys.private_key(), keys.seed()}) {
        SignRequest sr;
        sr.set_algorithm(c.alg);
        sr.set_private_key(key);
        sr.set_message(message);
        sr.set_context(context);
        sr.set_pre_hash(ph);
        sr.set_deterministic(true);
        SignResponse out;
        s = crypto_->Sign(Ctx().get(), sr, &out);
        ASSERT_TRUE(s.ok()) << s.error_message();
        EXPECT_EQ(out.signature(), Bytes(want)) << "pre_hash " << ph;
      }
      VerifyRequest vr;
      vr.set_algorithm(c.alg);
      vr.set_public_key(keys.public_key());
      vr.set_message(message);
      vr.set_context(context);
      vr.set_pre_hash(ph);
      vr.set_signature(Bytes(want));
      VerifyResponse v;
      ASSERT_TRUE(crypto_->Verify(Ctx().get(), vr, &v).ok());
      EXPECT_TRUE(v.valid());
      vr.set_context("other");  // the context is bound into the signature
      ASSERT_TRUE(crypto_->Verify(Ctx().get(), vr, &v).ok());
      EXPECT_FALSE(v.valid());
    }
    // Hedged (the default): two signatures differ and both verify.
    SignRequest sr;
    sr.set_algorithm(c.alg);
    sr.set_private_key(keys.private_key());
    sr.set_message(message);
    SignResponse a, b;
    ASSERT_TRUE(crypto_->Sign(Ctx().get(), sr, &a).ok());
    ASSERT_TRUE(crypto_->Sign(Ctx().get(), sr, &b).ok());
    EXPECT_NE(a.signature(), b.signature());
    EXPECT_EQ(a.signature().size(), f.signature_bytes);
    for (const SignResponse* sig : {&a, &b}) {
      VerifyRequest vr;
      vr.set_algorithm(c.alg);
      vr.set_public_key(keys.public_key());
      vr.set_message(message);
      vr.set_signature(sig->signature());
      VerifyResponse v;
      ASSERT_TRUE(crypto_->Verify(Ctx().get(), vr, &v).ok());
      EXPECT_TRUE(v.valid());
    }
    // Refusals: external mu (FIPS 205 has none), wrong key sizes (the field and the expected
    // size named), an oversize context.
    SignRequest bad = sr;
    bad.set_external_mu(true);
    bad.set_message(std::string(64, 'm'));
    SignResponse out;
    s = crypto_->Sign(Ctx().get(), bad, &out);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("external_mu"), std::string::npos) << s.error_message();
    bad = sr;
    bad.set_private_key(keys.private_key().substr(1));
    s = crypto_->Sign(Ctx().get(), bad, &out);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find(std::to_string(f.private_key_bytes)), std::string::npos)
        << s.error_message();
    bad = sr;
    bad.set_context(std::string(256, 'c'));
    EXPECT_EQ(crypto_->Sign(Ctx().get(), bad, &out).error_code(), grpc::INVALID_ARGUMENT);
    VerifyRequest bv;
    bv.set_algorithm(c.alg);
    bv.set_public_key(keys.public_key() + "x");
    bv.set_message(message);
    bv.set_signature(a.signature());
    VerifyResponse v;
    s = crypto_->Verify(Ctx().get(), bv, &v);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("public_key"), std::string::npos) << s.error_message();
    // A changed private key (its PK.root no longer the tree's root) is refused, not used.
    std::string changed = keys.private_key();
    changed.back() = static_cast<char>(changed.back() ^ 1);
    ImportKeyRequest ir;
    ir.set_algorithm(c.alg);
    ir.set_private_key(changed);
    KeyInfo info;
    EXPECT_EQ(keys_->Import(Ctx().get(), ir, &info).error_code(), grpc::INVALID_ARGUMENT);
  }
}

TEST_F(SlhDsaTest, BatchOf16AndStream) {
  KeyGenRequest kg;
  kg.set_algorithm(SLH_DSA_SHA2_128F);
  KeyGenResponse keys;
  ASSERT_TRUE(crypto_->KeyGen(Ctx().get(), kg, &keys).ok());
  BatchRequest req;
  for (int i = 0; i < 16; ++i) {
    SignRequest* sr = req.add_operations()->mutable_sign();
    sr->set_algorithm(SLH_DSA_SHA2_128F);
    sr->set_private_key(keys.private_key());
    sr->set_message("batch item " + std::to_string(i));
  }
  BatchResponse resp;
  auto s = crypto_->Batch(Ctx().get(), req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.results_size(), 16);
  BatchRequest verify;
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(resp.results(i).code(), 0) << resp.results(i).message();
    EXPECT_EQ(resp.results(i).sign().signature().size(), 17088u);
    VerifyRequest* vr = verify.add_operations()->mutable_verify();
    vr->set_algorithm(SLH_DSA_SHA2_128F);
    vr->set_public_key(keys.public_key());
    vr->set_message("batch item " + std::to_string(i ^ (i == 15 ? 1 : 0)));  // the last: wrong
    vr->set_signature(resp.results(i).sign().signature());
  }
  BatchResponse verdicts;
  ASSERT_TRUE(crypto_->Batch(Ctx().get(), verify, &verdicts).ok());
  ASSERT_EQ(verdicts.results_size(), 16);
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(verdicts.results(i).code(), 0) << verdicts.results(i).message();
    EXPECT_EQ(verdicts.results(i).verify().valid(), i != 15) << i;
  }

  // The Stream: SHAKE-128f signatures pipelined, each answered once and verifying.
  KeyGenRequest kg2;
  kg2.set_algorithm(SLH_DSA_SHAKE_128F);
  KeyGenResponse shake;
  ASSERT_TRUE(crypto_->KeyGen(Ctx().get(), kg2, &shake).ok());
  auto ctx = Ctx();
  auto stream = crypto_->Stream(ctx.get());
  constexpr int kCount = 8;
  for (int i = 0; i < kCount; ++i) {
    StreamRequest r;
    r.set_id(static_cast<uint64_t>(100 + i));
    SignRequest* sr = r.mutable_operation()->mutable_sign();
    sr->set_algorithm(SLH_DSA_SHAKE_128F);
    sr->set_private_key(shake.private_key());
    sr->set_message("stream " + std::to_string(i));
    ASSERT_TRUE(stream->Write(r));
  }
  stream->WritesDone();
  std::map<uint64_t, std::string> sigs;
  StreamResponse r;
  while (stream->Read(&r)) {
    ASSERT_EQ(r.result().code(), 0) << r.result().message();
    EXPECT_TRUE(sigs.emplace(r.id(), r.result().sign().signature()).second) << r.id();
  }
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(sigs.size(), static_cast<size_t>(kCount));
  for (const auto& [id, sig] : sigs) {
    VerifyRequest vr;
    vr.set_algorithm(SLH_DSA_SHAKE_128F);
    vr.set_public_key(shake.public_key());
    vr.set_message("stream " + std::to_string(id - 100));
    vr.set_signature(sig);
    VerifyResponse v;
    ASSERT_TRUE(crypto_->Verify(Ctx().get(), vr, &v).ok());
    EXPECT_TRUE(v.valid()) << id;
  }
}

TEST_F(SlhDsaTest, HeldKeysRotateAndImportPkcs8) {
  KeyGenRequest kg;
  kg.set_algorithm(SLH_DSA_SHA2_128F);
  kg.set_hold(true);
  kg.set_key_id("slh-signer");
  KeyGenResponse v1;
  auto s = crypto_->KeyGen(Ctx().get(), kg, &v1);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(v1.private_key().empty());  // held: the private key never leaves the daemon
  SignRequest sr;
  sr.mutable_key_ref()->set_key_id("slh-signer");
  sr.set_message("release notes");
  sr.set_context("c");
  SignResponse sig1;
  s = crypto_->Sign(Ctx().get(), sr, &sig1);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(sig1.key_version(), 1u);
  RotateKeyRequest rr;
  rr.set_key_id("slh-signer");
  KeyInfo v2;
  s = keys_->Rotate(Ctx().get(), rr, &v2);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(v2.version(), 2u);
  EXPECT_NE(v2.public_key(), v1.public_key());
  SignResponse sig2;
  ASSERT_TRUE(crypto_->Sign(Ctx().get(), sr, &sig2).ok());
  EXPECT_EQ(sig2.key_version(), 2u);
  for (auto [version, sig] : {std::pair{1u, &sig1}, std::pair{2u, &sig2}}) {
    VerifyRequest vr;
    vr.mutable_key_ref()->set_key_id("slh-signer");
    vr.mutable_key_ref()->set_version(version);
    vr.set_message("release notes");
    vr.set_context("c");
    vr.set_signature(sig->signature());
    VerifyResponse v;
    ASSERT_TRUE(crypto_->Verify(Ctx().get(), vr, &v).ok());
    EXPECT_TRUE(v.valid()) << version;
  }

  // Import: a PKCS#8 (RFC 9909) SHAKE-128f key, no public key needed (the key ends with it).
  KeyGenRequest gk;
  gk.set_algorithm(SLH_DSA_SHAKE_128F);
  KeyGenResponse plain;
  ASSERT_TRUE(crypto_->KeyGen(Ctx().get(), gk, &plain).ok());
  const std::vector<uint8_t> raw = Vec(plain.private_key());
  auto der = encoding::EncodePkcs8Der(kernels::AlgorithmId::kSlhDsaShake128f, {}, raw);
  ASSERT_TRUE(der.ok()) << der.status();
  ImportKeyRequest ir;
  ir.set_algorithm(SLH_DSA_SHAKE_128F);
  ir.set_key_id("slh-imported");
  ir.set_private_key(
      std::string(reinterpret_cast<const char*>(der->view().data()), der->view().size()));
  KeyInfo imported;
  s = keys_->Import(Ctx().get(), ir, &imported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(imported.public_key(), plain.public_key());
  SignRequest hs;
  hs.mutable_key_ref()->set_key_id("slh-imported");
  hs.set_message("imported");
  hs.set_deterministic(true);
  SignResponse held_sig;
  ASSERT_TRUE(crypto_->Sign(Ctx().get(), hs, &held_sig).ok());
  SignRequest given = hs;
  given.set_algorithm(SLH_DSA_SHAKE_128F);
  given.set_private_key(plain.private_key());
  SignResponse given_sig;
  ASSERT_TRUE(crypto_->Sign(Ctx().get(), given, &given_sig).ok());
  EXPECT_EQ(held_sig.signature(), given_sig.signature());  // the prepared form signs as the key
  // KeyGen can answer in PKCS#8 / SPKI too.
  KeyGenRequest pem;
  pem.set_algorithm(SLH_DSA_SHAKE_128F);
  pem.set_key_format(KEY_FORMAT_PEM);
  KeyGenResponse pem_keys;
  s = crypto_->KeyGen(Ctx().get(), pem, &pem_keys);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(pem_keys.public_key().rfind("-----BEGIN PUBLIC KEY-----", 0), 0u);
  EXPECT_EQ(pem_keys.private_key().rfind("-----BEGIN PRIVATE KEY-----", 0), 0u);
}

}  // namespace
}  // namespace pqcd::testing
