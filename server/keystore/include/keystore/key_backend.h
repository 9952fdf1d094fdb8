// KeyBackend: where KeyStore's held keys persist. KeyStore (key_store.h) is the cache and the
// rules (key ids, versions, owners, quotas, mlock, prepared forms) over exactly one backend,
// chosen at Open from KeyStoreOptions:
//   memory     (no data_dir, no postgres_dsn)  nothing persists (memory_key_backend.cc)
//   file       (data_dir)       sealed record files and per-owner manifests in <data_dir>/keys/
//                               (file_key_backend.cc; legacy layouts: migration.cc; KEK rotation:
//                               kek_rotation.cc)
//   PostgreSQL (postgres_dsn)   the same sealed records and manifests as rows, shared by replicas
//                               (postgres_key_backend.cc over PgBackend, pg_backend.h)
// A backend loads what it holds into the cache at open (and, PostgreSQL, whenever the database
// changes) and makes every change of the cache durable before KeyStore applies it in memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "keystore/key_store.h"

namespace pqcd::server {

namespace internal {
class KeyCache;
struct KeyEntry;
}  // namespace internal

class KeyBackend {
 public:
  virtual ~KeyBackend() = default;

  virtual bool persistent() const = 0;
  virtual KeyStoreHealth health() const = 0;
  // OK while held keys may be used; UNAVAILABLE when the copies in the cache may be out of date
  // (a PostgreSQL store past its staleness limit).
  virtual absl::Status CheckServing() const { return absl::OkStatus(); }

  // A change, with the cache's write_mu held throughout: BeginChange (PostgreSQL: a transaction
  // that locks the manifest and brings the cache up to date, so that KeyStore's checks see every
  // replica's changes), then AddVersion / RemoveVersions / PutKey, then CommitChange, or
  // AbortChange when it is not committed.
  virtual absl::Status BeginChange() { return absl::OkStatus(); }
  virtual absl::Status CommitChange() { return absl::OkStatus(); }
  virtual void AbortChange() {}

  // Makes a new version (rec, not yet in the cache; its key's high-water mark becomes
  // rec.version) durable: the manifest first, then the record. Returns the new record's uid
  // (empty when nothing persists).
  virtual absl::StatusOr<std::string> AddVersion(const KeyRecord& rec) = 0;
  // Makes the deletion of these versions of owner/key_id (all held) durable; the manifest is the
  // commit point.
  virtual absl::Status RemoveVersions(const std::string& owner, const std::string& key_id,
                                      const std::vector<uint32_t>& versions) = 0;
  // Writes a whole key (not in the cache) as it is: its versions, their record uids and its
  // high-water mark (ImportFileStore).
  virtual absl::Status PutKey(const internal::KeyEntry& entry) = 0;

  // Stops background work (the PostgreSQL synchronization thread) before the cache goes.
  virtual void Stop() {}
};

namespace internal {
// The backend options name, loaded into cache (report: what was loaded, skipped, migrated).
absl::StatusOr<std::unique_ptr<KeyBackend>> OpenKeyBackend(const KeyStoreOptions& options,
                                                           KeyCache& cache, LoadReport& report);
}  // namespace internal

}  // namespace pqcd::server
