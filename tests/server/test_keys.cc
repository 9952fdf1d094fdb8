// Keys service, persistence across kill -9, wrong KEK, corrupted records, TLS / mTLS identities.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
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
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(32, fill);
  }
  ::chmod(path.c_str(), 0600);  // pqcd refuses a KEK file others may read
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
  // Ids the store cannot name ("." and "..", its ".tmp-*" files) are refused by the request check,
  // before key generation, for KeyGen and Import alike; nothing is stored.
  for (const char* bad : {".", "..", ".tmp-1", ".hidden"}) {
    KeyGenRequest bk = kg;
    bk.set_key_id(bad);
    KeyGenResponse out;
    auto st = crypto->KeyGen(Ctx().get(), bk, &out);
    EXPECT_EQ(st.error_code(), grpc::INVALID_ARGUMENT) << bad << ": " << st.error_message();
    EXPECT_NE(st.error_message().find("must not start with '.'"), std::string::npos)
        << st.error_message();
    ImportKeyRequest bi;
    bi.set_algorithm(ML_DSA_44);
    bi.set_key_id(bad);
    bi.set_private_key(std::string(32, '\x01'));
    KeyInfo bi_out;
    EXPECT_EQ(keys->Import(Ctx().get(), bi, &bi_out).error_code(), grpc::INVALID_ARGUMENT) << bad;
  }

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
  EXPECT_EQ(info.owner(), "unix:uid:" + std::to_string(::geteuid()));
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
  ir.set_public_key(v1.public_key().substr(0, 10));
  EXPECT_EQ(keys->Import(Ctx().get(), ir, &imported).error_code(), grpc::INVALID_ARGUMENT);
  // An expanded ML-DSA key alone: its public key is derived (t1 recomputed).
  ir.clear_public_key();
  s = keys->Import(Ctx().get(), ir, &imported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(imported.public_key(), dsa.public_key());

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
  // Refusals are audited in aggregate: 50 Deletes of the missing id give one full line now and
  // one summary line (written at the window's end, here at shutdown), not 50 lines.
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(keys->Delete(Ctx().get(), del, &dresp).error_code(), grpc::NOT_FOUND);
  }

  EXPECT_EQ(d.Terminate(), 0);
  // One audit line per key-management action, never key bytes.
  const std::string log = d.log();
  for (const char* action : {"action=create", "action=rotate", "action=import", "action=delete"}) {
    EXPECT_NE(log.find(action), std::string::npos) << action << "\n" << log;
  }
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("action=delete owner="), 3u) << log;  // the two Deletes and one refusal
  EXPECT_EQ(count("action=refusal_repeated op=\"delete NOT_FOUND\""), 1u) << log;
  EXPECT_EQ(count("further_refusals=49"), 1u) << log;
  EXPECT_NE(log.find("memory only"), std::string::npos);
}

