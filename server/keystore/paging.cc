// KeyStore::List: the newest version of each key matching a label selector, by page, in
// (owner, key_id) order, and the page tokens that resume a listing.
#include <algorithm>
#include <shared_mutex>

#include "absl/strings/escaping.h"
#include "key_store_impl.h"

namespace pqcd::server {
namespace {

using internal::KeyName;

constexpr uint32_t kDefaultPageSize = 100;
constexpr uint32_t kMaxPageSize = 1000;

bool LabelsMatch(const std::map<std::string, std::string>& labels,
                 const std::map<std::string, std::string>& selector) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

// Page tokens: hex of u32 owner length | owner | key_id (the last key of the previous page).
std::string EncodePageToken(const KeyName& last) {
  std::string raw;
  const uint32_t n = static_cast<uint32_t>(last.first.size());
  for (int i = 0; i < 4; ++i) raw.push_back(static_cast<char>(n >> (8 * i)));
  raw += last.first;
  raw += last.second;
  return absl::BytesToHexString(raw);
}

bool DecodePageToken(const std::string& token, KeyName* last) {
  if (token.size() % 2 != 0 || token.size() > 4096) return false;
  for (char c : token) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  const std::string raw = absl::HexStringToBytes(token);
  if (raw.size() < 4) return false;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
  if (n > raw.size() - 4) return false;
  last->first = raw.substr(4, n);
  last->second = raw.substr(4 + n);
  return internal::IsValidKeyId(last->second);
}

}  // namespace

absl::StatusOr<KeyStore::ListPage> KeyStore::List(
    const std::string* owner, const std::map<std::string, std::string>& label_selector,
    uint32_t page_size, const std::string& page_token) const {
  if (page_size == 0) page_size = kDefaultPageSize;
  page_size = std::min(page_size, kMaxPageSize);
  KeyName after;
  const bool resume = !page_token.empty();
  if (resume &&
      (!DecodePageToken(page_token, &after) || (owner != nullptr && after.first != *owner))) {
    return absl::InvalidArgumentError("page_token: not a token of this listing");
  }
  ListPage page;
  const internal::KeyCache& cache = impl_->cache;
  std::shared_lock lock(cache.mu);
  auto it = resume ? cache.keys.upper_bound(after)
                   : (owner != nullptr ? cache.keys.lower_bound({*owner, std::string()})
                                       : cache.keys.begin());
  for (; it != cache.keys.end(); ++it) {
    if (owner != nullptr && it->first.first != *owner) break;
    const KeyRecord& newest = it->second.versions.rbegin()->second;
    if (!LabelsMatch(newest.labels, label_selector)) continue;
    if (page.keys.size() == page_size) {  // one more exists: the page is full
      page.next_page_token = EncodePageToken(after);
      break;
    }
    page.keys.push_back(newest);
    after = it->first;
  }
  return page;
}

}  // namespace pqcd::server
