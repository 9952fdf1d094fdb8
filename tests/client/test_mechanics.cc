// The client library's mechanics against small in-process gRPC test servers (scripted answers, no
// crypto): deadlines, the retry rule, status mapping, Batch and Stream, round robin over several
// targets, Unix sockets, health.
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pqc/v1/crypto.grpc.pb.h"
#include "pqcd/client/client.h"

namespace pqcd::client {
namespace {

// Scripted Crypto service: Hash returns the input reversed (or sleeps / fails per the data),
// Encaps always fails UNAVAILABLE after being received, Batch echoes each hash item. Stream
// echoes each hash item's data: a single-form message at once in single form, a packed one in one
// packed answer in reverse order; "invalid" (or a non-hash item) fails that item, "sleep" is
// never answered. With old_stream, Stream behaves like a daemon from before packed messages: it
// ignores `items` and answers such a message as an empty operation (id 0, INVALID_ARGUMENT).
class ScriptedCrypto final : public pqc::v1::Crypto::Service {
 public:
  explicit ScriptedCrypto(int tag) : tag_(tag) {}
  std::atomic<int> hash_calls{0};
  std::atomic<int> encaps_calls{0};
  std::atomic<int> stream_calls{0};
  std::atomic<bool> old_stream{false};
  // Stream messages as read: operations in each (-1 for the single form).
  std::mutex log_mu;
  std::vector<int> stream_messages;
  std::vector<std::string> stream_items;  // every operation's data, as read (single or packed)

  std::vector<int> StreamMessages() {
    std::lock_guard lock(log_mu);
    return stream_messages;
  }
  std::vector<std::string> StreamItems() {
    std::lock_guard lock(log_mu);
    return stream_items;
  }

