#include "pqcd/client/client.h"

#include <arpa/inet.h>
#include <grpcpp/alarm.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "batcher.h"
#include "convert.h"
#include "pqc/v1/crypto.grpc.pb.h"
#include "pqc/v1/keys.grpc.pb.h"
#include "stream_wire.h"

namespace pqcd::client {

using internal::FromGrpc;
using internal::FromProto;
using internal::ToProto;

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

absl::Duration Clamp(absl::Duration d, absl::Duration fallback) {
  if (d <= absl::ZeroDuration() || d == absl::InfiniteDuration()) return fallback;
  return d;
}

// One operation as the Stream's Operation message.
pqc::v1::Operation OperationProto(const KeyGenOp& op) {
  pqc::v1::Operation p;
  ToProto(op, p.mutable_keygen());
  return p;
}
pqc::v1::Operation OperationProto(const EncapsOp& op) {
  pqc::v1::Operation p;
  ToProto(op, p.mutable_encaps());
  return p;
}
pqc::v1::Operation OperationProto(const DecapsOp& op) {
  pqc::v1::Operation p;
  ToProto(op, p.mutable_decaps());
  return p;
}
pqc::v1::Operation OperationProto(const SignOp& op) {
  pqc::v1::Operation p;
  ToProto(op, p.mutable_sign());
  return p;
}
pqc::v1::Operation OperationProto(const VerifyOp& op) {
  pqc::v1::Operation p;
  ToProto(op, p.mutable_verify());
  return p;
}
pqc::v1::Operation OperationProto(const HashOp& op) {
  pqc::v1::Operation p;
  ToProto(op, p.mutable_hash());
  return p;
}
pqc::v1::Operation OperationProto(const Operation& op) {
  pqc::v1::Operation p;
  ToProto(op, &p);
  return p;
}

// Operations larger than this skip the batching client's shared stream and go as unary calls:
// packing saves nothing on them, and one message over the daemon's size limit would fail the
// shared stream and every call on it.
constexpr size_t kMaxBatchedOperationBytes = 64 << 10;
bool Batchable(const pqc::v1::Operation& op) {
  return op.ByteSizeLong() <= kMaxBatchedOperationBytes;
}

// The typed result of a batched call (the daemon answers each operation with its own kind).
template <class T>
absl::StatusOr<T> Narrow(absl::StatusOr<Result> r) {
  if (!r.ok()) return r.status();
  if (T* v = std::get_if<T>(&*r)) return std::move(*v);
  return absl::InternalError("the daemon answered with the result of another kind of operation");
}

// grpc.health.v1 messages, encoded by hand (two fields) so that no health.proto is linked in.
std::string EncodeHealthRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(0x0a);
  size_t n = service.size();
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  out += service;
  return out;
}

