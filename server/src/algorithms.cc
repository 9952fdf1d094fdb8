#include "pqcd/server/algorithms.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace pqcd::server {
namespace {

using absl::InvalidArgumentError;
using absl::StrCat;

// pqc.v1.Algorithm numbers are the registry's api_value (kernels/include/pqcd/kernels/
// algorithms.h). The highest agree here; tests/server/unit_algorithms.cc checks every value of the
// proto enum against the registry's rows by number and name.
constexpr int MaxApiValue() {
  int n = 0;
  for (const kernels::AlgorithmFacts& f : kernels::kAlgorithms) n = std::max(n, f.api_value);
  return n;
}
static_assert(pqc::v1::Algorithm_MAX == MaxApiValue(),
              "pqc.v1.Algorithm and the registry's api_value disagree");

// pqc.v1.PreHash mirrors kernels::PreHash value for value.
constexpr bool PreHashesAgree() {
  constexpr pqc::v1::PreHash kApi[] = {
      pqc::v1::PRE_HASH_SHA2_224, pqc::v1::PRE_HASH_SHA2_256,     pqc::v1::PRE_HASH_SHA2_384,
      pqc::v1::PRE_HASH_SHA2_512, pqc::v1::PRE_HASH_SHA2_512_224, pqc::v1::PRE_HASH_SHA2_512_256,
      pqc::v1::PRE_HASH_SHA3_224, pqc::v1::PRE_HASH_SHA3_256,     pqc::v1::PRE_HASH_SHA3_384,
      pqc::v1::PRE_HASH_SHA3_512, pqc::v1::PRE_HASH_SHAKE128,     pqc::v1::PRE_HASH_SHAKE256};
  if (std::size(kApi) != kernels::kPreHashes.size()) return false;
  for (size_t i = 0; i < std::size(kApi); ++i) {
    if (static_cast<int>(kApi[i]) != static_cast<int>(kernels::kPreHashes[i].prehash)) {
      return false;
    }
  }
  return pqc::v1::PRE_HASH_NONE == static_cast<int>(kernels::PreHash::kNone) &&
         pqc::v1::PreHash_MAX == kernels::kMaxPreHashValue;
}
static_assert(PreHashesAgree(), "pqc.v1.PreHash and kernels::PreHash disagree");

const char* FamilyNeed(Family family) {
  switch (family) {
    case Family::kKem:
      return "an ML-KEM algorithm";
    case Family::kDsa:
      return "an ML-DSA algorithm";
    case Family::kHash:
      break;
  }
  return "a hash algorithm";
}

absl::Status SizeError(const AlgorithmDescriptor& d, const char* field, std::string_view want,
                       size_t got) {
  return InvalidArgumentError(
      StrCat(field, ": expected ", std::string(want), " for ", Name(d), ", got ", got));
}

}  // namespace

const AlgorithmDescriptor* LookupAlgorithm(int api_algorithm) {
  const kernels::AlgorithmFacts* f = kernels::FindByApiValue(api_algorithm);
  return f != nullptr ? &kernels::Describe(f->id) : nullptr;
}

std::string AlgorithmLabel(int api_algorithm) {
  const AlgorithmDescriptor* d = LookupAlgorithm(api_algorithm);
  return d != nullptr ? Name(*d) : std::string("unknown");
}

std::string Name(const AlgorithmDescriptor& d) {
  return std::string(d.name());
}

std::optional<kernels::PreHash> ToKernelPreHash(int api_pre_hash) {
  if (api_pre_hash == pqc::v1::PRE_HASH_NONE) return kernels::PreHash::kNone;
  const auto ph = static_cast<kernels::PreHash>(api_pre_hash);
  if (api_pre_hash < 0 || kernels::FindPreHash(ph) == nullptr) return std::nullopt;
  return ph;
}

absl::StatusOr<const AlgorithmDescriptor*> RequireFamily(int api_algorithm, Family family,
                                                         const char* rpc) {
  const AlgorithmDescriptor* d = LookupAlgorithm(api_algorithm);
  if (d == nullptr) {
    return InvalidArgumentError(
        StrCat("algorithm: unknown or unspecified algorithm (", api_algorithm, ") for ", rpc));
  }
  if (d->family() != family) {
    return InvalidArgumentError(
        StrCat("algorithm: ", rpc, " needs ", FamilyNeed(family), ", got ", Name(*d)));
  }
  return d;
}

absl::Status CheckPrivateKeySize(const AlgorithmDescriptor& d, size_t size, const char* field) {
  const kernels::AlgorithmFacts& f = *d.facts;
  if (size == f.seed_bytes || size == f.private_key_bytes) return absl::OkStatus();
  return SizeError(d, field,
                   StrCat(f.seed_bytes, " (seed) or ", f.private_key_bytes, " (expanded) bytes"),
                   size);
}

absl::Status CheckPublicKeySize(const AlgorithmDescriptor& d, size_t size, const char* field) {
  if (size == d.facts->public_key_bytes) return absl::OkStatus();
  return SizeError(d, field, StrCat(d.facts->public_key_bytes, " bytes"), size);
}

absl::Status CheckCiphertextSize(const AlgorithmDescriptor& d, size_t size, const char* field) {
  if (size == d.facts->ciphertext_bytes) return absl::OkStatus();
  return SizeError(d, field, StrCat(d.facts->ciphertext_bytes, " bytes"), size);
}

absl::Status CheckSeedSize(const AlgorithmDescriptor& d, size_t size, const char* field) {
  if (size == 0 || size == d.facts->seed_bytes) return absl::OkStatus();
  return SizeError(d, field, StrCat(d.facts->seed_bytes, " bytes (or empty for fresh randomness)"),
                   size);
}

absl::StatusOr<size_t> HashOutputLength(const AlgorithmDescriptor& d, uint64_t requested,
                                        size_t max_output_bytes) {
  const kernels::AlgorithmFacts& f = *d.facts;
  if (f.xof) {
    if (requested > max_output_bytes) {
      return InvalidArgumentError(StrCat("output_length: at most ", max_output_bytes,
                                         " bytes (--max-output-bytes), got ", requested));
    }
    return requested != 0 ? static_cast<size_t>(requested) : f.digest_bytes;
  }
  if (requested != 0 && requested != f.digest_bytes) {
    return InvalidArgumentError(StrCat("output_length: ", Name(d), " has a fixed ", f.digest_bytes,
                                       "-byte digest; leave it 0, got ", requested));
  }
  return f.digest_bytes;
}

}  // namespace pqcd::server
