// Shared vocabulary of the kernels: byte views, zeroization and constant-time test markers.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>

namespace pqcd::kernels {

static_assert(std::endian::native == std::endian::little,
              "pqcd kernels assume a little-endian CPU");

using Bytes = std::span<const uint8_t>;
using MutBytes = std::span<uint8_t>;

// Bytes kept in a struct past the statement that sets them (the options of an operation). A plain
// Bytes binds to a temporary container too (std::span<const T> accepts rvalue ranges), and then
// views freed memory once the full expression ends:
//     options.context = std::vector<uint8_t>{1, 2, 3};  // dangling with Bytes
// BorrowedBytes converts from everything Bytes converts from except such temporaries: lvalues,
// spans and other borrowed ranges are accepted, an rvalue container is a compile error.
class BorrowedBytes : public Bytes {
 public:
  constexpr BorrowedBytes() noexcept = default;
  constexpr BorrowedBytes(Bytes view) noexcept : Bytes(view) {}
  constexpr BorrowedBytes(const uint8_t* data, size_t size) noexcept : Bytes(data, size) {}
  template <class R>
  requires(std::is_lvalue_reference_v<R> || std::ranges::borrowed_range<R>) &&
      std::is_convertible_v<R, Bytes> constexpr BorrowedBytes(R&& range) noexcept
      : Bytes(std::forward<R>(range)) {}
  template <class R>
  requires(!std::is_lvalue_reference_v<R> && !std::ranges::borrowed_range<R>) &&
      std::is_convertible_v<R, Bytes> BorrowedBytes(R&&) =
      delete;  // a temporary container: the view would dangle
};

// Overwrites n bytes at p with zeros in a way the compiler may not elide.
void SecureZero(void* p, size_t n);

template <class T>
void SecureZeroObject(T& object) {
  SecureZero(&object, sizeof(object));
}

// Zeroizes an object when the scope ends (every return path of an operation).
template <class T>
class ZeroOnExit {
 public:
  explicit ZeroOnExit(T& object) : object_(object) {}
  ~ZeroOnExit() { SecureZeroObject(object_); }
  ZeroOnExit(const ZeroOnExit&) = delete;
  ZeroOnExit& operator=(const ZeroOnExit&) = delete;

 private:
  T& object_;
};

// Constant-time test markers. Under valgrind memcheck, CtSecret marks bytes as undefined so that
// any branch or memory index that depends on them is reported; CtPublic declassifies a value that
// the algorithm is allowed to reveal (a public seed, the ML-DSA rejection decision). Outside
// valgrind both are a handful of no-op instructions.
void CtSecret(const void* p, size_t n);
void CtPublic(const void* p, size_t n);

// Constant-time helpers on 32-bit words.
// All-ones when x != 0, else zero, without a branch.
inline uint32_t CtMaskNonZero(uint32_t x) {
  return static_cast<uint32_t>(-static_cast<int32_t>((x | (0u - x)) >> 31));
}

// Returns 0 when a and b are equal, non-zero otherwise; runs in time independent of the contents.
uint8_t CtCompare(const uint8_t* a, const uint8_t* b, size_t n);
// Whether two secret keys are the same: equal length and bytes (the same buffer at once, else
// CtCompare). Only the verdict is revealed.
bool SameSecretBytes(Bytes a, Bytes b);

// dst = mask ? src : dst, byte-wise, for mask in {0x00, 0xff}.
void CtSelect(uint8_t* dst, const uint8_t* src, size_t n, uint8_t mask);

}  // namespace pqcd::kernels

// Like the std::span it is, a BorrowedBytes does not own what it views.
template <>
inline constexpr bool std::ranges::enable_borrowed_range<pqcd::kernels::BorrowedBytes> = true;
