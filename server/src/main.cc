// pqcd: the post-quantum cryptography daemon.
#include "absl/synchronization/mutex.h"
#include "pqcd/server/server.h"

int main(int argc, char** argv) {
  // Debian's Abseil runs absl::Mutex deadlock detection (a lock-order graph updated on every lock),
  // and gRPC takes absl::Mutex locks on every call: ~4% of the daemon's CPU under unary load went
  // to absl::synchronization_internal::GraphCycles (perf, ML-KEM-768 encaps). Lock order is
  // checked by the TSan build instead.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return pqcd::server::DaemonMain(argc, argv);
}