  grpc::Status Hash(grpc::ServerContext* ctx, const pqc::v1::HashRequest* req,
                    pqc::v1::HashResponse* resp) override {
    ++hash_calls;
    if (req->data() == "sleep") {
      while (!ctx->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    if (req->data() == "invalid") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "data: bad");
    }
    resp->set_digest(std::string(req->data().rbegin(), req->data().rend()) + std::to_string(tag_));
    return grpc::Status::OK;
  }
  grpc::Status Encaps(grpc::ServerContext*, const pqc::v1::EncapsRequest*,
                      pqc::v1::EncapsResponse*) override {
    ++encaps_calls;
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "draining");
  }
  grpc::Status HashStream(grpc::ServerContext*, grpc::ServerReader<pqc::v1::HashStreamRequest>* r,
                          pqc::v1::HashResponse* resp) override {
    pqc::v1::HashStreamRequest m;
    std::string all;
    int alg = -1;
    while (r->Read(&m)) {
      if (alg < 0) alg = m.algorithm();
      all += m.data();
    }
    resp->set_digest(std::to_string(alg) + ":" + all);
    return grpc::Status::OK;
  }
  grpc::Status Batch(grpc::ServerContext*, const pqc::v1::BatchRequest* req,
                     pqc::v1::BatchResponse* resp) override {
    for (const auto& op : req->operations()) {
      auto* r = resp->add_results();
      if (op.has_hash() && op.hash().data() != "invalid") {
        r->mutable_hash()->set_digest(op.hash().data());
      } else {
        r->set_code(grpc::StatusCode::INVALID_ARGUMENT);
        r->set_message("item: bad");
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status Stream(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<pqc::v1::StreamResponse, pqc::v1::StreamRequest>* stream) override {
    ++stream_calls;
    auto run = [](const pqc::v1::Operation& op, pqc::v1::OperationResult* r) {
      if (!op.has_hash() || op.hash().data() == "invalid") {
        r->set_code(grpc::StatusCode::INVALID_ARGUMENT);
        r->set_message("item: bad");
      } else {
        r->mutable_hash()->set_digest(op.hash().data());
      }
    };
    pqc::v1::StreamRequest req;
    while (stream->Read(&req)) {
      {
        std::lock_guard lock(log_mu);
        stream_messages.push_back(req.items_size() > 0 ? req.items_size() : -1);
        if (req.items_size() == 0 || !old_stream) {
          if (req.has_operation()) stream_items.push_back(req.operation().hash().data());
          for (const auto& item : req.items())
            stream_items.push_back(item.operation().hash().data());
        }
      }
      pqc::v1::StreamResponse resp;
      if (req.items_size() == 0 || old_stream) {  // single form, or an old daemon
        if (req.operation().hash().data() == "sleep") continue;
        resp.set_id(req.id());
        if (req.has_operation()) {
          run(req.operation(), resp.mutable_result());
        } else {
          resp.mutable_result()->set_code(grpc::StatusCode::INVALID_ARGUMENT);
          resp.mutable_result()->set_message("op: the operation is empty");
        }
      } else {
        for (int i = req.items_size() - 1; i >= 0; --i) {  // out of order on purpose
          const auto& item = req.items(i);
          if (item.operation().hash().data() == "sleep") continue;
          auto* r = resp.add_results();
          r->set_id(item.id());
          run(item.operation(), r->mutable_result());
        }
        if (resp.results_size() == 0) continue;
      }
      if (!stream->Write(resp)) break;
    }
    return grpc::Status::OK;
  }

 private:
  int tag_;
};

class TestServer {
 public:
  // address: "127.0.0.1:0" (picks a port) or "unix:PATH".
  explicit TestServer(const std::string& address, int tag = 0) : service_(tag) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder b;
    b.AddListeningPort(address, grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
    address_ = address.rfind("unix:", 0) == 0 ? address : "127.0.0.1:" + std::to_string(port_);
  }
  ~TestServer() { server_->Shutdown(std::chrono::system_clock::now()); }
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  ScriptedCrypto& service() { return service_; }

 private:
  ScriptedCrypto service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

std::unique_ptr<Client> Connect(std::vector<std::string> targets, int max_attempts = 5) {
  ClientOptions o;
  o.targets = std::move(targets);
  o.max_attempts = max_attempts;
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

int FreePort() {
  // Bind port 0 through a throwaway gRPC server, note the port and shut it down.
  TestServer s("127.0.0.1:0");
  return s.port();
}

// A TCP listener on a free loopback port that resets every connection it accepts: the calls a
// test starts "before the daemon listens" have provably tried and failed once when
// AwaitAttempt returns true (a condition to wait for, instead of a fixed sleep). Close() frees
// the port for the real server (no TIME_WAIT: the resets use SO_LINGER 0).
class ResettingListener {
 public:
  explicit ResettingListener(int port = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    socklen_t len = sizeof(a);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "loopback listener: " << std::strerror(errno);
    }
    port_ = ntohs(a.sin_port);
  }
  ~ResettingListener() { Close(); }
  int port() const { return port_; }
  bool AwaitAttempt(int timeout_ms = 20000) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) return false;
    const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return false;
    const linger reset{1, 0};
    setsockopt(c, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(c);
    return true;
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(Mechanics, SyncAndAsyncUnary) {
  TestServer server("127.0.0.1:0");
  auto c = Connect({server.address()});
  auto r = c->Hash({Algorithm::kSha3_256, "abc", 0});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->digest, "cba0");

  std::promise<absl::StatusOr<HashResult>> p;
  c->HashAsync({Algorithm::kSha3_256, "xyz", 0},
               [&](absl::StatusOr<HashResult> res) { p.set_value(std::move(res)); });
  auto ar = p.get_future().get();
  ASSERT_TRUE(ar.ok()) << ar.status();
  EXPECT_EQ(ar->digest, "zyx0");

  std::promise<absl::StatusOr<Result>> p2;
  c->RunAsync(HashOp{Algorithm::kSha3_256, "12", 0},
              [&](absl::StatusOr<Result> res) { p2.set_value(std::move(res)); });
  auto rr = p2.get_future().get();
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(std::get<HashResult>(*rr).digest, "210");
}

TEST(Mechanics, StatusCodesAndMessagesPassThrough) {
  TestServer server("127.0.0.1:0");
  auto c = Connect({server.address()});
  auto r = c->Hash({Algorithm::kSha3_256, "invalid", 0});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "data: bad");
}

TEST(Mechanics, EveryCallHasADeadline) {
  TestServer server("127.0.0.1:0");
  auto c = Connect({server.address()});
  CallOptions call;
  call.timeout = absl::Milliseconds(200);
  const absl::Time start = absl::Now();
  auto r = c->Hash({Algorithm::kSha3_256, "sleep", 0}, call);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  // An infinite timeout is replaced by the default (here short), never infinite.
  ClientOptions o;
  o.targets = {server.address()};
  o.default_timeout = absl::Milliseconds(300);
  auto c2 = *Client::Create(o);
  call.timeout = absl::InfiniteDuration();
  EXPECT_EQ(c2->Hash({Algorithm::kSha3_256, "sleep", 0}, call).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(Mechanics, NoRetryOnceTheRequestReachedADaemon) {
  TestServer server("127.0.0.1:0");
  auto c = Connect({server.address()}, /*max_attempts=*/5);
  auto r = c->Encaps({Algorithm::kMlKem768, Key::Raw("pk")});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server.service().encaps_calls.load(), 1);

  std::promise<absl::Status> p;
  c->EncapsAsync({Algorithm::kMlKem768, Key::Raw("pk")},
                 [&](absl::StatusOr<EncapsResult> res) { p.set_value(res.status()); });
  EXPECT_EQ(p.get_future().get().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server.service().encaps_calls.load(), 2);
}

TEST(Mechanics, RetriesWhenNoDaemonWasReachable) {
  ResettingListener nobody;
  const std::string address = "127.0.0.1:" + std::to_string(nobody.port());
  ClientOptions o;
  o.targets = {address};
  o.max_attempts = 40;
  o.initial_backoff = absl::Milliseconds(20);
  o.max_backoff = absl::Milliseconds(100);
  auto c = *Client::Create(o);
  // Sync and async calls start before the daemon listens; both must succeed once it does.
  std::promise<absl::StatusOr<HashResult>> async_result;
  auto sync_result = std::async(std::launch::async, [&] {
    return c->Hash({Algorithm::kSha3_256, "ab", 0});
  });
  c->HashAsync({Algorithm::kSha3_256, "cd", 0},
               [&](absl::StatusOr<HashResult> r) { async_result.set_value(std::move(r)); });
  ASSERT_TRUE(nobody.AwaitAttempt()) << "the calls never tried to connect";
  nobody.Close();
  TestServer server(address);
  auto s = sync_result.get();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->digest, "ba0");
  auto a = async_result.get_future().get();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->digest, "dc0");
  EXPECT_EQ(server.service().hash_calls.load(), 2);
}

TEST(Mechanics, BatchAndPipeline) {
  TestServer server("127.0.0.1:0");
  auto c = Connect({server.address()});
  std::vector<Operation> ops;
  for (int i = 0; i < 300; ++i) {
    ops.push_back(HashOp{Algorithm::kSha3_256, i == 7 ? "invalid" : absl::StrCat("m", i), 0});
  }
  auto one = c->Batch({ops.begin(), ops.begin() + 10});
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->size(), 10u);
  EXPECT_EQ(std::get<HashResult>(*(*one)[3]).digest, "m3");
  EXPECT_EQ((*one)[7].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*one)[7].status().message(), "item: bad");

