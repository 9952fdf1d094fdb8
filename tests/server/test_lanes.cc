// The shared-memory lane against the real daemon (--unix PATH serves lanes on PATH.lane), through
// libpqcd_lane's C API: every operation compared with gRPC's answers, held keys under the lane's
// identity, errors, limits, --lanes off, and the drain.
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "daemon_fixture.h"
#include "gtest/gtest.h"
#include "lane_test_support.h"
#include "pqcd/client/client.h"
#include "pqcd_lane.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;

size_t SeedBytes(Algorithm alg) {
  for (const kernels::AlgorithmFacts& f : kernels::kAlgorithms) {
    if (f.api_value == alg) return f.seed_bytes;
  }
  return 0;
}

class LaneTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon;
    sock_ = daemon_->dir() / "pqcd.sock";
    ASSERT_TRUE(daemon_->Start({"--unix", sock_, "--unix-mode", "0600", "--log-level", "warn",
                                "--max-lanes-per-identity", "4"}));
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Terminate(), 0) << daemon_->log();
    delete daemon_;
  }
  static std::unique_ptr<Crypto::Stub> UnixCrypto() {
    return Crypto::NewStub(
        grpc::CreateChannel("unix:" + sock_, grpc::InsecureChannelCredentials()));
  }
  static Daemon* daemon_;
  static std::string sock_;
};
Daemon* LaneTest::daemon_ = nullptr;
std::string LaneTest::sock_;

TEST_F(LaneTest, EveryOperationAnswersAsGrpcDoes) {
  Lane lane(sock_);
  ASSERT_TRUE(lane.ok()) << lane.error();
  auto grpc = daemon_->Crypto();

  // Hash: the published SHA3-256("abc"), and SHAKE128 with an output length.
  LaneAnswer h = lane.Call(HashRequestOf(SHA3_256, "abc"));
  ASSERT_EQ(h.code, 0) << h.message;
  EXPECT_EQ(Hex(h.out[0]), "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532");
  auto shake = HashRequestOf(SHAKE128, "abc");
  shake.output_length = 100;
  LaneAnswer s = lane.Call(shake);
  ASSERT_EQ(s.code, 0) << s.message;
  EXPECT_EQ(s.out[0].size(), 100u);

  for (Algorithm alg : {ML_KEM_512, ML_KEM_768, ML_KEM_1024, X25519_MLKEM768}) {
    SCOPED_TRACE(Algorithm_Name(alg));
    // KeyGen from a seed on the lane equals gRPC's.
    const std::string seed(SeedBytes(alg), '\x42');
    LaneAnswer kg = lane.Call(KeyGenRequestOf(alg, seed));
    ASSERT_EQ(kg.code, 0) << kg.message;
    grpc::ClientContext c1;
    KeyGenRequest kreq;
    kreq.set_algorithm(alg);
    kreq.set_seed(seed);
    KeyGenResponse kresp;
    ASSERT_TRUE(grpc->KeyGen(&c1, kreq, &kresp).ok());
    EXPECT_EQ(kg.out[0], kresp.public_key());
    EXPECT_EQ(kg.out[1], kresp.private_key());
    // Encaps on the lane, Decaps on gRPC and on the lane: one shared secret.
    LaneAnswer enc = lane.Call(EncapsRequestOf(alg, kg.out[0]));
    ASSERT_EQ(enc.code, 0) << enc.message;
    grpc::ClientContext c2;
    DecapsRequest dreq;
    dreq.set_algorithm(alg);
    dreq.set_private_key(kg.out[1]);
    dreq.set_ciphertext(enc.out[0]);
    DecapsResponse dresp;
    ASSERT_TRUE(grpc->Decaps(&c2, dreq, &dresp).ok());
    EXPECT_EQ(dresp.shared_secret(), enc.out[1]);
    LaneAnswer dec = lane.Call(DecapsRequestOf(alg, kg.out[1], enc.out[0]));
    ASSERT_EQ(dec.code, 0) << dec.message;
    EXPECT_EQ(dec.out[0], enc.out[1]);
  }

  for (Algorithm alg : {ML_DSA_44, ML_DSA_65, ML_DSA_87, SLH_DSA_SHAKE_128F}) {
    SCOPED_TRACE(Algorithm_Name(alg));
    grpc::ClientContext c1;
    KeyGenRequest kreq;
    kreq.set_algorithm(alg);
    KeyGenResponse kresp;
    ASSERT_TRUE(grpc->KeyGen(&c1, kreq, &kresp).ok());
    // Deterministic signatures: the lane's equals gRPC's.
    auto sreq = SignRequestOf(alg, kresp.private_key(), "message on the lane", "ctx");
    sreq.flags |= PQCD_LANE_DETERMINISTIC;
    LaneAnswer sig = lane.Call(sreq);
    ASSERT_EQ(sig.code, 0) << sig.message;
    grpc::ClientContext c2;
    SignRequest greq;
    greq.set_algorithm(alg);
    greq.set_private_key(kresp.private_key());
    greq.set_message("message on the lane");
    greq.set_context("ctx");
    greq.set_deterministic(true);
    SignResponse gresp;
    ASSERT_TRUE(grpc->Sign(&c2, greq, &gresp).ok());
    EXPECT_EQ(sig.out[0], gresp.signature());
    LaneAnswer ok = lane.Call(
        VerifyRequestOf(alg, kresp.public_key(), "message on the lane", sig.out[0], "ctx"));
    ASSERT_EQ(ok.code, 0) << ok.message;
    EXPECT_TRUE(ok.valid);
    LaneAnswer bad =
        lane.Call(VerifyRequestOf(alg, kresp.public_key(), "message on the lane", sig.out[0], "x"));
    ASSERT_EQ(bad.code, 0) << bad.message;
    EXPECT_FALSE(bad.valid);
  }

  // The lane's requests count where gRPC's do.
  const std::string m = HttpGet(daemon_->metrics_port(), "/metrics");
  EXPECT_GT(MetricValue(m, "pqcd_lane_requests_total{code=\"OK\"}"), 20) << m;
  EXPECT_GT(MetricValue(m, "pqcd_operations_total{algorithm=\"ML-KEM-768\",operation=\"decaps\"}"),
            1)
      << m;
  EXPECT_GE(MetricValue(m, "pqcd_lanes{state=\"open\"}"), 1) << m;
}

