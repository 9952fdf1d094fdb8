// Hostile lane callers against the real pqcd, while a bystander keeps being served on its own
// lane: a caller that rewrites its slots while they are being served, callers that write ring
// indices that cannot be right, one that never takes its answers, and one that dies with requests
// in flight. The daemon must stay up, keep serving the bystander, free what the callers held and
// stay within its memory.
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "daemon_fixture.h"
#include "gtest/gtest.h"
#include "lane_test_support.h"

namespace pqcd::testing {
namespace {

using pqcd::lane::RequestHeader;
using pqcd::lane::Word;

// A valid hash request's header and payload.
RequestHeader HashHeader(const std::string& data, uint64_t tag) {
  RequestHeader h{};
  h.tag = tag;
  h.op = PQCD_LANE_HASH;
  h.algorithm = pqc::v1::SHA3_256;
  h.input_len = static_cast<uint32_t>(data.size());
  return h;
}

class Bystander {
 public:
  explicit Bystander(const std::string& sock) : lane_(sock) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        LaneAnswer a = lane_.Call(HashRequestOf(pqc::v1::SHA3_256, "bystander"), 30'000'000);
        if (a.rc == 0 && a.code == 0 && a.out[0].size() == 32) {
          served_.fetch_add(1);
        } else {
          failed_.fetch_add(1);
        }
      }
    });
  }
  ~Bystander() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  bool ok() const { return lane_.ok(); }
  uint64_t served() const { return served_.load(); }
  uint64_t failed() const { return failed_.load(); }

 private:
  Lane lane_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> served_{0}, failed_{0};
  std::thread thread_;
};

