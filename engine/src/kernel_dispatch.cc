// KEM/DSA execution (library pqcd_engine_pqc): a group of jobs of one (operation, algorithm) goes
// to the registry's batch entry point for that algorithm. The payloads are the kernels' batch
// items: they are copied into one contiguous array in the worker's arena, run, and each item's
// status (and verdict) is copied back. The kernels check every size and name the field.
#include <string>
#include <utility>

#include "pqcd/engine/pqc_executor.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::engine {
namespace {

// Runs `run` on copies of the jobs' items, then hands each item's results back to its job.
template <class Item, class Run>
void RunItems(std::span<Job* const> jobs, std::span<absl::Status> statuses, ScratchArena& arena,
              Run run) {
  const size_t n = jobs.size();
  Item* items = arena.AllocateArray<Item>(n);
  if (items == nullptr) {
    for (absl::Status& s : statuses) s = absl::ResourceExhaustedError("worker scratch exhausted");
    return;
  }
  for (size_t i = 0; i < n; ++i) items[i] = jobs[i]->item<Item>();
  run(std::span<Item>(items, n));
  for (size_t i = 0; i < n; ++i) {
    statuses[i] = std::move(items[i].status);
    if constexpr (std::is_same_v<Item, kernels::DsaVerifyItem>) {
      jobs[i]->item<Item>().valid = items[i].valid;
    }
  }
  ScratchArena::DestroyArray(items, n);
}

void ExecutePqc(Operation op, kernels::AlgorithmId algorithm, std::span<Job* const> jobs,
                std::span<absl::Status> statuses, ScratchArena& arena) {
  const kernels::AlgorithmDescriptor& d = kernels::Describe(algorithm);
  const kernels::KemFunctions* kem = d.kem;
  const kernels::DsaFunctions* dsa = d.dsa;
  kernels::RandomSource& rng = kernels::OsRandom();
  switch (op) {
    case Operation::kKemKeyGen:
      if (kem == nullptr) break;
      return RunItems<kernels::KemKeyGenItem>(jobs, statuses, arena,
                                              [&](auto items) { kem->keygen_batch(items, rng); });
    case Operation::kKemEncaps:
      if (kem == nullptr) break;
      return RunItems<kernels::KemEncapsItem>(jobs, statuses, arena,
                                              [&](auto items) { kem->encaps_batch(items, rng); });
    case Operation::kKemDecaps:
      if (kem == nullptr) break;
      return RunItems<kernels::KemDecapsItem>(jobs, statuses, arena,
                                              [&](auto items) { kem->decaps_batch(items); });
    case Operation::kDsaKeyGen:
      if (dsa == nullptr) break;
      return RunItems<kernels::DsaKeyGenItem>(jobs, statuses, arena,
                                              [&](auto items) { dsa->keygen_batch(items, rng); });
    case Operation::kDsaSign:
      if (dsa == nullptr) break;
      return RunItems<kernels::DsaSignItem>(jobs, statuses, arena,
                                            [&](auto items) { dsa->sign_batch(items, rng); });
    case Operation::kDsaVerify:
      if (dsa == nullptr) break;
      return RunItems<kernels::DsaVerifyItem>(jobs, statuses, arena,
                                              [&](auto items) { dsa->verify_batch(items); });
    default:
      for (absl::Status& s : statuses) s = absl::InvalidArgumentError("not a KEM/DSA operation");
      return;
  }
  for (absl::Status& s : statuses) {
    s = absl::InvalidArgumentError(std::string(d.name()) + " cannot run " +
                                   std::string(OperationName(op)) + ": wrong family");
  }
}

}  // namespace

KernelExecutor PqcKernelExecutor() {
  return &ExecutePqc;
}

}  // namespace pqcd::engine
