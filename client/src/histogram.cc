#include "pqcd/client/histogram.h"

#include <bit>

namespace pqcd::client {

// Values below kSubBuckets have a bucket each. Above, a value v with bit width w (> kSubBucketBits)
// is shifted right by s = w - kSubBucketBits - 1 so that its top kSubBucketBits+1 bits remain:
// v >> s is in [kSubBuckets, 2*kSubBuckets), and the bucket is (s + 1) * kSubBuckets + (v >> s) -
// kSubBuckets.
int LatencyHistogram::BucketOf(uint64_t v) {
  if (v < kSubBuckets) return static_cast<int>(v);
  const int s = std::bit_width(v) - kSubBucketBits - 1;
  return (s + 1) * kSubBuckets + static_cast<int>((v >> s) - kSubBuckets);
}

uint64_t LatencyHistogram::BucketLow(int bucket) {
  if (bucket < kSubBuckets) return static_cast<uint64_t>(bucket);
  const int s = bucket / kSubBuckets - 1;
  const uint64_t top = static_cast<uint64_t>(bucket % kSubBuckets + kSubBuckets);
  return top << s;
}

uint64_t LatencyHistogram::BucketHigh(int bucket) {
  if (bucket < kSubBuckets) return static_cast<uint64_t>(bucket);
  const int s = bucket / kSubBuckets - 1;
  return BucketLow(bucket) + ((uint64_t{1} << s) - 1);
}

void LatencyHistogram::Record(uint64_t nanos, uint64_t count) {
  if (count == 0) return;
  buckets_[BucketOf(nanos)].fetch_add(count, std::memory_order_relaxed);
  count_.fetch_add(count, std::memory_order_relaxed);
  sum_.fetch_add(nanos * count, std::memory_order_relaxed);
  uint64_t m = max_.load(std::memory_order_relaxed);
  while (nanos > m && !max_.compare_exchange_weak(m, nanos, std::memory_order_relaxed)) {
  }
  m = min_.load(std::memory_order_relaxed);
  while (nanos < m && !min_.compare_exchange_weak(m, nanos, std::memory_order_relaxed)) {
  }
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) {
    const uint64_t c = other.buckets_[i].load(std::memory_order_relaxed);
    if (c != 0) buckets_[i].fetch_add(c, std::memory_order_relaxed);
  }
  count_.fetch_add(other.count(), std::memory_order_relaxed);
  sum_.fetch_add(other.sum_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  const uint64_t omax = other.max();
  uint64_t m = max_.load(std::memory_order_relaxed);
  while (omax > m && !max_.compare_exchange_weak(m, omax, std::memory_order_relaxed)) {
  }
  const uint64_t omin = other.min_.load(std::memory_order_relaxed);
  m = min_.load(std::memory_order_relaxed);
  while (omin < m && !min_.compare_exchange_weak(m, omin, std::memory_order_relaxed)) {
  }
}

void LatencyHistogram::Reset() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  max_.store(0, std::memory_order_relaxed);
  min_.store(UINT64_MAX, std::memory_order_relaxed);
}

uint64_t LatencyHistogram::min() const {
  const uint64_t m = min_.load(std::memory_order_relaxed);
  return m == UINT64_MAX ? 0 : m;
}

double LatencyHistogram::mean() const {
  const uint64_t n = count();
  return n == 0 ? 0.0 : static_cast<double>(sum_.load(std::memory_order_relaxed)) / n;
}

uint64_t LatencyHistogram::Quantile(double q) const {
  uint64_t total = 0;
  for (const auto& b : buckets_) total += b.load(std::memory_order_relaxed);
  if (total == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  // The rank of the wanted value (1-based): ceil(q * total), at least 1.
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total));
  if (static_cast<double>(rank) < q * static_cast<double>(total)) ++rank;
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  const uint64_t mx = max();
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i].load(std::memory_order_relaxed);
    if (seen >= rank) {
      const uint64_t high = BucketHigh(i);
      return high < mx ? high : mx;
    }
  }
  return mx;
}

}  // namespace pqcd::client
