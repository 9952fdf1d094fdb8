// Edges found by exploratory testing (issue 17), against the real daemon: HashStream's fixed output
// length and per-message cap, request metrics that record what the client got (a cancelled
// HashStream, an expired Batch, the algorithm label of a refused HashStream), cancelled Batch jobs
// dropped from the queue, and key_ref requests that leave the algorithm to the held key.
#include <thread>

#include "daemon_fixture.h"
#include "gtest/gtest.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;

std::unique_ptr<grpc::ClientContext> Ctx(
    std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

class EdgesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon;
    // Output cap and message size raised for the heavy expired Batch below (240 x 256 KiB).
    // Heavy Batches (256 KiB SHAKE outputs) need the output cap, the message size and the memory
    // account (tested in tests/adversarial/test_memory.cc) raised above their defaults.
    ASSERT_TRUE(daemon_->Start({"--workers", "1", "--max-field-bytes", "4096", "--max-output-bytes",
                                "262144", "--max-message-bytes", "67108864", "--memory-limit", "0",
                                "--memory-per-identity", "0", "--allow-insecure-tcp", "--log-level",
                                "warn"}));
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Terminate(), 0) << daemon_->log();
    delete daemon_;
  }
  void SetUp() override { stub_ = daemon_->Crypto(); }
  // Waits until the daemon has recorded every request (they are recorded when gRPC is done).
  static std::string SettledMetrics() {
    std::string m;
    for (int i = 0; i < 100; ++i) {
      m = HttpGet(daemon_->metrics_port(), "/metrics");
      if (MetricValue(m, "pqcd_inflight_requests") == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return m;
  }
  static Daemon* daemon_;
  std::unique_ptr<Crypto::Stub> stub_;
};
Daemon* EdgesTest::daemon_ = nullptr;

grpc::Status HashStreamOf(Crypto::Stub& stub, const std::vector<HashStreamRequest>& msgs,
                          HashResponse* resp) {
  auto ctx = Ctx();
  auto writer = stub.HashStream(ctx.get(), resp);
  for (const auto& m : msgs) {
    if (!writer->Write(m)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

HashStreamRequest Msg(Algorithm alg, const std::string& data, uint32_t output_length = 0) {
  HashStreamRequest m;
  m.set_algorithm(alg);
  m.set_data(data);
  m.set_output_length(output_length);
  return m;
}

TEST_F(EdgesTest, HashStreamOutputLengthIsFixedByTheFirstMessage) {
  HashResponse resp;
  auto s = HashStreamOf(*stub_, {Msg(SHAKE128, "a"), Msg(ALGORITHM_UNSPECIFIED, "b", 100)}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("output_length"), std::string::npos) << s.error_message();
  // Repeating the same length (or leaving it 0) is fine.
  s = HashStreamOf(*stub_, {Msg(SHAKE128, "a", 100), Msg(SHAKE128, "b", 100), Msg({}, "c")}, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.digest().size(), 100u);
}

TEST_F(EdgesTest, HashStreamDigestCountsAsAHashOperation) {
  const char* name = "pqcd_operations_total{algorithm=\"SHA3-384\",operation=\"hash\"}";
  const double before = std::max(0.0, MetricValue(SettledMetrics(), name));
  HashResponse resp;
  ASSERT_TRUE(HashStreamOf(*stub_, {Msg(SHA3_384, "a"), Msg({}, "b")}, &resp).ok());
  EXPECT_EQ(MetricValue(SettledMetrics(), name) - before, 1);
}

TEST_F(EdgesTest, HashStreamMessageCappedAtMaxFieldBytes) {
  HashResponse resp;
  auto s = HashStreamOf(
      *stub_, {Msg(SHA3_256, std::string(4096, 'x')), Msg({}, std::string(4097, 'y'))}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("--max-field-bytes"), std::string::npos) << s.error_message();
}

TEST_F(EdgesTest, RefusedHashStreamIsLabelledWithTheAlgorithmItNamed) {
  HashResponse resp;
  auto s = HashStreamOf(*stub_, {Msg(ML_KEM_512, "a")}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const std::string m = SettledMetrics();
  EXPECT_EQ(MetricValue(m,
                        "pqcd_requests_total{algorithm=\"ML-KEM-512\",code=\"INVALID_ARGUMENT\","
                        "rpc=\"HashStream\"}"),
            1)
      << m;
}

TEST_F(EdgesTest, CancelledHashStreamIsRecordedAsCancelled) {
  HashResponse resp;
  auto ctx = Ctx();
  auto writer = stub_->HashStream(ctx.get(), &resp);
  ASSERT_TRUE(writer->Write(Msg(SHA3_512, "first chunk")));
  ctx->TryCancel();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  double cancelled = 0;
  // The cancellation may overtake the first message: then the algorithm is not known yet.
  for (int i = 0; i < 100 && cancelled < 1; ++i) {
    const std::string m = HttpGet(daemon_->metrics_port(), "/metrics");
    cancelled = 0;
    for (const char* alg : {"SHA3-512", "unknown"}) {
      cancelled +=
          std::max(0.0, MetricValue(m, std::string("pqcd_requests_total{algorithm=\"") + alg +
                                           "\",code=\"CANCELLED\",rpc=\"HashStream\"}"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(cancelled, 1);
}

TEST_F(EdgesTest, ExpiredBatchIsRecordedAsDeadlineExceededAndItsQueuedJobsDropped) {
  const std::string before = SettledMetrics();
  // 240 heavy items (256 KiB of SHAKE256 each: 60 MiB, ~0.1 s of work on an AVX-512 core, far
  // more under ASan), 25 ms deadline: the caller gives up long before the end.
  constexpr int kItems = 240;
  BatchRequest batch;
  for (int i = 0; i < kItems; ++i) {
    auto* h = batch.add_operations()->mutable_hash();
    h->set_algorithm(SHAKE256);
    h->set_data(std::to_string(i));
    h->set_output_length(256 * 1024);
  }
  BatchResponse resp;
  auto s = stub_->Batch(Ctx(std::chrono::milliseconds(25)).get(), batch, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  std::string m;
  double recorded = 0;
  for (int i = 0; i < 100 && recorded < 1; ++i) {
    m = SettledMetrics();
    recorded = MetricValue(
        m, "pqcd_requests_total{algorithm=\"mixed\",code=\"DEADLINE_EXCEEDED\",rpc=\"Batch\"}");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(recorded, 1) << m;
  auto delta = [&](const char* name) {
    return std::max(0.0, MetricValue(m, name)) - std::max(0.0, MetricValue(before, name));
  };
  const double ran = delta("pqcd_jobs_total{outcome=\"done\"}");
  const double dropped = delta("pqcd_jobs_total{outcome=\"expired\"}") +
                         delta("pqcd_jobs_total{outcome=\"cancelled\"}");
  EXPECT_EQ(ran + dropped, kItems);
  EXPECT_GT(dropped, 0) << "all ran although the caller had given up";
}

TEST_F(EdgesTest, KeyRefTakesTheHeldKeysAlgorithm) {
  KeyGenRequest kg;
  kg.set_algorithm(ML_DSA_44);
  kg.set_hold(true);
  kg.set_key_id("edges-signer");
  KeyGenResponse kr;
  ASSERT_TRUE(stub_->KeyGen(Ctx().get(), kg, &kr).ok());
  SignRequest sr;
  sr.mutable_key_ref()->set_key_id("edges-signer");  // algorithm left unspecified
  sr.set_message("hello");
  SignResponse sig;
  auto s = stub_->Sign(Ctx().get(), sr, &sig);
  ASSERT_TRUE(s.ok()) << s.error_message();
  VerifyRequest vr;
  vr.mutable_key_ref()->set_key_id("edges-signer");
  vr.set_message("hello");
  vr.set_signature(sig.signature());
  VerifyResponse v;
  ASSERT_TRUE(stub_->Verify(Ctx().get(), vr, &v).ok());
  EXPECT_TRUE(v.valid());
  // Naming another algorithm than the held key's is refused.
  sr.set_algorithm(ML_DSA_65);
  s = stub_->Sign(Ctx().get(), sr, &sig);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Given key bytes need the algorithm.
  SignRequest given;
  given.set_private_key(std::string(32, 'k'));
  given.set_message("hello");
  s = stub_->Sign(Ctx().get(), given, &sig);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace pqcd::testing
