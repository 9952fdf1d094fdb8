// The shared-memory lane's daemon side (the format: lane/include/pqcd/lane/protocol.h).
//
// A caller on this host connects to the lane socket (SOCK_SEQPACKET, --unix PATH + ".lane") and
// asks for a lane; pqcd takes its identity from SO_PEERCRED (as for gRPC on the Unix socket),
// makes a sealed memfd with the rings and slots, maps it, and passes it with SCM_RIGHTS together
// with the lane's doorbell eventfd. The lane belongs to one engine worker, which takes requests
// from it in ServingIo::Poll beside its gRPC completion queue: they are decoded from the slot
// into private memory, prepared by the same code as gRPC requests (PrepareOperation: validation,
// held keys under the lane's identity, rights, quotas, audit) and run in the same bursts.
//
// One control thread accepts lanes, answers their opening, watches their sockets (a closed one
// frees its lane at once) and turns a doorbell into a wake-up of a worker that blocks in its I/O.
// A worker never blocks on a lane: a caller that stops taking completions is no longer served
// until it does.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "audit.h"
#include "pqc/v1/crypto.pb.h"
#include "pqcd/engine/engine.h"
#include "pqcd/server/metrics.h"
#include "pqcd/server/service_context.h"
#include "spdlog/logger.h"

namespace pqcd::server {

class CoreQueues;

// What the daemon reads from one request slot, besides the operation itself.
struct LaneRequestMeta {
  uint64_t tag = 0;
  uint32_t timeout_ms = 0;
  size_t request_bytes = 0;  // the header and its fields, as the header says
};

// Decodes one slot (slot_bytes of it, copied or shared: each byte is read once) into `op`, a
// private message, checking every length against the slot and max_input. The fuzz target's
// entry point. A non-OK status is the answer to send (INVALID_ARGUMENT naming the field); meta
// is filled as far as the header could be read.
absl::Status DecodeLaneRequest(const uint8_t* slot, size_t slot_bytes, uint32_t max_input,
                               pqc::v1::Operation* op, LaneRequestMeta* meta);
// Writes the answer to a decoded request into a slot: the ResponseHeader and the outputs of
// `result` (or the status's message). Returns the bytes written.
size_t EncodeLaneResponse(const LaneRequestMeta& meta, const absl::Status& status,
                          const pqc::v1::OperationResult& result, uint8_t* slot, size_t slot_bytes);

struct LaneOptions {
  std::string socket_path;  // the lane socket
  mode_t mode = 0660;
  uint32_t max_lanes = 64;              // --max-lanes
  uint32_t max_lanes_per_identity = 8;  // --max-lanes-per-identity
  uint32_t default_slots = 32;
  uint32_t max_slots = 128;          // --lane-slots (the most one lane may ask for)
  uint32_t max_input_bytes = 16384;  // --lane-max-input
  std::chrono::milliseconds handshake_timeout{5000};
  int intake_per_poll = 32;  // requests taken from one lane per Poll
  std::shared_ptr<spdlog::logger> log;
};

class LaneServer {
 public:
  using Stats = Metrics::Lanes;

  // Binds the lane socket and starts the control thread. workers: the engine's worker count;
  // waker: what wakes a worker that blocks in its I/O (the core queues).
  static absl::StatusOr<std::unique_ptr<LaneServer>> Start(LaneOptions options, ServiceContext* ctx,
                                                           int workers, engine::WorkerIo* waker);
  ~LaneServer();  // Stop(), then frees every lane (after the engine has stopped)
  LaneServer(const LaneServer&) = delete;
  LaneServer& operator=(const LaneServer&) = delete;

  // On worker `worker`'s thread: takes what its lanes submitted and submits it to the engine as
  // one burst; frees closed lanes. True if any request was taken.
  bool Intake(int worker);
  // The worker is about to block in its I/O (idle) or is back (not idle). Returns true when a
  // lane has work after all (then it must not block).
  bool SetIdle(int worker, bool idle);
  // The worker has lanes (any thread).
  bool HasLanes(int worker) const;
  // The worker's lanes gave it a request within the last 2 ms (it spins briefly before blocking).
  bool RecentlyActive(int worker) const;
  // After the worker's I/O has ended: answers what its lanes still submit UNAVAILABLE.
  void Final(int worker);

  // No new lanes; the open ones answer UNAVAILABLE from now on (the drain).
  void Stop();
  Stats stats() const;

