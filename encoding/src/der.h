// A minimal strict DER reader and writer: single-byte tags, definite lengths in minimal form (at
// most 3 length octets: 16 MiB), no trailing bytes. Internal to pqcd_encoding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "pqcd/encoding/key_encoding.h"

namespace pqcd::encoding::der {

inline constexpr uint8_t kInteger = 0x02;
inline constexpr uint8_t kBitString = 0x03;
inline constexpr uint8_t kOctetString = 0x04;
inline constexpr uint8_t kOid = 0x06;
inline constexpr uint8_t kSequence = 0x30;
inline constexpr uint8_t kContext0Primitive = 0x80;  // [0] IMPLICIT OCTET STRING

// Reads TLVs one after the other from a byte view. Errors name `what` (the field being read).
class Reader {
 public:
  explicit Reader(ByteView in) : in_(in) {}
  bool empty() const { return pos_ == in_.size(); }
  // The tag of the next element, or -1 at the end.
  int PeekTag() const { return empty() ? -1 : in_[pos_]; }
  // Reads one element with the given tag and returns its content.
  absl::StatusOr<ByteView> Read(uint8_t tag, const char* what);
  // InvalidArgument("<what>: trailing bytes") unless everything was read.
  absl::Status ExpectEnd(const char* what) const;

 private:
  ByteView in_;
  size_t pos_ = 0;
};

// The number of bytes of a tag and length header for `content` bytes.
size_t HeaderSize(size_t content);
// Appends a tag and a minimal length.
void AppendHeader(SecretBuffer& out, uint8_t tag, size_t content);
void AppendHeader(std::vector<uint8_t>& out, uint8_t tag, size_t content);

}  // namespace pqcd::encoding::der
