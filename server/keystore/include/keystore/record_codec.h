// Sealed key records: the on-disk form of one key version, and the key-encryption key (KEK).
//
// Record layout (all integers little-endian):
//   magic "PQKS" | u16 format (1 or 2) | u16 flags (0) | kek_check[8] | nonce[12]
//   | u32 meta_len | meta | u32 ct_len | ct | tag[16]
// meta = u32 version | i32 algorithm | i64 created_unix_ms | str key_id | str owner
//        | u32 label_count | (str key | str value)* | bytes public_key
//        [format 2: | bytes uid (16 random bytes naming this record instance)]
//        (str/bytes: u32 len | data)
// ct   = AES-256-GCM(private key), AAD = every byte before ct (magic .. ct_len), so the metadata
//        (id, version, algorithm, owner, labels, created time, public key, uid) is authenticated.
// New records are always written in format 2; format 1 (no uid) is read for migration only.
// The AES key and kek_check are derived from the KEK with HMAC-SHA256 under distinct labels; the
// KEK itself is used for nothing else and never stored. kek_check lets Open tell "sealed under a
// different KEK" from "corrupted"; it reveals nothing about the KEK. A fresh random 96-bit nonce is
// drawn for every record (a key sees one record per Create/AddVersion, far below the 2^32 limit).
//
// Sealed blobs (the manifest keys/MANIFEST and the rotation journal keys/ROTATION) use a third
// key derived from the KEK (label "pqcd/keystore/v1/manifest-aes-256-gcm"):
//   magic ("PQKM" manifest, "PQKR" rotation journal) | u16 format (1) | u16 flags (0)
//   | kek_check[8] | nonce[12] | u32 ct_len | ct | tag[16]        AAD = magic .. ct_len
// manifest plaintext = u64 counter | u32 key_count | (str owner | str key_id | u32 high_water
//                      | u32 version_count | (u32 version | bytes uid)*)*
// journal plaintext  = old kek_check[8] | new kek_check[8]
//
// File names in keys/ (see ParseKeyFileName):
//   <owner tag>.<key_id>.v<N>.key   owner tag = hex of the first 16 bytes of SHA-256(owner)
//   <key_id>.v<N>.key / <key_id>.v<N>.retired   legacy (format-1 directories, before per-owner
//                                                ids): migrated at Open
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "keystore/secret_bytes.h"

