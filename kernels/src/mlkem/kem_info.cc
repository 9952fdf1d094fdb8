// Run-time table of the ML-KEM parameter sets for the engine and the server.
#include "pqcd/kernels/mlkem.h"

namespace pqcd::kernels {
namespace {

template <int K>
constexpr KemInfo MakeKemInfo(KemAlgorithm alg) {
  using Kem = MlKem<K>;
  return KemInfo{alg,
                 Kem::kName,
                 Kem::kEncapsKeyBytes,
                 Kem::kDecapsKeyBytes,
                 Kem::kCiphertextBytes,
                 Kem::kSharedSecretBytes,
                 Kem::kSeedBytes,
                 &Kem::CheckEncapsKey,
                 &Kem::CheckDecapsKey,
                 &Kem::KeyGenBatch,
                 &Kem::EncapsBatch,
                 &Kem::DecapsBatch,
                 &Kem::CheckExpandedPrivateKey};
}

const KemInfo kKemInfos[] = {MakeKemInfo<2>(KemAlgorithm::kMlKem512),
                             MakeKemInfo<3>(KemAlgorithm::kMlKem768),
                             MakeKemInfo<4>(KemAlgorithm::kMlKem1024)};

}  // namespace

const KemInfo& GetKemInfo(KemAlgorithm alg) {
  return kKemInfos[static_cast<size_t>(alg)];
}

absl::Status CheckExpandedPrivateKey(KemAlgorithm alg, Bytes dk, Bytes ek) {
  return GetKemInfo(alg).check_expanded_dk(dk, ek);
}

}  // namespace pqcd::kernels
