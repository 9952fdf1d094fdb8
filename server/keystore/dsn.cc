// Connection-string helpers of pg_conn.h that need no libpq (built with or without it).
#include <string>
#include <string_view>

#include "keystore/pg_conn.h"

namespace pqcd::server::internal {

std::string RedactDsn(std::string_view dsn) {
  std::string out(dsn);
  if (IsPostgresUri(out)) {
    // scheme://user:password@host...: drop what follows the first ':' of the userinfo.
    const size_t start = out.find("://") + 3;
    const size_t at = out.find('@', start);
    const size_t slash = out.find('/', start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // password=... as a keyword or a URI query parameter.
  for (size_t pos = 0; (pos = out.find("password=", pos)) != std::string::npos;) {
    const size_t value = pos + 9;
    size_t end = out.find_first_of("& ", value);
    if (end == std::string::npos) end = out.size();
    out.replace(value, end - value, "***");
    pos = value + 3;
  }
  return out;
}

bool IsPostgresUri(std::string_view value) {
  return value.starts_with("postgres://") || value.starts_with("postgresql://");
}

}  // namespace pqcd::server::internal
