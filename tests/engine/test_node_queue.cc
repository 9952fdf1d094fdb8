// MpmcRing / NodeQueue: exactly-once delivery, per-producer FIFO, full and closed behaviour,
// wrap-around. PQCD_STRESS_SCALE (default 1) scales the stress sizes (e.g. 0.02 under TSan).
#include <atomic>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "pqcd/engine/node_queue.h"

namespace pqcd::engine {
namespace {

double StressScale() {
  const char* s = std::getenv("PQCD_STRESS_SCALE");
  const double v = s != nullptr ? std::atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

TEST(MpmcRing, CapacityRoundsUpToPowerOfTwo) {
  EXPECT_EQ(MpmcRing<int>(5).capacity(), 8u);
  EXPECT_EQ(MpmcRing<int>(8).capacity(), 8u);
  EXPECT_EQ(MpmcRing<int>(0).capacity(), 2u);
}

TEST(MpmcRing, FullIsAnImmediateAnswer) {
  MpmcRing<int> ring(4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ring.TryPush(i), PushResult::kOk);
  EXPECT_EQ(ring.TryPush(99), PushResult::kFull);
  EXPECT_EQ(ring.SizeApprox(), 4u);
  int v = -1;
  ASSERT_TRUE(ring.TryPop(v));
  EXPECT_EQ(v, 0);
  EXPECT_EQ(ring.TryPush(4), PushResult::kOk);
  EXPECT_EQ(ring.TryPush(5), PushResult::kFull);
  int out[8];
  ASSERT_EQ(ring.TryPopBurst(out, 8), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], i + 1);
  EXPECT_EQ(ring.TryPopBurst(out, 8), 0u);
  EXPECT_TRUE(ring.EmptyApprox());
}

TEST(MpmcRing, WrapAroundKeepsFifoOrder) {
  MpmcRing<uint64_t> ring(8);
  uint64_t next_in = 0, next_out = 0;
  // Many laps with varying fill levels and burst sizes.
  for (int round = 0; round < 10000; ++round) {
    const int push = 1 + round % 8;
    for (int i = 0; i < push; ++i) {
      if (ring.TryPush(next_in) == PushResult::kOk) ++next_in;
    }
    uint64_t out[8];
    const size_t n = ring.TryPopBurst(out, 1 + (round * 7) % 8);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], next_out++);
  }
  uint64_t out[8];
  size_t n;
  while ((n = ring.TryPopBurst(out, 8)) > 0) {
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], next_out++);
  }
  EXPECT_EQ(next_in, next_out);
  EXPECT_GT(next_in, 8u * 1000);
}

TEST(MpmcRing, CloseRejectsNewItemsButKeepsQueuedOnes) {
  MpmcRing<int> ring(8);
  EXPECT_EQ(ring.TryPush(1), PushResult::kOk);
  EXPECT_EQ(ring.TryPush(2), PushResult::kOk);
  ring.Close();
  EXPECT_TRUE(ring.closed());
  EXPECT_EQ(ring.TryPush(3), PushResult::kClosed);
  int out[4];
  ASSERT_EQ(ring.TryPopBurst(out, 4), 2u);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 2);
  EXPECT_EQ(ring.SizeApprox(), 0u);
}

TEST(MpmcRing, NodeBoundStorageWorks) {
  // Node 0 exists on every Linux machine; without libnuma this is plain aligned memory.
  MpmcRing<uint64_t> ring(1024, 0);
  for (uint64_t i = 0; i < 1024; ++i) ASSERT_EQ(ring.TryPush(i), PushResult::kOk);
  uint64_t v;
  for (uint64_t i = 0; i < 1024; ++i) {
    ASSERT_TRUE(ring.TryPop(v));
    ASSERT_EQ(v, i);
  }
}

