// Hostile callers against the real pqcd (issue 25, "Connections" and "/metrics"): half-open
// connections on the Unix socket, connection floods on TCP, idle connections, garbage instead of
// HTTP/2, and stalled requests on the metrics endpoint. Each attack must leave the daemon serving a
// bystander and must be cleared by the daemon itself (polled with generous deadlines; nothing here
// is timed).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "daemon_fixture.h"
#include "gtest/gtest.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using std::chrono::seconds;

int UnixConnect(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int TcpConnect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the peer has closed the connection (a read returns 0 or fails) without waiting.
bool ClosedByPeer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char buf[256];
  const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

double Metric(const Daemon& d, const std::string& name_and_labels) {
  return MetricValue(HttpGet(d.metrics_port(), "/metrics"), name_and_labels);
}

// 100 connections from one uid that send half of the HTTP/2 preface and then nothing: the uid
// gets at most its share of the socket, another uid is served meanwhile, and every half-open
// connection is closed by the handshake timeout (default flags otherwise).
TEST(Connections, HalfOpenUnixFloodIsCappedPerUidAndCleared) {
  Daemon d;
  ASSERT_EQ(::chmod(d.dir().path().c_str(), 0755), 0);
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(
      d.Start({"--unix", sock, "--unix-mode", "0666", "--max-unix-connections-per-uid", "64"}));
  std::vector<int> flood;
  for (int i = 0; i < 100; ++i) {
    const int fd = UnixConnect(sock);
    if (fd < 0) continue;
    (void)::send(fd, "PRI * HTTP/2.0\r\n", 16, MSG_NOSIGNAL);
    flood.push_back(fd);
  }
  // The listener accepts them in its own time: wait until it has seen all of them.
  ASSERT_TRUE(Eventually([&] {
    return Metric(d, "pqcd_unix_connections{state=\"pending\"}") +
               Metric(d, "pqcd_unix_connections_refused_total{reason=\"uid_limit\"}") >=
           100;
  })) << d.log();
  EXPECT_LE(Metric(d, "pqcd_unix_connections{state=\"pending\"}"), 64);
  EXPECT_GE(Metric(d, "pqcd_unix_connections_refused_total{reason=\"uid_limit\"}"), 36);
  // A bystander: another uid while the flooding uid is at its cap. The socket's directory and
  // the socket are open to it; without root the test cannot change uid and checks this uid.
  if (::geteuid() == 0) {
    EXPECT_EQ(RunHelperAs(1003, sock, "get", "no-such-key"), "error 5") << d.log();
  }
  // The handshake timeout (5 s by default) closes every half-open connection.
  EXPECT_TRUE(Eventually([&] { return Metric(d, "pqcd_unix_connections{state=\"pending\"}") == 0; },
                         seconds(10)))
      << d.log();
  EXPECT_GE(Metric(d, "pqcd_unix_connections_refused_total{reason=\"handshake_timeout\"}"), 1);
  for (int fd : flood) {
    EXPECT_TRUE(Eventually([&] { return ClosedByPeer(fd); }, seconds(5)));
    ::close(fd);
  }
  EXPECT_TRUE(HashServedOnUnix(sock)) << d.log();
  EXPECT_EQ(d.Terminate(), 0);
}

// Something that is not HTTP/2 is closed as soon as it shows, and counted.
TEST(Connections, NotHttp2IsClosedAtOnce) {
  Daemon d;
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--handshake-timeout", "600"}));
  const int fd = UnixConnect(sock);
  ASSERT_GE(fd, 0);
  const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)::send(fd, get.data(), get.size(), MSG_NOSIGNAL);
  EXPECT_TRUE(Eventually([&] { return ClosedByPeer(fd); }, seconds(10)));
  ::close(fd);
  EXPECT_EQ(Metric(d, "pqcd_unix_connections_refused_total{reason=\"not_http2\"}"), 1);
  EXPECT_TRUE(HashServedOnUnix(sock));
  EXPECT_EQ(d.Terminate(), 0);
}

// The same on TCP: gRPC's own handshake timeout is set to --handshake-timeout, so a connection
// that sends half a preface is closed too.
TEST(Connections, HalfOpenTcpConnectionIsClosed) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--handshake-timeout", "1"}));
  const int fd = TcpConnect(d.port());
  ASSERT_GE(fd, 0);
  (void)::send(fd, "PRI * HTTP/2.0\r\n", 16, MSG_NOSIGNAL);
  EXPECT_TRUE(Eventually([&] { return ClosedByPeer(fd); }, seconds(10)));
  ::close(fd);
  EXPECT_GE(MetricValue(HttpGet(d.metrics_port(), "/metrics"), "pqcd_selftest_passed"), 1);
  EXPECT_EQ(d.Terminate(), 0);
}

// A TCP connection from `source` (a loopback address) that has sent the HTTP/2 client preface
// and an empty SETTINGS frame, so that gRPC takes it for a client; -1 when it cannot connect.
int Http2ConnectFrom(const char* source, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ::close(fd);
    return -1;
  }
  static const char kPrefaceAndSettings[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
  (void)::send(fd, kPrefaceAndSettings, sizeof(kPrefaceAndSettings) - 1, MSG_NOSIGNAL);
  return fd;
}

