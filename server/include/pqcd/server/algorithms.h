// The API's pqc.v1.Algorithm and pqc.v1.PreHash enums, mapped through the algorithm registry
// (kernels/include/pqcd/kernels/algorithms.h); algorithms.cc static_asserts that the two agree.
// Request validation of sizes (keys, ciphertexts) is here too, with the sizes and names of the
// registry and one message style.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "pqc/v1/common.pb.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::server {

using kernels::AlgorithmDescriptor;
using kernels::Family;

// nullptr for ALGORITHM_UNSPECIFIED and unknown values.
const AlgorithmDescriptor* LookupAlgorithm(int api_algorithm);
// Label for metrics and logs: the registry's name, or "unknown".
std::string AlgorithmLabel(int api_algorithm);
std::string Name(const AlgorithmDescriptor& d);
std::optional<kernels::PreHash> ToKernelPreHash(int api_pre_hash);

// The algorithm of a request, which must belong to `family` (INVALID_ARGUMENT naming the RPC).
absl::StatusOr<const AlgorithmDescriptor*> RequireFamily(int api_algorithm, Family family,
                                                         const char* rpc);
// A private key in either form (seed or expanded), a public key, a KEM ciphertext: the length
// the registry gives, or INVALID_ARGUMENT "<field>: expected N bytes for <name>, got M".
absl::Status CheckPrivateKeySize(const AlgorithmDescriptor& d, size_t size, const char* field);
absl::Status CheckPublicKeySize(const AlgorithmDescriptor& d, size_t size, const char* field);
absl::Status CheckCiphertextSize(const AlgorithmDescriptor& d, size_t size, const char* field);
// A key-generation seed: empty (fresh randomness) or the registry's seed size.
absl::Status CheckSeedSize(const AlgorithmDescriptor& d, size_t size, const char* field);

// The digest length of a Hash/HashStream request: the fixed digest size (output_length 0 or equal
// to it), or for an XOF the requested length (default: the registry's), at most max_output_bytes.
absl::StatusOr<size_t> HashOutputLength(const AlgorithmDescriptor& d, uint64_t requested,
                                        size_t max_output_bytes);

}  // namespace pqcd::server
