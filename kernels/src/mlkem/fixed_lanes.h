// Fixed lane schedules for the Keccak work of one ML-KEM operation.
//
// The task graph of each operation (KeyGen, Encaps, Decaps, the Encrypt of the batch paths) is
// fixed for a given k: the sponges, their lengths, their dependencies (G takes H(ek), the PRFs
// take the coins of G, the H of KeyGen absorbs t̂ as its rows are computed). Schedule simulates,
// at compile time, a greedy packing of those sponges onto four permutation lanes (before every
// permutation each free lane takes the first ready task, in the order listed); LaneRunner::Run
// executes that plan as straight-line code: every step's lane operations, permutation width and
// squeeze sizes are compile-time constants, so no task search or bookkeeping runs per operation.
// Steps with one busy lane run a single-state permutation (a run of them keeps its state out of
// the interleaved array); a lone last one-block PRF rides along the x4 step before it.
//
// The one data-dependent part is the rejection sampling of Â: the plan gives each matrix stream
// three SHAKE128 blocks (504 bytes, enough with probability ~99.2%); a stream still short after
// them continues at once on a single-state copy of its lane, so every row of Â is complete at the
// step the plan expects. That branch depends only on the public ρ.
//
// Outputs equal those of the individual sponges (same message, rate, suffix). Constant time: the
// schedule is fixed; the lane states and squeeze buffers hold secrets (PRF and G outputs) and are
// wiped by the destructor. Internal to pqcd_mlkem; baseline code (no ISA flags).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "keccak/backend.h"
#include "keccak/keccak_multi.h"
#include "mlkem/backend.h"
#include "mlkem/poly.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels::mlkem::fixed {

inline constexpr size_t kXofRate = 168;  // SHAKE128
inline constexpr size_t kPrfRate = 136;  // SHAKE256
inline constexpr int kLanes = 4;
inline constexpr int kMaxTasks = 32;
inline constexpr int kMaxSteps = 40;

enum Kind : uint8_t { kNone, kHash, kXof, kPrf, kHold };

// One sponge. kHash: Keccak[rate, suffix](a || b), out_len bytes, slot selects the runtime
// pointers; streamed = KeyGen's H(ek) (block availability follows the rows of t̂). kXof:
// SampleNTT(ρ || x || y) into matrix entry `slot`. kPrf: CBD_y(PRF(seed, x)) into noise[x].
struct Spec {
  Kind kind = kNone;
  uint8_t blocks = 0;
  int8_t dep = -1;  // task that must have finished in an earlier step
  bool streamed = false;
  uint16_t rate = 0;
  uint8_t suffix = 0;
  uint16_t a_len = 0, b_len = 0;
  uint8_t out_len = 0;
  uint8_t x = 0, y = 0, slot = 0;
};

struct LaneOp {
  Kind kind = kNone;
  uint8_t task = 0;
  uint8_t blk = 0;
};

struct Step {
  LaneOp lane[kLanes];
  // A one-block PRF riding along the x4 permutation as a fused fifth state
  // (KeccakF1600xNWithRider), instead of a last step of its own.
  LaneOp rider;
  uint8_t rows_after = 0;  // KeyGen: rows of t̂ to compute once this step is done
};

struct Plan {
  Spec tasks[kMaxTasks];
  int num_tasks = 0;
  Step steps[kMaxSteps];
  int num_steps = 0;
  int k = 0;
  bool rows = false;         // KeyGen plan: rows_after is meaningful
  int noise_task[8] = {};    // KeyGen: task of s[i] (i < k) and e[i] (k + i)
  int matrix_task[16] = {};  // KeyGen: task of Â[i][j] at i·k + j
};

constexpr uint8_t HashBlocks(size_t len, size_t rate) {
  return static_cast<uint8_t>(len / rate + 1);
}

