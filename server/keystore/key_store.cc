// KeyStore: the daemon's server-held private keys.
//
// On disk: one sealed file per key version, <data_dir>/keys/<key_id>.v<N>.key (see record_codec.h
// for the record layout). One file per version rather than an append-only log because
//  - each change is a single atomic rename (create) or unlink (delete): no compaction, no log
//    replay, and deleted key material really leaves the disk instead of lingering in a log;
//  - a damaged file affects exactly one key version; the others load regardless;
//  - key ids are restricted to [A-Za-z0-9._-] and never start with '.', so they are safe file
//    names and can never collide with our temporary files (".tmp-*") or "." / "..".
// Version numbers are never reused, also across restarts: deleting a key's newest version(s) while
// older ones remain first writes an empty marker keys/<key_id>.v<N>.retired (N = the highest
// version the key ever had), which Open reads back; it goes when a newer version is written or
// the whole key is deleted (a deleted key id may be created afresh, starting at version 1).
// Writes go to keys/.tmp-<random> (O_EXCL, 0600), are fsync'ed, renamed into place without
// replacing anything (renameat2 RENAME_NOREPLACE), and the directory is fsync'ed before the call
// returns. Deletes unlink and fsync the directory. A LOCK file (flock) keeps a second process from
// opening the same data directory.
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
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "keystore/record_codec.h"
#include "openssl/rand.h"
#include "spdlog/spdlog.h"

