// Engine statistics for the metrics layer. Every counter is written by exactly one thread (its
// worker; rejection counters by producers on the slow path only) and summed on read, so taking
// statistics never contends with the hot path.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "pqcd/engine/job.h"

namespace pqcd::engine {

// Latency histograms: bucket i counts values < LatencyBucketUpperNs(i) ns (and >= the bound of
// bucket i-1); the last bucket is unbounded. Bounds: 256 ns, 512 ns, ..., 2^30 ns (~1.07 s).
inline constexpr int kLatencyBuckets = 24;
inline constexpr uint64_t LatencyBucketUpperNs(int i) {
  return i >= kLatencyBuckets - 1 ? UINT64_MAX : uint64_t{256} << i;
}
// The bucket of a latency of `ns` nanoseconds (also the server's lane latencies, so that they
// read like the engine's).
inline int LatencyBucket(uint64_t ns) {
  const int b = static_cast<int>(std::bit_width(ns >> 8));
  return b < kLatencyBuckets ? b : kLatencyBuckets - 1;
}
// Batch sizes: bucket i counts bursts of size in (2^(i-1), 2^i]: 1, 2, 3-4, 5-8, ..., 129-256.
inline constexpr int kBatchBuckets = 9;

struct OpStats {
  Operation op = Operation::kNull;
  kernels::AlgorithmId algorithm{};
  uint64_t jobs = 0;               // ran (OK or kernel error)
  uint64_t errors = 0;             // ran and the kernel returned an error
  uint64_t expired = 0;            // dropped: deadline passed while queued
  uint64_t cancelled = 0;          // dropped: cancelled while queued
  uint64_t queue_wait_ns_sum = 0;  // over `jobs`
  uint64_t compute_ns_sum = 0;     // over `jobs` (a group's time split evenly over its jobs)
  std::array<uint64_t, kLatencyBuckets> queue_wait_hist{};
  std::array<uint64_t, kLatencyBuckets> compute_hist{};
};

struct NodeStats {
  int node = 0;
  int os_index = -1;
  int workers = 0;
  size_t queue_depth = 0;
  size_t queue_capacity = 0;
  uint64_t rejected_full = 0;         // Submit found the queue full (RESOURCE_EXHAUSTED)
  uint64_t rejected_unavailable = 0;  // Submit after shutdown began (UNAVAILABLE)
};

struct WorkerStats {
  int id = 0;
  int node = 0;
  int cpu = -1;         // intended CPU (-1: unpinned)
  bool pinned = false;  // the thread's affinity was actually set
  uint64_t jobs = 0;    // completed by this worker (any status)
  uint64_t batches = 0;
  uint64_t stolen_jobs = 0;  // taken from another node's queue
  uint64_t busy_ns = 0;      // time spent processing bursts
  uint64_t parks = 0;        // times it went to sleep
};

struct EngineStats {
  std::vector<NodeStats> nodes;
  std::vector<WorkerStats> workers;
  std::vector<OpStats> ops;  // only (operation, algorithm) pairs that saw at least one job
  std::array<uint64_t, kBatchBuckets> batch_size_hist{};
  // Totals.
  uint64_t jobs_done = 0;    // ran, completed OK
  uint64_t jobs_failed = 0;  // ran, kernel error
  uint64_t jobs_expired = 0;
  uint64_t jobs_cancelled = 0;
  uint64_t jobs_rejected = 0;     // queue full
  uint64_t jobs_unavailable = 0;  // shutting down (at Submit, or queued during an aborting stop)
  uint64_t jobs_inline = 0;       // run by SubmitBurst on the submitting thread (in the above too)
  // The slow pool (EngineOptions::slow_job).
  int slow_workers = 0;
  uint64_t slow_jobs = 0;            // run by the slow pool (in the above too)
  uint64_t slow_rejected = 0;        // refused: past the slow queue's cost bounds
  size_t slow_queued = 0;            // waiting now
  uint64_t slow_queued_cost_ns = 0;  // their estimated cost
};

}  // namespace pqcd::engine
