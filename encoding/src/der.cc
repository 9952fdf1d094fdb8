#include "der.h"

#include "absl/strings/str_cat.h"

namespace pqcd::encoding::der {

absl::StatusOr<ByteView> Reader::Read(uint8_t tag, const char* what) {
  if (empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": missing"));
  if (in_[pos_] != tag) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": unexpected DER tag 0x", absl::Hex(in_[pos_], absl::kZeroPad2)));
  }
  size_t p = pos_ + 1;
  if (p >= in_.size()) return absl::InvalidArgumentError(absl::StrCat(what, ": truncated length"));
  const uint8_t first = in_[p++];
  size_t length = 0;
  if (first < 0x80) {
    length = first;
  } else if (first == 0x80) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": indefinite length (not DER)"));
  } else {
    const size_t octets = first & 0x7f;
    if (octets > 3) return absl::InvalidArgumentError(absl::StrCat(what, ": length too large"));
    if (in_.size() - p < octets) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": truncated length"));
    }
    if (in_[p] == 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": non-minimal length encoding"));
    }
    for (size_t i = 0; i < octets; ++i) length = (length << 8) | in_[p + i];
    p += octets;
    if (length < 0x80) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": non-minimal length encoding"));
    }
  }
  if (in_.size() - p < length) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": length exceeds the data"));
  }
  pos_ = p + length;
  return in_.subspan(p, length);
}

absl::Status Reader::ExpectEnd(const char* what) const {
  if (!empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": trailing bytes"));
  return absl::OkStatus();
}

size_t HeaderSize(size_t content) {
  if (content < 0x80) return 2;
  if (content < 0x100) return 3;
  if (content < 0x10000) return 4;
  return 5;
}

namespace {
template <class Out>
void AppendHeaderTo(Out& out, uint8_t tag, size_t content) {
  uint8_t h[5] = {tag, 0, 0, 0, 0};
  size_t n = 2;
  if (content < 0x80) {
    h[1] = static_cast<uint8_t>(content);
  } else if (content < 0x100) {
    h[1] = 0x81;
    h[2] = static_cast<uint8_t>(content);
    n = 3;
  } else if (content < 0x10000) {
    h[1] = 0x82;
    h[2] = static_cast<uint8_t>(content >> 8);
    h[3] = static_cast<uint8_t>(content);
    n = 4;
  } else {
    h[1] = 0x83;
    h[2] = static_cast<uint8_t>(content >> 16);
    h[3] = static_cast<uint8_t>(content >> 8);
    h[4] = static_cast<uint8_t>(content);
    n = 5;
  }
  if constexpr (std::is_same_v<Out, SecretBuffer>) {
    out.Append(ByteView(h, n));
  } else {
    out.insert(out.end(), h, h + n);
  }
}
}  // namespace

void AppendHeader(SecretBuffer& out, uint8_t tag, size_t content) {
  AppendHeaderTo(out, tag, content);
}
void AppendHeader(std::vector<uint8_t>& out, uint8_t tag, size_t content) {
  AppendHeaderTo(out, tag, content);
}

}  // namespace pqcd::encoding::der
