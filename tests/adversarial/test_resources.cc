// Hostile callers against the real pqcd (issue 12, "Resources"): each attack must end with a clear
// status code, the daemon's resident set must stay bounded while it is attacked, and a well-behaved
// client running alongside must keep being served (served, not timed).
//
// RSS is measured as growth over the daemon's resident set before the attack; the run script
// (tests/run.sh) runs these tests under ASan with its quarantine off, as it does for the memory
// test, because the quarantine holds freed blocks back on purpose.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon_fixture.h"
#include "gtest/gtest.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr long kRssBoundKiB = 256 * 1024;  // growth allowed while attacked

std::unique_ptr<grpc::ClientContext> Ctx(milliseconds timeout = seconds(60)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

// A channel of its own (its own connection): unique channel arguments keep gRPC from sharing a
// subchannel with the attacker's.
std::shared_ptr<grpc::Channel> OwnChannel(const std::string& target, const std::string& tag) {
  grpc::ChannelArguments args;
  args.SetString("pqcd.test.channel", tag);
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

// Hashes "abc" with SHA3-256 in a loop on its own connection and checks every answer, until
// stopped; also samples the daemon's RSS. The attack must not starve it.
class GoodClient {
 public:
  explicit GoodClient(const Daemon& d) : pid_(d.pid()) {
    auto stub = Crypto::NewStub(OwnChannel(d.target(), "good"));
    baseline_kib_ = RssKiB(pid_);
    thread_ = std::thread([this, stub = std::move(stub)] {
      while (!stop_.load()) {
        HashRequest req;
        req.set_algorithm(SHA3_256);
        req.set_data("abc");
        HashResponse resp;
        auto ctx = Ctx(seconds(60));
        grpc::Status s = stub->Hash(ctx.get(), req, &resp);
        if (s.ok() && resp.digest().size() == 32) {
          served_.fetch_add(1);
        } else {
          failed_.fetch_add(1);
          last_error_ = s.error_message();
        }
        Sample();
        std::this_thread::sleep_for(milliseconds(20));
      }
    });
  }
  ~GoodClient() { Stop(); }

  void Sample() {
    long r = RssKiB(pid_);
    long peak = peak_kib_.load();
    while (r > peak && !peak_kib_.compare_exchange_weak(peak, r)) {
    }
  }
  // Waits until `n` more calls were served after this point (the daemon is still serving).
  bool ServedMore(int n, seconds within = seconds(120)) {
    const int target = served_.load() + n;
    const auto end = std::chrono::steady_clock::now() + within;
    while (served_.load() < target) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return true;
  }
  void Stop() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
    }
  }
  int failed() const { return failed_.load(); }
  std::string last_error() const { return last_error_; }
  long growth_kib() const { return peak_kib_.load() - baseline_kib_; }

 private:
  pid_t pid_;
  long baseline_kib_ = 0;
  std::atomic<long> peak_kib_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::atomic<int> failed_{0};
  std::string last_error_;
  std::thread thread_;
};

void ExpectServedAndBounded(GoodClient& good) {
  EXPECT_TRUE(good.ServedMore(3)) << "the well-behaved client was not served";
  good.Stop();
  EXPECT_EQ(good.failed(), 0) << good.last_error();
  EXPECT_LT(good.growth_kib(), kRssBoundKiB) << "RSS grew by " << good.growth_kib() << " KiB";
}