namespace pqcd::server::internal {

inline constexpr size_t kMaxRecordBytes = 1 << 20;       // sanity bound for files and new records
inline constexpr size_t kMaxManifestBytes = 256u << 20;  // sanity bound for MANIFEST
inline constexpr size_t kMaxKeyIdLength = 128;
inline constexpr size_t kUidBytes = 16;
inline constexpr size_t kOwnerTagChars = 32;                          // hex of 16 bytes
inline constexpr char kManifestMagic[4] = {'P', 'Q', 'K', 'M'};       // sealed manifest blobs
inline constexpr char kManifestShardMagic[4] = {'P', 'Q', 'K', 'S'};  // one owner's manifest
inline constexpr char kManifestRootMagic[4] = {'P', 'Q', 'K', 'T'};   // the owners' counters

// 1..128 characters of [A-Za-z0-9._-], not starting with '.'.
bool IsValidKeyId(std::string_view key_id);

// Hex of the first 16 bytes of SHA-256(owner): the owner's part of its record file names.
std::string OwnerTag(std::string_view owner);

enum class KeyFileKind { kRecord, kRetired };

struct KeyFileName {
  bool legacy = false;
  std::string owner_tag;  // empty for legacy names
  std::string key_id;
  uint32_t version = 0;
  KeyFileKind kind = KeyFileKind::kRecord;
};

// "<owner tag>.<key_id>.v<N>.key" (legacy = false) or "<key_id>.v<N>.key" / ".retired" (legacy).
std::string MakeKeyFileName(std::string_view owner, std::string_view key_id, uint32_t version);
std::string MakeLegacyKeyFileName(std::string_view key_id, uint32_t version, KeyFileKind kind);

// Parses a file name of keys/ in the owner-qualified form (legacy = false: only ".key" records;
// the owner tag is 32 lower-case hex digits) or in the legacy form (legacy = true: ".key" or
// ".retired"). nullopt when the name is not of that form. The owner tag is not authenticated: the
// key store checks every record's name against its sealed metadata.
std::optional<KeyFileName> ParseKeyFileName(std::string_view name, bool legacy);

struct RecordMeta {
  std::string key_id;
  uint32_t version = 0;
  int algorithm = 0;
  int64_t created_unix_ms = 0;
  std::string owner;
  std::map<std::string, std::string> labels;
  std::vector<uint8_t> public_key;
  std::string uid;  // kUidBytes (format 2); empty in format-1 records
};

// The sealed manifest of a key directory: which record instances are live.
struct ManifestKey {
  uint32_t high_water = 0;                   // highest version ever held (numbers are not reused)
  std::map<uint32_t, std::string> versions;  // live version -> record uid
};
struct Manifest {
  uint64_t counter = 0;                                             // incremented by every rewrite
  std::map<std::pair<std::string, std::string>, ManifestKey> keys;  // (owner, key_id) -> key
};
std::vector<uint8_t> EncodeManifestPayload(const Manifest& m);
// False when the bytes are not a well-formed payload (also: invalid key ids, versions above
// high_water, uids of the wrong size).
bool DecodeManifestPayload(const uint8_t* data, size_t size, Manifest* m);

// One owner's part of the manifest, in its own file "MANIFEST.<owner tag>" (the file store keeps
// one per owner, so that a change rewrites only its owner's part): the owner, then a manifest
// payload that lists only that owner's keys.
std::string MakeManifestShardName(std::string_view owner);
// The same from the owner tag (OwnerTag) alone.
std::string ManifestShardNameForTag(std::string_view owner_tag);
// The owner tag of a "MANIFEST.<32 lower-case hex digits>" name; nullopt for any other name.
std::optional<std::string> ParseManifestShardName(std::string_view name);
std::vector<uint8_t> EncodeManifestShard(std::string_view owner, const Manifest& m);
// False when the bytes are not a well-formed shard, or list a key of another owner.
bool DecodeManifestShard(const uint8_t* data, size_t size, std::string* owner, Manifest* m);
// m's keys by owner, each part with m's counter: the shards of m.
std::map<std::string, Manifest> SplitByOwner(Manifest m);

// The PostgreSQL store's manifest row (schema 2): the store's counter, and for every owner with
// keys the counter its own manifest row (a shard, as above) was written at, so that an owner's
// row put back from a backup is told from the current one.
struct ManifestRoot {
  uint64_t counter = 0;
  std::map<std::string, uint64_t> owners;  // owner -> counter of its shard
};
std::vector<uint8_t> EncodeManifestRoot(const ManifestRoot& r);
bool DecodeManifestRoot(const uint8_t* data, size_t size, ManifestRoot* r);

// Reads a KEK file: exactly 32 raw bytes, or 64 hex digits optionally followed by "\n" or "\r\n".
// A file accessible by group or others is refused (FAILED_PRECONDITION naming the file and the
// fix) unless allow_shared, which only warns (spdlog). Errors never quote the contents.
absl::StatusOr<SecretBytes> LoadKek(const std::string& path, bool allow_shared = false);

enum class OpenFailure {
  kNone,
  kMalformed,  // truncated, bad magic/format, inconsistent lengths, unparsable metadata
  kWrongKek,   // sealed under a different KEK (kek_check differs)
  kAuthFailed  // right KEK, but the GCM tag does not verify: corrupted or tampered
};

struct OpenResult {
  OpenFailure failure = OpenFailure::kNone;
  std::string reason;  // human-readable, no secrets
  RecordMeta meta;
  SecretBytes private_key;
};

class RecordSealer {
 public:
  explicit RecordSealer(const SecretBytes& kek);  // kek: 32 bytes
  absl::StatusOr<std::vector<uint8_t>> Seal(const RecordMeta& meta,
                                            const SecretBytes& private_key) const;
  OpenResult Open(const uint8_t* data, size_t size) const;

  // Sealed blobs (manifest, rotation journal). OpenBlob fills *plain (the payload) on success.
  absl::StatusOr<std::vector<uint8_t>> SealBlob(const char magic[4],
                                                const std::vector<uint8_t>& plain) const;
  OpenFailure OpenBlob(const char magic[4], const uint8_t* data, size_t size,
                       std::vector<uint8_t>* plain, std::string* reason) const;

  const std::array<uint8_t, 8>& kek_check() const { return kek_check_; }

 private:
  absl::Status AppendHeader(const uint8_t magic[4], uint16_t format,
                            std::vector<uint8_t>& out) const;
  SecretBytes aead_key_;
  SecretBytes blob_key_;
  std::array<uint8_t, 8> kek_check_{};
};

}  // namespace pqcd::server::internal
