// KeyStore: the daemon's server-held private keys.
//
// On disk (<data_dir>/keys/, see record_codec.h for the byte layouts):
//  - one sealed file per key version, <owner tag>.<key_id>.v<N>.key, where the owner tag is the hex
//    of the first 16 bytes of SHA-256(owner) (the owner itself is inside the authenticated record;
//    a file whose name does not match its authenticated content is rejected). One file per version
//    rather than an append-only log: each change is one atomic rename or unlink, a damaged file
//    affects exactly one key version, and deleted key material really leaves the disk;
//  - MANIFEST.<owner tag>, one per owner, sealed under a key derived from the KEK (distinct from
//    the record key): the owner, a counter that grows with every rewrite, and for every live key of
//    that owner its id, highest version ever held (so version numbers are never reused, also
//    across restarts) and the uid of each live version's record. A record file is loaded only when
//    its owner's manifest lists its (key_id, version, uid): a deleted record put back from a
//    backup is reported and not loaded (nor deleted). Manifest entries without a loadable file are
//    reported too. The owner's manifest is rewritten atomically (temporary file, fsync, rename,
//    directory fsync) by every Create/AddVersion/Delete of that owner, and only that one, so a
//    change costs with its owner's keys, not with everyone's; it is the commit point (written
//    before a new record file, and before deleted files are unlinked). Records of an owner without
//    a manifest file fail Open, as a missing manifest did; an owner left without keys keeps an
//    empty one (a crash may leave its records behind) until an Open finds none of its records.
//  - MANIFEST (earlier layout: every owner in one file) is converted at Open: the per-owner files
//    are written from it, then it is removed. While it exists it is the manifest, and per-owner
//    files beside it are the leftovers of a conversion cut short (rewritten or removed).
//  - ROTATION, only while a KEK rotation is unfinished (RotateKek): a sealed journal naming the old
//    and the new KEK's check values. Open refuses the directory while it exists.
//  - Legacy directories (written before per-owner ids: <key_id>.v<N>.key records of format 1 and
//    <key_id>.v<N>.retired markers, no MANIFEST) are migrated at Open: each record is re-sealed
//    with owner = migrate_owner(old owner) under its new name, then the manifest is written (with
//    the markers' version numbers as high-water marks), then the old files are removed. A crash
//    part-way is finished by the next Open: where both forms of a record exist the new one wins and
//    the old one is removed.
// Key ids are restricted to [A-Za-z0-9._-] and never start with '.', so names never collide with
// our temporary files (".tmp-*"), "." or "..". Writes go to keys/.tmp-<random> (O_EXCL, 0600), are
// fsync'ed and renamed into place (renameat2 RENAME_NOREPLACE for records), and the directory is
// fsync'ed before the call returns. A LOCK file (flock) keeps a second process out of the
// directory. Errors reading the directory or the manifest (other than "not found") fail Open
// rather than loading a state that might include deleted versions.
//
// Locking: write_mu serializes mutations, including their disk I/O; mu (a reader/writer lock)
// guards the in-memory map and is held exclusively only for the short in-memory commit, so Get/List
// run concurrently and never wait for an fsync. (std::shared_mutex rather than absl::Mutex: the
// system absl is not built with TSan, which then cannot see absl's synchronization.)
#include "keystore/key_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "keystore/pg_backend.h"
#include "keystore/record_codec.h"
#include "openssl/rand.h"
#include "spdlog/spdlog.h"

