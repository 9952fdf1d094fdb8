// A small RAII layer over libpq for the PostgreSQL key store: one connection, parameterized
// statements (parameters and results in binary form, so bytea needs no escaping), and
// LISTEN/NOTIFY. Not thread-safe: each connection is used by one thread at a time.
//
// Errors: a lost or refused connection is UNAVAILABLE; a unique-key violation (SQLSTATE 23505)
// is ALREADY_EXISTS; anything else is INTERNAL. Messages carry the server's text, never the
// connection string (which may hold a password): use RedactDsn to name a database in logs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct pg_conn;
struct pg_result;

namespace pqcd::server::internal {

// The connection string with any password removed (URI user:password@ and password=...).
std::string RedactDsn(std::string_view dsn);
// True for "postgres://..." and "postgresql://..." (the forms --key-store accepts).
bool IsPostgresUri(std::string_view value);

// One statement parameter: text (sent as text, for integers too) or bytes (sent as binary bytea).
struct PgParam {
  static PgParam Text(std::string s) { return PgParam{std::move(s), false}; }
  static PgParam Int(int64_t v) { return PgParam{std::to_string(v), false}; }
  static PgParam Bytes(const uint8_t* p, size_t n) {
    return PgParam{std::string(reinterpret_cast<const char*>(p), n), true};
  }
  static PgParam Bytes(std::string_view s) { return PgParam{std::string(s), true}; }
  std::string value;
  bool binary = false;
};

// A query result with binary columns. Column types the store reads: bytea/text (raw bytes),
// int4, int8 (big-endian on the wire).
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(pg_result* r) : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&& o) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  ~PgResult();

  int rows() const;
  int64_t affected() const;  // rows an INSERT/UPDATE/DELETE touched
  bool IsNull(int row, int col) const;
  std::string Bytes(int row, int col) const;  // bytea or text, raw
  int64_t Int(int row, int col) const;        // int2, int4 or int8 (by length)

 private:
  pg_result* r_ = nullptr;
};

class PgConn {
 public:
  // Connects (connect_timeout_s: libpq's connect_timeout, unless the DSN sets one).
  static absl::StatusOr<std::unique_ptr<PgConn>> Connect(const std::string& dsn,
                                                         int connect_timeout_s);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  bool healthy() const;  // the connection is up (as far as libpq knows)

  // Runs one statement with parameters ($1, $2, ...); results in binary form.
  absl::StatusOr<PgResult> Exec(const std::string& sql, const std::vector<PgParam>& params = {});
  // Runs a script of several statements without parameters (schema migrations).
  absl::Status ExecScript(const std::string& sql);

  // LISTEN support: the socket to poll, reading what arrived, and the pending notifications'
  // payloads (in order). ConsumeInput fails (UNAVAILABLE) when the connection is lost.
  int socket() const;
  absl::Status ConsumeInput();
  std::vector<std::string> TakeNotifications();

 private:
  explicit PgConn(pg_conn* c) : c_(c) {}
  absl::Status ErrorStatus(pg_result* r, const std::string& what) const;
  pg_conn* c_ = nullptr;
};

}  // namespace pqcd::server::internal
