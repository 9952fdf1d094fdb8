// Every Crypto RPC x algorithm against the real daemon: given and held keys, deterministic outputs
// compared with the kernels, Batch with mixed items, Stream with 10,000 pipelined requests,
// HashStream, and the Unix socket listener.
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <thread>

#include "daemon_fixture.h"
#include "gtest/gtest.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using kernels::MutBytes;

struct KemCase {
  Algorithm alg;
  kernels::KemAlgorithm k;
};
struct DsaCase {
  Algorithm alg;
  kernels::DsaAlgorithm k;
};
const KemCase kKems[] = {{ML_KEM_512, kernels::KemAlgorithm::kMlKem512},
                         {ML_KEM_768, kernels::KemAlgorithm::kMlKem768},
                         {ML_KEM_1024, kernels::KemAlgorithm::kMlKem1024},
                         {X25519_MLKEM768, kernels::KemAlgorithm::kX25519MlKem768},
                         {SECP256R1_MLKEM768, kernels::KemAlgorithm::kSecP256r1MlKem768},
                         {SECP384R1_MLKEM1024, kernels::KemAlgorithm::kSecP384r1MlKem1024},
                         {XWING, kernels::KemAlgorithm::kXWing}};
const DsaCase kDsas[] = {{ML_DSA_44, kernels::DsaAlgorithm::kMlDsa44},
                         {ML_DSA_65, kernels::DsaAlgorithm::kMlDsa65},
                         {ML_DSA_87, kernels::DsaAlgorithm::kMlDsa87}};

std::vector<uint8_t> Random(size_t n, uint64_t seed) {
  kernels::SeededRandom rng(seed);
  std::vector<uint8_t> out(n);
  EXPECT_TRUE(rng.Generate(MutBytes(out)).ok());
  return out;
}

class CryptoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon;
    unix_path_ = daemon_->dir() / "pqcd.sock";
    ASSERT_TRUE(daemon_->Start({"--unix", unix_path_, "--unix-mode", "0600", "--allow-insecure-tcp",
                                "--log-level", "warn"}));
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Terminate(), 0) << daemon_->log();
    delete daemon_;
  }
  void SetUp() override {
    ASSERT_NE(daemon_, nullptr);
    ASSERT_TRUE(daemon_->running());
    stub_ = daemon_->Crypto();
  }
  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return ctx;
  }
  static Daemon* daemon_;
  static std::string unix_path_;
  std::unique_ptr<Crypto::Stub> stub_;
};
Daemon* CryptoTest::daemon_ = nullptr;
std::string CryptoTest::unix_path_;

TEST_F(CryptoTest, KemKeyGenFromSeedMatchesKernels) {
  for (const auto& c : kKems) {
    const kernels::AlgorithmDescriptor& info = kernels::Describe(kernels::IdOf(c.k));
    auto seed = Random(info.facts->seed_bytes, 1 + static_cast<int>(c.alg));
    std::vector<uint8_t> ek(info.facts->public_key_bytes), dk(info.facts->private_key_bytes);
    kernels::KemKeyGenItem item{kernels::Bytes(seed), MutBytes(ek), MutBytes(dk), {}, {}};
    info.kem->keygen_batch(std::span(&item, 1), kernels::OsRandom());
    ASSERT_TRUE(item.status.ok());

    KeyGenRequest req;
    req.set_algorithm(c.alg);
    req.set_seed(Bytes(seed));
    KeyGenResponse resp;
    auto s = stub_->KeyGen(Ctx().get(), req, &resp);
    ASSERT_TRUE(s.ok()) << info.name() << ": " << s.error_message();
    EXPECT_EQ(resp.public_key(), Bytes(ek)) << info.name();
    EXPECT_EQ(resp.private_key(), Bytes(dk)) << info.name();
    EXPECT_EQ(resp.seed(), Bytes(seed));
    EXPECT_TRUE(resp.key_id().empty());
  }
}