namespace pqcd::server {
namespace {

using internal::KeyFileKind;
using internal::Manifest;
using internal::ManifestKey;
using internal::OpenFailure;
using internal::RecordMeta;
using internal::RecordSealer;
using Id = std::pair<std::string, std::string>;  // (owner, key_id)

constexpr char kKeysSubdir[] = "keys";
constexpr char kTempPrefix[] = ".tmp-";
constexpr char kManifestName[] = "MANIFEST";
constexpr char kJournalName[] = "ROTATION";
using internal::kManifestMagic;
constexpr char kJournalMagic[4] = {'P', 'Q', 'K', 'R'};
constexpr uint32_t kDefaultPageSize = 100;
constexpr uint32_t kMaxPageSize = 1000;
// Test-only (documented in RotateKek): _exit(137) after re-sealing this many records.
constexpr char kRotateAbortEnv[] = "PQCD_TEST_ROTATE_ABORT_AFTER";

absl::Status ValidateKeyId(const std::string& key_id) {
  if (internal::IsValidKeyId(key_id)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "key_id must be 1..128 characters of [A-Za-z0-9._-] and must not start with '.'");
}

std::string Errno(int err) {
  return std::strerror(err);
}

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

absl::Status FsyncFd(int fd, const std::string& what) {
  while (fsync(fd) != 0) {
    if (errno == EINTR) continue;
    return absl::InternalError(absl::StrCat("fsync ", what, ": ", Errno(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& what) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return absl::InternalError(absl::StrCat("write ", what, ": ", Errno(errno)));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

// Reads a whole regular file (at most max_bytes) relative to dir_fd. NOT_FOUND only for ENOENT.
// O_NONBLOCK: a FIFO (or a device) planted in place of a record or the MANIFEST must not block
// the open until a writer appears; it is then refused by the S_ISREG check below. (Reads of a
// regular file ignore O_NONBLOCK.)
absl::StatusOr<std::vector<uint8_t>> ReadRecordFile(int dir_fd, const std::string& name,
                                                    size_t max_bytes = internal::kMaxRecordBytes) {
  Fd fd(openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return absl::NotFoundError("no such file");
    return absl::InternalError(absl::StrCat("cannot open: ", Errno(errno)));
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return absl::InternalError(absl::StrCat("cannot stat: ", Errno(errno)));
  }
  if (!S_ISREG(st.st_mode)) return absl::InternalError("not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::InternalError(absl::StrCat("too large (", st.st_size, " bytes)"));
  }
  std::vector<uint8_t> buf(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < buf.size()) {
    const ssize_t r = read(fd.get(), buf.data() + got, buf.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::InternalError(absl::StrCat("read error: ", Errno(errno)));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  buf.resize(got);
  return buf;
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool LabelsMatch(const std::map<std::string, std::string>& labels,
                 const std::map<std::string, std::string>& selector) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

absl::Status NotFound(const std::string& key_id) {
  return absl::NotFoundError(absl::StrCat("key '", key_id, "' not found"));
}

absl::Status NotFound(const std::string& key_id, uint32_t version) {
  return absl::NotFoundError(absl::StrCat("key '", key_id, "' version ", version, " not found"));
}

absl::Status NotLocked() {
  return absl::ResourceExhaustedError(
      "the private key could not be locked in memory (mlock failed: RLIMIT_MEMLOCK exhausted?); "
      "it was not stored. Raise the limit (ulimit -l, LimitMEMLOCK=) or grant CAP_IPC_LOCK");
}

absl::StatusOr<std::string> RandomUid() {
  std::string uid(internal::kUidBytes, '\0');
  if (RAND_bytes(reinterpret_cast<uint8_t*>(uid.data()), static_cast<int>(uid.size())) != 1) {
    return absl::InternalError("RAND_bytes failed");
  }
  return uid;
}

std::string Describe(const Id& id, uint32_t version) {
  return absl::StrCat("owner '", id.first, "' key '", id.second, "' v", version);
}

// Writes bytes durably to dir/final_name: temporary file, fsync, rename (without replacing an
// existing file unless `replace`), directory fsync. EEXIST -> ALREADY_EXISTS.
absl::Status WriteFileAtomic(int dir_fd, const std::string& dir, const std::string& final_name,
                             const std::vector<uint8_t>& bytes, bool replace) {
  uint8_t rnd[8];
  if (RAND_bytes(rnd, sizeof rnd) != 1) return absl::InternalError("RAND_bytes failed");
  std::string tmp_name = kTempPrefix;
  for (uint8_t b : rnd) absl::StrAppend(&tmp_name, absl::Hex(b, absl::kZeroPad2));
  const std::string what = absl::StrCat(dir, "/", final_name);
  Fd fd(
      openat(dir_fd, tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) {
    return absl::InternalError(absl::StrCat("create temporary file in ", dir, ": ", Errno(errno)));
  }
  auto cleanup_tmp = [&] { (void)unlinkat(dir_fd, tmp_name.c_str(), 0); };
  absl::Status st = WriteAll(fd.get(), bytes.data(), bytes.size(), what);
  if (st.ok()) st = FsyncFd(fd.get(), what);
  if (st.ok() && close(fd.Release()) != 0) {  // closed explicitly so an error is seen
    st = absl::InternalError(absl::StrCat("close ", what, ": ", Errno(errno)));
  }
  if (!st.ok()) {
    cleanup_tmp();
    return st;
  }
  int rc;
  if (replace) {
    rc = renameat(dir_fd, tmp_name.c_str(), dir_fd, final_name.c_str());
  } else {
    rc = renameat2(dir_fd, tmp_name.c_str(), dir_fd, final_name.c_str(), RENAME_NOREPLACE);
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
      // File system without RENAME_NOREPLACE: check, then rename (we hold the directory lock).
      if (faccessat(dir_fd, final_name.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        rc = -1;
      } else {
        rc = renameat(dir_fd, tmp_name.c_str(), dir_fd, final_name.c_str());
      }
    }
  }
  if (rc != 0) {
    const int err = errno;
    cleanup_tmp();
    if (err == EEXIST) return absl::AlreadyExistsError(what);
    return absl::InternalError(absl::StrCat("rename into ", what, ": ", Errno(err)));
  }
  return FsyncFd(dir_fd, dir);
}

// Page tokens: hex of u32 owner length | owner | key_id (the last key of the previous page).
std::string EncodePageToken(const Id& last) {
  std::string raw;
  const uint32_t n = static_cast<uint32_t>(last.first.size());
  for (int i = 0; i < 4; ++i) raw.push_back(static_cast<char>(n >> (8 * i)));
  raw += last.first;
  raw += last.second;
  return absl::BytesToHexString(raw);
}

bool DecodePageToken(const std::string& token, Id* last) {
  if (token.size() % 2 != 0 || token.size() > 4096) return false;
  for (char c : token) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  const std::string raw = absl::HexStringToBytes(token);
  if (raw.size() < 4) return false;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
  if (n > raw.size() - 4) return false;
  last->first = raw.substr(4, n);
  last->second = raw.substr(4 + n);
  return internal::IsValidKeyId(last->second);
}

std::vector<uint8_t> JournalPayload(const RecordSealer& old_kek, const RecordSealer& new_kek) {
  std::vector<uint8_t> p(old_kek.kek_check().begin(), old_kek.kek_check().end());
  p.insert(p.end(), new_kek.kek_check().begin(), new_kek.kek_check().end());
  return p;
}

}  // namespace

struct KeyStore::Impl {
  struct Entry {
    std::string owner;
    std::string key_id;
    int algorithm = 0;
    uint32_t high_water = 0;  // highest version ever held: numbers are not reused
    std::map<uint32_t, KeyRecord> versions;
    std::map<uint32_t, std::string> uids;  // record uid of each version (persistent stores)
  };

  bool persistent = false;
  uint32_t max_keys_per_owner = 0;
  uint32_t max_versions_per_key = 0;
  size_t max_locked_bytes_per_owner = 0;
  size_t max_plain_bytes_per_owner = 0;
  std::string keys_dir;  // for messages
  Fd keys_dir_fd;
  Fd lock_fd;
  std::unique_ptr<RecordSealer> sealer;                // seals new records and the manifest
  std::unique_ptr<RecordSealer> old_sealer;            // RotateKek only: the KEK being replaced
  std::vector<std::pair<Id, uint32_t>> under_old_kek;  // RotateKek: records to re-seal

  std::mutex write_mu;            // serializes Create/AddVersion/Delete (held across disk I/O)
  uint64_t manifest_counter = 0;  // guarded by write_mu
  // File store: the owner tags that have a MANIFEST.<tag> file, and whether the single MANIFEST of
  // the layout before per-owner manifests is still there. Guarded by write_mu.
  std::set<std::string> shard_tags;
  bool single_manifest = false;
  mutable std::shared_mutex mu;
  std::map<Id, Entry> keys;                 // guarded by mu
  std::map<std::string, size_t> per_owner;  // keys per owner; guarded by mu
  size_t count = 0;                         // versions; guarded by mu

  std::atomic<uint64_t> memlock_refusals{0};
  mutable std::atomic<uint64_t> quota_refusals{0};  // counted by const checks too
  std::atomic<uint64_t> unprepared{0};
  std::function<absl::StatusOr<SecretBytes>(int, const SecretBytes&)> prepare_private_key;

  // PostgreSQL store (options.postgres_dsn): the database is the truth, the map above its cache.
  // Changes run inside a database transaction that holds the manifest row (BeginChange brings the
  // cache up to date first, so the checks below see every replica's changes); a thread follows
  // changes made elsewhere (SyncLoop).
  std::unique_ptr<internal::PgBackend> pg;
  uint64_t pending_counter = 0;  // guarded by write_mu: the counter the change in progress commits
  int64_t reconcile_interval_ms = 2000;
  int64_t max_staleness_ms = 30000;
  std::function<void(bool)> on_serving_change;
  std::atomic<int64_t> last_sync_ms{0};  // steady clock, of the last successful synchronization
  std::atomic<bool> sync_ok{false};
  std::atomic<uint64_t> syncs{0};
  std::atomic<bool> stop{false};
  std::thread sync_thread;
  bool serving_reported = true;  // sync thread only

  ~Impl() { StopSync(); }

  void StopSync() {
    if (!sync_thread.joinable()) return;
    stop.store(true);
    pg->Wake();
    sync_thread.join();
  }

  void MarkSynced() {
    last_sync_ms.store(SteadyMs(), std::memory_order_relaxed);
    sync_ok.store(true, std::memory_order_relaxed);
  }

  bool Stale() const {
    return pg != nullptr && max_staleness_ms > 0 &&
           SteadyMs() - last_sync_ms.load(std::memory_order_relaxed) > max_staleness_ms;
  }

  // Starts a change (write_mu held). Postgres: BEGIN, lock the manifest row, catch up with it.
  absl::Status BeginChange() {
    if (pg == nullptr) return absl::OkStatus();
    if (auto st = pg->Begin(); !st.ok()) return st;
    // The root row's lock serializes writers; the owners' rows are read only when another
    // replica changed something since this one last synchronized.
    auto counter = pg->LockCounter();
    absl::Status st = counter.status();
    if (st.ok() && *counter != manifest_counter) {
      st = NotRolledBack(*counter);
      if (st.ok()) {
        auto m = pg->ReadManifest(/*for_update=*/false);
        st = m.ok() ? ApplyManifest(*m) : m.status();
      }
    }
    if (!st.ok()) {
      pg->Rollback();
      return st;
    }
    pending_counter = manifest_counter;
    return absl::OkStatus();
  }

  // Ends a change whose writes all succeeded (write_mu held). Postgres: NOTIFY, COMMIT.
  absl::Status CommitChange() {
    if (pg == nullptr) return absl::OkStatus();
    if (auto st = pg->Commit(pending_counter); !st.ok()) return st;
    manifest_counter = pending_counter;
    MarkSynced();
    return absl::OkStatus();
  }

  void AbortChange() {
    if (pg != nullptr) pg->Rollback();
  }

  // Rolls a change back unless it was committed (file stores: nothing to do).
  struct ChangeGuard {
    Impl& impl;
    bool committed = false;
    ~ChangeGuard() {
      if (!committed) impl.AbortChange();
    }
  };

  // Brings the cache to the database's manifest m (write_mu held): loads the listed versions it
  // lacks (checking each row against its sealed metadata and the manifest's uid), drops what m
  // no longer lists. A manifest older than one already applied is refused (the database was
  // rolled back to an earlier state: deleted keys might come back).
  absl::Status ApplyManifest(const Manifest& m);
  // DATA_LOSS when the database's counter is older than one already applied (write_mu held).
  absl::Status NotRolledBack(uint64_t counter) const {
    if (counter >= manifest_counter) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat(
        "the key store database's manifest went back from #", manifest_counter, " to #", counter,
        ": the database was restored to an earlier state; refusing it (deleted keys could come "
        "back). Restart the replicas once this is intended"));
  }
  // One synchronization from the sync thread (takes write_mu).
  void SyncOnce();
  void SyncLoop();
  void UpdateServing();

  // The manifest as the cache holds it: every key, or (owner given) only that owner's keys, which
  // is all a change of that owner rewrites.
  Manifest Snapshot(const std::string* owner = nullptr) const {
    Manifest m;
    std::shared_lock lock(mu);
    const auto add = [&](const Id& id, const Entry& e) {
      ManifestKey& k = m.keys[id];
      k.high_water = e.high_water;
      k.versions = e.uids;
    };
    if (owner != nullptr) {
      for (auto it = keys.lower_bound(Id{*owner, ""});
           it != keys.end() && it->first.first == *owner; ++it) {
        add(it->first, it->second);
      }
    } else {
      for (const auto& [id, e] : keys) add(id, e);
    }
    return m;
  }

  // Seals and durably writes the manifest (write_mu held). The database: `owner`'s manifest row and
  // the root, inside the change's transaction. The file store: with `owner`, that owner's file
  // MANIFEST.<tag> (m
  // lists only its keys; an owner left with none keeps an empty one, so that its records, should
  // a crash leave some, are reported rather than refused); without, every owner's file, then the
  // files of owners m no longer lists and the single MANIFEST of the older layout go.
  absl::Status WriteManifest(Manifest m, const std::string* owner = nullptr) {
    m.counter = manifest_counter + 1;
    if (pg != nullptr) {  // inside the change's transaction; counted at CommitChange
      if (owner == nullptr) return absl::InternalError("a database change without its owner");
      if (auto st = pg->WriteManifest(*owner, m); !st.ok()) return st;
      pending_counter = m.counter;
      return absl::OkStatus();
    }
    if (owner != nullptr) {
      if (auto st = WriteShard(*owner, m); !st.ok()) return st;
      manifest_counter = m.counter;
      return absl::OkStatus();
    }
    const uint64_t counter = m.counter;
    const std::map<std::string, Manifest> by_owner = internal::SplitByOwner(std::move(m));
    std::set<std::string> written;
    for (const auto& [o, part] : by_owner) {
      if (auto st = WriteShard(o, part); !st.ok()) return st;
      written.insert(internal::OwnerTag(o));
    }
    const std::set<std::string> before = shard_tags;
    for (const std::string& tag : before) {
      if (!written.contains(tag)) {
        RemoveFile(internal::ManifestShardNameForTag(tag));
        shard_tags.erase(tag);
      }
    }
    if (single_manifest) RemoveFile(kManifestName);
    if (auto st = FsyncFd(keys_dir_fd.get(), keys_dir); !st.ok()) return st;
    single_manifest = false;
    manifest_counter = counter;
    return absl::OkStatus();
  }

  // Seals and durably replaces keys/MANIFEST.<owner tag> with m (only that owner's keys).
  absl::Status WriteShard(const std::string& owner, const Manifest& m) {
    auto sealed =
        sealer->SealBlob(internal::kManifestShardMagic, internal::EncodeManifestShard(owner, m));
    if (!sealed.ok()) return sealed.status();
    if (auto st = WriteFileAtomic(keys_dir_fd.get(), keys_dir,
                                  internal::MakeManifestShardName(owner), *sealed, true);
        !st.ok()) {
      return st;
    }
    shard_tags.insert(internal::OwnerTag(owner));
    return absl::OkStatus();
  }

  // Seals and durably writes one record. Called with write_mu held, mu not held.
  absl::Status Persist(const KeyRecord& rec, const std::string& uid, bool replace) {
    RecordMeta meta{rec.key_id, rec.version, rec.algorithm,  rec.created_unix_ms,
                    rec.owner,  rec.labels,  rec.public_key, uid};
    auto sealed = sealer->Seal(meta, *rec.private_key);
    if (!sealed.ok()) return sealed.status();
    if (pg != nullptr) {
      return pg->PutRecord(
          {rec.owner, rec.key_id, rec.version, uid, std::string(sealed->begin(), sealed->end())});
    }
    const std::string name = internal::MakeKeyFileName(rec.owner, rec.key_id, rec.version);
    absl::Status st = WriteFileAtomic(keys_dir_fd.get(), keys_dir, name, *sealed, replace);
    if (st.code() == absl::StatusCode::kAlreadyExists) {
      return absl::FailedPreconditionError(
          absl::StrCat(keys_dir, "/", name,
                       " already exists on disk but was not loaded (see the load report at "
                       "start-up); move it away to reuse this key id/version"));
    }
    return st;
  }

  void RemoveFile(const std::string& name) {
    if (unlinkat(keys_dir_fd.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      spdlog::warn("key store: cannot remove {}/{}: {}", keys_dir, name, Errno(errno));
    }
  }

  // Whether e may take one more version (max_versions_per_key, version numbers left); a refusal
  // by the limit is counted. mu held by the caller.
  absl::Status RoomForVersion(const Entry& e) const {
    if (e.high_water == std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("key '", e.key_id, "' has no versions left"));
    }
    if (max_versions_per_key != 0 && e.versions.size() >= max_versions_per_key) {
      quota_refusals.fetch_add(1, std::memory_order_relaxed);
      return absl::ResourceExhaustedError(absl::StrCat(
          "key '", e.key_id, "' holds ", e.versions.size(), " versions (the limit, ",
          max_versions_per_key, ", --max-versions-per-key); delete old versions first"));
    }
    return absl::OkStatus();
  }

  // Whether owner's versions have room for `rec` (not yet held): the locked bytes of its private
  // key and prepared form against max_locked_bytes_per_owner, and its ordinary bytes (public key,
  // labels, names) against max_plain_bytes_per_owner. The sums are taken over that owner's keys
  // only. A refusal is counted. Takes mu shared.
  absl::Status RoomForVersionBytes(const std::string& owner, const KeyRecord& rec) const {
    if (max_locked_bytes_per_owner == 0 && max_plain_bytes_per_owner == 0) return absl::OkStatus();
    size_t locked = 0, plain = 0;
    {
      std::shared_lock lock(mu);
      for (auto it = keys.lower_bound(Id{owner, std::string()});
           it != keys.end() && it->first.first == owner; ++it) {
        for (const auto& [v, kr] : it->second.versions) {
          locked += LockedBytes(kr);
          plain += PlainBytes(kr);
        }
      }
    }
    if (max_locked_bytes_per_owner != 0 && locked + LockedBytes(rec) > max_locked_bytes_per_owner) {
      quota_refusals.fetch_add(1, std::memory_order_relaxed);
      return absl::ResourceExhaustedError(absl::StrCat(
          "this identity's held keys take ", locked, " bytes of locked memory and this version ",
          LockedBytes(rec), " more, past the limit per identity (", max_locked_bytes_per_owner,
          " bytes, --locked-memory-per-owner); delete keys or old versions first"));
    }
    if (max_plain_bytes_per_owner != 0 && plain + PlainBytes(rec) > max_plain_bytes_per_owner) {
      quota_refusals.fetch_add(1, std::memory_order_relaxed);
      return absl::ResourceExhaustedError(absl::StrCat(
          "this identity's held keys take ", plain,
          " bytes of memory for public keys and labels and this version ", PlainBytes(rec),
          " more, past the limit per identity (", max_plain_bytes_per_owner,
          " bytes, --key-memory-per-owner); delete keys or old versions, or use fewer labels"));
    }
    return absl::OkStatus();
  }
  static size_t LockedBytes(const KeyRecord& kr) {
    return (kr.private_key ? kr.private_key->size() : 0) + (kr.prepared ? kr.prepared->size() : 0);
  }
  // What a version takes beside its secrets: public key, labels, names, and the map node (256).
  static size_t PlainBytes(const KeyRecord& kr) {
    size_t n = 256 + kr.public_key.size() + kr.key_id.size() + kr.owner.size();
    for (const auto& [k, v] : kr.labels) n += k.size() + v.size() + 64;
    return n;
  }

  // The record of owner/key_id, version 0 = newest (mu held shared or exclusively by the caller):
  // NOT_FOUND, or UNAVAILABLE while a postgres store is past its staleness limit.
  absl::StatusOr<const KeyRecord*> FindForUse(const std::string& owner, const std::string& key_id,
                                              uint32_t version) const;

  // The prepared form of kr's private key (prepare_private_key), kept only when it is locked.
  absl::Status Prepare(KeyRecord& kr) {
    if (!prepare_private_key) return absl::OkStatus();
    auto p = prepare_private_key(kr.algorithm, *kr.private_key);
    if (!p.ok()) return p.status();
    if (p->empty()) return absl::OkStatus();
    if (!p->locked()) {
      if (unprepared.fetch_add(1, std::memory_order_relaxed) == 0) {
        spdlog::warn(
            "key store: the prepared form of a held key could not be locked in memory "
            "(RLIMIT_MEMLOCK too low?): such keys are served from their stored form, expanded at "
            "every use (counted in pqcd_held_keys_unprepared_total)");
      }
      return absl::OkStatus();
    }
    kr.prepared = std::make_shared<const SecretBytes>(std::move(*p));
    return absl::OkStatus();
  }

  // A loaded record, prepared; a record that cannot be prepared is kept without (and reported).
  KeyRecord ToRecord(internal::OpenResult&& rec, const std::string& owner) {
    KeyRecord kr = ToPlainRecord(std::move(rec), owner);
    if (absl::Status st = Prepare(kr); !st.ok()) {
      unprepared.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("key store: {}: not prepared ({}); served from its stored form",
                   Describe({kr.owner, kr.key_id}, kr.version), std::string(st.message()));
    }
    return kr;
  }

  static KeyRecord ToPlainRecord(internal::OpenResult&& rec, const std::string& owner) {
    RecordMeta& m = rec.meta;
    KeyRecord kr;
    kr.key_id = std::move(m.key_id);
    kr.version = m.version;
    kr.algorithm = m.algorithm;
    kr.created_unix_ms = m.created_unix_ms;
    kr.labels = std::move(m.labels);
    kr.owner = owner;
    kr.public_key = std::move(m.public_key);
    kr.private_key = std::make_shared<const SecretBytes>(std::move(rec.private_key));
    return kr;
  }

  // Adds a loaded record to the map (Open: single-threaded; otherwise with mu held exclusively).
  void Insert(KeyRecord kr, std::string uid) {
    const Id id{kr.owner, kr.key_id};
    auto [it, inserted] = keys.try_emplace(id);
    Entry& e = it->second;
    if (inserted) {
      e.owner = id.first;
      e.key_id = id.second;
      e.algorithm = kr.algorithm;
      ++per_owner[id.first];
    }
    e.high_water = std::max(e.high_water, kr.version);
    e.uids[kr.version] = std::move(uid);
    e.versions.emplace(kr.version, std::move(kr));
    ++count;
  }

  static absl::StatusOr<std::unique_ptr<KeyStore>> OpenImpl(const KeyStoreOptions& options,
                                                            LoadReport& rep,
                                                            const std::string* rotate_to);
  absl::Status OpenPostgres(const KeyStoreOptions& options, LoadReport& rep);
  // Problems found by the last ApplyManifest (write_mu held), for the load report.
  std::vector<std::string> apply_problems;
};

KeyStore::KeyStore() : impl_(std::make_unique<Impl>()) {}

KeyStore::~KeyStore() {
  if (!impl_) return;
  impl_->StopSync();  // no synchronization may refill the map below
  // Drop every held key now (each SecretBytes wipes itself when its last reference goes).
  std::map<Id, Impl::Entry> doomed;
  {
    std::unique_lock lock(impl_->mu);
    doomed.swap(impl_->keys);
    impl_->per_owner.clear();
    impl_->count = 0;
  }
}

bool KeyStore::persistent() const {
  return impl_->persistent;
}

KeyStoreHealth KeyStore::health() const {
  KeyStoreHealth h;
  const Impl& impl = *impl_;
  if (impl.pg == nullptr) {
    h.backend = impl.persistent ? "file" : "memory";
    return h;
  }
  h.backend = "postgres";
  h.up = impl.sync_ok.load(std::memory_order_relaxed) && impl.pg->listening();
  h.serving = !impl.Stale();
  h.sync_age_s = (SteadyMs() - impl.last_sync_ms.load(std::memory_order_relaxed)) / 1000.0;
  h.reconnects = impl.pg->reconnects();
  h.syncs = impl.syncs.load(std::memory_order_relaxed);
  return h;
}

absl::Status KeyStore::Impl::OpenPostgres(const KeyStoreOptions& options, LoadReport& rep) {
  if (!internal::IsPostgresUri(options.postgres_dsn)) {
    return absl::InvalidArgumentError(
        "the PostgreSQL key store needs a postgres:// or postgresql:// URI");
  }
  if (!options.data_dir.empty()) {
    return absl::InvalidArgumentError(
        "a data directory and a PostgreSQL key store exclude each other (to move the keys of a "
        "data directory into the database, use --import-data-dir)");
  }
  if (options.kek_file.empty()) {
    return absl::InvalidArgumentError("the PostgreSQL key store needs a KEK file (--kek-file)");
  }
  {
    auto kek = internal::LoadKek(options.kek_file, options.allow_shared_kek_file);
    if (!kek.ok()) return kek.status();
    sealer = std::make_unique<RecordSealer>(*kek);
  }
  reconcile_interval_ms = std::max<int64_t>(options.reconcile_interval_ms, 10);
  max_staleness_ms = std::max<int64_t>(options.max_staleness_ms, 0);
  on_serving_change = options.on_serving_change;
  persistent = true;
  auto backend = internal::PgBackend::Open(options.postgres_dsn, *sealer, options.start_timeout_ms);
  if (!backend.ok()) return backend.status();
  pg = std::move(*backend);
  {
    std::lock_guard write_lock(write_mu);
    if (auto st = pg->BeginSnapshot(); !st.ok()) return st;
    auto m = pg->ReadManifest(/*for_update=*/false);
    absl::Status st = m.status();
    if (st.ok()) st = ApplyManifest(*m);
    pg->Rollback();
    if (!st.ok()) return st;
    rep.problems = std::move(apply_problems);
    apply_problems.clear();
  }
  MarkSynced();
  {
    std::shared_lock lock(mu);
    rep.loaded = count;
  }
  rep.corrupted = rep.problems.size();
  rep.manifest_counter = manifest_counter;  // (ApplyManifest logged each problem)
  spdlog::info(
      "key store: PostgreSQL {}: loaded {} key versions ({} problem(s); manifest #{}); reconcile "
      "every {} ms, max staleness {} ms",
      pg->redacted_dsn(), rep.loaded, rep.problems.size(), manifest_counter, reconcile_interval_ms,
      max_staleness_ms);
  sync_thread = std::thread([this] { SyncLoop(); });
  return absl::OkStatus();
}

absl::Status KeyStore::Impl::ApplyManifest(const Manifest& m) {
  if (auto st = NotRolledBack(m.counter); !st.ok()) return st;
  using Triple = std::tuple<std::string, std::string, uint32_t>;
  std::vector<Triple> need;
  {
    std::shared_lock lock(mu);
    for (const auto& [id, mk] : m.keys) {
      auto it = keys.find(id);
      for (const auto& [v, uid] : mk.versions) {
        if (it == keys.end()) {
          need.emplace_back(id.first, id.second, v);
          continue;
        }
        auto u = it->second.uids.find(v);
        if (u == it->second.uids.end() || u->second != uid)
          need.emplace_back(id.first, id.second, v);
      }
    }
  }
  std::map<Triple, std::pair<KeyRecord, std::string>> loaded;
  std::vector<std::string> problems;
  if (!need.empty()) {
    auto rows = pg->FetchRecords(need);
    if (!rows.ok()) return rows.status();
    for (internal::PgRecordRow& row : *rows) {
      auto mk = m.keys.find({row.owner, row.key_id});
      if (mk == m.keys.end()) continue;  // not listed: dead (deleted, or put back from a backup)
      auto listed = mk->second.versions.find(row.version);
      if (listed == mk->second.versions.end() || listed->second != row.uid) continue;
      const Id id{row.owner, row.key_id};
      internal::OpenResult opened =
          sealer->Open(reinterpret_cast<const uint8_t*>(row.sealed.data()), row.sealed.size());
      row.sealed.clear();
      if (opened.failure != OpenFailure::kNone) {
        problems.push_back(absl::StrCat(Describe(id, row.version),
                                        ": database record does not open: ", opened.reason));
        continue;
      }
      const RecordMeta& meta = opened.meta;
      if (meta.owner != row.owner || meta.key_id != row.key_id || meta.version != row.version ||
          meta.uid != listed->second) {
        problems.push_back(absl::StrCat(
            Describe(id, row.version),
            ": database record's sealed owner, id, version or uid differs from its row (moved "
            "or swapped in the database); not loaded"));
        continue;
      }
      if (!opened.private_key.locked()) {
        problems.push_back(absl::StrCat(Describe(id, row.version),
                                        ": the private key could not be locked in memory "
                                        "(RLIMIT_MEMLOCK too low?); not loaded"));
        continue;
      }
      loaded.emplace(Triple{row.owner, row.key_id, row.version},
                     std::pair{ToRecord(std::move(opened), row.owner), listed->second});
    }
  }
  std::vector<std::shared_ptr<const SecretBytes>> doomed;  // released after the lock
  {
    std::unique_lock lock(mu);
    for (auto it = keys.begin(); it != keys.end();) {
      auto mk = m.keys.find(it->first);
      Entry& e = it->second;
      for (auto v = e.versions.begin(); v != e.versions.end();) {
        const bool keep = mk != m.keys.end() && mk->second.versions.contains(v->first) &&
                          mk->second.versions.at(v->first) == e.uids.at(v->first);
        if (keep) {
          ++v;
          continue;
        }
        doomed.push_back(std::move(v->second.private_key));
        doomed.push_back(std::move(v->second.prepared));
        e.uids.erase(v->first);
        v = e.versions.erase(v);
        --count;
      }
      if (e.versions.empty()) {
        if (--per_owner[it->first.first] == 0) per_owner.erase(it->first.first);
        it = keys.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [t, rec_uid] : loaded) {
      auto& [rec, uid] = rec_uid;
      const Id id{std::get<0>(t), std::get<1>(t)};
      auto it = keys.find(id);
      if (it != keys.end() && it->second.algorithm != rec.algorithm) {
        problems.push_back(absl::StrCat(Describe(id, rec.version),
                                        ": algorithm differs from the key's other versions"));
        continue;
      }
      Insert(std::move(rec), std::move(uid));
    }
    for (const auto& [id, mk] : m.keys) {
      auto it = keys.find(id);
      if (it != keys.end()) it->second.high_water = mk.high_water;
      for (const auto& [v, uid] : mk.versions) {
        if (it == keys.end() || !it->second.versions.contains(v)) {
          if (!loaded.contains(Triple{id.first, id.second, v})) {
            problems.push_back(absl::StrCat(Describe(id, v),
                                            ": listed in the database's manifest but its record "
                                            "row is missing or could not be loaded"));
          }
        }
      }
    }
  }
  doomed.clear();
  manifest_counter = m.counter;
  for (const auto& p : problems) spdlog::warn("key store: {}", p);
  apply_problems = std::move(problems);
  return absl::OkStatus();
}

void KeyStore::Impl::SyncOnce() {
  std::lock_guard write_lock(write_mu);
  absl::Status st;
  auto counter = pg->ReadCounter();
  st = counter.status();
  if (st.ok() && *counter != manifest_counter) st = NotRolledBack(*counter);
  if (st.ok() && *counter != manifest_counter) {
    // One snapshot for the manifest and the rows, so a change committed meanwhile by another
    // replica cannot make listed rows look missing.
    st = pg->BeginSnapshot();
    if (st.ok()) {
      auto m = pg->ReadManifest(/*for_update=*/false);
      st = m.status();
      if (st.ok()) st = ApplyManifest(*m);
      pg->Rollback();
      if (st.ok()) syncs.fetch_add(1, std::memory_order_relaxed);
    }
  }
  const bool was_ok = sync_ok.load(std::memory_order_relaxed);
  if (st.ok()) {
    MarkSynced();
    if (!was_ok) spdlog::info("key store: synchronized with the database again");
  } else {
    sync_ok.store(false, std::memory_order_relaxed);
    if (was_ok) spdlog::warn("key store: synchronization failed: {}", std::string(st.message()));
  }
}

void KeyStore::Impl::UpdateServing() {
  const bool serving = !Stale();
  if (serving == serving_reported) return;
  serving_reported = serving;
  if (serving) {
    spdlog::info("key store: held keys are served again");
  } else {
    spdlog::error(
        "key store: no synchronization with the database for more than {} ms: held keys are not "
        "used until it is reachable again",
        max_staleness_ms);
  }
  if (on_serving_change) on_serving_change(serving);
}

void KeyStore::Impl::SyncLoop() {
  int backoff_ms = 100;
  bool listen_ok = true;
  while (!stop.load()) {
    const int wait_ms = listen_ok ? static_cast<int>(reconcile_interval_ms) : backoff_ms;
    absl::Status st = pg->WaitForChange(wait_ms);
    if (stop.load()) break;
    if (!st.ok()) {
      if (listen_ok) {
        spdlog::warn("key store: lost the database's notifications: {} (retrying with backoff)",
                     std::string(st.message()));
      }
      listen_ok = false;
      sync_ok.store(false, std::memory_order_relaxed);
      backoff_ms = std::min(backoff_ms * 2, 5000);
      UpdateServing();
      continue;
    }
    listen_ok = true;
    backoff_ms = 100;
    SyncOnce();
    UpdateServing();
  }
}

size_t KeyStore::size() const {
  std::shared_lock lock(impl_->mu);
  return impl_->count;
}

size_t KeyStore::KeyCount(const std::string& owner) const {
  std::shared_lock lock(impl_->mu);
  auto it = impl_->per_owner.find(owner);
  return it == impl_->per_owner.end() ? 0 : it->second;
}

KeyStoreCounters KeyStore::counters() const {
  return {impl_->memlock_refusals.load(), impl_->quota_refusals.load(), impl_->unprepared.load()};
}

absl::StatusOr<std::unique_ptr<KeyStore>> KeyStore::Open(const KeyStoreOptions& options,
                                                         LoadReport* report) {
  LoadReport local_report;
  LoadReport& rep = report != nullptr ? *report : local_report;
  rep = LoadReport{};
  return Impl::OpenImpl(options, rep, nullptr);
}

absl::StatusOr<std::unique_ptr<KeyStore>> KeyStore::Impl::OpenImpl(const KeyStoreOptions& options,
                                                                   LoadReport& rep,
                                                                   const std::string* rotate_to) {
  std::unique_ptr<KeyStore> store(new KeyStore());
  Impl& impl = *store->impl_;
  impl.max_keys_per_owner = options.max_keys_per_owner;
  impl.max_locked_bytes_per_owner = options.max_locked_bytes_per_owner;
  impl.max_plain_bytes_per_owner = options.max_plain_bytes_per_owner;
  impl.max_versions_per_key = options.max_versions_per_key;
  impl.prepare_private_key = options.prepare_private_key;
  if (!options.postgres_dsn.empty()) {
    if (rotate_to != nullptr) {
      return absl::UnimplementedError(
          "KEK rotation of a PostgreSQL key store is not supported yet "
          "(docs/key-store-postgres.md, \"KEK rotation\")");
    }
    if (auto st = impl.OpenPostgres(options, rep); !st.ok()) return st;
    return store;
  }
  if (options.data_dir.empty()) {
    if (!options.kek_file.empty()) {
      spdlog::warn("key store: kek_file is set but data_dir is not; keys are held in memory only");
    }
    return store;
  }
  if (options.kek_file.empty()) {
    return absl::InvalidArgumentError("key store: kek_file is required when data_dir is set");
  }
  {
    auto kek = internal::LoadKek(options.kek_file, options.allow_shared_kek_file);
    if (!kek.ok()) return kek.status();
    impl.sealer = std::make_unique<RecordSealer>(*kek);
  }  // the KEK itself is wiped here; only the derived keys stay
  if (rotate_to != nullptr) {
    auto kek = internal::LoadKek(*rotate_to, options.allow_shared_kek_file);
    if (!kek.ok()) return kek.status();
    impl.old_sealer = std::move(impl.sealer);
    impl.sealer = std::make_unique<RecordSealer>(*kek);
    if (impl.sealer->kek_check() == impl.old_sealer->kek_check()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the new KEK in ", *rotate_to, " is the KEK in ", options.kek_file));
    }
  }

  namespace fs = std::filesystem;
  const fs::path data_dir(options.data_dir);
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create data directory ", options.data_dir, ": ", ec.message()));
  }
  Fd data_fd(open(options.data_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!data_fd.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open data directory ", options.data_dir, ": ", Errno(errno)));
  }
  impl.lock_fd = Fd(openat(data_fd.get(), "LOCK", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!impl.lock_fd.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", options.data_dir, "/LOCK: ", Errno(errno)));
  }
  if (flock(impl.lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("data directory ", options.data_dir,
                                                      " is in use by another key store (",
                                                      Errno(errno), ")"));
  }
  if (mkdirat(data_fd.get(), kKeysSubdir, 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", options.data_dir, "/keys: ", Errno(errno)));
  }
  if (auto st = FsyncFd(data_fd.get(), options.data_dir); !st.ok()) return st;
  impl.keys_dir = (data_dir / kKeysSubdir).string();
  impl.keys_dir_fd =
      Fd(openat(data_fd.get(), kKeysSubdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!impl.keys_dir_fd.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", impl.keys_dir, ": ", Errno(errno)));
  }
  impl.persistent = true;
  const int dir_fd = impl.keys_dir_fd.get();
  auto fail = [&](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat("key store ", impl.keys_dir, ": ", why));
  };

  // Scan keys/. A read error fails Open (it could hide records or legacy markers).
  std::vector<std::string> names;
  {
    DIR* dir = fdopendir(dup(dir_fd));
    if (dir == nullptr) return fail(absl::StrCat("cannot list: ", Errno(errno)));
    for (;;) {
      errno = 0;
      dirent* de = readdir(dir);
      if (de == nullptr) {
        const int err = errno;
        closedir(dir);
        if (err != 0) return fail(absl::StrCat("cannot list: ", Errno(err)));
        break;
      }
      std::string name = de->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
  }
  std::sort(names.begin(), names.end());

  // The sealed manifest: one file per owner, MANIFEST.<owner tag>, or the single MANIFEST of the
  // layout before per-owner files, which wins over per-owner files beside it (the leftovers of an
  // interrupted conversion, replaced below). Neither: a legacy or new directory. Any error but
  // "not found" is fatal: loading without it could bring deleted records back.
  std::optional<Manifest> manifest;
  bool manifest_under_old = false;
  std::set<std::string> empty_shards;  // owner tags whose file lists no key
  // The payload of the sealed blob `name`; nullopt when there is no such file.
  const auto read_blob =
      [&](const std::string& name,
          const char magic[4]) -> absl::StatusOr<std::optional<std::vector<uint8_t>>> {
    auto bytes = ReadRecordFile(dir_fd, name, internal::kMaxManifestBytes);
    if (!bytes.ok()) {
      if (bytes.status().code() == absl::StatusCode::kNotFound) return std::nullopt;
      return fail(absl::StrCat("cannot read ", name, ": ", bytes.status().message()));
    }
    std::vector<uint8_t> plain;
    std::string reason;
    OpenFailure f = impl.sealer->OpenBlob(magic, bytes->data(), bytes->size(), &plain, &reason);
    if (f == OpenFailure::kWrongKek && impl.old_sealer != nullptr) {
      f = impl.old_sealer->OpenBlob(magic, bytes->data(), bytes->size(), &plain, &reason);
      if (f == OpenFailure::kNone) manifest_under_old = true;
    }
    if (f == OpenFailure::kWrongKek) {
      return fail(absl::StrCat(name, " is sealed under a different key-encryption key: ",
                               "wrong KEK? (", options.kek_file, ")"));
    }
    if (f != OpenFailure::kNone) {
      return fail(
          absl::StrCat(name, ": ", reason, "; restore it from a backup (nothing was loaded)"));
    }
    return plain;
  };
  {
    auto single = read_blob(kManifestName, kManifestMagic);
    if (!single.ok()) return single.status();
    if (*single) {
      Manifest m;
      if (!internal::DecodeManifestPayload((*single)->data(), (*single)->size(), &m)) {
        return fail(absl::StrCat(kManifestName, ": authenticated but unparsable"));
      }
      impl.single_manifest = true;
      manifest = std::move(m);
    }
    for (const std::string& name : names) {
      const auto tag = internal::ParseManifestShardName(name);
      if (!tag) continue;
      impl.shard_tags.insert(*tag);
      if (impl.single_manifest) continue;
      auto blob = read_blob(name, internal::kManifestShardMagic);
      if (!blob.ok()) return blob.status();
      if (!*blob) return fail(absl::StrCat(name, " vanished while the store was opened"));
      std::string owner;
      Manifest part;
      if (!internal::DecodeManifestShard((*blob)->data(), (*blob)->size(), &owner, &part) ||
          internal::OwnerTag(owner) != *tag) {
        return fail(absl::StrCat(name, ": authenticated but unparsable, or not the manifest of ",
                                 "the owner its name says; restore it from a backup (nothing ",
                                 "was loaded)"));
      }
      if (!manifest) manifest.emplace();
      manifest->counter = std::max(manifest->counter, part.counter);
      if (part.keys.empty()) empty_shards.insert(*tag);
      for (auto& [id, k] : part.keys) manifest->keys.emplace(id, std::move(k));
    }
    if (manifest) impl.manifest_counter = manifest->counter;
  }

  // The rotation journal.
  {
    auto bytes = ReadRecordFile(dir_fd, kJournalName);
    if (!bytes.ok() && bytes.status().code() != absl::StatusCode::kNotFound) {
      return fail(absl::StrCat("cannot read ", kJournalName, ": ", bytes.status().message()));
    }
    const bool journal = bytes.ok();
    if (journal && rotate_to == nullptr) {
      return fail(absl::StrCat("a key-encryption key rotation is unfinished (", kJournalName,
                               " exists); finish it by rerunning pqcd --data-dir ",
                               options.data_dir,
                               " --kek-file OLD_KEK --rotate-kek-to NEW_KEK with the same files"));
    }
    if (rotate_to != nullptr) {
      auto want = JournalPayload(*impl.old_sealer, *impl.sealer);
      if (journal) {
        std::vector<uint8_t> plain;
        std::string reason;
        if (impl.sealer->OpenBlob(kJournalMagic, bytes->data(), bytes->size(), &plain, &reason) !=
                OpenFailure::kNone ||
            plain != want) {
          return fail(absl::StrCat("the unfinished rotation in ", kJournalName,
                                   " is between other KEKs than ", options.kek_file, " and ",
                                   *rotate_to));
        }
      } else if (!manifest || manifest_under_old) {
        auto sealed = impl.sealer->SealBlob(kJournalMagic, want);
        if (!sealed.ok()) return sealed.status();
        if (auto st = WriteFileAtomic(dir_fd, impl.keys_dir, kJournalName, *sealed, true);
            !st.ok()) {
          return st;
        }
      }
    }
  }

  struct Loaded {
    std::string name;
    internal::OpenResult rec;
    bool under_old = false;
  };
  std::vector<Loaded> current, legacy;             // by file name form
  std::map<std::string, uint32_t> legacy_markers;  // key id -> highest marked version
  std::vector<std::string> legacy_marker_names;
  size_t auth_failed = 0, wrong_kek = 0;
  auto skip = [&](const std::string& name, const std::string& why) {
    ++rep.corrupted;
    rep.problems.push_back(absl::StrCat(kKeysSubdir, "/", name, ": ", why));
  };
  for (const std::string& name : names) {
    if (name == kManifestName || name == kJournalName) continue;
    if (internal::ParseManifestShardName(name)) continue;
    if (name.starts_with(kTempPrefix)) {
      if (unlinkat(dir_fd, name.c_str(), 0) == 0) {
        ++rep.temp_files_removed;
      } else {
        spdlog::warn("key store: cannot remove leftover temporary file {}/{}: {}", impl.keys_dir,
                     name, Errno(errno));
      }
      continue;
    }
    if (auto marker = internal::ParseKeyFileName(name, /*legacy=*/true);
        marker && marker->kind == KeyFileKind::kRetired) {
      uint32_t& top = legacy_markers[marker->key_id];
      top = std::max(top, marker->version);
      legacy_marker_names.push_back(name);
      continue;
    }
    if (!internal::ParseKeyFileName(name, false) && !internal::ParseKeyFileName(name, true)) {
      spdlog::warn("key store: ignoring unexpected file {}/{}", impl.keys_dir, name);
      continue;
    }
    auto bytes = ReadRecordFile(dir_fd, name);
    if (!bytes.ok()) {
      skip(name, std::string(bytes.status().message()));
      continue;
    }
    Loaded l{name, impl.sealer->Open(bytes->data(), bytes->size()), false};
    if (l.rec.failure == OpenFailure::kWrongKek && impl.old_sealer != nullptr) {
      l.rec = impl.old_sealer->Open(bytes->data(), bytes->size());
      l.under_old = true;
    }
    if (l.rec.failure != OpenFailure::kNone) {
      if (l.rec.failure == OpenFailure::kWrongKek || l.rec.failure == OpenFailure::kAuthFailed) {
        ++auth_failed;
      }
      if (l.rec.failure == OpenFailure::kWrongKek) ++wrong_kek;
      skip(name, l.rec.reason);
      continue;
    }
    const RecordMeta& m = l.rec.meta;
    if (!internal::IsValidKeyId(m.key_id) || m.version == 0) {
      skip(name, "invalid sealed key id/version");
      continue;
    }
    if (l.rec.private_key.empty()) {
      skip(name, "empty private key");
      continue;
    }
    if (name == internal::MakeKeyFileName(m.owner, m.key_id, m.version) && !m.uid.empty()) {
      current.push_back(std::move(l));
    } else if (name == internal::MakeLegacyKeyFileName(m.key_id, m.version, KeyFileKind::kRecord)) {
      legacy.push_back(std::move(l));
    } else {
      skip(name, "file name does not match the sealed owner/key id/version");
    }
  }
  if (rep.temp_files_removed > 0) {
    if (auto st = FsyncFd(dir_fd, impl.keys_dir); !st.ok()) return st;
  }
  if (!manifest && current.empty() && legacy.empty() && auth_failed > 0) {
    return fail(absl::StrCat("none of the ", rep.corrupted, " key records could be authenticated (",
                             wrong_kek, " sealed under a different key-encryption key, ",
                             auth_failed - wrong_kek, " failed the integrity check): wrong KEK?"));
  }

  auto migrated_owner = [&](const std::string& owner) {
    return options.migrate_owner ? options.migrate_owner(owner) : owner;
  };
  auto unlisted = [&](const std::string& name, const std::string& why) {
    rep.unlisted.push_back(absl::StrCat(kKeysSubdir, "/", name));
    rep.problems.push_back(
        absl::StrCat(kKeysSubdir, "/", name, ": ", why, "; not loaded (left in place)"));
  };
  // Accepted records, and what to do with the legacy files.
  std::vector<std::pair<Loaded*, std::string>> accepted;  // record, its uid
  std::vector<Loaded*> to_migrate;
  std::vector<std::string> legacy_to_remove = legacy_marker_names;
  std::set<std::tuple<std::string, std::string, uint32_t>> current_ids;  // accepted new-form
  if (manifest && !impl.single_manifest) {
    // Every owner with records has its manifest file: one that went missing is restored, not
    // taken for "this owner holds nothing".
    std::map<std::string, size_t> orphaned;  // owner tag -> records
    for (const Loaded& l : current) {
      const std::string tag = internal::OwnerTag(l.rec.meta.owner);
      if (!impl.shard_tags.contains(tag)) ++orphaned[tag];
      empty_shards.erase(tag);
    }
    if (!orphaned.empty()) {
      const auto& [tag, n] = *orphaned.begin();
      return fail(absl::StrCat(internal::ManifestShardNameForTag(tag), " is missing but ", n,
                               " record file(s) of its owner exist (", orphaned.size(),
                               " owner(s) in all); restore it from a backup (nothing was loaded)"));
    }
  }
  if (manifest) {
    for (Loaded& l : current) {
      const RecordMeta& m = l.rec.meta;
      auto k = manifest->keys.find({m.owner, m.key_id});
      const std::string* uid = nullptr;
      if (k != manifest->keys.end()) {
        auto v = k->second.versions.find(m.version);
        if (v != k->second.versions.end()) uid = &v->second;
      }
      if (uid == nullptr || *uid != m.uid) {
        unlisted(l.name, uid == nullptr ? "not in the manifest (deleted; restored from a backup?)"
                                        : "not the record instance the manifest lists (an older "
                                          "copy restored from a backup?)");
        continue;
      }
      accepted.emplace_back(&l, m.uid);
      current_ids.emplace(m.owner, m.key_id, m.version);
    }
    for (Loaded& l : legacy) {
      const RecordMeta& m = l.rec.meta;
      if (current_ids.contains({migrated_owner(m.owner), m.key_id, m.version})) {
        legacy_to_remove.push_back(l.name);  // a migration finished up to the removal
      } else {
        unlisted(l.name, "legacy record not in the manifest");
      }
    }
  } else {
    // Legacy (or new) directory: new-form files are accepted only as the leftovers of an
    // interrupted migration, i.e. next to their legacy form.
    std::set<std::tuple<std::string, std::string, uint32_t>> legacy_ids;
    for (const Loaded& l : legacy) {
      legacy_ids.emplace(migrated_owner(l.rec.meta.owner), l.rec.meta.key_id, l.rec.meta.version);
    }
    if (!current.empty() && legacy.empty()) {
      return fail(absl::StrCat("the manifest (", kManifestName,
                               ".<owner tag> files) is missing but ", current.size(),
                               " owner-qualified record file(s) exist; restore it from a backup "
                               "(nothing was loaded)"));
    }
    for (Loaded& l : current) {
      const RecordMeta& m = l.rec.meta;
      if (!legacy_ids.contains({m.owner, m.key_id, m.version})) {
        unlisted(l.name, "no manifest and no legacy form of this record");
        continue;
      }
      accepted.emplace_back(&l, m.uid);
      current_ids.emplace(m.owner, m.key_id, m.version);
    }
    for (Loaded& l : legacy) {
      const RecordMeta& m = l.rec.meta;
      if (!current_ids.contains({migrated_owner(m.owner), m.key_id, m.version})) {
        to_migrate.push_back(&l);
      }
      legacy_to_remove.push_back(l.name);
    }
  }

  // Never hold a key in swappable memory.
  size_t unlocked = 0;
  for (const auto& [l, uid] : accepted) unlocked += !l->rec.private_key.locked();
  for (const Loaded* l : to_migrate) unlocked += !l->rec.private_key.locked();
  if (unlocked > 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "key store ", impl.keys_dir, ": ", unlocked,
        " private key(s) could not be locked in memory (mlock failed: RLIMIT_MEMLOCK too low?); "
        "raise the limit (ulimit -l, LimitMEMLOCK=) or grant CAP_IPC_LOCK"));
  }

  // Load the accepted records.
  for (auto& [l, uid] : accepted) {
    const RecordMeta& m = l->rec.meta;
    const Id id{m.owner, m.key_id};
    auto it = impl.keys.find(id);
    if (it != impl.keys.end() && it->second.algorithm != m.algorithm) {
      skip(l->name, "algorithm differs from the key's other versions");
      continue;
    }
    if (l->under_old) impl.under_old_kek.emplace_back(id, m.version);
    impl.Insert(impl.ToRecord(std::move(l->rec), id.first), uid);
    ++rep.loaded;
  }

  if (manifest) {
    for (const auto& [id, k] : manifest->keys) {
      auto it = impl.keys.find(id);
      for (const auto& [version, uid] : k.versions) {
        if (it == impl.keys.end() || !it->second.versions.contains(version)) {
          rep.missing.push_back(Describe(id, version));
          rep.problems.push_back(absl::StrCat(
              Describe(id, version), ": listed in the manifest but its record file (", kKeysSubdir,
              "/", internal::MakeKeyFileName(id.first, id.second, version),
              ") is missing or could not be loaded"));
        }
      }
      if (it != impl.keys.end()) {
        it->second.high_water = std::max(it->second.high_water, k.high_water);
      }
    }
    // The single MANIFEST becomes per-owner files, listing exactly what it listed (also versions
    // reported missing, as every change keeps them until the next one of their owner). Then the
    // files of owners with neither keys nor records go.
    if (impl.single_manifest) {
      if (auto st = impl.WriteManifest(*manifest); !st.ok()) return st;
    } else if (!empty_shards.empty()) {
      for (const std::string& tag : empty_shards) {
        impl.RemoveFile(internal::ManifestShardNameForTag(tag));
        impl.shard_tags.erase(tag);
      }
      if (auto st = FsyncFd(dir_fd, impl.keys_dir); !st.ok()) return st;
    }
  } else {
    // Migrate: new-form records first, then the manifest, then the old files go.
    for (Loaded* l : to_migrate) {
      RecordMeta& m = l->rec.meta;
      const Id id{migrated_owner(m.owner), m.key_id};
      auto it = impl.keys.find(id);
      if (it != impl.keys.end() && it->second.algorithm != m.algorithm) {
        skip(l->name, "algorithm differs from the key's other versions");
        std::erase(legacy_to_remove, l->name);
        continue;
      }
      auto uid = RandomUid();
      if (!uid.ok()) return uid.status();
      KeyRecord rec = impl.ToRecord(std::move(l->rec), id.first);
      if (auto st = impl.Persist(rec, *uid, /*replace=*/false); !st.ok()) {
        return fail(absl::StrCat("migrating ", l->name, ": ", st.message()));
      }
      impl.Insert(std::move(rec), *uid);
      ++rep.loaded;
      ++rep.migrated;
    }
    // Markers of retired version numbers (legacy key ids were global: one owner each).
    for (auto& [id, e] : impl.keys) {
      auto marker = legacy_markers.find(id.second);
      if (marker != legacy_markers.end()) {
        e.high_water = std::max(e.high_water, marker->second);
      }
    }
    if (auto st = impl.WriteManifest(impl.Snapshot()); !st.ok()) return st;
  }
  if (!legacy_to_remove.empty()) {
    for (const std::string& name : legacy_to_remove) impl.RemoveFile(name);
    if (auto st = FsyncFd(dir_fd, impl.keys_dir); !st.ok()) return st;
  }
  rep.manifest_counter = impl.manifest_counter;

  for (const auto& p : rep.problems) spdlog::warn("key store: {}", p);
  spdlog::info(
      "key store: loaded {} key versions from {} ({} skipped, {} not in the manifest, {} missing, "
      "{} migrated, {} temporary files removed; manifest #{})",
      rep.loaded, impl.keys_dir, rep.corrupted, rep.unlisted.size(), rep.missing.size(),
      rep.migrated, rep.temp_files_removed, rep.manifest_counter);
  return store;
}

absl::Status KeyStore::ImportFileStore(const KeyStoreOptions& from, const KeyStoreOptions& to,
                                       ImportReport* report) {
  ImportReport local;
  ImportReport& rep = report != nullptr ? *report : local;
  rep = ImportReport{};
  if (from.data_dir.empty() || !from.postgres_dsn.empty()) {
    return absl::InvalidArgumentError("the import source must be a data directory");
  }
  if (to.postgres_dsn.empty() || !to.data_dir.empty()) {
    return absl::InvalidArgumentError("the import target must be a PostgreSQL key store");
  }
  LoadReport loaded;
  auto src = Open(from, &loaded);
  if (!src.ok()) return src.status();
  if (!loaded.problems.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the data directory ", from.data_dir, " reported ", loaded.problems.size(),
        " problem(s) at load (see the log); fix them before importing so that nothing is lost"));
  }
  KeyStoreOptions target = to;
  target.max_keys_per_owner = 0;  // an import copies what exists; quotas apply to new keys
  target.max_versions_per_key = 0;
  target.max_locked_bytes_per_owner = 0;
  target.max_plain_bytes_per_owner = 0;
  auto dst = Open(target);
  if (!dst.ok()) return dst.status();
  Impl& s = *(*src)->impl_;
  Impl& d = *(*dst)->impl_;
  std::vector<Impl::Entry> entries;
  {
    std::shared_lock lock(s.mu);
    for (const auto& [id, e] : s.keys) entries.push_back(e);
  }
  for (const Impl::Entry& e : entries) {
    const Id id{e.owner, e.key_id};
    std::lock_guard write_lock(d.write_mu);
    if (auto st = d.BeginChange(); !st.ok()) return st;
    Impl::ChangeGuard change{d};
    {
      std::shared_lock lock(d.mu);
      auto it = d.keys.find(id);
      if (it != d.keys.end()) {
        if (it->second.uids == e.uids) {
          ++rep.keys_already_present;
        } else {
          rep.conflicts.push_back(absl::StrCat(
              "owner '", e.owner, "' key '", e.key_id,
              "': the database holds this key with other versions or records; not copied"));
        }
        continue;
      }
    }
    Manifest m = d.Snapshot(&e.owner);
    ManifestKey& k = m.keys[id];
    k.high_water = e.high_water;
    k.versions = e.uids;
    if (auto st = d.WriteManifest(std::move(m), &e.owner); !st.ok()) return st;
    for (const auto& [v, rec] : e.versions) {
      if (auto st = d.Persist(rec, e.uids.at(v), /*replace=*/true); !st.ok()) return st;
    }
    if (auto st = d.CommitChange(); !st.ok()) return st;
    change.committed = true;
    {
      std::unique_lock lock(d.mu);
      for (const auto& [v, rec] : e.versions) d.Insert(rec, e.uids.at(v));
      d.keys[id].high_water = e.high_water;
    }
    ++rep.keys_copied;
    rep.versions_copied += e.versions.size();
  }
  return absl::OkStatus();
}

absl::Status KeyStore::RotateKek(const KeyStoreOptions& options, const std::string& new_kek_file,
                                 LoadReport* report) {
  LoadReport local_report;
  LoadReport& rep = report != nullptr ? *report : local_report;
  rep = LoadReport{};
  if (options.data_dir.empty() || options.kek_file.empty() || new_kek_file.empty()) {
    return absl::InvalidArgumentError("KEK rotation needs a data directory, its KEK and a new KEK");
  }
  auto store = Impl::OpenImpl(options, rep, &new_kek_file);
  if (!store.ok()) return store.status();
  Impl& impl = *(*store)->impl_;
  std::lock_guard write_lock(impl.write_mu);
  // Test-only hook (PQCD_TEST_ROTATE_ABORT_AFTER=N): _exit(137) right after N records were
  // re-sealed, like a kill -9 part-way, so that tests can check that a rerun completes the work.
  long abort_after = -1;
  if (const char* env = std::getenv(kRotateAbortEnv); env != nullptr && *env != '\0') {
    abort_after = std::strtol(env, nullptr, 10);
  }
  for (const auto& [id, version] : impl.under_old_kek) {
    KeyRecord rec;
    std::string uid;
    {
      std::shared_lock lock(impl.mu);
      const Impl::Entry& e = impl.keys.at(id);
      rec = e.versions.at(version);
      uid = e.uids.at(version);
    }
    if (auto st = impl.Persist(rec, uid, /*replace=*/true); !st.ok()) return st;
    ++rep.resealed;
    if (abort_after >= 0 && rep.resealed >= static_cast<size_t>(abort_after)) _exit(137);
  }
  if (auto st = impl.WriteManifest(impl.Snapshot()); !st.ok()) return st;
  rep.manifest_counter = impl.manifest_counter;
  if (unlinkat(impl.keys_dir_fd.get(), kJournalName, 0) != 0 && errno != ENOENT) {
    return absl::InternalError(
        absl::StrCat("remove ", impl.keys_dir, "/", kJournalName, ": ", Errno(errno)));
  }
  return FsyncFd(impl.keys_dir_fd.get(), impl.keys_dir);
}

absl::StatusOr<KeyRecord> KeyStore::Create(const std::string& owner, const std::string& key_id,
                                           int algorithm, std::vector<uint8_t> public_key,
                                           SecretBytes private_key,
                                           std::map<std::string, std::string> labels) {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  if (private_key.empty()) return absl::InvalidArgumentError("private key is empty");
  Impl& impl = *impl_;
  std::lock_guard write_lock(impl.write_mu);
  if (auto st = impl.BeginChange(); !st.ok()) return st;
  Impl::ChangeGuard change{impl};
  {
    std::shared_lock lock(impl.mu);
    if (impl.keys.contains({owner, key_id})) {
      return absl::AlreadyExistsError(absl::StrCat("key '", key_id, "' already exists"));
    }
    auto n = impl.per_owner.find(owner);
    if (impl.max_keys_per_owner != 0 && n != impl.per_owner.end() &&
        n->second >= impl.max_keys_per_owner) {
      impl.quota_refusals.fetch_add(1, std::memory_order_relaxed);
      return absl::ResourceExhaustedError(
          absl::StrCat("this identity already holds ", n->second, " keys, the limit per identity (",
                       impl.max_keys_per_owner, ", --max-keys-per-owner); delete a key first"));
    }
  }
  if (!private_key.locked()) {
    impl.memlock_refusals.fetch_add(1, std::memory_order_relaxed);
    return NotLocked();
  }
  KeyRecord rec;
  rec.key_id = key_id;
  rec.version = 1;
  rec.algorithm = algorithm;
  rec.created_unix_ms = NowUnixMs();
  rec.labels = std::move(labels);
  rec.owner = owner;
  rec.public_key = std::move(public_key);
  rec.private_key = std::make_shared<const SecretBytes>(std::move(private_key));
  if (auto st = impl.Prepare(rec); !st.ok()) return st;
  if (auto st = impl.RoomForVersionBytes(owner, rec); !st.ok()) return st;
  std::string uid;
  if (impl.persistent) {
    auto u = RandomUid();
    if (!u.ok()) return u.status();
    uid = std::move(*u);
    // The manifest first: a crash before the record is written leaves a "missing" entry (reported
    // at Open, dropped at the next change), never an unlisted record that blocks the id.
    Manifest m = impl.Snapshot(&owner);
    ManifestKey& k = m.keys[{owner, key_id}];
    k.high_water = 1;
    k.versions[1] = uid;
    if (auto st = impl.WriteManifest(std::move(m), &owner); !st.ok()) return st;
    if (auto st = impl.Persist(rec, uid, /*replace=*/false); !st.ok()) {
      // best effort: take the entry back (a database change is rolled back as a whole)
      if (impl.pg == nullptr) (void)impl.WriteManifest(impl.Snapshot(&owner), &owner);
      return st;
    }
    if (auto st = impl.CommitChange(); !st.ok()) return st;
    change.committed = true;
  }
  std::unique_lock lock(impl.mu);
  Impl::Entry& e = impl.keys[{owner, key_id}];
  e.owner = owner;
  e.key_id = key_id;
  e.algorithm = algorithm;
  e.high_water = 1;
  e.versions.emplace(1, rec);
  if (impl.persistent) e.uids.emplace(1, std::move(uid));
  ++impl.per_owner[owner];
  ++impl.count;
  return rec;
}

absl::StatusOr<KeyRecord> KeyStore::AddVersion(const std::string& owner, const std::string& key_id,
                                               std::vector<uint8_t> public_key,
                                               SecretBytes private_key) {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  Impl& impl = *impl_;
  std::lock_guard write_lock(impl.write_mu);
  if (auto st = impl.BeginChange(); !st.ok()) return st;
  Impl::ChangeGuard change{impl};
  KeyRecord rec;
  {
    std::shared_lock lock(impl.mu);
    auto it = impl.keys.find({owner, key_id});
    if (it == impl.keys.end()) return NotFound(key_id);
    const Impl::Entry& e = it->second;
    if (auto st = impl.RoomForVersion(e); !st.ok()) return st;
    rec.key_id = key_id;
    rec.version = e.high_water + 1;
    rec.algorithm = e.algorithm;
    rec.owner = owner;
    rec.labels = e.versions.rbegin()->second.labels;  // labels carry over to the new version
  }
  if (private_key.empty()) return absl::InvalidArgumentError("private key is empty");
  if (!private_key.locked()) {
    impl.memlock_refusals.fetch_add(1, std::memory_order_relaxed);
    return NotLocked();
  }
  rec.created_unix_ms = NowUnixMs();
  rec.public_key = std::move(public_key);
  rec.private_key = std::make_shared<const SecretBytes>(std::move(private_key));
  if (auto st = impl.Prepare(rec); !st.ok()) return st;
  if (auto st = impl.RoomForVersionBytes(owner, rec); !st.ok()) return st;
  std::string uid;
  if (impl.persistent) {
    auto u = RandomUid();
    if (!u.ok()) return u.status();
    uid = std::move(*u);
    Manifest m = impl.Snapshot(&owner);
    ManifestKey& k = m.keys[{owner, key_id}];
    k.high_water = rec.version;
    k.versions[rec.version] = uid;
    if (auto st = impl.WriteManifest(std::move(m), &owner); !st.ok()) return st;
    if (auto st = impl.Persist(rec, uid, /*replace=*/false); !st.ok()) {
      if (impl.pg == nullptr) (void)impl.WriteManifest(impl.Snapshot(&owner), &owner);
      return st;
    }
    if (auto st = impl.CommitChange(); !st.ok()) return st;
    change.committed = true;
  }
  std::unique_lock lock(impl.mu);
  Impl::Entry& e = impl.keys[{owner, key_id}];  // still present: mutations hold write_mu
  e.high_water = rec.version;
  e.versions.emplace(rec.version, rec);
  if (impl.persistent) e.uids.emplace(rec.version, std::move(uid));
  ++impl.count;
  return rec;
}

absl::StatusOr<const KeyRecord*> KeyStore::Impl::FindForUse(const std::string& owner,
                                                            const std::string& key_id,
                                                            uint32_t version) const {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  if (Stale()) {
    return absl::UnavailableError(absl::StrCat(
        "the key store has not reached its database for more than ", max_staleness_ms / 1000.0,
        " s (--key-store-max-staleness): held keys are not used until it has"));
  }
  auto it = keys.find({owner, key_id});
  if (it == keys.end()) return NotFound(key_id);
  const auto& versions = it->second.versions;
  auto v = version == 0 ? std::prev(versions.end()) : versions.find(version);
  if (v == versions.end()) return NotFound(key_id, version);
  return &v->second;
}

absl::Status KeyStore::CheckRoomForVersion(const std::string& owner,
                                           const std::string& key_id) const {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  std::shared_lock lock(impl_->mu);
  auto it = impl_->keys.find({owner, key_id});
  if (it == impl_->keys.end()) return NotFound(key_id);
  return impl_->RoomForVersion(it->second);
}

absl::StatusOr<KeyRecord> KeyStore::Get(const std::string& owner, const std::string& key_id,
                                        uint32_t version) const {
  std::shared_lock lock(impl_->mu);
  auto rec = impl_->FindForUse(owner, key_id, version);
  if (!rec.ok()) return rec.status();
  return **rec;
}

absl::StatusOr<HeldKeyUse> KeyStore::Use(const std::string& owner, const std::string& key_id,
                                         uint32_t version, bool want_public_key) const {
  std::shared_lock lock(impl_->mu);
  auto found = impl_->FindForUse(owner, key_id, version);
  if (!found.ok()) return found.status();
  const KeyRecord& rec = **found;
  HeldKeyUse use{rec.version, rec.algorithm, rec.private_key, rec.prepared, {}};
  if (want_public_key) use.public_key = rec.public_key;
  return use;
}

std::vector<uint32_t> KeyStore::Versions(const std::string& owner,
                                         const std::string& key_id) const {
  std::vector<uint32_t> out;
  std::shared_lock lock(impl_->mu);
  auto it = impl_->keys.find({owner, key_id});
  if (it == impl_->keys.end()) return out;
  for (const auto& [v, rec] : it->second.versions) out.push_back(v);
  return out;
}

std::vector<std::string> KeyStore::OwnersOf(const std::string& key_id) const {
  std::vector<std::string> out;
  std::shared_lock lock(impl_->mu);
  for (const auto& [id, e] : impl_->keys) {
    if (id.second == key_id) out.push_back(id.first);
  }
  return out;
}

absl::StatusOr<KeyStore::ListPage> KeyStore::List(
    const std::string* owner, const std::map<std::string, std::string>& label_selector,
    uint32_t page_size, const std::string& page_token) const {
  if (page_size == 0) page_size = kDefaultPageSize;
  page_size = std::min(page_size, kMaxPageSize);
  Id after;
  const bool resume = !page_token.empty();
  if (resume &&
      (!DecodePageToken(page_token, &after) || (owner != nullptr && after.first != *owner))) {
    return absl::InvalidArgumentError("page_token: not a token of this listing");
  }
  ListPage page;
  std::shared_lock lock(impl_->mu);
  auto it = resume ? impl_->keys.upper_bound(after)
                   : (owner != nullptr ? impl_->keys.lower_bound({*owner, std::string()})
                                       : impl_->keys.begin());
  for (; it != impl_->keys.end(); ++it) {
    if (owner != nullptr && it->first.first != *owner) break;
    const KeyRecord& newest = it->second.versions.rbegin()->second;
    if (!LabelsMatch(newest.labels, label_selector)) continue;
    if (page.keys.size() == page_size) {  // one more exists: the page is full
      page.next_page_token = EncodePageToken(after);
      break;
    }
    page.keys.push_back(newest);
    after = it->first;
  }
  return page;
}

absl::StatusOr<uint32_t> KeyStore::Delete(const std::string& owner, const std::string& key_id,
                                          uint32_t version) {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  Impl& impl = *impl_;
  std::lock_guard write_lock(impl.write_mu);
  if (auto st = impl.BeginChange(); !st.ok()) return st;
  Impl::ChangeGuard change{impl};
  const Id id{owner, key_id};
  std::vector<uint32_t> targets;
  {
    std::shared_lock lock(impl.mu);
    auto it = impl.keys.find(id);
    if (it == impl.keys.end()) return NotFound(key_id);
    const Impl::Entry& e = it->second;
    if (version == 0) {
      for (const auto& [v, rec] : e.versions) targets.push_back(v);
    } else if (e.versions.contains(version)) {
      targets.push_back(version);
    } else {
      return NotFound(key_id, version);
    }
  }
  if (impl.persistent) {
    // The manifest is the commit point: once it no longer lists the records they can never load
    // again, even if unlinking them fails or a copy is put back later.
    Manifest m = impl.Snapshot(&owner);
    ManifestKey& k = m.keys[id];
    for (uint32_t v : targets) k.versions.erase(v);
    if (k.versions.empty()) m.keys.erase(id);  // the id may be created afresh, from version 1
    if (impl.pg != nullptr) {
      // One transaction: the rows and their manifest entries go together.
      for (uint32_t v : targets) {
        if (auto st = impl.pg->DeleteRecord(owner, key_id, v); !st.ok()) return st;
      }
      if (auto st = impl.WriteManifest(std::move(m), &owner); !st.ok()) return st;
      if (auto st = impl.CommitChange(); !st.ok()) return st;
      change.committed = true;
    } else {
      if (auto st = impl.WriteManifest(std::move(m), &owner); !st.ok()) return st;
      for (uint32_t v : targets) impl.RemoveFile(internal::MakeKeyFileName(owner, key_id, v));
      if (auto st = FsyncFd(impl.keys_dir_fd.get(), impl.keys_dir); !st.ok()) {
        spdlog::warn("key store: {}",
                     std::string(st.message()));  // committed; the files are dead either way
      }
    }
  }
  std::vector<std::shared_ptr<const SecretBytes>> doomed;  // released after the lock
  {
    std::unique_lock lock(impl.mu);
    auto it = impl.keys.find(id);
    for (uint32_t v : targets) {
      auto rec = it->second.versions.find(v);
      doomed.push_back(std::move(rec->second.private_key));
      doomed.push_back(std::move(rec->second.prepared));
      it->second.versions.erase(rec);
      it->second.uids.erase(v);
      --impl.count;
    }
    if (it->second.versions.empty()) {
      impl.keys.erase(it);
      if (--impl.per_owner[owner] == 0) impl.per_owner.erase(owner);
    }
  }
  doomed.clear();
  return static_cast<uint32_t>(targets.size());
}

}  // namespace pqcd::server
