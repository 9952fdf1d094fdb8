#include "pqcd/server/crypto_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "crypto_calls.h"

namespace pqcd::server {
namespace {

// Every method the daemon serves, from the files that serve them (crypto_calls.h).
std::vector<CryptoMethod> Methods() {
  const std::span<const CryptoMethod> unary = UnaryMethods();
  std::vector<CryptoMethod> methods(unary.begin(), unary.end());
  methods.push_back(StreamMethod());
  methods.push_back(HashStreamMethod());
  return methods;
}

}  // namespace

absl::Status CheckServesEveryMethod(const google::protobuf::ServiceDescriptor& service,
                                    std::span<const std::string_view> served) {
  std::vector<std::string> missing;
  for (int i = 0; i < service.method_count(); ++i) {
    const google::protobuf::MethodDescriptor& method = *service.method(i);
    if (std::find(served.begin(), served.end(), method.name()) == served.end()) {
      missing.push_back(method.full_name());
    }
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "no call serves ", absl::StrJoin(missing, ", "), " (", service.full_name(),
      " is served on gRPC's async API: a method the daemon posts no request for would hold its "
      "callers until their deadline; give it its calls, e.g. a row in server/src/crypto_unary.cc "
      "or keys_service.cc)"));
}

CryptoService::CryptoService(ServiceContext* ctx)
    : ctx_(ctx), hash_watch_(std::make_unique<HashStreamWatch>()) {}

CryptoService::~CryptoService() = default;

std::vector<std::string_view> CryptoService::ServedMethods() {
  std::vector<std::string_view> names;
  for (const CryptoMethod& method : Methods()) names.emplace_back(method.name);
  return names;
}

absl::Status CryptoService::CheckServesEveryMethod() {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          pqc::v1::Crypto::service_full_name());
  if (service == nullptr) {
    return absl::InternalError(
        absl::StrCat(pqc::v1::Crypto::service_full_name(), " is not in the generated descriptors"));
  }
  const std::vector<std::string_view> served = ServedMethods();
  return server::CheckServesEveryMethod(*service, served);
}

void CryptoService::StartCoreServing(CoreQueues* queues) {
  const CryptoServing serving{ctx_, this, queues, hash_watch_.get()};
  const std::vector<CryptoMethod> methods = Methods();
  for (int q = 0; q < queues->size(); ++q) {
    for (const CryptoMethod& method : methods) method.post(serving, q);
  }
}

}  // namespace pqcd::server
