// HashML-DSA pre-hash tails and the pre-hash names (which are the names of their hash functions).
#include "mldsa/prehash.h"

#include <cstring>

#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/hash.h"

namespace pqcd::kernels {
namespace mldsa {

absl::StatusOr<size_t> PreHashTail(PreHash ph, Bytes message, uint8_t* out) {
  const PreHashFacts* p = FindPreHash(ph);
  if (p == nullptr) return absl::InvalidArgumentError("not a HashML-DSA pre-hash function");
  static constexpr uint8_t kOidPrefix[kOidBytes - 1] = {0x06, 0x09, 0x60, 0x86, 0x48,
                                                        0x01, 0x65, 0x03, 0x04, 0x02};
  std::memcpy(out, kOidPrefix, sizeof(kOidPrefix));
  out[kOidBytes - 1] = p->oid_last_byte;
  const AlgorithmFacts& hash = Facts(p->hash);
  if (absl::Status s = Hash(AsHash(hash.id), message, MutBytes(out + kOidBytes, hash.digest_bytes));
      !s.ok()) {
    return s;
  }
  return kOidBytes + hash.digest_bytes;
}

}  // namespace mldsa

std::string_view PreHashName(PreHash ph) {
  if (ph == PreHash::kNone) return "none";
  const PreHashFacts* p = FindPreHash(ph);
  return p != nullptr ? Facts(p->hash).name : "unknown";
}

std::optional<PreHash> ParsePreHashName(std::string_view name) {
  if (name.empty() || name == "none" || name == "NONE") return PreHash::kNone;
  // Any spelling of the hash's name ("SHA2-256", "SHA-256", "SHAKE128", "SHAKE-128", "sha3_256");
  // SM3 is not a HashML-DSA pre-hash.
  const std::optional<AlgorithmId> id = ParseAlgorithmName(name);
  if (!id) return std::nullopt;
  for (const PreHashFacts& p : kPreHashes) {
    if (p.hash == *id) return p.prehash;
  }
  return std::nullopt;
}

}  // namespace pqcd::kernels
