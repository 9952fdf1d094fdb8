// The file backend (--data-dir): sealed record files and per-owner manifests in <data_dir>/keys/.
// Open and the writes are in file_key_backend.cc, the older layouts it converts at Open in
// migration.cc, KEK rotation in kek_rotation.cc. Internal to pqcd_keystore.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "key_cache.h"
#include "keystore/key_store.h"
#include "keystore/record_codec.h"

namespace pqcd::server::internal {

inline constexpr char kKeysSubdir[] = "keys";
inline constexpr char kTempPrefix[] = ".tmp-";
inline constexpr char kManifestName[] = "MANIFEST";
inline constexpr char kJournalName[] = "ROTATION";

std::string Errno(int err);

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

absl::Status FsyncFd(int fd, const std::string& what);
// Reads a whole regular file (at most max_bytes) relative to dir_fd. NOT_FOUND only for ENOENT.
absl::StatusOr<std::vector<uint8_t>> ReadRecordFile(int dir_fd, const std::string& name,
                                                    size_t max_bytes = kMaxRecordBytes);
// Writes bytes durably to dir/final_name: temporary file, fsync, rename (without replacing an
// existing file unless `replace`), directory fsync. EEXIST -> ALREADY_EXISTS.
absl::Status WriteFileAtomic(int dir_fd, const std::string& dir, const std::string& final_name,
                             const std::vector<uint8_t>& bytes, bool replace);

// migrate_owner, or the identity when there is none.
using OwnerMap = std::function<std::string(const std::string&)>;

// What Open found in keys/, step by step.
struct FileScan {
  struct Loaded {
    std::string name;
    OpenResult rec;
    bool under_old = false;  // opened with the KEK being replaced (RotateKek)
  };
  using Triple = std::tuple<std::string, std::string, uint32_t>;  // owner, key_id, version

  std::vector<std::string> names;  // sorted
  std::optional<Manifest> manifest;
  bool manifest_under_old = false;
  std::set<std::string> empty_shards;              // owner tags whose file lists no key
  std::vector<Loaded> current, legacy;             // by file name form
  std::map<std::string, uint32_t> legacy_markers;  // key id -> highest marked version
  std::vector<std::string> legacy_marker_names;
  size_t auth_failed = 0, wrong_kek = 0;
  // Accepted records (with their uids), legacy records to re-seal, legacy files to remove.
  std::vector<std::pair<Loaded*, std::string>> accepted;
  std::vector<Loaded*> to_migrate;
  std::vector<std::string> legacy_to_remove;
  std::set<Triple> current_ids;  // accepted new-form records

  void Accept(Loaded& l) {
    accepted.emplace_back(&l, l.rec.meta.uid);
    current_ids.emplace(l.rec.meta.owner, l.rec.meta.key_id, l.rec.meta.version);
  }
};

class FileKeyBackend final : public SealedKeyBackend {
 public:
  // Opens options.data_dir and loads it into cache. rotate_to (RotateKek only): the new KEK's
  // file; records and manifests sealed under options.kek_file are then loaded too, and listed in
  // under_old_kek().
  static absl::StatusOr<std::unique_ptr<FileKeyBackend>> Open(const KeyStoreOptions& options,
                                                              KeyCache& cache, LoadReport& rep,
                                                              const std::string* rotate_to);

  KeyStoreHealth health() const override;
  absl::Status RemoveVersions(const std::string& owner, const std::string& key_id,
                              const std::vector<uint32_t>& versions) override;

  // RotateKek (kek_rotation.cc): re-seals the records loaded under the old KEK and every manifest
  // under the new one, then removes the journal.
  absl::Status FinishRotation(LoadReport& rep);

 private:
  explicit FileKeyBackend(KeyCache& cache) : SealedKeyBackend(cache) {}

  absl::Status WriteOwnerManifest(const std::string& owner, Manifest m) override;
  absl::Status PutRecord(const KeyRecord& rec, const std::string& uid, bool replace) override;
  void UndoOwnerManifest(const std::string& owner) override;

  // Writes every owner's file from m, then removes the files of owners m no longer lists and the
  // single MANIFEST of the older layout.
  absl::Status WriteAllManifests(Manifest m);
  // Seals and durably replaces keys/MANIFEST.<owner tag> with m (only that owner's keys).
  absl::Status WriteShard(const std::string& owner, const Manifest& m);
  void RemoveFile(const std::string& name);
  absl::Status Fail(const std::string& why) const;  // FAILED_PRECONDITION naming keys/

  // The steps of Open.
  absl::Status LoadKeks(const KeyStoreOptions& options, const std::string* rotate_to);
  absl::Status OpenDirectory(const std::string& data_dir);
  absl::Status ListNames(FileScan& scan);
  absl::Status ReadManifests(FileScan& scan, const std::string& kek_file);
  absl::StatusOr<std::optional<std::vector<uint8_t>>> ReadBlob(FileScan& scan,
                                                               const std::string& name,
                                                               const char magic[4],
                                                               const std::string& kek_file);
  absl::Status CheckJournal(const FileScan& scan, const KeyStoreOptions& options,
                            const std::string* rotate_to);  // kek_rotation.cc
  absl::Status LoadRecordFiles(FileScan& scan, LoadReport& rep);
  absl::Status AcceptListed(FileScan& scan, LoadReport& rep, const OwnerMap& owner_of);
  absl::Status LoadAccepted(FileScan& scan, LoadReport& rep);
  absl::Status FinishListed(FileScan& scan, LoadReport& rep);
  // migration.cc: the directory has no manifest (legacy or new): what to migrate; re-sealing the
  // legacy records and writing the first manifest; the single MANIFEST into per-owner files.
  absl::Status SelectForMigration(FileScan& scan, LoadReport& rep, const OwnerMap& owner_of);
  absl::Status MigrateLegacy(FileScan& scan, LoadReport& rep, const OwnerMap& owner_of);
  absl::Status ConvertSingleManifest(const Manifest& manifest);

  std::string keys_dir_;  // for messages
  Fd keys_dir_fd_;
  Fd lock_fd_;
  std::unique_ptr<RecordSealer> old_sealer_;  // RotateKek only: the KEK being replaced
  std::vector<std::pair<KeyName, uint32_t>> under_old_kek_;  // RotateKek: records to re-seal
  // The owner tags that have a MANIFEST.<tag> file, and whether the single MANIFEST of the layout
  // before per-owner manifests is still there. Guarded by write_mu.
  std::set<std::string> shard_tags_;
  bool single_manifest_ = false;
};

// Records that could not be used, for the load report.
void Skip(LoadReport& rep, const std::string& name, const std::string& why);
void Unlisted(LoadReport& rep, const std::string& name, const std::string& why);

}  // namespace pqcd::server::internal
