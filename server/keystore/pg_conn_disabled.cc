// PgConn for builds without libpq (PQCD_WITH_POSTGRES=OFF): Connect refuses, so no other member
// is ever reached on a connection.
#include "keystore/pg_conn.h"

namespace pqcd::server::internal {

PgResult& PgResult::operator=(PgResult&& o) noexcept {
  r_ = o.r_;
  o.r_ = nullptr;
  return *this;
}
PgResult::~PgResult() = default;
int PgResult::rows() const {
  return 0;
}
int64_t PgResult::affected() const {
  return 0;
}
bool PgResult::IsNull(int, int) const {
  return true;
}
std::string PgResult::Bytes(int, int) const {
  return {};
}
int64_t PgResult::Int(int, int) const {
  return 0;
}

absl::StatusOr<std::unique_ptr<PgConn>> PgConn::Connect(const std::string&, int) {
  return absl::UnimplementedError(
      "this pqcd was built without PostgreSQL support (PQCD_WITH_POSTGRES=OFF): --key-store "
      "postgres://... is not available");
}
PgConn::~PgConn() = default;
bool PgConn::healthy() const {
  return false;
}
absl::StatusOr<PgResult> PgConn::Exec(const std::string&, const std::vector<PgParam>&) {
  return absl::UnavailableError("no PostgreSQL support in this build");
}
absl::Status PgConn::ExecScript(const std::string&) {
  return absl::UnavailableError("no PostgreSQL support in this build");
}
int PgConn::socket() const {
  return -1;
}
absl::Status PgConn::ConsumeInput() {
  return absl::UnavailableError("no PostgreSQL support");
}
std::vector<std::string> PgConn::TakeNotifications() {
  return {};
}
absl::Status PgConn::ErrorStatus(pg_result*, const std::string&) const {
  return absl::UnavailableError("no PostgreSQL support");
}

}  // namespace pqcd::server::internal
