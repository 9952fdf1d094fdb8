// grpc.health.v1 and grpc.reflection (v1 and v1alpha) as the daemon serves them on its core
// queues (server/src/health_async.h, reflection_async.h): Check, Watch through a drain, and the
// reflection answers a client such as grpcurl relies on. The stubs are our own copies of the
// public protos (pqcd_proto_ops), which are wire-compatible with gRPC's.
#include <signal.h>

#include <set>
#include <string>
#include <vector>

#include "daemon_fixture.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"

namespace pqcd::testing {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

void SetDeadline(grpc::ClientContext* ctx, int seconds = 30) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

// Check of `service`: the status's name, or "error <code>".
std::string Check(Health::Stub& stub, const std::string& service) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, 10);
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  const grpc::Status s = stub.Check(&ctx, request, &response);
  if (!s.ok()) return "error " + std::to_string(s.error_code());
  return HealthCheckResponse::ServingStatus_Name(response.status());
}

// An open Watch of one service.
struct Watch {
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> reader;

  Watch(Health::Stub& stub, const std::string& service) {
    SetDeadline(&ctx);
    HealthCheckRequest request;
    request.set_service(service);
    reader = stub.Watch(&ctx, request);
  }
  // The next status sent, or "end" when the stream ended.
  std::string Next() {
    HealthCheckResponse response;
    if (!reader->Read(&response)) return "end";
    return HealthCheckResponse::ServingStatus_Name(response.status());
  }
};

TEST(HealthTest, CheckAnswersKnownServicesAndNotFoundForOthers) {
  Daemon d;
  ASSERT_TRUE(d.Start({})) << d.log();
  auto stub = Health::NewStub(d.Channel());
  EXPECT_EQ(Check(*stub, ""), "SERVING");
  EXPECT_EQ(Check(*stub, "pqc.v1.Crypto"), "SERVING");
  EXPECT_EQ(Check(*stub, "pqc.v1.Keys"), "SERVING");
  EXPECT_EQ(Check(*stub, "no.such.Service"), "error " + std::to_string(grpc::NOT_FOUND));
  // Checks spread over both workers' queues keep being answered.
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Check(*stub, ""), "SERVING") << i;
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

TEST(HealthTest, WatchSendsServingThenNotServingAtTheDrain) {
  Daemon d;
  ASSERT_TRUE(d.Start({})) << d.log();
  auto stub = Health::NewStub(d.Channel());
  // Several watchers, so that both workers' queues have some.
  std::vector<std::unique_ptr<Watch>> all, crypto;
  for (int i = 0; i < 3; ++i) {
    all.push_back(std::make_unique<Watch>(*stub, ""));
    crypto.push_back(std::make_unique<Watch>(*stub, "pqc.v1.Crypto"));
  }
  Watch unknown(*stub, "no.such.Service");
  for (auto& w : all) EXPECT_EQ(w->Next(), "SERVING");
  for (auto& w : crypto) EXPECT_EQ(w->Next(), "SERVING");
  EXPECT_EQ(unknown.Next(), "SERVICE_UNKNOWN");

  // A watcher the client cancels goes away without disturbing the others.
  {
    Watch cancelled(*stub, "");
    EXPECT_EQ(cancelled.Next(), "SERVING");
    cancelled.ctx.TryCancel();
    EXPECT_EQ(cancelled.Next(), "end");
    EXPECT_EQ(cancelled.reader->Finish().error_code(), grpc::CANCELLED);
  }
  EXPECT_EQ(Check(*stub, ""), "SERVING");

  // The drain: every watcher is sent NOT_SERVING, then its stream ends as the server stops
  // (Read blocks until the message comes: no sleeping).
  d.Signal(SIGTERM);
  for (auto& w : all) EXPECT_EQ(w->Next(), "NOT_SERVING");
  for (auto& w : crypto) EXPECT_EQ(w->Next(), "NOT_SERVING");
  for (auto& w : all) EXPECT_EQ(w->Next(), "end");
  for (auto& w : all) EXPECT_EQ(w->reader->Finish().error_code(), grpc::UNAVAILABLE);
  // The unknown service's watcher was sent nothing new: its stream just ends.
  EXPECT_EQ(unknown.Next(), "end");
  // Open watchers do not hold the shutdown: the daemon exits well before the test's deadlines.
  EXPECT_EQ(d.Wait(std::chrono::seconds(20)), 0) << d.log();
}

// ---- Reflection --------------------------------------------------------------------------------

template <class Version>
class ReflectionTest : public ::testing::Test {};

struct V1 {
  using Service = grpc::reflection::v1::ServerReflection;
  using Request = grpc::reflection::v1::ServerReflectionRequest;
  using Response = grpc::reflection::v1::ServerReflectionResponse;
};
struct V1Alpha {
  using Service = grpc::reflection::v1alpha::ServerReflection;
  using Request = grpc::reflection::v1alpha::ServerReflectionRequest;
  using Response = grpc::reflection::v1alpha::ServerReflectionResponse;
};
using Versions = ::testing::Types<V1, V1Alpha>;
TYPED_TEST_SUITE(ReflectionTest, Versions);

