#include "keystore/pg_conn.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace pqcd::server::internal {

PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) PQclear(r_);
    r_ = std::exchange(o.r_, nullptr);
  }
  return *this;
}

PgResult::~PgResult() {
  if (r_ != nullptr) PQclear(r_);
}

int PgResult::rows() const {
  return r_ == nullptr ? 0 : PQntuples(r_);
}

int64_t PgResult::affected() const {
  const char* n = r_ == nullptr ? "" : PQcmdTuples(r_);
  return *n == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}

bool PgResult::IsNull(int row, int col) const {
  return PQgetisnull(r_, row, col) != 0;
}

std::string PgResult::Bytes(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
}

int64_t PgResult::Int(int row, int col) const {
  const auto* p = reinterpret_cast<const uint8_t*>(PQgetvalue(r_, row, col));
  const int n = PQgetlength(r_, row, col);
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  // Sign-extend the big-endian two's complement value of n bytes.
  if (n > 0 && n < 8 && (p[0] & 0x80) != 0) v |= ~uint64_t{0} << (8 * n);
  return static_cast<int64_t>(v);
}

absl::StatusOr<std::unique_ptr<PgConn>> PgConn::Connect(const std::string& dsn,
                                                        int connect_timeout_s) {
  const std::string timeout = std::to_string(connect_timeout_s);
  // expand_dbname=1: "dbname" holds the whole DSN (URI or keywords). libpq processes the keywords
  // in order and the expanded DSN overrides the ones before it, so a DSN's own connect_timeout or
  // application_name wins over these defaults.
  const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), "pqcd", dsn.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (c == nullptr) return absl::ResourceExhaustedError("libpq: out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg(absl::StripAsciiWhitespace(PQerrorMessage(c)));
    PQfinish(c);
    return absl::UnavailableError(absl::StrCat("cannot connect to PostgreSQL: ", msg));
  }
  // Server notices ("relation ... already exists, skipping") would go to stderr unformatted.
  PQsetNoticeProcessor(
      c, [](void*, const char* message) { spdlog::debug("PostgreSQL: {}", message); }, nullptr);
  return std::unique_ptr<PgConn>(new PgConn(c));
}

PgConn::~PgConn() {
  if (c_ != nullptr) PQfinish(c_);
}

bool PgConn::healthy() const {
  return c_ != nullptr && PQstatus(c_) == CONNECTION_OK;
}

absl::Status PgConn::ErrorStatus(pg_result* r, const std::string& what) const {
  std::string msg(absl::StripAsciiWhitespace(r != nullptr ? PQresultErrorMessage(r) : ""));
  if (msg.empty()) msg = std::string(absl::StripAsciiWhitespace(PQerrorMessage(c_)));
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string text = absl::StrCat(what, ": ", msg);
  if (PQstatus(c_) != CONNECTION_OK) {
    return absl::UnavailableError(absl::StrCat("PostgreSQL connection lost: ", text));
  }
  if (state != nullptr && std::strcmp(state, "23505") == 0) return absl::AlreadyExistsError(text);
  // Class 08 (connection exception), 57P (operator intervention: shutdown, admin shutdown).
  if (state != nullptr &&
      (std::strncmp(state, "08", 2) == 0 || std::strncmp(state, "57P", 3) == 0)) {
    return absl::UnavailableError(absl::StrCat("PostgreSQL unavailable: ", text));
  }
  return absl::InternalError(absl::StrCat("PostgreSQL: ", text));
}

absl::StatusOr<PgResult> PgConn::Exec(const std::string& sql, const std::vector<PgParam>& params) {
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  for (const PgParam& p : params) {
    values.push_back(p.value.data());
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  PGresult* r = PQexecParams(c_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                             values.data(), lengths.data(), formats.data(), /*resultFormat=*/1);
  const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    // The statement's first word names it in messages ("SELECT", "INSERT", ...).
    std::string what = sql.substr(0, sql.find(' '));
    absl::Status status = ErrorStatus(r, what);
    if (r != nullptr) PQclear(r);
    return status;
  }
  return PgResult(r);
}

absl::Status PgConn::ExecScript(const std::string& sql) {
  PGresult* r = PQexec(c_, sql.c_str());
  const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  absl::Status status = absl::OkStatus();
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) status = ErrorStatus(r, "migration");
  if (r != nullptr) PQclear(r);
  return status;
}

int PgConn::socket() const {
  return PQsocket(c_);
}

absl::Status PgConn::ConsumeInput() {
  if (PQconsumeInput(c_) != 1 || PQstatus(c_) != CONNECTION_OK) {
    return absl::UnavailableError(absl::StrCat("PostgreSQL connection lost: ",
                                               absl::StripAsciiWhitespace(PQerrorMessage(c_))));
  }
  return absl::OkStatus();
}

std::vector<std::string> PgConn::TakeNotifications() {
  std::vector<std::string> out;
  while (PGnotify* n = PQnotifies(c_)) {
    out.emplace_back(n->extra != nullptr ? n->extra : "");
    PQfreemem(n);
  }
  return out;
}

}  // namespace pqcd::server::internal
