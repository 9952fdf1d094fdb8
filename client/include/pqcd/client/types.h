// Plain C++ types of the pqcd client library: algorithms, keys, operations and their results.
//
// None of these types exposes gRPC or protobuf; byte strings are std::string (any bytes).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pqcd/client/api_enums.h"

namespace pqcd::client {

// The enumerators, their values (the API's pqc.v1 numbers) and order are those of the proto's
// enums: pqcd/client/api_enums.h is generated from proto/pqc/v1/common.proto
// (client/gen_api_enums.cmake), e.g. ML_KEM_768 = 2 is Algorithm::kMlKem768, PRE_HASH_SHA2_256 = 2
// is PreHash::kSha2_256.
#define PQCD_CLIENT_ENUMERATOR(name, value, proto_name) name = value,

// Every algorithm the daemon serves (kUnspecified, kMlKem768, kMlDsa65, kSha3_256, kXWing, ...).
enum class Algorithm : int { PQCD_CLIENT_ALGORITHMS(PQCD_CLIENT_ENUMERATOR) };

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

// HashML-DSA / HashSLH-DSA pre-hash (kNone, kSha2_256, kShake128, ...); kNone selects pure signing.
enum class PreHash : int { PQCD_CLIENT_PRE_HASHES(PQCD_CLIENT_ENUMERATOR) };
#undef PQCD_CLIENT_ENUMERATOR

std::string_view PreHashName(PreHash pre_hash);  // "none", "SHA2-256", "SHAKE128", ...
std::optional<PreHash> ParsePreHash(std::string_view name);
// Every pre-hash except kNone, in API order.
const std::vector<PreHash>& AllPreHashes();

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

// The crypto operations, one row each, in the order of Operation and Result: the RPC
// (pqc.v1.Crypto.<Rpc>, <Rpc>Request, <Rpc>Response), the field of pqc.v1.Operation and
// OperationResult that carries it, the operation and its result. The library writes its
// conversions and calls over this table (src/convert.h, src/unary.cc), so an operation is its
// types and its row here, its fields (src/convert.cc) and its Client methods (client.h).
#define PQCD_CLIENT_OPERATIONS(X)           \
  X(KeyGen, keygen, KeyGenOp, KeyPair)      \
  X(Encaps, encaps, EncapsOp, EncapsResult) \
  X(Decaps, decaps, DecapsOp, DecapsResult) \
  X(Sign, sign, SignOp, SignResult)         \
  X(Verify, verify, VerifyOp, VerifyResult) \
  X(Hash, hash, HashOp, HashResult)

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
  // Admins (--admin identities): import the key for this identity (empty: the caller).
  std::string owner;
};

// Whose held keys a Keys call manages: the caller's own (Owner::Caller(), what the calls without
// an Owner do), or, for the daemon's --admin identities, another identity's
// (Owner::Of("unix:uid:1000"), Owner::Of("tls:dns:app.example.com")); ListKeys also takes
// Owner::All(), every identity's keys. Made only through these three, so that an Owner never
// stands in for a braced label selector or key id by accident.
class Owner {
 public:
  static Owner Caller() { return Owner(Tag{}, {}); }
  static Owner Of(std::string identity) { return Owner(Tag{}, std::move(identity)); }
  static Owner All() { return Owner(Tag{}, "*"); }
  // The API's owner field: "" (the caller), an identity, or "*" (every identity).
  const std::string& identity() const { return identity_; }

 private:
  struct Tag {};
  Owner(Tag, std::string identity) : identity_(std::move(identity)) {}
  std::string identity_;
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