TEST_F(CryptoTest, KemEncapsDecapsGivenKeys) {
  for (const auto& c : kKems) {
    const kernels::AlgorithmDescriptor& info = kernels::Describe(kernels::IdOf(c.k));
    KeyGenRequest kg;
    kg.set_algorithm(c.alg);
    KeyGenResponse keys;
    ASSERT_TRUE(stub_->KeyGen(Ctx().get(), kg, &keys).ok());
    ASSERT_EQ(keys.seed().size(), info.facts->seed_bytes);

    EncapsRequest er;
    er.set_algorithm(c.alg);
    er.set_public_key(keys.public_key());
    EncapsResponse enc;
    ASSERT_TRUE(stub_->Encaps(Ctx().get(), er, &enc).ok());
    EXPECT_EQ(enc.ciphertext().size(), info.facts->ciphertext_bytes);
    EXPECT_EQ(enc.shared_secret().size(), info.facts->secret_bytes);

    // Decaps with the expanded key and with the seed; the kernels agree.
    for (const std::string& sk : {keys.private_key(), keys.seed()}) {
      DecapsRequest dr;
      dr.set_algorithm(c.alg);
      dr.set_private_key(sk);
      dr.set_ciphertext(enc.ciphertext());
      DecapsResponse dec;
      ASSERT_TRUE(stub_->Decaps(Ctx().get(), dr, &dec).ok());
      EXPECT_EQ(dec.shared_secret(), enc.shared_secret()) << info.name();
    }
    // Tampered ciphertext: implicit rejection, compared with the kernels.
    std::string ct = enc.ciphertext();
    ct[ct.size() / 2] ^= 0x40;  // in the ML-KEM part of every KEM's ciphertext
    DecapsRequest dr;
    dr.set_algorithm(c.alg);
    dr.set_private_key(keys.private_key());
    dr.set_ciphertext(ct);
    DecapsResponse dec;
    ASSERT_TRUE(stub_->Decaps(Ctx().get(), dr, &dec).ok());
    EXPECT_NE(dec.shared_secret(), enc.shared_secret());
    std::vector<uint8_t> ss(info.facts->secret_bytes);
    auto dk = Vec(keys.private_key());
    auto ctv = Vec(ct);
    kernels::KemDecapsItem item{kernels::Bytes(dk), kernels::Bytes(ctv), MutBytes(ss), {}};
    info.kem->decaps_batch(std::span(&item, 1));
    ASSERT_TRUE(item.status.ok());
    EXPECT_EQ(dec.shared_secret(), Bytes(ss));
  }
}

TEST_F(CryptoTest, KemHeldKeys) {
  for (const auto& c : kKems) {
    KeyGenRequest kg;
    kg.set_algorithm(c.alg);
    kg.set_hold(true);
    (*kg.mutable_labels())["team"] = "crypto";
    KeyGenResponse keys;
    auto s = stub_->KeyGen(Ctx().get(), kg, &keys);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(keys.key_id().empty());
    EXPECT_EQ(keys.key_version(), 1u);
    EXPECT_TRUE(keys.private_key().empty());
    EXPECT_TRUE(keys.seed().empty());

    EncapsRequest er;
    er.mutable_key_ref()->set_key_id(keys.key_id());  // algorithm taken from the held key
    EncapsResponse enc;
    s = stub_->Encaps(Ctx().get(), er, &enc);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(enc.key_version(), 1u);
    DecapsRequest dr;
    dr.set_algorithm(c.alg);
    dr.mutable_key_ref()->set_key_id(keys.key_id());
    dr.set_ciphertext(enc.ciphertext());
    DecapsResponse dec;
    s = stub_->Decaps(Ctx().get(), dr, &dec);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(dec.shared_secret(), enc.shared_secret());
    // Given-key Encaps with the returned public key, held Decaps.
    EncapsRequest er2;
    er2.set_algorithm(c.alg);
    er2.set_public_key(keys.public_key());
    ASSERT_TRUE(stub_->Encaps(Ctx().get(), er2, &enc).ok());
    dr.set_ciphertext(enc.ciphertext());
    ASSERT_TRUE(stub_->Decaps(Ctx().get(), dr, &dec).ok());
    EXPECT_EQ(dec.shared_secret(), enc.shared_secret());
  }
}

