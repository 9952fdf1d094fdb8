#include "pqcd/server/algorithms.h"

namespace pqcd::server {
namespace {

AlgorithmInfo Kem(kernels::KemAlgorithm alg) {
  AlgorithmInfo info;
  info.family = Family::kKem;
  info.kem = &kernels::GetKemInfo(alg);
  info.name = std::string(info.kem->name);
  info.engine_algorithm = static_cast<uint8_t>(alg);
  return info;
}

AlgorithmInfo Dsa(kernels::DsaAlgorithm alg) {
  AlgorithmInfo info;
  info.family = Family::kDsa;
  info.dsa = &kernels::GetDsaInfo(alg);
  info.name = std::string(info.dsa->name);
  info.engine_algorithm = static_cast<uint8_t>(alg);
  return info;
}

AlgorithmInfo Hash(kernels::HashAlgorithm alg) {
  AlgorithmInfo info;
  info.family = Family::kHash;
  info.hash = alg;
  info.name = std::string(kernels::HashName(alg));
  info.engine_algorithm = static_cast<uint8_t>(alg);
  return info;
}

}  // namespace

std::optional<AlgorithmInfo> LookupAlgorithm(int algorithm) {
  using kernels::DsaAlgorithm;
  using kernels::HashAlgorithm;
  using kernels::KemAlgorithm;
  switch (algorithm) {
    case pqc::v1::ML_KEM_512:
      return Kem(KemAlgorithm::kMlKem512);
    case pqc::v1::ML_KEM_768:
      return Kem(KemAlgorithm::kMlKem768);
    case pqc::v1::ML_KEM_1024:
      return Kem(KemAlgorithm::kMlKem1024);
    case pqc::v1::ML_DSA_44:
      return Dsa(DsaAlgorithm::kMlDsa44);
    case pqc::v1::ML_DSA_65:
      return Dsa(DsaAlgorithm::kMlDsa65);
    case pqc::v1::ML_DSA_87:
      return Dsa(DsaAlgorithm::kMlDsa87);
    case pqc::v1::SHA3_224:
      return Hash(HashAlgorithm::kSha3_224);
    case pqc::v1::SHA3_256:
      return Hash(HashAlgorithm::kSha3_256);
    case pqc::v1::SHA3_384:
      return Hash(HashAlgorithm::kSha3_384);
    case pqc::v1::SHA3_512:
      return Hash(HashAlgorithm::kSha3_512);
    case pqc::v1::SHAKE128:
      return Hash(HashAlgorithm::kShake128);
    case pqc::v1::SHAKE256:
      return Hash(HashAlgorithm::kShake256);
    case pqc::v1::SM3:
      return Hash(HashAlgorithm::kSm3);
    case pqc::v1::SHA256:
      return Hash(HashAlgorithm::kSha2_256);
    case pqc::v1::SHA384:
      return Hash(HashAlgorithm::kSha2_384);
    case pqc::v1::SHA512:
      return Hash(HashAlgorithm::kSha2_512);
    case pqc::v1::SHA224:
      return Hash(HashAlgorithm::kSha2_224);
    case pqc::v1::SHA512_224:
      return Hash(HashAlgorithm::kSha2_512_224);
    case pqc::v1::SHA512_256:
      return Hash(HashAlgorithm::kSha2_512_256);
    default:
      return std::nullopt;
  }
}

std::string AlgorithmLabel(int algorithm) {
  auto info = LookupAlgorithm(algorithm);
  return info ? info->name : std::string("unknown");
}

std::optional<kernels::PreHash> ToKernelPreHash(int pre_hash) {
  if (pre_hash < pqc::v1::PRE_HASH_NONE || pre_hash > pqc::v1::PRE_HASH_SHAKE256) {
    return std::nullopt;
  }
  // The API enum mirrors the kernels' enum value for value.
  return static_cast<kernels::PreHash>(pre_hash);
}

size_t PrivateSeedBytes(const AlgorithmInfo& info) {
  if (info.kem) return info.kem->seed_bytes;
  if (info.dsa) return info.dsa->seed_bytes;
  return 0;
}
size_t PrivateExpandedBytes(const AlgorithmInfo& info) {
  if (info.kem) return info.kem->dk_bytes;
  if (info.dsa) return info.dsa->sk_bytes;
  return 0;
}
size_t PublicKeyBytes(const AlgorithmInfo& info) {
  if (info.kem) return info.kem->ek_bytes;
  if (info.dsa) return info.dsa->pk_bytes;
  return 0;
}

}  // namespace pqcd::server
