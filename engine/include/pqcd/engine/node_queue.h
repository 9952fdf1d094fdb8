// Bounded lock-free queues.
//
// MpmcRing<T> is a bounded multi-producer multi-consumer ring in the style of a sequence-numbered
// slot array: every slot carries a sequence number that says whether it is free for the producer
// of position p (seq == p) or holds the item of position p (seq == p + 1). Producers claim a
// position with one CAS on the tail; consumers claim a whole burst of consecutive ready positions
// with one CAS on the head. Head and tail live on their own cache lines. TryPush never spins on a
// full ring and never blocks: it answers kFull at once. Close() sets a bit in the tail word, so a
// producer racing with Close either lands its item before the close or sees kClosed; after Close,
// consumers drain what is there.
//
// NodeQueue is the ring of Job pointers of one NUMA node plus the parking lot of its workers.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "pqcd/engine/memory.h"

namespace pqcd::engine {

enum class PushResult : uint8_t { kOk, kFull, kClosed };

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

template <class T>
class MpmcRing {
  static_assert(std::is_trivially_copyable_v<T>, "MpmcRing holds trivially copyable items");

 public:
  // capacity is rounded up to a power of two (at least 2). Storage lives on os_node (-1: any).
  explicit MpmcRing(size_t capacity, int os_node = -1)
      : capacity_(std::bit_ceil(capacity < 2 ? size_t{2} : capacity)),
        mask_(capacity_ - 1),
        storage_(capacity_ * sizeof(Slot), os_node) {
    slots_ = static_cast<Slot*>(storage_.data());
    for (size_t i = 0; i < capacity_; ++i) {
      new (&slots_[i]) Slot();
      slots_[i].seq.store(i, std::memory_order_relaxed);
    }
  }
  MpmcRing(const MpmcRing&) = delete;
  MpmcRing& operator=(const MpmcRing&) = delete;

  PushResult TryPush(const T& value) {
    uint64_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      if (pos & kClosedBit) return PushResult::kClosed;
      Slot& slot = slots_[pos & mask_];
      const uint64_t seq = slot.seq.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq - pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed,
                                        std::memory_order_relaxed)) {
          slot.value = value;
          slot.seq.store(pos + 1, std::memory_order_release);
          return PushResult::kOk;
        }
        // pos was reloaded by the failed CAS.
      } else if (diff < 0) {
        // The slot still holds the item of the previous lap: full (unless the tail moved).
        const uint64_t now = tail_.load(std::memory_order_relaxed);
        if (now == pos) return PushResult::kFull;
        pos = now;
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  // Takes up to max items (FIFO) into out; returns how many (0: empty).
  size_t TryPopBurst(T* out, size_t max) {
    if (max == 0) return 0;
    uint64_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      size_t n = 0;
      while (n < max &&
             slots_[(pos + n) & mask_].seq.load(std::memory_order_acquire) == pos + n + 1) {
        ++n;
      }
      if (n == 0) {
        const uint64_t seq = slots_[pos & mask_].seq.load(std::memory_order_acquire);
        if (static_cast<int64_t>(seq - (pos + 1)) < 0) {
          const uint64_t now = head_.load(std::memory_order_relaxed);
          if (now == pos) return 0;  // empty (or the next item is not yet published)
          pos = now;
        } else {
          pos = head_.load(std::memory_order_relaxed);
        }
        continue;
      }
      if (head_.compare_exchange_weak(pos, pos + n, std::memory_order_relaxed,
                                      std::memory_order_relaxed)) {
        for (size_t i = 0; i < n; ++i) {
          Slot& slot = slots_[(pos + i) & mask_];
          out[i] = slot.value;
          slot.seq.store(pos + i + capacity_, std::memory_order_release);
        }
        return n;
      }
    }
  }

  bool TryPop(T& out) { return TryPopBurst(&out, 1) == 1; }

  // After Close every TryPush answers kClosed; items already in stay poppable.
  void Close() { tail_.fetch_or(kClosedBit, std::memory_order_acq_rel); }
  bool closed() const { return (tail_.load(std::memory_order_acquire) & kClosedBit) != 0; }

  // Items claimed by producers and not yet claimed by consumers (approximate under concurrency).
  size_t SizeApprox() const {
    const uint64_t head = head_.load(std::memory_order_acquire);
    const uint64_t tail = tail_.load(std::memory_order_acquire) & ~kClosedBit;
    return tail > head ? static_cast<size_t>(tail - head) : 0;
  }
  bool EmptyApprox() const { return SizeApprox() == 0; }
  size_t capacity() const { return capacity_; }

 private:
  static constexpr uint64_t kClosedBit = uint64_t{1} << 63;
  struct Slot {
    std::atomic<uint64_t> seq{0};
    T value{};
  };

  alignas(kCacheLine) std::atomic<uint64_t> tail_{0};  // producers
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};  // consumers
  alignas(kCacheLine) const size_t capacity_;
  const size_t mask_;
  NodeBuffer storage_;
  Slot* slots_ = nullptr;
};

