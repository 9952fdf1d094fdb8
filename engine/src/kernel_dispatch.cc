// KEM/DSA execution (library pqcd_engine_pqc): turns a group of jobs into the kernels' batch items,
// calls the batch entry point, copies per-item results back. Output sizes are checked here so that
// a wrong buffer names its field; the kernels check the inputs (FIPS 203 §7 / FIPS 204).
#include <string>

#include "absl/strings/str_cat.h"
#include "pqcd/engine/pqc_executor.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/random.h"

namespace pqcd::engine {
namespace {

using kernels::DsaAlgorithm;
using kernels::KemAlgorithm;

absl::Status SizeError(std::string_view field, size_t want, size_t got) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), ": expected ", want, " bytes, got ", got));
}

// Builds items for the jobs that pass `check` (which sets statuses[i] otherwise), runs `run`,
// then `finish` copies each item's results back. Items live in the worker's arena.
template <class Item, class Check, class Fill, class Run, class Finish>
void RunGroup(std::span<Job* const> jobs, std::span<absl::Status> statuses, ScratchArena& arena,
              Check check, Fill fill, Run run, Finish finish) {
  const size_t n = jobs.size();
  Item* items = arena.AllocateArray<Item>(n);
  size_t* index = arena.AllocateArray<size_t>(n);
  if (items == nullptr || index == nullptr) {
    for (absl::Status& s : statuses) s = absl::ResourceExhaustedError("worker scratch exhausted");
    if (items != nullptr) ScratchArena::DestroyArray(items, n);
    return;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    absl::Status s = check(*jobs[i]);
    if (!s.ok()) {
      statuses[i] = std::move(s);
      continue;
    }
    fill(*jobs[i], items[m]);
    index[m++] = i;
  }
  if (m > 0) run(std::span<Item>(items, m));
  for (size_t k = 0; k < m; ++k) {
    Job& job = *jobs[index[k]];
    if (items[k].status.ok()) {
      finish(job, items[k]);
    } else {
      statuses[index[k]] = std::move(items[k].status);
    }
  }
  ScratchArena::DestroyArray(items, n);
}

void ExecuteKem(Operation op, KemAlgorithm alg, std::span<Job* const> jobs,
                std::span<absl::Status> statuses, ScratchArena& arena) {
  const kernels::KemInfo& info = kernels::GetKemInfo(alg);
  switch (op) {
    case Operation::kKemKeyGen:
      RunGroup<kernels::KemKeyGenItem>(
          jobs, statuses, arena,
          [&](const Job& j) -> absl::Status {
            if (j.public_key.size() != info.ek_bytes) {
              return SizeError("public_key", info.ek_bytes, j.public_key.size());
            }
            if (j.private_key.size() != info.dk_bytes) {
              return SizeError("private_key", info.dk_bytes, j.private_key.size());
            }
            if (!j.seed_out.empty() && j.seed_out.size() != info.seed_bytes) {
              return SizeError("seed_out", info.seed_bytes, j.seed_out.size());
            }
            return absl::OkStatus();
          },
          [](const Job& j, kernels::KemKeyGenItem& it) {
            it.seed = j.seed;
            it.ek = j.public_key;
            it.dk = j.private_key;
            it.seed_out = j.seed_out;
          },
          [&](std::span<kernels::KemKeyGenItem> items) {
            info.keygen_batch(items, kernels::OsRandom());
          },
          [](Job&, const kernels::KemKeyGenItem&) {});
      return;
    case Operation::kKemEncaps:
      RunGroup<kernels::KemEncapsItem>(
          jobs, statuses, arena,
          [&](const Job& j) -> absl::Status {
            if (j.output.size() != info.ct_bytes) {
              return SizeError("output (ciphertext)", info.ct_bytes, j.output.size());
            }
            if (j.shared_secret.size() != info.ss_bytes) {
              return SizeError("shared_secret", info.ss_bytes, j.shared_secret.size());
            }
            return absl::OkStatus();
          },
          [](const Job& j, kernels::KemEncapsItem& it) {
            it.ek = j.key;
            it.m = j.seed;
            it.ct = j.output;
            it.ss = j.shared_secret;
          },
          [&](std::span<kernels::KemEncapsItem> items) {
            info.encaps_batch(items, kernels::OsRandom());
          },
          [&](Job& j, const kernels::KemEncapsItem&) { j.output_bytes = info.ct_bytes; });
      return;
    case Operation::kKemDecaps:
      RunGroup<kernels::KemDecapsItem>(
          jobs, statuses, arena,
          [&](const Job& j) -> absl::Status {
            if (j.shared_secret.size() != info.ss_bytes) {
              return SizeError("shared_secret", info.ss_bytes, j.shared_secret.size());
            }
            return absl::OkStatus();
          },
          [](const Job& j, kernels::KemDecapsItem& it) {
            it.dk = j.key;
            it.ct = j.ciphertext;
            it.ss = j.shared_secret;
          },
          [&](std::span<kernels::KemDecapsItem> items) { info.decaps_batch(items); },
          [](Job&, const kernels::KemDecapsItem&) {});
      return;
    default:
      break;
  }
}

