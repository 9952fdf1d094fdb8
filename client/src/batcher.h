// The batching client (internal): one call per operation for the caller, carried over shared
// long-lived Streams in packed messages. See BatchingOptions and Client::Decaps in client.h.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "in_flight.h"
#include "pqc/v1/crypto.grpc.pb.h"
#include "pqcd/client/client.h"

namespace pqcd::client::internal {

// What the batcher needs from the client that owns it.
struct BatcherEnv {
  // The Crypto stub of channel i (i < channels).
  std::function<pqc::v1::Crypto::Stub*(int i)> stub;
  int channels = 1;
  // The client's rule for "this failed call certainly never reached a daemon".
  std::function<bool(const grpc::Status&, const grpc::ClientContext&)> never_sent;
  int max_attempts = 5;
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(1);
  absl::Duration default_timeout = absl::Seconds(30);
};

class Lane;
class Timer;

class Batcher {
 public:
  Batcher(const BatchingOptions& options, BatcherEnv env);
  // Cancels the shared streams and waits until they have ended and are destroyed (their contexts
  // with them: see in_flight.h); calls still pending complete CANCELLED. Must not run on a thread
  // that is delivering one of this batcher's callbacks.
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // One call: `op` is taken (swapped out). done runs exactly once, on a gRPC thread, the deadline
  // thread, or (when the client is shutting down) the calling thread.
  void Submit(pqc::v1::Operation op, Callback<Result> done, const CallOptions& call);

  // True on a thread that is running callbacks of a batcher's answers. A call made there must not
  // be waited for on that thread: gRPC may run the stream's next reactions (the write of that very
  // call, or the read of its answer) on the same thread, after the callback returns.
  static bool DeliveringOnThisThread();
  StreamStats stats() const;

 private:
  friend class Lane;
  friend class SharedStream;

  const BatchingOptions options_;
  const BatcherEnv env_;
  std::unique_ptr<Timer> timer_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> next_lane_{0};
  std::atomic<bool> stopping_{false};

  // Counters (StreamStats).
  std::atomic<uint64_t> messages_sent_{0}, operations_sent_{0}, messages_received_{0},
      results_received_{0}, streams_opened_{0};
  // The shared streams not yet destroyed (each holds a Ticket).
  InFlight streams_;
};

}  // namespace pqcd::client::internal