  struct Lane;
  struct Op;
  // What an epoll event of the control thread is about.
  enum class EventKind : uint8_t { kListen, kStop, kPending, kRefused, kSocket, kDoorbell };
  struct EventRef {
    EventKind kind = EventKind::kStop;
    void* ptr = nullptr;
    int fd = -1;
  };

 private:
  struct WorkerLanes;
  LaneServer(LaneOptions options, ServiceContext* ctx, int workers, engine::WorkerIo* waker);
  void Run();
  void Accept();
  void OpenPending(int fd);
  // Closes a connection that did not become a lane; protocol: count it as refused for that.
  void ClosePending(int fd, bool timed_out, bool protocol = true);
  void Refuse(int fd, int code, const std::string& why);
  void SendRefusal(int fd);
  void FreeLane(Lane* lane);
  void Publish(Op* op, const absl::Status& status);
  void FlushPendingLocked(Lane* lane);
  void Break(Lane* lane, const char* why);
  void TakeFrom(Lane* lane, std::vector<engine::Job*>* jobs, bool refuse_all);

  const LaneOptions options_;
  ServiceContext* const ctx_;
  engine::WorkerIo* const waker_;
  const uint32_t slot_bytes_;
  int listen_fd_ = -1;
  ino_t path_inode_ = 0;  // of the socket file we made (Stop removes only that one)
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::vector<std::unique_ptr<WorkerLanes>> workers_;

  mutable std::mutex mu_;  // the counts below
  struct PendingConn {
    Caller caller;  // from SO_PEERCRED
    std::chrono::steady_clock::time_point since;
    EventRef ref;  // its epoll registration (the map's nodes do not move)
  };
  std::map<int, PendingConn> pending_;  // control thread
  struct RefusedConn {
    std::string why;
    std::chrono::steady_clock::time_point since;
    EventRef ref;
  };
  static constexpr size_t kMaxRefusedWaiting = 64;
  std::map<int, RefusedConn> refused_;  // control thread: told why once their request is in
  std::map<std::string, uint32_t> per_identity_;  // lanes and pending connections
  size_t open_ = 0;
  uint64_t opened_ = 0, refused_limit_ = 0, refused_identity_ = 0, refused_memory_ = 0,
           refused_protocol_ = 0, broken_ = 0;
  uint64_t next_id_ = 1;

  // "lane N of X closed: why" warnings, aggregated per 10 s window and (identity, why) as the
  // audit refusals are: one caller breaking lanes in a loop writes a line per window, not one per
  // lane. Null without a logger.
  std::unique_ptr<KeyUseAuditor> break_log_;

  std::atomic<uint64_t> codes_[Stats::kCodes] = {};
  std::atomic<uint64_t> buckets_[engine::kLatencyBuckets] = {};
  std::atomic<uint64_t> duration_ns_{0};
};

// Engine I/O of a worker that serves both its gRPC completion queue and its lanes.
//
// Before it blocks, a worker whose lanes were active in the last 2 ms polls them for kLaneSpin: a
// caller that sends one request at a time sends the next within microseconds, and waking a blocked
// worker (doorbell, control thread, completion-queue alarm) costs more than that. Where requests
// come further apart (a TLS server's one Encaps per handshake), the poll finds nothing and is pure
// cost, so it is adaptive: after kSpinMisses polls in a row that found nothing, the worker blocks
// at once, polling only every kSpinProbe-th time; a poll that finds a request, or a wake-up with
// a lane request within kSpinUseful of blocking, turns it on again.
class ServingIo final : public engine::WorkerIo {
 public:
  static constexpr std::chrono::microseconds kLaneSpin{30};
  static constexpr std::chrono::microseconds kSpinUseful{100};
  static constexpr uint32_t kSpinMisses = 4;
  static constexpr uint32_t kSpinProbe = 16;

  ServingIo(CoreQueues* core, LaneServer* lanes);
  bool Poll(int worker, std::chrono::steady_clock::time_point until) override;
  void Wake(int worker) override;

 private:
  // Each worker's own (only its thread touches it), on its own cache line.
  struct alignas(64) SpinState {
    uint32_t misses = 0;  // polls in a row that found nothing
    uint32_t skipped = 0;
  };
  // Whether to poll the lanes before blocking (see above).
  bool ShouldSpin(SpinState& s);

  CoreQueues* const core_;
  LaneServer* const lanes_;  // null: --lanes off
  std::vector<SpinState> spin_;
};

}  // namespace pqcd::server
