// The Stream RPC against the real daemon: packed messages (StreamRequest.items) beside single-form
// ones, ids echoed exactly once, per-item errors, malformed packed messages, half-close with items
// in flight, cancellation and deadlines that drop queued jobs, a client that stops reading (the
// daemon stops reading too), and the request metrics recording what the client got.
#include <sys/types.h>

#include <atomic>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "daemon_fixture.h"
#include "gtest/gtest.h"
#include "pqcd/kernels/hash.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;

std::string KernelHash(kernels::HashAlgorithm alg, const std::string& data) {
  std::string out(kernels::HashDigestBytes(alg), '\0');
  auto st =
      kernels::Hash(alg, kernels::Bytes(reinterpret_cast<const uint8_t*>(data.data()), data.size()),
                    kernels::MutBytes(reinterpret_cast<uint8_t*>(out.data()), out.size()));
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

std::unique_ptr<grpc::ClientContext> Ctx(
    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

Operation HashOp(Algorithm alg, const std::string& data, uint32_t output_length = 0) {
  Operation op;
  op.mutable_hash()->set_algorithm(alg);
  op.mutable_hash()->set_data(data);
  if (output_length != 0) op.mutable_hash()->set_output_length(output_length);
  return op;
}

// A heavy, deterministic item: 256 KiB of SHAKE256 output (about 2,000 Keccak permutations).
Operation HeavyOp(int i) {
  return HashOp(SHAKE256, std::to_string(i % 8), 256 * 1024);
}

double Metric(const Daemon& d, const std::string& name) {
  return MetricValue(HttpGet(d.metrics_port(), "/metrics"), name);
}

class StreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon;
    // Jobs go through the queue here (--inline-crypto false), so that a cancellation always finds
    // queued jobs to drop; test_hashstream_metrics_keyref and test_errors cover bursts run on the
    // receiving thread.
    ASSERT_TRUE(
        daemon_->Start({"--workers", "1", "--max-stream-inflight", "64", "--max-batch-items", "256",
                        "--inline-crypto", "false", "--log-level", "warn",
                        // Heavy items (256 KiB of SHAKE output) need the output cap, the
                        // Stream byte budget and the memory account raised above their defaults.
                        "--max-output-bytes", "262144", "--max-stream-bytes", "134217728",
                        "--memory-limit", "0", "--memory-per-identity", "0"}));
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
  static Daemon* daemon_;
  std::unique_ptr<Crypto::Stub> stub_;
};
Daemon* StreamTest::daemon_ = nullptr;

// Answers collected by a reader thread: packed and single-form answers kept apart.
struct Answers {
  std::map<uint64_t, OperationResult> packed, single;
  std::set<uint64_t> duplicates;
  int packed_messages = 0;
  void Add(const StreamResponse& resp) {
    if (resp.results_size() > 0) {
      ++packed_messages;
      for (const auto& r : resp.results()) {
        if (!packed.emplace(r.id(), r.result()).second) duplicates.insert(r.id());
      }
    }
    if (resp.has_result()) {
      if (!single.emplace(resp.id(), resp.result()).second) duplicates.insert(resp.id());
    }
  }
};

TEST_F(StreamTest, PackedAndSingleFormMessagesAnsweredOnceInTheirOwnForm) {
  constexpr int kMessages = 200, kPerMessage = 50;
  auto ctx = Ctx();
  auto stream = stub_->Stream(ctx.get());
  Answers answers;
  std::thread reader([&] {
    StreamResponse resp;
    while (stream->Read(&resp)) answers.Add(resp);
  });
  uint64_t next_id = 1000;
  for (int m = 0; m < kMessages; ++m) {
    StreamRequest req;
    if (m % 10 == 9) {  // every tenth message in the single form
      req.set_id(next_id);
      *req.mutable_operation() = HashOp(SHA3_256, "item " + std::to_string(next_id));
      ++next_id;
    } else {
      for (int k = 0; k < kPerMessage; ++k, ++next_id) {
        StreamItem* item = req.add_items();
        item->set_id(next_id);
        *item->mutable_operation() = HashOp(SHA3_256, "item " + std::to_string(next_id));
      }
    }
    ASSERT_TRUE(stream->Write(req));
  }
  stream->WritesDone();
  reader.join();
  auto s = stream->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(answers.duplicates.empty());
  EXPECT_EQ(answers.single.size(), static_cast<size_t>(kMessages / 10));
  EXPECT_EQ(answers.packed.size(), static_cast<size_t>(kMessages - kMessages / 10) * kPerMessage);
  // Packing is the point: far fewer answer messages than items.
  EXPECT_LT(answers.packed_messages, static_cast<int>(answers.packed.size()));
  for (uint64_t id = 1000; id < next_id; ++id) {
    const bool single = answers.single.count(id) > 0;
    const OperationResult& r = single ? answers.single[id] : answers.packed[id];
    ASSERT_TRUE(single || answers.packed.count(id)) << id;
    ASSERT_EQ(r.code(), 0) << r.message();
    EXPECT_EQ(r.hash().digest(),
              KernelHash(kernels::HashAlgorithm::kSha3_256, "item " + std::to_string(id)));
  }
}

TEST_F(StreamTest, PerItemErrorsAndMalformedMessages) {
  auto ctx = Ctx();
  auto stream = stub_->Stream(ctx.get());
  StreamRequest req;
  for (int k = 0; k < 6; ++k) {
    StreamItem* item = req.add_items();
    item->set_id(static_cast<uint64_t>(k));
    if (k == 2) {
      item->mutable_operation()->mutable_hash()->set_algorithm(ML_KEM_768);  // not a hash
    } else if (k == 4) {
      item->mutable_operation()->mutable_decaps()->set_algorithm(ML_KEM_768);
      item->mutable_operation()->mutable_decaps()->set_private_key("short");
    } else if (k == 5) {
      // an empty operation
    } else {
      *item->mutable_operation() = HashOp(SHAKE128, "x", 100);
    }
  }
  // Both forms in one message: the single-form id is refused, the items still run.
  req.set_id(99);
  *req.mutable_operation() = HashOp(SHA256, "y");
  ASSERT_TRUE(stream->Write(req));
  stream->WritesDone();
  Answers answers;
  StreamResponse resp;
  while (stream->Read(&resp)) answers.Add(resp);
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(answers.packed.size(), 6u);
  EXPECT_EQ(answers.packed[0].code(), 0);
  EXPECT_EQ(answers.packed[0].hash().digest().size(), 100u);
  EXPECT_EQ(answers.packed[1].code(), 0);
  EXPECT_EQ(answers.packed[3].code(), 0);
  EXPECT_EQ(answers.packed[2].code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(answers.packed[4].code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(answers.packed[4].message().find("private_key"), std::string::npos);
  EXPECT_EQ(answers.packed[5].code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_EQ(answers.single.size(), 1u);
  EXPECT_EQ(answers.single[99].code(), grpc::StatusCode::INVALID_ARGUMENT);

  // More items in one message than --max-batch-items fails the whole stream.
  auto ctx2 = Ctx();
  auto stream2 = stub_->Stream(ctx2.get());
  StreamRequest big;
  for (int k = 0; k < 257; ++k) {
    StreamItem* item = big.add_items();
    item->set_id(static_cast<uint64_t>(k));
    *item->mutable_operation() = HashOp(SHA256, "z");
  }
  stream2->Write(big);
  stream2->WritesDone();
  while (stream2->Read(&resp)) {
  }
  auto s = stream2->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("--max-batch-items"), std::string::npos) << s.error_message();
}

TEST_F(StreamTest, HalfCloseWithItemsInFlightAnswersEveryItem) {
  auto ctx = Ctx();
  auto stream = stub_->Stream(ctx.get());
  // Heavy items, written and half-closed at once: all must still be answered, then OK.
  for (int m = 0; m < 4; ++m) {
    StreamRequest req;
    for (int k = 0; k < 8; ++k) {
      StreamItem* item = req.add_items();
      item->set_id(static_cast<uint64_t>(m * 8 + k));
      *item->mutable_operation() = HeavyOp(k);
    }
    ASSERT_TRUE(stream->Write(req));
  }
  stream->WritesDone();
  Answers answers;
  StreamResponse resp;
  while (stream->Read(&resp)) answers.Add(resp);
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(answers.packed.size(), 32u);
  for (const auto& [id, r] : answers.packed) {
    ASSERT_EQ(r.code(), 0) << id << ": " << r.message();
    // Same input, same output: items k and k+8 agree.
    EXPECT_EQ(r.hash().digest(), answers.packed[id % 8].hash().digest());
  }
}

TEST_F(StreamTest, CancellationAndDeadlineDropQueuedJobsAndAreRecorded) {
  const double cancelled_before = Metric(*daemon_, "pqcd_jobs_total{outcome=\"cancelled\"}");
  const double expired_before = Metric(*daemon_, "pqcd_jobs_total{outcome=\"expired\"}");
  const double done_before = Metric(*daemon_, "pqcd_jobs_total{outcome=\"done\"}");
  {
    // Cancelled by the client after the first answer: the rest of 240 heavy items must not run.
    auto ctx = Ctx();
    auto stream = stub_->Stream(ctx.get());
    for (int m = 0; m < 3; ++m) {
      StreamRequest req;
      for (int k = 0; k < 80; ++k) {
        StreamItem* item = req.add_items();
        item->set_id(static_cast<uint64_t>(m * 80 + k));
        *item->mutable_operation() = HeavyOp(k);
      }
      stream->Write(req);
    }
    StreamResponse resp;
    EXPECT_TRUE(stream->Read(&resp));
    ctx->TryCancel();
    while (stream->Read(&resp)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The next stream starts on an idle daemon: its worker also reads the calls (thread-per-core),
  // and a worker still busy with the cancelled items would read the next call's headers late,
  // start its deadline late, and see the client's cancellation at the deadline as an early
  // cancel (slow hosts: qemu).
  ASSERT_TRUE(Eventually([&] { return Metric(*daemon_, "pqcd_inflight_requests") == 0; }))
      << "the cancelled stream never ended";
  {
    // A stream deadline that passes with items queued (about 300 ms of work, 150 ms deadline).
    auto ctx = Ctx(std::chrono::milliseconds(150));
    auto stream = stub_->Stream(ctx.get());
    for (int m = 0; m < 2; ++m) {
      StreamRequest req;
      for (int k = 0; k < 200; ++k) {
        StreamItem* item = req.add_items();
        item->set_id(static_cast<uint64_t>(m * 200 + k));
        *item->mutable_operation() = HeavyOp(k);
      }
      stream->Write(req);
    }
    StreamResponse resp;
    while (stream->Read(&resp)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  // The daemon finishes its side asynchronously: wait until both streams are recorded.
  double stream_deadline = 0, stream_cancelled = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string m = HttpGet(daemon_->metrics_port(), "/metrics");
    stream_deadline = MetricValue(
        m, "pqcd_requests_total{algorithm=\"mixed\",code=\"DEADLINE_EXCEEDED\",rpc=\"Stream\"}");
    stream_cancelled = MetricValue(
        m, "pqcd_requests_total{algorithm=\"mixed\",code=\"CANCELLED\",rpc=\"Stream\"}");
    if (stream_deadline >= 1 && stream_cancelled >= 1 &&
        MetricValue(m, "pqcd_inflight_requests") == 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string m = HttpGet(daemon_->metrics_port(), "/metrics");
  EXPECT_GE(stream_deadline, 1) << m;
  EXPECT_GE(stream_cancelled, 1) << m;
  EXPECT_EQ(MetricValue(m, "pqcd_inflight_requests"), 0);
  const double dropped = Metric(*daemon_, "pqcd_jobs_total{outcome=\"cancelled\"}") -
                         cancelled_before +
                         Metric(*daemon_, "pqcd_jobs_total{outcome=\"expired\"}") - expired_before;
  const double ran = Metric(*daemon_, "pqcd_jobs_total{outcome=\"done\"}") - done_before;
  EXPECT_GT(dropped, 0) << "ran " << ran;
  // Items never read (the daemon stops reading at --max-stream-inflight) never become jobs.
  EXPECT_LE(dropped + ran, 640) << "every job completes exactly once";
}

TEST_F(StreamTest, AClientThatStopsReadingPinsBoundedMemory) {
  // 4,000 items whose answers are 16 KiB each (64 MiB in all). The client never reads: the
  // daemon must stop reading once its answers back up, not compute and queue them all.
  const long rss_before = RssKiB(daemon_->pid());
  const double done_before = Metric(*daemon_, "pqcd_jobs_total{outcome=\"done\"}");
  auto ctx = Ctx(std::chrono::seconds(60));
  auto stream = stub_->Stream(ctx.get());
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int m = 0; m < 200; ++m) {
      StreamRequest req;
      for (int k = 0; k < 20; ++k) {
        StreamItem* item = req.add_items();
        item->set_id(static_cast<uint64_t>(m * 20 + k));
        *item->mutable_operation() = HashOp(SHAKE256, std::to_string(m * 20 + k), 16384);
      }
      if (!stream->Write(req)) break;
      written.fetch_add(20);
    }
  });
  // Wait until the daemon has stopped taking this stream's work (it must stop reading once its
  // answers back up): the answers computed and the items written stay the same for a second.
  double ran = -1;
  int seen_written = -1;
  auto steady_since = std::chrono::steady_clock::now();
  const bool settled = Eventually(
      [&] {
        const double now_ran = Metric(*daemon_, "pqcd_jobs_total{outcome=\"done\"}") - done_before;
        const int now_written = written.load();
        const auto now = std::chrono::steady_clock::now();
        if (now_ran != ran || now_written != seen_written) {
          ran = now_ran;
          seen_written = now_written;
          steady_since = now;
          return false;
        }
        return now - steady_since >= std::chrono::seconds(1);
      },
      std::chrono::seconds(30), std::chrono::milliseconds(100));
  EXPECT_TRUE(settled) << "the daemon never stopped: " << ran << " computed";
  const long rss = RssKiB(daemon_->pid());
  std::printf("[stream] client not reading: %d items written, %.0f computed, RSS %ld -> %ld KiB\n",
              written.load(), ran, rss_before, rss);
  EXPECT_LT(ran, 2000) << "the daemon kept computing answers nobody reads";
  EXPECT_LT(rss - rss_before, 48 * 1024);
  ctx->TryCancel();
  writer.join();
  StreamResponse resp;
  while (stream->Read(&resp)) {
  }
  (void)stream->Finish();
}

}  // namespace
}  // namespace pqcd::testing
