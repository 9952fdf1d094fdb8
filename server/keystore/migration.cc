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
//  - the PostgreSQL schema (PgBackend::Migrate, at every PgBackend::Open): versions listed in
//    pqcd_schema_migrations, applied under an advisory lock; schema 1's single manifest row is
//    split into owner rows and a root (SplitManifestByOwner).
#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "file_key_backend.h"
#include "keystore/pg_backend.h"
#include "spdlog/spdlog.h"

namespace pqcd::server::internal {

// Legacy (or new) directory: new-form files are accepted only as the leftovers of an
// interrupted migration, i.e. next to their legacy form.
absl::Status FileKeyBackend::SelectForMigration(FileScan& scan, LoadReport& rep,
                                                const OwnerMap& owner_of) {
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
    scan.Accept(l);
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
absl::Status FileKeyBackend::MigrateLegacy(FileScan& scan, LoadReport& rep,
                                           const OwnerMap& owner_of) {
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

// --- The PostgreSQL schema.

namespace {

// Each entry migrates the schema from version i to i + 1 (index i), inside one transaction.
// Append only: a released migration is never edited.
const char* const kMigrations[] = {
    // 0 -> 1: the manifest row and the record rows.
    R"sql(
CREATE TABLE pqcd_manifest (
  id smallint PRIMARY KEY CHECK (id = 1),
  counter bigint NOT NULL CHECK (counter >= 0),
  sealed bytea NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE pqcd_records (
  owner text NOT NULL,
  key_id text NOT NULL,
  version integer NOT NULL CHECK (version > 0),
  uid bytea NOT NULL,
  sealed bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (owner, key_id, version)
);
)sql",
    // 1 -> 2: one manifest row per owner beside the root (the data is moved by
    // SplitManifestByOwner in the same transaction: it needs the KEK).
    R"sql(
CREATE TABLE pqcd_manifest_owners (
  owner text PRIMARY KEY,
  counter bigint NOT NULL CHECK (counter > 0),
  sealed bytea NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
)sql",
};
static_assert(std::size(kMigrations) == kPgSchemaVersion);

// pg_advisory_xact_lock key for schema migrations (an arbitrary constant: "pqcd" in ASCII).
constexpr char kMigrationLock[] = "1885430628";

}  // namespace

absl::Status PgBackend::Migrate() {
  if (auto r = Exec("BEGIN"); !r.ok()) return r.status();
  in_tx_ = true;
  auto fail = [&](absl::Status st) {
    Rollback();
    return st;
  };
  if (auto r = Exec(absl::StrCat("SELECT pg_advisory_xact_lock(", kMigrationLock, ")")); !r.ok()) {
    return fail(r.status());
  }
  if (auto r =
          Exec("CREATE TABLE IF NOT EXISTS pqcd_schema_migrations (version integer PRIMARY KEY, "
               "applied_at timestamptz NOT NULL DEFAULT now())");
      !r.ok()) {
    return fail(r.status());
  }
  auto cur = Exec("SELECT coalesce(max(version), 0)::int8 FROM pqcd_schema_migrations");
  if (!cur.ok()) return fail(cur.status());
  const int64_t have = cur->Int(0, 0);
  if (have > kPgSchemaVersion) {
    return fail(absl::FailedPreconditionError(absl::StrCat(
        "the key store database has schema version ", have, ", newer than this pqcd knows (",
        kPgSchemaVersion, "): a newer pqcd migrated it; run that version")));
  }
  for (int64_t v = have; v < kPgSchemaVersion; ++v) {
    if (auto st = write_->ExecScript(kMigrations[v]); !st.ok()) return fail(st);
    if (v + 1 == 2) {
      if (auto st = SplitManifestByOwner(); !st.ok()) return fail(st);
    }
    if (auto r = Exec("INSERT INTO pqcd_schema_migrations (version) VALUES ($1::int4)",
                      {PgParam::Int(v + 1)});
        !r.ok()) {
      return fail(r.status());
    }
    spdlog::info("key store: database schema migrated to version {}", v + 1);
  }
  auto r = Exec("COMMIT");
  in_tx_ = false;
  return r.status();
}

absl::Status PgBackend::SplitManifestByOwner() {
  auto r = Exec("SELECT counter, sealed FROM pqcd_manifest WHERE id = 1 FOR UPDATE");
  if (!r.ok()) return r.status();
  if (r->rows() == 0) return absl::OkStatus();  // a new database: EnsureManifestRow makes a root
  const uint64_t column = static_cast<uint64_t>(r->Int(0, 0));
  auto plain = OpenSealedRow(sealer_, kManifestMagic, r->Bytes(0, 1), "manifest (schema 1)");
  if (!plain.ok()) return plain.status();
  Manifest m;
  if (!DecodeManifestPayload(plain->data(), plain->size(), &m) || m.counter != column ||
      (m.counter == 0 && !m.keys.empty())) {
    return absl::DataLossError("the key store database's manifest (schema 1) is malformed");
  }
  ManifestRoot root;
  root.counter = m.counter;
  const std::map<std::string, Manifest> by_owner = SplitByOwner(std::move(m));
  for (const auto& [owner, part] : by_owner) {
    auto sealed = sealer_.SealBlob(kManifestShardMagic, EncodeManifestShard(owner, part));
    if (!sealed.ok()) return sealed.status();
    if (auto w = Exec("INSERT INTO pqcd_manifest_owners (owner, counter, sealed) "
                      "VALUES ($1, $2::int8, $3)",
                      {PgParam::Text(owner), PgParam::Int(static_cast<int64_t>(root.counter)),
                       PgParam::Bytes(sealed->data(), sealed->size())});
        !w.ok()) {
      return w.status();
    }
    root.owners[owner] = root.counter;
  }
  auto sealed = sealer_.SealBlob(kManifestRootMagic, EncodeManifestRoot(root));
  if (!sealed.ok()) return sealed.status();
  if (auto w = Exec("UPDATE pqcd_manifest SET sealed = $1, updated_at = now() WHERE id = 1",
                    {PgParam::Bytes(sealed->data(), sealed->size())});
      !w.ok()) {
    return w.status();
  }
  spdlog::info("key store: the database's manifest was split into {} owner row(s)",
               by_owner.size());
  return absl::OkStatus();
}

}  // namespace pqcd::server::internal
