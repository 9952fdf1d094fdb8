// KEK rotation of a file store (KeyStore::RotateKek, pqcd --rotate-kek-to): the KEKs Open loads
// while rotating, the sealed journal keys/ROTATION (the old and the new KEK's check values;
// while it exists a normal Open refuses the directory and a rerun with the same files finishes
// the work), and the re-sealing of every record and manifest under the new KEK. A PostgreSQL
// store cannot be rotated yet (docs/key-store-postgres.md, "KEK rotation").
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>

#include "absl/strings/str_cat.h"
#include "file_key_backend.h"
#include "keystore/key_store.h"

namespace pqcd::server {
namespace internal {
namespace {

constexpr char kJournalMagic[4] = {'P', 'Q', 'K', 'R'};
// Test-only (documented in RotateKek): _exit(137) after re-sealing this many records.
constexpr char kRotateAbortEnv[] = "PQCD_TEST_ROTATE_ABORT_AFTER";

std::vector<uint8_t> JournalPayload(const RecordSealer& old_kek, const RecordSealer& new_kek) {
  std::vector<uint8_t> p(old_kek.kek_check().begin(), old_kek.kek_check().end());
  p.insert(p.end(), new_kek.kek_check().begin(), new_kek.kek_check().end());
  return p;
}

}  // namespace

// The KEK of options.kek_file; while rotating, it becomes the old one and rotate_to's the new one
// (the KEKs themselves are wiped here; only the derived keys stay).
absl::Status FileKeyBackend::LoadKeks(const KeyStoreOptions& options,
                                      const std::string* rotate_to) {
  {
    auto kek = LoadKek(options.kek_file, options.allow_shared_kek_file);
    if (!kek.ok()) return kek.status();
    sealer_ = std::make_unique<RecordSealer>(*kek);
  }
  if (rotate_to == nullptr) return absl::OkStatus();
  auto kek = LoadKek(*rotate_to, options.allow_shared_kek_file);
  if (!kek.ok()) return kek.status();
  old_sealer_ = std::move(sealer_);
  sealer_ = std::make_unique<RecordSealer>(*kek);
  if (sealer_->kek_check() == old_sealer_->kek_check()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the new KEK in ", *rotate_to, " is the KEK in ", options.kek_file));
  }
  return absl::OkStatus();
}

absl::Status FileKeyBackend::CheckJournal(const FileScan& scan, const KeyStoreOptions& options,
                                          const std::string* rotate_to) {
  auto bytes = ReadRecordFile(keys_dir_fd_.get(), kJournalName);
  if (!bytes.ok() && bytes.status().code() != absl::StatusCode::kNotFound) {
    return Fail(absl::StrCat("cannot read ", kJournalName, ": ", bytes.status().message()));
  }
  const bool journal = bytes.ok();
  if (journal && rotate_to == nullptr) {
    return Fail(absl::StrCat("a key-encryption key rotation is unfinished (", kJournalName,
                             " exists); finish it by rerunning pqcd --data-dir ", options.data_dir,
                             " --kek-file OLD_KEK --rotate-kek-to NEW_KEK with the same files"));
  }
  if (rotate_to == nullptr) return absl::OkStatus();
  auto want = JournalPayload(*old_sealer_, *sealer_);
  if (journal) {
    std::vector<uint8_t> plain;
    std::string reason;
    if (sealer_->OpenBlob(kJournalMagic, bytes->data(), bytes->size(), &plain, &reason) !=
            OpenFailure::kNone ||
        plain != want) {
      return Fail(absl::StrCat("the unfinished rotation in ", kJournalName,
                               " is between other KEKs than ", options.kek_file, " and ",
                               *rotate_to));
    }
  } else if (!scan.manifest || scan.manifest_under_old) {
    auto sealed = sealer_->SealBlob(kJournalMagic, want);
    if (!sealed.ok()) return sealed.status();
    if (auto st = WriteFileAtomic(keys_dir_fd_.get(), keys_dir_, kJournalName, *sealed, true);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

absl::Status FileKeyBackend::FinishRotation(LoadReport& rep) {
  std::lock_guard write_lock(cache_.write_mu);
  // Test-only hook (PQCD_TEST_ROTATE_ABORT_AFTER=N): _exit(137) right after N records were
  // re-sealed, like a kill -9 part-way, so that tests can check that a rerun completes the work.
  long abort_after = -1;
  if (const char* env = std::getenv(kRotateAbortEnv); env != nullptr && *env != '\0') {
    abort_after = std::strtol(env, nullptr, 10);
  }
  for (const auto& [id, version] : under_old_kek_) {
    KeyRecord rec;
    std::string uid;
    {
      std::shared_lock lock(cache_.mu);
      const KeyEntry& e = cache_.keys.at(id);
      rec = e.versions.at(version);
      uid = e.uids.at(version);
    }
    if (auto st = PutRecord(rec, uid, /*replace=*/true); !st.ok()) return st;
    ++rep.resealed;
    if (abort_after >= 0 && rep.resealed >= static_cast<size_t>(abort_after)) _exit(137);
  }
  if (auto st = WriteAllManifests(cache_.Snapshot()); !st.ok()) return st;
  rep.manifest_counter = manifest_counter_;
  if (unlinkat(keys_dir_fd_.get(), kJournalName, 0) != 0 && errno != ENOENT) {
    return absl::InternalError(
        absl::StrCat("remove ", keys_dir_, "/", kJournalName, ": ", Errno(errno)));
  }
  return FsyncFd(keys_dir_fd_.get(), keys_dir_);
}

}  // namespace internal

absl::Status KeyStore::RotateKek(const KeyStoreOptions& options, const std::string& new_kek_file,
                                 LoadReport* report) {
  LoadReport local_report;
  LoadReport& rep = report != nullptr ? *report : local_report;
  rep = LoadReport{};
  if (options.data_dir.empty() || options.kek_file.empty() || new_kek_file.empty()) {
    return absl::InvalidArgumentError("KEK rotation needs a data directory, its KEK and a new KEK");
  }
  if (!options.postgres_dsn.empty()) {
    return absl::UnimplementedError(
        "KEK rotation of a PostgreSQL key store is not supported yet "
        "(docs/key-store-postgres.md, \"KEK rotation\")");
  }
  internal::KeyCache cache(options.prepare_private_key);
  auto backend = internal::FileKeyBackend::Open(options, cache, rep, &new_kek_file);
  if (!backend.ok()) return backend.status();
  return (*backend)->FinishRotation(rep);
}

}  // namespace pqcd::server
