// Hostile callers against the real pqcd (issue 25, "one memory account"): a raw HTTP/2 client
// that opens Batch calls asking for megabytes of answers each and never takes them (its stream
// flow-control window is 0). The daemon must refuse that identity's calls past its share of the
// memory account, keep serving another identity, and free the unread answers by itself.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.h"
#include "gtest/gtest.h"
#include "never_reading_client.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using std::chrono::seconds;

// The /metrics lines of the Batch RPC (for failure messages).
std::string BatchLines(const std::string& metrics) {
  std::string out;
  size_t start = 0;
  while (start < metrics.size()) {
    size_t end = metrics.find('\n', start);
    if (end == std::string::npos) end = metrics.size();
    const std::string line = metrics.substr(start, end - start);
    if (line.find("rpc=\"Batch\"") != std::string::npos && line[0] != '#' &&
        line.find("_bucket") == std::string::npos) {
      out += line + "\n";
    }
    start = end + 1;
  }
  return out;
}

double Metric(const Daemon& d, const std::string& name) {
  return MetricValue(HttpGet(d.metrics_port(), "/metrics"), name);
}

TEST(MemoryAccount, UnreadAnswersAreBoundedPerIdentityAndFreed) {
  Daemon d;
  const std::string sock = d.dir() / "s.sock";
  // Default bounds, but a short unread-answer timeout so that the test sees the memory return.
  ASSERT_TRUE(d.Start({"--unix", sock, "--unread-answer-timeout", "4"}));
  const long rss_before = RssKiB(d.pid());
  const std::string batch = HugeBatch();
  NeverReadingClient attacker(NeverReadingClient::ConnectTcp(d.port()));
  ASSERT_TRUE(attacker.connected());
  constexpr int kCalls = 64;  // ~1 GiB of answers if nothing bounded them
  for (int i = 0; i < kCalls; ++i) attacker.Call("/pqc.v1.Crypto/Batch", batch);

  // Every call is either charged (and computed, its answer stuck) or refused.
  long rss_peak = 0;
  ASSERT_TRUE(Eventually([&] {
    rss_peak = std::max(rss_peak, RssKiB(d.pid()));
    return Metric(d, "pqcd_memory_refused_total") > 0 &&
           Metric(d,
                  "pqcd_requests_total{algorithm=\"mixed\",code=\"RESOURCE_EXHAUSTED\","
                  "rpc=\"Batch\"}") > 0;
  })) << d.log();
  // The anonymous identity holds at most its share (--memory-per-identity, 64 MiB by default).
  EXPECT_LE(Metric(d, "pqcd_memory_held_bytes"), 64.0 * (1 << 20));
  // Another identity (the Unix socket's uid) is served meanwhile. Its latency is recorded as a
  // test property (bench/RESULTS.md quotes it), not asserted: tests do not time things.
  {
    const std::vector<double> ms = HashLatenciesMs(
        grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials()), 50);
    ASSERT_EQ(ms.size(), 50u) << d.log();
    RecordProperty("bystander_hash_p50_ms", std::to_string(ms[ms.size() / 2]));
    RecordProperty("bystander_hash_p99_ms", std::to_string(ms[ms.size() * 99 / 100]));
  }
  rss_peak = std::max(rss_peak, RssKiB(d.pid()));
  EXPECT_LT(rss_peak - rss_before, 512L * 1024)
      << "RSS grew from " << rss_before << " to " << rss_peak << " KiB";
  RecordProperty("rss_growth_kib", std::to_string(rss_peak - rss_before));
  RecordProperty("memory_held_bytes", std::to_string(Metric(d, "pqcd_memory_held_bytes")));
  // The unread answers are cancelled after the timeout and their memory returns to the account.
  EXPECT_TRUE(Eventually([&] { return Metric(d, "pqcd_unread_answers_cancelled_total") >= 1; }))
      << d.log();
  EXPECT_TRUE(Eventually([&] { return Metric(d, "pqcd_memory_held_bytes") == 0; })) << d.log();
  EXPECT_TRUE(HashServedOnUnix(sock));
  EXPECT_EQ(d.Terminate(), 0);
}

