// The client library, the pqc CLI and pqc-load against the real pqcd binary (loopback TCP and a
// Unix socket), using the server tests' daemon fixture.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "daemon_fixture.h"
#include "pqcd/client/client.h"

namespace pqcd::client {
namespace {

using pqcd::testing::Daemon;
using pqcd::testing::Shell;

std::unique_ptr<Client> Connect(const std::vector<std::string>& targets) {
  ClientOptions o;
  o.targets = targets;
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

std::string Hex(const std::string& s) {
  return HexEncode(s);
}

class DaemonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon();
    ASSERT_TRUE(daemon_->Start({"--unix", daemon_->dir() / "pqcd.sock"})) << daemon_->log();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  static Daemon* daemon_;
};
Daemon* DaemonTest::daemon_ = nullptr;

TEST_F(DaemonTest, KemRoundTripsAndDeterministicKeyGen) {
  auto c = Connect({daemon_->target()});
  for (Algorithm a : {Algorithm::kMlKem512, Algorithm::kMlKem768, Algorithm::kMlKem1024}) {
    SCOPED_TRACE(std::string(AlgorithmName(a)));
    KeyGenOp kg{a, std::string(64, '\x42'), false, {}, {}};
    auto k1 = c->KeyGen(kg);
    auto k2 = c->KeyGen(kg);
    ASSERT_TRUE(k1.ok()) << k1.status();
    ASSERT_TRUE(k2.ok()) << k2.status();
    EXPECT_EQ(k1->public_key, k2->public_key);
    EXPECT_EQ(k1->private_key, k2->private_key);
    auto en = c->Encaps({a, Key::Raw(k1->public_key)});
    ASSERT_TRUE(en.ok()) << en.status();
    EXPECT_EQ(en->shared_secret.size(), 32u);
    auto de = c->Decaps({a, Key::Raw(k1->private_key), en->ciphertext});
    ASSERT_TRUE(de.ok()) << de.status();
    EXPECT_EQ(de->shared_secret, en->shared_secret);
    auto de_seed = c->Decaps({a, Key::Raw(kg.seed), en->ciphertext});
    ASSERT_TRUE(de_seed.ok()) << de_seed.status();
    EXPECT_EQ(de_seed->shared_secret, en->shared_secret);
  }
}

TEST_F(DaemonTest, DsaDeterministicSignAndVerify) {
  auto c = Connect({daemon_->target()});
  for (Algorithm a : {Algorithm::kMlDsa44, Algorithm::kMlDsa65, Algorithm::kMlDsa87}) {
    SCOPED_TRACE(std::string(AlgorithmName(a)));
    auto kp = c->KeyGen({a, std::string(32, '\x07'), false, {}, {}});
    ASSERT_TRUE(kp.ok()) << kp.status();
    SignOp s;
    s.algorithm = a;
    s.key = Key::Raw(kp->private_key);
    s.message = "hello";
    s.context = "ctx";
    s.deterministic = true;
    auto s1 = c->Sign(s);
    auto s2 = c->Sign(s);
    ASSERT_TRUE(s1.ok()) << s1.status();
    ASSERT_TRUE(s2.ok());
    EXPECT_EQ(s1->signature, s2->signature);
    VerifyOp v;
    v.algorithm = a;
    v.key = Key::Raw(kp->public_key);
    v.message = "hello";
    v.signature = s1->signature;
    v.context = "ctx";
    auto ok = c->Verify(v);
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_TRUE(ok->valid);
    v.context = "other";
    EXPECT_FALSE(c->Verify(v)->valid);
  }
}

TEST_F(DaemonTest, HashesAndHashStream) {
  auto c = Connect({daemon_->target()});
  EXPECT_EQ(Hex(c->Hash({Algorithm::kSha3_256, "abc", 0})->digest),
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532");
  EXPECT_EQ(Hex(c->Hash({Algorithm::kSha256, "abc", 0})->digest),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(c->Hash({Algorithm::kShake256, "abc", 100})->digest.size(), 100u);
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  auto one = c->Hash({Algorithm::kSha3_512, big, 0});
  ASSERT_TRUE(one.ok()) << one.status();
  std::istringstream in(big);
  auto streamed = c->HashStream(Algorithm::kSha3_512, in);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(streamed->digest, one->digest);
}

TEST_F(DaemonTest, BatchPipelineAndStreamAgreeWithUnary) {
  auto c = Connect({daemon_->target()});
  auto kem = c->KeyGen({Algorithm::kMlKem768, std::string(64, '\x01'), false, {}, {}});
  ASSERT_TRUE(kem.ok());
  auto en = c->Encaps({Algorithm::kMlKem768, Key::Raw(kem->public_key)});
  ASSERT_TRUE(en.ok());
  std::vector<Operation> ops;
  for (int i = 0; i < 150; ++i) {
    if (i % 3 == 0) {
      ops.push_back(DecapsOp{Algorithm::kMlKem768, Key::Raw(kem->private_key), en->ciphertext});
    } else if (i % 3 == 1) {
      ops.push_back(HashOp{Algorithm::kSha3_256, "abc", 0});
    } else {
      ops.push_back(HashOp{Algorithm::kMlDsa65, "not a hash", 0});  // an error item
    }
  }
  auto check = [&](const BatchResults& rs) {
    ASSERT_EQ(rs.size(), ops.size());
    for (size_t i = 0; i < rs.size(); ++i) {
      if (i % 3 == 0) {
        ASSERT_TRUE(rs[i].ok()) << i << rs[i].status();
        EXPECT_EQ(std::get<DecapsResult>(*rs[i]).shared_secret, en->shared_secret);
      } else if (i % 3 == 1) {
        ASSERT_TRUE(rs[i].ok()) << i << rs[i].status();
        EXPECT_EQ(Hex(std::get<HashResult>(*rs[i]).digest).substr(0, 8), "3a985da7");
      } else {
        EXPECT_EQ(rs[i].status().code(), absl::StatusCode::kInvalidArgument) << i;
      }
    }
  };
  auto batch = c->Batch(ops);
  ASSERT_TRUE(batch.ok()) << batch.status();
  check(*batch);
  check(c->RunPipelined(ops, {.batch_size = 7, .max_inflight = 3}));

  auto stream = c->OpenStream({.max_inflight = 16});
  ASSERT_TRUE(stream.ok());
  std::mutex mu;
  BatchResults rs(ops.size(), absl::UnknownError("none"));
  for (size_t i = 0; i < ops.size(); ++i) {
    ASSERT_TRUE((*stream)
                    ->Submit(ops[i],
                             [&, i](absl::StatusOr<Result> r) {
                               std::lock_guard lock(mu);
                               rs[i] = std::move(r);
                             })
                    .ok());
  }
  ASSERT_TRUE((*stream)->Finish().ok());
  check(rs);
}

TEST_F(DaemonTest, HeldKeysLifecycle) {
  // Held keys need an identity: the Unix socket's is "local" (plain TCP is anonymous).
  auto c = Connect({"unix:" + (daemon_->dir() / "pqcd.sock")});
  const std::string id = "client-test-" + std::to_string(getpid());
  auto kp = c->KeyGen({Algorithm::kMlDsa65, {}, true, id, {{"team", "client"}}});
  ASSERT_TRUE(kp.ok()) << kp.status();
  EXPECT_EQ(kp->key_id, id);
  EXPECT_TRUE(kp->private_key.empty());
  SignOp s;
  s.algorithm = Algorithm::kMlDsa65;
  s.key = Key::Held(id);
  s.message = "m";
  auto sig = c->Sign(s);
  ASSERT_TRUE(sig.ok()) << sig.status();
  VerifyOp v;
  v.algorithm = Algorithm::kMlDsa65;
  v.key = Key::Raw(kp->public_key);
  v.message = "m";
  v.signature = sig->signature;
  EXPECT_TRUE(c->Verify(v)->valid);
  auto list = c->ListKeys({{"team", "client"}});
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].key_id, id);
  auto rotated = c->RotateKey(id);
  ASSERT_TRUE(rotated.ok()) << rotated.status();
  EXPECT_GT(rotated->version, kp->key_version);
  auto info = c->GetPublicKey(id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->public_key, rotated->public_key);
  auto deleted = c->DeleteKey(id);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 2u);
  EXPECT_EQ(c->GetPublicKey(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c->Sign(s).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DaemonTest, ErrorsHealthAndUnixSocket) {
  auto c = Connect({daemon_->target()});
  auto bad = c->Encaps({Algorithm::kMlKem768, Key::Raw("short")});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  EXPECT_EQ(*c->Health(), HealthStatus::kServing);
  auto u = Connect({"unix:" + (daemon_->dir() / "pqcd.sock")});
  auto h = u->Hash({Algorithm::kSm3, "abc", 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(Hex(h->digest), "66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0");
}

TEST(DaemonFleet, RoundRobinReachesEveryDaemon) {
  Daemon a, b;
  ASSERT_TRUE(a.Start({})) << a.log();
  ASSERT_TRUE(b.Start({})) << b.log();
  auto c = Connect({a.target(), b.target()});
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(c->Hash({Algorithm::kSha3_256, "rr", 0}, {.wait_for_ready = true}).ok());
  }
  const std::string sample = "pqcd_requests_total{algorithm=\"SHA3-256\",code=\"OK\",rpc=\"Hash\"}";
  const double na =
      pqcd::testing::MetricValue(pqcd::testing::HttpGet(a.metrics_port(), "/metrics"), sample);
  const double nb =
      pqcd::testing::MetricValue(pqcd::testing::HttpGet(b.metrics_port(), "/metrics"), sample);
  EXPECT_GT(na, 0) << "metrics of daemon a";
  EXPECT_GT(nb, 0) << "metrics of daemon b";
}

// ---- The pqc CLI ----------------------------------------------------------------------------
std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(DaemonTest, CliExitCodesAndRoundTrips) {
  const std::string pqc = std::string(PQC_CLI) + " --target " + daemon_->target();
  const auto& dir = daemon_->dir();
  std::function<int(const std::string&)> run = [&](const std::string& args) {
    return Shell(pqc + " " + args);
  };
  ASSERT_EQ(run("keygen -a ML-KEM-768 --pub-out " + (dir / "ek") + " --priv-out " + (dir / "dk")),
            0);
  ASSERT_EQ(run("encaps -a ML-KEM-768 --pub " + (dir / "ek") + " --ct-out " + (dir / "ct") +
                " --ss-out " + (dir / "ss1")),
            0);
  ASSERT_EQ(run("decaps -a ML-KEM-768 --priv " + (dir / "dk") + " --ct " + (dir / "ct") +
                " --out " + (dir / "ss2")),
            0);
  EXPECT_EQ(Slurp(dir / "ss1").size(), 32u);
  EXPECT_EQ(Slurp(dir / "ss1"), Slurp(dir / "ss2"));

  ASSERT_EQ(run("keygen -a ML-DSA-44 --seed " + std::string(64, 'a') + " --pub-out " +
                (dir / "pk") + " --priv-out " + (dir / "sk")),
            0);
  std::ofstream(dir / "msg") << "message";
  ASSERT_EQ(run("sign -a ML-DSA-44 --deterministic --context app --priv " + (dir / "sk") +
                " --in " + (dir / "msg") + " -o " + (dir / "sig")),
            0);
  EXPECT_EQ(run("verify -a ML-DSA-44 --context app --pub " + (dir / "pk") + " --in " +
                (dir / "msg") + " --sig " + (dir / "sig") + " > /dev/null"),
            0);
  EXPECT_EQ(run("verify -a ML-DSA-44 --context nope --pub " + (dir / "pk") + " --in " +
                (dir / "msg") + " --sig " + (dir / "sig") + " > /dev/null"),
            1);
  // Hex on stdout, --json, stdin input.
  ASSERT_EQ(run("hash -a SHA3-256 --text abc > " + (dir / "h1")), 0);
  EXPECT_EQ(Slurp(dir / "h1"),
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532\n");
  ASSERT_EQ(Shell("printf abc | " + pqc + " --json hash -a SHA3-256 > " + (dir / "h2")), 0);
  auto j = nlohmann::json::parse(Slurp(dir / "h2"));
  EXPECT_EQ(j["digest"], "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532");
  ASSERT_EQ(Shell("printf 616263 | " + pqc +
                  " --in-format hex --out-format base64 hash -a "
                  "SHA2-256 > " +
                  (dir / "h3")),
            0);
  EXPECT_EQ(Slurp(dir / "h3"), "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=\n");
  // Held keys through the CLI (over the Unix socket: plain TCP has no identity to own keys).
  EXPECT_EQ(run("--json keygen -a ML-KEM-512 --hold 2> /dev/null"), 3);  // PERMISSION_DENIED
  const std::string upqc = std::string(PQC_CLI) + " --target unix:" + (dir / "pqcd.sock");
  run = [&](const std::string& args) { return Shell(upqc + " " + args); };
  ASSERT_EQ(run("--json keygen -a ML-KEM-512 --hold --key-id cli-key > " + (dir / "kg")), 0);
  EXPECT_EQ(nlohmann::json::parse(Slurp(dir / "kg"))["key_id"], "cli-key");
  EXPECT_EQ(run("keys list > /dev/null"), 0);
  EXPECT_EQ(run("keys rotate cli-key > /dev/null"), 0);
  EXPECT_EQ(run("--json keys delete cli-key > " + (dir / "del")), 0);
  EXPECT_EQ(nlohmann::json::parse(Slurp(dir / "del"))["deleted_versions"], 2);
  EXPECT_EQ(run("keys get cli-key 2> /dev/null"), 3);
  EXPECT_EQ(run("health > /dev/null"), 0);
  // Usage errors: 2. Transport errors: 3.
  EXPECT_EQ(run("keygen 2> /dev/null"), 2);
  EXPECT_EQ(run("keygen -a NOPE 2> /dev/null"), 2);
  EXPECT_EQ(run("nosuchcommand 2> /dev/null"), 2);
  EXPECT_EQ(run("decaps -a ML-KEM-768 --priv /nonexistent 2> /dev/null"), 2);
  EXPECT_EQ(Shell(std::string(PQC_CLI) + " --target 127.0.0.1:1 --timeout 2 health 2> /dev/null"),
            3);
  EXPECT_EQ(Shell(std::string(PQC_CLI) + " --help > /dev/null"), 0);
  EXPECT_EQ(Shell(std::string(PQC_CLI) + " sign --help > /dev/null"), 0);
}

#ifdef PQC_LOAD
TEST_F(DaemonTest, LoadGeneratorShortRun) {
  const auto& dir = daemon_->dir();
  for (const std::string style : {"unary", "batch --batch-size 4", "stream --inflight 4"}) {
    SCOPED_TRACE(style);
    ASSERT_EQ(Shell(std::string(PQC_LOAD) + " --targets " + daemon_->target() +
                    " --op ML-KEM-768:decaps=2,ML-DSA-44:verify=1,SHA3-256:hash=1 -c 4 "
                    "--duration 700ms --warmup 200ms --quiet --json --style " +
                    style + " > " + (dir / "load.json")),
              0);
    auto j = nlohmann::json::parse(Slurp(dir / "load.json"));
    EXPECT_GT(j["requests"].get<uint64_t>(), 0u);
    EXPECT_EQ(j["error_total"].get<uint64_t>(), 0u);
    EXPECT_GT(j["latency_us"]["p99"].get<double>(), 0.0);
  }
  // Open loop.
  ASSERT_EQ(Shell(std::string(PQC_LOAD) + " --targets " + daemon_->target() +
                  " --op SHA3-256:hash --rate 200 --duration 500ms --warmup 0 --quiet --json > " +
                  (dir / "open.json")),
            0);
  auto j = nlohmann::json::parse(Slurp(dir / "open.json"));
  EXPECT_NEAR(j["requests"].get<double>(), 100, 30);
}
#endif

}  // namespace
}  // namespace pqcd::client