  auto all = c->RunPipelined(ops, {.batch_size = 16, .max_inflight = 4});
  ASSERT_EQ(all.size(), ops.size());
  for (int i = 0; i < 300; ++i) {
    if (i == 7) {
      EXPECT_FALSE(all[i].ok());
    } else {
      ASSERT_TRUE(all[i].ok()) << i << all[i].status();
      EXPECT_EQ(std::get<HashResult>(*all[i]).digest, absl::StrCat("m", i));
    }
  }
}

TEST(Mechanics, StreamMatchesAnswersById) {
  TestServer server("127.0.0.1:0");
  auto c = Connect({server.address()});
  auto stream = c->OpenStream({.max_inflight = 8});
  ASSERT_TRUE(stream.ok()) << stream.status();
  std::mutex mu;
  std::map<int, std::string> got;
  for (int i = 0; i < 101; ++i) {
    ASSERT_TRUE((*stream)
                    ->Submit(HashOp{Algorithm::kSha3_256, absl::StrCat("s", i), 0},
                             [&, i](absl::StatusOr<Result> r) {
                               std::lock_guard lock(mu);
                               got[i] = r.ok() ? std::get<HashResult>(*r).digest
                                               : std::string(r.status().message());
                             })
                    .ok());
  }
  EXPECT_TRUE((*stream)->Finish().ok());
  ASSERT_EQ(got.size(), 101u);
  for (int i = 0; i < 101; ++i) EXPECT_EQ(got[i], absl::StrCat("s", i));
  EXPECT_FALSE((*stream)->Submit(HashOp{}, [](absl::StatusOr<Result>) {}).ok());
}

// ---- Stream packing
// ------------------------------------------------------------------------------- Opens a Stream
// and submits "trigger"; the trigger's callback submits one hash operation per entry of `data`. A
// stream holds its writes while it delivers answers, so these leave together, packed max_pack to a
// message, whatever the timing. Returns each answer (digest or status) by data, and the stream's
// counters.
std::map<std::string, absl::StatusOr<std::string>> TriggeredStream(
    Client& c, size_t max_pack, const std::vector<std::string>& data, StreamStats* stats,
    int* answers_out = nullptr) {
  auto stream = c.OpenStream({.max_inflight = 256, .max_pack = max_pack});
  EXPECT_TRUE(stream.ok()) << stream.status();
  if (!stream.ok()) return {};
  Stream* s = stream->get();
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, absl::StatusOr<std::string>> got;
  int answers = 0;
  auto record = [&](std::string d) {
    return [&, d](absl::StatusOr<Result> r) {
      std::lock_guard lock(mu);
      got.emplace(d, r.ok() ? absl::StatusOr<std::string>(std::get<HashResult>(*r).digest)
                            : absl::StatusOr<std::string>(r.status()));
      ++answers;
      cv.notify_all();
    };
  };
  EXPECT_TRUE(
      s->Submit(HashOp{Algorithm::kSha3_256, "trigger", 0}, [&, s](absl::StatusOr<Result> r) {
         for (const auto& d : data) {
           EXPECT_TRUE(s->Submit(HashOp{Algorithm::kSha3_256, d, 0}, record(d)).ok());
         }
         record("trigger")(std::move(r));
       }).ok());
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return answers == static_cast<int>(data.size()) + 1; });
  }
  EXPECT_TRUE(s->Finish().ok());
  if (stats != nullptr) *stats = s->stats();
  std::lock_guard lock(mu);
  if (answers_out != nullptr) *answers_out = answers;
  return got;
}

