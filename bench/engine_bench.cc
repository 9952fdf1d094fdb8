// Engine benchmarks: per-job overhead (null kernel), SHA3-256 of 64-byte inputs and ML-KEM-768
// encaps through the engine vs the kernels called directly, scaling with the worker count.
//
// The submitting thread is pinned to the first allowed CPU and the workers to the others (when
// there are at least two), so "through the engine" and "direct" compare one compute core each.
// Counters: items_per_second (end to end), worker_ns_per_job (worker busy time / jobs: the
// engine's cost per job on the worker core, kernel included).
#include <sched.h>

#include <array>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "pqcd/engine/engine.h"
#include "pqcd/engine/node_queue.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/registry.h"
#ifdef PQCD_ENGINE_BENCH_PQC
#include "pqcd/engine/pqc_executor.h"
#include "pqcd/kernels/mlkem.h"
#endif

namespace {

using pqcd::engine::Engine;
using pqcd::engine::EngineOptions;
using pqcd::engine::Job;
using pqcd::engine::Operation;
using pqcd::kernels::HashAlgorithm;

// The CPUs the process may use, read once before any benchmark pins the thread (a pinned thread's
// affinity is a single CPU, and the engine takes its topology from the creating thread's affinity).
const std::vector<int>& Cpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> c = pqcd::engine::CurrentAffinity();
    if (c.empty()) c.push_back(0);
    return c;
  }();
  return cpus;
}
[[maybe_unused]] const bool kCpusRead = !Cpus().empty();

void PinSelf(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}
void UnpinSelf() {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : Cpus()) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

// Workers on every allowed CPU but the first (which the producer uses), up to `workers`.
std::unique_ptr<Engine> MakeEngine(int workers, int max_batch, bool pqc = false) {
  EngineOptions o;
  const std::vector<int>& cpus = Cpus();
  for (size_t i = cpus.size() > 1 ? 1 : 0;
       i < cpus.size() && static_cast<int>(o.cpus.size()) < workers; ++i) {
    o.cpus.push_back(cpus[i]);
  }
  while (static_cast<int>(o.cpus.size()) < workers) o.cpus.push_back(cpus.back());
  o.max_batch = max_batch;
  o.queue_capacity = 1 << 14;
#ifdef PQCD_ENGINE_BENCH_PQC
  if (pqc) o.pqc_executor = pqcd::engine::PqcKernelExecutor();
#else
  (void)pqc;
#endif
  auto e = Engine::Create(o);
  return e.ok() ? std::move(*e) : nullptr;
}

struct Pool {
  explicit Pool(size_t n) : jobs(n) {}
  std::vector<Job> jobs;
  std::atomic<uint64_t> completed{0};
};

// Submits every job of the pool once per iteration and waits for all completions.
void RunThroughEngine(benchmark::State& state, Engine& engine, Pool& pool) {
  PinSelf(Cpus().front());
  for (Job& j : pool.jobs) {
    j.on_complete = [&pool](Job&, absl::Status) {
      pool.completed.fetch_add(1, std::memory_order_release);
    };
  }
  const auto before = engine.GetStats();
  uint64_t target = 0;
  for (auto _ : state) {
    target += pool.jobs.size();
    for (Job& j : pool.jobs) engine.Submit(&j);
    while (pool.completed.load(std::memory_order_acquire) < target) {
      pqcd::engine::CpuRelax();
    }
  }
  const auto after = engine.GetStats();
  uint64_t busy = 0, jobs = 0, batches = 0, rejected = after.jobs_rejected - before.jobs_rejected;
  for (size_t i = 0; i < after.workers.size(); ++i) {
    busy += after.workers[i].busy_ns - before.workers[i].busy_ns;
    jobs += after.workers[i].jobs - before.workers[i].jobs;
    batches += after.workers[i].batches - before.workers[i].batches;
  }
  state.SetItemsProcessed(static_cast<int64_t>(target));
  state.counters["worker_ns_per_job"] = jobs ? static_cast<double>(busy) / jobs : 0;
  state.counters["avg_batch"] = batches ? static_cast<double>(jobs) / batches : 0;
  state.counters["rejected"] = static_cast<double>(rejected);
  UnpinSelf();
}

// ---- Null kernel: per-job overhead ------------------------------------------------------------
void BM_EngineNull(benchmark::State& state) {
  auto engine = MakeEngine(1, static_cast<int>(state.range(0)));
  Pool pool(4096);
  for (Job& j : pool.jobs) j.Set<pqcd::engine::NullItem>(pqcd::kernels::AlgorithmId::kSha3_256);
  RunThroughEngine(state, *engine, pool);
}
BENCHMARK(BM_EngineNull)->Arg(1)->Arg(8)->Arg(32)->UseRealTime();

