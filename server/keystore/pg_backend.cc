#include "keystore/pg_backend.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace pqcd::server::internal {
namespace {

constexpr int kConnectTimeoutS = 3;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PgBackend::PgBackend(std::string dsn, const RecordSealer& sealer)
    : dsn_(std::move(dsn)), redacted_dsn_(RedactDsn(dsn_)), sealer_(sealer) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

PgBackend::~PgBackend() {
  if (wake_fd_ >= 0) close(wake_fd_);
}

absl::StatusOr<std::unique_ptr<PgBackend>> PgBackend::Open(const std::string& dsn,
                                                           const RecordSealer& sealer,
                                                           int64_t start_timeout_ms) {
  std::unique_ptr<PgBackend> b(new PgBackend(dsn, sealer));
  if (b->wake_fd_ < 0) return absl::InternalError("eventfd failed");
  const int64_t deadline = SteadyMs() + start_timeout_ms;
  int backoff_ms = 100;
  while (true) {
    absl::Status st = b->EnsureWriteConn();
    if (st.ok()) break;
    if (SteadyMs() + backoff_ms > deadline) return st;
    spdlog::warn("key store: {} (retrying in {} ms)", std::string(st.message()), backoff_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(backoff_ms * 2, 5000);
  }
  if (auto st = b->Migrate(); !st.ok()) return st;
  if (auto st = b->EnsureManifestRow(); !st.ok()) return st;
  return b;
}

absl::Status PgBackend::EnsureWriteConn() {
  if (write_ != nullptr && write_->healthy()) return absl::OkStatus();
  write_.reset();
  in_tx_ = false;
  auto c = PgConn::Connect(dsn_, kConnectTimeoutS);
  if (!c.ok()) return c.status();
  write_ = std::move(*c);
  if (write_connected_once_) reconnects_.fetch_add(1, std::memory_order_relaxed);
  write_connected_once_ = true;
  return absl::OkStatus();
}

absl::StatusOr<PgResult> PgBackend::Exec(const std::string& sql,
                                         const std::vector<PgParam>& params) {
  if (!in_tx_) {
    if (auto st = EnsureWriteConn(); !st.ok()) return st;
  } else if (write_ == nullptr) {
    return absl::UnavailableError("PostgreSQL connection lost during a transaction");
  }
  auto r = write_->Exec(sql, params);
  if (!r.ok() && !write_->healthy()) {
    write_.reset();  // reconnect on next use
    in_tx_ = false;
  }
  return r;
}

absl::Status PgBackend::EnsureManifestRow() {
  auto sealed = sealer_.SealBlob(kManifestRootMagic, EncodeManifestRoot(ManifestRoot{}));
  if (!sealed.ok()) return sealed.status();
  auto r = Exec(
      "INSERT INTO pqcd_manifest (id, counter, sealed) VALUES (1, 0, $1) ON CONFLICT (id) DO "
      "NOTHING",
      {PgParam::Bytes(sealed->data(), sealed->size())});
  if (!r.ok()) return r.status();
  // Opening it checks the KEK (a hard error when the database was sealed under another one).
  return ReadManifest(false).status();
}

absl::StatusOr<std::vector<uint8_t>> OpenSealedRow(const RecordSealer& sealer, const char magic[4],
                                                   const std::string& sealed,
                                                   const std::string& what) {
  std::vector<uint8_t> plain;
  std::string reason;
  const OpenFailure f = sealer.OpenBlob(magic, reinterpret_cast<const uint8_t*>(sealed.data()),
                                        sealed.size(), &plain, &reason);
  if (f == OpenFailure::kWrongKek) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the key store database's ", what, " is sealed under a different KEK than --kek-file"));
  }
  if (f != OpenFailure::kNone) {
    return absl::DataLossError(
        absl::StrCat("the key store database's ", what, " does not authenticate: ", reason));
  }
  return plain;
}

absl::Status PgBackend::Begin() {
  if (auto r = Exec("BEGIN"); !r.ok()) return r.status();
  in_tx_ = true;
  return absl::OkStatus();
}

absl::Status PgBackend::BeginSnapshot() {
  if (auto r = Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); !r.ok()) return r.status();
  in_tx_ = true;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> PgBackend::ReadCounter() {
  auto r = Exec("SELECT counter FROM pqcd_manifest WHERE id = 1");
  if (!r.ok()) return r.status();
  if (r->rows() != 1) return absl::DataLossError("the key store database has no manifest row");
  return static_cast<uint64_t>(r->Int(0, 0));
}

absl::StatusOr<uint64_t> PgBackend::LockCounter() {
  auto r = Exec("SELECT counter FROM pqcd_manifest WHERE id = 1 FOR UPDATE");
  if (!r.ok()) return r.status();
  if (r->rows() != 1) return absl::DataLossError("the key store database has no manifest row");
  return static_cast<uint64_t>(r->Int(0, 0));
}

absl::StatusOr<ManifestRoot> PgBackend::ReadRoot(bool for_update) {
  auto r = Exec(for_update ? "SELECT counter, sealed FROM pqcd_manifest WHERE id = 1 FOR UPDATE"
                           : "SELECT counter, sealed FROM pqcd_manifest WHERE id = 1");
  if (!r.ok()) return r.status();
  if (r->rows() != 1) return absl::DataLossError("the key store database has no manifest row");
  const uint64_t column = static_cast<uint64_t>(r->Int(0, 0));
  auto plain = OpenSealedRow(sealer_, kManifestRootMagic, r->Bytes(0, 1), "manifest");
  if (!plain.ok()) return plain.status();
  ManifestRoot root;
  if (!DecodeManifestRoot(plain->data(), plain->size(), &root)) {
    return absl::DataLossError("the key store database's manifest is malformed");
  }
  if (root.counter != column) {
    return absl::DataLossError(absl::StrCat("the key store database's manifest counter column (",
                                            column, ") differs from its sealed counter (",
                                            root.counter, "): the row was altered"));
  }
  return root;
}

absl::StatusOr<Manifest> PgBackend::ReadManifest(bool for_update) {
  auto root = ReadRoot(for_update);
  if (!root.ok()) return root.status();
  auto r = Exec("SELECT owner, counter, sealed FROM pqcd_manifest_owners");
  if (!r.ok()) return r.status();
  Manifest m;
  m.counter = root->counter;
  size_t seen = 0;
  for (int i = 0; i < r->rows(); ++i) {
    const std::string row_owner = r->Bytes(i, 0);
    const uint64_t column = static_cast<uint64_t>(r->Int(i, 1));
    const std::string what = absl::StrCat("manifest row of owner '", row_owner, "'");
    auto plain = OpenSealedRow(sealer_, kManifestShardMagic, r->Bytes(i, 2), what);
    if (!plain.ok()) return plain.status();
    std::string owner;
    Manifest part;
    if (!DecodeManifestShard(plain->data(), plain->size(), &owner, &part) || owner != row_owner) {
      return absl::DataLossError(
          absl::StrCat("the key store database's ", what, " is malformed or another owner's"));
    }
    auto listed = root->owners.find(owner);
    if (listed == root->owners.end() || listed->second != part.counter || column != part.counter) {
      return absl::DataLossError(absl::StrCat(
          "the key store database's ", what, " is not the one its manifest lists (counter ",
          part.counter, ", column ", column, ", listed ",
          listed == root->owners.end() ? std::string("none") : std::to_string(listed->second),
          "): the row was put back from a backup or altered"));
    }
    ++seen;
    for (auto& [id, k] : part.keys) m.keys.emplace(id, std::move(k));
  }
  if (seen != root->owners.size()) {
    return absl::DataLossError(absl::StrCat("the key store database's manifest lists ",
                                            root->owners.size(), " owner(s) but ", seen,
                                            " owner row(s) were found: rows were removed"));
  }
  return m;
}

absl::Status PgBackend::WriteRoot(const ManifestRoot& root, uint64_t previous_counter) {
  auto sealed = sealer_.SealBlob(kManifestRootMagic, EncodeManifestRoot(root));
  if (!sealed.ok()) return sealed.status();
  auto r = Exec(
      "UPDATE pqcd_manifest SET counter = $1::int8, sealed = $2, updated_at = now() "
      "WHERE id = 1 AND counter = $3::int8",
      {PgParam::Int(static_cast<int64_t>(root.counter)),
       PgParam::Bytes(sealed->data(), sealed->size()),
       PgParam::Int(static_cast<int64_t>(previous_counter))});
  if (!r.ok()) return r.status();
  if (r->affected() != 1) {
    return absl::AbortedError("the key store manifest changed during a change (not locked?)");
  }
  return absl::OkStatus();
}

absl::Status PgBackend::PutRecord(const PgRecordRow& row) {
  return Exec(
             "INSERT INTO pqcd_records (owner, key_id, version, uid, sealed) "
             "VALUES ($1, $2, $3::int4, $4, $5) ON CONFLICT (owner, key_id, version) DO UPDATE "
             "SET uid = EXCLUDED.uid, sealed = EXCLUDED.sealed, created_at = now()",
             {PgParam::Text(row.owner), PgParam::Text(row.key_id), PgParam::Int(row.version),
              PgParam::Bytes(row.uid), PgParam::Bytes(row.sealed)})
      .status();
}

absl::Status PgBackend::DeleteRecord(const std::string& owner, const std::string& key_id,
                                     uint32_t version) {
  return Exec("DELETE FROM pqcd_records WHERE owner = $1 AND key_id = $2 AND version = $3::int4",
              {PgParam::Text(owner), PgParam::Text(key_id), PgParam::Int(version)})
      .status();
}

absl::Status PgBackend::WriteManifest(const std::string& owner, const Manifest& m) {
  auto root = ReadRoot(/*for_update=*/false);  // locked by the change's LockCounter
  if (!root.ok()) return root.status();
  if (m.counter == 0 || root->counter != m.counter - 1) {
    return absl::AbortedError("the key store manifest changed during a change (not locked?)");
  }
  for (const auto& [id, k] : m.keys) {
    if (id.first != owner) return absl::InternalError("a manifest row lists another owner's key");
  }
  if (m.keys.empty()) {
    if (auto r = Exec("DELETE FROM pqcd_manifest_owners WHERE owner = $1", {PgParam::Text(owner)});
        !r.ok()) {
      return r.status();
    }
    root->owners.erase(owner);
  } else {
    auto sealed = sealer_.SealBlob(kManifestShardMagic, EncodeManifestShard(owner, m));
    if (!sealed.ok()) return sealed.status();
    if (auto r = Exec(
            "INSERT INTO pqcd_manifest_owners (owner, counter, sealed) VALUES ($1, $2::int8, $3) "
            "ON CONFLICT (owner) DO UPDATE SET counter = EXCLUDED.counter, sealed = "
            "EXCLUDED.sealed, updated_at = now()",
            {PgParam::Text(owner), PgParam::Int(static_cast<int64_t>(m.counter)),
             PgParam::Bytes(sealed->data(), sealed->size())});
        !r.ok()) {
      return r.status();
    }
    root->owners[owner] = m.counter;
  }
  root->counter = m.counter;
  return WriteRoot(*root, m.counter - 1);
}

absl::Status PgBackend::Commit(uint64_t counter) {
  if (auto r = Exec("SELECT pg_notify($1, $2)",
                    {PgParam::Text(kPgChannel), PgParam::Text(std::to_string(counter))});
      !r.ok()) {
    Rollback();
    return r.status();
  }
  auto r = Exec("COMMIT");
  in_tx_ = false;
  if (!r.ok()) {
    // The outcome is unknown when the connection broke during COMMIT: the next synchronization
    // shows the database's state either way.
    return absl::UnavailableError(
        absl::StrCat(r.status().message(), " (the change may or may not have been committed)"));
  }
  return absl::OkStatus();
}

void PgBackend::Rollback() {
  if (in_tx_ && write_ != nullptr && write_->healthy()) (void)write_->Exec("ROLLBACK");
  in_tx_ = false;
}

absl::StatusOr<std::vector<PgRecordRow>> PgBackend::FetchRecords(
    const std::vector<std::tuple<std::string, std::string, uint32_t>>& which) {
  std::vector<PgRecordRow> out;
  auto take = [&](const PgResult& r) {
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back(PgRecordRow{r.Bytes(i, 0), r.Bytes(i, 1), static_cast<uint32_t>(r.Int(i, 2)),
                                r.Bytes(i, 3), r.Bytes(i, 4)});
    }
  };
  if (which.size() > 32) {
    // Many (start-up, or a replica that was away): one scan; the caller ignores extra rows.
    auto r = Exec("SELECT owner, key_id, version, uid, sealed FROM pqcd_records");
    if (!r.ok()) return r.status();
    take(*r);
    return out;
  }
  for (const auto& [owner, key_id, version] : which) {
    auto r = Exec(
        "SELECT owner, key_id, version, uid, sealed FROM pqcd_records "
        "WHERE owner = $1 AND key_id = $2 AND version = $3::int4",
        {PgParam::Text(owner), PgParam::Text(key_id), PgParam::Int(version)});
    if (!r.ok()) return r.status();
    take(*r);
  }
  return out;
}