TEST_F(LaneTest, PipelinedRequestsAllComeBack) {
  Lane lane(sock_, 16);
  ASSERT_TRUE(lane.ok()) << lane.error();
  ASSERT_EQ(pqcd_lane_slots(lane.get()), 16u);
  std::vector<std::string> inputs;
  for (int i = 0; i < 200; ++i) inputs.push_back("item " + std::to_string(i));
  std::map<uint64_t, std::string> digests;
  size_t next = 0;
  while (digests.size() < inputs.size()) {
    while (next < inputs.size()) {
      auto rq = HashRequestOf(SHA3_256, inputs[next]);
      rq.tag = next;
      const int rc = pqcd_lane_submit(lane.get(), &rq.c());
      if (rc == PQCD_LANE_EFULL) break;
      ASSERT_EQ(rc, 0) << pqcd_lane_strerror(rc);
      ++next;
    }
    pqcd_lane_result r;
    ASSERT_EQ(pqcd_lane_wait(lane.get(), 10'000'000, &r), 0);
    ASSERT_EQ(r.code, 0);
    digests[r.tag] = std::string(reinterpret_cast<const char*>(r.out[0]), r.out_len[0]);
    pqcd_lane_release(lane.get(), &r);
  }
  Lane check(sock_);
  for (int i : {0, 77, 199}) {
    EXPECT_EQ(digests[static_cast<uint64_t>(i)],
              check.Call(HashRequestOf(SHA3_256, inputs[static_cast<size_t>(i)])).out[0]);
  }
}