// pqcd_flood_helper running as `uid`: its standard input and output are ours. Closing `in` ends
// it; the destructor does that and waits for it.
class FloodHelper {
 public:
  FloodHelper(uid_t uid, const std::string& sock, int calls) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return;
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]);
      ::close(in[1]);
      return;
    }
    pid_ = SpawnAs(uid, {PQCD_FLOOD_HELPER, sock, std::to_string(calls)}, in[0], out[1]);
    ::close(in[0]);
    ::close(out[1]);
    in_ = in[1];
    out_ = out[0];
  }
  ~FloodHelper() {
    Release();
    if (out_ >= 0) ::close(out_);
    if (pid_ > 0) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  // Whether it has sent its calls (it says so on its output) within `timeout`.
  bool Sent(std::chrono::milliseconds timeout = seconds(60)) {
    std::string got;
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (got.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      pollfd p{out_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[64];
      const ssize_t n = ::read(out_, buf, sizeof(buf));
      if (n <= 0) return false;
      got.append(buf, static_cast<size_t>(n));
    }
    return got == "sent\n";
  }
  // Ends its connection (and so its calls).
  void Release() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
};

// Every identity attacking at once: the anonymous TCP identity and eight Unix uids each open 64
// never-read Batch calls (~1 GiB of answers each if nothing bounded them), with the default
// bounds. Each identity gets at most its share, the total holds for all of them together, the
// daemon's resident set stays within --memory-limit (192 MiB) + 64 MiB, and everything returns
// once they leave.
TEST(MemoryAccount, AllIdentitiesAtOnceStayWithinTheLimit) {
  if (::geteuid() != 0) GTEST_SKIP() << "attacking as several uids needs root";
  constexpr int kUids = 8;
  constexpr int kCalls = 64;
  constexpr double kLimit = 192.0 * (1 << 20);  // --memory-limit's default
  Daemon d;
  ASSERT_EQ(::chmod(d.dir().path().c_str(), 0755), 0);
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--unix-mode", "0666"}));
  const std::string refused_batches =
      "pqcd_requests_total{algorithm=\"mixed\",code=\"RESOURCE_EXHAUSTED\",rpc=\"Batch\"}";
  const std::string shake_ops = "pqcd_operations_total{algorithm=\"SHAKE256\",operation=\"hash\"}";
  const double shake_before = std::max(0.0, Metric(d, shake_ops));  // absent until one ran
  const long rss_before = RssKiB(d.pid());
  long rss_peak = rss_before;
  double held_peak = 0;
  const auto sample = [&] {
    rss_peak = std::max(rss_peak, RssKiB(d.pid()));
    held_peak = std::max(held_peak, Metric(d, "pqcd_memory_held_bytes"));
  };

  const std::string batch = HugeBatch();
  NeverReadingClient tcp(NeverReadingClient::ConnectTcp(d.port()));
  ASSERT_TRUE(tcp.connected());
  for (int i = 0; i < kCalls; ++i) tcp.Call("/pqc.v1.Crypto/Batch", batch);
  std::vector<std::unique_ptr<FloodHelper>> helpers;
  for (int i = 0; i < kUids; ++i) {
    helpers.push_back(std::make_unique<FloodHelper>(2001 + i, sock, kCalls));
    ASSERT_TRUE(helpers.back()->Sent()) << "helper as uid " << 2001 + i << "\n" << d.log();
    sample();
  }
  // The attack is at its peak once the account's total is full (no further call fits: the calls
  // held leave less than one call's charge) and every call it holds is computed (their answers
  // wait unread, for the default --unread-answer-timeout of 30 s). The other calls are refused,
  // or wait unread in the connections: gRPC's own buffer quota (--grpc-memory-mb) stops reading
  // them while the stuck answers fill it, which a slow (sanitizer) build reaches first.
  constexpr double kCallCharge = 2.0 * 255 * 65536;  // a call's answers' bound, twice
  const auto peak_reached = [&] {
    const double held = Metric(d, "pqcd_memory_held_bytes");
    const double computed = (Metric(d, shake_ops) - shake_before) / 255;
    return held > kLimit - kCallCharge && computed >= std::floor(held / kCallCharge);
  };
  ASSERT_TRUE(Eventually([&] {
    sample();
    return peak_reached();
  })) << "computed "
      << (Metric(d, shake_ops) - shake_before) / 255 << ", held "
      << Metric(d, "pqcd_memory_held_bytes") << " bytes\n"
      << BatchLines(HttpGet(d.metrics_port(), "/metrics")) << d.log();
  sample();
  const double refused = Metric(d, refused_batches);
  EXPECT_GT(refused, 0) << "nothing was refused: the total did not hold the attack back";
  RecordProperty("calls_refused", std::to_string(refused));
  RecordProperty("rss_before_kib", std::to_string(rss_before));
  RecordProperty("rss_peak_kib", std::to_string(rss_peak));
  RecordProperty("memory_held_peak_bytes", std::to_string(held_peak));
  EXPECT_LE(held_peak, kLimit);
  // The target, --memory-limit + 64 MiB, on the resident set of an ordinary build, and on its
  // growth. A sanitizer build starts far higher and pads every allocation (ASan's redzones and
  // allocator: 229 MiB of growth where an ordinary build grows 208), and under qemu (a cross
  // build) the resident set is the emulator's, with its translated code; there only the growth is
  // bounded, with 32 MiB more room.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && !PQCD_TESTS_EMULATED
  EXPECT_LE(rss_peak, 256L * 1024) << "peak RSS " << rss_peak << " KiB";
  EXPECT_LE(rss_peak - rss_before, 256L * 1024)
      << "RSS grew from " << rss_before << " to " << rss_peak << " KiB";
#else
  EXPECT_LE(rss_peak - rss_before, 288L * 1024)
      << "RSS grew from " << rss_before << " to " << rss_peak << " KiB";
#endif
  // They leave: their calls end and the account is empty again.
  for (auto& h : helpers) h->Release();
  helpers.clear();
  EXPECT_TRUE(Eventually([&] { return Metric(d, "pqcd_memory_held_bytes") <= 64.0 * (1 << 20); }))
      << d.log();
  EXPECT_TRUE(HashServedOnUnix(sock)) << d.log();
  EXPECT_EQ(d.Terminate(), 0);
}

}  // namespace
}  // namespace pqcd::testing
