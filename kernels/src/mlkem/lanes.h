// Keccak work of one ML-KEM operation scheduled onto four permutation lanes.
//
// An ML-KEM operation runs several independent sponges: the K² SHAKE128 streams of Â, the PRF
// calls of the noise, and G, H, J. Some depend on others (the PRF seed comes out of G, G takes
// H(ek), the H of KeyGen absorbs t̂ as its rows are computed). Running each group on its own
// multi-lane call wastes lanes (K = 3: 9 matrix streams in 3 rounds of 4, 6 or 7 PRF calls in
// 2 rounds) and runs the long single-state hashes (H(ek), J: 9 permutations each) one state at a
// time. LaneScheduler instead keeps a list of sponge tasks, each with its own rate and suffix, and
// before every permutation fills each free lane with the first ready task; every step is one
// x4 permutation (AVX2 / AVX-512 backends) when two or more lanes have work, else a single-state
// permutation per busy lane (always on the portable backend). Outputs are exactly those of the
// individual sponges, whatever the schedule.
//
// Tasks become ready through SetReady and streamed input grows through SetAvailable, both called
// from the progress callback that Run invokes after every step. A lane whose next input block is
// not available yet pauses (its state is kept across the x4 permutation).
//
// Constant time: the schedule depends only on public data (lengths, the task list, the rejection
// sampling of Â from the public ρ). The lane states and buffers hold secrets (PRF and G outputs)
// and are wiped by the destructor. Internal to pqcd_mlkem; baseline code (no ISA flags).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlkem/poly.h"

namespace pqcd::kernels::mlkem {

class LaneScheduler {
 public:
  static constexpr int kLanes = 4;
  static constexpr int kMaxTasks = 32;  // K = 4 Encaps/Decaps: 16 + 9 + 3 = 28

  LaneScheduler();
  ~LaneScheduler();
  LaneScheduler(const LaneScheduler&) = delete;
  LaneScheduler& operator=(const LaneScheduler&) = delete;

  // A sponge Keccak[rate, suffix] over a[0..a_len) || b[0..b_len) writing out_len bytes to out.
  int AddHash(size_t rate, uint8_t suffix, const uint8_t* a, size_t a_len, const uint8_t* b,
              size_t b_len, uint8_t* out, size_t out_len, bool ready = true);
  // out = SampleNTT(ρ || b32 || b33) (FIPS 203 Alg. 7); ρ is read when the task starts. ρ is
  // public: the XOF output is declassified for the constant-time test before the rejection
  // sampling branches on it.
  int AddSampleNtt(const uint8_t rho[kSymBytes], uint8_t b32, uint8_t b33, Poly* out);
  // out = SamplePolyCBD_eta(PRF_eta(seed, nonce)) (Alg. 8, §4.1); seed is read when the task
  // starts (it may be filled by an earlier task before SetReady).
  int AddCbd(int eta, const uint8_t* seed, uint8_t nonce, Poly* out, bool ready = true);

  void SetReady(int task) {
    if (!tasks_[task].ready) {
      tasks_[task].ready = true;
      ++ready_waiting_;
      scan_from_ = task < scan_from_ ? task : scan_from_;
    }
  }
  // Streamed input: only the first `avail` bytes of a || b exist yet.
  void SetAvailable(int task, size_t avail) { tasks_[task].avail = avail; }
  bool Finished(int task) const { return tasks_[task].finished; }

  // Runs every task to completion; on_progress() runs after each step and may call SetReady /
  // SetAvailable. Every task must eventually become ready with its whole input available.
  template <class F>
  void Run(F&& on_progress) {
    int stalled = 0;
    while (remaining_ > 0) {
      StartReady();
      if (Step()) {
        stalled = 0;
      } else if (++stalled > kMaxStalledSteps) {
        Deadlock();  // a task never becomes ready: programming error
      }
      on_progress();
    }
  }
  void Run() {
    Run([] {});
  }

 private:
  enum Kind : uint8_t { kHash, kSampleNtt, kCbd };
  struct Task {
    const uint8_t* a;
    const uint8_t* b;
    uint8_t* out;
    Poly* poly;
    size_t a_len, b_len, out_len, avail;
    uint16_t rate;
    int16_t ctr;
    Kind kind;
    uint8_t suffix, eta, nonce;
    bool ready, started, finished;
    uint8_t seed[2];  // SampleNTT: the index bytes j, i
  };
  enum Phase : uint8_t { kIdle, kAbsorb, kSqueeze };
  struct Lane {
    int task;
    Phase phase;
    size_t absorbed;
    size_t out_pos;  // bytes squeezed so far
    int blocks;      // SampleNtt: blocks squeezed so far
  };

  static constexpr int kMaxStalledSteps = 1000;
  // Per-lane squeeze buffer: one SHAKE128 block, rounded up to whole 4-word groups of the AVX2
  // transpose (words 21..23 of the state land in the tail), which also covers the 8 bytes the
  // AVX2 rejection and CBD kernels may read past their data.
  static constexpr size_t kLaneBuf = 192;
  int NewTask(Kind kind, bool ready);
  void StartReady();
  // One permutation of every lane with work; false (nothing done) if no lane can progress.
  bool Step();
  [[noreturn]] static void Deadlock();
  // XORs message bytes [off, off + n) of t into lane j (state bytes [0, n)).
  void XorMessage(int lane, const Task& t, size_t off, size_t n);
  void XorBytes(int lane, size_t pos, const uint8_t* src, size_t n);
  // Consumes the squeezed block in lane_buf_[j] or ntt_buf_[j] (output copy, rejection sampling,
  // CBD).
  void Consume(int lane, size_t take);
  void LaneDone(int lane);

  // Interleaved states: word i of lane j is st_[i * kLanes + j] (KeccakF1600xN layout).
  alignas(64) uint64_t st_[25 * kLanes];
  // The squeezed bytes of each lane's current block (see kLaneBuf).
  alignas(64) uint8_t lane_buf_[kLanes][kLaneBuf];
  // SampleNtt lanes: the first three XOF blocks side by side (always needed: 2 blocks hold only
  // 224 candidates), sampled with one rejection call; a rare 4th block goes to offset 0. The
  // transposes may write kLaneBuf bytes at offset 2·168; the tail is the AVX2 reading slack.
  static constexpr size_t kNttBuf = 2 * 168 + kLaneBuf;
  alignas(64) uint8_t ntt_buf_[kLanes][kNttBuf];
  alignas(64) uint64_t one_[25];  // single-state permutation of one lane
  uint64_t saved_[kLanes][25];    // paused lanes across an x4 permutation
  // SamplePolyCBD_3 input (192 bytes, two SHAKE256 blocks) + reading slack.
  alignas(32) uint8_t cbd3_[kLanes][192 + 32];
  Task tasks_[kMaxTasks];
  Lane lanes_[kLanes];
  int num_tasks_ = 0;
  int remaining_ = 0;
  // Every task below scan_from_ is started or not ready (SetReady lowers it).
  int scan_from_ = 0;
  int ready_waiting_ = 0;  // tasks ready but not started
  bool x4_;
  bool avx2_;
  bool used_saved_ = false;  // saved_ / cbd3_ hold secrets to wipe
  bool used_cbd3_ = false;
};

}  // namespace pqcd::kernels::mlkem
