#include "unix_listener.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "grpcpp/server.h"
#include "grpcpp/server_posix.h"
#include "pqcd/server/identity.h"

namespace pqcd::server {
namespace {

std::string Errno(int err) {
  return std::strerror(err);
}

absl::StatusOr<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("--unix ", path, ": a socket path is 1 to ",
                                                   sizeof(addr.sun_path) - 1, " bytes long"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

// Removes a socket file left behind by an earlier run. Refuses a live socket (another daemon
// serves there) and anything that is not a socket.
absl::Status RemoveStaleSocket(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("--unix ", path, ": ", Errno(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix ", path, ": exists and is not a socket; not removing it"));
  }
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return absl::InternalError(absl::StrCat("socket: ", Errno(errno)));
  const int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int err = errno;
  ::close(probe);
  if (rc == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix ", path, ": another process is listening on it"));
  }
  if (err != ECONNREFUSED) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix ", path, ": cannot tell whether it is in use: ", Errno(err)));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix ", path, ": cannot remove the stale socket: ", Errno(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Listen(Options options) {
  auto addr = Address(options.path);
  if (!addr.ok()) return addr.status();
  if (auto s = RemoveStaleSocket(options.path, *addr); !s.ok()) return s;

  std::unique_ptr<UnixListener> listener(new UnixListener(std::move(options)));
  const Options& o = listener->options_;
  listener->listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener->listen_fd_ < 0) return absl::InternalError(absl::StrCat("socket: ", Errno(errno)));
  // The file is created with no more access than requested, then gets the exact mode.
  const mode_t old_umask = ::umask(static_cast<mode_t>(~o.mode & 0777));
  const int rc =
      ::bind(listener->listen_fd_, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
  const int err = errno;
  ::umask(old_umask);
  if (rc != 0) {
    return absl::FailedPreconditionError(absl::StrCat("--unix ", o.path, ": bind: ", Errno(err)));
  }
  struct stat st {};
  if (::lstat(o.path.c_str(), &st) == 0) {
    listener->path_inode_ = st.st_ino;
    listener->path_dev_ = st.st_dev;
  }
  if (::chmod(o.path.c_str(), o.mode) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix ", o.path, ": chmod: ", Errno(errno)));
  }
  if (::listen(listener->listen_fd_, SOMAXCONN) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix ", o.path, ": listen: ", Errno(errno)));
  }
  listener->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  listener->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (listener->epoll_fd_ < 0 || listener->wake_fd_ < 0) {
    return absl::InternalError(absl::StrCat("epoll/eventfd: ", Errno(errno)));
  }
  for (const int fd : {listener->listen_fd_, listener->wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(listener->epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return absl::InternalError(absl::StrCat("epoll_ctl: ", Errno(errno)));
    }
  }
  return listener;
}

UnixListener::~UnixListener() {
  Stop();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void UnixListener::Start(grpc::Server* server) {
  server_ = server;
  thread_ = std::thread([this] { AcceptLoop(); });
}

void UnixListener::Stop() {
  if (listen_fd_ < 0) return;
  stopping_.store(true);
  const uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof(one)) < 0) {
    // The eventfd cannot be full (one write per Stop); nothing else to do.
  }
  if (thread_.joinable()) thread_.join();
  {
    // Connections that never completed their handshake are ours to close.
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = peers_.begin(); it != peers_.end();) {
      if (it->second.pending) {
        ::close(it->first);
        auto next = std::next(it);
        EraseLocked(it);
        it = next;
      } else {
        ++it;
      }
    }
  }
  ::close(listen_fd_);
  listen_fd_ = -1;
  struct stat st {};
  if (::lstat(options_.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
      st.st_ino == path_inode_ && st.st_dev == path_dev_) {
    ::unlink(options_.path.c_str());
  }
}

std::optional<uint32_t> UnixListener::PeerUid(std::string_view peer) const {
  constexpr std::string_view kPrefix = "fd:";
  if (peer.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  peer.remove_prefix(kPrefix.size());
  int fd = -1;
  const auto [end, ec] = std::from_chars(peer.data(), peer.data() + peer.size(), fd);
  if (ec != std::errc() || end != peer.data() + peer.size()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(fd);
  if (it == peers_.end() || it->second.pending) return std::nullopt;
  return it->second.uid;
}

UnixListener::Refusals UnixListener::refusals() const {
  constexpr auto R = std::memory_order_relaxed;
  return Refusals{refused_limit_.load(R), refused_uid_.load(R), refused_timeout_.load(R),
                  refused_not_http2_.load(R)};
}

UnixListener::Open UnixListener::open() {
  std::lock_guard<std::mutex> lock(mu_);
  PruneClosedLocked();
  Open o;
  for (const auto& [fd, peer] : peers_) ++(peer.pending ? o.pending : o.handed);
  return o;
}

void UnixListener::EraseLocked(std::map<int, Peer>::iterator it) {
  auto u = per_uid_.find(it->second.uid);
  if (u != per_uid_.end() && --u->second == 0) per_uid_.erase(u);
  peers_.erase(it);
}

void UnixListener::PruneClosedLocked() {
  for (auto it = peers_.begin(); it != peers_.end();) {
    struct stat st {};
    if (!it->second.pending &&
        (::fstat(it->first, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != it->second.inode)) {
      auto next = std::next(it);
      EraseLocked(it);
      it = next;
    } else {
      ++it;
    }
  }
}

void UnixListener::ClosePending(int fd, std::atomic<uint64_t>& reason) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(fd);
    if (it == peers_.end() || !it->second.pending) return;
    EraseLocked(it);
  }
  ::close(fd);
  reason.fetch_add(1, std::memory_order_relaxed);
}

void UnixListener::Inspect(int fd) {
  // RFC 9113 §3.4: the client preface, then a SETTINGS frame (9-byte header: length 24 bits,
  // type 0x4, flags without ACK, stream 0).
  static constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  constexpr size_t kPrefaceBytes = sizeof(kPreface) - 1;
  unsigned char buf[kPrefaceBytes + 9];
  const ssize_t got = ::recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (got <= 0) return ClosePending(fd, refused_not_http2_);  // closed (or failed) too early
  const size_t n = static_cast<size_t>(got);
  if (std::memcmp(buf, kPreface, std::min(n, kPrefaceBytes)) != 0) {
    return ClosePending(fd, refused_not_http2_);
  }
  if (n < sizeof(buf)) return;  // the rest comes with a later edge, or the timeout closes it
  const unsigned char* frame = buf + kPrefaceBytes;
  const uint32_t stream =
      (uint32_t{frame[5]} << 24 | uint32_t{frame[6]} << 16 | uint32_t{frame[7]} << 8 | frame[8]) &
      0x7fffffffu;
  if (frame[3] != 0x4 || (frame[4] & 0x1) != 0 || stream != 0) {
    return ClosePending(fd, refused_not_http2_);
  }
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(fd);
    if (it == peers_.end() || !it->second.pending) return;
    it->second.pending = false;
  }
  // gRPC owns the fd from here on (and closes it).
  grpc::AddInsecureChannelFromFd(server_, fd);
}

void UnixListener::AcceptAll() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EINTR || err == ECONNABORTED) continue;
      // Out of descriptors or memory (or worse): stop accepting for a moment rather than spin.
      report_("accept: " + Errno(err));
      accept_paused_until_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
      epoll_event ev{};
      ev.data.fd = listen_fd_;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);  // no events until resumed
      return;
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    struct stat st {};
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred) ||
        ::fstat(fd, &st) != 0) {
      report_("cannot read the peer credentials: " + Errno(errno));
      ::close(fd);
      continue;
    }
    const uint32_t uid = static_cast<uint32_t>(cred.uid);
    const auto now = std::chrono::steady_clock::now();
    std::string refused;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // An fd number is reused only after gRPC closed the earlier connection on it.
      if (auto old = peers_.find(fd); old != peers_.end()) EraseLocked(old);
      auto count = [&] {
        auto u = per_uid_.find(uid);
        return u == per_uid_.end() ? size_t{0} : u->second;
      };
      if (peers_.size() >= options_.max_connections ||
          count() >= options_.max_connections_per_uid) {
        PruneClosedLocked();
      }
      if (peers_.size() >= options_.max_connections) {
        refused_limit_.fetch_add(1, std::memory_order_relaxed);
        refused = absl::StrCat("connection refused: --max-unix-connections ",
                               options_.max_connections, " reached");
      } else if (count() >= options_.max_connections_per_uid) {
        refused_uid_.fetch_add(1, std::memory_order_relaxed);
        refused =
            absl::StrCat("connection of uid ", uid, " refused: --max-unix-connections-per-uid ",
                         options_.max_connections_per_uid, " reached");
      } else {
        peers_[fd] = Peer{uid, st.st_ino, /*pending=*/true, now};
        ++per_uid_[uid];
      }
    }
    if (!refused.empty()) {
      ::close(fd);
      report_(refused);
      continue;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      report_("epoll_ctl: " + Errno(errno));
      ClosePending(fd, refused_not_http2_);
      continue;
    }
    if (uid == OverflowUid()) {
      report_(absl::StrCat("a caller with uid ", uid,
                           ", the kernel's overflow uid, connected: callers whose uid is not "
                           "mapped into pqcd's user namespace (systemd PrivateUsers=yes, a "
                           "container's user namespace) all show as it, so it may not hold keys "
                           "(run pqcd in the callers' user namespace)"));
    }
    pending_order_.emplace_back(fd, now);
    Inspect(fd);  // what it sent before it was watched
  }
}

