// Who is calling: the identity that owns held keys.
//   - TLS with a verified client certificate: the first subjectAltName, else the certificate
//   subject;
//   - the Unix socket: "local";
//   - plain TCP (or TLS without a client certificate): "anonymous". Anonymous callers may use given
//     keys, but held keys only when the daemon runs with --allow-insecure-tcp.
#pragma once

#include <string>
#include <vector>

#include "grpcpp/server_context.h"

namespace pqcd::server {

struct Caller {
  std::string identity;
  bool may_hold_keys = false;  // may create/use/see held keys
  bool admin = false;          // may manage every key
};

struct IdentityPolicy {
  bool allow_insecure_tcp = false;
  std::vector<std::string> admins;
};

Caller IdentifyCaller(const grpc::ServerContextBase& context, const IdentityPolicy& policy);

}  // namespace pqcd::server