absl::StatusOr<HealthStatus> DecodeHealthResponse(absl::string_view in) {
  size_t pos = 0;
  auto varint = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && pos < in.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(in[pos++]);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  };
  int status = 0;
  while (pos < in.size()) {
    uint64_t tag, v;
    if (!varint(&tag)) return absl::DataLossError("bad health response");
    switch (tag & 7) {
      case 0:
        if (!varint(&v)) return absl::DataLossError("bad health response");
        if ((tag >> 3) == 1) status = static_cast<int>(v);
        break;
      case 2:
        if (!varint(&v) || v > in.size() - pos) return absl::DataLossError("bad health response");
        pos += v;
        break;
      case 1:
        pos += 8;
        break;
      case 5:
        pos += 4;
        break;
      default:
        return absl::DataLossError("bad health response");
    }
  }
  switch (status) {
    case 1:
      return HealthStatus::kServing;
    case 2:
      return HealthStatus::kNotServing;
    case 3:
      return HealthStatus::kServiceUnknown;
    default:
      return HealthStatus::kUnknown;
  }
}

}  // namespace

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
    if (absl::StartsWith(t, "unix:")) {
      f = AF_UNIX;
      absl::string_view path = absl::string_view(t).substr(5);
      if (absl::StartsWith(path, "//")) path.remove_prefix(2);
      addr = std::string(path);
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

// ---------------------------------------------------------------------------------------------
struct Client::Impl {
  struct Channel {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<pqc::v1::Crypto::Stub> crypto;
    std::unique_ptr<pqc::v1::Keys::Stub> keys;
    std::unique_ptr<grpc::GenericStub> generic;
  };

  ClientOptions options;
  std::string target;
  std::vector<Channel> channels;
  std::atomic<uint64_t> next_channel{0};
  // Set when options.batching.enabled. Declared last: destroyed (its streams ended) before the
  // channels it uses.
  std::unique_ptr<internal::Batcher> batcher;

  // Whether a sync call may go through the batching client: small enough, and not made inside a
  // callback of the batching client's answers (waiting there could wait for reactions gRPC runs
  // on this very thread once the callback returns; such a call goes unary instead).
  bool MayWaitForBatched(const pqc::v1::Operation& op) const {
    return Batchable(op) && !internal::Batcher::DeliveringOnThisThread();
  }

  // A batched call, waited for.
  absl::StatusOr<Result> RunBatched(pqc::v1::Operation op, const CallOptions& call) {
    absl::Notification finished;
    absl::StatusOr<Result> out = absl::UnknownError("not run");
    batcher->Submit(
        std::move(op),
        [&](absl::StatusOr<Result> r) {
          out = std::move(r);
          finished.Notify();
        },
        call);
    finished.WaitForNotification();
    return out;
  }

  Channel& Pick() {
    return channels[next_channel.fetch_add(1, std::memory_order_relaxed) % channels.size()];
  }

  absl::Time Deadline(const CallOptions& call) const {
    return absl::Now() + Clamp(call.timeout, options.default_timeout);
  }

  void Prepare(grpc::ClientContext& ctx, absl::Time deadline, const CallOptions& call) const {
    ctx.set_deadline(absl::ToChronoTime(deadline));
    ctx.set_wait_for_ready(call.wait_for_ready);
  }

  // True when a failed call certainly never reached a daemon: UNAVAILABLE, no transport was
  // assigned (gRPC then reports the channel's target, or nothing, as the peer), and the message is
  // one of the load balancer's "no connection to pick" failures. Anything else (a connection that
  // broke after the request was written, a daemon that answered UNAVAILABLE) is not retried.
  bool NeverSent(const grpc::Status& s, const grpc::ClientContext& ctx) const {
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
    const std::string peer = ctx.peer();
    if (!peer.empty() && peer != target) return false;
    const std::string& m = s.error_message();
    for (const char* pick_failure :
         {"failed to connect to all addresses", "connections to all backends failing",
          "empty address list", "DNS resolution failed", "no children in picker"}) {
      if (absl::StrContains(m, pick_failure)) return true;
    }
    return false;
  }

  bool ShouldRetry(const grpc::Status& s, const grpc::ClientContext& ctx, int attempt,
                   absl::Time deadline, absl::Duration backoff) const {
    return attempt < options.max_attempts && absl::Now() + backoff < deadline && NeverSent(s, ctx);
  }

  absl::Duration NextBackoff(absl::Duration b) const {
    return std::min(b * 2, options.max_backoff);
  }

  // Synchronous unary call with the retry rule.
  absl::Status Unary(const CallOptions& call,
                     absl::FunctionRef<grpc::Status(Channel&, grpc::ClientContext&)> fn) {
    const absl::Time deadline = Deadline(call);
    absl::Duration backoff = options.initial_backoff;
    for (int attempt = 1;; ++attempt) {
      grpc::ClientContext ctx;
      Prepare(ctx, deadline, call);
      grpc::Status s = fn(Pick(), ctx);
      if (s.ok()) return absl::OkStatus();
      if (!ShouldRetry(s, ctx, attempt, deadline, backoff)) return FromGrpc(s);
      absl::SleepFor(backoff);
      backoff = NextBackoff(backoff);
    }
  }

  // Asynchronous unary call with the retry rule; `start` issues one attempt.
  template <class Req, class Resp>
  struct AsyncCall {
    using Start = std::function<void(Channel&, grpc::ClientContext*, const Req*, Resp*,
                                     std::function<void(grpc::Status)>)>;
    Impl* impl;
    Req req;
    Resp resp;
    Start start;
    absl::AnyInvocable<void(absl::Status, Resp&)> done;
    CallOptions call;
    absl::Time deadline;
    absl::Duration backoff;
    int attempt = 0;
    std::unique_ptr<grpc::ClientContext> ctx;
    std::vector<std::unique_ptr<grpc::Alarm>> alarms;

    void Attempt() {
      ++attempt;
      ctx = std::make_unique<grpc::ClientContext>();
      impl->Prepare(*ctx, deadline, call);
      resp.Clear();
      start(impl->Pick(), ctx.get(), &req, &resp, [this](grpc::Status s) { OnDone(std::move(s)); });
    }
    void OnDone(grpc::Status s) {
      if (!s.ok() && impl->ShouldRetry(s, *ctx, attempt, deadline, backoff)) {
        const absl::Duration wait = backoff;
        backoff = impl->NextBackoff(backoff);
        alarms.push_back(std::make_unique<grpc::Alarm>());
        alarms.back()->Set(absl::ToChronoTime(absl::Now() + wait), [this](bool) { Attempt(); });
        return;
      }
      auto d = std::move(done);
      d(FromGrpc(s), resp);
      delete this;
    }
  };

  template <class Req, class Resp>
  void UnaryAsync(Req req, typename AsyncCall<Req, Resp>::Start start,
                  absl::AnyInvocable<void(absl::Status, Resp&)> done, const CallOptions& call) {
    auto* c = new AsyncCall<Req, Resp>();
    c->impl = this;
    c->req = std::move(req);
    c->start = std::move(start);
    c->done = std::move(done);
    c->call = call;
    c->deadline = Deadline(call);
    c->backoff = options.initial_backoff;
    c->Attempt();
  }
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;
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
  options.default_timeout = Clamp(options.default_timeout, absl::Seconds(30));
  options.default_stream_timeout = Clamp(options.default_stream_timeout, absl::Hours(1));

  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (options.tls.enabled) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls.ca_file.empty()) {
      auto ca = ReadFile(options.tls.ca_file, "CA");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *std::move(ca);
    }
    if (options.tls.cert_file.empty() != options.tls.key_file.empty()) {
      return absl::InvalidArgumentError("mTLS needs both a client certificate and its key");
    }
    if (!options.tls.cert_file.empty()) {
      auto cert = ReadFile(options.tls.cert_file, "client certificate");
      if (!cert.ok()) return cert.status();
      auto key = ReadFile(options.tls.key_file, "client key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }

  auto impl = std::make_unique<Impl>();
  impl->target = *target;
  for (int i = 0; i < options.channels; ++i) {
    grpc::ChannelArguments args;
    if (!options.load_balancing.empty()) args.SetLoadBalancingPolicyName(options.load_balancing);
    args.SetMaxReceiveMessageSize(options.max_message_bytes);
    args.SetMaxSendMessageSize(options.max_message_bytes);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    // Each channel gets its own connections.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("pqcd.client.channel_index", i);
    if (options.tls.enabled && !options.tls.server_name.empty()) {
      args.SetSslTargetNameOverride(options.tls.server_name);
    }
    Impl::Channel ch;
    ch.channel = grpc::CreateCustomChannel(impl->target, creds, args);
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
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

// ---- Crypto, sync ---------------------------------------------------------------------------
#define PQCD_SYNC_UNARY(Method, Op, ReqT, RespT, RetT)                                     \
  absl::StatusOr<RetT> Client::Method(const Op& op, const CallOptions& call) {             \
    if (impl_->batcher) {                                                                  \
      pqc::v1::Operation p = OperationProto(op);                                           \
      if (impl_->MayWaitForBatched(p)) {                                                   \
        return Narrow<RetT>(impl_->RunBatched(std::move(p), call));                        \
      }                                                                                    \
      internal::WipeOperation(&p);                                                         \
    }                                                                                      \
    pqc::v1::ReqT req;                                                                     \
    ToProto(op, &req);                                                                     \
    pqc::v1::RespT resp;                                                                   \
    absl::Status s = impl_->Unary(call, [&](Impl::Channel& ch, grpc::ClientContext& ctx) { \
      resp.Clear();                                                                        \
      return ch.crypto->Method(&ctx, req, &resp);                                          \
    });                                                                                    \
    if (!s.ok()) return s;                                                                 \
    return FromProto(std::move(resp));                                                     \
  }

PQCD_SYNC_UNARY(KeyGen, KeyGenOp, KeyGenRequest, KeyGenResponse, KeyPair)
PQCD_SYNC_UNARY(Encaps, EncapsOp, EncapsRequest, EncapsResponse, EncapsResult)
PQCD_SYNC_UNARY(Decaps, DecapsOp, DecapsRequest, DecapsResponse, DecapsResult)
PQCD_SYNC_UNARY(Sign, SignOp, SignRequest, SignResponse, SignResult)
PQCD_SYNC_UNARY(Verify, VerifyOp, VerifyRequest, VerifyResponse, VerifyResult)
PQCD_SYNC_UNARY(Hash, HashOp, HashRequest, HashResponse, HashResult)
#undef PQCD_SYNC_UNARY

absl::StatusOr<HashResult> Client::HashStream(Algorithm algorithm,
                                              absl::FunctionRef<bool(std::string*)> next_chunk,
                                              uint32_t output_length, const CallOptions& call) {
  // The first chunk is kept so that an attempt that never reached a daemon can be repeated; once
  // a second chunk has been taken from the source the call is not retried.
  std::string first;
  bool have_first = next_chunk(&first);
  bool consumed_more = false;
  pqc::v1::HashResponse resp;
  const absl::Time deadline = impl_->Deadline(call);
  absl::Duration backoff = impl_->options.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext ctx;
    impl_->Prepare(ctx, deadline, call);
    resp.Clear();
    auto writer = impl_->Pick().crypto->HashStream(&ctx, &resp);
    pqc::v1::HashStreamRequest msg;
    msg.set_algorithm(static_cast<pqc::v1::Algorithm>(static_cast<int>(algorithm)));
    msg.set_output_length(output_length);
    if (have_first) msg.set_data(first);
    bool ok = writer->Write(msg);
    if (ok && have_first) {
      std::string chunk;
      pqc::v1::HashStreamRequest next;
      while (ok && next_chunk(&chunk)) {
        consumed_more = true;
        next.set_data(chunk);
        ok = writer->Write(next);
        chunk.clear();
      }
    }
    writer->WritesDone();
    grpc::Status s = writer->Finish();
    if (s.ok()) return FromProto(std::move(resp));
    if (consumed_more || !impl_->ShouldRetry(s, ctx, attempt, deadline, backoff)) {
      return FromGrpc(s);
    }
    absl::SleepFor(backoff);
    backoff = impl_->NextBackoff(backoff);
  }
}

absl::StatusOr<HashResult> Client::HashStream(Algorithm algorithm, std::istream& in,
                                              uint32_t output_length, const CallOptions& call) {
  bool read_error = false;
  auto result = HashStream(
      algorithm,
      [&](std::string* chunk) {
        chunk->resize(256 << 10);
        in.read(chunk->data(), static_cast<std::streamsize>(chunk->size()));
        chunk->resize(static_cast<size_t>(in.gcount()));
        if (in.bad()) read_error = true;
        return !chunk->empty();
      },
      output_length, call);
  if (read_error) return absl::DataLossError("error reading the input stream");
  return result;
}

absl::StatusOr<BatchResults> Client::Batch(const std::vector<Operation>& ops,
                                           const CallOptions& call) {
  pqc::v1::BatchRequest req;
  for (const auto& op : ops) ToProto(op, req.add_operations());
  pqc::v1::BatchResponse resp;
  absl::Status s = impl_->Unary(call, [&](Impl::Channel& ch, grpc::ClientContext& ctx) {
    resp.Clear();
    return ch.crypto->Batch(&ctx, req, &resp);
  });
  if (!s.ok()) return s;
  if (static_cast<size_t>(resp.results_size()) != ops.size()) {
    return absl::InternalError(absl::StrCat("Batch answered ", resp.results_size(), " results for ",
                                            ops.size(), " operations"));
  }
  BatchResults out;
  out.reserve(ops.size());
  for (auto& r : *resp.mutable_results()) out.push_back(FromProto(std::move(r)));
  return out;
}

BatchResults Client::RunPipelined(const std::vector<Operation>& ops, const PipelineOptions& po,
                                  const CallOptions& call) {
  const size_t batch = std::max<size_t>(po.batch_size, 1);
  const size_t max_inflight = std::max<size_t>(po.max_inflight, 1);
  BatchResults results(ops.size(), absl::UnknownError("not run"));
  std::mutex mu;
  std::condition_variable cv;
  size_t inflight = 0;
  for (size_t begin = 0; begin < ops.size(); begin += batch) {
    const size_t end = std::min(ops.size(), begin + batch);
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return inflight < max_inflight; });
      ++inflight;
    }
    std::vector<Operation> chunk(ops.begin() + static_cast<std::ptrdiff_t>(begin),
                                 ops.begin() + static_cast<std::ptrdiff_t>(end));
    BatchAsync(
        std::move(chunk),
        [&, begin, end](absl::StatusOr<BatchResults> r) {
          for (size_t i = begin; i < end; ++i) {
            results[i] = r.ok() ? std::move((*r)[i - begin]) : absl::StatusOr<Result>(r.status());
          }
          std::lock_guard lock(mu);
          --inflight;
          cv.notify_all();
        },
        call);
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return inflight == 0; });
  return results;
}

