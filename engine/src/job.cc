// Names of operations and algorithms, deadline conversions.
#include "pqcd/engine/job.h"

#include "pqcd/engine/stats.h"

namespace pqcd::engine {

std::string_view OperationName(Operation op) {
  switch (op) {
    case Operation::kNull:
      return "null";
    case Operation::kHash:
      return "hash";
    case Operation::kKemKeyGen:
      return "kem_keygen";
    case Operation::kKemEncaps:
      return "kem_encaps";
    case Operation::kKemDecaps:
      return "kem_decaps";
    case Operation::kDsaKeyGen:
      return "dsa_keygen";
    case Operation::kDsaSign:
      return "dsa_sign";
    case Operation::kDsaVerify:
      return "dsa_verify";
  }
  return "?";
}

std::string_view AlgorithmName(Operation op, uint8_t algorithm) {
  static constexpr std::string_view kKem[] = {"ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"};
  static constexpr std::string_view kDsa[] = {"ML-DSA-44", "ML-DSA-65", "ML-DSA-87"};
  switch (op) {
    case Operation::kNull:
      return "null";
    case Operation::kHash:
      return algorithm < kernels::kNumHashAlgorithms
                 ? kernels::HashName(static_cast<kernels::HashAlgorithm>(algorithm))
                 : "?";
    case Operation::kKemKeyGen:
    case Operation::kKemEncaps:
    case Operation::kKemDecaps:
      return algorithm < 3 ? kKem[algorithm] : "?";
    case Operation::kDsaKeyGen:
    case Operation::kDsaSign:
    case Operation::kDsaVerify:
      return algorithm < 3 ? kDsa[algorithm] : "?";
  }
  return "?";
}

Job::Clock::time_point SteadyDeadline(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return Job::Clock::time_point::max();
  if (deadline == absl::InfinitePast()) return Job::Clock::time_point::min();
  const absl::Duration left = deadline - absl::Now();
  if (left > absl::Hours(24 * 365)) return Job::Clock::time_point::max();
  return Job::Clock::now() + absl::ToChronoNanoseconds(left);
}

Job::Clock::time_point SteadyDeadline(std::chrono::system_clock::time_point deadline) {
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return Job::Clock::time_point::max();
  }
  return SteadyDeadline(absl::FromChrono(deadline));
}

}  // namespace pqcd::engine
