// The file backend (--data-dir + --kek-file): the held keys in <data_dir>/keys/.
//
// On disk (see record_codec.h for the byte layouts):
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
//  - MANIFEST (earlier layout: every owner in one file) and legacy directories (written before
//    per-owner ids) are converted at Open: migration.cc.
//  - ROTATION, only while a KEK rotation is unfinished (RotateKek): kek_rotation.cc. Open refuses
//    the directory while it exists.
// Key ids are restricted to [A-Za-z0-9._-] and never start with '.', so names never collide with
// our temporary files (".tmp-*"), "." or "..". Writes go to keys/.tmp-<random> (O_EXCL, 0600), are
// fsync'ed and renamed into place (renameat2 RENAME_NOREPLACE for records), and the directory is
// fsync'ed before the call returns. A LOCK file (flock) keeps a second process out of the
// directory. Errors reading the directory or the manifest (other than "not found") fail Open
// rather than loading a state that might include deleted versions.
#include "file_key_backend.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "openssl/rand.h"
#include "spdlog/spdlog.h"

namespace pqcd::server::internal {

std::string Errno(int err) {
  return std::strerror(err);
}

absl::Status FsyncFd(int fd, const std::string& what) {
  while (fsync(fd) != 0) {
    if (errno == EINTR) continue;
    return absl::InternalError(absl::StrCat("fsync ", what, ": ", Errno(errno)));
  }
  return absl::OkStatus();
}

namespace {

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

}  // namespace

// O_NONBLOCK: a FIFO (or a device) planted in place of a record or the MANIFEST must not block
// the open until a writer appears; it is then refused by the S_ISREG check below. (Reads of a
// regular file ignore O_NONBLOCK.)
absl::StatusOr<std::vector<uint8_t>> ReadRecordFile(int dir_fd, const std::string& name,
                                                    size_t max_bytes) {
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

void Skip(LoadReport& rep, const std::string& name, const std::string& why) {
  ++rep.corrupted;
  rep.problems.push_back(absl::StrCat(kKeysSubdir, "/", name, ": ", why));
}

void Unlisted(LoadReport& rep, const std::string& name, const std::string& why) {
  rep.unlisted.push_back(absl::StrCat(kKeysSubdir, "/", name));
  rep.problems.push_back(
      absl::StrCat(kKeysSubdir, "/", name, ": ", why, "; not loaded (left in place)"));
}

KeyStoreHealth FileKeyBackend::health() const {
  KeyStoreHealth h;
  h.backend = "file";
  return h;
}

absl::Status FileKeyBackend::Fail(const std::string& why) const {
  return absl::FailedPreconditionError(absl::StrCat("key store ", keys_dir_, ": ", why));
}

// --- Changes.

absl::Status FileKeyBackend::WriteOwnerManifest(const std::string& owner, Manifest m) {
  m.counter = manifest_counter_ + 1;
  if (auto st = WriteShard(owner, m); !st.ok()) return st;
  manifest_counter_ = m.counter;
  return absl::OkStatus();
}

void FileKeyBackend::UndoOwnerManifest(const std::string& owner) {
  (void)WriteOwnerManifest(owner, cache_.Snapshot(&owner));  // best effort: take the entry back
}

absl::Status FileKeyBackend::WriteAllManifests(Manifest m) {
  m.counter = manifest_counter_ + 1;
  const uint64_t counter = m.counter;
  const std::map<std::string, Manifest> by_owner = SplitByOwner(std::move(m));
  std::set<std::string> written;
  for (const auto& [o, part] : by_owner) {
    if (auto st = WriteShard(o, part); !st.ok()) return st;
    written.insert(OwnerTag(o));
  }
  const std::set<std::string> before = shard_tags_;
  for (const std::string& tag : before) {
    if (!written.contains(tag)) {
      RemoveFile(ManifestShardNameForTag(tag));
      shard_tags_.erase(tag);
    }
  }
  if (single_manifest_) RemoveFile(kManifestName);
  if (auto st = FsyncFd(keys_dir_fd_.get(), keys_dir_); !st.ok()) return st;
  single_manifest_ = false;
  manifest_counter_ = counter;
  return absl::OkStatus();
}

absl::Status FileKeyBackend::WriteShard(const std::string& owner, const Manifest& m) {
  auto sealed = sealer_->SealBlob(kManifestShardMagic, EncodeManifestShard(owner, m));
  if (!sealed.ok()) return sealed.status();
  if (auto st = WriteFileAtomic(keys_dir_fd_.get(), keys_dir_, MakeManifestShardName(owner),
                                *sealed, true);
      !st.ok()) {
    return st;
  }
  shard_tags_.insert(OwnerTag(owner));
  return absl::OkStatus();
}

absl::Status FileKeyBackend::PutRecord(const KeyRecord& rec, const std::string& uid, bool replace) {
  auto sealed = Seal(rec, uid);
  if (!sealed.ok()) return sealed.status();
  const std::string name = MakeKeyFileName(rec.owner, rec.key_id, rec.version);
  absl::Status st = WriteFileAtomic(keys_dir_fd_.get(), keys_dir_, name, *sealed, replace);
  if (st.code() == absl::StatusCode::kAlreadyExists) {
    return absl::FailedPreconditionError(
        absl::StrCat(keys_dir_, "/", name,
                     " already exists on disk but was not loaded (see the load report at "
                     "start-up); move it away to reuse this key id/version"));
  }
  return st;
}

absl::Status FileKeyBackend::RemoveVersions(const std::string& owner, const std::string& key_id,
                                            const std::vector<uint32_t>& versions) {
  // The manifest is the commit point: once it no longer lists the records they can never load
  // again, even if unlinking them fails or a copy is put back later.
  if (auto st = WriteOwnerManifest(owner, WithoutVersions(owner, key_id, versions)); !st.ok()) {
    return st;
  }
  for (uint32_t v : versions) RemoveFile(MakeKeyFileName(owner, key_id, v));
  if (auto st = FsyncFd(keys_dir_fd_.get(), keys_dir_); !st.ok()) {
    spdlog::warn("key store: {}",
                 std::string(st.message()));  // committed; the files are dead either way
  }
  return absl::OkStatus();
}

void FileKeyBackend::RemoveFile(const std::string& name) {
  if (unlinkat(keys_dir_fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    spdlog::warn("key store: cannot remove {}/{}: {}", keys_dir_, name, Errno(errno));
  }
}

// --- Open.

absl::StatusOr<std::unique_ptr<FileKeyBackend>> FileKeyBackend::Open(const KeyStoreOptions& options,
                                                                     KeyCache& cache,
                                                                     LoadReport& rep,
                                                                     const std::string* rotate_to) {
  std::unique_ptr<FileKeyBackend> b(new FileKeyBackend(cache));
  if (options.kek_file.empty()) {
    return absl::InvalidArgumentError("key store: kek_file is required when data_dir is set");
  }
  if (auto st = b->LoadKeks(options, rotate_to); !st.ok()) return st;
  if (auto st = b->OpenDirectory(options.data_dir); !st.ok()) return st;
  FileScan scan;
  if (auto st = b->ListNames(scan); !st.ok()) return st;
  if (auto st = b->ReadManifests(scan, options.kek_file); !st.ok()) return st;
  if (auto st = b->CheckJournal(scan, options, rotate_to); !st.ok()) return st;
  if (auto st = b->LoadRecordFiles(scan, rep); !st.ok()) return st;
  const OwnerMap owner_of = [&](const std::string& owner) {
    return options.migrate_owner ? options.migrate_owner(owner) : owner;
  };
  scan.legacy_to_remove = scan.legacy_marker_names;
  if (scan.manifest) {
    if (auto st = b->AcceptListed(scan, rep, owner_of); !st.ok()) return st;
  } else {
    if (auto st = b->SelectForMigration(scan, rep, owner_of); !st.ok()) return st;
  }
  if (auto st = b->LoadAccepted(scan, rep); !st.ok()) return st;
  if (scan.manifest) {
    if (auto st = b->FinishListed(scan, rep); !st.ok()) return st;
  } else {
    if (auto st = b->MigrateLegacy(scan, rep, owner_of); !st.ok()) return st;
  }
  if (!scan.legacy_to_remove.empty()) {
    for (const std::string& name : scan.legacy_to_remove) b->RemoveFile(name);
    if (auto st = FsyncFd(b->keys_dir_fd_.get(), b->keys_dir_); !st.ok()) return st;
  }
  rep.manifest_counter = b->manifest_counter_;

  for (const auto& p : rep.problems) spdlog::warn("key store: {}", p);
  spdlog::info(
      "key store: loaded {} key versions from {} ({} skipped, {} not in the manifest, {} missing, "
      "{} migrated, {} temporary files removed; manifest #{})",
      rep.loaded, b->keys_dir_, rep.corrupted, rep.unlisted.size(), rep.missing.size(),
      rep.migrated, rep.temp_files_removed, rep.manifest_counter);
  return b;
}

absl::Status FileKeyBackend::OpenDirectory(const std::string& data_dir_name) {
  namespace fs = std::filesystem;
  const fs::path data_dir(data_dir_name);
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create data directory ", data_dir_name, ": ", ec.message()));
  }
  Fd data_fd(open(data_dir_name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!data_fd.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open data directory ", data_dir_name, ": ", Errno(errno)));
  }
  lock_fd_ = Fd(openat(data_fd.get(), "LOCK", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock_fd_.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", data_dir_name, "/LOCK: ", Errno(errno)));
  }
  if (flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "data directory ", data_dir_name, " is in use by another key store (", Errno(errno), ")"));
  }
  if (mkdirat(data_fd.get(), kKeysSubdir, 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", data_dir_name, "/keys: ", Errno(errno)));
  }
  if (auto st = FsyncFd(data_fd.get(), data_dir_name); !st.ok()) return st;
  keys_dir_ = (data_dir / kKeysSubdir).string();
  keys_dir_fd_ =
      Fd(openat(data_fd.get(), kKeysSubdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!keys_dir_fd_.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", keys_dir_, ": ", Errno(errno)));
  }
  return absl::OkStatus();
}

// A read error fails Open (it could hide records or legacy markers).
absl::Status FileKeyBackend::ListNames(FileScan& scan) {
  DIR* dir = fdopendir(dup(keys_dir_fd_.get()));
  if (dir == nullptr) return Fail(absl::StrCat("cannot list: ", Errno(errno)));
  for (;;) {
    errno = 0;
    dirent* de = readdir(dir);
    if (de == nullptr) {
      const int err = errno;
      closedir(dir);
      if (err != 0) return Fail(absl::StrCat("cannot list: ", Errno(err)));
      break;
    }
    std::string name = de->d_name;
    if (name != "." && name != "..") scan.names.push_back(std::move(name));
  }
  std::sort(scan.names.begin(), scan.names.end());
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::vector<uint8_t>>> FileKeyBackend::ReadBlob(
    FileScan& scan, const std::string& name, const char magic[4], const std::string& kek_file) {
  auto bytes = ReadRecordFile(keys_dir_fd_.get(), name, kMaxManifestBytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == absl::StatusCode::kNotFound) return std::nullopt;
    return Fail(absl::StrCat("cannot read ", name, ": ", bytes.status().message()));
  }
  std::vector<uint8_t> plain;
  std::string reason;
  OpenFailure f = sealer_->OpenBlob(magic, bytes->data(), bytes->size(), &plain, &reason);
  if (f == OpenFailure::kWrongKek && old_sealer_ != nullptr) {
    f = old_sealer_->OpenBlob(magic, bytes->data(), bytes->size(), &plain, &reason);
    if (f == OpenFailure::kNone) scan.manifest_under_old = true;
  }
  if (f == OpenFailure::kWrongKek) {
    return Fail(absl::StrCat(
        name, " is sealed under a different key-encryption key: ", "wrong KEK? (", kek_file, ")"));
  }
  if (f != OpenFailure::kNone) {
    return Fail(
        absl::StrCat(name, ": ", reason, "; restore it from a backup (nothing was loaded)"));
  }
  return plain;
}

// The sealed manifest: one file per owner, MANIFEST.<owner tag>, or the single MANIFEST of the
// layout before per-owner files, which wins over per-owner files beside it (the leftovers of an
// interrupted conversion, replaced at the end of Open). Neither: a legacy or new directory. Any
// error but "not found" is fatal: loading without it could bring deleted records back.
absl::Status FileKeyBackend::ReadManifests(FileScan& scan, const std::string& kek_file) {
  auto single = ReadBlob(scan, kManifestName, kManifestMagic, kek_file);
  if (!single.ok()) return single.status();
  if (*single) {
    Manifest m;
    if (!DecodeManifestPayload((*single)->data(), (*single)->size(), &m)) {
      return Fail(absl::StrCat(kManifestName, ": authenticated but unparsable"));
    }
    single_manifest_ = true;
    scan.manifest = std::move(m);
  }
  for (const std::string& name : scan.names) {
    const auto tag = ParseManifestShardName(name);
    if (!tag) continue;
    shard_tags_.insert(*tag);
    if (single_manifest_) continue;
    auto blob = ReadBlob(scan, name, kManifestShardMagic, kek_file);
    if (!blob.ok()) return blob.status();
    if (!*blob) return Fail(absl::StrCat(name, " vanished while the store was opened"));
    std::string owner;
    Manifest part;
    if (!DecodeManifestShard((*blob)->data(), (*blob)->size(), &owner, &part) ||
        OwnerTag(owner) != *tag) {
      return Fail(absl::StrCat(name, ": authenticated but unparsable, or not the manifest of ",
                               "the owner its name says; restore it from a backup (nothing ",
                               "was loaded)"));
    }
    if (!scan.manifest) scan.manifest.emplace();
    scan.manifest->counter = std::max(scan.manifest->counter, part.counter);
    if (part.keys.empty()) scan.empty_shards.insert(*tag);
    for (auto& [id, k] : part.keys) scan.manifest->keys.emplace(id, std::move(k));
  }
  if (scan.manifest) manifest_counter_ = scan.manifest->counter;
  return absl::OkStatus();
}

// Opens every record file (new and legacy names), notes legacy markers, removes temporary files.
absl::Status FileKeyBackend::LoadRecordFiles(FileScan& scan, LoadReport& rep) {
  const int dir_fd = keys_dir_fd_.get();
  for (const std::string& name : scan.names) {
    if (name == kManifestName || name == kJournalName) continue;
    if (ParseManifestShardName(name)) continue;
    if (name.starts_with(kTempPrefix)) {
      if (unlinkat(dir_fd, name.c_str(), 0) == 0) {
        ++rep.temp_files_removed;
      } else {
        spdlog::warn("key store: cannot remove leftover temporary file {}/{}: {}", keys_dir_, name,
                     Errno(errno));
      }
      continue;
    }
    if (auto marker = ParseKeyFileName(name, /*legacy=*/true);
        marker && marker->kind == KeyFileKind::kRetired) {
      uint32_t& top = scan.legacy_markers[marker->key_id];
      top = std::max(top, marker->version);
      scan.legacy_marker_names.push_back(name);
      continue;
    }
    if (!ParseKeyFileName(name, false) && !ParseKeyFileName(name, true)) {
      spdlog::warn("key store: ignoring unexpected file {}/{}", keys_dir_, name);
      continue;
    }
    auto bytes = ReadRecordFile(dir_fd, name);
    if (!bytes.ok()) {
      Skip(rep, name, std::string(bytes.status().message()));
      continue;
    }
    FileScan::Loaded l{name, sealer_->Open(bytes->data(), bytes->size()), false};
    if (l.rec.failure == OpenFailure::kWrongKek && old_sealer_ != nullptr) {
      l.rec = old_sealer_->Open(bytes->data(), bytes->size());
      l.under_old = true;
    }
    if (l.rec.failure != OpenFailure::kNone) {
      if (l.rec.failure == OpenFailure::kWrongKek || l.rec.failure == OpenFailure::kAuthFailed) {
        ++scan.auth_failed;
      }
      if (l.rec.failure == OpenFailure::kWrongKek) ++scan.wrong_kek;
      Skip(rep, name, l.rec.reason);
      continue;
    }
    const RecordMeta& m = l.rec.meta;
    if (!IsValidKeyId(m.key_id) || m.version == 0) {
      Skip(rep, name, "invalid sealed key id/version");
      continue;
    }
    if (l.rec.private_key.empty()) {
      Skip(rep, name, "empty private key");
      continue;
    }
    if (name == MakeKeyFileName(m.owner, m.key_id, m.version) && !m.uid.empty()) {
      scan.current.push_back(std::move(l));
    } else if (name == MakeLegacyKeyFileName(m.key_id, m.version, KeyFileKind::kRecord)) {
      scan.legacy.push_back(std::move(l));
    } else {
      Skip(rep, name, "file name does not match the sealed owner/key id/version");
    }
  }
  if (rep.temp_files_removed > 0) {
    if (auto st = FsyncFd(dir_fd, keys_dir_); !st.ok()) return st;
  }
  if (!scan.manifest && scan.current.empty() && scan.legacy.empty() && scan.auth_failed > 0) {
    return Fail(absl::StrCat("none of the ", rep.corrupted, " key records could be authenticated (",
                             scan.wrong_kek, " sealed under a different key-encryption key, ",
                             scan.auth_failed - scan.wrong_kek,
                             " failed the integrity check): wrong KEK?"));
  }
  return absl::OkStatus();
}

// With a manifest: the records it lists are accepted, others reported (left in place).
absl::Status FileKeyBackend::AcceptListed(FileScan& scan, LoadReport& rep,
                                          const OwnerMap& owner_of) {
  if (!single_manifest_) {
    // Every owner with records has its manifest file: one that went missing is restored, not
    // taken for "this owner holds nothing".
    std::map<std::string, size_t> orphaned;  // owner tag -> records
    for (const FileScan::Loaded& l : scan.current) {
      const std::string tag = OwnerTag(l.rec.meta.owner);
      if (!shard_tags_.contains(tag)) ++orphaned[tag];
      scan.empty_shards.erase(tag);
    }
    if (!orphaned.empty()) {
      const auto& [tag, n] = *orphaned.begin();
      return Fail(absl::StrCat(ManifestShardNameForTag(tag), " is missing but ", n,
                               " record file(s) of its owner exist (", orphaned.size(),
                               " owner(s) in all); restore it from a backup (nothing was loaded)"));
    }
  }
  for (FileScan::Loaded& l : scan.current) {
    const RecordMeta& m = l.rec.meta;
    auto k = scan.manifest->keys.find({m.owner, m.key_id});
    const std::string* uid = nullptr;
    if (k != scan.manifest->keys.end()) {
      auto v = k->second.versions.find(m.version);
      if (v != k->second.versions.end()) uid = &v->second;
    }
    if (uid == nullptr || *uid != m.uid) {
      Unlisted(rep, l.name,
               uid == nullptr ? "not in the manifest (deleted; restored from a backup?)"
                              : "not the record instance the manifest lists (an older "
                                "copy restored from a backup?)");
      continue;
    }
    scan.Accept(l);
  }
  for (FileScan::Loaded& l : scan.legacy) {
    const RecordMeta& m = l.rec.meta;
    if (scan.current_ids.contains({owner_of(m.owner), m.key_id, m.version})) {
      scan.legacy_to_remove.push_back(l.name);  // a migration finished up to the removal
    } else {
      Unlisted(rep, l.name, "legacy record not in the manifest");
    }
  }
  return absl::OkStatus();
}

// Puts the accepted records into the cache; none of them, nor of those to migrate, may stay in
// swappable memory.
absl::Status FileKeyBackend::LoadAccepted(FileScan& scan, LoadReport& rep) {
  size_t unlocked = 0;
  for (const auto& [l, uid] : scan.accepted) unlocked += !l->rec.private_key.locked();
  for (const FileScan::Loaded* l : scan.to_migrate) unlocked += !l->rec.private_key.locked();
  if (unlocked > 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "key store ", keys_dir_, ": ", unlocked,
        " private key(s) could not be locked in memory (mlock failed: RLIMIT_MEMLOCK too low?); "
        "raise the limit (ulimit -l, LimitMEMLOCK=) or grant CAP_IPC_LOCK"));
  }
  for (auto& [l, uid] : scan.accepted) {
    const RecordMeta& m = l->rec.meta;
    const KeyName id{m.owner, m.key_id};
    auto it = cache_.keys.find(id);
    if (it != cache_.keys.end() && it->second.algorithm != m.algorithm) {
      Skip(rep, l->name, "algorithm differs from the key's other versions");
      continue;
    }
    if (l->under_old) under_old_kek_.emplace_back(id, m.version);
    cache_.Insert(cache_.ToRecord(std::move(l->rec), id.first), uid);
    ++rep.loaded;
  }
  return absl::OkStatus();
}

// With a manifest: reports what it lists but was not loaded, takes the high-water marks, and
// removes the files of owners with neither keys nor records (or converts the single MANIFEST).
absl::Status FileKeyBackend::FinishListed(FileScan& scan, LoadReport& rep) {
  for (const auto& [id, k] : scan.manifest->keys) {
    auto it = cache_.keys.find(id);
    for (const auto& [version, uid] : k.versions) {
      if (it == cache_.keys.end() || !it->second.versions.contains(version)) {
        rep.missing.push_back(Describe(id, version));
        rep.problems.push_back(
            absl::StrCat(Describe(id, version), ": listed in the manifest but its record file (",
                         kKeysSubdir, "/", MakeKeyFileName(id.first, id.second, version),
                         ") is missing or could not be loaded"));
      }
    }
    if (it != cache_.keys.end()) {
      it->second.high_water = std::max(it->second.high_water, k.high_water);
    }
  }
  if (single_manifest_) return ConvertSingleManifest(*scan.manifest);
  if (!scan.empty_shards.empty()) {
    for (const std::string& tag : scan.empty_shards) {
      RemoveFile(ManifestShardNameForTag(tag));
      shard_tags_.erase(tag);
    }
    if (auto st = FsyncFd(keys_dir_fd_.get(), keys_dir_); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace pqcd::server::internal