absl::StatusOr<Result> Client::Run(const Operation& op, const CallOptions& call) {
  if (impl_->batcher) {
    pqc::v1::Operation p = OperationProto(op);
    if (impl_->MayWaitForBatched(p)) return impl_->RunBatched(std::move(p), call);
    internal::WipeOperation(&p);
  }
  return std::visit(
      [&](const auto& o) -> absl::StatusOr<Result> {
        using T = std::decay_t<decltype(o)>;
        auto wrap = [](auto r) -> absl::StatusOr<Result> {
          if (!r.ok()) return r.status();
          return Result(*std::move(r));
        };
        if constexpr (std::is_same_v<T, KeyGenOp>) {
          return wrap(KeyGen(o, call));
        } else if constexpr (std::is_same_v<T, EncapsOp>) {
          return wrap(Encaps(o, call));
        } else if constexpr (std::is_same_v<T, DecapsOp>) {
          return wrap(Decaps(o, call));
        } else if constexpr (std::is_same_v<T, SignOp>) {
          return wrap(Sign(o, call));
        } else if constexpr (std::is_same_v<T, VerifyOp>) {
          return wrap(Verify(o, call));
        } else {
          return wrap(Hash(o, call));
        }
      },
      op);
}

// ---- Crypto, async --------------------------------------------------------------------------
#define PQCD_ASYNC_UNARY(Method, Op, ReqT, RespT, RetT)                             \
  void Client::Method##Async(Op op, Callback<RetT> done, const CallOptions& call) { \
    if (impl_->batcher) {                                                           \
      pqc::v1::Operation p = OperationProto(op);                                    \
      if (Batchable(p)) {                                                           \
        impl_->batcher->Submit(                                                     \
            std::move(p),                                                           \
            [done = std::move(done)](absl::StatusOr<Result> r) mutable {            \
              done(Narrow<RetT>(std::move(r)));                                     \
            },                                                                      \
            call);                                                                  \
        return;                                                                     \
      }                                                                             \
      internal::WipeOperation(&p);                                                  \
    }                                                                               \
    pqc::v1::ReqT req;                                                              \
    ToProto(op, &req);                                                              \
    impl_->UnaryAsync<pqc::v1::ReqT, pqc::v1::RespT>(                               \
        std::move(req),                                                             \
        [](Impl::Channel& ch, grpc::ClientContext* ctx, const pqc::v1::ReqT* rq,    \
           pqc::v1::RespT* rs, std::function<void(grpc::Status)> cb) {              \
          ch.crypto->async()->Method(ctx, rq, rs, std::move(cb));                   \
        },                                                                          \
        [done = std::move(done)](absl::Status s, pqc::v1::RespT& rs) mutable {      \
          if (!s.ok()) {                                                            \
            done(std::move(s));                                                     \
          } else {                                                                  \
            done(FromProto(std::move(rs)));                                         \
          }                                                                         \
        },                                                                          \
        call);                                                                      \
  }

