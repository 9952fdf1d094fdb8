// pqc-bench: single-core micro-benchmarks of the pqcd kernels, run once per backend (ISA) that
// this CPU supports, so the portable path and each SIMD path appear side by side in one run.
//
// Usage:
//   pqc-bench [--cpu=N] [Google Benchmark flags]
//
//   --cpu=N                      pin the process to CPU N before anything runs (default: the last
//                                CPU in the allowed set, usually the least disturbed one)
//   --benchmark_filter=REGEX     e.g. 'MlKem.*ML-KEM-768', 'Sha3|Shake', '/avx2'
//   --benchmark_repetitions=N    repetitions per benchmark (default here: 5); only the aggregates
//                                (mean, median, stddev, cv, min) are reported: quote the median
//                                on a quiet machine, the min on a shared one
//   --benchmark_min_time=S       minimum seconds per repetition (Benchmark 1.7: a plain number)
//   --benchmark_format=json --benchmark_out=FILE   machine-readable results
//
// A full run (about 90 benchmarks per backend, 5 repetitions of at least 0.5 s each) takes on the
// order of 10 minutes with two backends; filter for anything quicker.
//
// Examples:
//   pqc-bench --benchmark_filter='MlKemEncaps/' --benchmark_repetitions=9
//   pqc-bench --cpu=3 --benchmark_filter='Sha3_256|Shake128' --benchmark_min_time=0.2
//
// Names: BM_<Operation>/<parameter set or size>[/batch:N]/<backend>, where <backend> is the
// kernels' active ISA while the benchmark runs (kernels::IsaName); SHA-256 runs in OpenSSL
// and is tagged "openssl", and so do the OpenSSL references for SHA3-256 and SHAKE128 on 64 KiB.
// On AVX-512 CPUs the *Kernel rows call single-state permutations directly (tag bmi: the scalar
// BMI code; zmm: the AVX-512 one), whatever the Keccak table holds, so they can be compared.
//
// Counters per operation:
//   items_per_second   operations per second (for batch benchmarks: per item, not per batch).
//                      Google Benchmark derives it from CPU time, while tsc_per_op is wall-clock
//                      ticks: on a quiet pinned core they agree; if they do not, the core was
//                      shared (check the Time vs CPU columns).
//   tsc_per_op         time-stamp-counter ticks per operation (__rdtsc around the timed loop).
//                      The TSC runs at a constant rate: it equals core cycles only when the core
//                      runs at the TSC frequency (turbo and power saving make them differ).
//   bytes_per_second   hash throughput
//   core_per_tsc       the core clock over the TSC rate, measured right before and after the
//                      timed loop (tsc_per_op x core_per_tsc = core cycles per operation)
//
// The context line pqcd_core_cycles_per_tsc is the pinned core's clock over the TSC rate, measured
// at start-up with a chain of dependent adds (one per cycle): tsc_per_op x that ratio = core
// cycles.
//
// Randomized operations (key generation, encapsulation, hedged signing) draw from a SeededRandom,
// so every run does the same work; the cost of reading the OS random source is not included.
#include <benchmark/benchmark.h>
#include <sched.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/sha3.h"
#include "pqcd/kernels/sm3.h"

// Internal header of the kernels (multi-lane Keccak permutation), for BM_KeccakF1600xN only.
#include "keccak/keccak_multi.h"
#if defined(__x86_64__)
// Internal headers: the x86-64 single-state permutations, called directly by the *Kernel rows.
#include "arch/x86_64/avx2/keccak/keccak_avx2.h"
#include "arch/x86_64/avx512/keccak/keccak_avx512.h"
#endif

#include <openssl/evp.h>

// Build with -DPQCD_BENCH_NO_PQC to leave out ML-KEM/ML-DSA (e.g. while their kernels are
// unfinished); the normal build includes them.
#if !defined(PQCD_BENCH_NO_PQC)
#include "pqcd/kernels/hybrid.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/slhdsa.h"
#endif

