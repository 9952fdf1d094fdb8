// Node-local memory: 64-byte aligned buffers placed on one NUMA node, and a bump arena for the
// per-batch scratch of a worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace pqcd::engine {

inline constexpr size_t kCacheLine = 64;

// An owned, zero-initialized, 64-byte aligned block. With os_node >= 0 (and libnuma usable) the
// pages are bound to that NUMA node (numa_alloc_onnode); otherwise ordinary aligned memory. An
// allocation failure terminates (as operator new would).
class NodeBuffer {
 public:
  NodeBuffer() = default;
  NodeBuffer(size_t bytes, int os_node);
  ~NodeBuffer() { Release(); }
  NodeBuffer(NodeBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(o.size_), numa_(o.numa_) {}
  NodeBuffer& operator=(NodeBuffer&& o) noexcept {
    if (this != &o) {
      Release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = o.size_;
      numa_ = o.numa_;
    }
    return *this;
  }
  NodeBuffer(const NodeBuffer&) = delete;
  NodeBuffer& operator=(const NodeBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  // True when the block was placed with libnuma on the requested node.
  bool node_bound() const { return numa_; }

 private:
  void Release();
  void* data_ = nullptr;
  size_t size_ = 0;
  bool numa_ = false;
};

// True when libnuma works here (numa_available() >= 0); checked once.
bool NumaAvailable();

// A bump allocator over a NodeBuffer; Reset() between groups. Not thread-safe (one per worker).
class ScratchArena {
 public:
  ScratchArena(size_t bytes, int os_node) : buffer_(bytes, os_node) {}

  // Returns nullptr when the arena is exhausted (callers then process in smaller chunks).
  void* Allocate(size_t bytes, size_t align = alignof(std::max_align_t)) {
    size_t start = (used_ + align - 1) & ~(align - 1);
    if (start + bytes > buffer_.size()) return nullptr;
    used_ = start + bytes;
    return static_cast<uint8_t*>(buffer_.data()) + start;
  }
  // Default-constructs n objects of T (destroy them before Reset if T is not trivial).
  template <class T>
  T* AllocateArray(size_t n) {
    void* p = Allocate(sizeof(T) * n, alignof(T) < kCacheLine ? kCacheLine : alignof(T));
    if (p == nullptr) return nullptr;
    T* a = static_cast<T*>(p);
    for (size_t i = 0; i < n; ++i) new (a + i) T();
    return a;
  }
  template <class T>
  static void DestroyArray(T* a, size_t n) {
    if constexpr (!std::is_trivially_destructible_v<T>) {
      for (size_t i = 0; i < n; ++i) a[i].~T();
    }
  }
  void Reset() { used_ = 0; }
  size_t capacity() const { return buffer_.size(); }
  size_t used() const { return used_; }

 private:
  NodeBuffer buffer_;
  size_t used_ = 0;
};

}  // namespace pqcd::engine