PQCD_ASYNC_UNARY(KeyGen, KeyGenOp, KeyGenRequest, KeyGenResponse, KeyPair)
PQCD_ASYNC_UNARY(Encaps, EncapsOp, EncapsRequest, EncapsResponse, EncapsResult)
PQCD_ASYNC_UNARY(Decaps, DecapsOp, DecapsRequest, DecapsResponse, DecapsResult)
PQCD_ASYNC_UNARY(Sign, SignOp, SignRequest, SignResponse, SignResult)
PQCD_ASYNC_UNARY(Verify, VerifyOp, VerifyRequest, VerifyResponse, VerifyResult)
PQCD_ASYNC_UNARY(Hash, HashOp, HashRequest, HashResponse, HashResult)
#undef PQCD_ASYNC_UNARY

void Client::BatchAsync(std::vector<Operation> ops, Callback<BatchResults> done,
                        const CallOptions& call) {
  pqc::v1::BatchRequest req;
  for (const auto& op : ops) ToProto(op, req.add_operations());
  const size_t n = ops.size();
  impl_->UnaryAsync<pqc::v1::BatchRequest, pqc::v1::BatchResponse>(
      std::move(req),
      [](Impl::Channel& ch, grpc::ClientContext* ctx, const pqc::v1::BatchRequest* rq,
         pqc::v1::BatchResponse* rs, std::function<void(grpc::Status)> cb) {
        ch.crypto->async()->Batch(ctx, rq, rs, std::move(cb));
      },
      [done = std::move(done), n](absl::Status s, pqc::v1::BatchResponse& rs) mutable {
        if (!s.ok()) return done(std::move(s));
        if (static_cast<size_t>(rs.results_size()) != n) {
          return done(absl::InternalError(absl::StrCat("Batch answered ", rs.results_size(),
                                                       " results for ", n, " operations")));
        }
        BatchResults out;
        out.reserve(n);
        for (auto& r : *rs.mutable_results()) out.push_back(FromProto(std::move(r)));
        done(std::move(out));
      },
      call);
}