// Held keys are used in their prepared form (issue 24): for every KEM and DSA, a key held by the
// daemon decapsulates / signs (deterministically) exactly as the same key given in the request,
// with nothing kept unprepared. A Batch that gives one private key many times prepares it once
// for the run: the answers equal the unary ones, and a bad key inside the run (a changed H(ek))
// fails alone, each time it appears.
TEST(KeysTest, HeldKeysArePreparedAndRepeatedGivenKeysAnswerAsAlone) {
  Daemon d;
  std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--workers", "1"}));
  auto crypto = Crypto::NewStub(UnixChannel(sock));
  auto keys = Keys::NewStub(UnixChannel(sock));
  const Algorithm kems[] = {ML_KEM_512,         ML_KEM_768,          ML_KEM_1024, X25519_MLKEM768,
                            SECP256R1_MLKEM768, SECP384R1_MLKEM1024, XWING};
  const Algorithm dsas[] = {ML_DSA_44, ML_DSA_65, ML_DSA_87};
  auto keygen = [&](Algorithm alg) {
    KeyGenRequest kg;
    kg.set_algorithm(alg);
    KeyGenResponse r;
    EXPECT_TRUE(crypto->KeyGen(Ctx().get(), kg, &r).ok());
    return r;
  };
  auto hold = [&](Algorithm alg, const std::string& id, const std::string& sk) {
    ImportKeyRequest im;
    im.set_algorithm(alg);
    im.set_key_id(id);
    im.set_private_key(sk);
    KeyInfo info;
    auto st = keys->Import(Ctx().get(), im, &info);
    EXPECT_TRUE(st.ok()) << id << ": " << st.error_message();
  };
  for (Algorithm alg : kems) {
    SCOPED_TRACE(Algorithm_Name(alg));
    const KeyGenResponse kp = keygen(alg);
    // Held once from the seed and once from the expanded key: both are prepared.
    const std::string from_seed = "kem-seed-" + std::to_string(alg);
    const std::string from_sk = "kem-sk-" + std::to_string(alg);
    hold(alg, from_seed, kp.seed());
    hold(alg, from_sk, kp.private_key());
    EncapsRequest er;
    er.set_algorithm(alg);
    er.set_public_key(kp.public_key());
    EncapsResponse e;
    ASSERT_TRUE(crypto->Encaps(Ctx().get(), er, &e).ok());
    for (const std::string& id : {from_seed, from_sk}) {
      DecapsRequest dr;
      dr.mutable_key_ref()->set_key_id(id);
      dr.set_ciphertext(e.ciphertext());
      DecapsResponse out;
      auto st = crypto->Decaps(Ctx().get(), dr, &out);
      ASSERT_TRUE(st.ok()) << id << ": " << st.error_message();
      EXPECT_EQ(out.shared_secret(), e.shared_secret()) << id;
    }
    // A Batch: the expanded key given 4 times, a changed copy twice, the key twice more, its seed
    // twice, and the held key once.
    std::string bad = kp.private_key();
    // H(ek) of the ML-KEM part (before z, its last 32 bytes); the NIST curves' scalar comes first.
    constexpr size_t kDk768 = kernels::MlKem<3>::kDecapsKeyBytes;
    constexpr size_t kDk1024 = kernels::MlKem<4>::kDecapsKeyBytes;
    const size_t h_at = alg == SECP256R1_MLKEM768                ? 32 + kDk768 - 64
                        : alg == SECP384R1_MLKEM1024             ? 48 + kDk1024 - 64
                        : alg == XWING || alg == X25519_MLKEM768 ? kDk768 - 64
                                                                 : bad.size() - 64;
    bad[h_at] ^= 1;
    std::vector<std::pair<std::string, bool>> plan;  // key bytes (or "" for the held key), ok
    for (int i = 0; i < 4; ++i) plan.push_back({kp.private_key(), true});
    plan.push_back({bad, false});
    plan.push_back({bad, false});
    plan.push_back({kp.private_key(), true});
    plan.push_back({kp.private_key(), true});
    plan.push_back({kp.seed(), true});
    plan.push_back({kp.seed(), true});
    plan.push_back({"", true});
    BatchRequest br;
    for (const auto& [key, ok] : plan) {
      DecapsRequest* op = br.add_operations()->mutable_decaps();
      if (key.empty()) {
        op->mutable_key_ref()->set_key_id(from_seed);
      } else {
        op->set_algorithm(alg);
        op->set_private_key(key);
      }
      op->set_ciphertext(e.ciphertext());
    }
    BatchResponse bo;
    ASSERT_TRUE(crypto->Batch(Ctx().get(), br, &bo).ok());
    ASSERT_EQ(bo.results_size(), static_cast<int>(plan.size()));
    for (size_t i = 0; i < plan.size(); ++i) {
      const OperationResult& r = bo.results(static_cast<int>(i));
      if (plan[i].second) {
        EXPECT_EQ(r.code(), 0) << i << ": " << r.message();
        EXPECT_EQ(r.decaps().shared_secret(), e.shared_secret()) << i;
      } else {
        EXPECT_EQ(r.code(), grpc::INVALID_ARGUMENT) << i << ": " << r.message();
      }
    }
  }
  for (Algorithm alg : dsas) {
    SCOPED_TRACE(Algorithm_Name(alg));
    const KeyGenResponse kp = keygen(alg);
    const std::string id = "dsa-" + std::to_string(alg);
    hold(alg, id, kp.seed());
    SignRequest given;
    given.set_algorithm(alg);
    given.set_private_key(kp.private_key());
    given.set_message("prepared");
    given.set_deterministic(true);
    SignResponse want;
    ASSERT_TRUE(crypto->Sign(Ctx().get(), given, &want).ok());
    SignRequest ref = given;
    ref.clear_private_key();
    ref.mutable_key_ref()->set_key_id(id);
    SignResponse got;
    ASSERT_TRUE(crypto->Sign(Ctx().get(), ref, &got).ok());
    EXPECT_EQ(got.signature(), want.signature());
    // A Batch with the seed given 3 times, the expanded key 3 times and the held key twice.
    BatchRequest br;
    for (int i = 0; i < 8; ++i) {
      SignRequest* op = br.add_operations()->mutable_sign();
      *op = i < 6 ? given : ref;
      if (i < 3) op->set_private_key(kp.seed());
    }
    BatchResponse bo;
    ASSERT_TRUE(crypto->Batch(Ctx().get(), br, &bo).ok());
    for (int i = 0; i < bo.results_size(); ++i) {
      EXPECT_EQ(bo.results(i).code(), 0) << i << ": " << bo.results(i).message();
      EXPECT_EQ(bo.results(i).sign().signature(), want.signature()) << i;
    }
  }
  const std::string m = HttpGet(d.metrics_port(), "/metrics");
  EXPECT_EQ(MetricValue(m, "pqcd_held_keys"), 2 * std::size(kems) + std::size(dsas)) << m;
  EXPECT_EQ(MetricValue(m, "pqcd_held_keys_unprepared_total"), 0) << m;
  EXPECT_EQ(d.Terminate(), 0) << d.log();
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
    // Record files are named <owner tag>.<key id>.v<N>.key.
    std::string victim;
    for (const auto& entry : std::filesystem::directory_iterator(dir + "/keys")) {
      const std::string name = entry.path().filename().string();
      const std::string suffix = "." + held[0].id + ".v1.key";
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        victim = entry.path().string();
      }
    }
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
                                "--tls-client-ca", d + "/ca.pem", "--admin", "tls:dns:ops-admin",
                                "--unix", d + "/health.sock"}));
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
  ListKeysRequest all;
  all.set_owner("*");  // an admin lists every identity's keys by asking for them
  ASSERT_TRUE(keys_admin->List(Ctx().get(), all, &la).ok());
  ASSERT_EQ(l1.keys_size(), 1);
  EXPECT_EQ(l1.keys(0).owner(), "tls:dns:client-one");
  EXPECT_EQ(l2.keys_size(), 0);
  EXPECT_EQ(la.keys_size(), 1);
  DeleteKeyRequest del;
  del.set_key_id("owned-by-one");
  DeleteKeyResponse dr;
  EXPECT_EQ(keys_two->Delete(Ctx().get(), del, &dr).error_code(), grpc::NOT_FOUND);
  // Key ids are scoped per owner: the admin names the owner of the key it deletes.
  EXPECT_EQ(keys_admin->Delete(Ctx().get(), del, &dr).error_code(), grpc::NOT_FOUND);
  del.set_owner("tls:dns:client-one");
  EXPECT_TRUE(keys_admin->Delete(Ctx().get(), del, &dr).ok());
  EXPECT_EQ(one->Encaps(Ctx().get(), er, &e).error_code(), grpc::NOT_FOUND);
}

