#include "pqcd/server/identity.h"

#include <algorithm>

#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"

namespace pqcd::server {

Caller IdentifyCaller(const grpc::ServerContextBase& context, const IdentityPolicy& policy) {
  Caller caller;
  auto auth = context.auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    for (const char* property : {GRPC_X509_SAN_PROPERTY_NAME, GRPC_X509_SUBJECT_PROPERTY_NAME,
                                 GRPC_X509_CN_PROPERTY_NAME}) {
      auto values = auth->FindPropertyValues(property);
      if (!values.empty()) {
        caller.identity.assign(values.front().data(), values.front().size());
        break;
      }
    }
    if (caller.identity.empty()) caller.identity = "anonymous";
    caller.may_hold_keys = caller.identity != "anonymous" || policy.allow_insecure_tcp;
  } else if (context.peer().rfind("unix:", 0) == 0) {
    caller.identity = "local";
    caller.may_hold_keys = true;
  } else {
    caller.identity = "anonymous";
    caller.may_hold_keys = policy.allow_insecure_tcp;
  }
  caller.admin =
      std::find(policy.admins.begin(), policy.admins.end(), caller.identity) != policy.admins.end();
  return caller;
}

}  // namespace pqcd::server