TEST_F(CryptoTest, DsaDeterministicSignMatchesKernels) {
  for (const auto& c : kDsas) {
    const kernels::AlgorithmDescriptor& info = kernels::Describe(kernels::IdOf(c.k));
    auto seed = Random(32, 100 + static_cast<int>(c.alg));
    std::vector<uint8_t> pk(info.facts->public_key_bytes), sk(info.facts->private_key_bytes);
    kernels::DsaKeyGenItem kgi{kernels::Bytes(seed), MutBytes(pk), MutBytes(sk), {}, {}};
    info.dsa->keygen_batch(std::span(&kgi, 1), kernels::OsRandom());
    ASSERT_TRUE(kgi.status.ok());

    KeyGenRequest kg;
    kg.set_algorithm(c.alg);
    kg.set_seed(Bytes(seed));
    KeyGenResponse keys;
    ASSERT_TRUE(stub_->KeyGen(Ctx().get(), kg, &keys).ok());
    EXPECT_EQ(keys.public_key(), Bytes(pk));
    EXPECT_EQ(keys.private_key(), Bytes(sk));

    const std::string message = "message to sign", context = "ctx";
    std::vector<uint8_t> msg = Vec(message), ctxb = Vec(context);
    for (auto ph : {PRE_HASH_NONE, PRE_HASH_SHA2_256, PRE_HASH_SHAKE128}) {
      std::vector<uint8_t> sig(info.facts->signature_bytes);
      kernels::DsaSignItem si;
      si.sk = kernels::Bytes(sk);
      si.message = kernels::Bytes(msg);
      si.options.context = kernels::Bytes(ctxb);
      si.options.prehash = static_cast<kernels::PreHash>(ph);
      si.options.deterministic = true;
      si.sig = MutBytes(sig);
      info.dsa->sign_batch(std::span(&si, 1), kernels::OsRandom());
      ASSERT_TRUE(si.status.ok());

      for (const std::string& key : {keys.private_key(), keys.seed()}) {
        SignRequest sr;
        sr.set_algorithm(c.alg);
        sr.set_private_key(key);
        sr.set_message(message);
        sr.set_context(context);
        sr.set_deterministic(true);
        sr.set_pre_hash(ph);
        SignResponse sresp;
        auto s = stub_->Sign(Ctx().get(), sr, &sresp);
        ASSERT_TRUE(s.ok()) << s.error_message();
        EXPECT_EQ(sresp.signature(), Bytes(sig)) << info.name() << " pre_hash " << ph;
      }
      VerifyRequest vr;
      vr.set_algorithm(c.alg);
      vr.set_public_key(keys.public_key());
      vr.set_message(message);
      vr.set_context(context);
      vr.set_pre_hash(ph);
      vr.set_signature(Bytes(sig));
      VerifyResponse vresp;
      ASSERT_TRUE(stub_->Verify(Ctx().get(), vr, &vresp).ok());
      EXPECT_TRUE(vresp.valid());
      vr.set_message("another message");  // a failed verification is a normal answer
      ASSERT_TRUE(stub_->Verify(Ctx().get(), vr, &vresp).ok());
      EXPECT_FALSE(vresp.valid());
      vr.set_message(message);
      vr.set_signature("short");
      ASSERT_TRUE(stub_->Verify(Ctx().get(), vr, &vresp).ok());
      EXPECT_FALSE(vresp.valid());
    }
  }
}

