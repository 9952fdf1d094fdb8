// Sealed key records: the on-disk form of one key version, and the key-encryption key (KEK).
//
// Layout (all integers little-endian):
//   magic "PQKS" | u16 format (1) | u16 flags (0) | kek_check[8] | nonce[12]
//   | u32 meta_len | meta | u32 ct_len | ct | tag[16]
// meta = u32 version | i32 algorithm | i64 created_unix_ms | str key_id | str owner
//        | u32 label_count | (str key | str value)* | bytes public_key     (str/bytes: u32 len |
//        data)
// ct   = AES-256-GCM(private key), AAD = every byte before ct (magic .. ct_len), so the metadata
//        (id, version, algorithm, owner, labels, created time, public key) is authenticated too.
// The AES key and kek_check are derived from the KEK with HMAC-SHA256 under distinct labels; the
// KEK itself is used for nothing else and never stored. kek_check lets Open tell "sealed under a
// different KEK" from "corrupted"; it reveals nothing about the KEK. A fresh random 96-bit nonce is
// drawn for every record (a key sees one record per Create/AddVersion, far below the 2^32 limit).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "keystore/key_store.h"

namespace pqcd::server::internal {

inline constexpr size_t kMaxRecordBytes = 1 << 20;  // sanity bound for files and new records

struct RecordMeta {
  std::string key_id;
  uint32_t version = 0;
  int algorithm = 0;
  int64_t created_unix_ms = 0;
  std::string owner;
  std::map<std::string, std::string> labels;
  std::vector<uint8_t> public_key;
};

// Reads a KEK file: exactly 32 raw bytes, or 64 hex digits optionally followed by "\n" or "\r\n".
// Warns (spdlog) when the file is accessible by group or others. Errors never quote the contents.
absl::StatusOr<SecretBytes> LoadKek(const std::string& path);

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

 private:
  SecretBytes aead_key_;
  std::array<uint8_t, 8> kek_check_{};
};

}  // namespace pqcd::server::internal
