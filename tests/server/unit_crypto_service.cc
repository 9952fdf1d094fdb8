// The start-up check that every method of pqc.v1.Crypto and pqc.v1.Keys has calls that serve it
// (the services are all async: a method no request is posted for would hold its callers). The
// daemon runs the same checks before it serves (server.cc), so every server_test_* that starts it
// depends on them too.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "pqc/v1/crypto.grpc.pb.h"
#include "pqcd/server/crypto_service.h"
#include "pqcd/server/keys_service.h"

namespace pqcd::server {
namespace {

const google::protobuf::ServiceDescriptor& CryptoDescriptor() {
  const google::protobuf::ServiceDescriptor* d =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          pqc::v1::Crypto::service_full_name());
  EXPECT_NE(d, nullptr);
  return *d;
}

TEST(CryptoServiceCheck, TheDaemonServesEveryMethodOfTheProto) {
  EXPECT_TRUE(CryptoService::CheckServesEveryMethod().ok())
      << CryptoService::CheckServesEveryMethod();
}

TEST(CryptoServiceCheck, EachMethodIsPostedOnce) {
  std::vector<std::string_view> served = CryptoService::ServedMethods();
  const google::protobuf::ServiceDescriptor& service = CryptoDescriptor();
  EXPECT_EQ(static_cast<int>(served.size()), service.method_count());
  std::sort(served.begin(), served.end());
  EXPECT_EQ(std::adjacent_find(served.begin(), served.end()), served.end());
}

TEST(CryptoServiceCheck, AMethodWithoutCallsIsNamed) {
  const google::protobuf::ServiceDescriptor& service = CryptoDescriptor();
  const std::vector<std::string_view> all = CryptoService::ServedMethods();
  for (const std::string_view name : all) {
    std::vector<std::string_view> served;
    for (const std::string_view other : all) {
      if (other != name) served.push_back(other);
    }
    const absl::Status s = CheckServesEveryMethod(service, served);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << name;
    const std::string full = "pqc.v1.Crypto." + std::string(name);
    EXPECT_NE(s.message().find(full), std::string_view::npos) << s;
    EXPECT_EQ(s.message().find(full + ","), std::string_view::npos) << "only " << full << ": " << s;
  }
  EXPECT_EQ(CheckServesEveryMethod(service, {}).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(KeysServiceCheck, TheDaemonServesEveryMethodOfTheProto) {
  EXPECT_TRUE(KeysService::CheckServesEveryMethod().ok()) << KeysService::CheckServesEveryMethod();
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          pqc::v1::Keys::service_full_name());
  ASSERT_NE(service, nullptr);
  std::vector<std::string_view> served = KeysService::ServedMethods();
  EXPECT_EQ(static_cast<int>(served.size()), service->method_count());
  served.pop_back();
  const absl::Status s = CheckServesEveryMethod(*service, served);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("pqc.v1.Keys."), std::string_view::npos) << s;
}

}  // namespace
}  // namespace pqcd::server