constexpr Spec HashSpec(uint16_t rate, uint8_t suffix, uint16_t a_len, uint16_t b_len,
                        uint8_t out_len, uint8_t slot, int8_t dep = -1, bool streamed = false) {
  Spec s;
  s.kind = kHash;
  s.blocks = HashBlocks(size_t{a_len} + b_len, rate);
  s.dep = dep;
  s.streamed = streamed;
  s.rate = rate;
  s.suffix = suffix;
  s.a_len = a_len;
  s.b_len = b_len;
  s.out_len = out_len;
  s.slot = slot;
  return s;
}
constexpr Spec XofSpec(uint8_t b32, uint8_t b33, uint8_t slot) {
  Spec s;
  s.kind = kXof;
  s.blocks = 3;
  s.rate = kXofRate;
  s.x = b32;
  s.y = b33;
  s.slot = slot;
  return s;
}
constexpr Spec PrfSpec(int eta, uint8_t nonce, int8_t dep) {
  Spec s;
  s.kind = kPrf;
  s.blocks = eta == 3 ? 2 : 1;  // 64·eta bytes of SHAKE256 output
  s.dep = dep;
  s.rate = kPrfRate;
  s.x = nonce;
  s.y = static_cast<uint8_t>(eta);
  return s;
}

// Greedy packing (see the file comment). For a KeyGen plan (p.rows), tasks first_noise ..
// first_noise + 2k - 1 are s and e, the k² tasks from row_tasks_first_matrix are Â row by row,
// and the streamed hash sees k·384 bytes of t̂ (then ρ) as rows complete.
constexpr Plan Schedule(Plan p) {
  constexpr int kNever = 1 << 20;
  int finish[kMaxTasks] = {};
  bool started[kMaxTasks] = {};
  for (int i = 0; i < p.num_tasks; ++i) finish[i] = kNever;
  int lane_task[kLanes] = {-1, -1, -1, -1};
  int lane_blk[kLanes] = {};
  int rows = 0;
  int done = 0;
  for (int s = 0; done < p.num_tasks; ++s) {
    if (s == kMaxSteps) throw "plan too long";
    Step& st = p.steps[s];
    const size_t avail = rows == p.k ? size_t{kMaxSteps} << 20 : size_t{kPolyBytes} * rows;
    int next = 0;
    for (int j = 0; j < kLanes; ++j) {
      if (lane_task[j] >= 0) continue;
      while (next < p.num_tasks) {
        const Spec& t = p.tasks[next];
        const bool ready =
            !started[next] && (t.dep < 0 || finish[t.dep] < s) && (!t.streamed || avail >= t.rate);
        if (ready) break;
        ++next;
      }
      if (next == p.num_tasks) break;
      started[next] = true;
      lane_task[j] = next;
      lane_blk[j] = 0;
      ++next;
    }
    int active = 0;
    for (int j = 0; j < kLanes; ++j) {
      if (lane_task[j] < 0) continue;
      const Spec& t = p.tasks[lane_task[j]];
      if (t.streamed) {
        const size_t total = size_t{t.a_len} + t.b_len;
        const size_t end = size_t{t.rate} * (lane_blk[j] + 1);
        const size_t need = end < total ? end : total;
        if (avail < need) {
          st.lane[j] = LaneOp{kHold, static_cast<uint8_t>(lane_task[j]), 0};
          continue;
        }
      }
      st.lane[j] =
          LaneOp{t.kind, static_cast<uint8_t>(lane_task[j]), static_cast<uint8_t>(lane_blk[j])};
      ++active;
      if (++lane_blk[j] == t.blocks) {
        finish[lane_task[j]] = s;
        lane_task[j] = -1;
        ++done;
      }
    }
    if (active == 0) throw "deadlock";
    if (p.rows) {
      while (rows < p.k) {
        bool ok = finish[p.noise_task[p.k + rows]] <= s;
        for (int i = 0; i < p.k; ++i) ok = ok && finish[p.noise_task[i]] <= s;
        for (int i = 0; i < p.k; ++i) ok = ok && finish[p.matrix_task[rows * p.k + i]] <= s;
        if (!ok) break;
        ++rows;
      }
      st.rows_after = static_cast<uint8_t>(rows);
    }
    p.num_steps = s + 1;
  }
  // A last step with a lone one-block PRF whose coins were ready two steps earlier rides along
  // the step before it (an x4 step): ~1/3 of a permutation instead of a whole one.
  const int n = p.num_steps;
  if (n >= 2) {
    int lone = -1, count = 0, before = 0;
    for (int j = 0; j < kLanes; ++j) {
      const Kind k = p.steps[n - 1].lane[j].kind;
      if (k == kHash || k == kXof || k == kPrf) {
        lone = j;
        ++count;
      }
      const Kind kb = p.steps[n - 2].lane[j].kind;
      before += kb == kHash || kb == kXof || kb == kPrf;
    }
    if (count == 1 && before >= 2) {
      const LaneOp op = p.steps[n - 1].lane[lone];
      const Spec& t = p.tasks[op.task];
      if (t.kind == kPrf && t.blocks == 1 && (t.dep < 0 || finish[t.dep] < n - 2)) {
        p.steps[n - 2].rider = op;
        p.steps[n - 1] = Step{};
        p.num_steps = n - 1;
      }
    }
  }
  return p;
}

