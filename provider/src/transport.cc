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
    (void)client_.release();
  }
}

absl::StatusOr<client::Client*> Transport::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  const pid_t pid = getpid();
  if (client_ != nullptr && pid_ == pid) {
    return client_.get();
  }
  if (client_ != nullptr) {
    (void)client_.release();  // made by the parent before fork: see ~Transport
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
  return client_.get();
}

absl::StatusOr<client::KeyPair> Transport::KeyGen(client::Algorithm algorithm) {
  absl::StatusOr<client::Client*> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  client::KeyGenOp op;
  op.algorithm = algorithm;
  return (*c)->KeyGen(op);
}

absl::StatusOr<client::EncapsResult> Transport::Encaps(client::Algorithm algorithm,
                                                       const std::string& public_key) {
  absl::StatusOr<client::Client*> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  return (*c)->Encaps({.algorithm = algorithm, .key = client::Key::Raw(public_key)});
}

absl::StatusOr<client::DecapsResult> Transport::Decaps(client::Algorithm algorithm,
                                                       const std::string& private_key,
                                                       const std::string& ciphertext) {
  absl::StatusOr<client::Client*> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  client::DecapsOp op{
      .algorithm = algorithm, .key = client::Key::Raw(private_key), .ciphertext = ciphertext};
  absl::StatusOr<client::DecapsResult> result = (*c)->Decaps(op);
  OPENSSL_cleanse(op.key.bytes.data(), op.key.bytes.size());
  return result;
}

}  // namespace pqcd::provider
