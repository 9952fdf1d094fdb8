// Who is calling: the typed identity that owns held keys.
//   - TLS with a verified client certificate: "tls:uri:<uri>" for the certificate's URI SAN (a
//     SPIFFE id is one), else "tls:dns:<name>" for its first DNS SAN. A certificate with neither
//     (or with only malformed values) is "anonymous" and gets no held-key rights at all.
//   - the Unix socket: "unix:uid:<uid>" from the connection's SO_PEERCRED, or "unix:user:<name>"
//     when --unix-user maps that uid to a name.
//   - everything else (plain TCP, TLS without a client certificate): "anonymous". Anonymous callers
//     may use given keys, but held keys only when the daemon runs with --allow-insecure-tcp.
// Every TLS identity carries the "tls:" prefix, so no certificate can claim a "unix:" identity or
// "anonymous".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "grpcpp/server_context.h"

namespace pqcd::server {

inline constexpr std::string_view kAnonymous = "anonymous";

struct Caller {
  std::string identity;
  bool may_hold_keys = false;  // may create/use/see held keys
  bool admin = false;          // may manage every key
  // A Unix-socket caller whose uid is the kernel's overflow uid (/proc/sys/kernel/overflowuid,
  // 65534 by default): every process whose uid is not mapped into pqcd's user namespace (systemd's
  // PrivateUsers=yes, a container's user namespace) shows as it, so it is no one identity and may
  // not hold keys (unless --unix-user names it, the operator's explicit choice).
  bool overflow_uid = false;
};

// Why `caller` may not hold keys (for a PERMISSION_DENIED that names the field first).
std::string HeldKeysRefusal(const Caller& caller);

// The kernel's overflow uid (read once from /proc/sys/kernel/overflowuid; 65534 if unreadable).
uint32_t OverflowUid();

struct IdentityPolicy {
  bool allow_insecure_tcp = false;
  std::vector<std::string> admins;  // typed identities (ValidateTypedIdentity)
  // Admins may also use (sign, decapsulate, ...) keys that other identities own.
  bool allow_admin_key_use = false;
  // Audit every use of a held key, not only uses by an identity other than the owner.
  bool audit_key_use = false;
  // uid -> name from --unix-user: such callers are "unix:user:<name>" instead of "unix:uid:<uid>".
  std::map<uint32_t, std::string> unix_user_names;
  // Maps the peer string of a call that arrived on the daemon's own Unix socket listener
  // ("fd:<N>") to the uid of the connecting process; nullopt for anything else.
  std::function<std::optional<uint32_t>(std::string_view peer)> unix_peer_uid;
};

Caller IdentifyCaller(const grpc::ServerContextBase& context, const IdentityPolicy& policy);

// A Unix-socket caller with this uid (SO_PEERCRED): gRPC on the Unix socket and the lanes.
Caller UnixCaller(uint32_t uid, const IdentityPolicy& policy);

// The identity of a Unix-socket caller with this uid under `policy` (no I/O).
std::string UnixIdentity(uint32_t uid, const IdentityPolicy& policy);

// Whether a certificate SAN value (DNS name or URI) is acceptable as part of an identity:
// 1..kMaxSanBytes bytes of printable ASCII without spaces.
inline constexpr size_t kMaxSanBytes = 512;
bool ValidSanValue(std::string_view value);
// A --unix-user name: 1..64 characters of [A-Za-z0-9._-].
bool ValidUnixUserName(std::string_view name);

// Checks that `identity` is one of the typed forms "tls:dns:<name>", "tls:uri:<uri>",
// "unix:uid:<decimal uid>" or "unix:user:<name>". "anonymous" is not accepted (it is not a
// principal that can be granted anything).
absl::Status ValidateTypedIdentity(std::string_view identity);

// Maps an owner written by pqcd versions before typed identities to the typed form:
// "local" -> local_owner, "anonymous" -> "anonymous", a value containing "://" -> "tls:uri:<v>",
// any other untyped value -> "tls:dns:<v>"; values already in a typed form are returned as is.
std::string MigrateLegacyOwner(const std::string& old_owner, const std::string& local_owner);

// Whether `caller` may use (sign, decapsulate, encapsulate to, ...) a held key owned by `owner`:
// always for the owner; for an admin only with policy.allow_admin_key_use; never otherwise.
bool MayUseKey(const Caller& caller, const std::string& owner, const IdentityPolicy& policy);

}  // namespace pqcd::server
