// SecretBytes: the buffer type for private keys and KEKs (mlock'ed, wiped on release). Test-only
// hooks into it are in keystore/secret_bytes_testing.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::server {

// A byte buffer in mlock'ed memory, zeroized on destruction. Move-only. If mlock fails
// (RLIMIT_MEMLOCK exhausted, no CAP_IPC_LOCK) the buffer still works but locked() is false.
class SecretBytes {
 public:
  SecretBytes() = default;
  explicit SecretBytes(size_t n);
  SecretBytes(const uint8_t* data, size_t n);
  SecretBytes(SecretBytes&& other) noexcept;
  SecretBytes& operator=(SecretBytes&& other) noexcept;
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;
  ~SecretBytes();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Whether the buffer is locked in RAM (mlock succeeded). False for an empty buffer.
  bool locked() const { return locked_; }

 private:
  void Release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool locked_ = false;
};

}  // namespace pqcd::server