bool HashServedOnTcp(const Daemon& d) {
  return HashServedOn(d.Channel());
}

// Connections from one peer address beyond its cap are closed as they are accepted, while another
// address is served; past the total, every new connection is closed; and the slots come back once
// the flood's connections are gone. (--handshake-timeout is raised so that the flood's
// connections stay while the test looks at them.)
TEST(Connections, TcpConnectionsAreCappedPerAddressAndInTotal) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--max-tcp-connections", "8", "--max-tcp-connections-per-address", "4",
                       "--handshake-timeout", "600"}));
  const auto open = [&] { return Metric(d, "pqcd_tcp_connections"); };
  const auto refused = [&](const char* reason) {
    return Metric(d, std::string("pqcd_tcp_connections_refused_total{reason=\"") + reason + "\"}");
  };
  ASSERT_TRUE(Eventually([&] { return open() == 0; })) << "start-up connections still open";
  std::vector<int> flood;
  for (int i = 0; i < 6; ++i) {
    const int fd = Http2ConnectFrom("127.0.0.2", d.port());
    ASSERT_GE(fd, 0);
    flood.push_back(fd);
  }
  ASSERT_TRUE(Eventually([&] { return open() + refused("address_limit") >= 6; })) << d.log();
  EXPECT_EQ(open(), 4);
  EXPECT_EQ(refused("address_limit"), 2);
  const auto closed = [&](const std::vector<int>& fds) {
    return std::count_if(fds.begin(), fds.end(), [](int fd) { return ClosedByPeer(fd); });
  };
  // (A refused connection reads as closed at every look, so this counts, it does not add up.)
  EXPECT_TRUE(Eventually([&] { return closed(flood) == 2; }, seconds(10)));
  // A bystander at another address is served.
  EXPECT_TRUE(HashServedOnTcp(d)) << d.log();
  EXPECT_NE(d.log().find("--max-tcp-connections-per-address 4 reached"), std::string::npos);
  ASSERT_TRUE(Eventually([&] { return open() == 4; })) << "the bystander's connection stays";
  // Four more from a second address fill the total: the next connection is closed at once.
  for (int i = 0; i < 4; ++i) {
    const int fd = Http2ConnectFrom("127.0.0.3", d.port());
    ASSERT_GE(fd, 0);
    flood.push_back(fd);
  }
  ASSERT_TRUE(Eventually([&] { return open() == 8; })) << d.log();
  const int over = Http2ConnectFrom("127.0.0.4", d.port());
  ASSERT_GE(over, 0);
  EXPECT_TRUE(Eventually([&] { return ClosedByPeer(over); }, seconds(10)));
  ::close(over);
  EXPECT_EQ(refused("limit"), 1);
  // The flood leaves: once gRPC has closed its side of those connections, their slots are free.
  for (int fd : flood) ::close(fd);
  EXPECT_TRUE(Eventually([&] { return open() == 0; }));
  EXPECT_TRUE(HashServedOnTcp(d)) << d.log();
  EXPECT_EQ(d.Terminate(), 0);
}

// A connection without a call in progress is closed after --connection-idle-timeout (HTTP/2
// GOAWAY, then the end of the connection), which frees its slot.
TEST(Connections, IdleConnectionIsClosed) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--connection-idle-timeout", "1", "--handshake-timeout", "600"}));
  const int fd = Http2ConnectFrom("127.0.0.1", d.port());
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(Eventually([&] { return ClosedByPeer(fd); }, seconds(20)));
  ::close(fd);
  EXPECT_TRUE(Eventually([&] { return Metric(d, "pqcd_tcp_connections") == 0; }));
  EXPECT_EQ(d.Terminate(), 0);
}

// Eight clients that send part of a request line and stall do not take /metrics down, and the
// endpoint drops them itself.
TEST(Metrics, StalledRequestsDoNotBlockTheEndpoint) {
  Daemon d;
  ASSERT_TRUE(d.Start({}));
  std::vector<int> stalled;
  for (int i = 0; i < 8; ++i) {
    const int fd = TcpConnect(d.metrics_port());
    ASSERT_GE(fd, 0);
    (void)::send(fd, "GET /metr", 9, MSG_NOSIGNAL);
    stalled.push_back(fd);
  }
  // Served beside them, each answer within 1 s (issue 25's target; civetweb would otherwise wait
  // 30 s for the stalled ones).
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(MetricValue(HttpGet(d.metrics_port(), "/metrics", std::chrono::milliseconds(1000)),
                          "pqcd_selftest_passed"),
              1);
  }
  for (int fd : stalled) {
    EXPECT_TRUE(Eventually([&] { return ClosedByPeer(fd); }, seconds(10)));
    ::close(fd);
  }
  EXPECT_EQ(d.Terminate(), 0);
}

}  // namespace
}  // namespace pqcd::testing