// The TLS provider's way: a one-slot lane, no spinning (pqcd_lane_set_spin_us), one call at a
// time with gaps between them. After a few polls that find nothing the daemon's worker blocks at
// once; every call must still wake it (the doorbell) and be answered.
TEST_F(LaneTest, OneSlotLaneWithoutSpinIsAnsweredEveryCall) {
  Lane lane(sock_, 1);
  ASSERT_TRUE(lane.ok()) << lane.error();
  ASSERT_EQ(pqcd_lane_slots(lane.get()), 1u);
  EXPECT_EQ(pqcd_lane_set_spin_us(lane.get(), -1), PQCD_LANE_EINVAL);
  EXPECT_EQ(pqcd_lane_set_spin_us(lane.get(), 1'000'001), PQCD_LANE_EINVAL);
  EXPECT_EQ(pqcd_lane_set_spin_us(nullptr, 0), PQCD_LANE_EINVAL);
  ASSERT_EQ(pqcd_lane_set_spin_us(lane.get(), 0), 0);
  auto grpc = daemon_->Crypto();
  for (int i = 0; i < 40; ++i) {
    const std::string data = "call " + std::to_string(i);
    LaneAnswer a = lane.Call(HashRequestOf(SHA3_256, data), 10'000'000);
    ASSERT_EQ(a.code, 0) << i << ": " << a.message;
    grpc::ClientContext ctx;
    HashRequest req;
    req.set_algorithm(SHA3_256);
    req.set_data(data);
    HashResponse resp;
    ASSERT_TRUE(grpc->Hash(&ctx, req, &resp).ok());  // also a gap between the lane's calls
    EXPECT_EQ(a.out[0], resp.digest()) << i;
  }
}

// A key given again is prepared once per run on a lane (the lane keeps its own copy of the last
// key): runs of two keys, interleaved, pipelined through the same slots, each answer right.
TEST_F(LaneTest, RunsOfAGivenKeyAnswerAsSingleRequests) {
  Lane lane(sock_, 4);
  ASSERT_TRUE(lane.ok()) << lane.error();
  struct Pair {
    std::string dk, ct, ss;
  };
  std::vector<Pair> pairs;
  for (char seed : {'\x01', '\x02'}) {
    LaneAnswer kg = lane.Call(KeyGenRequestOf(ML_KEM_768, std::string(64, seed)));
    ASSERT_EQ(kg.code, 0) << kg.message;
    LaneAnswer enc = lane.Call(EncapsRequestOf(ML_KEM_768, kg.out[0]));
    ASSERT_EQ(enc.code, 0) << enc.message;
    pairs.push_back({kg.out[1], enc.out[0], enc.out[1]});
  }
  const int order[] = {0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0};
  std::map<uint64_t, int> want;
  std::vector<LaneRequest> requests;
  for (int which : order)
    requests.push_back(DecapsRequestOf(ML_KEM_768, pairs[which].dk, pairs[which].ct));
  size_t next = 0, done = 0;
  while (done < requests.size()) {
    while (next < requests.size()) {
      requests[next].tag = next;
      if (pqcd_lane_submit(lane.get(), &requests[next].c()) != 0) break;
      want[next] = order[next];
      ++next;
    }
    pqcd_lane_result r;
    ASSERT_EQ(pqcd_lane_wait(lane.get(), 30'000'000, &r), 0);
    ASSERT_EQ(r.code, 0) << std::string(r.message, r.message_len);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.out[0]), r.out_len[0]),
              pairs[static_cast<size_t>(want[r.tag])].ss)
        << "request " << r.tag;
    pqcd_lane_release(lane.get(), &r);
    ++done;
  }
  // The same key with a wrong-sized ciphertext still fails alone.
  LaneAnswer bad = lane.Call(DecapsRequestOf(ML_KEM_768, pairs[0].dk, "short"));
  EXPECT_EQ(bad.code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT)) << bad.message;
}