std::vector<std::string> Names(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(absl::StrCat(prefix, i));
  return out;
}

TEST(Mechanics, StreamPacksWhatIsQueuedBehindAWrite) {
  // -1: a single-form message; n: a packed message of n operations.
  const std::map<size_t, std::vector<int>> expected = {
      {1, std::vector<int>(11, -1)}, {4, {-1, 4, 4, 2}}, {64, {-1, 10}}};
  for (const auto& [max_pack, messages] : expected) {
    SCOPED_TRACE(absl::StrCat("max_pack ", max_pack));
    TestServer server("127.0.0.1:0");
    auto c = Connect({server.address()});
    const auto data = Names("p", 10);
    StreamStats st;
    auto got = TriggeredStream(*c, max_pack, data, &st);
    ASSERT_EQ(got.size(), 11u);
    for (const auto& d : data) {
      ASSERT_TRUE(got.at(d).ok()) << d << got.at(d).status();
      EXPECT_EQ(*got.at(d), d);
    }
    EXPECT_EQ(server.service().StreamMessages(), messages);
    EXPECT_EQ(st.operations_sent, 11u);
    EXPECT_EQ(st.messages_sent, messages.size());
    EXPECT_EQ(st.results_received, 11u);
  }
}

TEST(Mechanics, StreamPackedItemsCarryTheirOwnErrors) {
  TestServer server("127.0.0.1:0");
  auto c = Connect({server.address()});
  auto data = Names("e", 7);
  data.insert(data.begin() + 3, "invalid");
  auto got = TriggeredStream(*c, 64, data, nullptr);
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(got.at("invalid").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.at("invalid").status().message(), "item: bad");
  for (const auto& d : Names("e", 7)) {
    ASSERT_TRUE(got.at(d).ok()) << d << got.at(d).status();
    EXPECT_EQ(*got.at(d), d);
  }
  EXPECT_EQ(server.service().StreamMessages(), (std::vector<int>{-1, 8}));
}