Operation Shake(uint32_t output_length, const std::string& data = "x") {
  Operation op;
  op.mutable_hash()->set_algorithm(SHAKE256);
  op.mutable_hash()->set_data(data);
  op.mutable_hash()->set_output_length(output_length);
  return op;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The report: 1,024 one-byte SHAKE256 items asking for 1 MiB each made the daemon
// allocate 1 GB and compute for 17 s before gRPC refused to send the answer.
TEST(Amplification, BatchOfHugeShakeOutputsIsRefusedBeforeAnyWork) {
  Daemon d;
  // The output cap raised to 1 MiB so that the Batch budget itself is what refuses.
  ASSERT_TRUE(d.Start({"--max-output-bytes", "1048576", "--log-level", "warn"})) << d.log();
  GoodClient good(d);
  auto stub = d.Crypto();
  BatchRequest req;
  for (int i = 0; i < 1024; ++i) *req.add_operations() = Shake(1 << 20);
  std::vector<std::thread> attackers;
  std::atomic<int> exhausted{0};
  for (int t = 0; t < 4; ++t) {
    attackers.emplace_back([&] {
      BatchResponse resp;
      auto ctx = Ctx();
      grpc::Status s = stub->Batch(ctx.get(), req, &resp);
      if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
          Contains(s.error_message(), "--max-message-bytes")) {
        exhausted.fetch_add(1);
      } else {
        ADD_FAILURE() << s.error_code() << " " << s.error_message();
      }
      good.Sample();
    });
  }
  for (auto& t : attackers) t.join();
  EXPECT_EQ(exhausted.load(), 4);
  ExpectServedAndBounded(good);
  // No job ran for the refused Batches, and they are recorded with the code the client got.
  const std::string m = HttpGet(d.metrics_port(), "/metrics");
  EXPECT_EQ(
      MetricValue(
          m, "pqcd_requests_total{algorithm=\"mixed\",code=\"RESOURCE_EXHAUSTED\",rpc=\"Batch\"}"),
      4)
      << m;
  EXPECT_EQ(MetricValue(m, "pqcd_operations_total{algorithm=\"SHAKE256\",status=\"OK\"}"), -1)
      << "refused Batch items were computed";
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

TEST(Amplification, ShakeOutputLengthIsCappedByDefault) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--log-level", "warn"})) << d.log();
  auto stub = d.Crypto();
  HashRequest req;
  req.set_algorithm(SHAKE128);
  req.set_data("x");
  req.set_output_length(65537);
  HashResponse resp;
  auto ctx = Ctx();
  grpc::Status s = stub->Hash(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(s.error_message(), "--max-output-bytes")) << s.error_message();
  req.set_output_length(65536);
  auto ctx2 = Ctx();
  s = stub->Hash(ctx2.get(), req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.digest().size(), 65536u);
  // The same cap holds for Batch items and HashStream.
  BatchRequest batch;
  *batch.add_operations() = Shake(65537);
  BatchResponse bresp;
  auto ctx3 = Ctx();
  ASSERT_TRUE(stub->Batch(ctx3.get(), batch, &bresp).ok());
  EXPECT_EQ(bresp.results(0).code(), grpc::StatusCode::INVALID_ARGUMENT);
  HashResponse hresp;
  auto ctx4 = Ctx();
  auto writer = stub->HashStream(ctx4.get(), &hresp);
  HashStreamRequest m;
  m.set_algorithm(SHAKE256);
  m.set_output_length(1 << 20);
  m.set_data("x");
  writer->Write(m);
  writer->WritesDone();
  s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// A packed Stream message whose answers alone exceed the Stream's budget is refused item by item.
TEST(Amplification, StreamMessageOverItsAnswerBudgetIsRefused) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--max-stream-bytes", "4194304", "--log-level", "warn"})) << d.log();
  auto stub = d.Crypto();
  auto ctx = Ctx();
  auto stream = stub->Stream(ctx.get());
  StreamRequest req;
  for (int i = 0; i < 64; ++i) {  // 64 x 64 KiB = 4 MiB of answers > 2 MiB (half the budget)
    StreamItem* item = req.add_items();
    item->set_id(static_cast<uint64_t>(i));
    *item->mutable_operation() = Shake(65536);
  }
  ASSERT_TRUE(stream->Write(req));
  size_t answered = 0;
  StreamResponse resp;
  while (answered < 64 && stream->Read(&resp)) {
    for (const auto& r : resp.results()) {
      EXPECT_EQ(r.result().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
      EXPECT_TRUE(Contains(r.result().message(), "--max-stream-bytes")) << r.result().message();
      ++answered;
    }
  }
  EXPECT_EQ(answered, 64u);
  // A message within budget on the same stream is answered normally.
  req.Clear();
  for (int i = 0; i < 8; ++i) {
    StreamItem* item = req.add_items();
    item->set_id(100 + static_cast<uint64_t>(i));
    *item->mutable_operation() = Shake(65536);
  }
  ASSERT_TRUE(stream->Write(req));
  answered = 0;
  while (answered < 8 && stream->Read(&resp)) {
    for (const auto& r : resp.results()) {
      EXPECT_EQ(r.result().code(), 0) << r.result().message();
      EXPECT_EQ(r.result().hash().digest().size(), 65536u);
      ++answered;
    }
  }
  EXPECT_EQ(answered, 8u);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// A client that writes and never reads: the daemon stops reading it once the Stream holds its
// budget of unanswered requests and answers, so the client's writes stall and memory stays put.
TEST(Backpressure, StreamClientThatNeverReadsPinsBoundedMemory) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--log-level", "warn"})) << d.log();
  GoodClient good(d);
  auto stub = Crypto::NewStub(OwnChannel(d.target(), "attacker"));
  grpc::ClientContext ctx;
  auto stream = stub->Stream(&ctx);
  std::atomic<int> written{0};
  std::atomic<bool> write_failed{false};
  std::thread writer([&] {
    // Each message: 16 items of 64 KiB SHAKE output with 64 KiB inputs (2 MiB held per message).
    StreamRequest req;
    for (int i = 0; i < 16; ++i) {
      *req.add_items()->mutable_operation() = Shake(65536, std::string(65536, 'a'));
    }
    for (int i = 0; i < 4096; ++i) {  // 8 GiB if nothing pushed back
      if (!stream->Write(req)) {
        write_failed = true;
        return;
      }
      written.fetch_add(1);
    }
  });
  // Wait until the writes stall: no progress for a while.
  int last = -1;
  int still = 0;
  for (int i = 0; i < 600 && still < 20; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    good.Sample();
    const int now = written.load();
    still = now == last ? still + 1 : 0;
    last = now;
  }
  EXPECT_LT(written.load(), 4096) << "the daemon never pushed back";
  ExpectServedAndBounded(good);
  ctx.TryCancel();
  writer.join();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(Daemon::Health(d.Channel()), "SERVING");
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

class HashStreamLimits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon;
    ASSERT_TRUE(daemon_->Start({"--hash-stream-max-bytes", "1048576", "--hash-stream-idle", "3",
                                "--hash-stream-max-duration", "6", "--max-hash-streams", "3",
                                "--log-level", "warn"}))
        << daemon_->log();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Terminate(), 0) << daemon_->log();
    delete daemon_;
  }
  static Daemon* daemon_;
};
Daemon* HashStreamLimits::daemon_ = nullptr;

