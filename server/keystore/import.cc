// KeyStore::ImportFileStore (pqcd --import-data-dir): copies every held key of a file store into a
// PostgreSQL store as it is (versions, high-water marks, record uids, labels, creation times),
// one change of the target's backend per key. Idempotent: a key already there with the same record
// uids is skipped; one with other content is reported as a conflict and left alone.
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "key_store_impl.h"

namespace pqcd::server {

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
  const internal::KeyCache& s = (*src)->impl_->cache;
  Impl& target_impl = *(*dst)->impl_;
  internal::KeyCache& d = target_impl.cache;
  std::vector<internal::KeyEntry> entries;
  {
    std::shared_lock lock(s.mu);
    for (const auto& [id, e] : s.keys) entries.push_back(e);
  }
  for (const internal::KeyEntry& e : entries) {
    const internal::KeyName id{e.owner, e.key_id};
    Impl::Change change(target_impl);
    if (auto st = change.Begin(); !st.ok()) return st;
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
    if (auto st = target_impl.backend->PutKey(e); !st.ok()) return st;
    if (auto st = change.Commit(); !st.ok()) return st;
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

}  // namespace pqcd::server