TEST_F(LaneTest, HeldKeysAreTheLaneIdentitys) {
  Lane lane(sock_);
  ASSERT_TRUE(lane.ok()) << lane.error();
  // Created on the lane, held under unix:uid:<this uid>, used on the lane and on gRPC (Unix
  // socket, the same identity).
  auto kg = KeyGenRequestOf(ML_DSA_65, "");
  kg.flags |= PQCD_LANE_HOLD;
  kg.key_id = "lane-key-1";
  LaneAnswer created = lane.Call(kg);
  ASSERT_EQ(created.code, 0) << created.message;
  EXPECT_EQ(created.key_id, "lane-key-1");
  EXPECT_EQ(created.key_version, 1u);
  EXPECT_TRUE(created.out[1].empty()) << "a held key's private half never leaves the daemon";
  auto sign = SignRequestOf(ML_DSA_65, "", "held", "");
  sign.flags |= PQCD_LANE_HELD_KEY;
  sign.key_id = "lane-key-1";
  LaneAnswer sig = lane.Call(sign);
  ASSERT_EQ(sig.code, 0) << sig.message;
  EXPECT_EQ(sig.key_version, 1u);
  auto unix_crypto = UnixCrypto();
  grpc::ClientContext c;
  VerifyRequest v;
  v.mutable_key_ref()->set_key_id("lane-key-1");
  v.set_message("held");
  v.set_signature(sig.out[0]);
  VerifyResponse vr;
  ASSERT_TRUE(unix_crypto->Verify(&c, v, &vr).ok());
  EXPECT_TRUE(vr.valid());
  // Another identity's key: refused as on gRPC.
  auto foreign = sign;
  foreign.owner = "unix:uid:4242";
  LaneAnswer refused = lane.Call(foreign);
  EXPECT_EQ(refused.code, static_cast<int>(grpc::StatusCode::PERMISSION_DENIED)) << refused.message;
  auto missing = sign;
  missing.key_id = "no-such-key";
  LaneAnswer nf = lane.Call(missing);
  EXPECT_EQ(nf.code, static_cast<int>(grpc::StatusCode::NOT_FOUND)) << nf.message;
}

TEST_F(LaneTest, BadRequestsAreInvalidArgumentNamingTheField) {
  Lane lane(sock_);
  ASSERT_TRUE(lane.ok()) << lane.error();
  LaneAnswer a =
      lane.Call(DecapsRequestOf(ML_KEM_768, std::string(100, 'k'), std::string(10, 'c')));
  EXPECT_EQ(a.code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_NE(a.message.find("private_key"), std::string::npos) << a.message;
  LaneRequest odd = HashRequestOf(SHA3_256, "x");
  odd.op = 99;
  LaneAnswer b = lane.Call(odd);
  EXPECT_EQ(b.code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_NE(b.message.find("op:"), std::string::npos) << b.message;
  LaneRequest held_with_key = SignRequestOf(ML_DSA_44, "key bytes", "m", "");
  held_with_key.flags |= PQCD_LANE_HELD_KEY;
  held_with_key.key_id = "k";
  EXPECT_EQ(lane.Call(held_with_key).code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  // Larger than the lane's inputs: the library refuses it before it reaches a slot.
  std::string big(pqcd_lane_max_input(lane.get()) + 1, 'x');
  auto too_big = HashRequestOf(SHA3_256, big);
  EXPECT_EQ(pqcd_lane_submit(lane.get(), &too_big.c()), PQCD_LANE_EINVAL);
}

TEST_F(LaneTest, LanesPerIdentityAreCappedAndFreedOnClose) {
  std::vector<std::unique_ptr<Lane>> lanes;
  for (int i = 0; i < 4; ++i) {
    lanes.push_back(std::make_unique<Lane>(sock_));
    ASSERT_TRUE(lanes.back()->ok()) << lanes.back()->error();
  }
  Lane fifth(sock_);
  EXPECT_FALSE(fifth.ok());
  EXPECT_NE(fifth.error().find("--max-lanes-per-identity"), std::string::npos) << fifth.error();
  lanes.pop_back();  // closed: the daemon frees it at once
  ASSERT_TRUE(Eventually([&] { return Lane(sock_).ok(); }, std::chrono::seconds(10)));
  const std::string m = HttpGet(daemon_->metrics_port(), "/metrics");
  EXPECT_GE(MetricValue(m, "pqcd_lanes_refused_total{reason=\"identity_limit\"}"), 1) << m;
}

TEST(LaneOptions, LanesOffServesNone) {
  Daemon d;
  const std::string sock = d.dir() / "pqcd.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--lanes", "off", "--log-level", "warn"}));
  struct stat st {};
  EXPECT_NE(::stat((sock + ".lane").c_str(), &st), 0);
  Lane lane(sock);
  EXPECT_FALSE(lane.ok());
  EXPECT_NE(lane.error().find("--lanes off"), std::string::npos) << lane.error();
  EXPECT_TRUE(HashServedOnUnix(sock));
  EXPECT_EQ(d.Terminate(), 0);
}

