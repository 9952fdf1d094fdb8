// The daemon's Unix domain socket listener. pqcd accepts Unix connections itself (instead of
// letting gRPC listen on "unix:<path>") so that it can read each connection's SO_PEERCRED: the
// accept thread records fd -> uid and hands the connection to the running gRPC server with
// grpc::AddInsecureChannelFromFd. Calls on such a connection have the peer string "fd:<N>", which
// PeerUid maps back to the uid.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
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
    size_t max_connections = 1024;  // connections beyond this are closed at once
    std::shared_ptr<spdlog::logger> log;
  };

  // Creates, binds (file mode `mode`) and listens. An existing socket file nobody listens on is
  // removed first; a live socket or any other kind of file at `path` is an error.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Listen(Options options);
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Starts the accept thread, which hands connections to `server` (already started).
  void Start(grpc::Server* server);
  // Stops accepting (joins the thread), closes the listening socket and removes the socket file.
  // Connections already handed to gRPC are not affected. Idempotent.
  void Stop();

  // The uid of the process at the other end of the connection a call with this peer string
  // ("fd:<N>") arrived on; nullopt when the peer is not one of this listener's connections.
  std::optional<uint32_t> PeerUid(std::string_view peer) const;

  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }

 private:
  explicit UnixListener(Options options) : options_(std::move(options)) {}
  void AcceptLoop();
  // Forgets connections whose fd gRPC has closed (the fd is gone or is another file now).
  void PruneClosedLocked();

  struct Peer {
    uint32_t uid;
    ino_t inode;  // of the accepted socket, to tell a closed and reused fd apart
  };

  Options options_;
  int listen_fd_ = -1;
  ino_t path_inode_ = 0;  // of the socket file, so that Stop removes only our own
  dev_t path_dev_ = 0;
  grpc::Server* server_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> rejected_{0};
  mutable std::mutex mu_;
  std::map<int, Peer> peers_;  // guarded by mu_
};

}  // namespace pqcd::server
