// The API's pqc.v1.Algorithm and pqc.v1.PreHash enums, mapped through the algorithm registry
// (kernels/include/pqcd/kernels/algorithms.h); algorithms.cc static_asserts that the two agree.
// Request validation of sizes (keys, ciphertexts) is here too, with the sizes and names of the
// registry and one message style.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "keystore/secret_bytes.h"
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

// A key given in a request (docs/encodings.md): raw when its size is a raw size of the algorithm
// (the view is returned as it is: no copy, no parsing), else a SubjectPublicKeyInfo / PKCS#8 in
// DER or PEM whose OID must name this algorithm, decoded into *decoded and returned as a view of
// it. A PKCS#8 "both" key must agree: its seed is expanded with the kernels and the expanded keys
// compared in constant time; the seed is returned. INVALID_ARGUMENT names the field.
absl::StatusOr<kernels::Bytes> ResolvePublicKey(const AlgorithmDescriptor& d, kernels::Bytes given,
                                                const char* field, std::vector<uint8_t>* decoded);
absl::StatusOr<kernels::Bytes> ResolvePrivateKey(const AlgorithmDescriptor& d, kernels::Bytes given,
                                                 const char* field, SecretBytes* decoded);
// Re-encodes raw keys of an answer in place: the public key as SubjectPublicKeyInfo and, when
// private_key is not null and not empty, the private key as PKCS#8 in the seed form when `seed`
// is given, else the expanded form. RAW leaves them as they are.
absl::Status EncodeAnswerKeys(const AlgorithmDescriptor& d, pqc::v1::KeyFormat format,
                              std::string* public_key, std::string* private_key,
                              kernels::Bytes seed);

// The prepared form of a held private key of api_algorithm (the registry's prepare_private_key),
// in locked memory (SecretBytes::locked() says whether the lock succeeded): the key store's
// KeyStoreOptions::prepare_private_key. Empty for an algorithm without one. Made with the active
// kernel backend; pqcd selects it before the key store opens and never changes it.
absl::StatusOr<SecretBytes> PreparePrivateKey(int api_algorithm, const SecretBytes& private_key);
absl::StatusOr<SecretBytes> PreparePrivateKey(const AlgorithmDescriptor& d,
                                              kernels::Bytes private_key);

// The digest length of a Hash/HashStream request: the fixed digest size (output_length 0 or equal
// to it), or for an XOF the requested length (default: the registry's), at most max_output_bytes.
absl::StatusOr<size_t> HashOutputLength(const AlgorithmDescriptor& d, uint64_t requested,
                                        size_t max_output_bytes);

}  // namespace pqcd::server