// ---- Rights (issue 12): key ids per owner, admins manage, owners use -------------------------

KeyGenRequest HeldKeyGen(Algorithm alg, const std::string& key_id) {
  KeyGenRequest kg;
  kg.set_algorithm(alg);
  kg.set_hold(true);
  kg.set_key_id(key_id);
  return kg;
}

TEST_F(TlsTest, KeyIdsAreScopedPerOwnerWithoutAnExistenceOracle) {
  auto one = Crypto::NewStub(Channel("client-one"));
  auto two = Crypto::NewStub(Channel("client-two"));
  KeyGenResponse r1, r2, again;
  ASSERT_TRUE(one->KeyGen(Ctx().get(), HeldKeyGen(ML_KEM_512, "same-name"), &r1).ok());
  // Another identity may use the same id: it learns nothing about client-one's keys.
  auto s = two->KeyGen(Ctx().get(), HeldKeyGen(ML_KEM_512, "same-name"), &r2);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_NE(r1.public_key(), r2.public_key());
  // Within one owner an id is taken once.
  EXPECT_EQ(one->KeyGen(Ctx().get(), HeldKeyGen(ML_KEM_512, "same-name"), &again).error_code(),
            grpc::ALREADY_EXISTS);
  // Each resolves its own key.
  auto keys_one = Keys::NewStub(Channel("client-one"));
  auto keys_two = Keys::NewStub(Channel("client-two"));
  GetPublicKeyRequest gp;
  gp.set_key_id("same-name");
  KeyInfo i1, i2;
  ASSERT_TRUE(keys_one->GetPublicKey(Ctx().get(), gp, &i1).ok());
  ASSERT_TRUE(keys_two->GetPublicKey(Ctx().get(), gp, &i2).ok());
  EXPECT_EQ(i1.public_key(), r1.public_key());
  EXPECT_EQ(i2.public_key(), r2.public_key());
  EXPECT_EQ(i2.owner(), "tls:dns:client-two");
  // A non-admin cannot address another owner's keys at all.
  gp.set_owner("tls:dns:client-one");
  EXPECT_EQ(keys_two->GetPublicKey(Ctx().get(), gp, &i2).error_code(), grpc::PERMISSION_DENIED);
  EncapsRequest er;
  er.mutable_key_ref()->set_key_id("same-name");
  er.mutable_key_ref()->set_owner("tls:dns:client-one");
  EncapsResponse e;
  EXPECT_EQ(two->Encaps(Ctx().get(), er, &e).error_code(), grpc::PERMISSION_DENIED);
}