TEST(LaneOptions, ALaneIsChargedToTheMemoryAccount) {
  Daemon d;
  const std::string sock = d.dir() / "pqcd.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--log-level", "warn", "--memory-per-identity", "1"}));
  Lane big(sock, 64);
  EXPECT_FALSE(big.ok());
  EXPECT_NE(big.error().find("--memory-per-identity"), std::string::npos) << big.error();
  Lane small(sock, 1);
  EXPECT_TRUE(small.ok()) << small.error();
  const std::string m = HttpGet(d.metrics_port(), "/metrics");
  EXPECT_EQ(MetricValue(m, "pqcd_lanes_refused_total{reason=\"memory\"}"), 1) << m;
  EXPECT_EQ(MetricValue(m, "pqcd_lanes_refused_total{reason=\"protocol\"}"), 0) << m;
  EXPECT_EQ(d.Terminate(), 0);
}

TEST(LaneOptions, DrainAnswersOrClosesEveryLaneRequest) {
  Daemon d;
  const std::string sock = d.dir() / "pqcd.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--log-level", "warn", "--grace-period", "10"}));
  Lane lane(sock, 8);
  ASSERT_TRUE(lane.ok()) << lane.error();
  ASSERT_EQ(lane.Call(HashRequestOf(SHA3_256, "before")).code, 0);
  // Slow requests in flight while the daemon is told to stop: each is answered (done, or
  // UNAVAILABLE) or the lane reports that it closed; none is lost silently.
  for (int i = 0; i < 8; ++i) {
    auto rq = KeyGenRequestOf(SLH_DSA_SHA2_128S, "");
    rq.tag = static_cast<uint64_t>(i);
    ASSERT_EQ(pqcd_lane_submit(lane.get(), &rq.c()), 0);
  }
  d.Signal(SIGTERM);
  int answered = 0;
  for (;;) {
    pqcd_lane_result r;
    const int rc = pqcd_lane_wait(lane.get(), 30'000'000, &r);
    if (rc != 0) {
      EXPECT_EQ(rc, PQCD_LANE_ECLOSED) << pqcd_lane_strerror(rc);
      break;
    }
    EXPECT_TRUE(r.code == 0 || r.code == static_cast<int>(grpc::StatusCode::UNAVAILABLE))
        << r.code << " " << std::string(r.message, r.message_len);
    ++answered;
    pqcd_lane_release(lane.get(), &r);
    if (answered == 8) break;
  }
  EXPECT_GT(answered, 0);
  auto after = HashRequestOf(SHA3_256, "after");
  pqcd_lane_result r;
  const int rc = pqcd_lane_submit(lane.get(), &after.c());
  if (rc == 0) {
    const int w = pqcd_lane_wait(lane.get(), 30'000'000, &r);
    if (w == 0) {
      EXPECT_EQ(r.code, static_cast<int>(grpc::StatusCode::UNAVAILABLE));
      pqcd_lane_release(lane.get(), &r);
    } else {
      EXPECT_EQ(w, PQCD_LANE_ECLOSED);
    }
  } else {
    EXPECT_EQ(rc, PQCD_LANE_ECLOSED);
  }
  EXPECT_EQ(d.Wait(std::chrono::seconds(60)), 0) << d.log();
}

}  // namespace
}  // namespace pqcd::testing