TEST(Mechanics, StreamFallsBackForADaemonWithoutPacking) {
  for (size_t max_pack : {4, 64}) {
    SCOPED_TRACE(absl::StrCat("max_pack ", max_pack));
    TestServer server("127.0.0.1:0");
    server.service().old_stream = true;
    auto c = Connect({server.address()});
    const auto data = Names("o", 10);
    int answers = 0;
    auto got = TriggeredStream(*c, max_pack, data, nullptr, &answers);
    EXPECT_EQ(answers, 11);  // each operation answered once
    for (const auto& d : data) {
      ASSERT_TRUE(got.at(d).ok()) << d << got.at(d).status();
      EXPECT_EQ(*got.at(d), d);
    }
    // The old daemon ran every operation exactly once (it runs only single-form messages).
    auto ran = server.service().StreamItems();
    std::sort(ran.begin(), ran.end());
    auto want = data;
    want.push_back("trigger");
    std::sort(want.begin(), want.end());
    EXPECT_EQ(ran, want);
    const auto messages = server.service().StreamMessages();
    EXPECT_GT(std::count_if(messages.begin(), messages.end(), [](int n) { return n > 1; }), 0);
  }
}

// ---- The batching client
// --------------------------------------------------------------------------
std::unique_ptr<Client> ConnectBatching(std::vector<std::string> targets,
                                        BatchingOptions batching = {.enabled = true},
                                        int max_attempts = 5) {
  ClientOptions o;
  o.targets = std::move(targets);
  o.max_attempts = max_attempts;
  o.initial_backoff = absl::Milliseconds(20);
  o.max_backoff = absl::Milliseconds(100);
  o.batching = batching;
  o.batching.enabled = true;
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

// Records the completions of async calls, so that "exactly once" can be checked.
class Completions {
 public:
  Callback<HashResult> Track(std::string name) {
    return [this, name](absl::StatusOr<HashResult> r) {
      std::lock_guard lock(mu_);
      ++count_[name];
      status_[name] = r.status();
      if (r.ok()) digest_[name] = r->digest;
      cv_.notify_all();
    };
  }
  void WaitFor(const std::string& name) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return count_.count(name) > 0; });
  }
  int count(const std::string& name) {
    std::lock_guard lock(mu_);
    return count_.count(name) ? count_[name] : 0;
  }
  absl::Status status(const std::string& name) {
    std::lock_guard lock(mu_);
    return status_[name];
  }
  std::string digest(const std::string& name) {
    std::lock_guard lock(mu_);
    return digest_[name];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> count_;
  std::map<std::string, absl::Status> status_;
  std::map<std::string, std::string> digest_;
};

