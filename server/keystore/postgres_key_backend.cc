// The PostgreSQL backend (--key-store postgres://...): the database is the truth, the cache its
// copy. Changes run inside a database transaction that holds the manifest's root row (BeginChange
// brings the cache up to date first, so KeyStore's checks see every replica's changes); a thread
// follows the changes made elsewhere (SyncLoop). The SQL side is PgBackend (pg_backend.h).
#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "key_cache.h"
#include "keystore/pg_backend.h"
#include "spdlog/spdlog.h"

namespace pqcd::server::internal {
namespace {

class PostgresKeyBackend final : public SealedKeyBackend {
 public:
  explicit PostgresKeyBackend(KeyCache& cache) : SealedKeyBackend(cache) {}
  ~PostgresKeyBackend() override { Stop(); }

  absl::Status Open(const KeyStoreOptions& options, LoadReport& rep);

  KeyStoreHealth health() const override;
  absl::Status CheckServing() const override;
  absl::Status BeginChange() override;
  absl::Status CommitChange() override;
  void AbortChange() override { pg_->Rollback(); }
  absl::Status RemoveVersions(const std::string& owner, const std::string& key_id,
                              const std::vector<uint32_t>& versions) override;
  void Stop() override;

 private:
  // Inside the change's transaction; counted at CommitChange.
  absl::Status WriteOwnerManifest(const std::string& owner, Manifest m) override;
  absl::Status PutRecord(const KeyRecord& rec, const std::string& uid, bool replace) override;

  void MarkSynced() {
    last_sync_ms_.store(SteadyMs(), std::memory_order_relaxed);
    sync_ok_.store(true, std::memory_order_relaxed);
  }
  bool Stale() const {
    return max_staleness_ms_ > 0 &&
           SteadyMs() - last_sync_ms_.load(std::memory_order_relaxed) > max_staleness_ms_;
  }
  // Brings the cache to the database's manifest m (write_mu held): loads the listed versions it
  // lacks (checking each row against its sealed metadata and the manifest's uid), drops what m
  // no longer lists. A manifest older than one already applied is refused (the database was
  // rolled back to an earlier state: deleted keys might come back).
  absl::Status ApplyManifest(const Manifest& m);
  // DATA_LOSS when the database's counter is older than one already applied (write_mu held).
  absl::Status NotRolledBack(uint64_t counter) const;
  // One synchronization from the sync thread (takes write_mu).
  void SyncOnce();
  void SyncLoop();
  void UpdateServing();

