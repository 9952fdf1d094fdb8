// tls-handshake-client: full TLS 1.3 handshakes in a loop against one server, for
// bench/tls_handshake.py. Each handshake is a new TCP connection and a new SSL (no resumption),
// then a close; the certificate is not verified (the benchmark measures the key exchange).
//
//   tls-handshake-client --port P --groups X25519MLKEM768 --threads N --seconds S
//
// The hybrid groups come from whatever provider OPENSSL_CONF loads (the benchmark gives the client
// pqcd-provider-inproc.so, so that its side costs the same whichever server path is measured).
// Prints one line of JSON: handshakes, seconds, the negotiated group of the last handshake, and
// the handshake latencies' p50/p99 in microseconds (connect() to SSL_connect() returning).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int port = 0;
  std::string groups = "X25519MLKEM768";
  int threads = 1;
  double seconds = 5;
};

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // Closed with RST (SO_LINGER 0) so that loopback does not fill with TIME_WAIT sockets.
  const linger no_linger{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &no_linger, sizeof(no_linger));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

struct PerThread {
  std::vector<uint32_t> latency_us;
  long failures = 0;
  std::string group;
  std::string error;
};

void Run(const Options& o, SSL_CTX* ctx, Clock::time_point end, PerThread& out) {
  while (Clock::now() < end) {
    const auto t0 = Clock::now();
    const int fd = Connect(o.port);
    if (fd < 0) {
      ++out.failures;
      continue;
    }
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    const int rc = SSL_connect(ssl);
    const auto t1 = Clock::now();
    if (rc == 1) {
      out.latency_us.push_back(static_cast<uint32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count()));
      if (out.group.empty()) {
        const int nid = SSL_get_negotiated_group(ssl);
        const char* name = SSL_group_to_name(ssl, nid);
        out.group = name != nullptr ? name : std::to_string(nid);
      }
    } else {
      ++out.failures;
      if (out.error.empty()) {
        char buf[256];
        ERR_error_string_n(ERR_peek_last_error(), buf, sizeof(buf));
        out.error = buf;
      }
    }
    ERR_clear_error();
    SSL_free(ssl);
    ::close(fd);
  }
}

uint32_t Percentile(std::vector<uint32_t>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--port") {
      o.port = std::atoi(v);
    } else if (k == "--groups") {
      o.groups = v;
    } else if (k == "--threads") {
      o.threads = std::max(1, std::atoi(v));
    } else if (k == "--seconds") {
      o.seconds = std::atof(v);
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (o.port <= 0) {
    std::fprintf(stderr, "usage: %s --port P [--groups G] [--threads N] [--seconds S]\n", argv[0]);
    return 2;
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  if (SSL_CTX_set1_groups_list(ctx, o.groups.c_str()) != 1) {
    std::fprintf(stderr, "groups %s not available (is the provider loaded?)\n", o.groups.c_str());
    return 1;
  }
  std::vector<PerThread> per(static_cast<size_t>(o.threads));
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  std::vector<std::thread> threads;
  for (auto& p : per) threads.emplace_back([&, pp = &p] { Run(o, ctx, end, *pp); });
  for (auto& t : threads) t.join();
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<uint32_t> all;
  long failures = 0;
  std::string group, error;
  for (auto& p : per) {
    all.insert(all.end(), p.latency_us.begin(), p.latency_us.end());
    failures += p.failures;
    if (group.empty()) group = p.group;
    if (error.empty()) error = p.error;
  }
  const size_t n = all.size();
  const uint32_t p50 = Percentile(all, 0.50), p99 = Percentile(all, 0.99);
  std::printf(
      "{\"handshakes\": %zu, \"failures\": %ld, \"seconds\": %.3f, \"group\": \"%s\", "
      "\"p50_us\": %u, \"p99_us\": %u, \"error\": \"%s\"}\n",
      n, failures, took, group.c_str(), p50, p99, error.c_str());
  SSL_CTX_free(ctx);
  return n > 0 ? 0 : 1;
}
