// The provider's link to the daemon: one pqcd::client::Client per process, made on first use and
// made again in a child after fork (a gRPC channel cannot be used across fork). With a "unix:"
// address the client asks the daemon for a shared-memory lane and falls back to gRPC when the
// daemon offers none; any other address is gRPC. The client library enforces each call's deadline
// and reconnects (gRPC) or reopens its lane after the daemon stopped or restarted, so a
// long-lived nginx worker keeps its client.
#pragma once

#include <sys/types.h>

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
};

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
  // The client of this process (made now if there is none, or if it was made before a fork).
  absl::StatusOr<std::shared_ptr<client::Client>> Get();
  // Leaves client_ (made in the parent of a fork) to the process's exit: destroying it would wait
  // for the parent's gRPC and lane threads, which do not exist in the child.
  void Abandon();

  TransportConfig config_;
  std::mutex mu_;
  std::shared_ptr<client::Client> client_;
  pid_t pid_ = 0;  // the process that made client_
};

}  // namespace pqcd::provider