namespace pqcd::server {
namespace {

using internal::OpenFailure;
using internal::RecordMeta;
using internal::RecordSealer;

constexpr char kKeysSubdir[] = "keys";
constexpr char kTempPrefix[] = ".tmp-";
constexpr char kRecordSuffix[] = ".key";
constexpr char kRetiredSuffix[] = ".retired";
constexpr size_t kMaxKeyIdLength = 128;

absl::Status ValidateKeyId(const std::string& key_id) {
  bool ok = !key_id.empty() && key_id.size() <= kMaxKeyIdLength && key_id[0] != '.';
  for (char c : key_id) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "key_id must be 1..128 characters of [A-Za-z0-9._-] and must not start with '.'");
}

std::string RecordFileName(const std::string& key_id, uint32_t version) {
  return absl::StrCat(key_id, ".v", version, kRecordSuffix);
}

std::string RetiredFileName(const std::string& key_id, uint32_t version) {
  return absl::StrCat(key_id, ".v", version, kRetiredSuffix);
}

// Parses "<key_id>.v<N>.retired"; false if the name is not one.
bool ParseRetiredFileName(const std::string& name, std::string* key_id, uint32_t* version) {
  if (!name.ends_with(kRetiredSuffix)) return false;
  const std::string stem = name.substr(0, name.size() - (sizeof(kRetiredSuffix) - 1));
  const size_t dot_v = stem.rfind(".v");
  if (dot_v == std::string::npos || dot_v + 2 >= stem.size() || stem.size() - dot_v > 12) {
    return false;
  }
  uint64_t v = 0;
  for (size_t i = dot_v + 2; i < stem.size(); ++i) {
    if (stem[i] < '0' || stem[i] > '9') return false;
    v = v * 10 + static_cast<uint64_t>(stem[i] - '0');
  }
  if (v == 0 || v > std::numeric_limits<uint32_t>::max()) return false;
  *key_id = stem.substr(0, dot_v);
  *version = static_cast<uint32_t>(v);
  return ValidateKeyId(*key_id).ok() && RetiredFileName(*key_id, *version) == name;
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

// Reads a whole regular file (at most internal::kMaxRecordBytes) relative to dir_fd.
absl::StatusOr<std::vector<uint8_t>> ReadRecordFile(int dir_fd, const std::string& name) {
  Fd fd(openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return absl::InternalError(absl::StrCat("cannot open: ", Errno(errno)));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return absl::InternalError(absl::StrCat("cannot stat: ", Errno(errno)));
  }
  if (!S_ISREG(st.st_mode)) return absl::InternalError("not a regular file");
  if (static_cast<uint64_t>(st.st_size) > internal::kMaxRecordBytes) {
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

}  // namespace

struct KeyStore::Impl {
  struct Entry {
    std::string owner;
    int algorithm = 0;
    uint32_t high_water = 0;  // highest version ever held: numbers are not reused
    uint32_t retired = 0;     // version in this key's .retired marker on disk (0: none)
    std::map<uint32_t, KeyRecord> versions;
  };

  bool persistent = false;
  std::string keys_dir;  // for messages
  Fd keys_dir_fd;
  Fd lock_fd;
  std::unique_ptr<RecordSealer> sealer;

  std::mutex write_mu;  // serializes Create/AddVersion/Delete (held across disk I/O)
  mutable std::shared_mutex mu;
  std::map<std::string, Entry> keys;  // guarded by mu
  size_t count = 0;                   // guarded by mu

  static bool Visible(const Entry& e, const std::string& caller, bool admin) {
    return admin || e.owner == caller;
  }

  // Seals and durably writes one record. Called with write_mu held, mu not held.
  absl::Status Persist(const KeyRecord& rec) {
    RecordMeta meta{rec.key_id, rec.version, rec.algorithm, rec.created_unix_ms,
                    rec.owner,  rec.labels,  rec.public_key};
    auto sealed = sealer->Seal(meta, *rec.private_key);
    if (!sealed.ok()) return sealed.status();
    const std::string final_name = RecordFileName(rec.key_id, rec.version);
    uint8_t rnd[8];
    if (RAND_bytes(rnd, sizeof rnd) != 1) return absl::InternalError("RAND_bytes failed");
    std::string tmp_name = kTempPrefix;
    for (uint8_t b : rnd) absl::StrAppend(&tmp_name, absl::Hex(b, absl::kZeroPad2));
    const std::string what = absl::StrCat(keys_dir, "/", final_name);

    Fd fd(openat(keys_dir_fd.get(), tmp_name.c_str(),
                 O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) {
      return absl::InternalError(
          absl::StrCat("create temporary file in ", keys_dir, ": ", Errno(errno)));
    }
    auto cleanup_tmp = [&] { (void)unlinkat(keys_dir_fd.get(), tmp_name.c_str(), 0); };
    absl::Status st = WriteAll(fd.get(), sealed->data(), sealed->size(), what);
    if (st.ok()) st = FsyncFd(fd.get(), what);
    if (st.ok() && close(fd.Release()) != 0) {  // closed explicitly so an error is seen
      st = absl::InternalError(absl::StrCat("close ", what, ": ", Errno(errno)));
    }
    if (!st.ok()) {
      cleanup_tmp();
      return st;
    }
    int rc = renameat2(keys_dir_fd.get(), tmp_name.c_str(), keys_dir_fd.get(), final_name.c_str(),
                       RENAME_NOREPLACE);
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
      // File system without RENAME_NOREPLACE: check, then rename (we hold the directory lock).
      if (faccessat(keys_dir_fd.get(), final_name.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        rc = -1;
      } else {
        rc = renameat(keys_dir_fd.get(), tmp_name.c_str(), keys_dir_fd.get(), final_name.c_str());
      }
    }
    if (rc != 0) {
      const int err = errno;
      cleanup_tmp();
      if (err == EEXIST) {
        return absl::FailedPreconditionError(
            absl::StrCat(what,
                         " already exists on disk but was not loaded (see the load report "
                         "at start-up); move it away to reuse this key id/version"));
      }
      return absl::InternalError(absl::StrCat("rename into ", what, ": ", Errno(err)));
    }
    st = FsyncFd(keys_dir_fd.get(), keys_dir);
    if (!st.ok()) {
      // Not known to be durable: take it back so memory and disk agree as far as we can tell.
      (void)unlinkat(keys_dir_fd.get(), final_name.c_str(), 0);
      return st;
    }
    return absl::OkStatus();
  }

  // Durably writes the empty marker that versions up to `version` of key_id were used. Called
  // with write_mu held.
  absl::Status WriteRetired(const std::string& key_id, uint32_t version) {
    const std::string name = RetiredFileName(key_id, version);
    const std::string what = absl::StrCat(keys_dir, "/", name);
    Fd fd(openat(keys_dir_fd.get(), name.c_str(),
                 O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return absl::InternalError(absl::StrCat("create ", what, ": ", Errno(errno)));
    if (close(fd.Release()) != 0) {
      return absl::InternalError(absl::StrCat("close ", what, ": ", Errno(errno)));
    }
    return FsyncFd(keys_dir_fd.get(), keys_dir);
  }

  // Removes a marker that is no longer needed (best effort: a leftover only keeps a number from
  // being reused, or is removed at the next Open).
  void RemoveRetired(const std::string& key_id, uint32_t version) {
    const std::string name = RetiredFileName(key_id, version);
    if (unlinkat(keys_dir_fd.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      spdlog::warn("key store: cannot remove {}/{}: {}", keys_dir, name, Errno(errno));
      return;
    }
    (void)FsyncFd(keys_dir_fd.get(), keys_dir);
  }
};

KeyStore::KeyStore() : impl_(std::make_unique<Impl>()) {}

KeyStore::~KeyStore() {
  if (!impl_) return;
  // Drop every held key now (each SecretBytes wipes itself when its last reference goes).
  std::map<std::string, Impl::Entry> doomed;
  {
    std::unique_lock lock(impl_->mu);
    doomed.swap(impl_->keys);
    impl_->count = 0;
  }
}

bool KeyStore::persistent() const {
  return impl_->persistent;
}

size_t KeyStore::size() const {
  std::shared_lock lock(impl_->mu);
  return impl_->count;
}

absl::StatusOr<std::unique_ptr<KeyStore>> KeyStore::Open(const KeyStoreOptions& options,
                                                         LoadReport* report) {
  LoadReport local_report;
  LoadReport& rep = report != nullptr ? *report : local_report;
  rep = LoadReport{};
  std::unique_ptr<KeyStore> store(new KeyStore());
  Impl& impl = *store->impl_;
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
    auto kek = internal::LoadKek(options.kek_file);
    if (!kek.ok()) return kek.status();
    impl.sealer = std::make_unique<RecordSealer>(*kek);
  }  // the KEK itself is wiped here; only the derived keys stay

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

  // Scan keys/.
  std::vector<std::string> names;
  {
    DIR* dir = fdopendir(dup(impl.keys_dir_fd.get()));
    if (dir == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot list ", impl.keys_dir, ": ", Errno(errno)));
    }
    while (dirent* de = readdir(dir)) {
      std::string name = de->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());

  size_t auth_failed = 0, wrong_kek = 0;
  std::vector<internal::OpenResult> loaded;
  std::map<std::string, std::vector<uint32_t>> retired;  // key id -> versions of its markers
  for (const std::string& name : names) {
    std::string retired_id;
    uint32_t retired_version = 0;
    if (ParseRetiredFileName(name, &retired_id, &retired_version)) {
      retired[retired_id].push_back(retired_version);
      continue;
    }
    if (name.starts_with(kTempPrefix)) {
      if (unlinkat(impl.keys_dir_fd.get(), name.c_str(), 0) == 0) {
        ++rep.temp_files_removed;
      } else {
        spdlog::warn("key store: cannot remove leftover temporary file {}/{}: {}", impl.keys_dir,
                     name, Errno(errno));
      }
      continue;
    }
    if (!name.ends_with(kRecordSuffix)) {
      spdlog::warn("key store: ignoring unexpected file {}/{}", impl.keys_dir, name);
      continue;
    }
    auto skip = [&](const std::string& why) {
      ++rep.corrupted;
      rep.problems.push_back(absl::StrCat(kKeysSubdir, "/", name, ": ", why));
    };
    auto bytes = ReadRecordFile(impl.keys_dir_fd.get(), name);
    if (!bytes.ok()) {
      skip(std::string(bytes.status().message()));
      continue;
    }
    internal::OpenResult rec = impl.sealer->Open(bytes->data(), bytes->size());
    if (rec.failure != OpenFailure::kNone) {
      if (rec.failure == OpenFailure::kWrongKek || rec.failure == OpenFailure::kAuthFailed) {
        ++auth_failed;
      }
      if (rec.failure == OpenFailure::kWrongKek) ++wrong_kek;
      skip(rec.reason);
      continue;
    }
    if (!ValidateKeyId(rec.meta.key_id).ok() || rec.meta.version == 0 ||
        RecordFileName(rec.meta.key_id, rec.meta.version) != name) {
      skip("file name does not match the sealed key id/version");
      continue;
    }
    if (rec.private_key.empty()) {
      skip("empty private key");
      continue;
    }
    loaded.push_back(std::move(rec));
  }
  if (rep.temp_files_removed > 0) {
    if (auto st = FsyncFd(impl.keys_dir_fd.get(), impl.keys_dir); !st.ok()) return st;
  }
  if (loaded.empty() && auth_failed > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("key store ", impl.keys_dir, ": none of the ", rep.corrupted,
                     " key records could be authenticated (", wrong_kek,
                     " sealed under a different key-encryption key, ", auth_failed - wrong_kek,
                     " failed the integrity check): wrong KEK?"));
  }

  std::sort(loaded.begin(), loaded.end(), [](const auto& a, const auto& b) {
    return std::tie(a.meta.key_id, a.meta.version) < std::tie(b.meta.key_id, b.meta.version);
  });
  {
    std::unique_lock lock(impl.mu);
    for (auto& rec : loaded) {
      RecordMeta& m = rec.meta;
      auto [it, inserted] = impl.keys.try_emplace(m.key_id);
      Impl::Entry& e = it->second;
      if (inserted) {
        e.owner = m.owner;
        e.algorithm = m.algorithm;
      } else if (e.owner != m.owner || e.algorithm != m.algorithm) {
        ++rep.corrupted;
        rep.problems.push_back(
            absl::StrCat(kKeysSubdir, "/", RecordFileName(m.key_id, m.version),
                         ": owner or algorithm differs from the key's older versions"));
        continue;
      }
      KeyRecord kr;
      kr.key_id = m.key_id;
      kr.version = m.version;
      kr.algorithm = m.algorithm;
      kr.created_unix_ms = m.created_unix_ms;
      kr.labels = std::move(m.labels);
      kr.owner = std::move(m.owner);
      kr.public_key = std::move(m.public_key);
      kr.private_key = std::make_shared<const SecretBytes>(std::move(rec.private_key));
      e.high_water = std::max(e.high_water, kr.version);
      e.versions.emplace(kr.version, std::move(kr));
      ++impl.count;
      ++rep.loaded;
    }
  }
  // Markers of retired version numbers: the highest one counts; the others (left by a crash
  // between writing a new marker and removing the old one) and those of keys that no longer exist
  // go.
  for (const auto& [key_id, versions] : retired) {
    const uint32_t top = *std::max_element(versions.begin(), versions.end());
    auto it = impl.keys.find(key_id);
    for (uint32_t v : versions) {
      if (it == impl.keys.end() || v != top) impl.RemoveRetired(key_id, v);
    }
    if (it == impl.keys.end()) continue;
    it->second.high_water = std::max(it->second.high_water, top);
    it->second.retired = top;
  }
  for (const auto& p : rep.problems) spdlog::warn("key store: skipped {}", p);
  spdlog::info("key store: loaded {} key versions from {} ({} skipped, {} temporary files removed)",
               rep.loaded, impl.keys_dir, rep.corrupted, rep.temp_files_removed);
  return store;
}

absl::StatusOr<KeyRecord> KeyStore::Create(const std::string& key_id, int algorithm,
                                           std::vector<uint8_t> public_key, SecretBytes private_key,
                                           std::map<std::string, std::string> labels,
                                           const std::string& owner) {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  if (private_key.empty()) return absl::InvalidArgumentError("private key is empty");
  Impl& impl = *impl_;
  std::lock_guard write_lock(impl.write_mu);
  {
    std::shared_lock lock(impl.mu);
    if (impl.keys.contains(key_id)) {
      return absl::AlreadyExistsError(absl::StrCat("key '", key_id, "' already exists"));
    }
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
  if (impl.persistent) {
    if (auto st = impl.Persist(rec); !st.ok()) return st;
  }
  std::unique_lock lock(impl.mu);
  Impl::Entry& e = impl.keys[key_id];
  e.owner = owner;
  e.algorithm = algorithm;
  e.high_water = 1;
  e.versions.emplace(1, rec);
  ++impl.count;
  return rec;
}

absl::StatusOr<KeyRecord> KeyStore::AddVersion(const std::string& key_id,
                                               std::vector<uint8_t> public_key,
                                               SecretBytes private_key, const std::string& caller,
                                               bool caller_is_admin) {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  Impl& impl = *impl_;
  std::lock_guard write_lock(impl.write_mu);
  KeyRecord rec;
  {
    std::shared_lock lock(impl.mu);
    auto it = impl.keys.find(key_id);
    if (it == impl.keys.end() || !Impl::Visible(it->second, caller, caller_is_admin)) {
      return NotFound(key_id);
    }
    const Impl::Entry& e = it->second;
    if (e.high_water == std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(absl::StrCat("key '", key_id, "' has no versions left"));
    }
    rec.key_id = key_id;
    rec.version = e.high_water + 1;
    rec.algorithm = e.algorithm;
    rec.owner = e.owner;
    rec.labels = e.versions.rbegin()->second.labels;  // labels carry over to the new version
  }
  if (private_key.empty()) return absl::InvalidArgumentError("private key is empty");
  rec.created_unix_ms = NowUnixMs();
  rec.public_key = std::move(public_key);
  rec.private_key = std::make_shared<const SecretBytes>(std::move(private_key));
  if (impl.persistent) {
    if (auto st = impl.Persist(rec); !st.ok()) return st;
  }
  uint32_t old_marker = 0;
  {
    std::unique_lock lock(impl.mu);
    Impl::Entry& e = impl.keys[key_id];  // still present: mutations are serialized by write_mu
    e.high_water = rec.version;
    e.versions.emplace(rec.version, rec);
    ++impl.count;
    std::swap(old_marker, e.retired);
  }
  // The new record now carries the highest version number: the marker is redundant.
  if (old_marker != 0 && impl.persistent) impl.RemoveRetired(key_id, old_marker);
  return rec;
}

absl::StatusOr<KeyRecord> KeyStore::Get(const std::string& key_id, uint32_t version,
                                        const std::string& caller, bool caller_is_admin) const {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  std::shared_lock lock(impl_->mu);
  auto it = impl_->keys.find(key_id);
  if (it == impl_->keys.end() || !Impl::Visible(it->second, caller, caller_is_admin)) {
    return NotFound(key_id);
  }
  const auto& versions = it->second.versions;
  if (version == 0) return versions.rbegin()->second;
  auto v = versions.find(version);
  if (v == versions.end()) return NotFound(key_id, version);
  return v->second;
}

std::vector<uint32_t> KeyStore::Versions(const std::string& key_id, const std::string& caller,
                                         bool caller_is_admin) const {
  std::vector<uint32_t> out;
  std::shared_lock lock(impl_->mu);
  auto it = impl_->keys.find(key_id);
  if (it == impl_->keys.end() || !Impl::Visible(it->second, caller, caller_is_admin)) return out;
  for (const auto& [v, rec] : it->second.versions) out.push_back(v);
  return out;
}

std::vector<uint32_t> KeyStore::Versions(const std::string& key_id) const {
  return Versions(key_id, std::string(), /*caller_is_admin=*/true);
}

std::vector<KeyRecord> KeyStore::List(
    const std::string& caller, bool caller_is_admin,
    const std::map<std::string, std::string>& label_selector) const {
  std::vector<KeyRecord> out;
  std::shared_lock lock(impl_->mu);
  for (const auto& [id, e] : impl_->keys) {
    if (!Impl::Visible(e, caller, caller_is_admin)) continue;
    const KeyRecord& newest = e.versions.rbegin()->second;
    if (LabelsMatch(newest.labels, label_selector)) out.push_back(newest);
  }
  return out;
}

absl::StatusOr<uint32_t> KeyStore::Delete(const std::string& key_id, uint32_t version,
                                          const std::string& caller, bool caller_is_admin) {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  Impl& impl = *impl_;
  std::lock_guard write_lock(impl.write_mu);
  std::vector<uint32_t> targets;  // ascending: a crash part-way leaves the newest versions
  bool need_marker = false;       // the newest version goes while older ones stay
  uint32_t high_water = 0, marker = 0;
  {
    std::shared_lock lock(impl.mu);
    auto it = impl.keys.find(key_id);
    if (it == impl.keys.end() || !Impl::Visible(it->second, caller, caller_is_admin)) {
      return NotFound(key_id);
    }
    const Impl::Entry& e = it->second;
    if (version == 0) {
      for (const auto& [v, rec] : e.versions) targets.push_back(v);
    } else if (e.versions.contains(version)) {
      targets.push_back(version);
      need_marker = e.versions.size() > 1 && version == e.versions.rbegin()->first;
    } else {
      return NotFound(key_id, version);
    }
    high_water = e.high_water;
    marker = e.retired;
  }
  absl::Status io_status;
  size_t removed = targets.size();
  if (impl.persistent && need_marker && marker != high_water) {
    // Durably before the record goes, so that a restart cannot hand out its number again.
    if (auto st = impl.WriteRetired(key_id, high_water); !st.ok()) return st;
    if (marker != 0) impl.RemoveRetired(key_id, marker);
    marker = high_water;
  }
  if (impl.persistent) {
    for (size_t i = 0; i < targets.size(); ++i) {
      const std::string name = RecordFileName(key_id, targets[i]);
      if (unlinkat(impl.keys_dir_fd.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
        io_status = absl::InternalError(
            absl::StrCat("delete ", impl.keys_dir, "/", name, ": ", Errno(errno)));
        removed = i;
        break;
      }
    }
    if (removed > 0) {
      if (auto st = FsyncFd(impl.keys_dir_fd.get(), impl.keys_dir); !st.ok() && io_status.ok()) {
        io_status = st;  // the files are gone from the namespace; durability unknown
      }
    }
  }
  std::vector<std::shared_ptr<const SecretBytes>> doomed;  // released after the lock
  {
    std::unique_lock lock(impl.mu);
    auto it = impl.keys.find(key_id);
    it->second.retired = marker;
    for (size_t i = 0; i < removed; ++i) {
      auto v = it->second.versions.find(targets[i]);
      doomed.push_back(std::move(v->second.private_key));
      it->second.versions.erase(v);
      --impl.count;
    }
    if (it->second.versions.empty()) {
      impl.keys.erase(it);
    } else {
      marker = 0;  // still needed
    }
  }
  // The whole key is gone: its id may be created afresh, so its marker goes too.
  if (impl.persistent && marker != 0) impl.RemoveRetired(key_id, marker);
  doomed.clear();
  if (!io_status.ok()) return io_status;
  return static_cast<uint32_t>(removed);
}

}  // namespace pqcd::server
