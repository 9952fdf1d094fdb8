// Hostile callers against the real pqcd (issue 25, "one memory account"): a raw HTTP/2 client
// that opens Batch calls asking for megabytes of answers each and never takes them (its stream
// flow-control window is 0). The daemon must refuse that identity's calls past its share of the
// memory account, keep serving another identity, and free the unread answers by itself.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.h"
#include "gtest/gtest.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using std::chrono::seconds;

// An HTTP/2 client written by hand (RFC 9113, HPACK literals only): it announces an initial
// stream window of 0, so the daemon can send each call's headers but none of its answer. It does
// answer the connection's SETTINGS and PINGs (from its reader thread), so the connection itself
// stays healthy.
class NeverReadingClient {
 public:
  explicit NeverReadingClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (!connected_) return;
    std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    // SETTINGS: ENABLE_PUSH (0x2) = 0, INITIAL_WINDOW_SIZE (0x4) = 0.
    const std::string settings("\x00\x02\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00", 12);
    out += Frame(0x4, 0, 0, settings);
    Send(out);
    reader_ = std::thread([this] { Read(); });
  }
  ~NeverReadingClient() {
    ::shutdown(fd_, SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    ::close(fd_);
  }
  bool connected() const { return connected_; }

  // Opens a call of `method` ("/pqc.v1.Crypto/Batch") with one serialized request message.
  void Call(const std::string& method, const std::string& message) {
    std::string headers;
    for (const auto& [name, value] : {std::pair<std::string, std::string>{":method", "POST"},
                                      {":scheme", "http"},
                                      {":path", method},
                                      {":authority", "127.0.0.1"},
                                      {"content-type", "application/grpc"},
                                      {"te", "trailers"}}) {
      headers += '\0';  // literal header field without indexing, new name
      headers += static_cast<char>(name.size());
      headers += name;
      headers += static_cast<char>(value.size());
      headers += value;
    }
    std::string grpc_message(5, '\0');
    const uint32_t n = static_cast<uint32_t>(message.size());
    grpc_message[1] = static_cast<char>(n >> 24);
    grpc_message[2] = static_cast<char>(n >> 16);
    grpc_message[3] = static_cast<char>(n >> 8);
    grpc_message[4] = static_cast<char>(n);
    grpc_message += message;
    Send(Frame(0x1, 0x4, next_stream_, headers) + Frame(0x0, 0x1, next_stream_, grpc_message));
    next_stream_ += 2;
  }

 private:
  static std::string Frame(uint8_t type, uint8_t flags, uint32_t stream,
                           const std::string& payload) {
    std::string f(9, '\0');
    const size_t len = payload.size();
    f[0] = static_cast<char>(len >> 16);
    f[1] = static_cast<char>(len >> 8);
    f[2] = static_cast<char>(len);
    f[3] = static_cast<char>(type);
    f[4] = static_cast<char>(flags);
    f[5] = static_cast<char>(stream >> 24);
    f[6] = static_cast<char>(stream >> 16);
    f[7] = static_cast<char>(stream >> 8);
    f[8] = static_cast<char>(stream);
    return f + payload;
  }
  void Send(const std::string& bytes) {
    std::lock_guard<std::mutex> lock(send_mu_);
    for (size_t off = 0; off < bytes.size();) {
      const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }
  // Reads frames: ACKs SETTINGS and PINGs, ignores the rest (headers, trailers of refused calls).
  void Read() {
    std::string buf;
    char chunk[16384];
    for (;;) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) return;
      buf.append(chunk, static_cast<size_t>(n));
      while (buf.size() >= 9) {
        const size_t len = (size_t{static_cast<uint8_t>(buf[0])} << 16) |
                           (size_t{static_cast<uint8_t>(buf[1])} << 8) |
                           static_cast<uint8_t>(buf[2]);
        if (buf.size() < 9 + len) break;
        const uint8_t type = static_cast<uint8_t>(buf[3]);
        const uint8_t flags = static_cast<uint8_t>(buf[4]);
        if (type == 0x4 && (flags & 0x1) == 0) Send(Frame(0x4, 0x1, 0, ""));
        if (type == 0x6 && (flags & 0x1) == 0) Send(Frame(0x6, 0x1, 0, buf.substr(9, len)));
        buf.erase(0, 9 + len);
      }
    }
  }

  int fd_ = -1;
  bool connected_ = false;
  uint32_t next_stream_ = 1;
  std::mutex send_mu_;
  std::thread reader_;
};

// 255 SHAKE256 outputs of 64 KiB: ~16 MiB of answers from a 3 KB request.
std::string HugeBatch() {
  BatchRequest req;
  for (int i = 0; i < 255; ++i) {
    Operation* op = req.add_operations();
    op->mutable_hash()->set_algorithm(SHAKE256);
    op->mutable_hash()->set_data(std::to_string(i));
    op->mutable_hash()->set_output_length(64 << 10);
  }
  return req.SerializeAsString();
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
  NeverReadingClient attacker(d.port());
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
    auto stub =
        Crypto::NewStub(grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials()));
    std::vector<double> ms;
    for (int i = 0; i < 50; ++i) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
      HashRequest req;
      req.set_algorithm(SHA3_256);
      req.set_data("abc");
      HashResponse resp;
      const auto t0 = std::chrono::steady_clock::now();
      ASSERT_TRUE(stub->Hash(&ctx, req, &resp).ok()) << d.log();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
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

}  // namespace
}  // namespace pqcd::testing
