// Hostile callers of the services that carry no crypto (issue 45, item 1): Keys, grpc.health.v1
// and reflection calls whose requests carry a large unknown field, on an HTTP/2 connection that
// never grants the daemon a window for its answers. Before, such calls were neither charged to
// the memory account nor watched for unread answers: 120 Keys.List of 8 MiB held 1 GiB. Now a
// request past the small limit of these methods is refused and freed at once, and every answer
// is charged and cancelled once it has gone unread for --unread-answer-timeout.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "daemon_fixture.h"
#include "gtest/gtest.h"
#include "never_reading_client.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using std::chrono::seconds;

// `message` with an unknown length-delimited field (number 4242) of `bytes` bytes appended: the
// daemon parses it (unknown fields are kept) and would hold it with the call.
std::string WithUnknownField(std::string message, size_t bytes) {
  uint64_t tag = (uint64_t{4242} << 3) | 2;
  auto varint = [&](uint64_t v) {
    while (v >= 0x80) {
      message += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    message += static_cast<char>(v);
  };
  varint(tag);
  varint(bytes);
  message.append(bytes, 'x');
  return message;
}

// 40 Keys.List over the Unix socket and 40 Health checks over plain TCP (an anonymous caller),
// each with 4 MiB of unknown field: 320 MiB held if nothing bounded them. Each is refused with
// RESOURCE_EXHAUSTED as it arrives and its request freed; the resident set stays near where it
// was, and a bystander is served throughout.
TEST(ControlCalls, LargeKeysAndHealthRequestsAreRefusedAndFreed) {
  Daemon d;
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--unread-answer-timeout", "4"})) << d.log();
  const long rss_before = RssKiB(d.pid());
  constexpr int kCalls = 40;
  constexpr size_t kPadding = 4 << 20;
  long rss_peak = rss_before;
  {
    NeverReadingClient keys(NeverReadingClient::ConnectUnix(sock));
    NeverReadingClient health(NeverReadingClient::ConnectTcp(d.port()));
    ASSERT_TRUE(keys.connected());
    ASSERT_TRUE(health.connected());
    const std::string list = WithUnknownField(ListKeysRequest().SerializeAsString(), kPadding);
    // grpc.health.v1.HealthCheckRequest{service: ""} is the empty message.
    const std::string check = WithUnknownField("", kPadding);
    for (int i = 0; i < kCalls; ++i) {
      keys.Call("/pqc.v1.Keys/List", list);
      health.Call("/grpc.health.v1.Health/Check", check);
      rss_peak = std::max(rss_peak, RssKiB(d.pid()));
    }
    ASSERT_TRUE(Eventually([&] {
      rss_peak = std::max(rss_peak, RssKiB(d.pid()));
      return MetricOf(d,
                      "pqcd_requests_total{algorithm=\"none\",code=\"RESOURCE_EXHAUSTED\","
                      "rpc=\"Keys.List\"}") >= kCalls;
    })) << d.log();
    const std::vector<double> ms = HashLatenciesMs(
        grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials()), 50);
    ASSERT_EQ(ms.size(), 50u) << "the bystander's Hash failed\n" << d.log();
    RecordProperty("bystander_hash_p50_ms", std::to_string(ms[ms.size() / 2]));
    RecordProperty("bystander_hash_p99_ms", std::to_string(ms[ms.size() * 99 / 100]));
    rss_peak = std::max(rss_peak, RssKiB(d.pid()));
    // While the attackers' connections are still open: nothing of theirs is held.
    EXPECT_EQ(MetricOf(d, "pqcd_memory_held_bytes"), 0) << d.log();
  }
  RecordProperty("rss_growth_kib", std::to_string(rss_peak - rss_before));
  // 320 MiB of requests went through; a few in gRPC's buffers at once at most.
  EXPECT_LT(rss_peak - rss_before, 96L * 1024)
      << "RSS grew from " << rss_before << " to " << rss_peak << " KiB";
  EXPECT_TRUE(HashServedOnUnix(sock));
  EXPECT_EQ(d.Terminate(), 0);
}

// Small Keys.List, Health checks and reflection requests whose answers are never taken: each
// answer is charged to its caller while it waits, and cancelled after --unread-answer-timeout,
// which gives the memory back.
TEST(ControlCalls, UnreadAnswersOfEveryServiceAreChargedAndCancelled) {
  Daemon d;
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--unread-answer-timeout", "4"})) << d.log();
  const double cancelled_before = MetricOf(d, "pqcd_unread_answers_cancelled_total");
  {
    NeverReadingClient unix_client(NeverReadingClient::ConnectUnix(sock));
    NeverReadingClient tcp_client(NeverReadingClient::ConnectTcp(d.port()));
    ASSERT_TRUE(unix_client.connected());
    ASSERT_TRUE(tcp_client.connected());
    const std::string check;  // HealthCheckRequest{service: ""}: the empty message
    for (int i = 0; i < 4; ++i) {
      unix_client.Call("/pqc.v1.Keys/List", ListKeysRequest().SerializeAsString());
      tcp_client.Call("/grpc.health.v1.Health/Check", check);
      tcp_client.Call("/grpc.health.v1.Health/Watch", check);
      // ServerReflectionRequest{list_services: ""} (field 7).
      tcp_client.Call("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                      std::string("\x3a\x00", 2));
    }
    // Answers wait unread: charged.
    ASSERT_TRUE(Eventually([&] { return MetricOf(d, "pqcd_memory_held_bytes") > 0; })) << d.log();
    // Cancelled after the timeout (16 calls), and the memory is given back.
    EXPECT_TRUE(Eventually([&] {
      return MetricOf(d, "pqcd_unread_answers_cancelled_total") >= cancelled_before + 16;
    })) << d.log();
    EXPECT_TRUE(Eventually([&] { return MetricOf(d, "pqcd_memory_held_bytes") == 0; })) << d.log();
  }
  EXPECT_EQ(Daemon::Health(d.Channel()), "SERVING");
  EXPECT_EQ(d.Terminate(), 0);
}

}  // namespace
}  // namespace pqcd::testing
