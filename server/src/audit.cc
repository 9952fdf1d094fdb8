#include "audit.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pqcd::server {

std::string AuditValue(std::string_view value, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const size_t kept = std::min(value.size(), max_bytes);
  std::string out = "\"";
  out.reserve(kept + 16);
  for (const char c : value.substr(0, kept)) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20 || u >= 0x7f) {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  if (kept < value.size()) absl::StrAppend(&out, "...[", value.size(), " bytes]");
  out.push_back('"');
  return out;
}

KeyUseAuditor::KeyUseAuditor(Sink sink, std::chrono::steady_clock::duration window,
                             size_t max_tuples, Clock clock, bool background_flush,
                             std::string action)
    : sink_(std::move(sink)),
      action_(std::move(action)),
      window_(window),
      max_tuples_(max_tuples),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })) {
  if (background_flush) {
    timer_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!stop_) {
        cv_.wait_for(lock, window_);
        if (stop_) break;
        const auto now = clock_();
        if (open_ && now - window_start_ >= window_) FlushLocked(now);
      }
    });
  }
}

KeyUseAuditor::~KeyUseAuditor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (timer_.joinable()) timer_.join();
  Flush();
}

void KeyUseAuditor::FlushLocked(std::chrono::steady_clock::time_point now) {
  if (!open_) return;
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  for (const auto& [key, count] : tuples_) {
    if (count.repeats == 0) continue;
    const auto& [user, owner, key_id, op] = key;
    std::string versions = count.min_version == count.max_version
                               ? absl::StrCat(count.min_version)
                               : absl::StrCat(count.min_version, "-", count.max_version);
    sink_(absl::StrCat("who=", AuditValue(user), " action=", action_,
                       "_repeated op=", AuditValue(op), " key_id=", AuditValue(key_id),
                       " versions=", versions, " owner=", AuditValue(owner), " further_", action_,
                       "s=", count.repeats, " window_s=", absl::StrFormat("%.1f", seconds)));
  }
  if (not_itemised_ > 0) {
    sink_(absl::StrCat("action=", action_, "_not_itemised further_", action_, "s=", not_itemised_,
                       " window_s=", absl::StrFormat("%.1f", seconds), " reason=\"more than ",
                       max_tuples_, " distinct (who, owner, key_id, op) in the window\""));
  }
  tuples_.clear();
  not_itemised_ = 0;
  open_ = false;
}

void KeyUseAuditor::Record(const std::string& user, const std::string& owner,
                           const std::string& key_id, uint32_t version, std::string_view op,
                           std::string_view first_line) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = clock_();
  if (open_ && now - window_start_ >= window_) FlushLocked(now);
  if (!open_) {
    open_ = true;
    window_start_ = now;
  }
  Key key(user, owner, key_id, std::string(op));
  auto it = tuples_.find(key);
  if (it != tuples_.end()) {
    ++it->second.repeats;
    it->second.min_version = std::min(it->second.min_version, version);
    it->second.max_version = std::max(it->second.max_version, version);
    return;
  }
  if (tuples_.size() >= max_tuples_) {
    ++not_itemised_;
    return;
  }
  tuples_.emplace(std::move(key), Count{0, version, version});
  if (!first_line.empty()) {
    sink_(std::string(first_line));
    return;
  }
  sink_(absl::StrCat("who=", AuditValue(user), " action=", action_, " op=", AuditValue(op),
                     " key_id=", AuditValue(key_id), " version=", version,
                     " owner=", AuditValue(owner)));
}

void KeyUseAuditor::MaybeFlush() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = clock_();
  if (open_ && now - window_start_ >= window_) FlushLocked(now);
}

void KeyUseAuditor::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  FlushLocked(clock_());
}

}  // namespace pqcd::server