void ExecuteDsa(Operation op, DsaAlgorithm alg, std::span<Job* const> jobs,
                std::span<absl::Status> statuses, ScratchArena& arena) {
  const kernels::DsaInfo& info = kernels::GetDsaInfo(alg);
  switch (op) {
    case Operation::kDsaKeyGen:
      RunGroup<kernels::DsaKeyGenItem>(
          jobs, statuses, arena,
          [&](const Job& j) -> absl::Status {
            if (j.public_key.size() != info.pk_bytes) {
              return SizeError("public_key", info.pk_bytes, j.public_key.size());
            }
            if (j.private_key.size() != info.sk_bytes) {
              return SizeError("private_key", info.sk_bytes, j.private_key.size());
            }
            if (!j.seed_out.empty() && j.seed_out.size() != info.seed_bytes) {
              return SizeError("seed_out", info.seed_bytes, j.seed_out.size());
            }
            return absl::OkStatus();
          },
          [](const Job& j, kernels::DsaKeyGenItem& it) {
            it.seed = j.seed;
            it.pk = j.public_key;
            it.sk = j.private_key;
            it.seed_out = j.seed_out;
          },
          [&](std::span<kernels::DsaKeyGenItem> items) {
            info.keygen_batch(items, kernels::OsRandom());
          },
          [](Job&, const kernels::DsaKeyGenItem&) {});
      return;
    case Operation::kDsaSign:
      RunGroup<kernels::DsaSignItem>(
          jobs, statuses, arena,
          [&](const Job& j) -> absl::Status {
            if (j.output.size() < info.sig_bytes) {
              return SizeError("output (signature)", info.sig_bytes, j.output.size());
            }
            return absl::OkStatus();
          },
          [&](const Job& j, kernels::DsaSignItem& it) {
            it.sk = j.key;
            it.message = j.message;
            it.options.context = j.options.context;
            it.options.prehash = j.options.prehash;
            it.options.external_mu = j.options.external_mu;
            it.options.deterministic = j.options.deterministic;
            it.options.rnd = j.seed;
            it.sig = j.output.first(info.sig_bytes);
          },
          [&](std::span<kernels::DsaSignItem> items) {
            info.sign_batch(items, kernels::OsRandom());
          },
          [&](Job& j, const kernels::DsaSignItem&) { j.output_bytes = info.sig_bytes; });
      return;
    case Operation::kDsaVerify:
      RunGroup<kernels::DsaVerifyItem>(
          jobs, statuses, arena, [](const Job&) { return absl::OkStatus(); },
          [](const Job& j, kernels::DsaVerifyItem& it) {
            it.pk = j.key;
            it.message = j.message;
            it.sig = j.ciphertext;
            it.options.context = j.options.context;
            it.options.prehash = j.options.prehash;
            it.options.external_mu = j.options.external_mu;
          },
          [&](std::span<kernels::DsaVerifyItem> items) { info.verify_batch(items); },
          [](Job& j, const kernels::DsaVerifyItem& it) { j.verified = it.valid; });
      return;
    default:
      break;
  }
}

void ExecutePqc(Operation op, uint8_t algorithm, std::span<Job* const> jobs,
                std::span<absl::Status> statuses, ScratchArena& arena) {
  switch (op) {
    case Operation::kKemKeyGen:
    case Operation::kKemEncaps:
    case Operation::kKemDecaps:
      if (algorithm > static_cast<uint8_t>(KemAlgorithm::kMlKem1024)) break;
      ExecuteKem(op, static_cast<KemAlgorithm>(algorithm), jobs, statuses, arena);
      return;
    case Operation::kDsaKeyGen:
    case Operation::kDsaSign:
    case Operation::kDsaVerify:
      if (algorithm > static_cast<uint8_t>(DsaAlgorithm::kMlDsa87)) break;
      ExecuteDsa(op, static_cast<DsaAlgorithm>(algorithm), jobs, statuses, arena);
      return;
    default:
      for (absl::Status& s : statuses) s = absl::InvalidArgumentError("not a KEM/DSA operation");
      return;
  }
  for (absl::Status& s : statuses) {
    s = absl::InvalidArgumentError(absl::StrCat("unknown algorithm ", static_cast<int>(algorithm),
                                                " for ", std::string(OperationName(op))));
  }
}

}  // namespace

KernelExecutor PqcKernelExecutor() {
  return &ExecutePqc;
}

}  // namespace pqcd::engine
