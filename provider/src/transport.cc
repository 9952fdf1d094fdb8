#include "transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <mutex>
#include <optional>
#include <utility>

#include <openssl/async.h>
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

namespace {

void WipeString(std::string& s) {
  if (!s.empty()) {
    OPENSSL_cleanse(s.data(), s.size());
  }
}
void Wipe(client::KeyPair& r) {
  WipeString(r.private_key);
  WipeString(r.seed);
}
void Wipe(client::EncapsResult& r) {
  WipeString(r.shared_secret);
}
void Wipe(client::DecapsResult& r) {
  WipeString(r.shared_secret);
}

// ASYNC: the eventfd a wait context's caller polls (SSL_get_all_async_fds), one per wait context,
// made on its first call and reused. Closed when both the wait context and every callback that
// may still write it are done with it (shared ownership).
struct WaitFd {
  int fd = -1;
  ~WaitFd() {
    if (fd >= 0) {
      close(fd);
    }
  }
};
const char kWaitKey = 0;  // its address is the key of our fd in a wait context

void ReleaseWaitFd(ASYNC_WAIT_CTX*, const void*, OSSL_ASYNC_FD, void* custom) {
  delete static_cast<std::shared_ptr<WaitFd>*>(custom);
}

std::shared_ptr<WaitFd> WaitFdOf(ASYNC_WAIT_CTX* wctx) {
  OSSL_ASYNC_FD fd = -1;
  void* custom = nullptr;
  if (ASYNC_WAIT_CTX_get_fd(wctx, &kWaitKey, &fd, &custom) == 1 && custom != nullptr) {
    return *static_cast<std::shared_ptr<WaitFd>*>(custom);
  }
  auto w = std::make_shared<WaitFd>();
  w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (w->fd < 0) {
    return nullptr;
  }
  auto* held = new std::shared_ptr<WaitFd>(w);
  if (ASYNC_WAIT_CTX_set_wait_fd(wctx, &kWaitKey, w->fd, held, ReleaseWaitFd) != 1) {
    delete held;
    return nullptr;
  }
  return w;
}

void Drain(int fd) {
  uint64_t n;
  while (read(fd, &n, sizeof(n)) == static_cast<ssize_t>(sizeof(n))) {
  }
}

template <class T>
struct Pending {
  std::mutex mu;
  bool done = false;
  bool abandoned = false;
  std::optional<absl::StatusOr<T>> result;
};

// Runs one call. Inside an OpenSSL ASYNC job (SSL_MODE_ASYNC): the call is submitted, the job
// pauses (ASYNC_pause_job) and its caller goes on with other connections until the answer writes
// the wait context's eventfd and the job is resumed; many handshakes are then in flight at once.
// Elsewhere, or when no eventfd can be had: the client's synchronous call. The client library
// enforces the deadline either way (on the lane on the caller's side), so an answer always comes.
template <class T, class Start, class Sync>
absl::StatusOr<T> Call(Start start, Sync sync) {
  ASYNC_JOB* job = ASYNC_get_current_job();
  ASYNC_WAIT_CTX* wctx = job != nullptr ? ASYNC_get_wait_ctx(job) : nullptr;
  std::shared_ptr<WaitFd> wfd = wctx != nullptr ? WaitFdOf(wctx) : nullptr;
  if (wfd == nullptr) {
    return sync();
  }
  Drain(wfd->fd);
  auto p = std::make_shared<Pending<T>>();
  start([p, wfd](absl::StatusOr<T> r) {
    std::lock_guard<std::mutex> lock(p->mu);
    if (p->abandoned) {
      if (r.ok()) {
        Wipe(*r);
      }
      return;
    }
    p->result.emplace(std::move(r));
    p->done = true;
    const uint64_t one = 1;
    (void)!write(wfd->fd, &one, sizeof(one));
  });
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(p->mu);
      if (p->done) {
        break;
      }
    }
    if (ASYNC_pause_job() != 1) {
      std::lock_guard<std::mutex> lock(p->mu);
      if (p->done) {
        break;
      }
      p->abandoned = true;
      return absl::InternalError("ASYNC_pause_job failed");
    }
  }
  Drain(wfd->fd);
  return std::move(*p->result);
}

}  // namespace

// The client library enforces the deadline on both of its ways (gRPC and the lane, on the
// caller's side), and reopens a lane that the daemon closed on the next call.
absl::StatusOr<client::KeyPair> Transport::KeyGen(client::Algorithm algorithm) {
  absl::StatusOr<std::shared_ptr<client::Client>> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  client::KeyGenOp op;
  op.algorithm = algorithm;
  const client::CallOptions call{.timeout = config_.deadline};
  return Call<client::KeyPair>(
      [&](client::Callback<client::KeyPair> done) { (*c)->KeyGenAsync(op, std::move(done), call); },
      [&] { return (*c)->KeyGen(op, call); });
}

absl::StatusOr<client::EncapsResult> Transport::Encaps(client::Algorithm algorithm,
                                                       const std::string& public_key) {
  absl::StatusOr<std::shared_ptr<client::Client>> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  const client::EncapsOp op{.algorithm = algorithm, .key = client::Key::Raw(public_key)};
  const client::CallOptions call{.timeout = config_.deadline};
  return Call<client::EncapsResult>(
      [&](client::Callback<client::EncapsResult> done) {
        (*c)->EncapsAsync(op, std::move(done), call);
      },
      [&] { return (*c)->Encaps(op, call); });
}

absl::StatusOr<client::DecapsResult> Transport::Decaps(client::Algorithm algorithm,
                                                       const std::string& private_key,
                                                       const std::string& ciphertext) {
  absl::StatusOr<std::shared_ptr<client::Client>> c = Get();
  if (!c.ok()) {
    return c.status();
  }
  // The op's copy of the private key is wiped here; the client library wipes its own copies
  // (the lane's pending request, the gRPC message) when the call is done with them.
  client::DecapsOp op{
      .algorithm = algorithm, .key = client::Key::Raw(private_key), .ciphertext = ciphertext};
  const client::CallOptions call{.timeout = config_.deadline};
  absl::StatusOr<client::DecapsResult> result = Call<client::DecapsResult>(
      [&](client::Callback<client::DecapsResult> done) {
        (*c)->DecapsAsync(op, std::move(done), call);
      },
      [&] { return (*c)->Decaps(op, call); });
  OPENSSL_cleanse(op.key.bytes.data(), op.key.bytes.size());
  return result;
}

}  // namespace pqcd::provider
