// The client library's mechanics against small in-process gRPC test servers (scripted answers, no
// crypto): deadlines, the retry rule, status mapping, Batch and Stream, round robin over several
// targets, Unix sockets, health.
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
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
// Encaps always fails UNAVAILABLE after being received, Batch echoes each hash item, Stream
// answers hash items in reverse order of each pair.
class ScriptedCrypto final : public pqc::v1::Crypto::Service {
 public:
  explicit ScriptedCrypto(int tag) : tag_(tag) {}
  std::atomic<int> hash_calls{0};
  std::atomic<int> encaps_calls{0};

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
    pqc::v1::StreamRequest req;
    std::vector<pqc::v1::StreamRequest> held;
    auto answer = [&](const pqc::v1::StreamRequest& q) {
      pqc::v1::StreamResponse resp;
      resp.set_id(q.id());
      resp.mutable_result()->mutable_hash()->set_digest(q.operation().hash().data());
      stream->Write(resp);
    };
    while (stream->Read(&req)) {
      held.push_back(req);
      if (held.size() == 2) {  // answer out of order
        answer(held[1]);
        answer(held[0]);
        held.clear();
      }
    }
    for (const auto& q : held) answer(q);
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
  const int port = FreePort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
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
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
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
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pqcd::client