void Client::RunAsync(Operation op, Callback<Result> done, const CallOptions& call) {
  if (impl_->batcher) {
    pqc::v1::Operation p = OperationProto(op);
    if (Batchable(p)) {
      impl_->batcher->Submit(std::move(p), std::move(done), call);
      return;
    }
    internal::WipeOperation(&p);
  }
  auto wrap = [](Callback<Result> d) {
    return [d = std::move(d)](auto r) mutable {
      if (!r.ok()) {
        d(r.status());
      } else {
        d(Result(*std::move(r)));
      }
    };
  };
  std::visit(
      [&](auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, KeyGenOp>) {
          KeyGenAsync(std::move(o), wrap(std::move(done)), call);
        } else if constexpr (std::is_same_v<T, EncapsOp>) {
          EncapsAsync(std::move(o), wrap(std::move(done)), call);
        } else if constexpr (std::is_same_v<T, DecapsOp>) {
          DecapsAsync(std::move(o), wrap(std::move(done)), call);
        } else if constexpr (std::is_same_v<T, SignOp>) {
          SignAsync(std::move(o), wrap(std::move(done)), call);
        } else if constexpr (std::is_same_v<T, VerifyOp>) {
          VerifyAsync(std::move(o), wrap(std::move(done)), call);
        } else {
          HashAsync(std::move(o), wrap(std::move(done)), call);
        }
      },
      op);
}

// HashStream, async: a write reactor that sends the chunks and deletes itself when done.
namespace {
class HashStreamReactor : public grpc::ClientWriteReactor<pqc::v1::HashStreamRequest> {
 public:
  HashStreamReactor(std::vector<pqc::v1::HashStreamRequest> msgs, Callback<HashResult> done)
      : msgs_(std::move(msgs)), done_(std::move(done)) {}
  grpc::ClientContext ctx;
  pqc::v1::HashResponse resp;

  void Begin() {
    StartWrite(&msgs_[0]);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok && ++next_ < msgs_.size()) {
      StartWrite(&msgs_[next_]);
    } else {
      StartWritesDone();
    }
  }
  void OnDone(const grpc::Status& s) override {
    if (s.ok()) {
      done_(FromProto(std::move(resp)));
    } else {
      done_(FromGrpc(s));
    }
    delete this;
  }

 private:
  std::vector<pqc::v1::HashStreamRequest> msgs_;
  size_t next_ = 0;
  Callback<HashResult> done_;
};
}  // namespace

void Client::HashStreamAsync(Algorithm algorithm, std::vector<std::string> chunks,
                             Callback<HashResult> done, uint32_t output_length,
                             const CallOptions& call) {
  std::vector<pqc::v1::HashStreamRequest> msgs(std::max<size_t>(chunks.size(), 1));
  msgs[0].set_algorithm(static_cast<pqc::v1::Algorithm>(static_cast<int>(algorithm)));
  msgs[0].set_output_length(output_length);
  for (size_t i = 0; i < chunks.size(); ++i) msgs[i].set_data(std::move(chunks[i]));
  auto* r = new HashStreamReactor(std::move(msgs), std::move(done));
  impl_->Prepare(r->ctx, impl_->Deadline(call), call);
  impl_->Pick().crypto->async()->HashStream(&r->ctx, &r->resp, r);
  r->Begin();
}

