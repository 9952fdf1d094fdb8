// The daemon's Unix domain socket listener. pqcd accepts Unix connections itself (instead of
// letting gRPC listen on "unix:<path>") so that it can read each connection's SO_PEERCRED: the
// accept thread records fd -> uid and hands the connection to the running gRPC server with
// grpc::AddInsecureChannelFromFd. Calls on such a connection have the peer string "fd:<N>", which
// PeerUid maps back to the uid.
//
// A connection is handed to gRPC only once its client has sent the HTTP/2 client preface and the
// header of its first SETTINGS frame (RFC 9113 §3.4), which every HTTP/2 client sends at once
// without waiting for the server. Until then it is pending: the listener thread watches it with
// epoll and closes it when it sends anything else or nothing complete within the handshake
// timeout. Pending and handed-over connections count towards both caps, the total and the one per
// uid, so one local user cannot lock the socket for the others with half-open connections.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "spdlog/logger.h"

namespace grpc {
class Server;
}

namespace pqcd::server {

class UnixListener {
 public:
  struct Options {
    std::string path;
    mode_t mode = 0660;
    size_t max_connections = 1024;         // connections beyond this are closed at once
    size_t max_connections_per_uid = 256;  // the same, per connecting uid
    std::chrono::milliseconds handshake_timeout{5000};
    std::shared_ptr<spdlog::logger> log;
  };

  // Connections closed by the listener, by reason (monotonic counters).
  struct Refusals {
    uint64_t limit = 0;              // --max-unix-connections reached
    uint64_t uid_limit = 0;          // --max-unix-connections-per-uid reached
    uint64_t handshake_timeout = 0;  // no HTTP/2 preface and SETTINGS within the timeout
    uint64_t not_http2 = 0;          // sent something else, or closed before the preface
  };

  // Creates, binds (file mode `mode`) and listens. An existing socket file nobody listens on is
  // removed first; a live socket or any other kind of file at `path` is an error.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Listen(Options options);
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Starts the accept thread, which hands connections to `server` (already started).
  void Start(grpc::Server* server);
  // Stops accepting (joins the thread), closes the pending connections and the listening socket
  // and removes the socket file. Connections already handed to gRPC are not affected. Idempotent.
  void Stop();

  // The uid of the process at the other end of the connection a call with this peer string
  // ("fd:<N>") arrived on; nullopt when the peer is not one of this listener's connections.
  std::optional<uint32_t> PeerUid(std::string_view peer) const;

  Refusals refusals() const;
  // Connections open now: handed to gRPC (forgetting those gRPC has closed), and pending.
  struct Open {
    size_t handed = 0;
    size_t pending = 0;
  };
  Open open();

 private:
  explicit UnixListener(Options options) : options_(std::move(options)) {}
  struct Peer {
    uint32_t uid;
    ino_t inode;  // of the accepted socket, to tell a closed and reused fd apart
    bool pending;
    std::chrono::steady_clock::time_point accepted;
  };

  void AcceptLoop();
  void AcceptAll();
  // Looks at what a pending connection has sent: hands it to gRPC, closes it, or keeps waiting.
  void Inspect(int fd);
  void ClosePending(int fd, std::atomic<uint64_t>& reason);
  // Forgets connections whose fd gRPC has closed (the fd is gone or is another file now).
  void PruneClosedLocked();
  void EraseLocked(std::map<int, Peer>::iterator it);

  Options options_;
  int listen_fd_ = -1;
  ino_t path_inode_ = 0;  // of the socket file, so that Stop removes only our own
  dev_t path_dev_ = 0;
  grpc::Server* server_ = nullptr;
  std::thread thread_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop wakes the listener thread through it
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> refused_limit_{0}, refused_uid_{0}, refused_timeout_{0},
      refused_not_http2_{0};
  mutable std::mutex mu_;
  std::map<int, Peer> peers_;           // guarded by mu_
  std::map<uint32_t, size_t> per_uid_;  // guarded by mu_: entries of peers_ per uid
  // Listener thread only: pending fds with their accept time, oldest first; the warning sink (at
  // most one line per second); when accepting resumes after running out of descriptors.
  std::deque<std::pair<int, std::chrono::steady_clock::time_point>> pending_order_;
  std::function<void(const std::string&)> report_;
  std::optional<std::chrono::steady_clock::time_point> accept_paused_until_;
};

}  // namespace pqcd::server
