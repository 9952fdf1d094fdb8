// The provider's link to the daemon, made on first use and made again in a child after fork (a gRPC
// channel and a lane's shared memory cannot be used across fork).
//  - With a "unix:" address, a blocking call (the handshake's thread waits for it) goes through a
//    shared-memory lane that the calling thread drives itself: submit, spin briefly, sleep on the
//    lane's futex. Up to kMaxDirectLanes lanes per process, one thread on each at a time. A lane
//    the daemon closed (restart) is replaced once within the call; when no lane can be opened the
//    call goes to the client below, and lanes are tried again a second later.
//  - Otherwise, and for calls inside an OpenSSL ASYNC job: one pqcd::client::Client per process,
//    which uses a lane of its own (driven by its lane thread) where the daemon offers one, else
//    gRPC. It enforces each call's deadline and reconnects after the daemon stopped or restarted,
//    so a long-lived nginx worker keeps it.
//  - With fallback_local, a call the daemon could not be reached for is computed in process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pqcd/client/client.h"

namespace pqcd::provider {

struct TransportConfig {
  std::string address = "unix:/run/pqcd/pqcd.sock";
  absl::Duration deadline = absl::Seconds(2);
  bool lane = true;  // try the lane when the address is a Unix socket
  // How long a blocking call spins on its lane before it sleeps (PQCD_LANE_SPIN_US of
  // pqcd_lane.h): on a host whose cores the daemon shares with the TLS server, spinning only
  // takes time from the daemon.
  int64_t lane_spin_us = 0;
  // When the daemon cannot be reached (UNAVAILABLE, DEADLINE_EXCEEDED): fail the operation (the
  // default: fail-closed), or compute it in this process with pqcd's kernels (local_kem.h),
  // which gives up the daemon's key isolation for availability.
  bool fallback_local = false;
};

class DirectLanes;

// The daemon could not be reached, or did not answer in time (UNAVAILABLE, DEADLINE_EXCEEDED):
// what fails closed by default, and what `fallback_local` computes in process instead.
inline bool Unreachable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

class Transport {
 public:
  explicit Transport(TransportConfig config);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const TransportConfig& config() const { return config_; }

  absl::StatusOr<client::KeyPair> KeyGen(client::Algorithm algorithm);
  absl::StatusOr<client::EncapsResult> Encaps(client::Algorithm algorithm,
                                              const std::string& public_key);
  absl::StatusOr<client::DecapsResult> Decaps(client::Algorithm algorithm,
                                              const std::string& private_key,
                                              const std::string& ciphertext);

 private:
  // The daemon's answer (KeyGen etc. add the local fallback).
  absl::StatusOr<client::KeyPair> RemoteKeyGen(client::Algorithm algorithm);
  absl::StatusOr<client::EncapsResult> RemoteEncaps(client::Algorithm algorithm,
                                                    const std::string& public_key);
  absl::StatusOr<client::DecapsResult> RemoteDecaps(client::Algorithm algorithm,
                                                    const std::string& private_key,
                                                    const std::string& ciphertext);
  // The client of this process (made now if there is none, or if it was made before a fork).
  absl::StatusOr<std::shared_ptr<client::Client>> Get();
  // The lanes of blocking calls (null without a lane address).
  std::unique_ptr<DirectLanes> direct_;
  // Leaves client_ (made in the parent of a fork) to the process's exit: destroying it would wait
  // for the parent's gRPC and lane threads, which do not exist in the child.
  void Abandon();

  TransportConfig config_;
  std::mutex mu_;
  std::shared_ptr<client::Client> client_;
  pid_t pid_ = 0;  // the process that made client_
};

}  // namespace pqcd::provider