TEST_F(CryptoTest, DsaHedgedExternalMuAndHeld) {
  // External mu (ML-DSA-44): signing mu deterministically equals signing the message.
  const kernels::AlgorithmDescriptor& info =
      kernels::Describe(kernels::IdOf(kernels::DsaAlgorithm::kMlDsa44));
  KeyGenRequest kg;
  kg.set_algorithm(ML_DSA_44);
  KeyGenResponse keys;
  ASSERT_TRUE(stub_->KeyGen(Ctx().get(), kg, &keys).ok());
  auto pk = Vec(keys.public_key());
  auto msg = Vec(std::string("external mu"));
  std::vector<uint8_t> mu(64);
  kernels::DsaMessageOptions mo;
  ASSERT_TRUE(
      kernels::MlDsa44::ComputeMu(kernels::Bytes(pk), kernels::Bytes(msg), mo, MutBytes(mu)).ok());
  SignRequest sr;
  sr.set_algorithm(ML_DSA_44);
  sr.set_private_key(keys.private_key());
  sr.set_message("external mu");
  sr.set_deterministic(true);
  SignResponse a, b;
  ASSERT_TRUE(stub_->Sign(Ctx().get(), sr, &a).ok());
  sr.set_message(Bytes(mu));
  sr.set_external_mu(true);
  auto s = stub_->Sign(Ctx().get(), sr, &b);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(a.signature(), b.signature());
  EXPECT_EQ(a.signature().size(), info.facts->signature_bytes);
  // Hedged (the default): two signatures differ, both verify.
  sr.set_external_mu(false);
  sr.set_message("hedged");
  sr.set_deterministic(false);
  ASSERT_TRUE(stub_->Sign(Ctx().get(), sr, &a).ok());
  ASSERT_TRUE(stub_->Sign(Ctx().get(), sr, &b).ok());
  EXPECT_NE(a.signature(), b.signature());
  for (const auto* sig : {&a, &b}) {
    VerifyRequest vr;
    vr.set_algorithm(ML_DSA_44);
    vr.set_public_key(keys.public_key());
    vr.set_message("hedged");
    vr.set_signature(sig->signature());
    VerifyResponse v;
    ASSERT_TRUE(stub_->Verify(Ctx().get(), vr, &v).ok());
    EXPECT_TRUE(v.valid());
  }
  // Held keys for every ML-DSA parameter set.
  for (const auto& c : kDsas) {
    KeyGenRequest hk;
    hk.set_algorithm(c.alg);
    hk.set_hold(true);
    hk.set_key_id(std::string("dsa-held-") + std::to_string(c.alg));
    KeyGenResponse held;
    s = stub_->KeyGen(Ctx().get(), hk, &held);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(held.key_id(), hk.key_id());
    SignRequest hs;
    hs.mutable_key_ref()->set_key_id(held.key_id());
    hs.set_message("held");
    hs.set_context("c");
    SignResponse sig;
    s = stub_->Sign(Ctx().get(), hs, &sig);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(sig.key_version(), 1u);
    VerifyRequest vr;
    vr.mutable_key_ref()->set_key_id(held.key_id());
    vr.set_message("held");
    vr.set_context("c");
    vr.set_signature(sig.signature());
    VerifyResponse v;
    ASSERT_TRUE(stub_->Verify(Ctx().get(), vr, &v).ok());
    EXPECT_TRUE(v.valid());
    vr.set_public_key(held.public_key());  // given key (oneof replaces key_ref)
    vr.set_algorithm(c.alg);
    ASSERT_TRUE(stub_->Verify(Ctx().get(), vr, &v).ok());
    EXPECT_TRUE(v.valid());
  }
}

const std::pair<Algorithm, kernels::HashAlgorithm> kHashes[] = {
    {SHA3_224, kernels::HashAlgorithm::kSha3_224},
    {SHA3_256, kernels::HashAlgorithm::kSha3_256},
    {SHA3_384, kernels::HashAlgorithm::kSha3_384},
    {SHA3_512, kernels::HashAlgorithm::kSha3_512},
    {SHAKE128, kernels::HashAlgorithm::kShake128},
    {SHAKE256, kernels::HashAlgorithm::kShake256},
    {SM3, kernels::HashAlgorithm::kSm3},
    {SHA256, kernels::HashAlgorithm::kSha2_256},
    {SHA384, kernels::HashAlgorithm::kSha2_384},
    {SHA512, kernels::HashAlgorithm::kSha2_512},
    {SHA224, kernels::HashAlgorithm::kSha2_224},
    {SHA512_224, kernels::HashAlgorithm::kSha2_512_224},
    {SHA512_256, kernels::HashAlgorithm::kSha2_512_256},
};

std::string KernelHash(kernels::HashAlgorithm alg, const std::string& data, size_t len = 0) {
  std::vector<uint8_t> out(len ? len : kernels::HashDigestBytes(alg));
  auto in = Vec(data);
  EXPECT_TRUE(kernels::Hash(alg, kernels::Bytes(in), MutBytes(out)).ok());
  return Bytes(out);
}

TEST_F(CryptoTest, HashEveryAlgorithm) {
  for (const auto& [alg, k] : kHashes) {
    for (size_t n : {0, 1, 135, 136, 1000, 100000}) {
      HashRequest req;
      req.set_algorithm(alg);
      req.set_data(Bytes(Random(n, n)));
      HashResponse resp;
      auto s = stub_->Hash(Ctx().get(), req, &resp);
      ASSERT_TRUE(s.ok()) << s.error_message();
      EXPECT_EQ(resp.digest(), KernelHash(k, req.data())) << kernels::HashName(k) << " n=" << n;
    }
  }
  HashRequest req;
  req.set_algorithm(SHAKE256);
  req.set_data("xof");
  req.set_output_length(300);
  HashResponse resp;
  ASSERT_TRUE(stub_->Hash(Ctx().get(), req, &resp).ok());
  EXPECT_EQ(resp.digest(), KernelHash(kernels::HashAlgorithm::kShake256, "xof", 300));
}