TYPED_TEST(ReflectionTest, ListsServicesAndServesFiles) {
  using Request = typename TypeParam::Request;
  using Response = typename TypeParam::Response;
  Daemon d;
  ASSERT_TRUE(d.Start({})) << d.log();
  auto stub = TypeParam::Service::NewStub(d.Channel());
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto stream = stub->ServerReflectionInfo(&ctx);
  // One request, one answer, in order, on the same stream.
  const auto ask = [&](const Request& request) {
    Response response;
    EXPECT_TRUE(stream->Write(request));
    EXPECT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.valid_host(), request.host());
    EXPECT_EQ(response.original_request().SerializeAsString(), request.SerializeAsString());
    return response;
  };

  Request list;
  list.set_host("localhost");
  list.set_list_services("");
  Response listed = ask(list);
  ASSERT_TRUE(listed.has_list_services_response()) << listed.DebugString();
  std::set<std::string> names;
  for (const auto& service : listed.list_services_response().service()) {
    names.insert(service.name());
  }
  EXPECT_EQ(names, (std::set<std::string>{"pqc.v1.Crypto", "pqc.v1.Keys", "grpc.health.v1.Health",
                                          "grpc.reflection.v1alpha.ServerReflection",
                                          "grpc.reflection.v1.ServerReflection"}));

  // The file of a symbol, with its dependencies: each one a FileDescriptorProto that parses.
  Request by_symbol;
  by_symbol.set_file_containing_symbol("pqc.v1.Crypto");
  Response file = ask(by_symbol);
  ASSERT_TRUE(file.has_file_descriptor_response()) << file.DebugString();
  std::vector<std::string> files;
  bool crypto_has_service = false;
  for (const std::string& bytes : file.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto proto;
    ASSERT_TRUE(proto.ParseFromString(bytes));
    files.push_back(proto.name());
    if (proto.name() == "pqc/v1/crypto.proto") {
      for (const auto& service : proto.service()) crypto_has_service |= service.name() == "Crypto";
    }
  }
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files[0], "pqc/v1/crypto.proto");
  EXPECT_NE(std::find(files.begin(), files.end(), "pqc/v1/common.proto"), files.end());
  EXPECT_TRUE(crypto_has_service);

  // A method's and a message's symbol, and a file by name.
  Request by_method;
  by_method.set_file_containing_symbol("grpc.health.v1.Health.Watch");
  Response method = ask(by_method);
  ASSERT_EQ(method.file_descriptor_response().file_descriptor_proto_size(), 1)
      << method.DebugString();
  Request by_name;
  by_name.set_file_by_filename("pqc/v1/keys.proto");
  Response named = ask(by_name);
  ASSERT_GE(named.file_descriptor_response().file_descriptor_proto_size(), 1)
      << named.DebugString();
  google::protobuf::FileDescriptorProto keys;
  ASSERT_TRUE(keys.ParseFromString(named.file_descriptor_response().file_descriptor_proto(0)));
  EXPECT_EQ(keys.package(), "pqc.v1");

  // Unknown symbols, files and types: NOT_FOUND (5), and the stream goes on.
  Request unknown;
  unknown.set_file_containing_symbol("no.such.Symbol");
  Response error = ask(unknown);
  ASSERT_TRUE(error.has_error_response()) << error.DebugString();
  EXPECT_EQ(error.error_response().error_code(), 5);
  Request unknown_file;
  unknown_file.set_file_by_filename("no/such.proto");
  EXPECT_EQ(ask(unknown_file).error_response().error_code(), 5);
  Request unknown_type;
  unknown_type.set_all_extension_numbers_of_type("no.such.Type");
  EXPECT_EQ(ask(unknown_type).error_response().error_code(), 5);

  // Extensions: our messages have none.
  Request numbers;
  numbers.set_all_extension_numbers_of_type("pqc.v1.HashRequest");
  Response extension_numbers = ask(numbers);
  ASSERT_TRUE(extension_numbers.has_all_extension_numbers_response())
      << extension_numbers.DebugString();
  EXPECT_EQ(extension_numbers.all_extension_numbers_response().base_type_name(),
            "pqc.v1.HashRequest");
  EXPECT_EQ(extension_numbers.all_extension_numbers_response().extension_number_size(), 0);
  Request extension;
  extension.mutable_file_containing_extension()->set_containing_type("pqc.v1.HashRequest");
  extension.mutable_file_containing_extension()->set_extension_number(1000);
  EXPECT_EQ(ask(extension).error_response().error_code(), 5);

  EXPECT_TRUE(stream->WritesDone());
  Response none;
  EXPECT_FALSE(stream->Read(&none));
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

}  // namespace
}  // namespace pqcd::testing