class Job;

// The queue of one NUMA node: a ring of Job pointers and the parking lot of the node's workers.
// Workers spin briefly when the ring is empty and then park on a futex (std::atomic::wait);
// producers wake one parked worker after a push, which costs one load of a rarely written word
// when nobody is parked.
class NodeQueue {
 public:
  NodeQueue(size_t capacity, int os_node) : ring_(capacity, os_node) {}

  PushResult TryPush(Job* job) {
    const PushResult r = ring_.TryPush(job);
    if (r == PushResult::kOk) {
      // Pairs with the fence in Park: either the parking worker sees the item, or we see it
      // parked and wake it.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (sleepers_.load(std::memory_order_relaxed) > 0) WakeOne();
    }
    return r;
  }
  size_t TryPopBurst(Job** out, size_t max) { return ring_.TryPopBurst(out, max); }

  // Parks the calling worker until a producer pushes, WakeOne/WakeAll is called, or (checked
  // after registering as a sleeper, so that no wake-up is lost) the ring is non-empty, `stop` is
  // set or other_work() is true (work the worker could steal from another node).
  template <class OtherWork>
  void Park(const std::atomic<bool>& stop, OtherWork&& other_work) {
    const uint32_t seen = wake_seq_.load(std::memory_order_acquire);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ring_.EmptyApprox() && !stop.load(std::memory_order_acquire) && !other_work()) {
      wake_seq_.wait(seen, std::memory_order_acquire);
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  void Park(const std::atomic<bool>& stop) {
    Park(stop, [] { return false; });
  }
  // Park for a worker that waits in its own I/O (Engine::AttachIo) rather than on the futex:
  // `wait()` blocks until the I/O has events or the I/O waker (SetIoWaker) wakes it. The worker
  // must have made itself findable by the waker before calling this. No `stop` check: a worker
  // serving I/O runs until its I/O ends, not when the engine stops.
  template <class OtherWork, class Wait>
  void ParkInIo(OtherWork&& other_work, Wait&& wait) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ring_.EmptyApprox() && !other_work()) wait();
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  void WakeOne() {
    wake_seq_.fetch_add(1, std::memory_order_release);
    wake_seq_.notify_one();
    if (IoWaker fn = io_waker_.load(std::memory_order_acquire)) fn(io_waker_arg_, false);
  }
  void WakeAll() {
    wake_seq_.fetch_add(1, std::memory_order_release);
    wake_seq_.notify_all();
    if (IoWaker fn = io_waker_.load(std::memory_order_acquire)) fn(io_waker_arg_, true);
  }
  // Called by WakeOne (all = false) and WakeAll (true) to wake workers parked in ParkInIo.
  using IoWaker = void (*)(void* arg, bool all);
  void SetIoWaker(IoWaker fn, void* arg) {
    io_waker_arg_ = arg;
    io_waker_.store(fn, std::memory_order_release);
  }
  int sleepers() const { return sleepers_.load(std::memory_order_relaxed); }

  void Close() { ring_.Close(); }
  bool closed() const { return ring_.closed(); }
  size_t SizeApprox() const { return ring_.SizeApprox(); }
  size_t capacity() const { return ring_.capacity(); }

 private:
  MpmcRing<Job*> ring_;
  alignas(kCacheLine) std::atomic<uint32_t> wake_seq_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<IoWaker> io_waker_{nullptr};
  void* io_waker_arg_ = nullptr;
};

}  // namespace pqcd::engine
