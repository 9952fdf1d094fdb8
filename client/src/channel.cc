// Channels: the target URI (several targets, Unix sockets), credentials, channel options, and the
// client's creation and destruction (the lifetime rule: in_flight.h).
#include <arpa/inet.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <sys/socket.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client_impl.h"
#include "pqcd/client/client.h"

namespace pqcd::client {

namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", what, " file '", path, "'"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool HasScheme(absl::string_view t) {
  return absl::StartsWith(t, "unix:") || absl::StartsWith(t, "unix-abstract:") ||
         absl::StartsWith(t, "ipv4:") || absl::StartsWith(t, "ipv6:") ||
         absl::StartsWith(t, "dns:") || absl::StrContains(t, "://");
}

}  // namespace

std::optional<std::string> UnixSocketPath(std::string_view target) {
  if (!target.starts_with("unix:")) return std::nullopt;
  std::string_view path = target.substr(5);
  if (path.starts_with("//")) path.remove_prefix(2);  // unix:///path
  return std::string(path);
}

namespace {

// Resolves "host:port" / "[v6]:port" to one numeric address, IPv4 preferred.
absl::StatusOr<std::pair<int, std::string>> ResolveHostPort(absl::string_view target) {
  std::string host, port;
  if (absl::StartsWith(target, "[")) {
    const size_t close = target.find(']');
    if (close == absl::string_view::npos || close + 2 > target.size() || target[close + 1] != ':') {
      return absl::InvalidArgumentError(absl::StrCat("bad target '", target, "'"));
    }
    host = std::string(target.substr(1, close - 1));
    port = std::string(target.substr(close + 2));
  } else {
    const size_t colon = target.rfind(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", target, "' needs a port (host:port or unix:PATH)"));
    }
    host = std::string(target.substr(0, colon));
    port = std::string(target.substr(colon + 1));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve '", target, "': ", gai_strerror(rc)));
  }
  std::pair<int, std::string> best{0, ""};
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, buf, sizeof buf);
      best = {AF_INET, absl::StrCat(buf, ":", port)};
      break;
    }
    if (a->ai_family == AF_INET6 && best.first == 0) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, buf, sizeof buf);
      best = {AF_INET6, absl::StrCat("[", buf, "]:", port)};
    }
  }
  freeaddrinfo(res);
  if (best.first == 0) return absl::UnavailableError(absl::StrCat("no address for '", target, "'"));
  return best;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(const TlsOptions& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!tls.ca_file.empty()) {
    auto ca = ReadFile(tls.ca_file, "CA");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError("mTLS needs both a client certificate and its key");
  }
  if (!tls.cert_file.empty()) {
    auto cert = ReadFile(tls.cert_file, "client certificate");
    if (!cert.ok()) return cert.status();
    auto key = ReadFile(tls.key_file, "client key");
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

// The arguments of channel i.
grpc::ChannelArguments ChannelArgs(const ClientOptions& options, int i) {
  grpc::ChannelArguments args;
  if (!options.load_balancing.empty()) args.SetLoadBalancingPolicyName(options.load_balancing);
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  // Reconnect soon after a daemon restart (first retry after 100 ms, at most 2 s apart). Not
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC also takes it as the minimum time a connection attempt
  // may take (default 20 s), and at 100 ms a TCP + TLS handshake on a loaded machine (or under
  // emulation) timed out, failing calls with UNAVAILABLE "tcp handshaker shutdown".
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  // Each channel gets its own connections.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("pqcd.client.channel_index", i);
  if (options.tls.enabled && !options.tls.server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls.server_name);
  }
  return args;
}

}  // namespace

namespace internal {

absl::Duration Clamp(absl::Duration d, absl::Duration fallback) {
  if (d <= absl::ZeroDuration() || d == absl::InfiniteDuration()) return fallback;
  return d;
}

}  // namespace internal

