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
  // The form the kernels compute with (KeyStoreOptions::prepare_private_key), made once when the
  // version entered memory; locked and wiped like private_key. Null when there is none (no
  // preparer, or it could not be locked): then private_key is used.
  std::shared_ptr<const SecretBytes> prepared;
};

// What an operation needs of a held key version (KeyStore::Use): no labels, names or copies of the
// private key.
struct HeldKeyUse {
  uint32_t version = 0;
  int algorithm = 0;
  std::shared_ptr<const SecretBytes> private_key;
  std::shared_ptr<const SecretBytes> prepared;  // null: none (use private_key)
  std::vector<uint8_t> public_key;              // only when asked for
};

struct KeyStoreOptions {
  std::string data_dir;  // empty: memory only (unless postgres_dsn)
  std::string kek_file;  // 32 raw bytes or 64 hex characters; required with data_dir or postgres
  // A postgres:// or postgresql:// URI: the held keys live in that database, shared by every
  // replica that uses it (pg_backend.h); data_dir must then be empty. Every replica keeps a
  // locked in-memory copy that follows the database through LISTEN/NOTIFY and a check every
  // reconcile_interval_ms. A replica that has not synchronized for max_staleness_ms refuses to
  // use its copies (UNAVAILABLE) until it has (0: no limit). Changes need the database
  // (UNAVAILABLE while it is unreachable). start_timeout_ms: how long Open retries connecting.
  std::string postgres_dsn;
  int64_t reconcile_interval_ms = 2000;
  int64_t max_staleness_ms = 30000;
  int64_t start_timeout_ms = 30000;
  // Called (from the store's own thread) when whether held keys can be served changes: false
  // while the staleness limit is exceeded. Postgres only.
  std::function<void(bool serving)> on_serving_change;
  // Otherwise Open refuses a KEK file that group or others may read, write or execute.
  bool allow_shared_kek_file = false;
  uint32_t max_keys_per_owner = 0;  // 0: unlimited; counts keys (not versions) per owner
  // 0: unlimited; versions one key may hold at once (AddVersion refuses past it: one identity's
  // rotation flood cannot grow memory, the mlock budget and the MANIFEST without bound).
  uint32_t max_versions_per_key = 0;
  // 0: unlimited; bytes of locked memory (private keys and their prepared forms) the versions of
  // one owner may take: Create/AddVersion refuses past it, so that no owner can use up the
  // process's RLIMIT_MEMLOCK for the others. Counted as a quota refusal.
  size_t max_locked_bytes_per_owner = 0;
  // 0: unlimited; the same for the ordinary memory of one owner's versions: public keys, labels
  // (which every version carries) and names.
  size_t max_plain_bytes_per_owner = 0;
  // Turns a private key of `algorithm` into the form the kernels compute with (the registry's
  // prepare_private_key), called once per version as it enters memory: Create, AddVersion, Open
  // and every database synchronization. An error refuses Create/AddVersion (the key is not
  // usable); at load it is reported and the version is kept without a prepared form. An empty
  // result: the algorithm has none. A result that is not locked in memory is dropped (counted in
  // KeyStoreCounters::unprepared): private keys never sit in swappable memory. Null: none.
  std::function<absl::StatusOr<SecretBytes>(int algorithm, const SecretBytes& private_key)>
      prepare_private_key;
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

// The key store's link to its database (postgres; the other kinds are always "up").
struct KeyStoreHealth {
  const char* backend = "memory";  // "memory", "file" or "postgres"
  bool up = true;                  // connected, listening, and the last synchronization succeeded
  bool serving = true;             // held keys are served (staleness within the limit)
  double sync_age_s = 0;           // seconds since the last successful synchronization
  uint64_t reconnects = 0;         // connections re-established after a loss
  uint64_t syncs = 0;              // synchronizations that applied a change made elsewhere
};

// What ImportFileStore copied.
struct ImportReport {
  size_t keys_copied = 0;
  size_t versions_copied = 0;
  size_t keys_already_present = 0;     // same versions and records already in the database
  std::vector<std::string> conflicts;  // owner/key_id present with other content: not copied
};

struct KeyStoreCounters {
  uint64_t memlock_refusals = 0;  // Create/AddVersion refused: the private key was not mlock'ed
  uint64_t quota_refusals = 0;    // Create / AddVersion refused: max_keys_per_owner,
                                  // max_versions_per_key, max_locked_bytes_per_owner or
                                  // max_plain_bytes_per_owner reached
  // Versions held without their prepared form (it could not be locked in memory, or preparing a
  // loaded record failed): served from the stored key, expanded at every use.
  uint64_t unprepared = 0;
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
  // Copies every held key of the file store `from` (data_dir + kek_file; the daemon using it must
  // be stopped) into the PostgreSQL store `to` (postgres_dsn + kek_file), keeping versions,
  // high-water marks, record uids, labels and creation times. Idempotent: a key already in the
  // database with the same record uids is skipped; one with other content is reported as a
  // conflict and left alone. One transaction per key.
  static absl::Status ImportFileStore(const KeyStoreOptions& from, const KeyStoreOptions& to,
                                      ImportReport* report);
  ~KeyStore();

  bool persistent() const;
  KeyStoreHealth health() const;

  // Adds a new key (version 1) for owner. ALREADY_EXISTS only if this owner has key_id;
  // RESOURCE_EXHAUSTED when the owner already has max_keys_per_owner keys, or when private_key is
  // not locked in memory.
  absl::StatusOr<KeyRecord> Create(const std::string& owner, const std::string& key_id,
                                   int algorithm, std::vector<uint8_t> public_key,
                                   SecretBytes private_key,
                                   std::map<std::string, std::string> labels);
  // Adds version N+1 of owner's key_id (the caller generates the key pair). NOT_FOUND;
  // RESOURCE_EXHAUSTED when the key already holds max_versions_per_key versions or private_key is
  // not locked in memory.
  absl::StatusOr<KeyRecord> AddVersion(const std::string& owner, const std::string& key_id,
                                       std::vector<uint8_t> public_key, SecretBytes private_key);
  // AddVersion's refusals that do not depend on the new key (NOT_FOUND, RESOURCE_EXHAUSTED at
  // max_versions_per_key, counted as AddVersion counts them), checked before generating one.
  absl::Status CheckRoomForVersion(const std::string& owner, const std::string& key_id) const;
  // version 0 = newest. NOT_FOUND; UNAVAILABLE when a postgres store is past its staleness limit.
  absl::StatusOr<KeyRecord> Get(const std::string& owner, const std::string& key_id,
                                uint32_t version) const;
  // Get for an operation, per use: the version, algorithm and key buffers (shared, not copied),
  // and the public key only when want_public_key. Same errors as Get.
  absl::StatusOr<HeldKeyUse> Use(const std::string& owner, const std::string& key_id,
                                 uint32_t version, bool want_public_key) const;
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
