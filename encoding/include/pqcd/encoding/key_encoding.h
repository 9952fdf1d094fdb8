// Standard encodings of ML-KEM and ML-DSA keys (IETF LAMPS: draft-ietf-lamps-kyber-certificates,
// RFC 9881 for ML-DSA): SubjectPublicKeyInfo for public keys, PKCS#8 OneAsymmetricKey (version 0)
// for private keys, in DER or PEM ("PUBLIC KEY" / "PRIVATE KEY"). A small strict DER reader and
// writer of our own (definite, minimal lengths; no trailing bytes) and a strict base64.
//
// Only the ML-KEM and ML-DSA rows of the registry have a standard encoding; every other row is
// refused with InvalidArgument. docs/encodings.md describes what is accepted where.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqcd/kernels/algorithms.h"

namespace pqcd::encoding {

using kernels::AlgorithmId;
using ByteView = std::span<const uint8_t>;

enum class KeyFormat : uint8_t { kRaw, kDer, kPem };

// A byte buffer for private key material: wiped when destroyed, moved from or cleared. Move-only.
class SecretBuffer {
 public:
  SecretBuffer() = default;
  explicit SecretBuffer(ByteView bytes) : bytes_(bytes.begin(), bytes.end()) {}
  SecretBuffer(SecretBuffer&& other) noexcept;
  SecretBuffer& operator=(SecretBuffer&& other) noexcept;
  SecretBuffer(const SecretBuffer&) = delete;
  SecretBuffer& operator=(const SecretBuffer&) = delete;
  ~SecretBuffer() { Clear(); }

  void Append(ByteView bytes) { bytes_.insert(bytes_.end(), bytes.begin(), bytes.end()); }
  // Wipes and empties the buffer (capacity is kept, wiped).
  void Clear();
  // Reserves before appending so that no unwiped copy is left behind by a reallocation.
  void Reserve(size_t n);

  const uint8_t* data() const { return bytes_.data(); }
  uint8_t* data() { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  ByteView view() const { return {bytes_.data(), bytes_.size()}; }

 private:
  std::vector<uint8_t> bytes_;
};

// Overwrites n bytes at p with zeros in a way the compiler may not elide.
void Wipe(void* p, size_t n);

// Whether the algorithm has a standard (LAMPS) key encoding: the ML-KEM and ML-DSA rows.
bool HasStandardEncoding(AlgorithmId id);
// The dotted OID of the algorithm ("2.16.840.1.101.3.4.4.2"), or InvalidArgument.
absl::StatusOr<std::string_view> OidOf(AlgorithmId id);

struct PublicKey {
  AlgorithmId algorithm;
  std::vector<uint8_t> key;  // the raw public key (ML-KEM ek, ML-DSA pk)
};

// A decoded private key: the seed (ML-KEM d||z, ML-DSA xi), the expanded key (ML-KEM dk, ML-DSA
// sk, SLH-DSA's 4n-byte private key), or both (the PKCS#8 "both" form; the caller checks that they
// agree).
struct PrivateKey {
  AlgorithmId algorithm;
  SecretBuffer seed;
  SecretBuffer expanded;
};

// DER SubjectPublicKeyInfo.
absl::StatusOr<std::vector<uint8_t>> EncodeSpkiDer(AlgorithmId id, ByteView raw_public_key);
absl::StatusOr<PublicKey> DecodeSpkiDer(ByteView der);

// DER PKCS#8 OneAsymmetricKey v0. Encode: seed form if only `seed` is given, expandedKey form if
// only `expanded` is given, both form if both are. SLH-DSA (RFC 9909): the privateKey OCTET
// STRING is the 4n-byte private key itself, so `expanded` is required and `seed` is not encoded;
// decoding fills `expanded` only.
absl::StatusOr<SecretBuffer> EncodePkcs8Der(AlgorithmId id, ByteView seed, ByteView expanded);
absl::StatusOr<PrivateKey> DecodePkcs8Der(ByteView der);

// PEM armor: "-----BEGIN <label>-----", base64 lines of 64 characters, "-----END <label>-----".
// Decoding is strict: one block, the expected label, canonical base64 (padding, no stray
// characters), only whitespace around the block.
std::string PemEncode(std::string_view label, ByteView der);
absl::StatusOr<SecretBuffer> PemDecode(std::string_view label, ByteView text);
// Whether the bytes start (after optional whitespace) with "-----BEGIN ".
bool LooksLikePem(ByteView bytes);

// DER or PEM, auto-detected.
absl::StatusOr<PublicKey> DecodePublicKey(ByteView bytes);
absl::StatusOr<PrivateKey> DecodePrivateKey(ByteView bytes);

// Given the algorithm a request names: raw (when the size is the raw size), DER or PEM whose
// algorithm must be `expected`. Returns the raw key. Raw input costs a size comparison.
absl::StatusOr<std::vector<uint8_t>> PublicKeyToRaw(AlgorithmId expected, ByteView bytes);
// Raw private keys: the seed size or the expanded size. Returns the seed and/or expanded key
// (both only from a PKCS#8 "both" form, whose consistency the caller checks).
absl::StatusOr<PrivateKey> PrivateKeyToRaw(AlgorithmId expected, ByteView bytes);
// Whether `size` is a raw public / private (seed or expanded) key size of the algorithm.
bool IsRawPublicKeySize(AlgorithmId id, size_t size);
bool IsRawPrivateKeySize(AlgorithmId id, size_t size);

// Export in the given format. Raw private keys: the expanded key if given, else the seed.
absl::StatusOr<std::vector<uint8_t>> EncodePublicKey(AlgorithmId id, ByteView raw, KeyFormat f);
absl::StatusOr<SecretBuffer> EncodePrivateKey(AlgorithmId id, ByteView seed, ByteView expanded,
                                              KeyFormat f);

// Export of a key pair just made, with both forms at hand (`seed` may be empty): DER/PEM take
// the seed form where the algorithm's PKCS#8 has one (ML-KEM, ML-DSA), the private key itself
// where it has none (SLH-DSA, RFC 9909); raw takes the expanded key.
absl::StatusOr<SecretBuffer> EncodeGeneratedPrivateKey(AlgorithmId id, ByteView seed,
                                                       ByteView expanded, KeyFormat f);

absl::StatusOr<KeyFormat> ParseKeyFormat(std::string_view name);  // "raw", "der", "pem"
std::string_view KeyFormatName(KeyFormat f);

}  // namespace pqcd::encoding