absl::StatusOr<std::string> BuildChannelTarget(const std::vector<std::string>& targets) {
  if (targets.empty()) return absl::InvalidArgumentError("no target given");
  if (targets.size() == 1) {
    if (targets[0].empty()) return absl::InvalidArgumentError("empty target");
    return targets[0];
  }
  int family = -1;  // AF_INET, AF_INET6 or AF_UNIX
  std::vector<std::string> parts;
  for (const std::string& t : targets) {
    int f;
    std::string addr;
    if (std::optional<std::string> path = UnixSocketPath(t)) {
      f = AF_UNIX;
      addr = *std::move(path);
    } else if (HasScheme(t)) {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", t, "': several targets must each be host:port or unix:PATH"));
    } else {
      auto resolved = ResolveHostPort(t);
      if (!resolved.ok()) return resolved.status();
      f = resolved->first;
      addr = resolved->second;
    }
    if (family != -1 && family != f) {
      return absl::InvalidArgumentError(
          "several targets must all be IPv4, all IPv6 or all Unix sockets");
    }
    family = f;
    parts.push_back(std::move(addr));
  }
  const char* scheme = family == AF_UNIX ? "unix:" : family == AF_INET6 ? "ipv6:" : "ipv4:";
  return absl::StrCat(scheme, absl::StrJoin(parts, ","));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// The lifetime rule (in_flight.h): every callback-API operation has ended, its ClientContext (and
// that context's reference to a channel) destroyed, before the channels and stubs go. The last
// reference to each channel is thus dropped here, on the caller's thread, and never on a gRPC
// thread, whose completion queue the channel's destruction may shut down and join.
Client::~Client() {
  impl_->lane.reset();       // the lanes' threads end; what they still held fails CANCELLED
  impl_->batcher.reset();    // cancels the shared streams; waits until they are destroyed
  impl_->in_flight.Close();  // cancels the async calls in flight; waits until they are deleted
}  // the channels and stubs go now

const ClientOptions& Client::options() const {
  return impl_->options;
}
const std::string& Client::channel_target() const {
  return impl_->target;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  auto target = BuildChannelTarget(options.targets);
  if (!target.ok()) return target.status();
  if (options.max_attempts < 1) options.max_attempts = 1;
  if (options.channels < 1) options.channels = 1;
  options.default_timeout = internal::Clamp(options.default_timeout, absl::Seconds(30));
  options.default_stream_timeout = internal::Clamp(options.default_stream_timeout, absl::Hours(1));
  auto creds = Credentials(options.tls);
  if (!creds.ok()) return creds.status();

  auto impl = std::make_unique<Impl>();
  impl->target = *target;
  for (int i = 0; i < options.channels; ++i) {
    Impl::Channel ch;
    ch.channel = grpc::CreateCustomChannel(impl->target, *creds, ChannelArgs(options, i));
    ch.crypto = pqc::v1::Crypto::NewStub(ch.channel);
    ch.keys = pqc::v1::Keys::NewStub(ch.channel);
    ch.generic = std::make_unique<grpc::GenericStub>(ch.channel);
    impl->channels.push_back(std::move(ch));
  }
  impl->options = std::move(options);
  if (impl->options.batching.enabled) {
    Impl* raw = impl.get();
    internal::BatcherEnv env;
    env.channels = static_cast<int>(raw->channels.size());
    env.stub = [raw](int i) { return raw->channels[static_cast<size_t>(i)].crypto.get(); };
    env.never_sent = [raw](const grpc::Status& s, const grpc::ClientContext& ctx) {
      return raw->NeverSent(s, ctx);
    };
    env.max_attempts = raw->options.max_attempts;
    env.initial_backoff = raw->options.initial_backoff;
    env.max_backoff = raw->options.max_backoff;
    env.default_timeout = raw->options.default_timeout;
    raw->batcher = std::make_unique<internal::Batcher>(raw->options.batching, std::move(env));
  }
  if (impl->options.lane.enabled) {
    const std::vector<std::string>& t = impl->options.targets;
    const std::optional<std::string> path =
        t.size() == 1 ? UnixSocketPath(t[0]) : std::optional<std::string>();
    if (!path.has_value()) {
      impl->lane_status = "gRPC: lanes need one unix: target";
    } else {
      auto lane =
          internal::LaneTransport::Open(*path, impl->options.lane.lanes, impl->options.lane.slots);
      if (lane.ok()) {
        impl->lane = *std::move(lane);
        impl->lane_status = "lanes";
      } else {
        impl->lane_status = absl::StrCat("gRPC: ", lane.status().message());
      }
    }
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

const std::string& Client::lane_status() const {
  return impl_->lane_status;
}

}  // namespace pqcd::client
