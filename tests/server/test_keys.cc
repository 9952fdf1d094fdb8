// Keys service, persistence across kill -9, wrong KEK, corrupted records, TLS / mTLS identities.
#include <fstream>
#include <thread>

#include "daemon_fixture.h"
#include "gtest/gtest.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return ctx;
}

std::shared_ptr<grpc::Channel> UnixChannel(const std::string& path) {
  return grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
}

void WriteKek(const std::string& path, char fill) {
  std::ofstream out(path, std::ios::binary);
  out << std::string(32, fill);
}

TEST(KeysTest, ManageRotateDeleteImport) {
  Daemon d;
  std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--log-level", "info"}));
  auto crypto = Crypto::NewStub(UnixChannel(sock));
  auto keys = Keys::NewStub(UnixChannel(sock));

  KeyGenRequest kg;
  kg.set_algorithm(ML_DSA_44);
  kg.set_hold(true);
  kg.set_key_id("signer");
  (*kg.mutable_labels())["env"] = "test";
  KeyGenResponse v1;
  ASSERT_TRUE(crypto->KeyGen(Ctx().get(), kg, &v1).ok());
  // The same id again: ALREADY_EXISTS.
  KeyGenResponse dup;
  EXPECT_EQ(crypto->KeyGen(Ctx().get(), kg, &dup).error_code(), grpc::ALREADY_EXISTS);

  SignRequest sr;
  sr.mutable_key_ref()->set_key_id("signer");
  sr.set_message("before rotation");
  SignResponse sig1;
  ASSERT_TRUE(crypto->Sign(Ctx().get(), sr, &sig1).ok());

  RotateKeyRequest rr;
  rr.set_key_id("signer");
  KeyInfo v2;
  auto s = keys->Rotate(Ctx().get(), rr, &v2);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(v2.version(), 2u);
  EXPECT_EQ(v2.algorithm(), ML_DSA_44);
  EXPECT_NE(v2.public_key(), v1.public_key());
  ASSERT_EQ(v2.versions_size(), 2);

  // Old version still verifies; the newest signs.
  VerifyRequest vr;
  vr.mutable_key_ref()->set_key_id("signer");
  vr.mutable_key_ref()->set_version(1);
  vr.set_message("before rotation");
  vr.set_signature(sig1.signature());
  VerifyResponse ok;
  ASSERT_TRUE(crypto->Verify(Ctx().get(), vr, &ok).ok());
  EXPECT_TRUE(ok.valid());
  SignResponse sig2;
  ASSERT_TRUE(crypto->Sign(Ctx().get(), sr, &sig2).ok());
  EXPECT_EQ(sig2.key_version(), 2u);

  GetPublicKeyRequest gp;
  gp.set_key_id("signer");
  gp.set_version(1);
  KeyInfo info;
  ASSERT_TRUE(keys->GetPublicKey(Ctx().get(), gp, &info).ok());
  EXPECT_EQ(info.public_key(), v1.public_key());
  EXPECT_EQ(info.owner(), "local");
  EXPECT_EQ(info.labels().at("env"), "test");
  EXPECT_GT(info.created_unix_ms(), 0);

  // Import a KEM seed and an expanded ML-DSA key (with its public key).
  KeyGenRequest gk;
  gk.set_algorithm(ML_KEM_1024);
  KeyGenResponse kem;
  ASSERT_TRUE(crypto->KeyGen(Ctx().get(), gk, &kem).ok());
  ImportKeyRequest ir;
  ir.set_algorithm(ML_KEM_1024);
  ir.set_key_id("imported-kem");
  ir.set_private_key(kem.seed());
  KeyInfo imported;
  s = keys->Import(Ctx().get(), ir, &imported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(imported.public_key(), kem.public_key());
  ir.set_key_id("imported-kem-expanded");
  ir.set_private_key(kem.private_key());
  ASSERT_TRUE(keys->Import(Ctx().get(), ir, &imported).ok());
  EXPECT_EQ(imported.public_key(), kem.public_key());
  gk.set_algorithm(ML_DSA_65);
  KeyGenResponse dsa;
  ASSERT_TRUE(crypto->KeyGen(Ctx().get(), gk, &dsa).ok());
  ir.set_algorithm(ML_DSA_65);
  ir.set_key_id("imported-dsa");
  ir.set_private_key(dsa.private_key());
  EXPECT_EQ(keys->Import(Ctx().get(), ir, &imported).error_code(), grpc::INVALID_ARGUMENT);
  ir.set_public_key(v1.public_key().substr(0, 10));
  EXPECT_EQ(keys->Import(Ctx().get(), ir, &imported).error_code(), grpc::INVALID_ARGUMENT);
  ir.set_public_key(dsa.public_key());
  s = keys->Import(Ctx().get(), ir, &imported);
  ASSERT_TRUE(s.ok()) << s.error_message();

  ListKeysRequest lr;
  ListKeysResponse list;
  ASSERT_TRUE(keys->List(Ctx().get(), lr, &list).ok());
  EXPECT_EQ(list.keys_size(), 4);
  (*lr.mutable_label_selector())["env"] = "test";
  ASSERT_TRUE(keys->List(Ctx().get(), lr, &list).ok());
  ASSERT_EQ(list.keys_size(), 1);
  EXPECT_EQ(list.keys(0).key_id(), "signer");

  DeleteKeyRequest del;
  del.set_key_id("signer");
  del.set_version(1);
  DeleteKeyResponse dresp;
  ASSERT_TRUE(keys->Delete(Ctx().get(), del, &dresp).ok());
  EXPECT_EQ(dresp.deleted_versions(), 1u);
  EXPECT_EQ(crypto->Verify(Ctx().get(), vr, &ok).error_code(), grpc::NOT_FOUND);
  del.set_version(0);
  ASSERT_TRUE(keys->Delete(Ctx().get(), del, &dresp).ok());
  EXPECT_EQ(dresp.deleted_versions(), 1u);
  EXPECT_EQ(keys->GetPublicKey(Ctx().get(), gp, &info).error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(keys->Delete(Ctx().get(), del, &dresp).error_code(), grpc::NOT_FOUND);

  EXPECT_EQ(d.Terminate(), 0);
  // One audit line per key-management action, never key bytes.
  const std::string log = d.log();
  for (const char* action : {"action=create", "action=rotate", "action=import", "action=delete"}) {
    EXPECT_NE(log.find(action), std::string::npos) << action << "\n" << log;
  }
  EXPECT_NE(log.find("memory only"), std::string::npos);
}

TEST(KeysTest, PersistenceKill9WrongKekCorruptedRecord) {
  TempDir data;
  std::string kek = data / "kek", bad_kek = data / "bad-kek", dir = data / "store";
  WriteKek(kek, 'K');
  WriteKek(bad_kek, 'X');
  struct Held {
    std::string id;
    Algorithm alg;
    std::string public_key;
    std::string ciphertext, shared_secret;  // KEM
  };
  std::vector<Held> held;
  {
    Daemon d;
    std::string sock = d.dir() / "s.sock";
    ASSERT_TRUE(d.Start({"--unix", sock, "--data-dir", dir, "--kek-file", kek}));
    auto crypto = Crypto::NewStub(UnixChannel(sock));
    for (Algorithm alg : {ML_KEM_512, ML_KEM_768, ML_KEM_1024, ML_DSA_44, ML_DSA_65, ML_DSA_87}) {
      KeyGenRequest kg;
      kg.set_algorithm(alg);
      kg.set_hold(true);
      KeyGenResponse r;
      ASSERT_TRUE(crypto->KeyGen(Ctx().get(), kg, &r).ok());
      Held h{r.key_id(), alg, r.public_key(), "", ""};
      if (alg <= ML_KEM_1024) {
        EncapsRequest er;
        er.mutable_key_ref()->set_key_id(r.key_id());
        EncapsResponse e;
        ASSERT_TRUE(crypto->Encaps(Ctx().get(), er, &e).ok());
        h.ciphertext = e.ciphertext();
        h.shared_secret = e.shared_secret();
      }
      held.push_back(h);
    }
    d.Kill9();  // no shutdown: every acknowledged key must already be durable
  }
  {
    Daemon d;
    std::string sock = d.dir() / "s.sock";
    ASSERT_TRUE(d.Start({"--unix", sock, "--data-dir", dir, "--kek-file", kek}));
    auto crypto = Crypto::NewStub(UnixChannel(sock));
    for (const Held& h : held) {
      if (!h.ciphertext.empty()) {
        DecapsRequest dr;
        dr.mutable_key_ref()->set_key_id(h.id);
        dr.set_ciphertext(h.ciphertext);
        DecapsResponse r;
        auto s = crypto->Decaps(Ctx().get(), dr, &r);
        ASSERT_TRUE(s.ok()) << h.id << ": " << s.error_message();
        EXPECT_EQ(r.shared_secret(), h.shared_secret);
      } else {
        SignRequest sr;
        sr.mutable_key_ref()->set_key_id(h.id);
        sr.set_message("after restart");
        SignResponse sig;
        ASSERT_TRUE(crypto->Sign(Ctx().get(), sr, &sig).ok());
        VerifyRequest vr;
        vr.set_algorithm(h.alg);
        vr.set_public_key(h.public_key);
        vr.set_message("after restart");
        vr.set_signature(sig.signature());
        VerifyResponse v;
        ASSERT_TRUE(crypto->Verify(Ctx().get(), vr, &v).ok());
        EXPECT_TRUE(v.valid()) << h.id;
      }
    }
    EXPECT_EQ(d.Terminate(), 0);
  }
  {
    Daemon d;
    int code = d.RunToExit({"--data-dir", dir, "--kek-file", bad_kek});
    EXPECT_NE(code, 0);
    EXPECT_NE(d.log().find("wrong KEK"), std::string::npos) << d.log();
  }
  {
    // Corrupt one record: it is reported, the others load.
    std::string victim = dir + "/keys/" + held[0].id + ".v1.key";
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good()) << victim;
    f.seekp(-5, std::ios::end);
    f.put('\x5a');
    f.close();
    Daemon d;
    std::string sock = d.dir() / "s.sock";
    ASSERT_TRUE(d.Start({"--unix", sock, "--data-dir", dir, "--kek-file", kek}));
    auto keys = Keys::NewStub(UnixChannel(sock));
    ListKeysRequest lr;
    ListKeysResponse list;
    ASSERT_TRUE(keys->List(Ctx().get(), lr, &list).ok());
    EXPECT_EQ(list.keys_size(), static_cast<int>(held.size()) - 1);
    EXPECT_NE(d.log().find(held[0].id), std::string::npos) << d.log();
    EXPECT_EQ(d.Terminate(), 0);
  }
}

// ---- TLS ----------------------------------------------------------------------------------------

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new TempDir;
    const std::string d = pki_->path().string();
    std::string script =
        "set -e; cd '" + d +
        "';"
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
        "  -subj /CN=pqcd-test-ca -keyout ca.key -out ca.pem 2>/dev/null;"
        "mk() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=$1 "
        "  -keyout $1.key -out $1.csr 2>/dev/null;"
        "  printf 'subjectAltName=%s\\n' \"$2\" > $1.ext;"
        "  openssl x509 -req -in $1.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 "
        "  -extfile $1.ext -out $1.pem 2>/dev/null; };"
        "mk server DNS:localhost,IP:127.0.0.1; mk client-one DNS:client-one;"
        "mk client-two DNS:client-two; mk ops-admin DNS:ops-admin";
    ASSERT_EQ(Shell("bash -c \"" + Escape(script) + "\""), 0);
    daemon_ = new Daemon;
    ASSERT_TRUE(daemon_->Start({"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key",
                                "--tls-client-ca", d + "/ca.pem", "--admin", "ops-admin", "--unix",
                                d + "/health.sock"}));
  }
  static void TearDownTestSuite() {
    if (daemon_) {
      EXPECT_EQ(daemon_->Terminate(), 0);
    }
    delete daemon_;
    delete pki_;
  }
  static std::string Escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\' || c == '$') out += '\\';
      out += c;
    }
    return out;
  }
  static std::string Read(const std::string& name) {
    std::ifstream in(*pki_ / name);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  static std::shared_ptr<grpc::Channel> Channel(const std::string& client) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = Read("ca.pem");
    if (!client.empty()) {
      o.pem_cert_chain = Read(client + ".pem");
      o.pem_private_key = Read(client + ".key");
    }
    return grpc::CreateChannel(daemon_->target(), grpc::SslCredentials(o));
  }
  static TempDir* pki_;
  static Daemon* daemon_;
};
TempDir* TlsTest::pki_ = nullptr;
Daemon* TlsTest::daemon_ = nullptr;

