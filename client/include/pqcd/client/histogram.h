// A log-bucketed latency histogram: every value is counted (no sampling), with a relative bucket
// width of 1/64 (about 1.6 % error on a percentile) from 1 ns to about 584 years. Record() is
// thread-safe and lock-free; readers see a consistent-enough view while writers run.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace pqcd::client {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 6;  // 64 sub-buckets per power of two
  static constexpr int kSubBuckets = 1 << kSubBucketBits;
  static constexpr int kBuckets = (64 - kSubBucketBits + 1) * kSubBuckets;

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram& other) { Merge(other); }
  LatencyHistogram& operator=(const LatencyHistogram& other) {
    if (this != &other) {
      Reset();
      Merge(other);
    }
    return *this;
  }

  void Record(uint64_t nanos, uint64_t count = 1);
  void Merge(const LatencyHistogram& other);
  void Reset();

  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t max() const { return max_.load(std::memory_order_relaxed); }
  uint64_t min() const;
  double mean() const;
  // The value at quantile q in [0, 1] (0.99 = p99): the upper edge of the bucket that holds it,
  // capped at the exact maximum. 0 when empty.
  uint64_t Quantile(double q) const;

  static int BucketOf(uint64_t v);
  static uint64_t BucketLow(int bucket);
  static uint64_t BucketHigh(int bucket);  // inclusive

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> max_{0};
  std::atomic<uint64_t> min_{UINT64_MAX};
};

}  // namespace pqcd::client
