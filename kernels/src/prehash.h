// HashML-DSA (FIPS 204 §5.4, Alg. 4 / 5) and HashSLH-DSA (FIPS 205 §10.2.2, Alg. 23 / 25): the
// tail OID || PH(M) of M' for a pre-hashed message; both standards share the functions and OIDs.
// The pre-hash functions and their OIDs are facts of the registry (kPreHashes in algorithms.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/mldsa.h"  // PreHash

namespace pqcd::kernels::prehash {

// DER OBJECT IDENTIFIER 2.16.840.1.101.3.4.2.x: tag, length 9, nine content bytes.
inline constexpr size_t kOidBytes = 11;
// The longest tail: OID plus a 64-byte digest.
inline constexpr size_t kPreHashTailMaxBytes = kOidBytes + 64;

// Writes OID(ph) || PH(message) to out (room for kPreHashTailMaxBytes) and returns its length.
// INVALID_ARGUMENT for PreHash::kNone or a value that names no pre-hash.
absl::StatusOr<size_t> PreHashTail(PreHash ph, Bytes message, uint8_t* out);

}  // namespace pqcd::kernels::prehash
