// One caller's slow work against everyone else's latency (issue 45, item 4). Before, admission
// counted jobs, not their cost, and a worker ran whatever its burst held: one Batch of 200
// SLH-DSA-SHA2-256s signatures (about 190 ms each, not preemptible) took every worker for
// seconds, and another caller's SHA3-256 Hash went from a 5 ms maximum to 5.4 s. Now slow jobs
// run on threads of their own below the workers (--slow-job-ms), in fair turns between callers,
// admitted by their estimated cost (--slow-queue-seconds[-per-identity]).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon_fixture.h"
#include "gtest/gtest.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using std::chrono::seconds;

std::unique_ptr<grpc::ClientContext> Ctx(seconds deadline) {
  return ContextWithDeadline(deadline);
}

// A fresh SLH-DSA-SHA2-128s key (its seed signs), made through `stub`.
KeyGenResponse SlowKey(Crypto::Stub& stub) {
  KeyGenRequest kg;
  kg.set_algorithm(SLH_DSA_SHA2_128S);
  KeyGenResponse key;
  EXPECT_TRUE(stub.KeyGen(Ctx(seconds(120)).get(), kg, &key).ok());
  return key;
}

// A Batch of `n` SLH-DSA-SHA2-128s signatures of distinct messages with the key of `seed`.
BatchRequest SignBatch(const std::string& seed, int n, const std::string& prefix) {
  BatchRequest batch;
  for (int i = 0; i < n; ++i) {
    SignRequest* s = batch.add_operations()->mutable_sign();
    s->set_algorithm(SLH_DSA_SHA2_128S);
    s->set_private_key(seed);
    s->set_message(absl::StrCat(prefix, i));
  }
  return batch;
}

// An anonymous TCP caller sends one Batch of kSignatures SLH-DSA-SHA2-128s signatures with a
// given key. While it runs: another caller (the Unix socket's uid) is served 50 Hash calls, all of
// them while the Batch is still going, and a third caller's single slow signature is served in its
// fair turn, before the Batch ends. The Batch itself finishes, every signature right.
TEST(SlowWork, OneCallersSlowBatchDoesNotTakeTheWorkersFromOthers) {
  Daemon d;
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--workers", "2", "--slow-workers", "1"})) << d.log();
  auto tcp = Crypto::NewStub(d.Channel());
  auto unix_stub =
      Crypto::NewStub(grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials()));

  const KeyGenResponse key = SlowKey(*tcp);
  ASSERT_FALSE(key.seed().empty());
  constexpr int kSignatures = 24;
  const BatchRequest batch = SignBatch(key.seed(), kSignatures, "slow ");
  std::atomic<bool> batch_done{false};
  BatchResponse batch_answer;
  grpc::Status batch_status;
  std::thread attacker([&] {
    batch_status = tcp->Batch(Ctx(seconds(600)).get(), batch, &batch_answer);
    batch_done.store(true);
  });
  // The Batch is queued on the slow pool.
  ASSERT_TRUE(Eventually([&] { return MetricOf(d, "pqcd_slow_queue_jobs") > 0; }, seconds(60)))
      << d.log();

  // A bystander's cheap calls, all served while the Batch is still running.
  const std::vector<double> ms =
      HashLatenciesMs(grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials()), 50);
  ASSERT_EQ(ms.size(), 50u) << d.log();
  const bool hashes_before_batch = !batch_done.load();
  RecordProperty("bystander_hash_p50_ms", std::to_string(ms[ms.size() / 2]));
  RecordProperty("bystander_hash_p99_ms", std::to_string(ms[ms.size() * 99 / 100]));
  RecordProperty("bystander_hash_max_ms", std::to_string(ms.back()));
  EXPECT_TRUE(hashes_before_batch)
      << "the Batch finished before the bystander's 50 Hash calls: its slow jobs held them up";

  // Another caller's one slow signature takes its turn beside the Batch, not after all of it.
  {
    SignRequest req;
    req.set_algorithm(SLH_DSA_SHA2_128S);
    req.set_private_key(key.seed());
    req.set_message("its turn");
    SignResponse resp;
    ASSERT_TRUE(unix_stub->Sign(Ctx(seconds(300)).get(), req, &resp).ok()) << d.log();
    EXPECT_FALSE(batch_done.load()) << "the fair turn came only after the whole Batch";
    EXPECT_FALSE(resp.signature().empty());
  }

  attacker.join();
  ASSERT_TRUE(batch_status.ok()) << batch_status.error_message();
  ASSERT_EQ(batch_answer.results_size(), kSignatures);
  for (const OperationResult& r : batch_answer.results()) {
    EXPECT_EQ(r.code(), 0) << r.message();
    EXPECT_FALSE(r.sign().signature().empty());
  }
  EXPECT_GE(MetricOf(d, "pqcd_slow_jobs_total"), kSignatures + 1);
  EXPECT_EQ(d.Terminate(), 0);
}

// Admission by cost: with a share of 1 s per identity, a caller that has slow work queued gets
// RESOURCE_EXHAUSTED for more (naming the flag), while another identity is still admitted.
TEST(SlowWork, SlowWorkIsAdmittedWithinEachCallersShare) {
  Daemon d;
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--workers", "2", "--slow-workers", "1",
                       "--slow-queue-seconds-per-identity", "0.001"}))
      << d.log();
  auto tcp = Crypto::NewStub(d.Channel());
  auto unix_stub =
      Crypto::NewStub(grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials()));
  const KeyGenResponse key = SlowKey(*tcp);
  ASSERT_FALSE(key.seed().empty());
  const BatchRequest batch = SignBatch(key.seed(), 8, "queued ");
  // The first Batch is taken whole (the caller had nothing queued)...
  BatchResponse first_answer;
  grpc::Status first_status;
  std::thread first(
      [&] { first_status = tcp->Batch(Ctx(seconds(600)).get(), batch, &first_answer); });
  ASSERT_TRUE(Eventually([&] { return MetricOf(d, "pqcd_slow_queue_jobs") > 0; }, seconds(60)))
      << d.log();
  // ... a second one from the same identity is not, while the first is queued ...
  BatchResponse second_answer;
  grpc::Status second = tcp->Batch(Ctx(seconds(60)).get(), batch, &second_answer);
  EXPECT_EQ(second.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << second.error_message();
  EXPECT_NE(second.error_message().find("--slow-queue-seconds-per-identity"), std::string::npos)
      << second.error_message();
  // ... and another identity's slow work is still taken.
  SignRequest req;
  req.set_algorithm(SLH_DSA_SHA2_128S);
  req.set_private_key(key.seed());
  req.set_message("another identity");
  SignResponse resp;
  EXPECT_TRUE(unix_stub->Sign(Ctx(seconds(300)).get(), req, &resp).ok()) << d.log();
  first.join();
  ASSERT_TRUE(first_status.ok()) << first_status.error_message();
  for (const OperationResult& r : first_answer.results()) EXPECT_EQ(r.code(), 0) << r.message();
  EXPECT_GE(MetricOf(d, "pqcd_slow_rejected_total"), 8);
  EXPECT_EQ(d.Terminate(), 0);
}

}  // namespace
}  // namespace pqcd::testing
