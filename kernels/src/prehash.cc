// HashML-DSA pre-hash tails: OID || PH(M).
#include "prehash.h"

#include <cstring>

#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/hash.h"

namespace pqcd::kernels::prehash {

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

}  // namespace pqcd::kernels::prehash