TEST(Mechanics, BatchingClientCarriesCallsOnASharedStream) {
  TestServer server("127.0.0.1:0");
  auto c = ConnectBatching({server.address()});
  constexpr int kThreads = 8, kCalls = 200;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  Completions async;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const std::string d = absl::StrCat("t", t, "-", i);
        if (i % 2 == 0) {
          auto r = c->Hash({Algorithm::kSha3_256, d, 0});
          if (!r.ok() || r->digest != d) ++wrong;
        } else {
          c->HashAsync({Algorithm::kSha3_256, d, 0}, async.Track(d));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 1; i < kCalls; i += 2) {
      const std::string d = absl::StrCat("t", t, "-", i);
      async.WaitFor(d);
      EXPECT_EQ(async.digest(d), d);
    }
  }
  EXPECT_EQ(wrong.load(), 0);
  // Per-call errors: the item's own code and message, for that call only.
  auto bad = c->Hash({Algorithm::kSha3_256, "invalid", 0});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "item: bad");
  EXPECT_EQ(c->Encaps({Algorithm::kMlKem768, Key::Raw("pk")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto ok = c->Run(HashOp{Algorithm::kSha3_256, "after", 0});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(std::get<HashResult>(*ok).digest, "after");
  // One shared stream, no unary call.
  EXPECT_EQ(server.service().stream_calls.load(), 1);
  EXPECT_EQ(server.service().hash_calls.load(), 0);
  EXPECT_EQ(server.service().encaps_calls.load(), 0);
  const StreamStats st = c->batching_stats();
  EXPECT_EQ(st.operations_sent, kThreads * kCalls + 3u);
  EXPECT_LE(st.messages_sent, st.operations_sent);
  EXPECT_EQ(st.streams_opened, 1u);
}

TEST(Mechanics, BatchingClientSyncCallInsideACallback) {
  // A sync call made inside a callback of the batching client must not wait for the shared stream
  // (gRPC may run that stream's next reactions on this thread, after the callback): it goes unary,
  // which the scripted Hash shows (reversed data and the server's tag).
  TestServer server("127.0.0.1:0");
  auto c = ConnectBatching({server.address()});
  std::promise<absl::StatusOr<HashResult>> inner;
  c->HashAsync({Algorithm::kSha3_256, "outer", 0}, [&](absl::StatusOr<HashResult> r) {
    EXPECT_TRUE(r.ok()) << r.status();
    inner.set_value(c->Hash({Algorithm::kSha3_256, "inner", 0}, {.timeout = absl::Seconds(10)}));
  });
  auto r = inner.get_future().get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->digest, "renni0");
  EXPECT_EQ(server.service().hash_calls.load(), 1);
  EXPECT_EQ(server.service().stream_calls.load(), 1);
}

TEST(Mechanics, BatchingClientKeepsEachCallsDeadline) {
  TestServer server("127.0.0.1:0");
  Completions done;
  {
    // Two operations fill the stream's in-flight room and are never answered.
    auto c = ConnectBatching({server.address()}, {.max_inflight = 2});
    c->HashAsync({Algorithm::kSha3_256, "sleep", 0}, done.Track("sleep1"),
                 {.timeout = absl::Seconds(60)});
    c->HashAsync({Algorithm::kSha3_256, "sleep", 0}, done.Track("sleep2"),
                 {.timeout = absl::Seconds(60)});
    // Queued in the client behind them: its deadline passes before it is written.
    auto queued =
        c->Hash({Algorithm::kSha3_256, "queued", 0}, {.timeout = absl::Milliseconds(200)});
    EXPECT_EQ(queued.status().code(), absl::StatusCode::kDeadlineExceeded) << queued.status();
    EXPECT_EQ(done.count("sleep1"), 0);
    const auto items = server.service().StreamItems();
    EXPECT_EQ(std::count(items.begin(), items.end(), "queued"), 0) << "an expired call was sent";
  }
  // Destroying the client completed the unanswered calls, once each.
  EXPECT_EQ(done.count("sleep1"), 1);
  EXPECT_EQ(done.count("sleep2"), 1);
  EXPECT_EQ(done.status("sleep1").code(), absl::StatusCode::kCancelled);

  // A call written and unanswered: DEADLINE_EXCEEDED at its deadline; the stream goes on.
  auto c = ConnectBatching({server.address()});
  c->HashAsync({Algorithm::kSha3_256, "sleep", 0}, done.Track("sleep3"),
               {.timeout = absl::Milliseconds(200)});
  done.WaitFor("sleep3");
  EXPECT_EQ(done.status("sleep3").code(), absl::StatusCode::kDeadlineExceeded);
  auto after = c->Hash({Algorithm::kSha3_256, "after", 0});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->digest, "after");
  EXPECT_EQ(c->batching_stats().streams_opened, 1u);
  c.reset();
  EXPECT_EQ(done.count("sleep3"), 1);
}

TEST(Mechanics, BatchingClientRetriesWhenNoDaemonWasReachable) {
  const int port = FreePort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  {
    // No retry allowed: UNAVAILABLE, not a hang.
    auto c = ConnectBatching({address}, {}, /*max_attempts=*/1);
    EXPECT_EQ(c->Hash({Algorithm::kSha3_256, "x", 0}).status().code(),
              absl::StatusCode::kUnavailable);
  }
  // From here the port resets connections until the calls below have tried it once.
  ResettingListener nobody(port);
  auto c = ConnectBatching({address}, {}, /*max_attempts=*/40);
  Completions done;
  auto sync_result = std::async(std::launch::async, [&] {
    return c->Hash({Algorithm::kSha3_256, "ab", 0});
  });
  c->HashAsync({Algorithm::kSha3_256, "cd", 0}, done.Track("cd"));
  c->HashAsync({Algorithm::kSha3_256, "wfr", 0}, done.Track("wfr"),
               {.timeout = absl::Seconds(20), .wait_for_ready = true});
  ASSERT_TRUE(nobody.AwaitAttempt()) << "the calls never tried to connect";
  nobody.Close();
  TestServer server(address);
  auto s = sync_result.get();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->digest, "ab");
  done.WaitFor("cd");
  EXPECT_EQ(done.digest("cd"), "cd") << done.status("cd");
  done.WaitFor("wfr");
  EXPECT_EQ(done.digest("wfr"), "wfr") << done.status("wfr");
  EXPECT_EQ(server.service().hash_calls.load(), 0);
  auto items = server.service().StreamItems();
  std::sort(items.begin(), items.end());
  EXPECT_EQ(items, (std::vector<std::string>{"ab", "cd", "wfr"}));  // each ran once
}

