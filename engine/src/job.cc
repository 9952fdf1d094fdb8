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

std::string_view AlgorithmName(Operation op, kernels::AlgorithmId algorithm) {
  if (op == Operation::kNull) return "null";
  return static_cast<size_t>(algorithm) < kernels::kNumAlgorithms ? kernels::Facts(algorithm).name
                                                                  : "?";
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