TEST_F(CryptoTest, HashStreamLargeInput) {
  const std::string data = Bytes(Random(3 << 20, 7));
  for (const auto& [alg, k] : {kHashes[1], kHashes[5], kHashes[6], kHashes[7]}) {
    HashResponse resp;
    auto ctx = Ctx();
    auto writer = stub_->HashStream(ctx.get(), &resp);
    HashStreamRequest first;
    first.set_algorithm(alg);
    ASSERT_TRUE(writer->Write(first));
    for (size_t off = 0; off < data.size(); off += 65536) {
      HashStreamRequest chunk;
      chunk.set_data(data.substr(off, 65536));
      ASSERT_TRUE(writer->Write(chunk));
    }
    writer->WritesDone();
    auto s = writer->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.digest(), KernelHash(k, data)) << kernels::HashName(k);
  }
}

TEST_F(CryptoTest, BatchMixedGoodAndBad) {
  KeyGenRequest kg;
  kg.set_algorithm(ML_KEM_768);
  KeyGenResponse keys;
  ASSERT_TRUE(stub_->KeyGen(Ctx().get(), kg, &keys).ok());

  BatchRequest req;
  req.add_operations()->mutable_hash()->set_algorithm(SHA3_256);  // 0: OK
  req.mutable_operations(0)->mutable_hash()->set_data("abc");
  auto* bad_seed = req.add_operations()->mutable_keygen();  // 1: bad seed length
  bad_seed->set_algorithm(ML_KEM_512);
  bad_seed->set_seed("short");
  auto* enc = req.add_operations()->mutable_encaps();  // 2: OK
  enc->set_algorithm(ML_KEM_768);
  enc->set_public_key(keys.public_key());
  req.add_operations()->mutable_hash()->set_algorithm(ML_KEM_768);  // 3: not a hash
  auto* dec = req.add_operations()->mutable_decaps();               // 4: unknown key
  dec->set_algorithm(ML_KEM_768);
  dec->mutable_key_ref()->set_key_id("no-such-key");
  dec->set_ciphertext(std::string(1088, 'x'));
  req.add_operations();                                // 5: empty operation
  auto* kg2 = req.add_operations()->mutable_keygen();  // 6: OK
  kg2->set_algorithm(ML_DSA_65);
  auto* ver = req.add_operations()->mutable_verify();  // 7: OK, valid = false
  ver->set_algorithm(ML_DSA_44);
  ver->set_public_key(std::string(1312, '\0'));
  ver->set_message("m");
  ver->set_signature(std::string(2420, '\0'));
  BatchResponse resp;
  auto s = stub_->Batch(Ctx().get(), req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.results_size(), req.operations_size());
  EXPECT_EQ(resp.results(0).code(), 0);
  EXPECT_EQ(resp.results(0).hash().digest(), KernelHash(kernels::HashAlgorithm::kSha3_256, "abc"));
  EXPECT_EQ(resp.results(1).code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(resp.results(1).message().find("seed"), std::string::npos) << resp.results(1).message();
  EXPECT_NE(resp.results(1).message().find("64"), std::string::npos);
  EXPECT_EQ(resp.results(2).code(), 0);
  EXPECT_EQ(resp.results(2).encaps().ciphertext().size(), 1088u);
  EXPECT_EQ(resp.results(3).code(), grpc::INVALID_ARGUMENT);
  EXPECT_EQ(resp.results(4).code(), grpc::NOT_FOUND);
  EXPECT_EQ(resp.results(5).code(), grpc::INVALID_ARGUMENT);
  EXPECT_EQ(resp.results(6).code(), 0);
  EXPECT_EQ(resp.results(6).keygen().public_key().size(), 1952u);
  EXPECT_EQ(resp.results(7).code(), 0) << resp.results(7).message();
  EXPECT_FALSE(resp.results(7).verify().valid());
  // The good encapsulation decapsulates.
  DecapsRequest dr;
  dr.set_algorithm(ML_KEM_768);
  dr.set_private_key(keys.private_key());
  dr.set_ciphertext(resp.results(2).encaps().ciphertext());
  DecapsResponse dresp;
  ASSERT_TRUE(stub_->Decaps(Ctx().get(), dr, &dresp).ok());
  EXPECT_EQ(dresp.shared_secret(), resp.results(2).encaps().shared_secret());
}

TEST_F(CryptoTest, Stream10000PipelinedRequestsAnsweredExactlyOnce) {
  constexpr uint64_t kCount = 10000;
  auto ctx = Ctx();
  auto stream = stub_->Stream(ctx.get());
  std::map<uint64_t, std::string> answers;
  std::set<uint64_t> duplicates;
  std::thread reader([&] {
    StreamResponse resp;
    while (stream->Read(&resp)) {
      if (answers.count(resp.id())) duplicates.insert(resp.id());
      EXPECT_EQ(resp.result().code(), 0) << resp.result().message();
      answers[resp.id()] = resp.result().has_hash() ? resp.result().hash().digest()
                                                    : resp.result().keygen().public_key();
    }
  });
  for (uint64_t id = 0; id < kCount; ++id) {
    StreamRequest req;
    req.set_id(id * 7 + 3);
    if (id % 1000 == 999) {
      req.mutable_operation()->mutable_keygen()->set_algorithm(ML_KEM_512);
    } else {
      req.mutable_operation()->mutable_hash()->set_algorithm(id % 2 ? SHA3_256 : SHA256);
      req.mutable_operation()->mutable_hash()->set_data("item " + std::to_string(id));
    }
    ASSERT_TRUE(stream->Write(req));
  }
  stream->WritesDone();
  reader.join();
  auto s = stream->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(duplicates.empty());
  ASSERT_EQ(answers.size(), kCount);
  for (uint64_t id = 0; id < kCount; ++id) {
    ASSERT_TRUE(answers.count(id * 7 + 3)) << id;
    if (id % 1000 == 999) {
      EXPECT_EQ(answers[id * 7 + 3].size(), 800u);
    } else {
      EXPECT_EQ(answers[id * 7 + 3], KernelHash(id % 2 ? kernels::HashAlgorithm::kSha3_256
                                                       : kernels::HashAlgorithm::kSha2_256,
                                                "item " + std::to_string(id)));
    }
  }
}

TEST_F(CryptoTest, UnixSocketModeAndIdentity) {
  struct stat st {};
  ASSERT_EQ(::stat(unix_path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto unix_stub = Crypto::NewStub(
      grpc::CreateChannel("unix:" + unix_path_, grpc::InsecureChannelCredentials()));
  HashRequest hr;
  hr.set_algorithm(SM3);
  hr.set_data("abc");
  HashResponse h;
  ASSERT_TRUE(unix_stub->Hash(Ctx().get(), hr, &h).ok());
  EXPECT_EQ(h.digest(), KernelHash(kernels::HashAlgorithm::kSm3, "abc"));
  // A key held by 'local' is invisible to 'anonymous' (plain TCP) and vice versa.
  KeyGenRequest kg;
  kg.set_algorithm(ML_KEM_512);
  kg.set_hold(true);
  kg.set_key_id("local-key");
  KeyGenResponse keys;
  ASSERT_TRUE(unix_stub->KeyGen(Ctx().get(), kg, &keys).ok());
  EncapsRequest er;
  er.mutable_key_ref()->set_key_id("local-key");
  EncapsResponse enc;
  ASSERT_TRUE(unix_stub->Encaps(Ctx().get(), er, &enc).ok());
  auto s = stub_->Encaps(Ctx().get(), er, &enc);
  EXPECT_EQ(s.error_code(), grpc::NOT_FOUND) << s.error_message();
  auto keys_tcp = daemon_->Keys();
  pqc::v1::GetPublicKeyRequest gp;
  gp.set_key_id("local-key");
  pqc::v1::KeyInfo info;
  EXPECT_EQ(keys_tcp->GetPublicKey(Ctx().get(), gp, &info).error_code(), grpc::NOT_FOUND);
  auto keys_unix = pqc::v1::Keys::NewStub(
      grpc::CreateChannel("unix:" + unix_path_, grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(keys_unix->GetPublicKey(Ctx().get(), gp, &info).ok());
  EXPECT_EQ(info.owner(), "unix:uid:" + std::to_string(::geteuid()));
  EXPECT_EQ(info.public_key(), keys.public_key());
}

}  // namespace
}  // namespace pqcd::testing
