// One unit of work for the engine: an operation on caller-owned buffers plus a completion.
//
// A Job is allocated by the caller (typically embedded in the server's reactor object) and must
// stay alive, with every view it holds, until its completion has been called. Engine::Submit does
// not allocate and does not copy inputs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"

namespace pqcd::engine {

using kernels::Bytes;
using kernels::MutBytes;

enum class Operation : uint8_t {
  kNull,       // does nothing (benchmarks, tests); always OK
  kHash,       // HashItem
  kKemKeyGen,  // kernels::KemKeyGenItem
  kKemEncaps,  // kernels::KemEncapsItem
  kKemDecaps,  // kernels::KemDecapsItem
  kDsaKeyGen,  // kernels::DsaKeyGenItem
  kDsaSign,    // kernels::DsaSignItem
  kDsaVerify,  // kernels::DsaVerifyItem
};
inline constexpr int kNumOperations = 8;
std::string_view OperationName(Operation op);
// The registry's name of the algorithm ("SHA3-256", "ML-KEM-768"); "null" for kNull.
std::string_view AlgorithmName(Operation op, kernels::AlgorithmId algorithm);

struct NullItem {};
// A hash. Fixed-length hashes need digest.size() == the algorithm's digest size; an XOF (SHAKE)
// writes digest.size() bytes.
struct HashItem {
  Bytes message;
  MutBytes digest;
  absl::Status status;
};

// One payload type per operation: the kernels' batch items (the engine hands them to the batch
// entry points as they are) and HashItem. The variant index is the Operation.
using Payload = std::variant<NullItem, HashItem, kernels::KemKeyGenItem, kernels::KemEncapsItem,
                             kernels::KemDecapsItem, kernels::DsaKeyGenItem, kernels::DsaSignItem,
                             kernels::DsaVerifyItem>;
static_assert(std::variant_size_v<Payload> == kNumOperations);

class Job;
// Called exactly once, on an engine worker thread (or, for a rejected Submit, on the submitting
// thread before Submit returns). Must not block: it runs between batches of other jobs. It may
// destroy or resubmit the job (the engine does not touch the Job after calling it).
using Completion = absl::AnyInvocable<void(Job& job, absl::Status status)>;

class Job {
 public:
  using Clock = std::chrono::steady_clock;

  Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // ---- What to do ------------------------------------------------------------------------------
  // Sets the operation (the payload type's) and the algorithm, and returns the payload to fill
  // in: inputs are views of caller-owned memory, outputs caller-owned buffers; both must outlive
  // the completion. The kernels check every size and name the field in their error.
  template <class Item>
  Item& Set(kernels::AlgorithmId algorithm) {
    algorithm_ = algorithm;
    return payload_.emplace<Item>();
  }
  Operation op() const { return static_cast<Operation>(payload_.index()); }
  kernels::AlgorithmId algorithm() const { return algorithm_; }
  // The payload as set; after the completion it also holds the item's result
  // (DsaVerifyItem::valid).
  template <class Item>
  Item& item() {
    return std::get<Item>(payload_);
  }
  template <class Item>
  const Item& item() const {
    return std::get<Item>(payload_);
  }
  Payload& payload() { return payload_; }

  // ---- Scheduling -------------------------------------------------------------------------------
  // Jobs still queued at the deadline complete with DEADLINE_EXCEEDED without running.
  Clock::time_point deadline = Clock::time_point::max();
  // NUMA node (Topology node index) to queue on; -1: the submitting CPU's node, else least loaded.
  int node_hint = -1;
  // Who asked (the server's caller identity, hashed): slow jobs (EngineOptions::slow_job) are
  // admitted within a share per tenant and run in fair turns between tenants.
  uint32_t tenant = 0;
  // The job's CPU cost in nanoseconds if the caller knows it better than the engine (a hash of
  // many bytes); 0: the engine's estimate for its (operation, algorithm), measured as it runs.
  uint64_t cost_ns = 0;

  Completion on_complete;
  // Free for the caller (e.g. its reactor); the engine never reads it.
  void* user_data = nullptr;

  // ---- Cancellation ----------------------------------------------------------------------------
  // Any thread may call Cancel() while the job is queued; a cancelled job still queued completes
  // with CANCELLED without running. A job already running completes normally.
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // Resets the cancellation so that the Job can be submitted again (the payload, with its inputs
  // and outputs, and the completion are kept).
  void ResetForReuse() { cancelled_.store(false, std::memory_order_relaxed); }

  // Set by Submit: when the job was queued (for queue-wait statistics).
  Clock::time_point enqueue_time() const { return enqueue_time_; }

 private:
  friend class Engine;
  friend class Worker;
  friend class Batcher;
  friend class SlowPool;
  Payload payload_;
  kernels::AlgorithmId algorithm_ = kernels::AlgorithmId::kSha3_256;
  std::atomic<bool> cancelled_{false};
  Clock::time_point enqueue_time_{};
};

// Converts a wall-clock deadline (gRPC's ServerContext::deadline(), absl::Time) to the engine's
// steady clock. Infinite / far-future deadlines map to time_point::max().
Job::Clock::time_point SteadyDeadline(absl::Time deadline);
Job::Clock::time_point SteadyDeadline(std::chrono::system_clock::time_point deadline);

}  // namespace pqcd::engine
