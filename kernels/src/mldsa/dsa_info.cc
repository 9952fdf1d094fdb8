// Run-time table of the ML-DSA parameter sets for the engine and the server.
#include "pqcd/kernels/mldsa.h"

namespace pqcd::kernels {
namespace {

template <int K, int L>
constexpr DsaInfo MakeDsaInfo(DsaAlgorithm alg) {
  using Dsa = MlDsa<K, L>;
  return DsaInfo{alg,
                 Dsa::kName,
                 Dsa::kPublicKeyBytes,
                 Dsa::kPrivateKeyBytes,
                 Dsa::kSignatureBytes,
                 Dsa::kSeedBytes,
                 &Dsa::KeyGenBatch,
                 &Dsa::SignBatch,
                 &Dsa::VerifyBatch,
                 &Dsa::PairwiseCheck};
}

const DsaInfo kDsaInfos[] = {MakeDsaInfo<4, 4>(DsaAlgorithm::kMlDsa44),
                             MakeDsaInfo<6, 5>(DsaAlgorithm::kMlDsa65),
                             MakeDsaInfo<8, 7>(DsaAlgorithm::kMlDsa87)};

}  // namespace

const DsaInfo& GetDsaInfo(DsaAlgorithm alg) {
  return kDsaInfos[static_cast<size_t>(alg)];
}

}  // namespace pqcd::kernels
