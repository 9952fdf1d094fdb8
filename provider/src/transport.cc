#include "transport.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <openssl/async.h>
#include <openssl/crypto.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "local_kem.h"
#include "pqcd_lane.h"

namespace pqcd::provider {

// ---- Lanes driven by the calling thread ------------------------------------------------------

// At most this many lanes per process: a blocking call takes an idle one, opens one while there
// are fewer, else waits for one (nginx's workers are single-threaded: one lane each).
constexpr int kMaxDirectLanes = 4;

class DirectLanes {
 public:
  DirectLanes(std::string unix_path, int64_t spin_us)
      : path_(std::move(unix_path)), spin_us_(spin_us), pid_(getpid()) {}
  ~DirectLanes() {
    if (pid_ != getpid()) return;  // the parent's lanes: its shared memory, not ours to close
    for (pqcd_lane* l : idle_) pqcd_lane_close(l);
  }
  DirectLanes(const DirectLanes&) = delete;
  DirectLanes& operator=(const DirectLanes&) = delete;

  // One request on a lane, the answer decoded by `decode` (an error status when the daemon
  // refused it). nullopt when no lane could be had: the caller then takes the client.
  template <class T, class Decode>
  std::optional<absl::StatusOr<T>> Call(const pqcd_lane_request& request, absl::Duration timeout,
                                        Decode decode) {
    const absl::Time deadline = absl::Now() + timeout;
    // A lane the daemon closed (it restarted, or drains) is replaced once. A KEM request has no
    // effect but its answer, so sending it again is harmless even if the daemon had served it.
    for (int attempt = 0; attempt < 2; ++attempt) {
      absl::Status down;
      pqcd_lane* lane = Take(deadline, &down);
      if (!down.ok()) return absl::StatusOr<T>(down);  // no daemon at all: fail at once
      if (lane == nullptr) return std::nullopt;
      pqcd_lane_request rq = request;
      const absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
      rq.timeout_ms = static_cast<uint32_t>(std::max<int64_t>(absl::ToInt64Milliseconds(left), 1));
      pqcd_lane_result r;
      const int rc = pqcd_lane_call(lane, &rq, absl::ToInt64Microseconds(left), &r);
      if (rc == 0) {
        std::optional<absl::StatusOr<T>> out;
        if (r.code == 0) {
          out.emplace(decode(r));
        } else {
          out.emplace(absl::Status(static_cast<absl::StatusCode>(r.code),
                                   std::string(r.message, r.message_len)));
        }
        pqcd_lane_release(lane, &r);  // wipes the slot (the shared secret, a private key)
        Give(lane, true);
        return out;
      }
      // Timed out: the request is still in the lane, which cannot carry another; closed: gone.
      Give(lane, false);
      if (rc == PQCD_LANE_ETIMEDOUT) {
        return absl::DeadlineExceededError(
            "pqcd lane: no answer from the daemon within the deadline");
      }
      if (rc != PQCD_LANE_ECLOSED) {
        return absl::UnavailableError(absl::StrCat("pqcd lane: ", pqcd_lane_strerror(rc)));
      }
    }
    return std::nullopt;
  }

 private:
  // An idle lane, a new one, or null (none could be opened lately, or every lane stayed busy
  // until the deadline). *down: UNAVAILABLE when nothing listens on the daemon's socket at all
  // (it is stopped: no point in trying gRPC there).
  pqcd_lane* Take(absl::Time deadline, absl::Status* down) {
    std::unique_lock lock(mu_);
    if (pid_ != getpid()) {
      // Forked: the parent's lanes map the parent's shared memory. They are left alone (not
      // closed: that would wipe slots the parent may be using) and new ones are opened here.
      idle_.clear();
      open_ = 0;
      pid_ = getpid();
      retry_after_ = absl::InfinitePast();
    }
    for (;;) {
      if (!idle_.empty()) {
        pqcd_lane* lane = idle_.back();
        idle_.pop_back();
        return lane;
      }
      if (open_ < kMaxDirectLanes) {
        if (absl::Now() < retry_after_) return nullptr;
        ++open_;
        lock.unlock();
        pqcd_lane* lane = nullptr;
        const int rc = pqcd_lane_open(path_.c_str(), 1, &lane, nullptr, 0);
        if (rc == 0) pqcd_lane_set_spin_us(lane, spin_us_);
        lock.lock();
        if (rc == 0) return lane;
        --open_;
        cv_.notify_all();
        if (absl::Status listening = Listening(); !listening.ok()) {
          *down = std::move(listening);  // the next call tries again: a restart is seen at once
          return nullptr;
        }
        // The daemon is there but gives no lane (--lanes off, its limits): the client's way
        // (gRPC) until a second passes.
        retry_after_ = absl::Now() + absl::Seconds(1);
        return nullptr;
      }
      if (cv_.wait_until(lock, absl::ToChronoTime(deadline)) == std::cv_status::timeout &&
          idle_.empty()) {
        return nullptr;
      }
    }
  }

  // Whether something accepts connections on the daemon's gRPC socket.
  absl::Status Listening() const {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof(addr.sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("socket path too long: ", path_));
    }
    std::memcpy(addr.sun_path, path_.data(), path_.size());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::OkStatus();  // cannot tell: let the client try
    const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    const int err = errno;
    ::close(fd);
    if (rc == 0 || (err != ENOENT && err != ECONNREFUSED)) return absl::OkStatus();
    return absl::UnavailableError(
        absl::StrCat("no pqcd daemon listening at unix:", path_, ": ", std::strerror(err)));
  }

