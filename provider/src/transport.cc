#include "transport.h"

#include <unistd.h>

#include <utility>

#include <openssl/crypto.h>

#include "absl/strings/match.h"

namespace pqcd::provider {

Transport::Transport(TransportConfig config) : config_(std::move(config)) {}

Transport::~Transport() {
  // A client inherited across fork belongs to the parent's gRPC threads, which do not exist here:
  // destroying it would wait for them. It is left to the process's exit instead.
  if (client_ != nullptr && pid_ != getpid()) {
    Abandon();
  }
}

void Transport::Abandon() {
  // Kept alive by a copy that is never freed.
  new std::shared_ptr<client::Client>(std::move(client_));
}

absl::StatusOr<std::shared_ptr<client::Client>> Transport::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  const pid_t pid = getpid();
  if (client_ != nullptr && pid_ == pid) {
    return client_;
  }
  if (client_ != nullptr) {
    Abandon();  // made by the parent before fork: see ~Transport
  }
  client::ClientOptions options;
  options.targets = {config_.address};
  options.default_timeout = config_.deadline;
  options.lane.enabled = config_.lane && absl::StartsWith(config_.address, "unix:");
  absl::StatusOr<std::unique_ptr<client::Client>> made = client::Client::Create(options);
  if (!made.ok()) {
    return made.status();
  }
  client_ = *std::move(made);
  pid_ = pid;
  return client_;
}

// The client library enforces the deadline on both of its ways (gRPC and the lane, on the
// caller's side), and reopens a lane that the daemon closed on the next call, so each call is the
// client's own synchronous call.
absl::StatusOr<client::KeyPair> Transport::KeyGen(client::Algorithm algorithm) {
  absl::StatusOr<std::shared_ptr<client::Client>> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  client::KeyGenOp op;
  op.algorithm = algorithm;
  return (*c)->KeyGen(op, {.timeout = config_.deadline});
}

absl::StatusOr<client::EncapsResult> Transport::Encaps(client::Algorithm algorithm,
                                                       const std::string& public_key) {
  absl::StatusOr<std::shared_ptr<client::Client>> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  const client::EncapsOp op{.algorithm = algorithm, .key = client::Key::Raw(public_key)};
  return (*c)->Encaps(op, {.timeout = config_.deadline});
}

absl::StatusOr<client::DecapsResult> Transport::Decaps(client::Algorithm algorithm,
                                                       const std::string& private_key,
                                                       const std::string& ciphertext) {
  absl::StatusOr<std::shared_ptr<client::Client>> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  // The op's copy of the private key is wiped here; the client library's copies (the lane's
  // pending request, the gRPC message) are its own (see docs/provider.md).
  client::DecapsOp op{
      .algorithm = algorithm, .key = client::Key::Raw(private_key), .ciphertext = ciphertext};
  absl::StatusOr<client::DecapsResult> result = (*c)->Decaps(op, {.timeout = config_.deadline});
  OPENSSL_cleanse(op.key.bytes.data(), op.key.bytes.size());
  return result;
}

}  // namespace pqcd::provider