TEST(Mechanics, BatchingClientSurvivesADaemonRestart) {
  const int port = FreePort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  auto c = ConnectBatching({address});
  Completions done;
  {
    TestServer first(address);
    ASSERT_TRUE(c->Hash({Algorithm::kSha3_256, "before", 0}, {.wait_for_ready = true}).ok());
    for (int i = 0; i < 3; ++i) {
      c->HashAsync({Algorithm::kSha3_256, "sleep", 0}, done.Track(absl::StrCat("inflight", i)),
                   {.timeout = absl::Seconds(60)});
    }
    while (first.service().StreamItems().size() < 4) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }  // the daemon goes away with three calls unanswered
  for (int i = 0; i < 3; ++i) {
    const std::string name = absl::StrCat("inflight", i);
    done.WaitFor(name);
    EXPECT_EQ(done.status(name).code(), absl::StatusCode::kUnavailable) << done.status(name);
  }
  TestServer second(address);
  auto r = c->Hash({Algorithm::kSha3_256, "later", 0},
                   {.timeout = absl::Seconds(20), .wait_for_ready = true});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->digest, "later");
  EXPECT_EQ(second.service().stream_calls.load(), 1);
  c.reset();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(done.count(absl::StrCat("inflight", i)), 1);
}

TEST(Mechanics, HashStreamSendsEveryChunk) {
  TestServer server("127.0.0.1:0");
  auto c = Connect({server.address()});
  int n = 0;
  auto r = c->HashStream(Algorithm::kSha3_512, [&](std::string* chunk) {
    if (n == 3) return false;
    *chunk = absl::StrCat("c", n++);
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->digest, "23:c0c1c2");
  std::promise<absl::StatusOr<HashResult>> p;
  c->HashStreamAsync(Algorithm::kShake128, {"x", "y"},
                     [&](absl::StatusOr<HashResult> res) { p.set_value(std::move(res)); });
  auto a = p.get_future().get();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->digest, "24:xy");
}

TEST(Mechanics, RoundRobinOverSeveralTargets) {
  TestServer a("127.0.0.1:0", 1), b("127.0.0.1:0", 2);
  auto c = Connect({a.address(), b.address()});
  EXPECT_TRUE(absl::StartsWith(c->channel_target(), "ipv4:"));
  for (int i = 0; i < 40; ++i) {
    auto r = c->Hash({Algorithm::kSha3_256, "x", 0}, {.wait_for_ready = true});
    ASSERT_TRUE(r.ok()) << r.status();
  }
  EXPECT_GT(a.service().hash_calls.load(), 5);
  EXPECT_GT(b.service().hash_calls.load(), 5);
  EXPECT_EQ(a.service().hash_calls.load() + b.service().hash_calls.load(), 40);
}

TEST(Mechanics, UnixSocketTargetAndHealth) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("pqc-client-" + std::to_string(getpid()) + ".sock"))
                               .string();
  {
    TestServer server("unix:" + path);
    auto c = Connect({"unix:" + path});
    auto r = c->Hash({Algorithm::kSha3_256, "u", 0});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->digest, "u0");
    auto h = c->Health();
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(*h, HealthStatus::kServing);
    EXPECT_TRUE(c->WaitForServing(absl::Seconds(5)).ok());
    auto unknown = c->Health("no.such.Service");
    EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
    auto batched = ConnectBatching({"unix:" + path});
    auto b = batched->Hash({Algorithm::kSha3_256, "ub", 0});
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->digest, "ub");
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pqcd::client