  std::unique_ptr<PgBackend> pg_;
  uint64_t pending_counter_ = 0;  // guarded by write_mu: the counter the change in progress commits
  int64_t reconcile_interval_ms_ = 2000;
  int64_t max_staleness_ms_ = 30000;
  std::function<void(bool)> on_serving_change_;
  std::atomic<int64_t> last_sync_ms_{0};  // steady clock, of the last successful synchronization
  std::atomic<bool> sync_ok_{false};
  std::atomic<uint64_t> syncs_{0};
  std::atomic<bool> stop_{false};
  std::thread sync_thread_;
  bool serving_reported_ = true;  // sync thread only
  // Problems found by the last ApplyManifest (write_mu held), for the load report.
  std::vector<std::string> apply_problems_;
};

void PostgresKeyBackend::Stop() {
  if (!sync_thread_.joinable()) return;
  stop_.store(true);
  pg_->Wake();
  sync_thread_.join();
}

KeyStoreHealth PostgresKeyBackend::health() const {
  KeyStoreHealth h;
  h.backend = "postgres";
  h.up = sync_ok_.load(std::memory_order_relaxed) && pg_->listening();
  h.serving = !Stale();
  h.sync_age_s = (SteadyMs() - last_sync_ms_.load(std::memory_order_relaxed)) / 1000.0;
  h.reconnects = pg_->reconnects();
  h.syncs = syncs_.load(std::memory_order_relaxed);
  return h;
}

absl::Status PostgresKeyBackend::CheckServing() const {
  if (!Stale()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "the key store has not reached its database for more than ", max_staleness_ms_ / 1000.0,
      " s (--key-store-max-staleness): held keys are not used until it has"));
}

absl::Status PostgresKeyBackend::Open(const KeyStoreOptions& options, LoadReport& rep) {
  if (!IsPostgresUri(options.postgres_dsn)) {
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
    auto kek = LoadKek(options.kek_file, options.allow_shared_kek_file);
    if (!kek.ok()) return kek.status();
    sealer_ = std::make_unique<RecordSealer>(*kek);
  }
  reconcile_interval_ms_ = std::max<int64_t>(options.reconcile_interval_ms, 10);
  max_staleness_ms_ = std::max<int64_t>(options.max_staleness_ms, 0);
  on_serving_change_ = options.on_serving_change;
  auto backend = PgBackend::Open(options.postgres_dsn, *sealer_, options.start_timeout_ms);
  if (!backend.ok()) return backend.status();
  pg_ = std::move(*backend);
  {
    std::lock_guard write_lock(cache_.write_mu);
    if (auto st = pg_->BeginSnapshot(); !st.ok()) return st;
    auto m = pg_->ReadManifest(/*for_update=*/false);
    absl::Status st = m.status();
    if (st.ok()) st = ApplyManifest(*m);
    pg_->Rollback();
    if (!st.ok()) return st;
    rep.problems = std::move(apply_problems_);
    apply_problems_.clear();
  }
  MarkSynced();
  {
    std::shared_lock lock(cache_.mu);
    rep.loaded = cache_.count;
  }
  rep.corrupted = rep.problems.size();
  rep.manifest_counter = manifest_counter_;  // (ApplyManifest logged each problem)
  spdlog::info(
      "key store: PostgreSQL {}: loaded {} key versions ({} problem(s); manifest #{}); reconcile "
      "every {} ms, max staleness {} ms",
      pg_->redacted_dsn(), rep.loaded, rep.problems.size(), manifest_counter_,
      reconcile_interval_ms_, max_staleness_ms_);
  sync_thread_ = std::thread([this] { SyncLoop(); });
  return absl::OkStatus();
}

absl::Status PostgresKeyBackend::BeginChange() {
  if (auto st = pg_->Begin(); !st.ok()) return st;
  // The root row's lock serializes writers; the owners' rows are read only when another
  // replica changed something since this one last synchronized.
  auto counter = pg_->LockCounter();
  absl::Status st = counter.status();
  if (st.ok() && *counter != manifest_counter_) {
    st = NotRolledBack(*counter);
    if (st.ok()) {
      auto m = pg_->ReadManifest(/*for_update=*/false);
      st = m.ok() ? ApplyManifest(*m) : m.status();
    }
  }
  if (!st.ok()) {
    pg_->Rollback();
    return st;
  }
  pending_counter_ = manifest_counter_;
  return absl::OkStatus();
}

absl::Status PostgresKeyBackend::CommitChange() {
  if (auto st = pg_->Commit(pending_counter_); !st.ok()) return st;
  manifest_counter_ = pending_counter_;
  MarkSynced();
  return absl::OkStatus();
}

absl::Status PostgresKeyBackend::WriteOwnerManifest(const std::string& owner, Manifest m) {
  m.counter = manifest_counter_ + 1;
  if (auto st = pg_->WriteManifest(owner, m); !st.ok()) return st;
  pending_counter_ = m.counter;
  return absl::OkStatus();
}

absl::Status PostgresKeyBackend::PutRecord(const KeyRecord& rec, const std::string& uid,
                                           bool /*replace: a dead row is always replaced*/) {
  auto sealed = Seal(rec, uid);
  if (!sealed.ok()) return sealed.status();
  return pg_->PutRecord(
      {rec.owner, rec.key_id, rec.version, uid, std::string(sealed->begin(), sealed->end())});
}

absl::Status PostgresKeyBackend::RemoveVersions(const std::string& owner, const std::string& key_id,
                                                const std::vector<uint32_t>& versions) {
  Manifest m = WithoutVersions(owner, key_id, versions);
  // One transaction: the rows and their manifest entries go together.
  for (uint32_t v : versions) {
    if (auto st = pg_->DeleteRecord(owner, key_id, v); !st.ok()) return st;
  }
  return WriteOwnerManifest(owner, std::move(m));
}

absl::Status PostgresKeyBackend::NotRolledBack(uint64_t counter) const {
  if (counter >= manifest_counter_) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      "the key store database's manifest went back from #", manifest_counter_, " to #", counter,
      ": the database was restored to an earlier state; refusing it (deleted keys could come "
      "back). Restart the replicas once this is intended"));
}

