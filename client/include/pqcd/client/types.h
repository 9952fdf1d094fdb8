// Plain C++ types of the pqcd client library: algorithms, keys, operations and their results.
//
// None of these types exposes gRPC or protobuf; byte strings are std::string (any bytes).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace pqcd::client {

// Every algorithm the daemon serves (values equal the API's pqc.v1.Algorithm numbers).
enum class Algorithm : int {
  kUnspecified = 0,
  kMlKem512 = 1,
  kMlKem768 = 2,
  kMlKem1024 = 3,
  kMlDsa44 = 10,
  kMlDsa65 = 11,
  kMlDsa87 = 12,
  kSha3_224 = 20,
  kSha3_256 = 21,
  kSha3_384 = 22,
  kSha3_512 = 23,
  kShake128 = 24,
  kShake256 = 25,
  kSm3 = 30,
  kSha256 = 40,
  kSha384 = 41,
  kSha512 = 42,
  kSha224 = 43,
  kSha512_224 = 44,
  kSha512_256 = 45,
  kX25519MlKem768 = 50,
  kSecP256r1MlKem768 = 51,
  kSecP384r1MlKem1024 = 52,
  kXWing = 53,
  kSlhDsaSha2_128s = 60,
  kSlhDsaSha2_128f = 61,
  kSlhDsaSha2_192s = 62,
  kSlhDsaSha2_192f = 63,
  kSlhDsaSha2_256s = 64,
  kSlhDsaSha2_256f = 65,
  kSlhDsaShake128s = 66,
  kSlhDsaShake128f = 67,
  kSlhDsaShake192s = 68,
  kSlhDsaShake192f = 69,
  kSlhDsaShake256s = 70,
  kSlhDsaShake256f = 71,
};

// Canonical names: "ML-KEM-768", "ML-DSA-65", "SHA3-256", "SHAKE128", "SM3", "SHA2-256", ...
std::string_view AlgorithmName(Algorithm algorithm);
// Case-insensitive; '-', '_' and spaces are ignored ("ml-kem-768", "MLKEM768", "sha256",
// "SHA2-256").
std::optional<Algorithm> ParseAlgorithm(std::string_view name);
// Every algorithm except kUnspecified, in API order.
const std::vector<Algorithm>& AllAlgorithms();
bool IsKem(Algorithm algorithm);
bool IsDsa(Algorithm algorithm);
bool IsHash(Algorithm algorithm);
bool IsXof(Algorithm algorithm);

// HashML-DSA pre-hash (values equal pqc.v1.PreHash); kNone selects pure ML-DSA.
enum class PreHash : int {
  kNone = 0,
  kSha2_224 = 1,
  kSha2_256 = 2,
  kSha2_384 = 3,
  kSha2_512 = 4,
  kSha2_512_224 = 5,
  kSha2_512_256 = 6,
  kSha3_224 = 7,
  kSha3_256 = 8,
  kSha3_384 = 9,
  kSha3_512 = 10,
  kShake128 = 11,
  kShake256 = 12,
};
std::string_view PreHashName(PreHash pre_hash);  // "none", "SHA2-256", "SHAKE128", ...
std::optional<PreHash> ParsePreHash(std::string_view name);

// A key held by the daemon; version 0 means the newest.
struct KeyRef {
  std::string key_id;
  uint32_t version = 0;
};

// The key of an operation: raw bytes carried in the request, or a reference to a held key.
struct Key {
  std::string bytes;
  std::optional<KeyRef> ref;

  static Key Raw(std::string bytes) { return Key{std::move(bytes), std::nullopt}; }
  static Key Held(std::string key_id, uint32_t version = 0) {
    return Key{{}, KeyRef{std::move(key_id), version}};
  }
  bool held() const { return ref.has_value(); }
};

// ---- Operations ------------------------------------------------------------------------------
struct KeyGenOp {
  Algorithm algorithm = Algorithm::kUnspecified;
  std::string seed;   // optional: the algorithm's seed form (its size: the registry's seed_bytes)
  bool hold = false;  // keep the private key in the daemon
  std::string key_id;
  std::map<std::string, std::string> labels;
};
struct EncapsOp {
  Algorithm algorithm = Algorithm::kUnspecified;
  Key key;  // encapsulation key, or a held ML-KEM key
};
struct DecapsOp {
  Algorithm algorithm = Algorithm::kUnspecified;
  Key key;  // 64-byte seed or expanded decapsulation key, or a held key
  std::string ciphertext;
};
struct SignOp {
  Algorithm algorithm = Algorithm::kUnspecified;
  Key key;              // 32-byte seed or expanded private key, or a held key
  std::string message;  // or mu (64 bytes) with external_mu
  std::string context;  // 0..255 bytes
  bool deterministic = false;
  PreHash pre_hash = PreHash::kNone;
  bool external_mu = false;
};
struct VerifyOp {
  Algorithm algorithm = Algorithm::kUnspecified;
  Key key;  // public key, or a held key
  std::string message;
  std::string signature;
  std::string context;
  PreHash pre_hash = PreHash::kNone;
  bool external_mu = false;
};
struct HashOp {
  Algorithm algorithm = Algorithm::kUnspecified;
  std::string data;
  uint32_t output_length = 0;  // SHAKE only; 0 = the default length
};
using Operation = std::variant<KeyGenOp, EncapsOp, DecapsOp, SignOp, VerifyOp, HashOp>;

// ---- Results ---------------------------------------------------------------------------------
struct KeyPair {
  Algorithm algorithm = Algorithm::kUnspecified;
  std::string public_key;
  std::string private_key;  // expanded; empty when held
  std::string seed;         // empty when held
  std::string key_id;       // set when held
  uint32_t key_version = 0;
};
struct EncapsResult {
  std::string ciphertext;
  std::string shared_secret;
  uint32_t key_version = 0;
};
struct DecapsResult {
  std::string shared_secret;
};
struct SignResult {
  std::string signature;
  uint32_t key_version = 0;
};
struct VerifyResult {
  bool valid = false;
};
struct HashResult {
  std::string digest;
};
using Result =
    std::variant<KeyPair, EncapsResult, DecapsResult, SignResult, VerifyResult, HashResult>;

// ---- Keys service ----------------------------------------------------------------------------
struct KeyInfo {
  std::string key_id;
  uint32_t version = 0;
  Algorithm algorithm = Algorithm::kUnspecified;
  absl::Time created;
  std::map<std::string, std::string> labels;
  std::string owner;
  std::string public_key;
  std::vector<uint32_t> versions;
};
struct ImportKeyOp {
  Algorithm algorithm = Algorithm::kUnspecified;
  std::string key_id;  // generated by the daemon when empty
  std::string private_key;
  std::string public_key;  // optional: derived from the private key; must match when given
  std::map<std::string, std::string> labels;
};

enum class HealthStatus { kUnknown, kServing, kNotServing, kServiceUnknown };
std::string_view HealthStatusName(HealthStatus status);  // "SERVING", ...

// ---- Byte-string encodings (CLI, load generator, tests) ----------------------------------------
std::string HexEncode(std::string_view bytes);
// Accepts upper and lower case; ignores whitespace. Fails on odd length or a non-hex character.
absl::StatusOr<std::string> HexDecode(std::string_view hex);
std::string Base64Encode(std::string_view bytes);  // standard alphabet, padded
// Standard or URL-safe alphabet, padding optional, whitespace ignored.
absl::StatusOr<std::string> Base64Decode(std::string_view text);

}  // namespace pqcd::client
