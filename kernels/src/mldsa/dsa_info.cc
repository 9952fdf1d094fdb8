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
                 &Dsa::PairwiseCheck,
                 &Dsa::CheckExpandedPrivateKey};
}

const DsaInfo kDsaInfos[] = {MakeDsaInfo<4, 4>(DsaAlgorithm::kMlDsa44),
                             MakeDsaInfo<6, 5>(DsaAlgorithm::kMlDsa65),
                             MakeDsaInfo<8, 7>(DsaAlgorithm::kMlDsa87)};

}  // namespace

const DsaInfo& GetDsaInfo(DsaAlgorithm alg) {
  return kDsaInfos[static_cast<size_t>(alg)];
}

absl::Status CheckExpandedPrivateKey(DsaAlgorithm alg, Bytes sk, Bytes pk, MutBytes pk_out) {
  return GetDsaInfo(alg).check_expanded_sk(sk, pk, pk_out);
}

}  // namespace pqcd::kernels
