// Node-bound allocations through libnuma, with an aligned-heap fallback.
#include "pqcd/engine/memory.h"

#include <numa.h>

#include <cstdlib>
#include <cstring>

namespace pqcd::engine {

bool NumaAvailable() {
  static const bool available = numa_available() >= 0;
  return available;
}

NodeBuffer::NodeBuffer(size_t bytes, int os_node) {
  size_ = (bytes + kCacheLine - 1) & ~(kCacheLine - 1);
  if (size_ == 0) size_ = kCacheLine;
  if (os_node >= 0 && NumaAvailable() && os_node <= numa_max_node()) {
    // numa_alloc_onnode returns page-aligned, zero-filled pages bound to the node.
    data_ = numa_alloc_onnode(size_, os_node);
    if (data_ != nullptr) {
      numa_ = true;
      return;
    }
  }
  data_ = std::aligned_alloc(kCacheLine, size_);
  if (data_ == nullptr) throw std::bad_alloc();
  std::memset(data_, 0, size_);
}

void NodeBuffer::Release() {
  if (data_ == nullptr) return;
  if (numa_) {
    numa_free(data_, size_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
}

}  // namespace pqcd::engine
