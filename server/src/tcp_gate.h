// Caps on the TCP connections of --listen. gRPC 1.51 accepts TCP connections itself and has no
// connection limit, and pqcd cannot accept them itself as it does Unix ones (gRPC takes a
// connection from a descriptor only without TLS). What gRPC 1.51 does offer is a socket mutator
// (channel argument GRPC_ARG_SOCKET_MUTATOR): a function it calls on every socket it accepts,
// before it reads from it. The gate counts the connection there, in total and per peer address,
// and refuses one past a cap by shutting the socket down, which gRPC's handshake then sees as a
// connection closed by its client, so it closes and forgets it.
//
// gRPC tells no one when it closes a connection. The gate forgets a connection when its fd is
// gone or names another socket (the inode differs), as UnixListener does for the connections it
// hands over: when an accepted fd is one it still counts, and when a cap would refuse a
// connection (then at most once per 10 ms, so a flood at the cap cannot turn every accept into a
// scan).
//
// The mutator's layout is gRPC's own (src/core/lib/iomgr/socket_mutator.h, unchanged since 1.30)
// and not in gRPC's installed headers; tcp_gate.cc declares it. The gate checks at start-up that
// gRPC called it for the listening socket (installed()), and the daemon says so in its log when
// it did not, so a gRPC that changed the layout cannot leave the caps silently off.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "spdlog/logger.h"

namespace grpc {
class ServerBuilder;
}

namespace pqcd::server {

class TcpConnectionGate : public std::enable_shared_from_this<TcpConnectionGate> {
 public:
  struct Options {
    size_t max_connections = 4096;        // --max-tcp-connections
    size_t max_per_address = 1024;        // --max-tcp-connections-per-address
    std::shared_ptr<spdlog::logger> log;  // refusals, at most one line per second
  };
  struct Refusals {
    uint64_t limit = 0;          // the total was reached
    uint64_t address_limit = 0;  // the peer address's cap was reached
  };

  static std::shared_ptr<TcpConnectionGate> Create(Options options);

  // Makes the builder's TCP listeners call the gate for every connection they accept.
  void Install(grpc::ServerBuilder& builder);
  // Whether gRPC has called the gate for a listening socket (so it will for connections too).
  bool installed() const { return listener_seen_.load(std::memory_order_relaxed); }

  // The decision on one accepted socket: counts it and returns true, or shuts it down (gRPC then
  // closes it), counts the refusal and returns false.
  bool Admit(int fd);
  // Connections counted now (after forgetting those gRPC has closed).
  size_t open();
  Refusals refusals() const;

  // The peer-address key that the per-address cap counts by: the IPv4 address (also when it
  // arrives IPv4-mapped on an IPv6 socket), an IPv6 address's /64 prefix (one host usually holds
  // a whole /64), or "" when the socket has no IP peer.
  static std::string AddressKey(int fd);

  // Called by the mutator (tcp_gate.cc) for a listening socket.
  void NoteListener() { listener_seen_.store(true, std::memory_order_relaxed); }

 private:
  explicit TcpConnectionGate(Options options) : options_(options) {}
  struct Conn {
    ino_t inode;
    std::string address;
  };
  using ConnMap = std::unordered_map<int, Conn>;
  void EraseLocked(ConnMap::iterator it);
  void PruneLocked();
  void Report(int fd, bool over_total);

  const Options options_;
  std::atomic<bool> listener_seen_{false};
  std::atomic<uint64_t> refused_limit_{0}, refused_address_{0};
  std::atomic<int64_t> last_report_ns_{0};  // steady clock, of the last refusal logged
  std::mutex mu_;
  ConnMap conns_;                                       // guarded by mu_: fd -> connection
  std::unordered_map<std::string, size_t> per_addr_;    // guarded by mu_
  std::chrono::steady_clock::time_point last_prune_{};  // guarded by mu_
};

}  // namespace pqcd::server