absl::Status PostgresKeyBackend::ApplyManifest(const Manifest& m) {
  if (auto st = NotRolledBack(m.counter); !st.ok()) return st;
  using Triple = std::tuple<std::string, std::string, uint32_t>;
  std::vector<Triple> need;
  {
    std::shared_lock lock(cache_.mu);
    for (const auto& [id, mk] : m.keys) {
      auto it = cache_.keys.find(id);
      for (const auto& [v, uid] : mk.versions) {
        if (it == cache_.keys.end()) {
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
    auto rows = pg_->FetchRecords(need);
    if (!rows.ok()) return rows.status();
    for (PgRecordRow& row : *rows) {
      auto mk = m.keys.find({row.owner, row.key_id});
      if (mk == m.keys.end()) continue;  // not listed: dead (deleted, or put back from a backup)
      auto listed = mk->second.versions.find(row.version);
      if (listed == mk->second.versions.end() || listed->second != row.uid) continue;
      const KeyName id{row.owner, row.key_id};
      OpenResult opened =
          sealer_->Open(reinterpret_cast<const uint8_t*>(row.sealed.data()), row.sealed.size());
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
                     std::pair{cache_.ToRecord(std::move(opened), row.owner), listed->second});
    }
  }
  std::vector<std::shared_ptr<const SecretBytes>> doomed;  // released after the lock
  {
    std::unique_lock lock(cache_.mu);
    for (auto it = cache_.keys.begin(); it != cache_.keys.end();) {
      auto mk = m.keys.find(it->first);
      const KeyEntry& e = it->second;
      std::vector<uint32_t> drop;
      for (const auto& [v, rec] : e.versions) {
        const bool keep = mk != m.keys.end() && mk->second.versions.contains(v) &&
                          mk->second.versions.at(v) == e.uids.at(v);
        if (!keep) drop.push_back(v);
      }
      auto next = std::next(it);
      for (uint32_t v : drop) cache_.Erase(it, v, doomed);  // the last one may erase the key
      it = next;
    }
    for (auto& [t, rec_uid] : loaded) {
      auto& [rec, uid] = rec_uid;
      const KeyName id{std::get<0>(t), std::get<1>(t)};
      auto it = cache_.keys.find(id);
      if (it != cache_.keys.end() && it->second.algorithm != rec.algorithm) {
        problems.push_back(absl::StrCat(Describe(id, rec.version),
                                        ": algorithm differs from the key's other versions"));
        continue;
      }
      cache_.Insert(std::move(rec), std::move(uid));
    }
    for (const auto& [id, mk] : m.keys) {
      auto it = cache_.keys.find(id);
      if (it != cache_.keys.end()) it->second.high_water = mk.high_water;
      for (const auto& [v, uid] : mk.versions) {
        if (it == cache_.keys.end() || !it->second.versions.contains(v)) {
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
  manifest_counter_ = m.counter;
  for (const auto& p : problems) spdlog::warn("key store: {}", p);
  apply_problems_ = std::move(problems);
  return absl::OkStatus();
}

void PostgresKeyBackend::SyncOnce() {
  std::lock_guard write_lock(cache_.write_mu);
  absl::Status st;
  auto counter = pg_->ReadCounter();
  st = counter.status();
  if (st.ok() && *counter != manifest_counter_) st = NotRolledBack(*counter);
  if (st.ok() && *counter != manifest_counter_) {
    // One snapshot for the manifest and the rows, so a change committed meanwhile by another
    // replica cannot make listed rows look missing.
    st = pg_->BeginSnapshot();
    if (st.ok()) {
      auto m = pg_->ReadManifest(/*for_update=*/false);
      st = m.status();
      if (st.ok()) st = ApplyManifest(*m);
      pg_->Rollback();
      if (st.ok()) syncs_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  const bool was_ok = sync_ok_.load(std::memory_order_relaxed);
  if (st.ok()) {
    MarkSynced();
    if (!was_ok) spdlog::info("key store: synchronized with the database again");
  } else {
    sync_ok_.store(false, std::memory_order_relaxed);
    if (was_ok) spdlog::warn("key store: synchronization failed: {}", std::string(st.message()));
  }
}

void PostgresKeyBackend::UpdateServing() {
  const bool serving = !Stale();
  if (serving == serving_reported_) return;
  serving_reported_ = serving;
  if (serving) {
    spdlog::info("key store: held keys are served again");
  } else {
    spdlog::error(
        "key store: no synchronization with the database for more than {} ms: held keys are not "
        "used until it is reachable again",
        max_staleness_ms_);
  }
  if (on_serving_change_) on_serving_change_(serving);
}

void PostgresKeyBackend::SyncLoop() {
  int backoff_ms = 100;
  bool listen_ok = true;
  while (!stop_.load()) {
    const int wait_ms = listen_ok ? static_cast<int>(reconcile_interval_ms_) : backoff_ms;
    absl::Status st = pg_->WaitForChange(wait_ms);
    if (stop_.load()) break;
    if (!st.ok()) {
      if (listen_ok) {
        spdlog::warn("key store: lost the database's notifications: {} (retrying with backoff)",
                     std::string(st.message()));
      }
      listen_ok = false;
      sync_ok_.store(false, std::memory_order_relaxed);
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

}  // namespace

absl::StatusOr<std::unique_ptr<KeyBackend>> OpenPostgresKeyBackend(const KeyStoreOptions& options,
                                                                   KeyCache& cache,
                                                                   LoadReport& report) {
  auto backend = std::make_unique<PostgresKeyBackend>(cache);
  if (auto st = backend->Open(options, report); !st.ok()) return st;
  return std::unique_ptr<KeyBackend>(std::move(backend));
}

}  // namespace pqcd::server::internal
