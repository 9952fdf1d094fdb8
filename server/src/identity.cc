#include "pqcd/server/identity.h"

#include <algorithm>
#include <charconv>
#include <fstream>

#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"

namespace pqcd::server {
namespace {

constexpr std::string_view kTlsDns = "tls:dns:";
constexpr std::string_view kTlsUri = "tls:uri:";
constexpr std::string_view kUnixUid = "unix:uid:";
constexpr std::string_view kUnixUser = "unix:user:";

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The first property value of `name` that ValidSanValue accepts.
std::optional<std::string> FirstValid(const grpc::AuthContext& auth, const char* name) {
  for (const auto& value : auth.FindPropertyValues(name)) {
    std::string_view v(value.data(), value.size());
    if (ValidSanValue(v)) return std::string(v);
  }
  return std::nullopt;
}

bool ParseUid(std::string_view digits, uint32_t* uid) {
  if (digits.empty() || digits.size() > 10) return false;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *uid);
  return ec == std::errc() && end == digits.data() + digits.size();
}

}  // namespace

bool ValidSanValue(std::string_view value) {
  if (value.empty() || value.size() > kMaxSanBytes) return false;
  return std::all_of(value.begin(), value.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

bool ValidUnixUserName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string UnixIdentity(uint32_t uid, const IdentityPolicy& policy) {
  if (auto it = policy.unix_user_names.find(uid); it != policy.unix_user_names.end()) {
    return std::string(kUnixUser) + it->second;
  }
  return std::string(kUnixUid) + std::to_string(uid);
}

namespace {
bool IsAdmin(const std::string& identity, const IdentityPolicy& policy) {
  return identity != kAnonymous &&
         std::find(policy.admins.begin(), policy.admins.end(), identity) != policy.admins.end();
}
}  // namespace

Caller IdentifyCaller(const grpc::ServerContextBase& context, const IdentityPolicy& policy) {
  Caller caller;
  caller.identity = std::string(kAnonymous);
  auto auth = context.auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    // A verified client certificate. Only the typed SAN properties count: the SPIFFE id (set by
    // gRPC when the certificate has exactly one URI SAN and it is a SPIFFE id), else the first URI
    // SAN, else the first DNS SAN. Subject and CN are not identities.
    std::optional<std::string> uri = FirstValid(*auth, GRPC_PEER_SPIFFE_ID_PROPERTY_NAME);
    if (!uri) uri = FirstValid(*auth, GRPC_PEER_URI_PROPERTY_NAME);
    if (uri) {
      caller.identity = std::string(kTlsUri) + *uri;
    } else if (auto dns = FirstValid(*auth, GRPC_PEER_DNS_PROPERTY_NAME)) {
      caller.identity = std::string(kTlsDns) + *dns;
    }
    // A certificate without a usable SAN: "anonymous", and no held keys even with
    // --allow-insecure-tcp (the operator issued it, so it is a configuration error to surface).
    caller.may_hold_keys = caller.identity != kAnonymous;
  } else if (std::optional<uint32_t> uid;
             policy.unix_peer_uid && (uid = policy.unix_peer_uid(context.peer()))) {
    return UnixCaller(*uid, policy);
  } else {
    caller.may_hold_keys = policy.allow_insecure_tcp;
  }
  caller.admin = IsAdmin(caller.identity, policy);
  return caller;
}

uint32_t OverflowUid() {
  static const uint32_t uid = [] {
    std::ifstream in("/proc/sys/kernel/overflowuid");
    uint32_t v = 65534;
    if (!(in >> v)) v = 65534;
    return v;
  }();
  return uid;
}

Caller UnixCaller(uint32_t uid, const IdentityPolicy& policy) {
  Caller caller;
  caller.identity = UnixIdentity(uid, policy);
  caller.overflow_uid = uid == OverflowUid() && !policy.unix_user_names.contains(uid);
  caller.may_hold_keys = !caller.overflow_uid;
  caller.admin = !caller.overflow_uid && IsAdmin(caller.identity, policy);
  return caller;
}

std::string HeldKeysRefusal(const Caller& caller) {
  if (caller.overflow_uid) {
    return caller.identity +
           " is the kernel's overflow uid: every caller whose uid is not mapped into pqcd's user "
           "namespace shows as it (systemd PrivateUsers=yes, a container's user namespace), so it "
           "cannot own keys; run pqcd in the callers' user namespace, or map the uid to a name "
           "with --unix-user if it really is one caller";
  }
  return "held keys need an authenticated identity (mTLS client certificate or the Unix socket) "
         "or a daemon started with --allow-insecure-tcp";
}

absl::Status ValidateTypedIdentity(std::string_view identity) {
  const auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        "identity '" + std::string(identity.substr(0, 80)) + "': " + std::string(why) +
        "; identities are typed: tls:dns:<DNS SAN>, tls:uri:<URI SAN, e.g. a SPIFFE id>, "
        "unix:uid:<uid> or unix:user:<name from --unix-user>");
  };
  if (StartsWith(identity, kTlsDns) || StartsWith(identity, kTlsUri)) {
    if (!ValidSanValue(identity.substr(kTlsDns.size()))) {
      return invalid("the name must be 1-512 printable ASCII characters without spaces");
    }
    return absl::OkStatus();
  }
  if (StartsWith(identity, kUnixUid)) {
    uint32_t uid = 0;
    if (!ParseUid(identity.substr(kUnixUid.size()), &uid)) return invalid("bad uid");
    return absl::OkStatus();
  }
  if (StartsWith(identity, kUnixUser)) {
    if (!ValidUnixUserName(identity.substr(kUnixUser.size()))) {
      return invalid("a user name is 1-64 of [A-Za-z0-9._-]");
    }
    return absl::OkStatus();
  }
  return invalid("not a typed identity");
}

std::string MigrateLegacyOwner(const std::string& old_owner, const std::string& local_owner) {
  if (old_owner == "local") return local_owner;
  if (old_owner == kAnonymous) return old_owner;
  for (std::string_view prefix : {kTlsDns, kTlsUri, kUnixUid, kUnixUser}) {
    if (StartsWith(old_owner, prefix)) return old_owner;
  }
  if (old_owner.find("://") != std::string::npos) return std::string(kTlsUri) + old_owner;
  return std::string(kTlsDns) + old_owner;
}

bool MayUseKey(const Caller& caller, const std::string& owner, const IdentityPolicy& policy) {
  if (!caller.may_hold_keys) return false;
  if (caller.identity == owner) return true;
  return caller.admin && policy.allow_admin_key_use;
}

}  // namespace pqcd::server
