// Migration of older file-store layouts at Open (FileKeyBackend):
//  - legacy directories, written before per-owner ids: <key_id>.v<N>.key records of format 1 and
//    <key_id>.v<N>.retired markers, no manifest. Each record is re-sealed with
//    owner = migrate_owner(old owner) under its new name, then the manifest is written (with the
//    markers' version numbers as high-water marks), then the old files are removed. A crash
//    part-way is finished by the next Open: where both forms of a record exist the new one wins
//    and the old one is removed;
//  - the single keys/MANIFEST (every owner in one file): converted into per-owner
//    MANIFEST.<owner tag> files, then removed. While it exists it is the manifest, and per-owner
//    files beside it are the leftovers of a conversion cut short (rewritten or removed).
// The PostgreSQL schema's migrations are PgBackend's (pg_backend.cc).
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "file_key_backend.h"

namespace pqcd::server::internal {

// Legacy (or new) directory: new-form files are accepted only as the leftovers of an
// interrupted migration, i.e. next to their legacy form.
absl::Status FileKeyBackend::SelectForMigration(
    FileScan& scan, LoadReport& rep,
    const std::function<std::string(const std::string&)>& owner_of) {
  std::set<FileScan::Triple> legacy_ids;
  for (const FileScan::Loaded& l : scan.legacy) {
    legacy_ids.emplace(owner_of(l.rec.meta.owner), l.rec.meta.key_id, l.rec.meta.version);
  }
  if (!scan.current.empty() && scan.legacy.empty()) {
    return Fail(absl::StrCat("the manifest (", kManifestName, ".<owner tag> files) is missing but ",
                             scan.current.size(),
                             " owner-qualified record file(s) exist; restore it from a backup "
                             "(nothing was loaded)"));
  }
  for (FileScan::Loaded& l : scan.current) {
    const RecordMeta& m = l.rec.meta;
    if (!legacy_ids.contains({m.owner, m.key_id, m.version})) {
      Unlisted(rep, l.name, "no manifest and no legacy form of this record");
      continue;
    }
    scan.accepted.emplace_back(&l, m.uid);
    scan.current_ids.emplace(m.owner, m.key_id, m.version);
  }
  for (FileScan::Loaded& l : scan.legacy) {
    const RecordMeta& m = l.rec.meta;
    if (!scan.current_ids.contains({owner_of(m.owner), m.key_id, m.version})) {
      scan.to_migrate.push_back(&l);
    }
    scan.legacy_to_remove.push_back(l.name);
  }
  return absl::OkStatus();
}

// New-form records first, then the manifest; the caller then removes the old files.
absl::Status FileKeyBackend::MigrateLegacy(
    FileScan& scan, LoadReport& rep,
    const std::function<std::string(const std::string&)>& owner_of) {
  for (FileScan::Loaded* l : scan.to_migrate) {
    RecordMeta& m = l->rec.meta;
    const KeyName id{owner_of(m.owner), m.key_id};
    auto it = cache_.keys.find(id);
    if (it != cache_.keys.end() && it->second.algorithm != m.algorithm) {
      Skip(rep, l->name, "algorithm differs from the key's other versions");
      std::erase(scan.legacy_to_remove, l->name);
      continue;
    }
    auto uid = RandomUid();
    if (!uid.ok()) return uid.status();
    KeyRecord rec = cache_.ToRecord(std::move(l->rec), id.first);
    if (auto st = PutRecord(rec, *uid, /*replace=*/false); !st.ok()) {
      return Fail(absl::StrCat("migrating ", l->name, ": ", st.message()));
    }
    cache_.Insert(std::move(rec), *uid);
    ++rep.loaded;
    ++rep.migrated;
  }
  // Markers of retired version numbers (legacy key ids were global: one owner each).
  for (auto& [id, e] : cache_.keys) {
    auto marker = scan.legacy_markers.find(id.second);
    if (marker != scan.legacy_markers.end()) {
      e.high_water = std::max(e.high_water, marker->second);
    }
  }
  return WriteAllManifests(cache_.Snapshot());
}

// The per-owner files list exactly what the single MANIFEST listed (also versions reported
// missing, as every change keeps them until the next one of their owner); then it goes, with the
// files of owners it does not list.
absl::Status FileKeyBackend::ConvertSingleManifest(const Manifest& manifest) {
  return WriteAllManifests(manifest);
}

}  // namespace pqcd::server::internal
