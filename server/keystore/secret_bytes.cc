// SecretBytes: page-aligned anonymous mappings, locked in RAM, excluded from core dumps, wiped
// before they are returned to the kernel.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "keystore/secret_bytes.h"
#include "keystore/secret_bytes_testing.h"
#include "openssl/crypto.h"
#include "spdlog/spdlog.h"

namespace pqcd::server {
namespace {

std::atomic<testing::SecretBytesReleaseHook> g_release_hook{nullptr};
std::atomic<bool> g_mlock_warned{false};
std::atomic<bool> g_fail_mlock{false};  // testing::SetMlockFailureForTesting

size_t PageSize() {
  static const size_t page = [] {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : size_t{4096};
  }();
  return page;
}

// Maps n bytes (rounded up to whole pages). Returns nullptr and sets capacity 0 on failure.
// *locked tells whether mlock succeeded (the mapping is usable either way).
uint8_t* MapSecret(size_t n, size_t* capacity, bool* locked) {
  const size_t page = PageSize();
  const size_t cap = (n + page - 1) / page * page;
  void* p = mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    *capacity = 0;
    return nullptr;
  }
#ifdef MADV_DONTDUMP
  (void)madvise(p, cap, MADV_DONTDUMP);  // best effort: keep keys out of core dumps
#endif
  const bool forced_failure = g_fail_mlock.load(std::memory_order_relaxed);
  *locked = !forced_failure && mlock(p, cap) == 0;
  if (!*locked) {
    const int err = forced_failure ? ENOMEM : errno;
    if (!g_mlock_warned.exchange(true)) {
      spdlog::warn(
          "mlock failed ({}): secrets in unlocked buffers may be swapped to disk and new held "
          "keys are refused; raise RLIMIT_MEMLOCK (ulimit -l) or grant CAP_IPC_LOCK. This "
          "warning is shown once.",
          std::strerror(err));
    }
  }
  *capacity = cap;
  return static_cast<uint8_t*>(p);
}

}  // namespace

namespace testing {
SecretBytesReleaseHook SetSecretBytesReleaseHook(SecretBytesReleaseHook hook) {
  return g_release_hook.exchange(hook);
}
bool SetMlockFailureForTesting(bool fail) {
  return g_fail_mlock.exchange(fail);
}
}  // namespace testing

SecretBytes::SecretBytes(size_t n) {
  if (n == 0) return;
  data_ = MapSecret(n, &capacity_, &locked_);
  if (data_ == nullptr) throw std::bad_alloc();
  size_ = n;  // fresh anonymous pages are zero-filled
}

SecretBytes::SecretBytes(const uint8_t* data, size_t n) : SecretBytes(n) {
  if (n != 0) std::memcpy(data_, data, n);
}

SecretBytes::SecretBytes(SecretBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      locked_(std::exchange(other.locked_, false)) {}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    locked_ = std::exchange(other.locked_, false);
  }
  return *this;
}

SecretBytes::~SecretBytes() {
  Release();
}

void SecretBytes::Release() {
  if (data_ == nullptr) return;
  OPENSSL_cleanse(data_, capacity_);
  if (auto hook = g_release_hook.load()) hook(data_, size_);
  if (locked_) (void)munlock(data_, capacity_);
  (void)munmap(data_, capacity_);
  data_ = nullptr;
  size_ = 0;
  capacity_ = 0;
  locked_ = false;
}

}  // namespace pqcd::server
