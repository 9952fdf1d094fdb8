#include "unix_listener.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "grpcpp/server.h"
#include "grpcpp/server_posix.h"

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
  listener->listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
  return listener;
}

UnixListener::~UnixListener() {
  Stop();
}

void UnixListener::Start(grpc::Server* server) {
  server_ = server;
  thread_ = std::thread([this] { AcceptLoop(); });
}

void UnixListener::Stop() {
  if (listen_fd_ < 0) return;
  stopping_.store(true);
  // Wakes the blocked accept4 (it fails with EINVAL once the socket is shut down).
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
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
  if (it == peers_.end()) return std::nullopt;
  return it->second.uid;
}

void UnixListener::PruneClosedLocked() {
  for (auto it = peers_.begin(); it != peers_.end();) {
    struct stat st {};
    if (::fstat(it->first, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != it->second.inode) {
      it = peers_.erase(it);
    } else {
      ++it;
    }
  }
}

void UnixListener::AcceptLoop() {
  auto last_report = std::chrono::steady_clock::time_point{};
  uint64_t unreported = 0;
  // Logs at most once per second; `what` counts towards the next line while suppressed.
  auto report = [&](const std::string& what) {
    ++unreported;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report < std::chrono::seconds(1)) return;
    if (options_.log)
      options_.log->warn("unix socket {}: {} ({} time(s) since the last report)", options_.path,
                         what, unreported);
    last_report = now;
    unreported = 0;
  };
  while (!stopping_.load()) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      const int err = errno;
      if (stopping_.load()) break;
      if (err == EINTR || err == ECONNABORTED) continue;
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        report("accept: " + Errno(err));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      if (options_.log)
        options_.log->error("unix socket {}: accept: {}", options_.path, Errno(err));
      break;
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    struct stat st {};
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred) ||
        ::fstat(fd, &st) != 0) {
      report("cannot read the peer credentials: " + Errno(errno));
      ::close(fd);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (peers_.size() >= options_.max_connections) PruneClosedLocked();
      if (peers_.size() >= options_.max_connections) {
        rejected_.fetch_add(1, std::memory_order_relaxed);
        ::close(fd);
        report(absl::StrCat("connection refused: --max-unix-connections ", options_.max_connections,
                            " reached"));
        continue;
      }
      // An fd number is reused only after gRPC closed the earlier connection on it.
      peers_[fd] = Peer{static_cast<uint32_t>(cred.uid), st.st_ino};
    }
    grpc::AddInsecureChannelFromFd(server_, fd);
  }
}

}  // namespace pqcd::server