TEST_F(TlsTest, ClientWithoutCertificateIsRefused) {
  auto stub = Crypto::NewStub(Channel(""));
  HashRequest hr;
  hr.set_algorithm(SHA3_256);
  HashResponse h;
  auto ctx = Ctx();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(stub->Hash(ctx.get(), hr, &h).error_code(), grpc::UNAVAILABLE);
  // Plaintext to the TLS port fails too.
  auto plain = daemon_->Crypto();
  auto ctx2 = Ctx();
  ctx2->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  EXPECT_FALSE(plain->Hash(ctx2.get(), hr, &h).ok());
  // With a certificate it works.
  auto good = Crypto::NewStub(Channel("client-one"));
  auto s = good->Hash(Ctx().get(), hr, &h);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(TlsTest, KeysAreScopedToTheClientIdentity) {
  auto one = Crypto::NewStub(Channel("client-one"));
  auto two = Crypto::NewStub(Channel("client-two"));
  KeyGenRequest kg;
  kg.set_algorithm(ML_KEM_768);
  kg.set_hold(true);
  kg.set_key_id("owned-by-one");
  KeyGenResponse r;
  auto s = one->KeyGen(Ctx().get(), kg, &r);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EncapsRequest er;
  er.mutable_key_ref()->set_key_id("owned-by-one");
  EncapsResponse e;
  EXPECT_TRUE(one->Encaps(Ctx().get(), er, &e).ok());
  EXPECT_EQ(two->Encaps(Ctx().get(), er, &e).error_code(), grpc::NOT_FOUND);

  auto keys_one = Keys::NewStub(Channel("client-one"));
  auto keys_two = Keys::NewStub(Channel("client-two"));
  auto keys_admin = Keys::NewStub(Channel("ops-admin"));
  ListKeysRequest lr;
  ListKeysResponse l1, l2, la;
  ASSERT_TRUE(keys_one->List(Ctx().get(), lr, &l1).ok());
  ASSERT_TRUE(keys_two->List(Ctx().get(), lr, &l2).ok());
  ASSERT_TRUE(keys_admin->List(Ctx().get(), lr, &la).ok());
  ASSERT_EQ(l1.keys_size(), 1);
  EXPECT_EQ(l1.keys(0).owner(), "client-one");
  EXPECT_EQ(l2.keys_size(), 0);
  EXPECT_EQ(la.keys_size(), 1);
  DeleteKeyRequest del;
  del.set_key_id("owned-by-one");
  DeleteKeyResponse dr;
  EXPECT_EQ(keys_two->Delete(Ctx().get(), del, &dr).error_code(), grpc::NOT_FOUND);
  EXPECT_TRUE(keys_admin->Delete(Ctx().get(), del, &dr).ok());
  EXPECT_EQ(one->Encaps(Ctx().get(), er, &e).error_code(), grpc::NOT_FOUND);
}

}  // namespace
}  // namespace pqcd::testing
