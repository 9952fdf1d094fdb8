// KeyStore: the daemon's server-held private keys. The cache and the rules: key ids, versions,
// owners, the limits per owner and per key, mlock, prepared forms. Where the keys persist is the
// backend's business (key_backend.h: memory, file or PostgreSQL, chosen here at Open); listing by
// page is in paging.cc, ImportFileStore in import.cc, RotateKek in kek_rotation.cc.
#include "keystore/key_store.h"

#include <chrono>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "file_key_backend.h"
#include "key_cache.h"
#include "key_store_impl.h"
#include "spdlog/spdlog.h"

namespace pqcd::server {
namespace {

using internal::KeyEntry;
using internal::KeyName;

absl::Status ValidateKeyId(const std::string& key_id) {
  if (internal::IsValidKeyId(key_id)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "key_id must be 1..128 characters of [A-Za-z0-9._-] and must not start with '.'");
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
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

size_t LockedBytes(const KeyRecord& kr) {
  return (kr.private_key ? kr.private_key->size() : 0) + (kr.prepared ? kr.prepared->size() : 0);
}

// What a version takes beside its secrets: public key, labels, names, and the map node (256).
size_t PlainBytes(const KeyRecord& kr) {
  size_t n = 256 + kr.public_key.size() + kr.key_id.size() + kr.owner.size();
  for (const auto& [k, v] : kr.labels) n += k.size() + v.size() + 64;
  return n;
}

}  // namespace

namespace internal {

absl::StatusOr<std::unique_ptr<KeyBackend>> OpenKeyBackend(const KeyStoreOptions& options,
                                                           KeyCache& cache, LoadReport& report) {
  if (!options.postgres_dsn.empty()) return OpenPostgresKeyBackend(options, cache, report);
  if (!options.data_dir.empty()) {
    auto file = FileKeyBackend::Open(options, cache, report, /*rotate_to=*/nullptr);
    if (!file.ok()) return file.status();
    return std::unique_ptr<KeyBackend>(std::move(*file));
  }
  if (!options.kek_file.empty()) {
    spdlog::warn("key store: kek_file is set but data_dir is not; keys are held in memory only");
  }
  return MakeMemoryKeyBackend();
}

}  // namespace internal

KeyStore::Impl::Impl(const KeyStoreOptions& options)
    : cache(options.prepare_private_key),
      max_keys_per_owner(options.max_keys_per_owner),
      max_versions_per_key(options.max_versions_per_key),
      max_locked_bytes_per_owner(options.max_locked_bytes_per_owner),
      max_plain_bytes_per_owner(options.max_plain_bytes_per_owner) {}

KeyStore::Impl::~Impl() {
  if (backend) backend->Stop();  // no synchronization may refill the cache below
  cache.Clear();
}

absl::Status KeyStore::Impl::RoomForVersion(const KeyEntry& e) const {
  if (e.high_water == std::numeric_limits<uint32_t>::max()) {
    return absl::ResourceExhaustedError(absl::StrCat("key '", e.key_id, "' has no versions left"));
  }
  if (max_versions_per_key != 0 && e.versions.size() >= max_versions_per_key) {
    quota_refusals.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("key '", e.key_id, "' holds ", e.versions.size(), " versions (the limit, ",
                     max_versions_per_key, ", --max-versions-per-key); delete old versions first"));
  }
  return absl::OkStatus();
}

absl::Status KeyStore::Impl::RoomForVersionBytes(const std::string& owner,
                                                 const KeyRecord& rec) const {
  if (max_locked_bytes_per_owner == 0 && max_plain_bytes_per_owner == 0) return absl::OkStatus();
  size_t locked = 0, plain = 0;
  {
    std::shared_lock lock(cache.mu);
    for (auto it = cache.keys.lower_bound(KeyName{owner, std::string()});
         it != cache.keys.end() && it->first.first == owner; ++it) {
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

absl::StatusOr<const KeyRecord*> KeyStore::Impl::FindForUse(const std::string& owner,
                                                            const std::string& key_id,
                                                            uint32_t version) const {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  if (auto st = backend->CheckServing(); !st.ok()) return st;
  auto it = cache.keys.find({owner, key_id});
  if (it == cache.keys.end()) return NotFound(key_id);
  const auto& versions = it->second.versions;
  auto v = version == 0 ? std::prev(versions.end()) : versions.find(version);
  if (v == versions.end()) return NotFound(key_id, version);
  return &v->second;
}

absl::Status KeyStore::Impl::AddNewVersion(KeyRecord& rec, SecretBytes private_key,
                                           Change& change) {
  if (!private_key.locked()) {
    memlock_refusals.fetch_add(1, std::memory_order_relaxed);
    return NotLocked();
  }
  rec.created_unix_ms = NowUnixMs();
  rec.private_key = std::make_shared<const SecretBytes>(std::move(private_key));
  if (auto st = cache.Prepare(rec); !st.ok()) return st;
  if (auto st = RoomForVersionBytes(rec.owner, rec); !st.ok()) return st;
  auto uid = backend->AddVersion(rec);
  if (!uid.ok()) return uid.status();
  if (auto st = change.Commit(); !st.ok()) return st;
  std::unique_lock lock(cache.mu);
  cache.Insert(rec, std::move(*uid));  // AddVersion: the key is still there (write_mu is held)
  return absl::OkStatus();
}

KeyStore::KeyStore() = default;
KeyStore::~KeyStore() = default;

absl::StatusOr<std::unique_ptr<KeyStore>> KeyStore::Open(const KeyStoreOptions& options,
                                                         LoadReport* report) {
  LoadReport local_report;
  LoadReport& rep = report != nullptr ? *report : local_report;
  rep = LoadReport{};
  std::unique_ptr<KeyStore> store(new KeyStore());
  store->impl_ = std::make_unique<Impl>(options);
  auto backend = internal::OpenKeyBackend(options, store->impl_->cache, rep);
  if (!backend.ok()) return backend.status();
  store->impl_->backend = std::move(*backend);
  return store;
}

bool KeyStore::persistent() const {
  return impl_->backend->persistent();
}

KeyStoreHealth KeyStore::health() const {
  return impl_->backend->health();
}

size_t KeyStore::size() const {
  std::shared_lock lock(impl_->cache.mu);
  return impl_->cache.count;
}

size_t KeyStore::KeyCount(const std::string& owner) const {
  std::shared_lock lock(impl_->cache.mu);
  auto it = impl_->cache.per_owner.find(owner);
  return it == impl_->cache.per_owner.end() ? 0 : it->second;
}

KeyStoreCounters KeyStore::counters() const {
  return {impl_->memlock_refusals.load(), impl_->quota_refusals.load(),
          impl_->cache.unprepared.load()};
}

absl::StatusOr<KeyRecord> KeyStore::Create(const std::string& owner, const std::string& key_id,
                                           int algorithm, std::vector<uint8_t> public_key,
                                           SecretBytes private_key,
                                           std::map<std::string, std::string> labels) {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  if (private_key.empty()) return absl::InvalidArgumentError("private key is empty");
  Impl& impl = *impl_;
  internal::KeyCache& cache = impl.cache;
  Impl::Change change(impl);
  if (auto st = change.Begin(); !st.ok()) return st;
  {
    std::shared_lock lock(cache.mu);
    if (cache.keys.contains({owner, key_id})) {
      return absl::AlreadyExistsError(absl::StrCat("key '", key_id, "' already exists"));
    }
    auto n = cache.per_owner.find(owner);
    if (impl.max_keys_per_owner != 0 && n != cache.per_owner.end() &&
        n->second >= impl.max_keys_per_owner) {
      impl.quota_refusals.fetch_add(1, std::memory_order_relaxed);
      return absl::ResourceExhaustedError(
          absl::StrCat("this identity already holds ", n->second, " keys, the limit per identity (",
                       impl.max_keys_per_owner, ", --max-keys-per-owner); delete a key first"));
    }
  }
  KeyRecord rec;
  rec.key_id = key_id;
  rec.version = 1;
  rec.algorithm = algorithm;
  rec.labels = std::move(labels);
  rec.owner = owner;
  rec.public_key = std::move(public_key);
  if (auto st = impl.AddNewVersion(rec, std::move(private_key), change); !st.ok()) return st;
  return rec;
}

absl::StatusOr<KeyRecord> KeyStore::AddVersion(const std::string& owner, const std::string& key_id,
                                               std::vector<uint8_t> public_key,
                                               SecretBytes private_key) {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  Impl& impl = *impl_;
  internal::KeyCache& cache = impl.cache;
  Impl::Change change(impl);
  if (auto st = change.Begin(); !st.ok()) return st;
  KeyRecord rec;
  {
    std::shared_lock lock(cache.mu);
    auto it = cache.keys.find({owner, key_id});
    if (it == cache.keys.end()) return NotFound(key_id);
    const KeyEntry& e = it->second;
    if (auto st = impl.RoomForVersion(e); !st.ok()) return st;
    rec.key_id = key_id;
    rec.version = e.high_water + 1;
    rec.algorithm = e.algorithm;
    rec.owner = owner;
    rec.labels = e.versions.rbegin()->second.labels;  // labels carry over to the new version
  }
  if (private_key.empty()) return absl::InvalidArgumentError("private key is empty");
  rec.public_key = std::move(public_key);
  if (auto st = impl.AddNewVersion(rec, std::move(private_key), change); !st.ok()) return st;
  return rec;
}

absl::Status KeyStore::CheckRoomForVersion(const std::string& owner,
                                           const std::string& key_id) const {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  std::shared_lock lock(impl_->cache.mu);
  auto it = impl_->cache.keys.find({owner, key_id});
  if (it == impl_->cache.keys.end()) return NotFound(key_id);
  return impl_->RoomForVersion(it->second);
}

absl::StatusOr<KeyRecord> KeyStore::Get(const std::string& owner, const std::string& key_id,
                                        uint32_t version) const {
  std::shared_lock lock(impl_->cache.mu);
  auto rec = impl_->FindForUse(owner, key_id, version);
  if (!rec.ok()) return rec.status();
  return **rec;
}

absl::StatusOr<HeldKeyUse> KeyStore::Use(const std::string& owner, const std::string& key_id,
                                         uint32_t version, bool want_public_key) const {
  std::shared_lock lock(impl_->cache.mu);
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
  std::shared_lock lock(impl_->cache.mu);
  auto it = impl_->cache.keys.find({owner, key_id});
  if (it == impl_->cache.keys.end()) return out;
  for (const auto& [v, rec] : it->second.versions) out.push_back(v);
  return out;
}

std::vector<std::string> KeyStore::OwnersOf(const std::string& key_id) const {
  std::vector<std::string> out;
  std::shared_lock lock(impl_->cache.mu);
  for (const auto& [id, e] : impl_->cache.keys) {
    if (id.second == key_id) out.push_back(id.first);
  }
  return out;
}

absl::StatusOr<uint32_t> KeyStore::Delete(const std::string& owner, const std::string& key_id,
                                          uint32_t version) {
  if (auto st = ValidateKeyId(key_id); !st.ok()) return st;
  Impl& impl = *impl_;
  internal::KeyCache& cache = impl.cache;
  Impl::Change change(impl);
  if (auto st = change.Begin(); !st.ok()) return st;
  const KeyName id{owner, key_id};
  std::vector<uint32_t> targets;
  {
    std::shared_lock lock(cache.mu);
    auto it = cache.keys.find(id);
    if (it == cache.keys.end()) return NotFound(key_id);
    const KeyEntry& e = it->second;
    if (version == 0) {
      for (const auto& [v, rec] : e.versions) targets.push_back(v);
    } else if (e.versions.contains(version)) {
      targets.push_back(version);
    } else {
      return NotFound(key_id, version);
    }
  }
  if (auto st = impl.backend->RemoveVersions(owner, key_id, targets); !st.ok()) return st;
  if (auto st = change.Commit(); !st.ok()) return st;
  std::vector<std::shared_ptr<const SecretBytes>> doomed;  // released after the lock
  {
    std::unique_lock lock(cache.mu);
    auto it = cache.keys.find(id);
    for (uint32_t v : targets) cache.Erase(it, v, doomed);  // the last one may erase the key
  }
  doomed.clear();
  return static_cast<uint32_t>(targets.size());
}

}  // namespace pqcd::server