namespace pqcd::bench {
namespace {

using kernels::Bytes;
using kernels::HashAlgorithm;
using kernels::Isa;
using kernels::MutBytes;

constexpr int kDefaultRepetitions = 5;
constexpr int kBatchSizes[] = {1, 4, 8, 16};

// The time-stamp counter: RDTSC on x86-64; elsewhere the architecture's constant-rate counter
// (aarch64: CNTVCT_EL0) or, failing that, steady_clock nanoseconds. The "tsc" figures below are in
// these ticks.
inline uint64_t ReadTsc() {
#if defined(__x86_64__)
  return __rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
#endif
}

// Core clock relative to the TSC on the pinned CPU: a chain of dependent 64-bit adds runs one add
// per core cycle, so adds / TSC ticks = core cycles per TSC tick. Multiply tsc_per_op by it to get
// core cycles; comparing figures taken on machines whose cores run at a different multiple of
// their TSC needs it (RESULTS.md).
// Many short tries, keep the fastest: a try that another process interrupted only runs longer.
double CoreCyclesPerTsc(int tries = 40, uint64_t iters = 1'000'000) {  // 1.3 ms per default try
  uint64_t best = ~uint64_t{0};
  for (int rep = 0; rep < tries; ++rep) {
    uint64_t x = 0, n = iters;
    const uint64_t t0 = ReadTsc();
#if defined(__x86_64__)
    __asm__ volatile(
        "1:\n\t"
        "add $1, %0\n\t"
        "add $1, %0\n\t"
        "add $1, %0\n\t"
        "add $1, %0\n\t"
        "sub $1, %1\n\t"
        "jnz 1b"
        : "+r"(x), "+r"(n));
#elif defined(__aarch64__)
    __asm__ volatile(
        "1:\n\t"
        "add %0, %0, #1\n\t"
        "add %0, %0, #1\n\t"
        "add %0, %0, #1\n\t"
        "add %0, %0, #1\n\t"
        "subs %1, %1, #1\n\t"
        "b.ne 1b"
        : "+r"(x), "+r"(n)
        :
        : "cc");
#else
    for (; n != 0; --n) {
      x += 4;
      __asm__ volatile("" : "+r"(x));
    }
#endif
    best = std::min<uint64_t>(best, ReadTsc() - t0);
  }
  return 4.0 * static_cast<double>(iters) / static_cast<double>(best);
}

// ---------------------------------------------------------------------------------------------
// Timing: the whole timed loop is bracketed by __rdtsc(), so the per-op figure carries no
// per-iteration overhead. Benchmarks must not pause the timer inside the loop.

template <class Body>
void Measure(benchmark::State& state, int64_t ops_per_iteration, int64_t bytes_per_iteration,
             Body&& body) {
  // The core clock moves with boost state and host load: measure its ratio to the TSC right
  // before and after the timed loop (~0.3 ms each) and report it with this run's figures.
  const double ratio_before = CoreCyclesPerTsc(8, 25'000);
  const uint64_t t0 = ReadTsc();
  for (auto _ : state) {
    if (!body()) break;  // body has called SkipWithError
  }
  const uint64_t t1 = ReadTsc();
  state.counters["core_per_tsc"] = (ratio_before + CoreCyclesPerTsc(8, 25'000)) / 2;
  const int64_t ops = state.iterations() * ops_per_iteration;
  if (ops <= 0) return;
  state.SetItemsProcessed(ops);
  if (bytes_per_iteration > 0) state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
  state.counters["tsc_per_op"] =
      benchmark::Counter(static_cast<double>(t1 - t0) / static_cast<double>(ops));
}

bool Check(benchmark::State& state, const absl::Status& s) {
  if (s.ok()) return true;
  state.SkipWithError(s.ToString().c_str());
  return false;
}

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  kernels::SeededRandom rng(seed);
  std::vector<uint8_t> v(n);
  (void)rng.Generate(v);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Hashes

void BM_KeccakF1600(benchmark::State& state, bool portable) {
  alignas(64) uint64_t s[kernels::kKeccakLanes] = {};
  s[0] = 1;
  Measure(state, 1, 0, [&] {
    if (portable) {
      kernels::KeccakF1600Portable(s);
    } else {
      kernels::KeccakF1600(s);
    }
    benchmark::DoNotOptimize(s);
    return true;
  });
}

// The multi-lane permutation as the samplers use it: `lanes` interleaved states per call (4 on
// avx2 and portable, 8 on avx512). One op = one call, i.e. `lanes` permutations.
void BM_KeccakF1600xN(benchmark::State& state, size_t lanes) {
  alignas(64) uint64_t s[kernels::kKeccakLanes * 8] = {};
  for (size_t i = 0; i < lanes; ++i) s[i] = i + 1;
  Measure(state, 1, 0, [&] {
    kernels::KeccakF1600xN(s, lanes);
    benchmark::DoNotOptimize(s);
    return true;
  });
}

void BM_Hash(benchmark::State& state, HashAlgorithm alg, size_t len) {
  const std::vector<uint8_t> msg = RandomBytes(len, 1);
  std::vector<uint8_t> out(kernels::HashDigestBytes(alg));
  Measure(state, 1, static_cast<int64_t>(len), [&] {
    if (!Check(state, kernels::Hash(alg, msg, out))) return false;
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    return true;
  });
}

// The same hash in OpenSSL (EVP, one context reused), the reference beside the kernels' rows.
void BM_HashOpenSsl(benchmark::State& state, const char* name, size_t len, size_t out_len) {
  const std::vector<uint8_t> msg = RandomBytes(len, 1);
  std::vector<uint8_t> out(out_len);
  EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool xof = (EVP_MD_get_flags(md) & EVP_MD_FLAG_XOF) != 0;
  Measure(state, 1, static_cast<int64_t>(len), [&] {
    unsigned n = 0;
    const bool ok = EVP_DigestInit_ex(ctx, md, nullptr) == 1 &&
                    EVP_DigestUpdate(ctx, msg.data(), msg.size()) == 1 &&
                    (xof ? EVP_DigestFinalXOF(ctx, out.data(), out.size())
                         : EVP_DigestFinal_ex(ctx, out.data(), &n)) == 1;
    if (!ok) {
      state.SkipWithError("OpenSSL digest failed");
      return false;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    return true;
  });
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
}

#if defined(__x86_64__)
// The *Kernel rows time single-state permutations directly, whichever the Keccak table holds, so
// that a candidate can be compared with the one in use within one run (issue 26: the ZMM
// permutation against the scalar BMI one). Registered only on CPUs with AVX-512.
using Permutation = void (*)(uint64_t st[25]);

// A plain SHA-3 / SHAKE sponge over `perm` (rate in bytes, domain byte ds; out.size() <= rate),
// checked against kernels::Hash before it is timed.
void Sponge(Permutation perm, size_t rate, uint8_t ds, std::span<const uint8_t> msg,
            std::span<uint8_t> out) {
  uint64_t st[kernels::kKeccakLanes] = {};
  auto absorb = [&](const uint8_t* block) {
    for (size_t i = 0; i < rate / 8; ++i) {
      uint64_t w;
      std::memcpy(&w, block + 8 * i, 8);  // little-endian host
      st[i] ^= w;
    }
    perm(st);
  };
  size_t off = 0;
  for (; msg.size() - off >= rate; off += rate) absorb(msg.data() + off);
  uint8_t last[200] = {};
  std::memcpy(last, msg.data() + off, msg.size() - off);
  last[msg.size() - off] ^= ds;
  last[rate - 1] ^= 0x80;
  absorb(last);
  std::memcpy(out.data(), st, out.size());
}

void BM_SpongeKernel(benchmark::State& state, Permutation perm, HashAlgorithm alg, size_t len) {
  const bool shake = alg == HashAlgorithm::kShake128;
  const size_t rate = shake ? 168 : 136;
  const std::vector<uint8_t> msg = RandomBytes(len, 1);
  std::vector<uint8_t> out(kernels::HashDigestBytes(alg)), want(out.size());
  if (!Check(state, kernels::Hash(alg, msg, want))) return;
  Sponge(perm, rate, shake ? 0x1f : 0x06, msg, out);
  if (out != want) {
    state.SkipWithError("the sponge over this permutation disagrees with kernels::Hash");
    return;
  }
  Measure(state, 1, static_cast<int64_t>(len), [&] {
    Sponge(perm, rate, shake ? 0x1f : 0x06, msg, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    return true;
  });
}

void BM_KeccakF1600Kernel(benchmark::State& state, Permutation perm) {
  alignas(64) uint64_t s[kernels::kKeccakLanes] = {};
  s[0] = 1;
  Measure(state, 1, 0, [&] {
    perm(s);
    benchmark::DoNotOptimize(s);
    return true;
  });
}

// f1600x4x1 as the avx512 table could build it: the four YMM states, then `single` on the fifth.
// One op = one call (five permutations).
void BM_KeccakF1600x4x1Kernel(benchmark::State& state, Permutation single) {
  alignas(64) uint64_t s[kernels::kKeccakLanes * 4] = {};
  alignas(64) uint64_t one[kernels::kKeccakLanes] = {};
  for (size_t i = 0; i < 4; ++i) s[i] = i + 1;
  one[0] = 5;
  Measure(state, 1, 0, [&] {
    kernels::KeccakF1600x4Avx512(s, 4, 0xf);
    single(one);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(one);
    return true;
  });
}
#endif  // __x86_64__

void BM_HashBatch(benchmark::State& state, HashAlgorithm alg, size_t len, int batch) {
  std::vector<std::vector<uint8_t>> msgs, outs;
  std::vector<Bytes> ins;
  std::vector<MutBytes> out_views;
  for (int i = 0; i < batch; ++i) {
    msgs.push_back(RandomBytes(len, 100 + i));
    outs.emplace_back(kernels::HashDigestBytes(alg));
  }
  for (int i = 0; i < batch; ++i) {
    ins.push_back(msgs[i]);
    out_views.push_back(outs[i]);
  }
  Measure(state, batch, static_cast<int64_t>(len) * batch, [&] {
    if (!Check(state, kernels::HashBatch(alg, ins, out_views))) return false;
    benchmark::ClobberMemory();
    return true;
  });
}

#if !defined(PQCD_BENCH_NO_PQC)
// ---------------------------------------------------------------------------------------------
// ML-KEM (FIPS 203)

template <class Kem>
struct KemKeys {
  std::array<uint8_t, Kem::kEncapsKeyBytes> ek;
  std::array<uint8_t, Kem::kDecapsKeyBytes> dk;
  std::array<uint8_t, Kem::kCiphertextBytes> ct;
  std::array<uint8_t, Kem::kSharedSecretBytes> ss;
};

// Through the batch entry points (batches of one), which ML-KEM and the hybrids both have.
template <class Kem>
bool MakeKemKeys(benchmark::State& state, KemKeys<Kem>& k, uint64_t seed) {
  kernels::SeededRandom rng(seed);
  kernels::KemKeyGenItem kg{{}, k.ek, k.dk, {}, {}};
  Kem::KeyGenBatch(std::span(&kg, 1), rng);
  if (!Check(state, kg.status)) return false;
  kernels::KemEncapsItem en{k.ek, {}, k.ct, k.ss, {}};
  Kem::EncapsBatch(std::span(&en, 1), rng);
  return Check(state, en.status);
}

template <class Kem>
void BM_MlKemKeyGen(benchmark::State& state) {
  kernels::SeededRandom rng(uint64_t{1});
  KemKeys<Kem> k;
  Measure(state, 1, 0, [&] {
    if (!Check(state, Kem::KeyGen(k.ek, k.dk, rng))) return false;
    benchmark::ClobberMemory();
    return true;
  });
}

template <class Kem>
void BM_MlKemEncaps(benchmark::State& state) {
  KemKeys<Kem> k;
  if (!MakeKemKeys<Kem>(state, k, 2)) return;
  kernels::SeededRandom rng(uint64_t{3});
  Measure(state, 1, 0, [&] {
    if (!Check(state, Kem::Encaps(k.ek, k.ct, k.ss, rng))) return false;
    benchmark::ClobberMemory();
    return true;
  });
}

template <class Kem>
void BM_MlKemDecaps(benchmark::State& state) {
  KemKeys<Kem> k;
  if (!MakeKemKeys<Kem>(state, k, 4)) return;
  Measure(state, 1, 0, [&] {
    if (!Check(state, Kem::Decaps(k.dk, k.ct, k.ss))) return false;
    benchmark::ClobberMemory();
    return true;
  });
}

template <class Kem>
void BM_MlKemKeyGenBatch(benchmark::State& state, int batch) {
  std::vector<KemKeys<Kem>> keys(batch);
  std::vector<kernels::KemKeyGenItem> items(batch);
  kernels::SeededRandom rng(uint64_t{5});
  for (int i = 0; i < batch; ++i) {
    items[i].ek = keys[i].ek;
    items[i].dk = keys[i].dk;
  }
  Measure(state, batch, 0, [&] {
    Kem::KeyGenBatch(items, rng);
    for (const auto& it : items) {
      if (!Check(state, it.status)) return false;
    }
    benchmark::ClobberMemory();
    return true;
  });
}

template <class Kem>
void BM_MlKemEncapsBatch(benchmark::State& state, int batch) {
  std::vector<KemKeys<Kem>> keys(batch);
  std::vector<kernels::KemEncapsItem> items(batch);
  kernels::SeededRandom rng(uint64_t{6});
  for (int i = 0; i < batch; ++i) {
    if (!MakeKemKeys<Kem>(state, keys[i], 100 + i)) return;
    items[i].ek = keys[i].ek;
    items[i].ct = keys[i].ct;
    items[i].ss = keys[i].ss;
  }
  Measure(state, batch, 0, [&] {
    Kem::EncapsBatch(items, rng);
    for (const auto& it : items) {
      if (!Check(state, it.status)) return false;
    }
    benchmark::ClobberMemory();
    return true;
  });
}

template <class Kem>
void BM_MlKemDecapsBatch(benchmark::State& state, int batch) {
  std::vector<KemKeys<Kem>> keys(batch);
  std::vector<kernels::KemDecapsItem> items(batch);
  for (int i = 0; i < batch; ++i) {
    if (!MakeKemKeys<Kem>(state, keys[i], 200 + i)) return;
    items[i].dk = keys[i].dk;
    items[i].ct = keys[i].ct;
    items[i].ss = keys[i].ss;
  }
  Measure(state, batch, 0, [&] {
    Kem::DecapsBatch(items);
    for (const auto& it : items) {
      if (!Check(state, it.status)) return false;
    }
    benchmark::ClobberMemory();
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// ML-DSA (FIPS 204). Signing is hedged (fresh rnd per signature) and its cost varies with the
// number of rejection rounds, so each iteration signs a fixed set of messages and the per-op
// figure is the mean over that set.

constexpr int kDsaMessages = 16;
constexpr size_t kDsaMessageBytes = 64;

std::vector<std::vector<uint8_t>> DsaMessages() {
  std::vector<std::vector<uint8_t>> m;
  for (int i = 0; i < kDsaMessages; ++i) m.push_back(RandomBytes(kDsaMessageBytes, 300 + i));
  return m;
}

template <class Dsa>
struct DsaKeys {
  std::array<uint8_t, Dsa::kPublicKeyBytes> pk;
  std::array<uint8_t, Dsa::kPrivateKeyBytes> sk;
};

template <class Dsa>
void BM_MlDsaKeyGen(benchmark::State& state) {
  kernels::SeededRandom rng(uint64_t{7});
  DsaKeys<Dsa> k;
  Measure(state, 1, 0, [&] {
    if (!Check(state, Dsa::KeyGen(k.pk, k.sk, rng))) return false;
    benchmark::ClobberMemory();
    return true;
  });
}

template <class Dsa>
void BM_MlDsaSign(benchmark::State& state) {
  kernels::SeededRandom rng(uint64_t{8});
  DsaKeys<Dsa> k;
  if (!Check(state, Dsa::KeyGen(k.pk, k.sk, rng))) return;
  const auto msgs = DsaMessages();
  std::array<uint8_t, Dsa::kSignatureBytes> sig;
  const kernels::DsaSignOptions hedged{};  // pure ML-DSA, empty context, fresh rnd
  Measure(state, kDsaMessages, 0, [&] {
    for (const auto& m : msgs) {
      if (!Check(state, Dsa::Sign(k.sk, m, hedged, sig, rng))) return false;
    }
    benchmark::ClobberMemory();
    return true;
  });
}

template <class Dsa>
void BM_MlDsaVerify(benchmark::State& state) {
  kernels::SeededRandom rng(uint64_t{9});
  DsaKeys<Dsa> k;
  if (!Check(state, Dsa::KeyGen(k.pk, k.sk, rng))) return;
  const auto msgs = DsaMessages();
  std::vector<std::array<uint8_t, Dsa::kSignatureBytes>> sigs(kDsaMessages);
  const kernels::DsaSignOptions hedged{};
  for (int i = 0; i < kDsaMessages; ++i) {
    if (!Check(state, Dsa::Sign(k.sk, msgs[i], hedged, sigs[i], rng))) return;
  }
  const kernels::DsaMessageOptions pure{};
  Measure(state, kDsaMessages, 0, [&] {
    for (int i = 0; i < kDsaMessages; ++i) {
      const absl::StatusOr<bool> ok = Dsa::Verify(k.pk, msgs[i], sigs[i], pure);
      if (!Check(state, ok.status())) return false;
      if (!*ok) {
        state.SkipWithError("a valid signature did not verify");
        return false;
      }
    }
    return true;
  });
}

template <class Dsa>
void BM_MlDsaKeyGenBatch(benchmark::State& state, int batch) {
  std::vector<DsaKeys<Dsa>> keys(batch);
  std::vector<kernels::DsaKeyGenItem> items(batch);
  kernels::SeededRandom rng(uint64_t{10});
  for (int i = 0; i < batch; ++i) {
    items[i].pk = keys[i].pk;
    items[i].sk = keys[i].sk;
  }
  Measure(state, batch, 0, [&] {
    Dsa::KeyGenBatch(items, rng);
    for (const auto& it : items) {
      if (!Check(state, it.status)) return false;
    }
    benchmark::ClobberMemory();
    return true;
  });
}

// Each iteration signs kDsaMessages messages in batches of `batch` (a multiple of 16 or a
// divisor of it), so the per-op figure is a mean over the same message set as BM_MlDsaSign.
template <class Dsa>
void BM_MlDsaSignBatch(benchmark::State& state, int batch) {
  kernels::SeededRandom rng(uint64_t{11});
  DsaKeys<Dsa> k;
  if (!Check(state, Dsa::KeyGen(k.pk, k.sk, rng))) return;
  const auto msgs = DsaMessages();
  std::vector<std::array<uint8_t, Dsa::kSignatureBytes>> sigs(batch);
  std::vector<kernels::DsaSignItem> items(batch);
  for (int i = 0; i < batch; ++i) {
    items[i].sk = k.sk;
    items[i].sig = sigs[i];
  }
  const int rounds = std::max(1, kDsaMessages / batch);
  Measure(state, static_cast<int64_t>(rounds) * batch, 0, [&] {
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < batch; ++i) items[i].message = msgs[(r * batch + i) % kDsaMessages];
      Dsa::SignBatch(items, rng);
      for (const auto& it : items) {
        if (!Check(state, it.status)) return false;
      }
    }
    benchmark::ClobberMemory();
    return true;
  });
}

template <class Dsa>
void BM_MlDsaVerifyBatch(benchmark::State& state, int batch) {
  kernels::SeededRandom rng(uint64_t{12});
  DsaKeys<Dsa> k;
  if (!Check(state, Dsa::KeyGen(k.pk, k.sk, rng))) return;
  const auto msgs = DsaMessages();
  std::vector<std::array<uint8_t, Dsa::kSignatureBytes>> sigs(batch);
  std::vector<kernels::DsaVerifyItem> items(batch);
  const kernels::DsaSignOptions hedged{};
  for (int i = 0; i < batch; ++i) {
    const auto& m = msgs[i % kDsaMessages];
    if (!Check(state, Dsa::Sign(k.sk, m, hedged, sigs[i], rng))) return;
    items[i].pk = k.pk;
    items[i].message = m;
    items[i].sig = sigs[i];
  }
  Measure(state, batch, 0, [&] {
    Dsa::VerifyBatch(items);
    for (const auto& it : items) {
      if (!Check(state, it.status)) return false;
      if (!it.valid) {
        state.SkipWithError("a valid signature did not verify");
        return false;
      }
    }
    return true;
  });
}
#endif  // !PQCD_BENCH_NO_PQC

// ---------------------------------------------------------------------------------------------
// Registration: every benchmark once per supported backend; the backend is switched at the start
// of each run (registration happens up front, runs happen later in registration order).

using BenchFn = std::function<void(benchmark::State&)>;

void Add(const std::string& name, std::optional<Isa> isa, benchmark::TimeUnit unit, BenchFn fn) {
  const std::string full = name + "/" + (isa ? std::string(kernels::IsaName(*isa)) : "openssl");
  benchmark::RegisterBenchmark(full.c_str(),
                               [isa, fn](benchmark::State& state) {
                                 const Isa want = isa.value_or(kernels::Isa::kPortable);
                                 if (!Check(state, kernels::SetActiveIsa(want))) return;
                                 fn(state);
                               })
      ->ReportAggregatesOnly(true)
      // The fastest repetition: other processes only ever add time, so on a shared machine the
      // minimum is the steadier figure; the median stays the one to quote on a quiet machine.
      ->ComputeStatistics("min",
                          [](const std::vector<double>& v) {
                            return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
                          })
      ->Unit(unit);
}

#if !defined(PQCD_BENCH_NO_PQC)
template <class Kem>
void AddKem(Isa isa) {
  const std::string p = std::string(Kem::kName);
  Add("BM_MlKemKeyGen/" + p, isa, benchmark::kMicrosecond, BM_MlKemKeyGen<Kem>);
  Add("BM_MlKemEncaps/" + p, isa, benchmark::kMicrosecond, BM_MlKemEncaps<Kem>);
  Add("BM_MlKemDecaps/" + p, isa, benchmark::kMicrosecond, BM_MlKemDecaps<Kem>);
  for (int b : kBatchSizes) {
    const std::string suffix = "/batch:" + std::to_string(b);
    Add("BM_MlKemKeyGenBatch/" + p + suffix, isa, benchmark::kMicrosecond,
        [b](benchmark::State& s) { BM_MlKemKeyGenBatch<Kem>(s, b); });
    Add("BM_MlKemEncapsBatch/" + p + suffix, isa, benchmark::kMicrosecond,
        [b](benchmark::State& s) { BM_MlKemEncapsBatch<Kem>(s, b); });
    Add("BM_MlKemDecapsBatch/" + p + suffix, isa, benchmark::kMicrosecond,
        [b](benchmark::State& s) { BM_MlKemDecapsBatch<Kem>(s, b); });
  }
}

// A hybrid KEM (hybrid.h): its batch entry points only (a batch of one is its single
// operation), to be read beside BM_MlKem*Batch/ML-KEM-768 (or -1024) of the same run.
template <class Kem>
void AddHybridKem(Isa isa) {
  const std::string p = std::string(Kem::kName);
  for (int b : kBatchSizes) {
    const std::string suffix = "/batch:" + std::to_string(b);
    Add("BM_HybridKeyGenBatch/" + p + suffix, isa, benchmark::kMicrosecond,
        [b](benchmark::State& s) { BM_MlKemKeyGenBatch<Kem>(s, b); });
    Add("BM_HybridEncapsBatch/" + p + suffix, isa, benchmark::kMicrosecond,
        [b](benchmark::State& s) { BM_MlKemEncapsBatch<Kem>(s, b); });
    Add("BM_HybridDecapsBatch/" + p + suffix, isa, benchmark::kMicrosecond,
        [b](benchmark::State& s) { BM_MlKemDecapsBatch<Kem>(s, b); });
  }
}

template <class Dsa>
void AddDsa(Isa isa) {
  const std::string p = std::string(Dsa::kName);
  Add("BM_MlDsaKeyGen/" + p, isa, benchmark::kMicrosecond, BM_MlDsaKeyGen<Dsa>);
  Add("BM_MlDsaSign/" + p, isa, benchmark::kMicrosecond, BM_MlDsaSign<Dsa>);
  Add("BM_MlDsaVerify/" + p, isa, benchmark::kMicrosecond, BM_MlDsaVerify<Dsa>);
  for (int b : kBatchSizes) {
    const std::string suffix = "/batch:" + std::to_string(b);
    Add("BM_MlDsaKeyGenBatch/" + p + suffix, isa, benchmark::kMicrosecond,
        [b](benchmark::State& s) { BM_MlDsaKeyGenBatch<Dsa>(s, b); });
    Add("BM_MlDsaSignBatch/" + p + suffix, isa, benchmark::kMicrosecond,
        [b](benchmark::State& s) { BM_MlDsaSignBatch<Dsa>(s, b); });
    Add("BM_MlDsaVerifyBatch/" + p + suffix, isa, benchmark::kMicrosecond,
        [b](benchmark::State& s) { BM_MlDsaVerifyBatch<Dsa>(s, b); });
  }
}

// SLH-DSA (FIPS 205): the fast ("f") sets only, through the same generic DSA benchmarks (a "s"
// signature takes 0.1-1 s, so 16 of them per iteration would dominate the run; bench/slhdsa_peers
// times every set beside liboqs and the SPHINCS+ team's code). One batch size: a single signature
// already fills the hash lanes, so larger batches add nothing to measure.
template <class Dsa>
void AddSlhDsa(Isa isa) {
  const std::string p = std::string(Dsa::kName);
  Add("BM_SlhDsaKeyGen/" + p, isa, benchmark::kMicrosecond, BM_MlDsaKeyGen<Dsa>);
  Add("BM_SlhDsaSign/" + p, isa, benchmark::kMicrosecond, BM_MlDsaSign<Dsa>);
  Add("BM_SlhDsaVerify/" + p, isa, benchmark::kMicrosecond, BM_MlDsaVerify<Dsa>);
  Add("BM_SlhDsaSignBatch/" + p + "/batch:8", isa, benchmark::kMicrosecond,
      [](benchmark::State& s) { BM_MlDsaSignBatch<Dsa>(s, 8); });
}
#endif

void RegisterAll(const std::vector<Isa>& backends) {
  using kernels::HashAlgorithm;
  // Backend-independent references, once.
  Add("BM_KeccakF1600Portable", Isa::kPortable, benchmark::kNanosecond,
      [](benchmark::State& s) { BM_KeccakF1600(s, /*portable=*/true); });
  Add("BM_Sha2_256/65536B", std::nullopt, benchmark::kMicrosecond,
      [](benchmark::State& s) { BM_Hash(s, HashAlgorithm::kSha2_256, 65536); });
  Add("BM_Sha3_256/65536B", std::nullopt, benchmark::kMicrosecond,
      [](benchmark::State& s) { BM_HashOpenSsl(s, "SHA3-256", 65536, 32); });
  Add("BM_Shake128/65536B", std::nullopt, benchmark::kMicrosecond,
      [](benchmark::State& s) { BM_HashOpenSsl(s, "SHAKE128", 65536, 32); });
#if defined(__x86_64__)
  if (kernels::IsaSupported(Isa::kAvx512)) {
    // Single-state candidates side by side (names: .../bmi and .../zmm, then the backend).
    const std::pair<const char*, Permutation> singles[] = {
        {"bmi", &kernels::KeccakF1600Bmi},
        {"zmm", &kernels::KeccakF1600x1Avx512},
    };
    for (const auto& [tag, perm] : singles) {
      const std::string t = tag;
      const Permutation p = perm;
      Add("BM_KeccakF1600Kernel/" + t, Isa::kAvx512, benchmark::kNanosecond,
          [p](benchmark::State& s) { BM_KeccakF1600Kernel(s, p); });
      Add("BM_KeccakF1600x4x1Kernel/x4+" + t, Isa::kAvx512, benchmark::kNanosecond,
          [p](benchmark::State& s) { BM_KeccakF1600x4x1Kernel(s, p); });
      Add("BM_Sha3_256Kernel/65536B/" + t, Isa::kAvx512, benchmark::kMicrosecond,
          [p](benchmark::State& s) { BM_SpongeKernel(s, p, HashAlgorithm::kSha3_256, 65536); });
      Add("BM_Shake128Kernel/65536B/" + t, Isa::kAvx512, benchmark::kMicrosecond,
          [p](benchmark::State& s) { BM_SpongeKernel(s, p, HashAlgorithm::kShake128, 65536); });
    }
  }
#endif

  for (Isa isa : backends) {
    Add("BM_KeccakF1600", isa, benchmark::kNanosecond,
        [](benchmark::State& s) { BM_KeccakF1600(s, /*portable=*/false); });
    const size_t lanes = isa == Isa::kAvx512 ? 8 : 4;
    Add("BM_KeccakF1600x" + std::to_string(lanes), isa, benchmark::kNanosecond,
        [lanes](benchmark::State& s) { BM_KeccakF1600xN(s, lanes); });
    struct HashCase {
      const char* name;
      HashAlgorithm alg;
      size_t len;
      benchmark::TimeUnit unit;
    };
    const HashCase hashes[] = {
        {"BM_Sha3_256/64B", HashAlgorithm::kSha3_256, 64, benchmark::kNanosecond},
        {"BM_Sha3_256/65536B", HashAlgorithm::kSha3_256, 65536, benchmark::kMicrosecond},
        {"BM_Shake128/64B", HashAlgorithm::kShake128, 64, benchmark::kNanosecond},
        {"BM_Shake128/65536B", HashAlgorithm::kShake128, 65536, benchmark::kMicrosecond},
        {"BM_Sm3/1024B", HashAlgorithm::kSm3, 1024, benchmark::kMicrosecond},
        {"BM_Sm3/65536B", HashAlgorithm::kSm3, 65536, benchmark::kMicrosecond},
    };
    for (const HashCase& h : hashes) {
      Add(h.name, isa, h.unit, [h](benchmark::State& s) { BM_Hash(s, h.alg, h.len); });
    }
    // The multi-lane batch entry point on short messages (the daemon's common case).
    const std::pair<const char*, HashAlgorithm> batch_hashes[] = {
        {"BM_HashBatch/SHA3-256/64B", HashAlgorithm::kSha3_256},
        {"BM_HashBatch/SHAKE-128/64B", HashAlgorithm::kShake128},
        {"BM_HashBatch/SM3/64B", HashAlgorithm::kSm3},
    };
    for (const auto& [name, alg] : batch_hashes) {
      for (int b : kBatchSizes) {
        const HashAlgorithm a = alg;
        Add(std::string(name) + "/batch:" + std::to_string(b), isa, benchmark::kNanosecond,
            [a, b](benchmark::State& s) { BM_HashBatch(s, a, 64, b); });
      }
    }
    // The SM3 multi-buffer figure: 8 (and 16) independent 1 KiB messages, total bytes/s.
    for (int b : {8, 16}) {
      Add("BM_HashBatch/SM3/1024B/batch:" + std::to_string(b), isa, benchmark::kMicrosecond,
          [b](benchmark::State& s) { BM_HashBatch(s, HashAlgorithm::kSm3, 1024, b); });
    }
#if !defined(PQCD_BENCH_NO_PQC)
    AddKem<kernels::MlKem512>(isa);
    AddKem<kernels::MlKem768>(isa);
    AddKem<kernels::MlKem1024>(isa);
    AddHybridKem<kernels::X25519MlKem768>(isa);
    AddHybridKem<kernels::SecP256r1MlKem768>(isa);
    AddHybridKem<kernels::SecP384r1MlKem1024>(isa);
    AddHybridKem<kernels::XWing>(isa);
    AddDsa<kernels::MlDsa44>(isa);
    AddDsa<kernels::MlDsa65>(isa);
    AddDsa<kernels::MlDsa87>(isa);
    AddSlhDsa<kernels::SlhDsaSha2_128f>(isa);
    AddSlhDsa<kernels::SlhDsaSha2_192f>(isa);
    AddSlhDsa<kernels::SlhDsaSha2_256f>(isa);
    AddSlhDsa<kernels::SlhDsaShake128f>(isa);
    AddSlhDsa<kernels::SlhDsaShake192f>(isa);
    AddSlhDsa<kernels::SlhDsaShake256f>(isa);
#endif
  }
}

// ---------------------------------------------------------------------------------------------
// Command line and pinning

bool StartsWith(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

// Removes --cpu=N from argv; returns -1 when absent. Exits on a malformed value.
int TakeCpuFlag(std::vector<char*>& args) {
  int cpu = -1;
  for (auto it = args.begin() + 1; it != args.end();) {
    if (StartsWith(*it, "--cpu=")) {
      const char* v = *it + 6;
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (*v == '\0' || *end != '\0' || n < 0 || n >= CPU_SETSIZE) {
        std::fprintf(stderr, "pqc-bench: bad --cpu value '%s'\n", v);
        std::exit(2);
      }
      cpu = static_cast<int>(n);
      it = args.erase(it);
    } else {
      ++it;
    }
  }
  return cpu;
}

int PinToCpu(int requested) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    std::perror("pqc-bench: sched_getaffinity");
    std::exit(2);
  }
  int cpu = requested;
  if (cpu < 0) {
    for (int i = CPU_SETSIZE - 1; i >= 0; --i) {
      if (CPU_ISSET(i, &allowed)) {
        cpu = i;
        break;
      }
    }
  } else if (!CPU_ISSET(cpu, &allowed)) {
    std::fprintf(stderr, "pqc-bench: CPU %d is not in this process's allowed set\n", cpu);
    std::exit(2);
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0) {
    std::perror("pqc-bench: sched_setaffinity");
    std::exit(2);
  }
  return cpu;
}

bool HasFlag(const std::vector<char*>& args, const char* name) {
  const std::string eq = std::string(name) + "=";
  for (size_t i = 1; i < args.size(); ++i) {
    if (std::string(args[i]) == name || StartsWith(args[i], eq.c_str())) return true;
  }
  return false;
}

}  // namespace
}  // namespace pqcd::bench

int main(int argc, char** argv) {
  using namespace pqcd::bench;
  std::vector<char*> args(argv, argv + argc);
  const int cpu = PinToCpu(TakeCpuFlag(args));

  static char repetitions[64];
  std::snprintf(repetitions, sizeof(repetitions), "--benchmark_repetitions=%d",
                kDefaultRepetitions);
  if (!HasFlag(args, "--benchmark_repetitions")) args.push_back(repetitions);
  args.push_back(nullptr);
  int new_argc = static_cast<int>(args.size()) - 1;
  benchmark::Initialize(&new_argc, args.data());
  if (benchmark::ReportUnrecognizedArguments(new_argc, args.data())) return 2;

  // Every backend the kernels know (kernels::Isa) that this CPU supports: neon on aarch64.
  const std::vector<pqcd::kernels::Isa> backends = pqcd::kernels::SupportedIsas();
  const std::string names = pqcd::kernels::SupportedIsaNames(",");
  benchmark::AddCustomContext("pqcd_pinned_cpu", std::to_string(cpu));
  benchmark::AddCustomContext("pqcd_backends", names);
  benchmark::AddCustomContext("pqcd_tsc_per_op", "TSC ticks per operation (constant-rate counter)");
  char ratio[32];
  std::snprintf(ratio, sizeof(ratio), "%.3f", CoreCyclesPerTsc());
  benchmark::AddCustomContext("pqcd_core_cycles_per_tsc", ratio);

  RegisterAll(backends);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
