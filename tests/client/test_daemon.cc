// The client library, the pqc CLI and pqc-load against the real pqcd binary (loopback TCP and a
// Unix socket), using the server tests' daemon fixture.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "daemon_fixture.h"
#include "pqcd/client/client.h"
#include "pqcd/kernels/algorithms.h"

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

// ---- The batching client and Stream packing against the real daemon -------------------------
// Deterministic operations and their answers, computed once through plain unary calls.
struct Reference {
  std::string kem_dk, kem_ct, kem_ss, dsa_pk, dsa_sig;
  std::vector<std::string> data, digests;

  static Reference Make(Client& c) {
    Reference r;
    auto kem = c.KeyGen({Algorithm::kMlKem768, std::string(64, '\x11'), false, {}, {}});
    EXPECT_TRUE(kem.ok()) << kem.status();
    auto en = c.Encaps({Algorithm::kMlKem768, Key::Raw(kem->public_key)});
    EXPECT_TRUE(en.ok()) << en.status();
    r.kem_dk = kem->private_key;
    r.kem_ct = en->ciphertext;
    r.kem_ss = en->shared_secret;
    auto dsa = c.KeyGen({Algorithm::kMlDsa44, std::string(32, '\x22'), false, {}, {}});
    EXPECT_TRUE(dsa.ok()) << dsa.status();
    r.dsa_pk = dsa->public_key;
    SignOp s{
        Algorithm::kMlDsa44, Key::Raw(dsa->private_key), "signed", "", true, PreHash::kNone, false};
    auto sig = c.Sign(s);
    EXPECT_TRUE(sig.ok()) << sig.status();
    r.dsa_sig = sig->signature;
    for (int i = 0; i < 16; ++i) {
      r.data.push_back("data-" + std::to_string(i) + std::string(static_cast<size_t>(i * 7), 'x'));
      auto h = c.Hash({Algorithm::kSha3_256, r.data.back(), 0});
      EXPECT_TRUE(h.ok()) << h.status();
      r.digests.push_back(h.ok() ? h->digest : "");
    }
    return r;
  }

  // Operation i of a deterministic mix, and whether `got` is its right answer.
  Operation Op(int i) const {
    switch (i % 4) {
      case 0:
        return DecapsOp{Algorithm::kMlKem768, Key::Raw(kem_dk), kem_ct};
      case 1:
      case 2: {
        VerifyOp v;
        v.algorithm = Algorithm::kMlDsa44;
        v.key = Key::Raw(dsa_pk);
        v.message = i % 4 == 1 ? "signed" : "forged";
        v.signature = dsa_sig;
        return v;
      }
      default:
        return HashOp{Algorithm::kSha3_256, data[static_cast<size_t>(i) % data.size()], 0};
    }
  }
  bool Right(int i, const absl::StatusOr<Result>& got) const {
    if (!got.ok()) return false;
    switch (i % 4) {
      case 0:
        return std::get<DecapsResult>(*got).shared_secret == kem_ss;
      case 1:
        return std::get<VerifyResult>(*got).valid;
      case 2:
        return !std::get<VerifyResult>(*got).valid;
      default:
        return std::get<HashResult>(*got).digest == digests[static_cast<size_t>(i) % data.size()];
    }
  }
};

std::unique_ptr<Client> ConnectWith(const std::string& target, bool batching,
                                    BatchingOptions b = {}) {
  ClientOptions o;
  o.targets = {target};
  o.batching = b;
  o.batching.enabled = batching;
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

// threads x calls operations of the reference mix, half sync and half async; returns the number of
// wrong answers (each async call must complete exactly once).
int RunMix(Client& c, const Reference& ref, int threads, int calls) {
  std::atomic<int> wrong{0};
  std::mutex mu;
  std::condition_variable cv;
  int async_left = 0;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < calls; ++i) {
        const int k = t * calls + i;
        if (i % 2 == 0) {
          if (!ref.Right(k, c.Run(ref.Op(k)))) ++wrong;
          continue;
        }
        {
          std::lock_guard lock(mu);
          ++async_left;
        }
        auto once = std::make_shared<std::atomic<int>>(0);
        c.RunAsync(ref.Op(k), [&, k, once](absl::StatusOr<Result> r) {
          if (once->fetch_add(1) != 0 || !ref.Right(k, r)) ++wrong;
          std::lock_guard lock(mu);
          if (--async_left == 0) cv.notify_all();
        });
      }
    });
  }
  for (auto& th : pool) th.join();
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return async_left == 0; });
  return wrong.load();
}

TEST_F(DaemonTest, BatchingClientAgreesWithUnaryCalls) {
  auto plain = Connect({daemon_->target()});
  const Reference ref = Reference::Make(*plain);
  const std::string unix_target = "unix:" + (daemon_->dir() / "pqcd.sock");
  for (const std::string& target : {daemon_->target(), unix_target}) {
    SCOPED_TRACE(target);
    auto c = ConnectWith(target, /*batching=*/true);
    EXPECT_EQ(RunMix(*c, ref, 8, 500), 0);
    const StreamStats st = c->batching_stats();
    EXPECT_EQ(st.results_received, 8u * 500u);
    EXPECT_GE(st.streams_opened, 1u);
  }
  // Batching off: the same answers through unary calls.
  auto off = ConnectWith(daemon_->target(), /*batching=*/false);
  EXPECT_EQ(RunMix(*off, ref, 8, 100), 0);
  EXPECT_EQ(off->batching_stats().operations_sent, 0u);
}

TEST_F(DaemonTest, BatchingClientErrorsArePerCall) {
  auto c = ConnectWith(daemon_->target(), /*batching=*/true);
  auto plain = Connect({daemon_->target()});
  const Reference ref = Reference::Make(*plain);
  std::vector<std::future<absl::StatusOr<Result>>> good;
  std::vector<std::future<absl::StatusOr<EncapsResult>>> bad;
  for (int i = 0; i < 40; ++i) {
    auto p = std::make_shared<std::promise<absl::StatusOr<Result>>>();
    good.push_back(p->get_future());
    c->RunAsync(ref.Op(i), [p](absl::StatusOr<Result> r) { p->set_value(std::move(r)); });
    if (i % 10 == 0) {
      auto q = std::make_shared<std::promise<absl::StatusOr<EncapsResult>>>();
      bad.push_back(q->get_future());
      c->EncapsAsync({Algorithm::kMlKem768, Key::Raw("short")},
                     [q](absl::StatusOr<EncapsResult> r) { q->set_value(std::move(r)); });
    }
  }
  for (int i = 0; i < 40; ++i) EXPECT_TRUE(ref.Right(i, good[static_cast<size_t>(i)].get())) << i;
  for (auto& f : bad) {
    auto r = f.get();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find("public_key"), std::string::npos) << r.status();
  }
}