  void Give(pqcd_lane* lane, bool usable) {
    {
      std::lock_guard lock(mu_);
      if (usable) {
        idle_.push_back(lane);
        lane = nullptr;
      } else {
        --open_;
      }
    }
    cv_.notify_one();
    pqcd_lane_close(lane);  // null when kept
  }

  const std::string path_;
  const int64_t spin_us_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<pqcd_lane*> idle_;
  int open_ = 0;  // idle and taken
  pid_t pid_;
  absl::Time retry_after_ = absl::InfinitePast();
};

Transport::Transport(TransportConfig config) : config_(std::move(config)) {
  if (config_.lane) {
    if (std::optional<std::string> path = client::UnixSocketPath(config_.address)) {
      direct_ = std::make_unique<DirectLanes>(*std::move(path), config_.lane_spin_us);
    }
  }
}

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
  options.lane.enabled = config_.lane && client::UnixSocketPath(config_.address).has_value();
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

namespace {

std::string Out(const pqcd_lane_result& r, int i) {
  return std::string(reinterpret_cast<const char*>(r.out[i]), r.out_len[i]);
}

bool InAsyncJob() {
  return ASYNC_get_current_job() != nullptr;
}

}  // namespace

absl::StatusOr<client::KeyPair> Transport::RemoteKeyGen(client::Algorithm algorithm) {
  if (direct_ != nullptr && !InAsyncJob()) {
    pqcd_lane_request rq{};
    rq.op = PQCD_LANE_KEYGEN;
    rq.algorithm = static_cast<uint32_t>(algorithm);
    auto r = direct_->Call<client::KeyPair>(rq, config_.deadline, [&](const pqcd_lane_result& a) {
      client::KeyPair k;
      k.algorithm = algorithm;
      k.public_key = Out(a, 0);
      k.private_key = Out(a, 1);
      k.seed = Out(a, 2);
      return k;
    });
    if (r.has_value()) return *std::move(r);
  }
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

absl::StatusOr<client::EncapsResult> Transport::RemoteEncaps(client::Algorithm algorithm,
                                                             const std::string& public_key) {
  if (direct_ != nullptr && !InAsyncJob()) {
    pqcd_lane_request rq{};
    rq.op = PQCD_LANE_ENCAPS;
    rq.algorithm = static_cast<uint32_t>(algorithm);
    rq.key = reinterpret_cast<const uint8_t*>(public_key.data());
    rq.key_len = public_key.size();
    auto r =
        direct_->Call<client::EncapsResult>(rq, config_.deadline, [](const pqcd_lane_result& a) {
          return client::EncapsResult{Out(a, 0), Out(a, 1), a.key_version};
        });
    if (r.has_value()) return *std::move(r);
  }
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

absl::StatusOr<client::DecapsResult> Transport::RemoteDecaps(client::Algorithm algorithm,
                                                             const std::string& private_key,
                                                             const std::string& ciphertext) {
  if (direct_ != nullptr && !InAsyncJob()) {
    // The private key is copied into the lane's slot only, which pqcd_lane_release wipes.
    pqcd_lane_request rq{};
    rq.op = PQCD_LANE_DECAPS;
    rq.algorithm = static_cast<uint32_t>(algorithm);
    rq.key = reinterpret_cast<const uint8_t*>(private_key.data());
    rq.key_len = private_key.size();
    rq.input = reinterpret_cast<const uint8_t*>(ciphertext.data());
    rq.input_len = ciphertext.size();
    auto r = direct_->Call<client::DecapsResult>(
        rq, config_.deadline,
        [](const pqcd_lane_result& a) { return client::DecapsResult{Out(a, 0)}; });
    if (r.has_value()) return *std::move(r);
  }
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

namespace {

// The daemon's answer, or with fallback_local the local computation where it was unreachable.
template <class T, class Local>
absl::StatusOr<T> OrLocal(bool fallback_local, absl::StatusOr<T> remote, Local local) {
  if (!remote.ok() && fallback_local && Unreachable(remote.status())) {
    return local();
  }
  return remote;
}

}  // namespace

absl::StatusOr<client::KeyPair> Transport::KeyGen(client::Algorithm algorithm) {
  return OrLocal(config_.fallback_local, RemoteKeyGen(algorithm),
                 [&] { return local::KeyGen(algorithm); });
}

absl::StatusOr<client::EncapsResult> Transport::Encaps(client::Algorithm algorithm,
                                                       const std::string& public_key) {
  return OrLocal(config_.fallback_local, RemoteEncaps(algorithm, public_key),
                 [&] { return local::Encaps(algorithm, public_key); });
}

absl::StatusOr<client::DecapsResult> Transport::Decaps(client::Algorithm algorithm,
                                                       const std::string& private_key,
                                                       const std::string& ciphertext) {
  return OrLocal(config_.fallback_local, RemoteDecaps(algorithm, private_key, ciphertext),
                 [&] { return local::Decaps(algorithm, private_key, ciphertext); });
}

}  // namespace pqcd::provider