TEST_F(TlsTest, AdminsManageOtherOwnersKeysButDoNotUseThem) {
  auto one = Crypto::NewStub(Channel("client-one"));
  auto admin = Crypto::NewStub(Channel("ops-admin"));
  auto keys_admin = Keys::NewStub(Channel("ops-admin"));
  const std::string owner = "tls:dns:client-one";
  KeyGenResponse r;
  ASSERT_TRUE(one->KeyGen(Ctx().get(), HeldKeyGen(ML_DSA_44, "one-signing"), &r).ok());

  GetPublicKeyRequest gp;
  gp.set_key_id("one-signing");
  KeyInfo info;
  EXPECT_EQ(keys_admin->GetPublicKey(Ctx().get(), gp, &info).error_code(), grpc::NOT_FOUND);
  gp.set_owner(owner);
  ASSERT_TRUE(keys_admin->GetPublicKey(Ctx().get(), gp, &info).ok());
  EXPECT_EQ(info.owner(), owner);

  ListKeysRequest lr;
  lr.set_owner(owner);
  ListKeysResponse lresp;
  ASSERT_TRUE(keys_admin->List(Ctx().get(), lr, &lresp).ok());
  EXPECT_GE(lresp.keys_size(), 1);
  for (const auto& k : lresp.keys()) EXPECT_EQ(k.owner(), owner);

  RotateKeyRequest rot;
  rot.set_key_id("one-signing");
  rot.set_owner(owner);
  KeyInfo rotated;
  ASSERT_TRUE(keys_admin->Rotate(Ctx().get(), rot, &rotated).ok());
  EXPECT_EQ(rotated.version(), 2u);
  EXPECT_EQ(rotated.owner(), owner);

  // Import on an owner's behalf.
  ImportKeyRequest imp;
  imp.set_algorithm(ML_KEM_768);
  imp.set_key_id("imported-for-one");
  imp.set_private_key(std::string(64, '\x05'));
  imp.set_owner(owner);
  KeyInfo imported;
  ASSERT_TRUE(keys_admin->Import(Ctx().get(), imp, &imported).ok());
  EXPECT_EQ(imported.owner(), owner);
  // An owner name must be a typed identity.
  imp.set_owner("client-one");
  EXPECT_EQ(keys_admin->Import(Ctx().get(), imp, &imported).error_code(), grpc::INVALID_ARGUMENT);

  // Using the key is not an admin right (this daemon runs without --allow-admin-key-use).
  SignRequest sr;
  sr.mutable_key_ref()->set_key_id("one-signing");
  sr.mutable_key_ref()->set_owner(owner);
  sr.set_message("m");
  SignResponse sig;
  auto s = admin->Sign(Ctx().get(), sr, &sig);
  EXPECT_EQ(s.error_code(), grpc::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("--allow-admin-key-use"), std::string::npos)
      << s.error_message();
  // The owner signs with the rotated key.
  sr.mutable_key_ref()->clear_owner();
  EXPECT_TRUE(one->Sign(Ctx().get(), sr, &sig).ok());

  // Audit lines name the acting identity and the owner.
  const std::string log = daemon_->log();
  EXPECT_NE(log.find("who=\"tls:dns:ops-admin\" action=rotate owner=\"tls:dns:client-one\""),
            std::string::npos)
      << log;
}

