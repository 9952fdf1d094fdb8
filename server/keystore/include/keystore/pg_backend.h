// The PostgreSQL side of the key store (--key-store postgres://...): the schema and its
// migrations (their SQL and code are in migration.cc), the sealed manifest row, the sealed record
// rows, and change notifications. The in-memory cache and the rules (versions, owners, quotas) stay
// in KeyStore (key_store.cc), which drives this class through its PostgreSQL KeyBackend
// (postgres_key_backend.cc); this class only moves sealed bytes in and out of the database. See
// docs/key-store-postgres.md.
//
// Schema (version 2; pqcd_schema_migrations lists the applied versions):
//   pqcd_manifest(id = 1, counter bigint, sealed bytea, updated_at)   exactly one row: the root
//   pqcd_manifest_owners(owner text primary key, counter bigint, sealed bytea, updated_at)
//   pqcd_records(owner, key_id, version, uid bytea, sealed bytea, created_at)
//                                                  primary key (owner, key_id, version)
// The manifest is kept per owner, so that a change rewrites only its owner's part: each owner
// with keys has a row holding the same sealed blob as the file store's keys/MANIFEST.<owner tag>
// (record_codec.h: the owner, a counter and, per live key, its high-water version and the uid of
// each live version). The root row holds the store's counter and, sealed, every owner's counter,
// so an owner row put back from a backup (or removed) is detected. A record row is used only when
// its owner's manifest lists its (key_id, version, uid) and its sealed metadata says the same: a
// row put back from a backup, or moved to another owner/id/version by someone with write access to
// the database, is never loaded. The plaintext counter columns must equal the sealed ones (they
// let replicas poll cheaply). Schema 1 had one manifest row for every owner; Open converts it.
//
// Writers serialize on the root row (SELECT ... FOR UPDATE inside the change's transaction),
// which also makes "two replicas create the same id at once" a plain race that one wins. Every
// committed change sends NOTIFY pqcd_keys with the new counter.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "keystore/pg_conn.h"
#include "keystore/record_codec.h"

namespace pqcd::server::internal {

inline constexpr int kPgSchemaVersion = 2;
inline constexpr char kPgChannel[] = "pqcd_keys";

struct PgRecordRow {
  std::string owner;
  std::string key_id;
  uint32_t version = 0;
  std::string uid;
  std::string sealed;
};

// Opens a sealed blob read from the database; `what` names it in errors (FAILED_PRECONDITION
// under another KEK, DATA_LOSS when it does not authenticate).
absl::StatusOr<std::vector<uint8_t>> OpenSealedRow(const RecordSealer& sealer, const char magic[4],
                                                   const std::string& sealed,
                                                   const std::string& what);

class PgBackend {
 public:
  // Connects (retrying with backoff for up to start_timeout_ms), applies the schema migrations
  // (under an advisory lock, so replicas starting together do not race) and creates the manifest
  // row when there is none. FAILED_PRECONDITION for a schema newer than this build knows, or a
  // manifest sealed under another KEK.
  static absl::StatusOr<std::unique_ptr<PgBackend>> Open(const std::string& dsn,
                                                         const RecordSealer& sealer,
                                                         int64_t start_timeout_ms);
  ~PgBackend();

  // --- The write connection (callers serialize: KeyStore's write_mu). Reconnects when needed.
  absl::Status Begin();          // BEGIN
  absl::Status BeginSnapshot();  // BEGIN a read-only REPEATABLE READ transaction (one snapshot)
  // Reads every owner's manifest (decoded and checked against the root) as one; for_update:
  // SELECT ... FOR UPDATE of the root (in a change).
  absl::StatusOr<Manifest> ReadManifest(bool for_update);
  absl::StatusOr<uint64_t> ReadCounter();  // the plaintext counter column of the root
  // In a change: locks the root row (SELECT ... FOR UPDATE) and returns its counter column.
  absl::StatusOr<uint64_t> LockCounter();
  // Upserts one record row: a row already there for (owner, key_id, version) is not listed in
  // the manifest (the caller holds the manifest lock and checked), so it is dead and replaced.
  absl::Status PutRecord(const PgRecordRow& row);
  absl::Status DeleteRecord(const std::string& owner, const std::string& key_id, uint32_t version);
  // Seals m, owner's keys only (m.counter must be the stored counter + 1), as owner's manifest
  // row (removed when m lists no key), and updates the root. Costs with owner's keys and the
  // number of owners, not with the other owners' keys.
  absl::Status WriteManifest(const std::string& owner, const Manifest& m);
  absl::Status Commit(uint64_t counter);  // NOTIFY pqcd_keys '<counter>'; COMMIT
  void Rollback();                        // best effort
  // The rows of these (owner, key_id, version) triples (absent ones are left out).
  absl::StatusOr<std::vector<PgRecordRow>> FetchRecords(
      const std::vector<std::tuple<std::string, std::string, uint32_t>>& which);

  // --- The listening connection (one thread: KeyStore's sync thread).
  // Waits until a notification arrives, timeout_ms passes, or Wake() is called. Connects and
  // LISTENs first when needed; UNAVAILABLE when the database cannot be reached (then it has
  // already waited up to timeout_ms, so callers can loop on it as their backoff).
  absl::Status WaitForChange(int timeout_ms);
  void Wake();  // makes a WaitForChange return now (thread-safe)

  uint64_t reconnects() const { return reconnects_.load(std::memory_order_relaxed); }
  bool listening() const { return listening_.load(std::memory_order_relaxed); }
  const std::string& redacted_dsn() const { return redacted_dsn_; }

 private:
  PgBackend(std::string dsn, const RecordSealer& sealer);
  absl::Status EnsureWriteConn();
  absl::Status Migrate();  // migration.cc, with SplitManifestByOwner
  absl::Status EnsureManifestRow();
  // Schema 1 -> 2 (inside Migrate's transaction): the one manifest row becomes owner rows and a
  // root.
  absl::Status SplitManifestByOwner();
  absl::StatusOr<ManifestRoot> ReadRoot(bool for_update);
  absl::Status WriteRoot(const ManifestRoot& root, uint64_t previous_counter);
  absl::StatusOr<PgResult> Exec(const std::string& sql, const std::vector<PgParam>& params = {});
  void WaitOnWakeFd(int timeout_ms);

  std::string dsn_;
  std::string redacted_dsn_;
  const RecordSealer& sealer_;
  std::unique_ptr<PgConn> write_;
  bool in_tx_ = false;
  bool write_connected_once_ = false;  // a later connection counts as a reconnection
  bool listen_connected_once_ = false;
  std::unique_ptr<PgConn> listen_;
  int wake_fd_ = -1;  // eventfd
  std::atomic<uint64_t> reconnects_{0};
  std::atomic<bool> listening_{false};
};

}  // namespace pqcd::server::internal