constexpr void AddMatrix(Plan& p, int k, bool transposed) {
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < k; ++j) {
      p.tasks[p.num_tasks++] =
          XofSpec(static_cast<uint8_t>(transposed ? i : j),
                  static_cast<uint8_t>(transposed ? j : i), static_cast<uint8_t>(i * k + j));
    }
  }
}

// KeyGen (Alg. 13 steps 3-19 + H(ek)): H(ek) streamed (slot 0), then s (nonces 0..k-1), and
// per row i: Â[i][0..k), e[i] (nonce k + i) (order 1; best for k = 2), or all the noise first,
// then Â (order 0; best for k = 4, same for k = 3), or e[i] before the row (order 2).
constexpr Plan KeyGenPlan(int k, int eta1, int order = 1) {
  Plan p;
  p.k = k;
  p.rows = true;
  const uint16_t ek_len = static_cast<uint16_t>(k * kPolyBytes + kSymBytes);
  p.tasks[p.num_tasks++] = HashSpec(136, 0x06, ek_len, 0, 32, 0, -1, /*streamed=*/true);
  auto noise = [&](int t) {
    p.noise_task[t] = p.num_tasks;
    p.tasks[p.num_tasks++] = PrfSpec(eta1, uint8_t(t), -1);
  };
  auto row = [&](int i) {
    for (int j = 0; j < k; ++j) {
      p.matrix_task[i * k + j] = p.num_tasks;
      p.tasks[p.num_tasks++] = XofSpec(static_cast<uint8_t>(j), static_cast<uint8_t>(i),
                                       static_cast<uint8_t>(i * k + j));
    }
  };
  if (order == 0) {
    for (int t = 0; t < 2 * k; ++t) noise(t);
    for (int i = 0; i < k; ++i) row(i);
  } else {
    for (int t = 0; t < k; ++t) noise(t);
    for (int i = 0; i < k; ++i) {
      if (order == 2) noise(k + i);
      row(i);
      if (order == 1) noise(k + i);
    }
  }
  return Schedule(p);
}

// Encrypt's samples (Alg. 14 steps 4-17): Â^T, then y, e1, e2 (nonces 0..2k) on coins ready
// after task `coins_dep`.
constexpr void AddEncrypt(Plan& p, int k, int eta1, int8_t coins_dep) {
  AddMatrix(p, k, /*transposed=*/true);
  for (int t = 0; t < 2 * k + 1; ++t) {
    p.tasks[p.num_tasks++] = PrfSpec(t < k ? eta1 : 2, uint8_t(t), coins_dep);
  }
}

