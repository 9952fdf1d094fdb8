#include "pqcd/kernels/common.h"

#include <string.h>  // explicit_bzero

#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
#define PQCD_CT_MSAN 1
#include <sanitizer/msan_interface.h>
#endif
#endif
#ifndef PQCD_CT_MSAN
#define PQCD_CT_MSAN 0
#endif
#if !PQCD_CT_MSAN && defined(PQCD_HAVE_VALGRIND)
#include <valgrind/memcheck.h>
#endif

namespace pqcd::kernels {

void SecureZero(void* p, size_t n) {
  // glibc's explicit_bzero is the optimized memset behind a barrier the compiler cannot remove
  // (OPENSSL_cleanse is a plain store loop: it was ~4% of an ML-KEM-768 key generation).
  if (n != 0) explicit_bzero(p, n);
}

void CtSecret(const void* p, size_t n) {
#if PQCD_CT_MSAN
  __msan_poison(p, n);
#elif defined(PQCD_HAVE_VALGRIND)
  VALGRIND_MAKE_MEM_UNDEFINED(p, n);
#else
  (void)p;
  (void)n;
#endif
}

void CtPublic(const void* p, size_t n) {
#if PQCD_CT_MSAN
  __msan_unpoison(p, n);
#elif defined(PQCD_HAVE_VALGRIND)
  VALGRIND_MAKE_MEM_DEFINED(p, n);
#else
  (void)p;
  (void)n;
#endif
}

uint8_t CtCompare(const uint8_t* a, const uint8_t* b, size_t n) {
  uint8_t acc = 0;
  for (size_t i = 0; i < n; ++i) acc |= static_cast<uint8_t>(a[i] ^ b[i]);
  return acc;
}

bool SameSecretBytes(Bytes a, Bytes b) {
  if (a.size() != b.size()) return false;
  if (a.data() == b.data()) return true;
  uint8_t diff = CtCompare(a.data(), b.data(), a.size());
  CtPublic(&diff, sizeof(diff));
  return diff == 0;
}

void CtSelect(uint8_t* dst, const uint8_t* src, size_t n, uint8_t mask) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(dst[i] ^ (mask & (dst[i] ^ src[i])));
}

}  // namespace pqcd::kernels