TEST_F(TlsTest, AdminKeyUseWhenGrantedIsAuditedWithoutFlooding) {
  const std::string d = pki_->path().string();
  Daemon granted;
  ASSERT_TRUE(granted.Start({"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key",
                             "--tls-client-ca", d + "/ca.pem", "--admin", "tls:dns:ops-admin",
                             "--allow-admin-key-use", "--unix", granted.dir() / "health.sock",
                             "--log-level", "warn"}));
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = Read("ca.pem");
  auto channel_of = [&](const std::string& who) {
    grpc::SslCredentialsOptions c = o;
    c.pem_cert_chain = Read(who + ".pem");
    c.pem_private_key = Read(who + ".key");
    return grpc::CreateChannel(granted.target(), grpc::SslCredentials(c));
  };
  auto one = Crypto::NewStub(channel_of("client-one"));
  auto admin = Crypto::NewStub(channel_of("ops-admin"));
  KeyGenResponse r;
  ASSERT_TRUE(one->KeyGen(Ctx().get(), HeldKeyGen(ML_KEM_768, "one-kem"), &r).ok());
  EncapsRequest er;
  er.mutable_key_ref()->set_key_id("one-kem");
  er.mutable_key_ref()->set_owner("tls:dns:client-one");
  EncapsResponse e;
  for (int i = 0; i < 200; ++i) {
    auto s = admin->Encaps(Ctx().get(), er, &e);
    ASSERT_TRUE(s.ok()) << s.error_message();
    DecapsRequest dr;
    dr.mutable_key_ref()->set_key_id("one-kem");
    dr.mutable_key_ref()->set_owner("tls:dns:client-one");
    dr.set_ciphertext(e.ciphertext());
    DecapsResponse dresp;
    ASSERT_TRUE(admin->Decaps(Ctx().get(), dr, &dresp).ok());
    EXPECT_EQ(dresp.shared_secret(), e.shared_secret());
  }
  // The owner's own uses are not audited (no --audit-key-use).
  DecapsRequest own;
  own.mutable_key_ref()->set_key_id("one-kem");
  own.set_ciphertext(e.ciphertext());
  DecapsResponse od;
  ASSERT_TRUE(one->Decaps(Ctx().get(), own, &od).ok());
  ASSERT_EQ(granted.Terminate(), 0);
  const std::string log = granted.log();
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  };
  // 400 uses by a non-owner: itemised once per (op) and summarised, not 400 lines.
  EXPECT_EQ(count("who=\"tls:dns:ops-admin\" action=use op=\"Encaps\""), 1u) << log;
  EXPECT_EQ(count("who=\"tls:dns:ops-admin\" action=use op=\"Decaps\""), 1u) << log;
  EXPECT_GE(count("action=use_repeated"), 1u) << log;
  EXPECT_LE(count("action=use"), 8u) << log;
  EXPECT_EQ(count("who=\"tls:dns:client-one\" action=use"), 0u) << log;
}