TEST(DaemonBatching, DeadlineExpiresWhileQueued) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--workers", "1"})) << d.log();
  // At most 16 operations in flight: the rest of the flood waits in the client, behind it the
  // 1 ms call, whose deadline passes there.
  auto c = ConnectWith(d.target(), /*batching=*/true, {.max_inflight = 16});
  std::atomic<int> left{300}, failed{0};
  for (int i = 0; i < 300; ++i) {
    c->KeyGenAsync({Algorithm::kMlDsa87, {}, false, {}, {}},
                   [&](absl::StatusOr<KeyPair> r) {
                     if (!r.ok()) ++failed;
                     --left;
                   },
                   {.timeout = absl::Seconds(120)});
  }
  auto late = c->Hash({Algorithm::kSha3_256, "late", 0}, {.timeout = absl::Milliseconds(1)});
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded) << late.status();
  while (left.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(failed.load(), 0);
  // The stream goes on.
  EXPECT_TRUE(c->Hash({Algorithm::kSha3_256, "after", 0}).ok());
}

TEST(DaemonBatching, DaemonRestartFailsInFlightCallsOnceThenReconnects) {
  Daemon d;
  const std::string sock = d.dir() / "restart.sock";
  ASSERT_TRUE(d.Start({"--unix", sock})) << d.log();
  const std::string tcp = d.target();
  for (const std::string& target : {tcp, "unix:" + sock}) {
    SCOPED_TRACE(target);
    auto c = ConnectWith(target, /*batching=*/true);
    ASSERT_TRUE(c->Hash({Algorithm::kSha3_256, "warm", 0}).ok());
    constexpr int kCalls = 400;
    std::vector<std::atomic<int>> completions(kCalls);
    std::vector<absl::StatusCode> codes(kCalls, absl::StatusCode::kUnknown);
    std::atomic<int> left{kCalls}, started{0};
    for (int i = 0; i < kCalls; ++i) {
      c->KeyGenAsync({Algorithm::kMlDsa87, {}, false, {}, {}},
                     [&, i](absl::StatusOr<KeyPair> r) {
                       codes[static_cast<size_t>(i)] = r.status().code();
                       completions[static_cast<size_t>(i)].fetch_add(1);
                       ++started;
                       --left;
                     },
                     {.timeout = absl::Seconds(60)});
    }
    while (started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    d.Kill9();
    while (left.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    int unavailable = 0;
    for (int i = 0; i < kCalls; ++i) {
      EXPECT_EQ(completions[static_cast<size_t>(i)].load(), 1) << i;
      const absl::StatusCode code = codes[static_cast<size_t>(i)];
      EXPECT_TRUE(code == absl::StatusCode::kOk || code == absl::StatusCode::kUnavailable)
          << i << ": " << absl::StatusCodeToString(code);
      unavailable += code == absl::StatusCode::kUnavailable;
    }
    std::printf("[restart] %s: %d of %d calls were in flight at the kill\n", target.c_str(),
                unavailable, kCalls);
    // The same port and socket again; the next calls open a new stream.
    ASSERT_TRUE(d.Start({"--listen", tcp, "--unix", sock})) << d.log();
    auto r = c->Hash({Algorithm::kSha3_256, "abc", 0},
                     {.timeout = absl::Seconds(20), .wait_for_ready = true});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(Hex(r->digest), "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532");
    EXPECT_GE(c->batching_stats().streams_opened, 2u);
  }
}

// ---- Lanes: the caller's deadline and a daemon that closed them -------------------------------

std::unique_ptr<Client> ConnectLane(const std::string& sock) {
  ClientOptions o;
  o.targets = {"unix:" + sock};
  o.lane.enabled = true;
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

double LaneOk(const Daemon& d) {
  return pqcd::testing::MetricValue(pqcd::testing::HttpGet(d.metrics_port(), "/metrics"),
                                    "pqcd_lane_requests_total{code=\"OK\"}");
}

// A frozen daemon (SIGSTOP) answers nothing: lane calls end at the caller's deadline, on the
// caller's side, sync and async; after SIGCONT the lane serves again (the late answers to the
// abandoned calls are dropped, their slots freed).
TEST(DaemonLane, DeadlineHoldsWhenTheDaemonIsFrozen) {
  Daemon d;
  const std::string sock = d.dir() / "frozen.sock";
  ASSERT_TRUE(d.Start({"--unix", sock})) << d.log();
  auto c = ConnectLane(sock);
  ASSERT_EQ(c->lane_status(), "lanes");
  auto kp = c->KeyGen({Algorithm::kMlKem768, {}, false, {}, {}});
  ASSERT_TRUE(kp.ok()) << kp.status();
  const EncapsOp encaps{.algorithm = Algorithm::kMlKem768, .key = Key::Raw(kp->public_key)};
  ASSERT_TRUE(c->Encaps(encaps).ok());

  ASSERT_EQ(::kill(d.pid(), SIGSTOP), 0);
  struct Cont {
    pid_t pid;
    ~Cont() { ::kill(pid, SIGCONT); }
  } cont{d.pid()};
  // SIGSTOP takes effect asynchronously: wait until every thread is stopped (state T).
  const auto stopped = [&] {
    const std::filesystem::path tasks = "/proc/" + std::to_string(d.pid()) + "/task";
    for (const auto& task : std::filesystem::directory_iterator(tasks)) {
      std::ifstream stat(task.path() / "stat");
      std::string line;
      std::getline(stat, line);
      const size_t paren = line.rfind(')');
      if (paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'T') {
        return false;
      }
    }
    return true;
  };
  for (int i = 0; i < 2000 && !stopped(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(stopped());
  constexpr int kAsync = 8;
  std::atomic<int> expired{0}, left{kAsync};
  const absl::Time t0 = absl::Now();
  for (int i = 0; i < kAsync; ++i) {
    c->EncapsAsync(encaps,
                   [&](absl::StatusOr<EncapsResult> r) {
                     expired += r.status().code() == absl::StatusCode::kDeadlineExceeded;
                     --left;
                   },
                   {.timeout = absl::Milliseconds(300)});
  }
  auto r = c->Encaps(encaps, {.timeout = absl::Milliseconds(300)});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  while (left.load() > 0 && absl::Now() - t0 < absl::Seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const absl::Duration took = absl::Now() - t0;
  EXPECT_EQ(left.load(), 0);
  EXPECT_EQ(expired.load(), kAsync);
  EXPECT_LT(took, absl::Seconds(3)) << "deadline 300 ms";
  std::printf("[lane frozen] %d calls ended DEADLINE_EXCEEDED after %s\n", kAsync + 1,
              absl::FormatDuration(took).c_str());

  ASSERT_EQ(::kill(d.pid(), SIGCONT), 0);
  const double before = LaneOk(d);
  absl::StatusOr<EncapsResult> again;
  for (int i = 0; i < 100; ++i) {  // the daemon may first drop the expired requests
    again = c->Encaps(encaps, {.timeout = absl::Seconds(5)});
    if (again.ok()) break;
  }
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_GT(LaneOk(d), before);
}

// A daemon that stopped closes the client's lanes; a restarted one on the same socket is used
// through a new lane (its lane metric counts the calls), whether it stopped cleanly or was killed.
TEST(DaemonLane, ReopensAfterTheDaemonRestarts) {
  Daemon d;
  const std::string sock = d.dir() / "restart.sock";
  ASSERT_TRUE(d.Start({"--unix", sock})) << d.log();
  auto c = ConnectLane(sock);
  ASSERT_EQ(c->lane_status(), "lanes");
  const HashOp hash{Algorithm::kSha3_256, "abc", 0};
  ASSERT_TRUE(c->Hash(hash).ok());
  for (const bool kill9 : {false, true}) {
    SCOPED_TRACE(kill9 ? "SIGKILL" : "SIGTERM");
    const std::string tcp = d.target();
    if (kill9) {
      d.Kill9();
    } else {
      d.Terminate();
    }
    // No daemon: the call fails (by lane or gRPC), it does not hang.
    auto down = c->Hash(hash, {.timeout = absl::Seconds(2)});
    EXPECT_FALSE(down.ok());
    ASSERT_TRUE(d.Start({"--listen", tcp, "--unix", sock})) << d.log();
    // At most the first call after the restart fails (a request written into a killed daemon's
    // lane before the client saw it go); the next ones go through a new lane.
    int failed = 0;
    absl::StatusOr<HashResult> r;
    for (int i = 0; i < 3; ++i) {
      r = c->Hash(hash, {.timeout = absl::Seconds(5)});
      if (r.ok()) break;
      ++failed;
    }
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_LE(failed, 1);
    const double before = LaneOk(d);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(c->Hash(hash).ok());
    EXPECT_GE(LaneOk(d), before + 10);
  }
}

// Needs the daemon's packed Stream messages: a callback's submissions leave packed (the stream
// holds writes while it delivers), and only a daemon that understands packing keeps them so.
TEST_F(DaemonTest, StreamPacksOperationsAndAgreesWithUnary) {
  auto plain = Connect({daemon_->target()});
  const Reference ref = Reference::Make(*plain);
  for (size_t max_pack : {1, 8, 64}) {
    SCOPED_TRACE("max_pack " + std::to_string(max_pack));
    auto stream = plain->OpenStream({.max_inflight = 256, .max_pack = max_pack});
    ASSERT_TRUE(stream.ok()) << stream.status();
    Stream* s = stream->get();
    constexpr int kOps = 100;
    std::atomic<int> wrong{0}, answered{0};
    auto check = [&](int k) {
      return [&, k](absl::StatusOr<Result> r) {
        if (!ref.Right(k, r)) ++wrong;
        ++answered;
      };
    };
    ASSERT_TRUE(s->Submit(ref.Op(3), [&](absl::StatusOr<Result> r) {
                   check(3)(std::move(r));
                   for (int k = 0; k < kOps; ++k) {
                     if (!s->Submit(ref.Op(k), check(k)).ok()) ++wrong;
                   }
                 }).ok());
    while (answered.load() < kOps + 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_TRUE(s->Finish().ok());
    EXPECT_EQ(wrong.load(), 0);
    const StreamStats st = s->stats();
    EXPECT_EQ(st.results_received, kOps + 1u);
    if (max_pack == 1) {
      EXPECT_EQ(st.messages_sent, kOps + 1u);
    } else {
      // Packed: 1 + ceil(100 / max_pack) messages (more would mean the daemon refused packing).
      EXPECT_EQ(st.messages_sent, 1 + (kOps + max_pack - 1) / max_pack);
    }
  }
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
  EXPECT_EQ(run("--json keygen -a ML-KEM-512 --hold > /dev/null"), 2);  // PERMISSION_DENIED
  const std::string upqc = std::string(PQC_CLI) + " --target unix:" + (dir / "pqcd.sock");
  run = [&](const std::string& args) { return Shell(upqc + " " + args); };
  ASSERT_EQ(run("--json keygen -a ML-KEM-512 --hold --key-id cli-key > " + (dir / "kg")), 0);
  EXPECT_EQ(nlohmann::json::parse(Slurp(dir / "kg"))["key_id"], "cli-key");
  EXPECT_EQ(run("keys list > /dev/null"), 0);
  EXPECT_EQ(run("keys rotate cli-key > /dev/null"), 0);
  EXPECT_EQ(run("--json keys delete cli-key > " + (dir / "del")), 0);
  EXPECT_EQ(nlohmann::json::parse(Slurp(dir / "del"))["deleted_versions"], 2);
  EXPECT_EQ(run("keys get cli-key 2> /dev/null"), 2);  // NOT_FOUND
  EXPECT_EQ(run("health > /dev/null"), 0);
  // --lane: the crypto commands over the daemon's shared-memory lane, the same answers.
  const auto lane_ok = [&] {
    return pqcd::testing::MetricValue(pqcd::testing::HttpGet(daemon_->metrics_port(), "/metrics"),
                                      "pqcd_lane_requests_total{code=\"OK\"}");
  };
  const double lane_before = lane_ok();
  ASSERT_EQ(Shell(upqc + " --lane --json hash -a SHA3-256 --text abc > " + (dir / "h4")), 0);
  EXPECT_EQ(Slurp(dir / "h4"), Slurp(dir / "h2"));
  EXPECT_GT(lane_ok(), lane_before);
  // Usage and input errors: 2. Transport errors: 3.
  EXPECT_EQ(run("keygen 2> /dev/null"), 2);
  EXPECT_EQ(run("keygen -a NOPE 2> /dev/null"), 2);
  EXPECT_EQ(run("nosuchcommand 2> /dev/null"), 2);
  EXPECT_EQ(run("decaps -a ML-KEM-768 --priv /nonexistent 2> /dev/null"), 2);
  EXPECT_EQ(Shell(std::string(PQC_CLI) + " --target 127.0.0.1:1 --timeout 2 health 2> /dev/null"),
            3);
  EXPECT_EQ(Shell(std::string(PQC_CLI) + " --help > /dev/null"), 0);
  EXPECT_EQ(Shell(std::string(PQC_CLI) + " sign --help > /dev/null"), 0);
  // Each command's --alg help lists every registry algorithm of its families and no other (it once
  // listed ML-KEM only, not the hybrids): one added to the registry is listed, or this fails.
  using pqcd::client::IsDsa;
  using pqcd::client::IsHash;
  using pqcd::client::IsKem;
  const struct {
    const char* command;
    std::function<bool(pqcd::client::Algorithm)> listed;
  } helps[] = {
      {"keygen", [](auto a) { return IsKem(a) || IsDsa(a); }},
      {"encaps", IsKem},
      {"decaps", IsKem},
      {"sign", IsDsa},
      {"verify", IsDsa},
      {"hash", IsHash},
      {"keys import", [](auto a) { return IsKem(a) || IsDsa(a); }},
  };
  for (const auto& [command, listed] : helps) {
    const std::string file = dir / "alg_help";
    ASSERT_EQ(Shell(std::string(PQC_CLI) + " " + command + " --help > " + file), 0) << command;
    const std::string help = Slurp(file);
    for (pqcd::client::Algorithm a : pqcd::client::AllAlgorithms()) {
      const std::string name(pqcd::client::AlgorithmName(a));
      // A hash name may be part of a signature name (SLH-DSA-SHA2-128s); the KEM and DSA names
      // are no part of another family's names.
      if (!listed(a) && IsHash(a)) continue;
      EXPECT_EQ(help.find(name) != std::string::npos, listed(a))
          << "pqc " << command << " --help, " << name << ":\n"
          << help;
    }
  }
}

// --format der|pem (docs/encodings.md): keys written as SubjectPublicKeyInfo / PKCS#8 and read
// back by the daemon; a held key imported from PEM and its public key fetched as PEM.
TEST_F(DaemonTest, CliKeyFormats) {
  const auto& dir = daemon_->dir();
  const std::string pqc = std::string(PQC_CLI) + " --target unix:" + (dir / "pqcd.sock");
  auto run = [&](const std::string& args) { return Shell(pqc + " " + args); };
  ASSERT_EQ(run("--format pem keygen -a ML-KEM-768 --pub-out " + (dir / "ek.pem") + " --priv-out " +
                (dir / "dk.pem")),
            0);
  EXPECT_TRUE(Slurp(dir / "ek.pem").starts_with("-----BEGIN PUBLIC KEY-----\n"));
  EXPECT_TRUE(Slurp(dir / "dk.pem").starts_with("-----BEGIN PRIVATE KEY-----\n"));
  ASSERT_EQ(run("--format pem encaps -a ML-KEM-768 --pub " + (dir / "ek.pem") + " --ct-out " +
                (dir / "fct") + " --ss-out " + (dir / "fss1")),
            0);
  ASSERT_EQ(run("--format pem decaps -a ML-KEM-768 --priv " + (dir / "dk.pem") + " --ct " +
                (dir / "fct") + " --out " + (dir / "fss2")),
            0);
  EXPECT_EQ(Slurp(dir / "fss1").size(), 32u);
  EXPECT_EQ(Slurp(dir / "fss1"), Slurp(dir / "fss2"));
  // DER files (binary) work the same way.
  ASSERT_EQ(run("--format der keygen -a ML-DSA-65 --pub-out " + (dir / "pk.der") + " --priv-out " +
                (dir / "sk.der")),
            0);
  EXPECT_EQ(Slurp(dir / "pk.der").substr(0, 1), "\x30");
  std::ofstream(dir / "fmsg") << "message";
  ASSERT_EQ(run("--format der sign -a ML-DSA-65 --priv " + (dir / "sk.der") + " --in " +
                (dir / "fmsg") + " -o " + (dir / "fsig")),
            0);
  EXPECT_EQ(run("--format der verify -a ML-DSA-65 --pub " + (dir / "pk.der") + " --in " +
                (dir / "fmsg") + " --sig " + (dir / "fsig") + " > /dev/null"),
            0);
  // Import from PEM, export the public key as PEM: the same text.
  ASSERT_EQ(run("--format pem keys import -a ML-KEM-768 --priv " + (dir / "dk.pem") +
                " --key-id pem-key > /dev/null"),
            0);
  ASSERT_EQ(run("--format pem keys get pem-key > " + (dir / "got.pem")), 0);
  EXPECT_EQ(Slurp(dir / "got.pem"), Slurp(dir / "ek.pem"));
  // A key of another algorithm is refused by the daemon (INVALID_ARGUMENT).
  EXPECT_NE(run("--format pem encaps -a ML-KEM-512 --pub " + (dir / "ek.pem") + " 2> /dev/null"),
            0);
}

// One run of the pqc CLI: its exit code, stdout and stderr. Its stdin is the file `in`
// (/dev/null unless given), never the test's own.
struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun Pqc(const pqcd::testing::TempDir& dir, const std::string& args,
           const std::string& in = "/dev/null") {
  CliRun r;
  r.code = Shell(std::string(PQC_CLI) + " " + args + " < " + in + " > " + (dir / "cli.out") +
                 " 2> " + (dir / "cli.err"));
  r.out = Slurp(dir / "cli.out");
  r.err = Slurp(dir / "cli.err");
  return r;
}

std::string Printed(const CliRun& r) {
  return "exit " + std::to_string(r.code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// Issue 45, item 7: inputs that are no file, two inputs on one stdin, and keygen combinations
// that would lose a key or leave one behind are refused (exit 2) before the daemon is called.
TEST_F(DaemonTest, CliRefusesBadInputsBeforeTheCall) {
  const auto& dir = daemon_->dir();
  const std::string pqc = "--target unix:" + (dir / "pqcd.sock") + " ";
  ASSERT_EQ(Pqc(dir, pqc + "keygen -a ML-DSA-44 --pub-out " + (dir / "in_pk") + " --seed-out " +
                         (dir / "in_seed"))
                .code,
            0);
  std::ofstream(dir / "in_msg") << "message";
  // A directory as the message: it was signed as the empty message.
  const std::string sign = pqc + "sign -a ML-DSA-44 --priv " + (dir / "in_seed");
  CliRun r = Pqc(dir, sign + " -i " + dir.path().string());
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_NE(r.err.find("'" + dir.path().string() + "'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("directory"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  // A missing file, named.
  r = Pqc(dir, sign + " -i " + (dir / "no_such_file"));
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_NE(r.err.find("no_such_file"), std::string::npos) << r.err;
  r = Pqc(dir, pqc + "hash -a SHA3-256 -i " + dir.path().string());
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_NE(r.err.find("'" + dir.path().string() + "'"), std::string::npos) << r.err;
  r = Pqc(dir, pqc + "verify -a ML-DSA-44 --pub " + (dir / "in_pk") + " --sig " +
                   dir.path().string() + " -i " + (dir / "in_msg"));
  EXPECT_EQ(r.code, 2) << Printed(r);
  // The key and the message both on stdin: the key was read and an empty message signed.
  for (const std::string& in : {std::string(" -i -"), std::string()}) {
    r = Pqc(dir, pqc + "sign -a ML-DSA-44 --priv -" + in, dir / "in_seed");
    EXPECT_EQ(r.code, 2) << in << ": " << Printed(r);
    EXPECT_NE(r.err.find("--priv and --in"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("stdin"), std::string::npos) << r.err;
  }
  r = Pqc(dir, pqc + "verify -a ML-DSA-44 --pub - --sig - -i " + (dir / "in_msg"), dir / "in_pk");
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_NE(r.err.find("--pub and --sig"), std::string::npos) << r.err;
  // A key from stdin with the message from a file is fine.
  r = Pqc(dir, "--json " + pqc + "sign -a ML-DSA-44 --priv - -i " + (dir / "in_msg"),
          dir / "in_seed");
  ASSERT_EQ(r.code, 0) << Printed(r);

  // keygen --hold with --priv-out / --seed-out wrote 0-byte files (the key stays in the daemon).
  for (const std::string out : {"--priv-out", "--seed-out"}) {
    const std::string file = dir / ("held" + out);
    r = Pqc(dir, pqc + "keygen -a ML-KEM-768 --hold --key-id held-out " + out + " " + file);
    EXPECT_EQ(r.code, 2) << out << ": " << Printed(r);
    EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--hold"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(file)) << file;
    EXPECT_EQ(Pqc(dir, pqc + "keys get held-out").code, 2) << "a key was made: " << out;
  }
  // A held key whose public key cannot be written as asked (X25519MLKEM768 has no PEM) was
  // generated and left behind.
  r = Pqc(dir, "--format pem " + pqc + "keygen -a X25519MLKEM768 --hold --key-id hybrid-pem " +
                   "--pub-out " + (dir / "hybrid.pem"));
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_NE(r.err.find("X25519MLKEM768"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--format"), std::string::npos) << r.err;
  r = Pqc(dir, pqc + "keys get hybrid-pem");
  EXPECT_EQ(r.code, 2) << "the key was left behind: " << Printed(r);
  // An output that cannot be written is found before the key is made.
  r = Pqc(dir,
          pqc + "keygen -a ML-KEM-768 --hold --key-id dir-out --pub-out " + dir.path().string());
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_EQ(Pqc(dir, pqc + "keys get dir-out").code, 2);
  // --key-id / --label without --hold: the daemon's answer named proto fields
  // ("key_id/labels: only with hold = true"); the CLI names its flags.
  r = Pqc(dir, pqc + "keygen -a ML-KEM-768 --key-id no-hold");
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_NE(r.err.find("--key-id"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--hold"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("hold = true"), std::string::npos) << r.err;
  r = Pqc(dir, pqc + "keygen -a ML-KEM-768 --label team=x");
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_NE(r.err.find("--label"), std::string::npos) << r.err;

  // --format pem keygen of SLH-DSA failed after generating (the key was lost): the PKCS#8 of
  // SLH-DSA is the private key itself (RFC 9909), not the seed. The files work with the daemon.
  r = Pqc(dir, "--format pem " + pqc + "keygen -a SLH-DSA-SHA2-128f --pub-out " +
                   (dir / "slh_pk.pem") + " --priv-out " + (dir / "slh_sk.pem"));
  ASSERT_EQ(r.code, 0) << Printed(r);
  EXPECT_TRUE(Slurp(dir / "slh_pk.pem").starts_with("-----BEGIN PUBLIC KEY-----\n"));
  EXPECT_TRUE(Slurp(dir / "slh_sk.pem").starts_with("-----BEGIN PRIVATE KEY-----\n"));
  r = Pqc(dir, "--format pem " + pqc + "sign -a SLH-DSA-SHA2-128f --priv " + (dir / "slh_sk.pem") +
                   " -i " + (dir / "in_msg") + " -o " + (dir / "slh_sig"));
  ASSERT_EQ(r.code, 0) << Printed(r);
  r = Pqc(dir, "--format pem " + pqc + "verify -a SLH-DSA-SHA2-128f --pub " + (dir / "slh_pk.pem") +
                   " -i " + (dir / "in_msg") + " --sig " + (dir / "slh_sig"));
  EXPECT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(r.out, "valid\n");
}

// Issue 45, item 8: the daemon's answers to bad input exit 2, failures to reach or run it 3;
// item 13: an unreachable daemon's error says how to name it; --json errors are JSON.
TEST_F(DaemonTest, CliExitCodesFollowTheStatusCode) {
  const auto& dir = daemon_->dir();
  const std::string pqc = "--target unix:" + (dir / "pqcd.sock") + " ";
  ASSERT_EQ(Pqc(dir, "--format pem " + pqc + "keygen -a ML-KEM-768 --pub-out " +
                         (dir / "x_ek.pem") + " --priv-out " + (dir / "x_dk.pem"))
                .code,
            0);
  std::ofstream(dir / "x_short") << "short";
  const std::string pem = Slurp(dir / "x_ek.pem");
  std::ofstream(dir / "x_trunc.pem") << pem.substr(0, pem.size() / 2);
  std::ofstream(dir / "x_msg") << "m";
  const std::string long_context(300, 'c');
  std::ofstream(dir / "x_long_ctx") << long_context;
  const struct {
    std::string args, code_name;
  } input_errors[] = {
      {"encaps -a ML-KEM-768 --pub " + (dir / "x_short"), "INVALID_ARGUMENT"},  // wrong size
      {"--format pem encaps -a ML-KEM-768 --pub " + (dir / "x_trunc.pem"), "INVALID_ARGUMENT"},
      {"--format pem encaps -a ML-KEM-512 --pub " + (dir / "x_ek.pem"), "INVALID_ARGUMENT"},
      {"encaps -a ML-KEM-768 --key-id no-such-key", "NOT_FOUND"},
      {"keys get no-such-key", "NOT_FOUND"},
      {"keys delete no-such-key", "NOT_FOUND"},
      {"health --service nope", "NOT_FOUND"},
      {"keys list --all-owners", "PERMISSION_DENIED"},  // not an --admin identity
  };
  for (const auto& [args, code_name] : input_errors) {
    CliRun r = Pqc(dir, pqc + args);
    EXPECT_EQ(r.code, 2) << args << ": " << Printed(r);
    EXPECT_NE(r.err.find(code_name), std::string::npos) << args << ": " << r.err;
    // The same as one JSON object on stdout.
    r = Pqc(dir, "--json " + pqc + args);
    EXPECT_EQ(r.code, 2) << args << ": " << Printed(r);
    const auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << args << ": " << Printed(r);
    EXPECT_EQ(j["error"]["code"], code_name) << j.dump();
    EXPECT_EQ(j["error"]["exit"], 2) << j.dump();
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty()) << j.dump();
  }
  // Over TCP a held key needs an identity: PERMISSION_DENIED, the caller's to fix.
  CliRun r = Pqc(dir, "--target " + daemon_->target() + " keygen -a ML-KEM-512 --hold");
  EXPECT_EQ(r.code, 2) << Printed(r);
  // A context over 255 bytes: refused by pqc, naming its flag.
  r = Pqc(dir, pqc + "sign -a ML-DSA-44 --priv " + (dir / "x_short") + " -i " + (dir / "x_msg") +
                   " --context " + long_context);
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_NE(r.err.find("--context: at most 255 bytes"), std::string::npos) << r.err;
  // pqc's own refusals under --json: code INVALID_ARGUMENT, exit 2; unknown algorithm names
  // list the command's algorithms (and only those).
  r = Pqc(dir, "--json " + pqc + "encaps -a NOPE --pub " + (dir / "x_short"));
  EXPECT_EQ(r.code, 2) << Printed(r);
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << Printed(r);
  EXPECT_EQ(j["error"]["code"], "INVALID_ARGUMENT");
  const std::string msg = j["error"]["message"];
  EXPECT_NE(msg.find("'NOPE'"), std::string::npos) << msg;
  for (Algorithm a : AllAlgorithms()) {
    const std::string name(AlgorithmName(a));
    if (IsHash(a)) continue;  // a hash name may be part of a signature name
    EXPECT_EQ(msg.find(name) != std::string::npos, IsKem(a)) << name << " in: " << msg;
  }
  r = Pqc(dir, pqc + "encaps -a ML-DSA-65 --pub " + (dir / "x_short"));
  EXPECT_EQ(r.code, 2) << Printed(r);
  EXPECT_NE(r.err.find("does not take ML-DSA-65"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ML-KEM-768"), std::string::npos) << r.err;
  // CLI11's own usage errors under --json are JSON too.
  r = Pqc(dir, "--json " + pqc + "keygen");
  EXPECT_EQ(r.code, 2) << Printed(r);
  j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << Printed(r);
  EXPECT_EQ(j["error"]["exit"], 2);

  // No daemon there: 3, and a hint that names the target tried and how to name another.
  const std::string nowhere = "unix:" + (dir / "no-daemon.sock");
  r = Pqc(dir, "--target " + nowhere + " --timeout 5 health");
  EXPECT_EQ(r.code, 3) << Printed(r);
  EXPECT_NE(r.err.find("UNAVAILABLE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hint"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'" + nowhere + "'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--target"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("PQC_TARGET"), std::string::npos) << r.err;
  r = Pqc(dir, "--json --target 127.0.0.1:1 --timeout 5 hash -a SHA3-256 --text abc");
  EXPECT_EQ(r.code, 3) << Printed(r);
  j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << Printed(r);
  EXPECT_EQ(j["error"]["code"], "UNAVAILABLE");
  EXPECT_EQ(j["error"]["exit"], 3);
  EXPECT_NE(j["error"]["hint"].get<std::string>().find("127.0.0.1:1"), std::string::npos)
      << j.dump();
  // The help says what the codes mean.
  r = Pqc(dir, "--help");
  EXPECT_EQ(r.code, 0);
  for (const char* word : {"NOT_FOUND", "PERMISSION_DENIED", "UNAVAILABLE", "DEADLINE_EXCEEDED",
                           "\"error\"", "key_version"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word << " in:\n" << r.out;
  }
}

// Issue 45, item 13: the version of the held key used or made is printed, as "key_version" in
// every JSON output; --lane that cannot be had warns; --priv's help has the registry's sizes.
TEST_F(DaemonTest, CliKeyVersionsLaneWarningAndHelp) {
  const auto& dir = daemon_->dir();
  const std::string pqc = "--target unix:" + (dir / "pqcd.sock") + " ";
  CliRun r = Pqc(dir, "--json " + pqc + "keygen -a ML-KEM-768 --hold --key-id kv-kem");
  ASSERT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(nlohmann::json::parse(r.out)["key_version"], 1);
  ASSERT_EQ(Pqc(dir, pqc + "keygen -a ML-DSA-44 --hold --key-id kv-dsa").code, 0);
  std::ofstream(dir / "kv_msg") << "m";
  for (int version : {1, 2}) {
    SCOPED_TRACE("version " + std::to_string(version));
    const std::string want = "key_version: " + std::to_string(version) + "\n";
    r = Pqc(dir, "--json " + pqc + "encaps -a ML-KEM-768 --key-id kv-kem");
    ASSERT_EQ(r.code, 0) << Printed(r);
    EXPECT_EQ(nlohmann::json::parse(r.out)["key_version"], version) << r.out;
    r = Pqc(dir, pqc + "encaps -a ML-KEM-768 --key-id kv-kem --ct-out " + (dir / "kv_ct"));
    ASSERT_EQ(r.code, 0) << Printed(r);
    EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
    r = Pqc(dir, "--json " + pqc + "sign -a ML-DSA-44 --key-id kv-dsa -i " + (dir / "kv_msg"));
    ASSERT_EQ(r.code, 0) << Printed(r);
    EXPECT_EQ(nlohmann::json::parse(r.out)["key_version"], version) << r.out;
    r = Pqc(dir, pqc + "sign -a ML-DSA-44 --key-id kv-dsa -i " + (dir / "kv_msg") + " -o " +
                     (dir / "kv_sig"));
    ASSERT_EQ(r.code, 0) << Printed(r);
    EXPECT_EQ(r.out, want);
    // The signature alone on stdout; the version on stderr.
    r = Pqc(dir, pqc + "sign -a ML-DSA-44 --key-id kv-dsa -i " + (dir / "kv_msg"));
    ASSERT_EQ(r.code, 0) << Printed(r);
    EXPECT_TRUE(HexDecode(r.out).ok()) << r.out;
    EXPECT_EQ(r.err, want);
    // The key objects of the keys commands spell it the same way.
    r = Pqc(dir, "--json " + pqc + "keys get kv-kem");
    ASSERT_EQ(r.code, 0) << Printed(r);
    auto info = nlohmann::json::parse(r.out);
    EXPECT_EQ(info["key_version"], version) << r.out;
    EXPECT_FALSE(info.contains("version")) << r.out;
    r = Pqc(dir, "--json " + pqc + "keys list");
    ASSERT_EQ(r.code, 0) << Printed(r);
    const auto listed = nlohmann::json::parse(r.out);
    for (const auto& k : listed["keys"]) {
      EXPECT_TRUE(k.contains("key_version") && !k.contains("version")) << k.dump();
    }
    if (version == 1) {
      r = Pqc(dir, "--json " + pqc + "keys rotate kv-kem");
      ASSERT_EQ(r.code, 0) << Printed(r);
      EXPECT_EQ(nlohmann::json::parse(r.out)["key_version"], 2) << r.out;
      ASSERT_EQ(Pqc(dir, pqc + "keys rotate kv-dsa").code, 0);
    }
  }
  EXPECT_EQ(Pqc(dir, pqc + "keys delete kv-kem").code, 0);
  EXPECT_EQ(Pqc(dir, pqc + "keys delete kv-dsa").code, 0);

  // --lane with a TCP target used gRPC without a word: now a warning on stderr (the call works).
  r = Pqc(dir, "--lane --target " + daemon_->target() + " hash -a SHA3-256 --text abc");
  EXPECT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(r.out, "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532\n");
  EXPECT_NE(r.err.find("warning: --lane"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(daemon_->target()), std::string::npos) << r.err;
  r = Pqc(dir, "--lane " + pqc + "hash -a SHA3-256 --text abc");
  EXPECT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(r.err, "");

  // --priv's help: the seed sizes of the command's family from the registry ("64-byte seed" and
  // "32-byte seed" were wrong for the hybrids and SLH-DSA).
  for (const auto& [command, family] :
       {std::pair{"decaps", pqcd::kernels::Family::kKem}, {"sign", pqcd::kernels::Family::kDsa}}) {
    r = Pqc(dir, std::string(command) + " --help");
    ASSERT_EQ(r.code, 0) << Printed(r);
    for (const auto& f : pqcd::kernels::kAlgorithms) {
      if (f.family != family || f.seed_bytes == 0) continue;
      // "N bytes for ..., NAME" in the group of its size.
      const size_t group = r.out.find(std::to_string(f.seed_bytes) + " bytes for ");
      ASSERT_NE(group, std::string::npos) << command << ", " << f.name << ":\n" << r.out;
      const size_t end = r.out.find_first_of(";)", group);
      EXPECT_NE(r.out.substr(group, end - group).find(std::string(f.name)), std::string::npos)
          << command << ", " << f.name << ":\n"
          << r.out;
    }
    EXPECT_EQ(r.out.find("-byte seed"), std::string::npos) << r.out;
  }
}

// Issue 45, item 13: a plaintext pqc against a TLS daemon saw only "Socket closed"; now the hint
// says the daemon may serve TLS and names --tls and --ca.
TEST(DaemonTls, PlaintextCliAgainstATlsDaemonIsToldToUseTls) {
  Daemon d;
  const std::string cert = d.dir() / "tls.pem", key = d.dir() / "tls.key";
  ASSERT_EQ(Shell("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
                  "-subj /CN=pqcd -addext subjectAltName=IP:127.0.0.1 -keyout " +
                  key + " -out " + cert + " 2>/dev/null"),
            0);
  ASSERT_TRUE(d.Start({"--tls-cert", cert, "--tls-key", key, "--unix", d.dir() / "s.sock"}));
  const CliRun r =
      Pqc(d.dir(), "--target " + d.target() + " --timeout 10 hash -a SHA3-256 --text abc");
  EXPECT_EQ(r.code, 3) << Printed(r);
  EXPECT_NE(r.err.find("--tls"), std::string::npos) << Printed(r);
  EXPECT_NE(r.err.find("--ca"), std::string::npos) << Printed(r);
  // With TLS it works.
  const CliRun ok = Pqc(d.dir(), "--target " + d.target() + " --ca " + cert +
                                     " --timeout 10 hash -a SHA3-256 --text abc");
  EXPECT_EQ(ok.code, 0) << Printed(ok);
  EXPECT_EQ(d.Terminate(), 0);
}

// Issue 45, item 9: an --admin identity manages another identity's keys from the CLI: --owner
// on keys get/delete/rotate/import, --owner and --all-owners on keys list.
TEST(DaemonAdmin, CliManagesAnotherIdentitysKeys) {
  Daemon d;
  const std::string sock = d.dir() / "admin.sock";
  const std::string self = "unix:uid:" + std::to_string(::getuid());
  const std::string other = "unix:uid:" + std::to_string(::getuid() + 4242);
  ASSERT_TRUE(d.Start({"--unix", sock, "--admin", self})) << d.log();
  const auto& dir = d.dir();
  const std::string pqc = "--target unix:" + sock + " ";
  ASSERT_EQ(Pqc(dir, pqc + "keygen -a ML-DSA-44 --seed-out " + (dir / "a_seed")).code, 0);
  // Imported for the other identity, and one key of the admin's own.
  CliRun r = Pqc(dir, "--json " + pqc + "keys import -a ML-DSA-44 --priv " + (dir / "a_seed") +
                          " --key-id theirs --owner " + other);
  ASSERT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(nlohmann::json::parse(r.out)["owner"], other) << r.out;
  ASSERT_EQ(
      Pqc(dir, pqc + "keys import -a ML-DSA-44 --priv " + (dir / "a_seed") + " --key-id mine").code,
      0);
  // The admin's own list has only its own key.
  r = Pqc(dir, pqc + "keys list");
  ASSERT_EQ(r.code, 0) << Printed(r);
  EXPECT_NE(r.out.find("mine\t"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("theirs"), std::string::npos) << r.out;
  r = Pqc(dir, pqc + "keys list --owner " + other);
  ASSERT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(r.out, "theirs\tML-DSA-44\tv1\t" + other + "\n");
  r = Pqc(dir, "--json " + pqc + "keys list --all-owners");
  ASSERT_EQ(r.code, 0) << Printed(r);
  std::map<std::string, std::string> owners;
  const auto listed = nlohmann::json::parse(r.out);
  for (const auto& k : listed["keys"]) {
    owners[k["key_id"].get<std::string>()] = k["owner"].get<std::string>();
  }
  EXPECT_EQ(owners, (std::map<std::string, std::string>{{"mine", self}, {"theirs", other}}))
      << r.out;
  EXPECT_EQ(Pqc(dir, pqc + "keys list --owner x --all-owners").code, 2);
  // get, rotate and delete by owner; without it the key is not the admin's.
  EXPECT_EQ(Pqc(dir, pqc + "keys get theirs").code, 2);
  r = Pqc(dir, "--json " + pqc + "keys get theirs --owner " + other);
  ASSERT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(nlohmann::json::parse(r.out)["owner"], other);
  r = Pqc(dir, "--json " + pqc + "keys rotate theirs --owner " + other);
  ASSERT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(nlohmann::json::parse(r.out)["key_version"], 2) << r.out;
  EXPECT_EQ(Pqc(dir, pqc + "keys delete theirs").code, 2);
  r = Pqc(dir, "--json " + pqc + "keys delete theirs --owner " + other);
  ASSERT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(nlohmann::json::parse(r.out)["deleted_versions"], 2) << r.out;
  r = Pqc(dir, pqc + "keys list --all-owners");
  ASSERT_EQ(r.code, 0) << Printed(r);
  EXPECT_EQ(r.out.find("theirs"), std::string::npos) << r.out;
}

#ifdef PQC_LOAD
TEST_F(DaemonTest, LoadGeneratorShortRun) {
  const auto& dir = daemon_->dir();
  const std::string pid = std::to_string(daemon_->pid());
  for (const std::string style :
       {"unary", "batch --batch-size 4", "stream --inflight 4", "stream --inflight 8 --pack 4",
        "stream --inflight 4 --pack 1", "auto", "auto --pack 8"}) {
    SCOPED_TRACE(style);
    ASSERT_EQ(Shell(std::string(PQC_LOAD) + " --targets " + daemon_->target() +
                    " --op ML-KEM-768:decaps=2,ML-DSA-44:verify=1,SHA3-256:hash=1 -c 4 "
                    "--duration 700ms --warmup 200ms --quiet --json --server-pid " +
                    pid + " --style " + style + " > " + (dir / "load.json")),
              0);
    auto j = nlohmann::json::parse(Slurp(dir / "load.json"));
    EXPECT_GT(j["requests"].get<uint64_t>(), 0u);
    EXPECT_EQ(j["error_total"].get<uint64_t>(), 0u);
    EXPECT_GT(j["latency_us"]["p99"].get<double>(), 0.0);
    // Cost accounting: the keys are there (values depend on the machine).
    EXPECT_GE(j["server_cpu_seconds"].get<double>(), 0.0);
    EXPECT_GE(j["server_cpu_us_per_op"].get<double>(), 0.0);
    EXPECT_GE(j["server_cpu_us_per_request"].get<double>(), 0.0);
    EXPECT_GE(j["server_ctx_switches_per_request"].get<double>(), 0.0);
    EXPECT_GE(j["client_cpu_share"].get<double>(), 0.0);
    if (style.rfind("stream", 0) == 0 || style.rfind("auto", 0) == 0) {
      EXPECT_GT(j["stream_messages_sent"].get<uint64_t>(), 0u);
    }
  }
  // A metrics URL without the CPU metric, or nothing listening: a clear usage error (2).
  EXPECT_EQ(Shell(std::string(PQC_LOAD) + " --targets " + daemon_->target() +
                  " --server-metrics http://127.0.0.1:1/metrics --duration 100ms --quiet "
                  "2> /dev/null"),
            2);
  // In-process: the process's own CPU is the server's.
  if (Shell(std::string(PQC_LOAD) +
            " --in-process --workers 1 --op SHA3-256:hash -c 2 --duration 300ms --warmup 100ms "
            "--quiet --json > " +
            (dir / "inproc.json") + " 2> /dev/null") == 0) {
    auto j = nlohmann::json::parse(Slurp(dir / "inproc.json"));
    EXPECT_GT(j["server_cpu_us_per_op"].get<double>(), 0.0);
    EXPECT_EQ(j["server_cpu_source"], "self (in-process)");
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
