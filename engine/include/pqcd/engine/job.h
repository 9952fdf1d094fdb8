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

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"

namespace pqcd::engine {

using kernels::Bytes;
using kernels::MutBytes;

enum class Operation : uint8_t {
  kNull,       // does nothing (benchmarks, tests); always OK
  kHash,       // algorithm: kernels::HashAlgorithm
  kKemKeyGen,  // algorithm: kernels::KemAlgorithm
  kKemEncaps,  // algorithm: kernels::KemAlgorithm
  kKemDecaps,  // algorithm: kernels::KemAlgorithm
  kDsaKeyGen,  // algorithm: kernels::DsaAlgorithm
  kDsaSign,    // algorithm: kernels::DsaAlgorithm
  kDsaVerify,  // algorithm: kernels::DsaAlgorithm
};
inline constexpr int kNumOperations = 8;
// Algorithm values are below this bound for every operation (stats are indexed by it).
inline constexpr int kMaxAlgorithms = 16;
std::string_view OperationName(Operation op);
// "SHA3-256", "ML-KEM-768", "ML-DSA-65", "null"; "?" for an out-of-range value.
std::string_view AlgorithmName(Operation op, uint8_t algorithm);

// Options of an operation (only the ones its operation uses are read).
struct JobOptions {
  // ML-DSA sign/verify: context (0..255 bytes), HashML-DSA pre-hash, external mu.
  Bytes context;
  kernels::PreHash prehash = kernels::PreHash::kNone;
  bool external_mu = false;
  // ML-DSA sign: rnd = 0^32 (deterministic variant) instead of fresh randomness.
  bool deterministic = false;
  // Hash with an XOF (SHAKE128/256): number of output bytes; 0 = output.size(). Must be
  // <= output.size(). Fixed-length hashes need output.size() == HashDigestBytes().
  size_t xof_bytes = 0;
};

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
  Operation op = Operation::kNull;
  // The algorithm enum of the operation's family, as its integer value (e.g.
  // static_cast<uint8_t>(kernels::KemAlgorithm::kMlKem768)); use the Set* helpers below.
  uint8_t algorithm = 0;
  JobOptions options;

  // ---- Inputs (caller-owned views; must outlive the completion) ---------------------------------
  // hash: the message. dsa sign/verify: the message, or mu (64 bytes) when options.external_mu.
  Bytes message;
  // kem encaps: ek. kem decaps: dk (64-byte seed or expanded). dsa sign: sk (32-byte seed or
  // expanded). dsa verify: pk.
  Bytes key;
  // kem decaps: the ciphertext. dsa verify: the signature.
  Bytes ciphertext;
  // keygen: the seed (KEM 64 bytes d||z, DSA 32 bytes xi) or empty for fresh randomness.
  // kem encaps: the 32-byte m (tests/KATs) or empty for fresh randomness.
  // dsa sign: explicit 32-byte rnd (tests) or empty.
  Bytes seed;

  // ---- Outputs (caller-owned buffers) ----------------------------------------------------------
  // hash: the digest. kem encaps: the ciphertext. dsa sign: the signature.
  MutBytes output;
  // keygen: the public key (KEM ek / DSA pk).
  MutBytes public_key;
  // keygen: the private key (KEM dk / DSA sk).
  MutBytes private_key;
  // kem encaps/decaps: the 32-byte shared secret.
  MutBytes shared_secret;
  // keygen: optional, receives the seed when `seed` is empty.
  MutBytes seed_out;

  // ---- Per-item result (valid when the completion's status is OK) -------------------------------
  bool verified = false;    // dsa verify: the verdict (a bad signature is OK + false)
  size_t output_bytes = 0;  // hash: bytes written to output; sign: signature bytes

  // ---- Scheduling -------------------------------------------------------------------------------
  // Jobs still queued at the deadline complete with DEADLINE_EXCEEDED without running.
  Clock::time_point deadline = Clock::time_point::max();
  // NUMA node (Topology node index) to queue on; -1: the submitting CPU's node, else least loaded.
  int node_hint = -1;

  Completion on_complete;
  // Free for the caller (e.g. its reactor); the engine never reads it.
  void* user_data = nullptr;

  // ---- Cancellation ----------------------------------------------------------------------------
  // Any thread may call Cancel() while the job is queued; a cancelled job still queued completes
  // with CANCELLED without running. A job already running completes normally.
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // Resets the result and scheduling state so that the Job can be submitted again (inputs,
  // outputs and the completion are kept).
  void ResetForReuse() {
    verified = false;
    output_bytes = 0;
    cancelled_.store(false, std::memory_order_relaxed);
  }

  // Typed helpers.
  void SetHash(kernels::HashAlgorithm alg) {
    op = Operation::kHash;
    algorithm = static_cast<uint8_t>(alg);
  }
  void SetKem(Operation kem_op, kernels::KemAlgorithm alg) {
    op = kem_op;
    algorithm = static_cast<uint8_t>(alg);
  }
  void SetDsa(Operation dsa_op, kernels::DsaAlgorithm alg) {
    op = dsa_op;
    algorithm = static_cast<uint8_t>(alg);
  }

  // Set by Submit: when the job was queued (for queue-wait statistics).
  Clock::time_point enqueue_time() const { return enqueue_time_; }

 private:
  friend class Engine;
  friend class Worker;
  friend class Batcher;
  std::atomic<bool> cancelled_{false};
  Clock::time_point enqueue_time_{};
};

// Converts a wall-clock deadline (gRPC's ServerContext::deadline(), absl::Time) to the engine's
// steady clock. Infinite / far-future deadlines map to time_point::max().
Job::Clock::time_point SteadyDeadline(absl::Time deadline);
Job::Clock::time_point SteadyDeadline(std::chrono::system_clock::time_point deadline);

}  // namespace pqcd::engine
