// Server-held private keys: mlock'ed in memory, sealed with AES-256-GCM on disk, owned by
// identities.
//
// Contract (the service layer relies on it):
// - Key ids are per owner: two owners may each hold a key "k". The store does no rights checks:
//   the caller passes the owner whose key it addresses (the service layer decides who may do
//   what).
// - Create/AddVersion/Delete return only after the change is durable (write to a temporary file,
//   fsync, rename, fsync the directory; then the sealed manifest) when a data directory is
//   configured.
// - A held private key is never kept in swappable memory: Create/AddVersion refuse a key whose
//   buffer could not be mlock'ed (RESOURCE_EXHAUSTED), and Open refuses to load keys it cannot
//   lock.
// - A record that fails authentication (wrong KEK, torn or corrupted write) is reported and
//   skipped; a record file that the sealed manifest does not list (a deleted record restored from a
//   backup) is reported and neither loaded nor deleted; a wrong KEK is a hard error at Open.
// - Private key bytes never appear in a log line, an error message or an exception.
// - Audit lines for key-management actions are written by the service layer, not here.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "keystore/secret_bytes.h"

namespace pqcd::server {

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
  // Otherwise Open refuses a KEK file that group or others may read, write or execute.
  bool allow_shared_kek_file = false;
  uint32_t max_keys_per_owner = 0;  // 0: unlimited; counts keys (not versions) per owner
  // Maps the owners of records written by older versions (legacy file names) when Open migrates
  // them; null: keep them as they are.
  std::function<std::string(const std::string& legacy_owner)> migrate_owner;
};

struct LoadReport {
  size_t loaded = 0;
  size_t corrupted = 0;               // records that failed authentication or parsing (skipped)
  std::vector<std::string> problems;  // one line per skipped/unlisted/missing record, with reason
  size_t temp_files_removed = 0;      // leftovers of interrupted writes, deleted at Open
  size_t migrated = 0;                // legacy records re-sealed under owner-qualified names
  // Record files that the sealed manifest does not list (deleted records restored from a backup,
  // or leftovers of a crash): not loaded and left in place. Names relative to the data directory.
  std::vector<std::string> unlisted;
  // Manifest entries (owner/key_id vN) whose record file is absent or could not be loaded.
  std::vector<std::string> missing;
  uint64_t manifest_counter = 0;  // of the manifest after Open (it grows with every change)
  size_t resealed = 0;            // RotateKek: records re-sealed under the new KEK
};

struct KeyStoreCounters {
  uint64_t memlock_refusals = 0;  // Create/AddVersion refused: the private key was not mlock'ed
  uint64_t quota_refusals = 0;    // Create refused: max_keys_per_owner reached
};

class KeyStore {
 public:
  static absl::StatusOr<std::unique_ptr<KeyStore>> Open(const KeyStoreOptions& options,
                                                        LoadReport* report = nullptr);
  // Re-seals every record and the manifest of options.data_dir (sealed under options.kek_file)
  // under the KEK in new_kek_file. Needs exclusive use of the directory (the daemon stopped).
  // Resumable: a sealed journal (keys/ROTATION) is written first; until the rotation completes,
  // Open refuses the directory and a rerun with the same arguments finishes the work. After it,
  // only the new KEK opens the directory. report: what was loaded and re-sealed.
  static absl::Status RotateKek(const KeyStoreOptions& options, const std::string& new_kek_file,
                                LoadReport* report = nullptr);
  ~KeyStore();

  bool persistent() const;

  // Adds a new key (version 1) for owner. ALREADY_EXISTS only if this owner has key_id;
  // RESOURCE_EXHAUSTED when the owner already has max_keys_per_owner keys, or when private_key is
  // not locked in memory.
  absl::StatusOr<KeyRecord> Create(const std::string& owner, const std::string& key_id,
                                   int algorithm, std::vector<uint8_t> public_key,
                                   SecretBytes private_key,
                                   std::map<std::string, std::string> labels);
  // Adds version N+1 of owner's key_id (the caller generates the key pair). NOT_FOUND;
  // RESOURCE_EXHAUSTED when private_key is not locked in memory.
  absl::StatusOr<KeyRecord> AddVersion(const std::string& owner, const std::string& key_id,
                                       std::vector<uint8_t> public_key, SecretBytes private_key);
  // version 0 = newest. NOT_FOUND.
  absl::StatusOr<KeyRecord> Get(const std::string& owner, const std::string& key_id,
                                uint32_t version) const;
  // All versions of owner's key_id, oldest first; empty when missing.
  std::vector<uint32_t> Versions(const std::string& owner, const std::string& key_id) const;

  struct ListPage {
    std::vector<KeyRecord> keys;  // newest version of each key
    std::string next_page_token;  // empty: no more pages
  };
  // Newest version of the keys of owner (nullptr: of every owner) whose labels include
  // label_selector, in (owner, key_id) order. page_size 0: 100; at most 1000. page_token: ""
  // or a next_page_token of the same query (INVALID_ARGUMENT otherwise).
  absl::StatusOr<ListPage> List(const std::string* owner,
                                const std::map<std::string, std::string>& label_selector,
                                uint32_t page_size, const std::string& page_token) const;
  // version 0 = all versions. Returns how many were deleted; zeroizes them in memory.
  absl::StatusOr<uint32_t> Delete(const std::string& owner, const std::string& key_id,
                                  uint32_t version);

  // Owners that hold a key named key_id (administrative lookups).
  std::vector<std::string> OwnersOf(const std::string& key_id) const;
  size_t KeyCount(const std::string& owner) const;  // keys (not versions) of owner
  size_t size() const;                              // number of held key versions
  KeyStoreCounters counters() const;

 private:
  KeyStore();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pqcd::server
