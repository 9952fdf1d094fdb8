// KeyCache (the held versions in memory) and SealedKeyBackend (what the file and PostgreSQL
// backends share: the order of a change). See key_cache.h.
#include "key_cache.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "openssl/rand.h"
#include "spdlog/spdlog.h"

namespace pqcd::server::internal {

std::string Describe(const KeyName& id, uint32_t version) {
  return absl::StrCat("owner '", id.first, "' key '", id.second, "' v", version);
}

absl::StatusOr<std::string> RandomUid() {
  std::string uid(kUidBytes, '\0');
  if (RAND_bytes(reinterpret_cast<uint8_t*>(uid.data()), static_cast<int>(uid.size())) != 1) {
    return absl::InternalError("RAND_bytes failed");
  }
  return uid;
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Manifest KeyCache::Snapshot(const std::string* owner) const {
  Manifest m;
  std::shared_lock lock(mu);
  const auto add = [&](const KeyName& id, const KeyEntry& e) {
    ManifestKey& k = m.keys[id];
    k.high_water = e.high_water;
    k.versions = e.uids;
  };
  if (owner != nullptr) {
    for (auto it = keys.lower_bound(KeyName{*owner, ""});
         it != keys.end() && it->first.first == *owner; ++it) {
      add(it->first, it->second);
    }
  } else {
    for (const auto& [id, e] : keys) add(id, e);
  }
  return m;
}

void KeyCache::Insert(KeyRecord kr, std::string uid) {
  const KeyName id{kr.owner, kr.key_id};
  auto [it, inserted] = keys.try_emplace(id);
  KeyEntry& e = it->second;
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

void KeyCache::Erase(std::map<KeyName, KeyEntry>::iterator it, uint32_t v,
                     std::vector<std::shared_ptr<const SecretBytes>>& doomed) {
  KeyEntry& e = it->second;
  auto rec = e.versions.find(v);
  doomed.push_back(std::move(rec->second.private_key));
  doomed.push_back(std::move(rec->second.prepared));
  e.versions.erase(rec);
  e.uids.erase(v);
  --count;
  if (e.versions.empty()) {
    if (--per_owner[it->first.first] == 0) per_owner.erase(it->first.first);
    keys.erase(it);
  }
}

void KeyCache::Clear() {
  std::map<KeyName, KeyEntry> doomed;
  {
    std::unique_lock lock(mu);
    doomed.swap(keys);
    per_owner.clear();
    count = 0;
  }
}

absl::Status KeyCache::Prepare(KeyRecord& kr) {
  if (!prepare_private_key_) return absl::OkStatus();
  auto p = prepare_private_key_(kr.algorithm, *kr.private_key);
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

KeyRecord KeyCache::ToRecord(OpenResult&& rec, const std::string& owner) {
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
  if (absl::Status st = Prepare(kr); !st.ok()) {
    unprepared.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("key store: {}: not prepared ({}); served from its stored form",
                 Describe({kr.owner, kr.key_id}, kr.version), std::string(st.message()));
  }
  return kr;
}

absl::StatusOr<std::string> SealedKeyBackend::AddVersion(const KeyRecord& rec) {
  auto uid = RandomUid();
  if (!uid.ok()) return uid.status();
  // The manifest first: a crash before the record is written leaves a "missing" entry (reported
  // at Open, dropped at the next change), never an unlisted record that blocks the id.
  Manifest m = cache_.Snapshot(&rec.owner);
  ManifestKey& k = m.keys[{rec.owner, rec.key_id}];
  k.high_water = rec.version;
  k.versions[rec.version] = *uid;
  if (auto st = WriteOwnerManifest(rec.owner, std::move(m)); !st.ok()) return st;
  if (auto st = PutRecord(rec, *uid, /*replace=*/false); !st.ok()) {
    UndoOwnerManifest(rec.owner);
    return st;
  }
  return uid;
}

absl::Status SealedKeyBackend::PutKey(const KeyEntry& e) {
  Manifest m = cache_.Snapshot(&e.owner);
  ManifestKey& k = m.keys[{e.owner, e.key_id}];
  k.high_water = e.high_water;
  k.versions = e.uids;
  if (auto st = WriteOwnerManifest(e.owner, std::move(m)); !st.ok()) return st;
  for (const auto& [v, rec] : e.versions) {
    if (auto st = PutRecord(rec, e.uids.at(v), /*replace=*/true); !st.ok()) return st;
  }
  return absl::OkStatus();
}

Manifest SealedKeyBackend::WithoutVersions(const std::string& owner, const std::string& key_id,
                                           const std::vector<uint32_t>& versions) const {
  const KeyName id{owner, key_id};
  Manifest m = cache_.Snapshot(&owner);
  ManifestKey& k = m.keys[id];
  for (uint32_t v : versions) k.versions.erase(v);
  if (k.versions.empty()) m.keys.erase(id);
  return m;
}

absl::StatusOr<std::vector<uint8_t>> SealedKeyBackend::Seal(const KeyRecord& rec,
                                                            const std::string& uid) const {
  RecordMeta meta{rec.key_id, rec.version, rec.algorithm,  rec.created_unix_ms,
                  rec.owner,  rec.labels,  rec.public_key, uid};
  return sealer_->Seal(meta, *rec.private_key);
}

}  // namespace pqcd::server::internal