// Encaps (Alg. 17): H(ek) (slot 0), G(m || h) (slot 1), then the Encrypt samples.
constexpr Plan EncapsPlan(int k, int eta1) {
  Plan p;
  p.k = k;
  const uint16_t ek_len = static_cast<uint16_t>(k * kPolyBytes + kSymBytes);
  p.tasks[p.num_tasks++] = HashSpec(136, 0x06, ek_len, 0, 32, 0);
  p.tasks[p.num_tasks++] = HashSpec(72, 0x06, 32, 32, 64, 1, /*dep=*/0);
  AddEncrypt(p, k, eta1, 1);
  return Schedule(p);
}

// Encrypt samples alone, coins given (batch paths).
constexpr Plan EncryptPlan(int k, int eta1) {
  Plan p;
  p.k = k;
  AddEncrypt(p, k, eta1, -1);
  return Schedule(p);
}

// Decaps (Alg. 18 steps 6-8): G(m' || h) (slot 0), the §7.3 check H(ek) (slot 1, if
// check_hash), J(z || c) (slot 2), then the Encrypt samples on the coins of G.
constexpr Plan DecapsPlan(int k, int eta1, int ct_bytes, bool check_hash) {
  Plan p;
  p.k = k;
  p.tasks[p.num_tasks++] = HashSpec(72, 0x06, 32, 32, 64, 0);
  if (check_hash) {
    p.tasks[p.num_tasks++] =
        HashSpec(136, 0x06, static_cast<uint16_t>(k * kPolyBytes + kSymBytes), 0, 32, 1);
  }
  p.tasks[p.num_tasks++] = HashSpec(136, 0x1f, 32, static_cast<uint16_t>(ct_bytes), 32, 2);
  AddEncrypt(p, k, eta1, 0);
  return Schedule(p);
}

// Â alone, row-major (Alg. 13 steps 3-7): the complete check of an expanded decapsulation key;
// transposed: Â^T, the matrix of Encrypt (Alg. 14 steps 4-8).
constexpr Plan MatrixPlan(int k, bool transposed = false) {
  Plan p;
  p.k = k;
  AddMatrix(p, k, transposed);
  return Schedule(p);
}

// Encrypt's noise alone (Alg. 14 steps 9-17: y, e1, e2 on given coins), for a run of batch items
// that share one ek and so one Â^T.
constexpr Plan EncryptNoisePlan(int k, int eta1) {
  Plan p;
  p.k = k;
  for (int t = 0; t < 2 * k + 1; ++t) {
    p.tasks[p.num_tasks++] = PrfSpec(t < k ? eta1 : 2, uint8_t(t), -1);
  }
  return Schedule(p);
}

// The plans of each operation, built at compile time.
template <int K>
inline constexpr Plan kMatrixPlan = MatrixPlan(K);
template <int K>
inline constexpr Plan kMatrixTPlan = MatrixPlan(K, /*transposed=*/true);
template <int K>
inline constexpr Plan kEncryptNoisePlan = EncryptNoisePlan(K, MlKemParams<K>::eta1);
template <int K>
inline constexpr Plan kKeyGenPlan = KeyGenPlan(K, MlKemParams<K>::eta1, K == 2 ? 1 : 0);
template <int K>
inline constexpr Plan kEncapsPlan = EncapsPlan(K, MlKemParams<K>::eta1);
template <int K>
inline constexpr Plan kEncryptPlan = EncryptPlan(K, MlKemParams<K>::eta1);
template <int K, bool kCheckHash>
inline constexpr Plan kDecapsPlan = DecapsPlan(K, MlKemParams<K>::eta1,
                                               static_cast<int>(MlKem<K>::kCiphertextBytes),
                                               kCheckHash);

// Runtime inputs and outputs of a plan.
struct PlanIo {
  const uint8_t* hash_a[3] = {};
  const uint8_t* hash_b[3] = {};
  uint8_t* hash_out[3] = {};
  const uint8_t* rho = nullptr;   // Â seed
  const uint8_t* seed = nullptr;  // PRF seed (σ or r)
  Poly* matrix = nullptr;         // k² entries, row-major
  Poly* noise = nullptr;          // by nonce
};