// An admin (here: this test's uid on the Unix socket) manages keys that anonymous plain-TCP
// callers hold under --allow-insecure-tcp by naming the owner "anonymous".
TEST(KeysTest, AdminManagesAnonymousKeys) {
  Daemon d;
  std::string sock = d.dir() / "a.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--allow-insecure-tcp", "--admin",
                       "unix:uid:" + std::to_string(::geteuid()), "--log-level", "warn"}));
  KeyGenResponse r;
  ASSERT_TRUE(d.Crypto()->KeyGen(Ctx().get(), HeldKeyGen(ML_KEM_512, "anon-key"), &r).ok());
  auto admin =
      Keys::NewStub(grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials()));
  GetPublicKeyRequest gp;
  gp.set_key_id("anon-key");
  gp.set_owner("anonymous");
  KeyInfo info;
  auto s = admin->GetPublicKey(Ctx().get(), gp, &info);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(info.owner(), "anonymous");
  EXPECT_EQ(info.public_key(), r.public_key());
  DeleteKeyRequest del;
  del.set_key_id("anon-key");
  del.set_owner("anonymous");
  DeleteKeyResponse dr;
  EXPECT_TRUE(admin->Delete(Ctx().get(), del, &dr).ok());
  EXPECT_EQ(d.Terminate(), 0);
}

