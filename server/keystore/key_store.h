// Server-held private keys: mlock'ed in memory, sealed with AES-256-GCM on disk, owned by
// identities.
//
// Contract (the service layer relies on it):
// - Create/AddVersion/Delete return only after the change is durable (write to a temporary file,
//   fsync, rename, fsync the directory) when a data directory is configured.
// - A record that fails authentication (wrong KEK, torn or corrupted write) is reported and
// skipped;
//   a wrong KEK for every record is a hard error at Open.
// - Private key bytes never appear in a log line, an error message or an exception.
// - Audit lines for key-management actions are written by the service layer, not here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace pqcd::server {

// A byte buffer in mlock'ed memory, zeroized on destruction. Move-only.
class SecretBytes {
 public:
  SecretBytes() = default;
  explicit SecretBytes(size_t n);
  SecretBytes(const uint8_t* data, size_t n);
  SecretBytes(SecretBytes&& other) noexcept;
  SecretBytes& operator=(SecretBytes&& other) noexcept;
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;
  ~SecretBytes();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  void Release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// Algorithm is the numeric value of pqc.v1.Algorithm (kept as int so this layer needs no protobuf).
struct KeyRecord {
  std::string key_id;
  uint32_t version = 0;
  int algorithm = 0;
  int64_t created_unix_ms = 0;
  std::map<std::string, std::string> labels;
  std::string owner;
  std::vector<uint8_t> public_key;
  // Seed form when available (ML-KEM 64 bytes, ML-DSA 32 bytes), else the expanded key.
  std::shared_ptr<const SecretBytes> private_key;
};

struct KeyStoreOptions {
  std::string data_dir;  // empty: memory only
  std::string kek_file;  // 32 raw bytes or 64 hex characters; required with data_dir
};

struct LoadReport {
  size_t loaded = 0;
  size_t corrupted = 0;               // records that failed authentication or parsing (skipped)
  std::vector<std::string> problems;  // one line per skipped record (file name and reason)
  size_t temp_files_removed = 0;      // leftovers of interrupted writes, deleted at Open
};

class KeyStore {
 public:
  static absl::StatusOr<std::unique_ptr<KeyStore>> Open(const KeyStoreOptions& options,
                                                        LoadReport* report = nullptr);
  ~KeyStore();

  bool persistent() const;

  // Adds a new key (version 1). ALREADY_EXISTS if key_id is taken (by anyone).
  absl::StatusOr<KeyRecord> Create(const std::string& key_id, int algorithm,
                                   std::vector<uint8_t> public_key, SecretBytes private_key,
                                   std::map<std::string, std::string> labels,
                                   const std::string& owner);
  // Adds version N+1 under key_id. The caller generates the new key pair.
  absl::StatusOr<KeyRecord> AddVersion(const std::string& key_id, std::vector<uint8_t> public_key,
                                       SecretBytes private_key, const std::string& caller,
                                       bool caller_is_admin);
  // version 0 = newest. NOT_FOUND when missing or owned by someone else (unless admin).
  absl::StatusOr<KeyRecord> Get(const std::string& key_id, uint32_t version,
                                const std::string& caller, bool caller_is_admin) const;
  // All versions of key_id, oldest first; empty when the key is missing or not visible to caller.
  std::vector<uint32_t> Versions(const std::string& key_id, const std::string& caller,
                                 bool caller_is_admin) const;
  // All versions of key_id regardless of owner (administrative/internal use only: it does not hide
  // other identities' keys).
  std::vector<uint32_t> Versions(const std::string& key_id) const;
  // Newest version of every key visible to caller, optionally filtered by labels.
  std::vector<KeyRecord> List(const std::string& caller, bool caller_is_admin,
                              const std::map<std::string, std::string>& label_selector) const;
  // version 0 = all versions. Returns how many were deleted; zeroizes them in memory.
  absl::StatusOr<uint32_t> Delete(const std::string& key_id, uint32_t version,
                                  const std::string& caller, bool caller_is_admin);
  size_t size() const;  // number of held key versions

 private:
  KeyStore();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pqcd::server