class LaneRunner {
 public:
  // The backend tables are taken once, for every step of every plan this runner executes.
  LaneRunner() : kb_(keccak::ActiveBackend()), mb_(ActiveBackend()) {
    // Defined bytes in the reading slack of the sampling hooks (transposes may overwrite them).
    for (auto& b : lane_buf_) std::memset(b + 128, 0, sizeof(b) - 128);
    for (auto& b : ntt_buf_) std::memset(b + 3 * kXofRate, 0, sizeof(b) - 3 * kXofRate);
    for (auto& b : cbd3_) std::memset(b + 192, 0, sizeof(b) - 192);
  }
  ~LaneRunner() {
    SecureZero(st_, sizeof(st_));
    SecureZero(lane_buf_, sizeof(lane_buf_));
    SecureZero(one_, sizeof(one_));
    if (used_cbd3_) SecureZero(cbd3_, sizeof(cbd3_));
    if (used_rider_) {
      SecureZero(rider_, sizeof(rider_));
      SecureZero(rider_buf_, sizeof(rider_buf_));
    }
    if (used_saved_) SecureZero(saved_, sizeof(saved_));
  }
  LaneRunner(const LaneRunner&) = delete;
  LaneRunner& operator=(const LaneRunner&) = delete;

  // Runs plan P; after step s, hook(s) runs (KeyGen computes rows of t̂ there).
  template <const Plan& P, class Hook>
  void Run(const PlanIo& io, Hook&& hook) {
    [&]<size_t... S>(std::index_sequence<S...>) {
      (DoStep<P, S>(io, hook), ...);
    }
    (std::make_index_sequence<static_cast<size_t>(P.num_steps)>());
  }

