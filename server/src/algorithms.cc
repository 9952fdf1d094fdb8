#include "pqcd/server/algorithms.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "pqcd/encoding/key_encoding.h"

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
      return "a signature algorithm (ML-DSA, SLH-DSA)";
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

namespace {

absl::string_view Msg(const absl::Status& s) {
  return s.message();
}

// DER (a SEQUENCE) or PEM: anything else keeps the plain size message.
bool LooksEncoded(kernels::Bytes given) {
  return (!given.empty() && given[0] == 0x30) || encoding::LooksLikePem(given);
}

absl::Status MismatchError(const AlgorithmDescriptor& d, encoding::AlgorithmId got,
                           const char* field) {
  return InvalidArgumentError(StrCat(field, ": the key is encoded for ",
                                     std::string(kernels::Facts(got).name), ", the request names ",
                                     Name(d)));
}

}  // namespace

absl::StatusOr<kernels::Bytes> ResolvePublicKey(const AlgorithmDescriptor& d, kernels::Bytes given,
                                                const char* field, std::vector<uint8_t>* decoded) {
  if (given.size() == d.facts->public_key_bytes) return given;  // raw: the hot path
  if (!encoding::HasStandardEncoding(d.id()) || !LooksEncoded(given)) {
    return CheckPublicKeySize(d, given.size(), field);
  }
  absl::StatusOr<encoding::PublicKey> key = encoding::DecodePublicKey(given);
  if (!key.ok()) {
    return InvalidArgumentError(StrCat(field, ": expected ", d.facts->public_key_bytes,
                                       " bytes (raw) or a SubjectPublicKeyInfo for ", Name(d),
                                       ", got ", given.size(), " bytes: ", Msg(key.status())));
  }
  if (key->algorithm != d.id()) return MismatchError(d, key->algorithm, field);
  *decoded = std::move(key->key);
  return kernels::Bytes(*decoded);
}

absl::StatusOr<kernels::Bytes> ResolvePrivateKey(const AlgorithmDescriptor& d, kernels::Bytes given,
                                                 const char* field, SecretBytes* decoded) {
  const kernels::AlgorithmFacts& f = *d.facts;
  if (given.size() == f.seed_bytes || given.size() == f.private_key_bytes) return given;
  if (!encoding::HasStandardEncoding(d.id()) || !LooksEncoded(given)) {
    return CheckPrivateKeySize(d, given.size(), field);
  }
  absl::StatusOr<encoding::PrivateKey> key = encoding::DecodePrivateKey(given);
  if (!key.ok()) {
    return InvalidArgumentError(StrCat(field, ": expected ", f.seed_bytes, " (seed) or ",
                                       f.private_key_bytes, " (expanded) bytes (raw) or a PKCS#8 ",
                                       "private key for ", Name(d), ", got ", given.size(),
                                       " bytes: ", Msg(key.status())));
  }
  if (key->algorithm != d.id()) return MismatchError(d, key->algorithm, field);
  if (!key->seed.empty() && !key->expanded.empty()) {
    if (absl::Status s = kernels::SeedMatchesExpanded(d, key->seed.view(), key->expanded.view());
        !s.ok()) {
      return InvalidArgumentError(StrCat(field, ": PKCS#8: ", Msg(s)));
    }
  }
  const encoding::SecretBuffer& raw = key->seed.empty() ? key->expanded : key->seed;
  *decoded = SecretBytes(raw.data(), raw.size());
  return kernels::Bytes(decoded->data(), decoded->size());
}

absl::Status EncodeAnswerKeys(const AlgorithmDescriptor& d, pqc::v1::KeyFormat format,
                              std::string* public_key, std::string* private_key,
                              kernels::Bytes seed) {
  encoding::KeyFormat f = encoding::KeyFormat::kRaw;
  switch (format) {
    case pqc::v1::KEY_FORMAT_RAW:
      return absl::OkStatus();
    case pqc::v1::KEY_FORMAT_DER:
      f = encoding::KeyFormat::kDer;
      break;
    case pqc::v1::KEY_FORMAT_PEM:
      f = encoding::KeyFormat::kPem;
      break;
    default:
      return InvalidArgumentError(StrCat("format: unknown key format ", static_cast<int>(format)));
  }
  if (!encoding::HasStandardEncoding(d.id())) {
    return InvalidArgumentError(
        StrCat("format: ", Name(d), " has no standard key encoding (use KEY_FORMAT_RAW)"));
  }
  if (public_key != nullptr) {
    auto pk = encoding::EncodePublicKey(
        d.id(),
        kernels::Bytes(reinterpret_cast<const uint8_t*>(public_key->data()), public_key->size()),
        f);
    if (!pk.ok()) return pk.status();
    public_key->assign(pk->begin(), pk->end());
  }
  if (private_key != nullptr && !private_key->empty()) {
    const kernels::Bytes expanded(reinterpret_cast<const uint8_t*>(private_key->data()),
                                  private_key->size());
    auto sk = encoding::EncodeGeneratedPrivateKey(d.id(), seed, expanded, f);
    if (!sk.ok()) return sk.status();
    encoding::Wipe(private_key->data(), private_key->size());
    private_key->assign(reinterpret_cast<const char*>(sk->data()), sk->size());
  }
  return absl::OkStatus();
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

absl::StatusOr<SecretBytes> PreparePrivateKey(const AlgorithmDescriptor& d,
                                              kernels::Bytes private_key) {
  if (d.prepare_private_key == nullptr) return SecretBytes();
  SecretBytes out(d.prepared_private_key_bytes);
  if (absl::Status s =
          d.prepare_private_key(private_key, kernels::MutBytes(out.data(), out.size()));
      !s.ok()) {
    return s;
  }
  return out;
}

absl::StatusOr<SecretBytes> PreparePrivateKey(int api_algorithm, const SecretBytes& private_key) {
  const AlgorithmDescriptor* d = LookupAlgorithm(api_algorithm);
  if (d == nullptr) return absl::InvalidArgumentError("prepare: unknown algorithm");
  return PreparePrivateKey(*d, kernels::Bytes(private_key.data(), private_key.size()));
}

}  // namespace pqcd::server