void PgBackend::WaitOnWakeFd(int timeout_ms) {
  pollfd p{wake_fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) > 0) {
    uint64_t v;
    (void)!read(wake_fd_, &v, sizeof v);
  }
}

absl::Status PgBackend::WaitForChange(int timeout_ms) {
  if (listen_ == nullptr || !listen_->healthy()) {
    listen_.reset();
    listening_.store(false, std::memory_order_relaxed);
    auto c = PgConn::Connect(dsn_, kConnectTimeoutS);
    absl::Status st = c.status();
    if (st.ok()) {
      st = (*c)->Exec(absl::StrCat("LISTEN ", kPgChannel)).status();
    }
    if (!st.ok()) {
      WaitOnWakeFd(timeout_ms);
      return st;
    }
    listen_ = std::move(*c);
    listening_.store(true, std::memory_order_relaxed);
    if (listen_connected_once_) reconnects_.fetch_add(1, std::memory_order_relaxed);
    listen_connected_once_ = true;
    return absl::OkStatus();  // (re)connected: the caller synchronizes now
  }
  if (!listen_->TakeNotifications().empty()) return absl::OkStatus();
  pollfd p[2] = {{listen_->socket(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  int n;
  do {
    n = poll(p, 2, timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (p[1].revents != 0) {
    uint64_t v;
    (void)!read(wake_fd_, &v, sizeof v);
  }
  if (p[0].revents != 0) {
    if (auto st = listen_->ConsumeInput(); !st.ok()) {
      listen_.reset();
      listening_.store(false, std::memory_order_relaxed);
      return st;
    }
    (void)listen_->TakeNotifications();
  }
  return absl::OkStatus();
}

void PgBackend::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

}  // namespace pqcd::server::internal