TEST(KeysTest, ListPagesQuotaAndImportLabels) {
  Daemon d;
  std::string sock = d.dir() / "q.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--max-keys-per-owner", "5", "--max-versions-per-key", "3",
                       "--log-level", "warn"}));
  auto channel = grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials());
  auto crypto = Crypto::NewStub(channel);
  auto keys = Keys::NewStub(channel);
  for (int i = 0; i < 5; ++i) {
    KeyGenResponse r;
    auto s = crypto->KeyGen(Ctx().get(), HeldKeyGen(ML_KEM_512, "k" + std::to_string(i)), &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  // The sixth key is over the quota: refused, and counted.
  KeyGenResponse r;
  auto s = crypto->KeyGen(Ctx().get(), HeldKeyGen(ML_KEM_512, "k5"), &r);
  EXPECT_EQ(s.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("--max-keys-per-owner"), std::string::npos) << s.error_message();
  // Versions: k0 rotates to v3, the fourth version is refused naming the flag (and counted);
  // deleting v1 makes room for v4 (numbers are never reused).
  RotateKeyRequest rot;
  rot.set_key_id("k0");
  KeyInfo rotated;
  for (uint32_t v = 2; v <= 3; ++v) {
    s = keys->Rotate(Ctx().get(), rot, &rotated);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(rotated.version(), v);
  }
  // The refused Rotate generates no key pair: it is refused before key generation.
  const char* kKeyGens = "pqcd_operations_total{algorithm=\"ML-KEM-512\",operation=\"keygen\"}";
  const double keygens = MetricValue(HttpGet(d.metrics_port(), "/metrics"), kKeyGens);
  EXPECT_GE(keygens, 7);  // 6 KeyGens (the refused sixth key included) and 2 Rotates
  s = keys->Rotate(Ctx().get(), rot, &rotated);
  EXPECT_EQ(s.error_code(), grpc::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find("--max-versions-per-key"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(MetricValue(HttpGet(d.metrics_port(), "/metrics"), kKeyGens), keygens);
  DeleteKeyRequest del_v1;
  del_v1.set_key_id("k0");
  del_v1.set_version(1);
  DeleteKeyResponse del_resp;
  ASSERT_TRUE(keys->Delete(Ctx().get(), del_v1, &del_resp).ok());
  s = keys->Rotate(Ctx().get(), rot, &rotated);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(rotated.version(), 4u);
  const std::string m = HttpGet(d.metrics_port(), "/metrics");
  EXPECT_EQ(MetricValue(m, "pqcd_held_keys_refused_total{reason=\"quota\"}"), 2) << m;
  EXPECT_EQ(MetricValue(m, "pqcd_held_keys_refused_total{reason=\"memlock\"}"), 0) << m;

  // Pages of 2: 2 + 2 + 1, every key once.
  std::set<std::string> seen;
  ListKeysRequest lr;
  lr.set_page_size(2);
  int pages = 0;
  do {
    ListKeysResponse page;
    ASSERT_TRUE(keys->List(Ctx().get(), lr, &page).ok());
    EXPECT_LE(page.keys_size(), 2);
    for (const auto& k : page.keys()) EXPECT_TRUE(seen.insert(k.key_id()).second) << k.key_id();
    lr.set_page_token(page.next_page_token());
    ++pages;
  } while (!lr.page_token().empty() && pages < 10);
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(pages, 3);
  lr.set_page_token("not-a-token");
  ListKeysResponse bad;
  EXPECT_EQ(keys->List(Ctx().get(), lr, &bad).error_code(), grpc::INVALID_ARGUMENT);
  lr.Clear();
  lr.set_page_size(5000);
  EXPECT_EQ(keys->List(Ctx().get(), lr, &bad).error_code(), grpc::INVALID_ARGUMENT);
  // Only admins list everyone's keys.
  lr.Clear();
  lr.set_owner("*");
  EXPECT_EQ(keys->List(Ctx().get(), lr, &bad).error_code(), grpc::PERMISSION_DENIED);

  // Import checks labels as KeyGen does (after a Delete frees a quota slot).
  DeleteKeyRequest del;
  del.set_key_id("k0");
  DeleteKeyResponse dr;
  ASSERT_TRUE(keys->Delete(Ctx().get(), del, &dr).ok());
  // Delete is labelled with the deleted key's algorithm (it was "none"): this one and the version
  // deleted above. A call is counted when it is done, which may come just after its answer.
  constexpr char kDeletes[] =
      "pqcd_requests_total{algorithm=\"ML-KEM-512\",code=\"OK\",rpc=\"Keys.Delete\"}";
  EXPECT_TRUE(Eventually([&] {
    return MetricValue(HttpGet(d.metrics_port(), "/metrics"), kDeletes) == 2;
  })) << HttpGet(d.metrics_port(), "/metrics");
  ImportKeyRequest imp;
  imp.set_algorithm(ML_KEM_512);
  imp.set_private_key(std::string(64, '\x01'));
  (*imp.mutable_labels())[""] = "empty key";
  KeyInfo info;
  s = keys->Import(Ctx().get(), imp, &info);
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("labels"), std::string::npos) << s.error_message();
  imp.clear_labels();
  for (int i = 0; i < 65; ++i) (*imp.mutable_labels())["l" + std::to_string(i)] = "v";
  EXPECT_EQ(keys->Import(Ctx().get(), imp, &info).error_code(), grpc::INVALID_ARGUMENT);
  imp.clear_labels();
  (*imp.mutable_labels())["team"] = "payments";
  s = keys->Import(Ctx().get(), imp, &info);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(d.Terminate(), 0);
}

}  // namespace
}  // namespace pqcd::testing
