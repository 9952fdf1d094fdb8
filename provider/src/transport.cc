#include "transport.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <optional>
#include <utility>

#include <openssl/crypto.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

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

void Transport::Dropped(const std::shared_ptr<client::Client>& c, const absl::Status& status) {
  if (status.code() != absl::StatusCode::kUnavailable) {
    return;
  }
  std::shared_ptr<client::Client> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (client_ == c && pid_ == getpid()) {
      old = std::move(client_);
    }
  }
  // old (if this was the last use) is destroyed here, outside the lock, on this thread.
}

namespace {

void WipeString(std::string& s) {
  if (!s.empty()) {
    OPENSSL_cleanse(s.data(), s.size());
  }
}
void WipeResult(client::KeyPair& r) {
  WipeString(r.private_key);
  WipeString(r.seed);
}
void WipeResult(client::EncapsResult& r) {
  WipeString(r.shared_secret);
}
void WipeResult(client::DecapsResult& r) {
  WipeString(r.shared_secret);
}

// One call, waited for here with the provider's own deadline. The client library's lanes hand the
// deadline to the daemon but do not enforce it themselves, so a daemon that stops answering (a
// frozen process) would otherwise block the TLS handshake, and an nginx worker, for good. The
// client's deadline (gRPC's) normally fires first; this one is a little later. An answer that comes
// after the wait gave up is wiped when it arrives.
template <class T>
struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;
  std::optional<absl::StatusOr<T>> result;
};

template <class T, class Start>
absl::StatusOr<T> CallWithDeadline(absl::Duration deadline, const std::string& address,
                                   Start start) {
  auto w = std::make_shared<Waiter<T>>();
  start([w](absl::StatusOr<T> r) {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->abandoned) {
      if (r.ok()) {
        WipeResult(*r);
      }
      return;
    }
    w->result.emplace(std::move(r));
    w->done = true;
    w->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(w->mu);
  const auto wait = absl::ToChronoMilliseconds(deadline + absl::Milliseconds(250));
  if (!w->cv.wait_for(lock, wait, [&] { return w->done; })) {
    w->abandoned = true;
    return absl::DeadlineExceededError(absl::StrCat("no answer from pqcd at ", address, " within ",
                                                    absl::FormatDuration(deadline)));
  }
  return std::move(*w->result);
}

}  // namespace

absl::StatusOr<client::KeyPair> Transport::KeyGen(client::Algorithm algorithm) {
  absl::StatusOr<std::shared_ptr<client::Client>> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  client::KeyGenOp op;
  op.algorithm = algorithm;
  absl::StatusOr<client::KeyPair> result = CallWithDeadline<client::KeyPair>(
      config_.deadline, config_.address,
      [&](client::Callback<client::KeyPair> done) { (*c)->KeyGenAsync(op, std::move(done)); });
  if (!result.ok()) {
    Dropped(*c, result.status());
  }
  return result;
}

absl::StatusOr<client::EncapsResult> Transport::Encaps(client::Algorithm algorithm,
                                                       const std::string& public_key) {
  absl::StatusOr<std::shared_ptr<client::Client>> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  client::EncapsOp op{.algorithm = algorithm, .key = client::Key::Raw(public_key)};
  absl::StatusOr<client::EncapsResult> result = CallWithDeadline<client::EncapsResult>(
      config_.deadline, config_.address, [&](client::Callback<client::EncapsResult> done) {
        (*c)->EncapsAsync(std::move(op), std::move(done));
      });
  if (!result.ok()) {
    Dropped(*c, result.status());
  }
  return result;
}

absl::StatusOr<client::DecapsResult> Transport::Decaps(client::Algorithm algorithm,
                                                       const std::string& private_key,
                                                       const std::string& ciphertext) {
  absl::StatusOr<std::shared_ptr<client::Client>> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  // The op (and its copy of the private key) moves into the client, which keeps it until the
  // call completes; the client library does not wipe it (see docs/provider.md).
  client::DecapsOp op{
      .algorithm = algorithm, .key = client::Key::Raw(private_key), .ciphertext = ciphertext};
  absl::StatusOr<client::DecapsResult> result = CallWithDeadline<client::DecapsResult>(
      config_.deadline, config_.address, [&](client::Callback<client::DecapsResult> done) {
        (*c)->DecapsAsync(std::move(op), std::move(done));
      });
  OPENSSL_cleanse(op.key.bytes.data(), op.key.bytes.size());  // moved from: normally empty
  if (!result.ok()) {
    Dropped(*c, result.status());
  }
  return result;
}

}  // namespace pqcd::provider