// ---- SHA3-256 of 64-byte messages -------------------------------------------------------------
void BM_DirectSha3_256_64B(benchmark::State& state) {
  PinSelf(Cpus().size() > 1 ? Cpus()[1] : Cpus()[0]);
  constexpr size_t kBatch = 32;
  std::array<std::array<uint8_t, 64>, kBatch> in{};
  std::array<std::array<uint8_t, 32>, kBatch> out{};
  std::array<pqcd::kernels::Bytes, kBatch> ins;
  std::array<pqcd::kernels::MutBytes, kBatch> outs;
  for (size_t i = 0; i < kBatch; ++i) {
    in[i][0] = static_cast<uint8_t>(i);
    ins[i] = in[i];
    outs[i] = out[i];
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(pqcd::kernels::HashBatch(HashAlgorithm::kSha3_256, ins, outs));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
  UnpinSelf();
}
BENCHMARK(BM_DirectSha3_256_64B)->UseRealTime();

void BM_EngineSha3_256_64B(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  auto engine = MakeEngine(workers, 32);
  Pool pool(4096);
  std::vector<std::array<uint8_t, 64>> in(pool.jobs.size());
  std::vector<std::array<uint8_t, 32>> out(pool.jobs.size());
  for (size_t i = 0; i < pool.jobs.size(); ++i) {
    in[i][0] = static_cast<uint8_t>(i);
    pool.jobs[i].Set<pqcd::engine::HashItem>(pqcd::kernels::AlgorithmId::kSha3_256) = {
        in[i], out[i], {}};
  }
  RunThroughEngine(state, *engine, pool);
}
// Scaling: 1..N workers (N = allowed CPUs; beyond CPUs-1 the producer shares a core).
BENCHMARK(BM_EngineSha3_256_64B)->DenseRange(1, 4)->UseRealTime();

#ifdef PQCD_ENGINE_BENCH_PQC
// ---- ML-KEM-768 encaps ------------------------------------------------------------------------
constexpr pqcd::kernels::AlgorithmId kMlKem768 = pqcd::kernels::AlgorithmId::kMlKem768;
const pqcd::kernels::AlgorithmFacts& kKemFacts = pqcd::kernels::Facts(kMlKem768);
const pqcd::kernels::KemFunctions& kKem = *pqcd::kernels::Describe(kMlKem768).kem;

struct KemKeys {
  std::vector<uint8_t> ek, dk;
  KemKeys() {
    ek.resize(kKemFacts.public_key_bytes);
    dk.resize(kKemFacts.private_key_bytes);
    pqcd::kernels::KemKeyGenItem it;
    it.ek = ek;
    it.dk = dk;
    kKem.keygen_batch(std::span<pqcd::kernels::KemKeyGenItem>(&it, 1), pqcd::kernels::OsRandom());
  }
};

void BM_DirectMlKem768Encaps(benchmark::State& state) {
  PinSelf(Cpus().size() > 1 ? Cpus()[1] : Cpus()[0]);
  KemKeys keys;
  constexpr size_t kBatch = 32;
  std::vector<std::vector<uint8_t>> ct(kBatch, std::vector<uint8_t>(kKemFacts.ciphertext_bytes));
  std::vector<std::array<uint8_t, 32>> ss(kBatch);
  std::vector<pqcd::kernels::KemEncapsItem> items(kBatch);
  for (auto _ : state) {
    for (size_t i = 0; i < kBatch; ++i) {
      items[i].ek = keys.ek;
      items[i].ct = ct[i];
      items[i].ss = ss[i];
    }
    kKem.encaps_batch(items, pqcd::kernels::OsRandom());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
  UnpinSelf();
}
BENCHMARK(BM_DirectMlKem768Encaps)->UseRealTime();

void BM_EngineMlKem768Encaps(benchmark::State& state) {
  KemKeys keys;
  auto engine = MakeEngine(static_cast<int>(state.range(0)), 32, /*pqc=*/true);
  Pool pool(1024);
  std::vector<std::vector<uint8_t>> ct(pool.jobs.size(),
                                       std::vector<uint8_t>(kKemFacts.ciphertext_bytes));
  std::vector<std::array<uint8_t, 32>> ss(pool.jobs.size());
  for (size_t i = 0; i < pool.jobs.size(); ++i) {
    pool.jobs[i].Set<pqcd::kernels::KemEncapsItem>(kMlKem768) = {keys.ek, {}, ct[i], ss[i], {}};
  }
  RunThroughEngine(state, *engine, pool);
}
BENCHMARK(BM_EngineMlKem768Encaps)->DenseRange(1, 2)->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();
