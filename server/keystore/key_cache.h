// The key store's in-memory cache (KeyCache: every held version, locked in memory, with its
// prepared form), shared by KeyStore (key_store.cc: the rules) and its backends (key_backend.h),
// and the base of the two backends that seal what they persist (SealedKeyBackend: file and
// PostgreSQL). Internal to pqcd_keystore.
//
// Locking: write_mu serializes changes, including their I/O (KeyStore's mutations, and the
// PostgreSQL backend's synchronizations); mu (a reader/writer lock) guards the map and is held
// exclusively only for the short in-memory commit, so Get/List run concurrently and never wait for
// an fsync. (std::shared_mutex rather than absl::Mutex: the system absl is not built with TSan,
// which then cannot see absl's synchronization.)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "keystore/key_backend.h"
#include "keystore/key_store.h"
#include "keystore/record_codec.h"

namespace pqcd::server::internal {

using KeyName = std::pair<std::string, std::string>;  // (owner, key_id)

struct KeyEntry {
  std::string owner;
  std::string key_id;
  int algorithm = 0;
  uint32_t high_water = 0;  // highest version ever held: numbers are not reused
  std::map<uint32_t, KeyRecord> versions;
  std::map<uint32_t, std::string> uids;  // record uid of each version (persistent stores)
};

class KeyCache {
 public:
  using Preparer = std::function<absl::StatusOr<SecretBytes>(int, const SecretBytes&)>;
  explicit KeyCache(Preparer prepare_private_key)
      : prepare_private_key_(std::move(prepare_private_key)) {}

  std::mutex write_mu;  // serializes changes (held across their I/O)
  mutable std::shared_mutex mu;
  std::map<KeyName, KeyEntry> keys;         // guarded by mu
  std::map<std::string, size_t> per_owner;  // keys per owner; guarded by mu
  size_t count = 0;                         // versions; guarded by mu
  std::atomic<uint64_t> unprepared{0};      // KeyStoreCounters::unprepared

  // The manifest as the cache holds it: every key, or (owner given) only that owner's keys, which
  // is all a change of that owner rewrites. Takes mu shared.
  Manifest Snapshot(const std::string* owner = nullptr) const;
  // Adds a loaded record to the map (at open: single-threaded; otherwise with mu held
  // exclusively).
  void Insert(KeyRecord kr, std::string uid);
  // Erases version v of *it (mu held exclusively), and the key with its last version; the key
  // buffers go to doomed, to be released after the lock.
  void Erase(std::map<KeyName, KeyEntry>::iterator it, uint32_t v,
             std::vector<std::shared_ptr<const SecretBytes>>& doomed);
  // Drops every held key (each SecretBytes wipes itself when its last reference goes).
  void Clear();

  // The prepared form of kr's private key (prepare_private_key), kept only when it is locked.
  absl::Status Prepare(KeyRecord& kr);
  // A loaded record, prepared; a record that cannot be prepared is kept without (and reported).
  KeyRecord ToRecord(OpenResult&& rec, const std::string& owner);

 private:
  Preparer prepare_private_key_;
};

// "owner 'o' key 'k' vN", for messages.
std::string Describe(const KeyName& id, uint32_t version);
// A fresh record uid (kUidBytes random bytes).
absl::StatusOr<std::string> RandomUid();
int64_t SteadyMs();

// What the file and PostgreSQL backends share: a KEK (sealer), a manifest counter, and the order
// of a change (manifest, then records).
class SealedKeyBackend : public KeyBackend {
 public:
  bool persistent() const override { return true; }
  absl::StatusOr<std::string> AddVersion(const KeyRecord& rec) override;
  absl::Status PutKey(const KeyEntry& entry) override;

 protected:
  explicit SealedKeyBackend(KeyCache& cache) : cache_(cache) {}
  // Seals m (owner's keys only) under the next counter and writes it durably as owner's manifest
  // (within the change).
  virtual absl::Status WriteOwnerManifest(const std::string& owner, Manifest m) = 0;
  // Seals and durably writes one record (write_mu held, mu not held).
  virtual absl::Status PutRecord(const KeyRecord& rec, const std::string& uid, bool replace) = 0;
  // After a failed AddVersion: takes owner's manifest back when the backend cannot roll the
  // change back as a whole (best effort).
  virtual void UndoOwnerManifest(const std::string& /*owner*/) {}
  // owner's manifest as the cache holds it, without these versions of key_id (and without the key
  // when none is left: the id may be created afresh, from version 1).
  Manifest WithoutVersions(const std::string& owner, const std::string& key_id,
                           const std::vector<uint32_t>& versions) const;
  absl::StatusOr<std::vector<uint8_t>> Seal(const KeyRecord& rec, const std::string& uid) const;

  KeyCache& cache_;
  std::unique_ptr<RecordSealer> sealer_;  // seals new records and the manifest
  uint64_t manifest_counter_ = 0;         // guarded by write_mu
};

// The backends (KeyStore::Open chooses one).
std::unique_ptr<KeyBackend> MakeMemoryKeyBackend();
absl::StatusOr<std::unique_ptr<KeyBackend>> OpenPostgresKeyBackend(const KeyStoreOptions& options,
                                                                   KeyCache& cache,
                                                                   LoadReport& report);

}  // namespace pqcd::server::internal