// ---- Stream ---------------------------------------------------------------------------------
namespace {
class StreamImpl final
    : public Stream,
      public grpc::ClientBidiReactor<pqc::v1::StreamRequest, pqc::v1::StreamResponse> {
 public:
  explicit StreamImpl(const StreamOptions& options)
      : max_inflight_(std::max<size_t>(options.max_inflight, 1)),
        max_pack_(std::max<size_t>(options.max_pack, 1)) {}
  ~StreamImpl() override {
    (void)Finish();
    for (Queued& q : queue_) internal::WipeOperation(&q.op);
  }

  grpc::ClientContext ctx;

  void Begin() {
    AddHold();  // released when writing is over, so that OnDone waits for our writes
    StartRead(&read_msg_);
    StartCall();
  }

  absl::Status Submit(Operation op, Callback<Result> done) override {
    Queued q;
    ToProto(op, &q.op);
    q.bytes = q.op.ByteSizeLong();
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return pending_.size() < max_inflight_ || !Open(); });
    if (!Open()) {
      internal::WipeOperation(&q.op);
      if (done_ && !final_.ok()) return FromGrpc(final_);
      return absl::FailedPreconditionError("the stream is finished or closing");
    }
    q.id = next_id_++;
    pending_.emplace(q.id, std::move(done));
    queue_.push_back(std::move(q));
    StartNextLocked(lock);
    return absl::OkStatus();
  }

  absl::Status Finish() override {
    std::unique_lock lock(mu_);
    if (!finish_requested_) {
      finish_requested_ = true;
      cv_.notify_all();  // a Submit waiting for room fails now
      if (StartNextLocked(lock)) lock.lock();
    }
    cv_.wait(lock, [&] { return done_; });
    return FromGrpc(final_);
  }

  size_t inflight() const override {
    std::lock_guard lock(mu_);
    return pending_.size();
  }

  StreamStats stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mu_);
    writing_ = false;
    internal::WipeRequest(&current_);
    current_.Clear();
    if (ok && !read_closed_) {
      StartNextLocked(lock);
      return;
    }
    // Broken, or the daemon ended the call: nothing more is written; OnDone fails what is pending.
    write_failed_ = !ok;
    for (Queued& q : queue_) internal::WipeOperation(&q.op);
    queue_.clear();
    ReleaseHoldLocked(lock);
  }

  void OnWritesDoneDone(bool) override {
    std::unique_lock lock(mu_);
    writing_ = false;
    ReleaseHoldLocked(lock);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::unique_lock lock(mu_);
      read_closed_ = true;
      cv_.notify_all();
      if (!writing_) ReleaseHoldLocked(lock);
      return;
    }
    // The message moves out of the read buffer and the next read starts before the callbacks run,
    // so that reading goes on meanwhile; the callbacks of two messages may then run at once.
    pqc::v1::StreamResponse msg;
    msg.Swap(&read_msg_);
    std::vector<std::pair<Callback<Result>, pqc::v1::OperationResult*>> answered;
    {
      std::lock_guard lock(mu_);
      ++stats_.messages_received;
      pqc::v1::StreamRequest rejected;
      if (pack_.Inspect(msg, &rejected)) {
        // A daemon without packing rejected a packed message whole (nothing in it ran): its
        // operations go back to the front of the queue and leave one per message from now on.
        std::deque<Queued> back;
        for (auto& item : *rejected.mutable_items()) {
          back.emplace_back();
          back.back().id = item.id();
          back.back().op.Swap(item.mutable_operation());
          back.back().bytes = back.back().op.ByteSizeLong();
        }
        queue_.insert(queue_.begin(), std::make_move_iterator(back.begin()),
                      std::make_move_iterator(back.end()));
      } else {
        internal::ForEachResult(msg, [&](uint64_t id, pqc::v1::OperationResult& r) {
          ++stats_.results_received;
          auto it = pending_.find(id);
          if (it == pending_.end()) return;
          answered.emplace_back(std::move(it->second), &r);
          pending_.erase(it);
        });
        if (!answered.empty()) cv_.notify_all();
      }
      // Writes wait until the callbacks below have run, so that what they submit leaves together.
      ++delivering_;
    }
    StartRead(&read_msg_);
    for (auto& [cb, r] : answered) cb(FromProto(std::move(*r)));
    answered.clear();
    internal::WipeResponse(&msg);
    std::unique_lock lock(mu_);
    --delivering_;
    StartNextLocked(lock);
  }

  void OnDone(const grpc::Status& s) override {
    std::unordered_map<uint64_t, Callback<Result>> orphans;
    {
      std::lock_guard lock(mu_);
      final_ = s;
      orphans.swap(pending_);
    }
    const absl::Status err =
        s.ok() ? absl::UnavailableError("the stream ended without answering this operation")
               : FromGrpc(s);
    for (auto& [id, cb] : orphans) cb(err);
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

 private:
  struct Queued {
    uint64_t id = 0;
    pqc::v1::Operation op;
    size_t bytes = 0;
  };
  // A message stops growing at this size (unless it holds one operation), well below the daemon's
  // --max-message-bytes: a message over it fails the stream.
  static constexpr size_t kMaxPackBytes = 1 << 20;

  bool Open() const { return !done_ && !read_closed_ && !hold_released_ && !finish_requested_; }

  // Starts the next write when none is outstanding: every queued operation (up to max_pack) in one
  // message, else the half-close once Finish asked for it. Returns true (with the lock released)
  // when it started something.
  bool StartNextLocked(std::unique_lock<std::mutex>& lock) {
    if (writing_ || delivering_ > 0 || hold_released_ || read_closed_ || write_failed_) {
      return false;
    }
    if (!queue_.empty()) {
      const size_t max_pack = pack_.packing_allowed() ? max_pack_ : 1;
      size_t bytes = 0;
      for (size_t n = 0; n < max_pack && !queue_.empty(); ++n) {
        if (n > 0 && bytes + queue_.front().bytes > kMaxPackBytes) break;
        bytes += queue_.front().bytes;
        internal::AppendOperation(&current_, queue_.front().id, &queue_.front().op);
        queue_.pop_front();
      }
      pack_.Sending(current_);
      // Counted when handed to gRPC (an answer may arrive before OnWriteDone runs).
      ++stats_.messages_sent;
      stats_.operations_sent += static_cast<uint64_t>(internal::OperationCount(current_));
      writing_ = true;
      lock.unlock();
      StartWrite(&current_);
      return true;
    }
    // The half-close waits while packed messages await the daemon's verdict: an old daemon's
    // rejection means writing their operations again.
    if (finish_requested_ && !writes_done_started_ && !pack_.awaiting_verdict()) {
      writes_done_started_ = true;
      writing_ = true;
      lock.unlock();
      StartWritesDone();
      return true;
    }
    return false;
  }

  void ReleaseHoldLocked(std::unique_lock<std::mutex>& lock) {
    if (hold_released_) return;
    hold_released_ = true;
    cv_.notify_all();
    lock.unlock();
    RemoveHold();
  }

  const size_t max_inflight_;
  const size_t max_pack_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint64_t, Callback<Result>> pending_;
  std::deque<Queued> queue_;
  pqc::v1::StreamRequest current_;
  pqc::v1::StreamResponse read_msg_;
  internal::PackSupport pack_;
  StreamStats stats_;
  uint64_t next_id_ = 1;
  bool writing_ = false;
  int delivering_ = 0;  // answer messages whose callbacks are running
  bool finish_requested_ = false;
  bool writes_done_started_ = false;
  bool hold_released_ = false;
  bool read_closed_ = false;
  bool write_failed_ = false;
  bool done_ = false;
  grpc::Status final_;
};
}  // namespace