HashStreamRequest Chunk(size_t n) {
  HashStreamRequest m;
  m.set_algorithm(SHA3_256);
  m.set_data(std::string(n, 'h'));
  return m;
}

TEST_F(HashStreamLimits, TotalBytesAreCapped) {
  auto stub = daemon_->Crypto();
  HashResponse resp;
  auto ctx = Ctx();
  auto writer = stub->HashStream(ctx.get(), &resp);
  for (int i = 0; i < 24; ++i) {  // 24 x 64 KiB = 1.5 MiB > 1 MiB
    if (!writer->Write(Chunk(65536))) break;
  }
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_TRUE(Contains(s.error_message(), "--hash-stream-max-bytes")) << s.error_message();
}

TEST_F(HashStreamLimits, IdleStreamIsEnded) {
  auto stub = daemon_->Crypto();
  HashResponse resp;
  auto ctx = Ctx();
  auto writer = stub->HashStream(ctx.get(), &resp);
  ASSERT_TRUE(writer->Write(Chunk(10)));
  // Send nothing more: the daemon ends the call after --hash-stream-idle (3 s), well before the
  // client's own deadline (60 s). Finish waits for the daemon's status.
  grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_TRUE(Contains(s.error_message(), "--hash-stream-idle")) << s.error_message();
}