 private:
  static inline uint64_t Load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }

  static constexpr bool IsActive(Kind k) { return k == kHash || k == kXof || k == kPrf; }
  // The lane of step s if exactly one lane permutes there, else -1.
  static constexpr int Alone(const Plan& p, int s) {
    if (s < 0 || s >= p.num_steps) return -1;
    int lane = -1;
    for (int j = 0; j < kLanes; ++j) {
      if (!IsActive(p.steps[s].lane[j].kind)) continue;
      if (lane >= 0) return -1;
      lane = j;
    }
    return lane;
  }
  // Runs of single-lane steps (the tail of KeyGen's H(ek), G of Encaps) keep their state in one_
  // instead of the interleaved array: Keep(s): step s + 1 continues the same sponge alone;
  // InOne(s): step s finds (or builds, for a first block) its state in one_.
  static constexpr bool Keep(const Plan& p, int s) {
    const int lane = Alone(p, s);
    return lane >= 0 && Alone(p, s + 1) == lane && p.steps[s + 1].lane[lane].blk > 0;
  }
  static constexpr bool InOne(const Plan& p, int s) {
    const int lane = Alone(p, s);
    return lane >= 0 && (p.steps[s].lane[lane].blk == 0 || Keep(p, s - 1));
  }

  // XORs src[0..n) into state bytes [pos, pos + n) of the state at s (words `stride` apart).
  template <size_t kStride>
  static void XorBytes(uint64_t* s, size_t pos, const uint8_t* src, size_t n) {
    for (; n > 0 && (pos & 7) != 0; --n, ++pos, ++src) {
      s[(pos >> 3) * kStride] ^= uint64_t{*src} << (8 * (pos & 7));
    }
    uint64_t* d = s + (pos >> 3) * kStride;
    for (; n >= 8; n -= 8, pos += 8, src += 8, d += kStride) d[0] ^= Load64(src);
    if (n > 0) {
      uint64_t w = 0;
      std::memcpy(&w, src, n);
      d[0] ^= w;
    }
  }

  template <const Plan& P, size_t S, int J>
  [[gnu::always_inline]] void Before(const PlanIo& io) {
    constexpr LaneOp op = P.steps[S].lane[J];
    constexpr Spec t = P.tasks[op.task];
    constexpr bool in_one = IsActive(op.kind) && InOne(P, S);
    constexpr size_t kStride = in_one ? 1 : kLanes;
    uint64_t* s = in_one ? one_ : st_ + J;
    if constexpr (op.kind == kXof || op.kind == kPrf) {
      if constexpr (op.blk == 0) {
        // ρ || j || i, or seed || nonce: one padded block written into the fresh state.
        const uint8_t* a = op.kind == kXof ? io.rho : io.seed;
        constexpr uint64_t tail = op.kind == kXof
                                      ? uint64_t{t.x} | uint64_t{t.y} << 8 | uint64_t{0x1f} << 16
                                      : uint64_t{t.x} | uint64_t{0x1f} << 8;
        constexpr size_t last = (t.rate - 1) / 8;
#pragma GCC unroll 25
        for (size_t w = 0; w < 25; ++w) s[w * kStride] = 0;
        s[0] = Load64(a);
        s[kStride] = Load64(a + 8);
        s[2 * kStride] = Load64(a + 16);
        s[3 * kStride] = Load64(a + 24);
        s[4 * kStride] = tail;
        s[last * kStride] = uint64_t{0x80} << 56;
      }
    } else if constexpr (op.kind == kHash) {
      constexpr size_t total = size_t{t.a_len} + t.b_len;
      constexpr size_t off = size_t{t.rate} * op.blk;
      constexpr bool last = op.blk + 1 == t.blocks;
      constexpr size_t n = last ? total - off : t.rate;
      if constexpr (op.blk == 0) {
#pragma GCC unroll 25
        for (size_t w = 0; w < 25; ++w) s[w * kStride] = 0;
      }
      // Bytes [off, off + n) of a || b.
      size_t pos = 0;
      if constexpr (off < t.a_len) {
        constexpr size_t take = n < t.a_len - off ? n : t.a_len - off;
        XorBytes<kStride>(s, 0, io.hash_a[t.slot] + off, take);
        pos = take;
      }
      if (pos < n) {
        XorBytes<kStride>(s, pos, io.hash_b[t.slot] + (off + pos - t.a_len), n - pos);
      }
      if constexpr (last) {
        s[(n >> 3) * kStride] ^= uint64_t{t.suffix} << (8 * (n & 7));
        s[((t.rate - 1) >> 3) * kStride] ^= uint64_t{0x80} << (8 * ((t.rate - 1) & 7));
      }
    } else if constexpr (op.kind == kHold) {
      used_saved_ = true;
      for (int i = 0; i < 25; ++i) saved_[J][i] = s[i * kLanes];
    }
  }

  // Bytes squeezed by lane op (0: none) and where they go.
  template <const Plan& P, size_t S, int J>
  static constexpr size_t SqueezeBytes() {
    constexpr LaneOp op = P.steps[S].lane[J];
    constexpr Spec t = P.tasks[op.task];
    if constexpr (op.kind == kXof) {
      return kXofRate;
    } else if constexpr (op.kind == kPrf) {
      return t.y == 2 ? 128 : (op.blk == 0 ? kPrfRate : 192 - kPrfRate);
    } else if constexpr (op.kind == kHash) {
      return op.blk + 1 == t.blocks ? t.out_len : 0;
    } else {
      return 0;
    }
  }
  template <const Plan& P, size_t S, int J>
  uint8_t* SqueezeDst() {
    constexpr LaneOp op = P.steps[S].lane[J];
    constexpr Spec t = P.tasks[op.task];
    if constexpr (op.kind == kXof) {
      return ntt_buf_[J] + kXofRate * op.blk;
    } else if constexpr (op.kind == kPrf && t.y == 3) {
      return cbd3_[J] + kPrfRate * op.blk;
    } else {
      return lane_buf_[J];
    }
  }

  template <const Plan& P, size_t S, int J>
  [[gnu::always_inline]] void After(const PlanIo& io) {
    constexpr LaneOp op = P.steps[S].lane[J];
    constexpr Spec t = P.tasks[op.task];
    if constexpr (op.kind == kXof && op.blk == 2) {
      // The XOF output of the public ρ is public (memcheck's approximate tracking of the shared
      // x4 permutation would otherwise taint it).
      const uint8_t* in = ntt_buf_[J];
      CtPublic(in, 3 * kXofRate);
      Poly* out = io.matrix + t.slot;
      int ctr = mb_.reject_uniform(out->c, kN, in, 3 * kXofRate);
      if (ctr < kN) [[unlikely]] {
        if constexpr (Alone(P, S) == J) {
          Overflow(one_, 1, out, ctr);
        } else {
          Overflow(st_ + J, kLanes, out, ctr);
        }
      }
    } else if constexpr (op.kind == kPrf && op.blk + 1 == t.blocks) {
      if constexpr (t.y == 3) used_cbd3_ = true;
      const uint8_t* in = t.y == 3 ? cbd3_[J] : lane_buf_[J];
      mb_.cbd(t.y, io.noise[t.x], in);
    } else if constexpr (op.kind == kHash && op.blk + 1 == t.blocks) {
      std::memcpy(io.hash_out[t.slot], lane_buf_[J], t.out_len);
    } else if constexpr (op.kind == kHold) {
      for (int i = 0; i < 25; ++i) st_[i * kLanes + J] = saved_[J][i];
    }
  }

  // More SHAKE128 blocks of a stream whose state is at st (words `stride` apart), on one state
  // (rare; public data).
  [[gnu::noinline]] void Overflow(const uint64_t* st, size_t stride, Poly* out, int ctr) {
    uint64_t x[25];
    for (int i = 0; i < 25; ++i) x[i] = st[i * stride];
    alignas(32) uint8_t buf[kXofRate + 8] = {};
    while (ctr < kN) {
      kb_.f1600(x);
      std::memcpy(buf, x, kXofRate);
      CtPublic(buf, kXofRate);
      ctr += mb_.reject_uniform(out->c + ctr, kN - ctr, buf, kXofRate);
    }
  }

  template <const Plan& P, size_t S, class Hook>
  [[gnu::always_inline]] void DoStep(const PlanIo& io, Hook& hook) {
    constexpr Step st = P.steps[S];
    constexpr auto is_active = [](Kind k) { return k == kHash || k == kXof || k == kPrf; };
    constexpr unsigned active =
        (is_active(st.lane[0].kind) ? 1u : 0u) | (is_active(st.lane[1].kind) ? 2u : 0u) |
        (is_active(st.lane[2].kind) ? 4u : 0u) | (is_active(st.lane[3].kind) ? 8u : 0u);
    Before<P, S, 0>(io);
    Before<P, S, 1>(io);
    Before<P, S, 2>(io);
    Before<P, S, 3>(io);
    constexpr bool single = (active & (active - 1)) == 0;
    constexpr int lone = Alone(P, S);
    if constexpr (single) {
      static_assert(lone >= 0);
      constexpr LaneOp op = st.lane[lone];
      if constexpr (!InOne(P, S)) {
        for (int i = 0; i < 25; ++i) one_[i] = st_[i * kLanes + lone];
      }
      kb_.f1600(one_);
      // Back to the lane unless the next step continues alone or the sponge is done.
      if constexpr (!Keep(P, S) && op.blk + 1 < P.tasks[op.task].blocks) {
        for (int i = 0; i < 25; ++i) st_[i * kLanes + lone] = one_[i];
      }
    } else if constexpr (st.rider.kind == kPrf) {
      // PRF(seed, nonce) with eta = 2 in the fused fifth state.
      constexpr Spec t = P.tasks[st.rider.task];
      static_assert(t.y == 2 && t.blocks == 1);
      used_rider_ = true;
#pragma GCC unroll 25
      for (size_t w = 0; w < 25; ++w) rider_[w] = 0;
      rider_[0] = Load64(io.seed);
      rider_[1] = Load64(io.seed + 8);
      rider_[2] = Load64(io.seed + 16);
      rider_[3] = Load64(io.seed + 24);
      rider_[4] = uint64_t{t.x} | uint64_t{0x1f} << 8;
      rider_[(kPrfRate - 1) / 8] = uint64_t{0x80} << 56;
      // The lanes this step needs permuted (a vector backend permutes all four; the portable one
      // only these) and the rider in one call.
      kb_.f1600x4x1(st_, kLanes, active, rider_);
      std::memcpy(rider_buf_, rider_, 128);
      std::memset(rider_buf_ + 128, 0, sizeof(rider_buf_) - 128);  // the cbd hook's reading slack
      mb_.cbd(2, io.noise[t.x], rider_buf_);
    } else {
      kb_.f1600x4(st_, kLanes, active);
    }
    constexpr size_t need[kLanes] = {SqueezeBytes<P, S, 0>(), SqueezeBytes<P, S, 1>(),
                                     SqueezeBytes<P, S, 2>(), SqueezeBytes<P, S, 3>()};
    constexpr size_t sum_words =
        (need[0] + 7) / 8 + (need[1] + 7) / 8 + (need[2] + 7) / 8 + (need[3] + 7) / 8;
    if constexpr (single && sum_words > 0) {
      std::memcpy(SqueezeDst<P, S, lone>(), one_, need[lone]);
    } else if constexpr (sum_words > 0) {
      constexpr size_t max_words = [&] {
        size_t m = 0;
        for (size_t n : need) m = (n + 7) / 8 > m ? (n + 7) / 8 : m;
        return m;
      }();
      uint8_t* dst[kLanes] = {SqueezeDst<P, S, 0>(), SqueezeDst<P, S, 1>(), SqueezeDst<P, S, 2>(),
                              SqueezeDst<P, S, 3>()};
      if constexpr (sum_words > 24) {
        // Whole 4-word groups (the buffers leave room for the overshoot), as the readers' slack
        // reads expect defined bytes there.
        kb_.extract_lanes4(st_, kLanes, (max_words + 3) / 4 * 4, dst);
      } else {
        for (int j = 0; j < kLanes; ++j) {
          const size_t words = (need[j] + 7) / 8;
          for (size_t i = 0; i < words; ++i) std::memcpy(dst[j] + 8 * i, &st_[i * kLanes + j], 8);
        }
      }
    }
    After<P, S, 0>(io);
    After<P, S, 1>(io);
    After<P, S, 2>(io);
    After<P, S, 3>(io);
    hook(std::integral_constant<size_t, S>{});
  }

  // Interleaved states: word i of lane j is st_[i * kLanes + j] (KeccakF1600xN layout).
  alignas(64) uint64_t st_[25 * kLanes];
  // Squeezed bytes of a hash / eta = 2 PRF block; the transpose writes up to 192 bytes per lane.
  alignas(64) uint8_t lane_buf_[kLanes][192 + 8];
  // Matrix streams: three XOF blocks side by side (+ transpose overshoot and AVX2 slack).
  alignas(64) uint8_t ntt_buf_[kLanes][2 * kXofRate + 192 + 8];
  // eta = 3 PRF output (two SHAKE256 blocks), + transpose overshoot and slack.
  alignas(64) uint8_t cbd3_[kLanes][kPrfRate + 192 + 8];
  alignas(64) uint64_t one_[25];
  alignas(64) uint64_t rider_[25];
  alignas(64) uint8_t rider_buf_[128 + 8];
  uint64_t saved_[kLanes][25];
  const keccak::Backend& kb_;
  const Backend& mb_;
  bool used_saved_ = false;
  bool used_cbd3_ = false;
  bool used_rider_ = false;
};

}  // namespace pqcd::kernels::mlkem::fixed
