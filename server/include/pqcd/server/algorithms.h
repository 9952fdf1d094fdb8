// Mapping between the API's pqc.v1.Algorithm / PreHash enums and the kernels' and engine's enums,
// plus the sizes a request is validated against.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "pqc/v1/common.pb.h"
#include "pqcd/engine/job.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"

namespace pqcd::server {

enum class Family { kNone, kKem, kDsa, kHash };

struct AlgorithmInfo {
  Family family = Family::kNone;
  std::string name;              // "ML-KEM-768", "SHA3-256", ... (metric label)
  uint8_t engine_algorithm = 0;  // the kernels enum value of its family
  // KEM
  const kernels::KemInfo* kem = nullptr;
  // DSA
  const kernels::DsaInfo* dsa = nullptr;
  // Hash
  kernels::HashAlgorithm hash{};
};

// nullopt for ALGORITHM_UNSPECIFIED and unknown values.
std::optional<AlgorithmInfo> LookupAlgorithm(int algorithm);
// Label for metrics and logs: the canonical name, or "unknown".
std::string AlgorithmLabel(int algorithm);
std::optional<kernels::PreHash> ToKernelPreHash(int pre_hash);

// Expected sizes of the private key forms (seed or expanded).
size_t PrivateSeedBytes(const AlgorithmInfo& info);
size_t PrivateExpandedBytes(const AlgorithmInfo& info);
size_t PublicKeyBytes(const AlgorithmInfo& info);

}  // namespace pqcd::server