// Producers push (producer << 40 | seq); consumers take bursts. Every item must arrive exactly
// once, and each consumer must see each producer's items in increasing order.
void Stress(int producers, int consumers, uint64_t per_producer, size_t capacity, size_t burst) {
  MpmcRing<uint64_t> ring(capacity);
  std::vector<std::atomic<uint8_t>> seen(static_cast<size_t>(producers) * per_producer);
  std::atomic<int> producers_left{producers};
  std::atomic<uint64_t> fifo_violations{0}, full_answers{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&] {
      std::vector<int64_t> last(static_cast<size_t>(producers), -1);
      std::vector<uint64_t> buf(burst);
      for (;;) {
        const size_t n = ring.TryPopBurst(buf.data(), burst);
        if (n == 0) {
          if (producers_left.load(std::memory_order_acquire) == 0 && ring.EmptyApprox()) break;
          std::this_thread::yield();
          continue;
        }
        for (size_t i = 0; i < n; ++i) {
          const uint64_t p = buf[i] >> 40;
          const int64_t seq = static_cast<int64_t>(buf[i] & ((uint64_t{1} << 40) - 1));
          if (seq <= last[p]) fifo_violations.fetch_add(1, std::memory_order_relaxed);
          last[p] = seq;
          seen[p * per_producer + static_cast<uint64_t>(seq)].fetch_add(1,
                                                                        std::memory_order_relaxed);
        }
      }
    });
  }
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      uint64_t full = 0;
      for (uint64_t s = 0; s < per_producer; ++s) {
        const uint64_t item = (static_cast<uint64_t>(p) << 40) | s;
        PushResult r;
        while ((r = ring.TryPush(item)) == PushResult::kFull) {
          ++full;
          std::this_thread::yield();
        }
        ASSERT_EQ(r, PushResult::kOk);
      }
      full_answers.fetch_add(full);
      producers_left.fetch_sub(1, std::memory_order_release);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(fifo_violations.load(), 0u);
  uint64_t missing = 0, duplicated = 0;
  for (auto& s : seen) {
    const uint8_t v = s.load();
    missing += v == 0;
    duplicated += v > 1;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(duplicated, 0u);
  std::printf("[stress] %d producers x %llu items, %d consumers, capacity %zu: %llu full answers\n",
              producers, static_cast<unsigned long long>(per_producer), consumers, capacity,
              static_cast<unsigned long long>(full_answers.load()));
}

TEST(MpmcRing, ManyProducersSeveralConsumersExactlyOnceFifo) {
  const auto per = static_cast<uint64_t>(1000000 * StressScale());
  Stress(/*producers=*/4, /*consumers=*/3, per < 1000 ? 1000 : per, /*capacity=*/1024,
         /*burst=*/32);
}

TEST(MpmcRing, TinyRingHeavyWrapAround) {
  const auto per = static_cast<uint64_t>(250000 * StressScale());
  Stress(/*producers=*/3, /*consumers=*/2, per < 1000 ? 1000 : per, /*capacity=*/4, /*burst=*/3);
}

TEST(NodeQueue, ParkedConsumerIsWokenByPush) {
  NodeQueue q(64, -1);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> got{0};
  const uint64_t total = static_cast<uint64_t>(20000 * StressScale()) + 100;
  std::thread consumer([&] {
    Job* buf[16];
    while (got.load(std::memory_order_relaxed) < total) {
      const size_t n = q.TryPopBurst(buf, 16);
      if (n == 0) {
        q.Park(stop);  // must not sleep through a push
        continue;
      }
      got.fetch_add(n, std::memory_order_relaxed);
    }
  });
  Job* fake = reinterpret_cast<Job*>(uintptr_t{64});
  for (uint64_t i = 0; i < total; ++i) {
    while (q.TryPush(fake) != PushResult::kOk) std::this_thread::yield();
    if (i % 64 == 0) std::this_thread::yield();  // let the consumer park now and then
  }
  consumer.join();
  EXPECT_EQ(got.load(), total);
}

}  // namespace
}  // namespace pqcd::engine