TEST_F(HashStreamLimits, DurationIsCapped) {
  auto stub = daemon_->Crypto();
  HashResponse resp;
  auto ctx = Ctx();
  auto writer = stub->HashStream(ctx.get(), &resp);
  // Keeps sending (never idle) for longer than --hash-stream-max-duration (6 s).
  for (int i = 0; i < 240; ++i) {  // 240 x 50 ms or more: twice the limit
    if (!writer->Write(Chunk(16))) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_TRUE(Contains(s.error_message(), "--hash-stream-max-duration")) << s.error_message();
}

// The stream cap on a daemon of its own, whose idle and duration limits are far away: with the
// 3 s / 6 s limits above, a slow machine (ASan, a loaded CI runner) could end a held stream for
// idleness while the test still opens the others, which frees its slot.
class HashStreamSlots : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon;
    ASSERT_TRUE(daemon_->Start({"--hash-stream-idle", "300", "--hash-stream-max-duration", "600",
                                "--max-hash-streams", "3", "--log-level", "warn"}))
        << daemon_->log();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Terminate(), 0) << daemon_->log();
    delete daemon_;
  }
  static Daemon* daemon_;
};
Daemon* HashStreamSlots::daemon_ = nullptr;

TEST_F(HashStreamSlots, ConcurrentStreamsAreCapped) {
  // No stream of another test shares this daemon; wait anyway until it reports none in flight.
  for (int i = 0; i < 200; ++i) {
    if (MetricValue(HttpGet(daemon_->metrics_port(), "/metrics"), "pqcd_inflight_requests") == 0) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  auto stub = daemon_->Crypto();
  std::vector<std::unique_ptr<grpc::ClientContext>> ctxs;
  std::vector<HashResponse> resps(4);
  std::vector<std::unique_ptr<grpc::ClientWriter<HashStreamRequest>>> writers;
  for (int i = 0; i < 3; ++i) {
    ctxs.push_back(Ctx());
    writers.push_back(stub->HashStream(ctxs.back().get(), &resps[i]));
    ASSERT_TRUE(writers.back()->Write(Chunk(1)));
  }
  // A slot is taken when the daemon creates the call's handler, which may happen in any order
  // for calls of one channel: wait until it reports the three in flight, so that the fourth is
  // the one refused.
  for (int i = 0; i < 200; ++i) {
    if (MetricValue(HttpGet(daemon_->metrics_port(), "/metrics"), "pqcd_inflight_requests") >= 3) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  // The fourth is refused at once (the three open ones hold their slots until they end).
  for (int attempt = 0;; ++attempt) {
    auto ctx = Ctx();
    auto w = stub->HashStream(ctx.get(), &resps[3]);
    w->Write(Chunk(1));
    w->WritesDone();
    grpc::Status s = w->Finish();
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      EXPECT_TRUE(Contains(s.error_message(), "--max-hash-streams")) << s.error_message();
      break;
    }
    ASSERT_LT(attempt, 3) << s.error_code() << " " << s.error_message();
  }
  for (auto& w : writers) {
    w->WritesDone();
    EXPECT_TRUE(w->Finish().ok());
  }
  // Slots are given back, each when gRPC is done with its stream (just after the client's Finish
  // returns, on a server thread): a new stream works, at the latest a few polls later.
  grpc::Status last;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto ctx = Ctx();
    HashResponse resp;
    auto w = stub->HashStream(ctx.get(), &resp);
    w->Write(Chunk(3));
    w->WritesDone();
    last = w->Finish();
    if (last.ok()) break;
    ASSERT_EQ(last.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << last.error_message();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(last.ok()) << last.error_code() << " " << last.error_message();
}

// Key management has its own bounded queue: a flood of Imports is partly refused with
// RESOURCE_EXHAUSTED while crypto calls keep being served, and callers without the right to hold
// keys are refused before anything is queued.
TEST(KeyManagement, FloodIsBoundedAndRightsAreCheckedFirst) {
  Daemon d;
  TempDir data;
  {
    std::ofstream kek(data / "kek");
    kek << std::string(64, 'a') << "\n";
  }
  ::chmod((data / "kek").c_str(), 0600);
  ASSERT_TRUE(d.Start({"--allow-insecure-tcp", "--key-queue", "2", "--data-dir", data / "keys",
                       "--kek-file", data / "kek", "--log-level", "warn"}))
      << d.log();
  GoodClient good(d);
  auto keys = Keys::NewStub(OwnChannel(d.target(), "flood"));
  // Seeds make Import derive the key pair (work on the key-management thread).
  ImportKeyRequest req;
  req.set_algorithm(ML_DSA_87);
  req.set_private_key(std::string(32, '\x07'));
  struct Call {
    grpc::ClientContext ctx;
    KeyInfo resp;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Call>> calls(200);
  grpc::CompletionQueue cq;
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i] = std::make_unique<Call>();
    calls[i]->ctx.set_deadline(std::chrono::system_clock::now() + seconds(120));
    req.set_key_id("flood-" + std::to_string(i));
    auto rpc = keys->AsyncImport(&calls[i]->ctx, req, &cq);
    rpc->Finish(&calls[i]->resp, &calls[i]->status, calls[i].get());
  }
  int ok = 0, exhausted = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    void* tag;
    bool fine;
    ASSERT_TRUE(cq.Next(&tag, &fine));
    auto* call = static_cast<Call*>(tag);
    if (call->status.ok()) {
      ++ok;
    } else if (call->status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      EXPECT_TRUE(Contains(call->status.error_message(), "--key-queue"));
      ++exhausted;
    } else {
      ADD_FAILURE() << call->status.error_code() << " " << call->status.error_message();
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(exhausted, 0) << "200 concurrent Imports never filled a queue of 2";
  ExpectServedAndBounded(good);
  cq.Shutdown();
  EXPECT_EQ(d.Terminate(), 0) << d.log();

  // Without --allow-insecure-tcp an anonymous caller is refused before anything is queued.
  Daemon strict;
  ASSERT_TRUE(strict.Start({"--key-queue", "1", "--log-level", "warn"})) << strict.log();
  auto k2 = strict.Keys();
  for (int i = 0; i < 20; ++i) {
    DeleteKeyRequest del;
    del.set_key_id("x");
    DeleteKeyResponse dresp;
    auto ctx = Ctx();
    EXPECT_EQ(k2->Delete(ctx.get(), del, &dresp).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(strict.Terminate(), 0) << strict.log();
}

// --max-concurrent-streams bounds the calls one connection may have in progress: calls beyond it
// wait for a slot on that connection, while other connections are served.
TEST(GrpcLimits, ConcurrentStreamsPerConnectionAreBounded) {
  Daemon d;
  ASSERT_TRUE(
      d.Start({"--max-concurrent-streams", "2", "--grpc-memory-mb", "64", "--log-level", "warn"}))
      << d.log();
  auto hog = Crypto::NewStub(OwnChannel(d.target(), "hog"));
  std::vector<std::unique_ptr<grpc::ClientContext>> ctxs;
  std::vector<HashResponse> resps(2);
  std::vector<std::unique_ptr<grpc::ClientWriter<HashStreamRequest>>> open;
  for (int i = 0; i < 2; ++i) {
    ctxs.push_back(Ctx());
    open.push_back(hog->HashStream(ctxs.back().get(), &resps[i]));
    ASSERT_TRUE(open.back()->Write(Chunk(1)));
  }
  // A third call on the hog's connection cannot start while both streams are open.
  HashRequest req;
  req.set_algorithm(SHA3_256);
  req.set_data("abc");
  HashResponse resp;
  auto short_ctx = Ctx(milliseconds(1500));
  grpc::Status s = hog->Hash(short_ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  // Another connection is served.
  auto other = Crypto::NewStub(OwnChannel(d.target(), "other"));
  auto ctx = Ctx();
  s = other->Hash(ctx.get(), req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  for (auto& w : open) {
    w->WritesDone();
    EXPECT_TRUE(w->Finish().ok());
  }
  auto ctx2 = Ctx();
  EXPECT_TRUE(hog->Hash(ctx2.get(), req, &resp).ok());
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

}  // namespace
}  // namespace pqcd::testing