namespace pqcd::testing {
namespace {

// The C++ client with ClientOptions::lane: the same calls and statuses as on gRPC, over lanes
// when the daemon offers them, over gRPC when it does not.
TEST(LaneClient, TheClientUsesLanesWhenOfferedAndGrpcOtherwise) {
  for (const bool lanes_on : {true, false}) {
    SCOPED_TRACE(lanes_on ? "--lanes on" : "--lanes off");
    Daemon d;
    const std::string sock = d.dir() / "pqcd.sock";
    ASSERT_TRUE(
        d.Start({"--unix", sock, "--log-level", "warn", "--lanes", lanes_on ? "on" : "off"}));
    client::ClientOptions o;
    o.targets = {"unix:" + sock};
    o.lane.enabled = true;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status();
    if (lanes_on) {
      EXPECT_EQ((*c)->lane_status(), "lanes");
    } else {
      EXPECT_EQ((*c)->lane_status().rfind("gRPC: ", 0), 0u) << (*c)->lane_status();
    }
    client::KeyGenOp kg;
    kg.algorithm = client::Algorithm::kMlKem768;
    auto pair = (*c)->Run(kg);
    ASSERT_TRUE(pair.ok()) << pair.status();
    const auto& kp = std::get<client::KeyPair>(*pair);
    client::EncapsOp enc;
    enc.algorithm = client::Algorithm::kMlKem768;
    enc.key = client::Key::Raw(kp.public_key);
    // Async, through the typed call.
    std::promise<absl::StatusOr<client::EncapsResult>> p;
    (*c)->EncapsAsync(enc, [&](absl::StatusOr<client::EncapsResult> r) { p.set_value(r); });
    auto e = p.get_future().get();
    ASSERT_TRUE(e.ok()) << e.status();
    client::DecapsOp dec;
    dec.algorithm = client::Algorithm::kMlKem768;
    dec.key = client::Key::Raw(kp.private_key);
    dec.ciphertext = e->ciphertext;
    auto ss = (*c)->Run(dec);
    ASSERT_TRUE(ss.ok()) << ss.status();
    EXPECT_EQ(std::get<client::DecapsResult>(*ss).shared_secret, e->shared_secret);
    // A bad key: INVALID_ARGUMENT naming the field, either way.
    dec.key = client::Key::Raw("short");
    auto bad = (*c)->Run(dec);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("private_key"), std::string::npos) << bad.status();
    // A held key that does not exist: NOT_FOUND.
    client::SignOp sign;
    sign.algorithm = client::Algorithm::kMlDsa65;
    sign.key = client::Key::Held("no-such-key");
    sign.message = "m";
    auto nf = (*c)->Run(sign);
    EXPECT_EQ(nf.status().code(), absl::StatusCode::kNotFound) << nf.status();
    // An input longer than a lane carries goes by gRPC, with the same answer.
    client::HashOp big;
    big.algorithm = client::Algorithm::kSha3_256;
    big.data.assign(100000, 'x');
    auto h = (*c)->Run(big);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(std::get<client::HashResult>(*h).digest.size(), 32u);
    const std::string m = HttpGet(d.metrics_port(), "/metrics");
    if (lanes_on) {
      EXPECT_GE(MetricValue(m, "pqcd_lane_requests_total{code=\"OK\"}"), 3) << m;
    }
    c->reset();
    EXPECT_EQ(d.Terminate(), 0) << d.log();
  }
}

}  // namespace
}  // namespace pqcd::testing