TEST(LaneAttack, HostileCallersLeaveTheDaemonServingABystander) {
  Daemon d;
  const std::string sock = d.dir() / "pqcd.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--unix-mode", "0600", "--log-level", "error",
                       "--max-lanes-per-identity", "16"}));
  const long rss_before = RssKiB(d.pid());
  Bystander bystander(sock);
  ASSERT_TRUE(bystander.ok());
  ASSERT_TRUE(Eventually([&] { return bystander.served() > 10; }));

  // 1. Slots rewritten while they are served: random bytes over headers and payloads, on another
  // thread, while valid requests are pushed (each slot only once its answer is back). Every answer
  // is some status; nothing else may happen.
  {
    RawLane raw;
    ASSERT_TRUE(raw.Open(sock, 8));
    const uint32_t n = raw.reply.slot_count;
    std::atomic<bool> stop{false};
    std::thread scribbler([&] {
      std::mt19937_64 rng(7);
      while (!stop.load()) {
        const uint32_t s = static_cast<uint32_t>(rng() % n);
        const size_t at = rng() % 256;
        const uint64_t v = rng();
        std::memcpy(raw.slot(s) + at, &v, sizeof(v));
      }
    });
    std::vector<bool> free_slot(n, true);
    uint32_t head = 0;
    uint64_t answered = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < end &&
           Word(raw.control().state).load() == pqcd::lane::kOpen) {
      for (uint32_t s = 0; s < n; ++s) {
        if (!free_slot[s]) continue;
        raw.Write(s, HashHeader("rewritten", s), "rewritten");
        free_slot[s] = false;
        raw.Push(s);
      }
      const uint32_t tail = Word(raw.control().completion_tail).load();
      for (; head != tail; ++head) {
        const uint32_t s = raw.completions()[head & (n - 1)];
        if (s < n) free_slot[s] = true;
        ++answered;
      }
      Word(raw.control().completion_head).store(head);
    }
    stop.store(true);
    scribbler.join();
    EXPECT_GT(answered, 0u);
    EXPECT_EQ(Word(raw.control().state).load(), pqcd::lane::kOpen)
        << "rewriting slot contents is not a reason to close the lane";
  }

  // 2. Ring indices that cannot be right: a slot index past the slots, and a submission tail far
  // ahead of what the lane holds. Each lane is closed; the daemon goes on.
  {
    RawLane a, b;
    ASSERT_TRUE(a.Open(sock, 4));
    ASSERT_TRUE(b.Open(sock, 4));
    a.Push(9999);
    Word(b.control().submission_tail).store(1000);
    b.Ring();
    EXPECT_TRUE(Eventually([&] {
      return Word(a.control().state).load() == pqcd::lane::kBroken &&
             Word(b.control().state).load() == pqcd::lane::kBroken;
    }));
  }

  // 3. A caller that never takes its answers, and pushes its slots again and again: it stops
  // being served once its completion ring is full; nothing grows.
  // (Each round waits until the daemon took the previous one, so that the submission ring never
  // holds more than the lane's slots, which would close the lane as in 2.)
  RawLane deaf;
  ASSERT_TRUE(deaf.Open(sock, 4));
  int rounds = 0;
  for (; rounds < 50; ++rounds) {
    const bool taken = Eventually(
        [&] {
          return Word(deaf.control().submission_head).load() ==
                 Word(deaf.control().submission_tail).load();
        },
        std::chrono::milliseconds(500));
    if (!taken) break;  // the daemon stopped taking: its answers are not being read
    for (uint32_t s = 0; s < 4; ++s) {
      deaf.Write(s, HashHeader("deaf", s), "deaf");
      deaf.Push(s);
    }
  }
  EXPECT_LT(rounds, 50) << "a caller that reads no answers must stop being served";
  EXPECT_TRUE(Eventually([&] { return Word(deaf.control().completion_tail).load() == 4u; }))
      << Word(deaf.control().completion_tail).load();
  EXPECT_EQ(Word(deaf.control().state).load(), pqcd::lane::kOpen);

  // 4. A caller that dies with slow requests in flight (another process).
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  // posix_spawn (no fork of this gRPC process), as this uid: any user can run this part.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string helper_path = PQCD_LANE_HELPER;
  char* helper_argv[] = {helper_path.data(), const_cast<char*>(sock.c_str()), nullptr};
  pid_t helper = -1;
  const int spawned =
      ::posix_spawn(&helper, helper_path.c_str(), &actions, nullptr, helper_argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ASSERT_EQ(spawned, 0) << std::strerror(spawned);
  char buf[64] = {};
  const ssize_t got = ::read(out[0], buf, sizeof(buf) - 1);
  ::close(out[0]);
  EXPECT_GT(got, 0);
  EXPECT_EQ(std::string(buf).rfind("submitted", 0), 0u) << buf;
  int status = 0;
  ASSERT_EQ(::waitpid(helper, &status, 0), helper);

  // Its lane is freed once its requests are done: back to the bystander's and the deaf caller's.
  EXPECT_TRUE(Eventually(
      [&] {
        return MetricValue(HttpGet(d.metrics_port(), "/metrics"), "pqcd_lanes{state=\"open\"}") ==
               2;
      },
      std::chrono::seconds(120)))
      << HttpGet(d.metrics_port(), "/metrics");
  const uint64_t before = bystander.served();
  EXPECT_TRUE(Eventually([&] { return bystander.served() > before + 10; }));
  bystander.Stop();
  EXPECT_EQ(bystander.failed(), 0u);
  const std::string m = HttpGet(d.metrics_port(), "/metrics");
  EXPECT_GE(MetricValue(m, "pqcd_lanes_broken_total"), 2) << m;
  // Memory: the lanes' shared memory and what their requests held, nothing more.
  const long rss_after = RssKiB(d.pid());
  EXPECT_LT(rss_after - rss_before, 128 * 1024) << rss_before << " -> " << rss_after << " KiB";
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// Issue 45, items 2 and 3. A caller that keeps the memfd of each lane it opens, fills the lane
// and closes it: the daemon punches the slots' pages out when the lane ends, so they stop
// counting against pqcd's memory cgroup even though the caller's descriptor keeps the file. And
// a caller that breaks lanes in a loop: one warning line per (identity, reason) and window, the
// repeats summed into one summary line, not a line per lane.
TEST(LaneAttack, ClosedLanesGiveBackTheirPagesAndBreaksAreLoggedInAggregate) {
  Daemon d;
  const std::string sock = d.dir() / "pqcd.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--unix-mode", "0600", "--log-level", "warn"}));

  // The pages of a closed lane go, though its memfd stays open here.
  {
    RawLane raw;
    ASSERT_TRUE(raw.Open(sock, 128, /*keep_memfd=*/true));
    ASSERT_GE(raw.memfd, 0);
    const size_t slots = size_t{raw.reply.slot_count} * raw.reply.slot_bytes;
    std::memset(raw.slot(0), 0x5a, slots);  // every slot page faulted in
    struct stat st {};
    ASSERT_EQ(::fstat(raw.memfd, &st), 0);
    EXPECT_GE(static_cast<size_t>(st.st_blocks) * 512, slots);
    ::shutdown(raw.sock, SHUT_RDWR);  // the lane ends
    // Only the control block and the rings stay (where the caller reads the lane's last state).
    EXPECT_TRUE(Eventually([&] {
      return ::fstat(raw.memfd, &st) == 0 &&
             static_cast<size_t>(st.st_blocks) * 512 <= raw.reply.slots_offset;
    })) << st.st_blocks * 512
        << " bytes of a closed lane's memfd are still resident";
    EXPECT_EQ(raw.slot(0)[0], 0) << "the slots' pages were not released";
  }

  // 200 broken lanes (a slot index past the slots), one after another.
  constexpr int kBroken = 200;
  for (int i = 0; i < kBroken; ++i) {
    RawLane raw;
    ASSERT_TRUE(raw.Open(sock, 4)) << i;
    raw.Push(9999);
    ASSERT_TRUE(Eventually([&] { return Word(raw.control().state).load() == pqcd::lane::kBroken; }))
        << i;
  }
  const auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  // The repeats of the window are summed up when it ends (10 s).
  ASSERT_TRUE(Eventually([&] { return count(d.log(), "action=lane_break_repeated") >= 1; },
                         std::chrono::seconds(60)))
      << d.log();
  const std::string log = d.log();
  // At most one full line per window for the one (identity, reason): the run spans few windows.
  EXPECT_LE(count(log, " closed: slot index out of range"), 5u) << log;
  EXPECT_GE(MetricValue(HttpGet(d.metrics_port(), "/metrics"), "pqcd_lanes_broken_total"), kBroken);
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

}  // namespace
}  // namespace pqcd::testing