absl::StatusOr<std::unique_ptr<Stream>> Client::OpenStream(const StreamOptions& options,
                                                           const CallOptions& call) {
  auto s = std::make_unique<StreamImpl>(options);
  s->ctx.set_deadline(
      absl::ToChronoTime(absl::Now() + Clamp(call.timeout, impl_->options.default_stream_timeout)));
  s->ctx.set_wait_for_ready(call.wait_for_ready);
  impl_->Pick().crypto->async()->Stream(&s->ctx, s.get());
  s->Begin();
  return std::unique_ptr<Stream>(std::move(s));
}

StreamStats Client::batching_stats() const {
  return impl_->batcher ? impl_->batcher->stats() : StreamStats{};
}

// ---- Keys -----------------------------------------------------------------------------------
absl::StatusOr<KeyInfo> Client::GetPublicKey(const std::string& key_id, uint32_t version,
                                             const CallOptions& call) {
  pqc::v1::GetPublicKeyRequest req;
  req.set_key_id(key_id);
  req.set_version(version);
  pqc::v1::KeyInfo resp;
  absl::Status s = impl_->Unary(call, [&](Impl::Channel& ch, grpc::ClientContext& ctx) {
    resp.Clear();
    return ch.keys->GetPublicKey(&ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return FromProto(std::move(resp));
}

namespace {
constexpr uint32_t kListPageSize = 1000;  // the daemon's largest page
}  // namespace

absl::StatusOr<std::vector<KeyInfo>> Client::ListKeys(
    const std::map<std::string, std::string>& label_selector, const CallOptions& call) {
  pqc::v1::ListKeysRequest req;
  for (const auto& [k, v] : label_selector) (*req.mutable_label_selector())[k] = v;
  req.set_page_size(kListPageSize);
  std::vector<KeyInfo> out;
  // The daemon answers in pages; each page is its own call (with its own deadline and retries).
  do {
    pqc::v1::ListKeysResponse resp;
    absl::Status s = impl_->Unary(call, [&](Impl::Channel& ch, grpc::ClientContext& ctx) {
      resp.Clear();
      return ch.keys->List(&ctx, req, &resp);
    });
    if (!s.ok()) return s;
    for (auto& k : *resp.mutable_keys()) out.push_back(FromProto(std::move(k)));
    req.set_page_token(std::move(*resp.mutable_next_page_token()));
  } while (!req.page_token().empty());
  return out;
}

absl::StatusOr<uint32_t> Client::DeleteKey(const std::string& key_id, uint32_t version,
                                           const CallOptions& call) {
  pqc::v1::DeleteKeyRequest req;
  req.set_key_id(key_id);
  req.set_version(version);
  pqc::v1::DeleteKeyResponse resp;
  absl::Status s = impl_->Unary(call, [&](Impl::Channel& ch, grpc::ClientContext& ctx) {
    resp.Clear();
    return ch.keys->Delete(&ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp.deleted_versions();
}

absl::StatusOr<KeyInfo> Client::ImportKey(const ImportKeyOp& op, const CallOptions& call) {
  pqc::v1::ImportKeyRequest req;
  ToProto(op, &req);
  pqc::v1::KeyInfo resp;
  absl::Status s = impl_->Unary(call, [&](Impl::Channel& ch, grpc::ClientContext& ctx) {
    resp.Clear();
    return ch.keys->Import(&ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return FromProto(std::move(resp));
}

absl::StatusOr<KeyInfo> Client::RotateKey(const std::string& key_id, const CallOptions& call) {
  pqc::v1::RotateKeyRequest req;
  req.set_key_id(key_id);
  pqc::v1::KeyInfo resp;
  absl::Status s = impl_->Unary(call, [&](Impl::Channel& ch, grpc::ClientContext& ctx) {
    resp.Clear();
    return ch.keys->Rotate(&ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return FromProto(std::move(resp));
}

namespace {
template <class Done>
auto KeyInfoDone(Done done) {
  return [done = std::move(done)](absl::Status s, pqc::v1::KeyInfo& r) mutable {
    if (!s.ok()) return done(std::move(s));
    done(FromProto(std::move(r)));
  };
}
}  // namespace

void Client::GetPublicKeyAsync(std::string key_id, uint32_t version, Callback<KeyInfo> done,
                               const CallOptions& call) {
  pqc::v1::GetPublicKeyRequest req;
  req.set_key_id(std::move(key_id));
  req.set_version(version);
  impl_->UnaryAsync<pqc::v1::GetPublicKeyRequest, pqc::v1::KeyInfo>(
      std::move(req),
      [](Impl::Channel& ch, grpc::ClientContext* ctx, const pqc::v1::GetPublicKeyRequest* rq,
         pqc::v1::KeyInfo* rs, std::function<void(grpc::Status)> cb) {
        ch.keys->async()->GetPublicKey(ctx, rq, rs, std::move(cb));
      },
      KeyInfoDone(std::move(done)), call);
}

// One page of an asynchronous List; the next page is requested from this page's completion.
void Client::ListKeysPageAsync(pqc::v1::ListKeysRequest req,
                               std::shared_ptr<std::vector<KeyInfo>> out,
                               Callback<std::vector<KeyInfo>> done, const CallOptions& call) {
  impl_->UnaryAsync<pqc::v1::ListKeysRequest, pqc::v1::ListKeysResponse>(
      req,
      [](Impl::Channel& ch, grpc::ClientContext* ctx, const pqc::v1::ListKeysRequest* rq,
         pqc::v1::ListKeysResponse* rs, std::function<void(grpc::Status)> cb) {
        ch.keys->async()->List(ctx, rq, rs, std::move(cb));
      },
      [this, req, out, done = std::move(done), call](absl::Status s,
                                                     pqc::v1::ListKeysResponse& r) mutable {
        if (!s.ok()) return done(std::move(s));
        for (auto& k : *r.mutable_keys()) out->push_back(FromProto(std::move(k)));
        if (r.next_page_token().empty()) return done(std::move(*out));
        req.set_page_token(std::move(*r.mutable_next_page_token()));
        ListKeysPageAsync(std::move(req), std::move(out), std::move(done), call);
      },
      call);
}

void Client::ListKeysAsync(std::map<std::string, std::string> label_selector,
                           Callback<std::vector<KeyInfo>> done, const CallOptions& call) {
  pqc::v1::ListKeysRequest req;
  for (const auto& [k, v] : label_selector) (*req.mutable_label_selector())[k] = v;
  req.set_page_size(kListPageSize);
  ListKeysPageAsync(std::move(req), std::make_shared<std::vector<KeyInfo>>(), std::move(done),
                    call);
}

void Client::DeleteKeyAsync(std::string key_id, uint32_t version, Callback<uint32_t> done,
                            const CallOptions& call) {
  pqc::v1::DeleteKeyRequest req;
  req.set_key_id(std::move(key_id));
  req.set_version(version);
  impl_->UnaryAsync<pqc::v1::DeleteKeyRequest, pqc::v1::DeleteKeyResponse>(
      std::move(req),
      [](Impl::Channel& ch, grpc::ClientContext* ctx, const pqc::v1::DeleteKeyRequest* rq,
         pqc::v1::DeleteKeyResponse* rs, std::function<void(grpc::Status)> cb) {
        ch.keys->async()->Delete(ctx, rq, rs, std::move(cb));
      },
      [done = std::move(done)](absl::Status s, pqc::v1::DeleteKeyResponse& r) mutable {
        if (!s.ok()) return done(std::move(s));
        done(r.deleted_versions());
      },
      call);
}

void Client::ImportKeyAsync(ImportKeyOp op, Callback<KeyInfo> done, const CallOptions& call) {
  pqc::v1::ImportKeyRequest req;
  ToProto(op, &req);
  impl_->UnaryAsync<pqc::v1::ImportKeyRequest, pqc::v1::KeyInfo>(
      std::move(req),
      [](Impl::Channel& ch, grpc::ClientContext* ctx, const pqc::v1::ImportKeyRequest* rq,
         pqc::v1::KeyInfo* rs, std::function<void(grpc::Status)> cb) {
        ch.keys->async()->Import(ctx, rq, rs, std::move(cb));
      },
      KeyInfoDone(std::move(done)), call);
}

void Client::RotateKeyAsync(std::string key_id, Callback<KeyInfo> done, const CallOptions& call) {
  pqc::v1::RotateKeyRequest req;
  req.set_key_id(std::move(key_id));
  impl_->UnaryAsync<pqc::v1::RotateKeyRequest, pqc::v1::KeyInfo>(
      std::move(req),
      [](Impl::Channel& ch, grpc::ClientContext* ctx, const pqc::v1::RotateKeyRequest* rq,
         pqc::v1::KeyInfo* rs, std::function<void(grpc::Status)> cb) {
        ch.keys->async()->Rotate(ctx, rq, rs, std::move(cb));
      },
      KeyInfoDone(std::move(done)), call);
}

// ---- Health ---------------------------------------------------------------------------------
absl::StatusOr<HealthStatus> Client::Health(const std::string& service, const CallOptions& call) {
  const std::string encoded = EncodeHealthRequest(service);
  std::string answer;
  absl::Status s = impl_->Unary(call, [&](Impl::Channel& ch, grpc::ClientContext& ctx) {
    grpc::Slice slice(encoded);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    absl::Notification finished;
    grpc::Status status;
    ch.generic->UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                          &response, [&](grpc::Status st) {
                            status = std::move(st);
                            finished.Notify();
                          });
    finished.WaitForNotification();
    if (status.ok()) {
      std::vector<grpc::Slice> slices;
      (void)response.Dump(&slices);
      answer.clear();
      for (const auto& sl : slices) {
        answer.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
      }
    }
    return status;
  });
  if (!s.ok()) return s;
  return DecodeHealthResponse(answer);
}

absl::Status Client::WaitForServing(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last = absl::DeadlineExceededError("the daemon did not become SERVING in time");
  while (absl::Now() < deadline) {
    CallOptions call;
    call.timeout = std::min(absl::Seconds(1), deadline - absl::Now());
    call.wait_for_ready = true;
    auto h = Health("", call);
    if (h.ok() && *h == HealthStatus::kServing) return absl::OkStatus();
    if (!h.ok()) {
      last = h.status();
    } else {
      last = absl::UnavailableError(absl::StrCat("health is ", std::string(HealthStatusName(*h))));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return last;
}

}  // namespace pqcd::client