void UnixListener::AcceptLoop() {
  auto last_report = std::chrono::steady_clock::time_point{};
  uint64_t unreported = 0;
  // Logs at most once per second; `what` counts towards the next line while suppressed.
  report_ = [&](const std::string& what) {
    ++unreported;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report < std::chrono::seconds(1)) return;
    if (options_.log)
      options_.log->warn("unix socket {}: {} ({} time(s) since the last report)", options_.path,
                         what, unreported);
    last_report = now;
    unreported = 0;
  };
  epoll_event events[64];
  while (!stopping_.load()) {
    // Close the pending connections whose handshake time is up, oldest first; wait until the
    // next one's time at most.
    auto now = std::chrono::steady_clock::now();
    int timeout_ms = -1;
    while (!pending_order_.empty()) {
      const auto [fd, accepted] = pending_order_.front();
      bool live = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = peers_.find(fd);
        live = it != peers_.end() && it->second.pending && it->second.accepted == accepted;
      }
      if (!live) {
        pending_order_.pop_front();
        continue;
      }
      const auto due = accepted + options_.handshake_timeout;
      if (due <= now) {
        pending_order_.pop_front();
        ClosePending(fd, refused_timeout_);
        report_(absl::StrCat("connection closed: no HTTP/2 preface within the handshake timeout (",
                             options_.handshake_timeout.count(), " ms)"));
        continue;
      }
      timeout_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(due - now).count() + 1);
      break;
    }
    if (accept_paused_until_) {
      if (*accept_paused_until_ <= now) {
        accept_paused_until_.reset();
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = listen_fd_;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
      } else {
        const int pause_ms = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(*accept_paused_until_ - now)
                .count() +
            1);
        timeout_ms = timeout_ms < 0 ? pause_ms : std::min(timeout_ms, pause_ms);
      }
    }
    const int n = ::epoll_wait(epoll_fd_, events, 64, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (options_.log)
        options_.log->error("unix socket {}: epoll_wait: {}", options_.path, Errno(errno));
      break;
    }
    for (int i = 0; i < n && !stopping_.load(); ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) continue;  // Stop
      if (fd == listen_fd_) {
        AcceptAll();
      } else {
        Inspect(fd);
      }
    }
  }
  report_ = nullptr;
}

}  // namespace pqcd::server
