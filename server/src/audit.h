// Audit-log helpers: quoting of caller-supplied values, and aggregated key-use lines.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>

namespace pqcd::server {

// One caller-supplied value (an identity, a key id, an error message) as a quoted audit field:
// at most `max_bytes` bytes of it are kept (a longer value ends in `...[N bytes]`), and quotes,
// backslashes and every byte outside printable ASCII are escaped (\" \\ \xHH), so that no value
// can end its field, add fields or start a forged line.
inline constexpr size_t kAuditValueMaxBytes = 128;
std::string AuditValue(std::string_view value, size_t max_bytes = kAuditValueMaxBytes);

// Audit lines for uses (sign, decapsulate, ...) of held keys that cannot flood the log. Within a
// window, the first use of each (user, owner, key id, operation) is written at once; later uses of
// the same tuple are only counted and written as one summary line when the window ends. At most
// `max_tuples` tuples are itemised per window; uses of further tuples are summed into one
// "N further uses not itemised" line.
//
// A window ends at the first Record or Flush after it has lasted `window`, and at destruction.
// With `background_flush`, a thread also ends windows on time when no calls come; tests leave it
// off and drive time through `clock`.
//
// `action` names the lines: "use" (held-key uses: action=use, use_repeated, further_uses=N) or,
// for instance, "refusal" (refused key-management actions: refusal_repeated, further_refusals=N).
class KeyUseAuditor {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using Sink = std::function<void(const std::string& line)>;

  explicit KeyUseAuditor(Sink sink,
                         std::chrono::steady_clock::duration window = std::chrono::seconds(10),
                         size_t max_tuples = 1024, Clock clock = {}, bool background_flush = false,
                         std::string action = "use");
  ~KeyUseAuditor();
  KeyUseAuditor(const KeyUseAuditor&) = delete;
  KeyUseAuditor& operator=(const KeyUseAuditor&) = delete;

  // first_line: what the tuple's first occurrence in a window writes (empty: the action=use line).
  void Record(const std::string& user, const std::string& owner, const std::string& key_id,
              uint32_t version, std::string_view op, std::string_view first_line = {});
  // Ends the window if it has lasted `window` (writes its summaries).
  void MaybeFlush();
  // Ends the window now.
  void Flush();

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string>;  // user owner id op
  struct Count {
    uint64_t repeats = 0;
    uint32_t min_version = 0;
    uint32_t max_version = 0;
  };
  void FlushLocked(std::chrono::steady_clock::time_point now);

  Sink sink_;
  const std::string action_;
  const std::chrono::steady_clock::duration window_;
  const size_t max_tuples_;
  Clock clock_;
  std::mutex mu_;
  bool open_ = false;  // a window is open
  std::chrono::steady_clock::time_point window_start_;
  std::map<Key, Count> tuples_;
  uint64_t not_itemised_ = 0;
  bool stop_ = false;
  std::condition_variable cv_;
  std::thread timer_;
};

}  // namespace pqcd::server
