// provider_async_check: TLS 1.3 handshakes over X25519MLKEM768 run inside OpenSSL ASYNC jobs
// (SSL_MODE_ASYNC on both ends), all in one thread, to show that pqcd-provider.so pauses a job for
// its daemon call instead of blocking: many handshakes have a call in flight at once.
//
//   OPENSSL_CONF=<cnf loading the provider> provider_async_check CERT KEY [PAIRS]
//
// PAIRS client/server connections over BIO pairs, driven round-robin by SSL_do_handshake; a side
// that answers SSL_ERROR_WANT_ASYNC waits on its wait context's fds (SSL_get_all_async_fds, polled
// when every side is waiting). Passes when every handshake completes with X25519MLKEM768 and at
// some point at least 2 sides were paused on a call at once; prints the largest number.
#include <openssl/async.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Side {
  SSL* ssl = nullptr;
  bool done = false;
  bool waiting = false;  // SSL_ERROR_WANT_ASYNC: a job paused on a daemon call
};

void Fail(const char* what) {
  std::fprintf(stderr, "FAIL: %s\n", what);
  ERR_print_errors_fp(stderr);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CERT KEY [PAIRS]\n", argv[0]);
    return 2;
  }
  const int pairs = argc > 3 ? std::atoi(argv[3]) : 8;
  SSL_CTX* server = SSL_CTX_new(TLS_server_method());
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  if (server == nullptr || client == nullptr) Fail("SSL_CTX_new");
  if (SSL_CTX_use_certificate_file(server, argv[1], SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_use_PrivateKey_file(server, argv[2], SSL_FILETYPE_PEM) != 1) {
    Fail("the certificate or key");
  }
  for (SSL_CTX* c : {server, client}) {
    SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION);
    SSL_CTX_set_mode(c, SSL_MODE_ASYNC);
    if (SSL_CTX_set1_groups_list(c, "X25519MLKEM768") != 1) {
      Fail("X25519MLKEM768 is not a group here (is the provider loaded?)");
    }
  }
  SSL_CTX_set_verify(client, SSL_VERIFY_NONE, nullptr);
  std::vector<Side> sides;
  for (int i = 0; i < pairs; ++i) {
    BIO* a = nullptr;
    BIO* b = nullptr;
    if (BIO_new_bio_pair(&a, 0, &b, 0) != 1) Fail("BIO_new_bio_pair");
    Side c{SSL_new(client)}, s{SSL_new(server)};
    SSL_set_bio(c.ssl, a, a);
    SSL_set_bio(s.ssl, b, b);
    SSL_set_connect_state(c.ssl);
    SSL_set_accept_state(s.ssl);
    sides.push_back(c);
    sides.push_back(s);
  }
  size_t max_waiting = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    size_t left = 0, waiting = 0;
    for (Side& side : sides) {
      if (side.done) continue;
      const int rc = SSL_do_handshake(side.ssl);
      side.waiting = false;
      if (rc == 1) {
        side.done = true;
        continue;
      }
      switch (SSL_get_error(side.ssl, rc)) {
        case SSL_ERROR_WANT_READ:
        case SSL_ERROR_WANT_WRITE:
          break;
        case SSL_ERROR_WANT_ASYNC:
          side.waiting = true;
          ++waiting;
          break;
        default:
          Fail("a handshake failed");
      }
      ++left;
    }
    max_waiting = std::max(max_waiting, waiting);
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) Fail("handshakes still unfinished after 60 s");
    if (waiting == left) {
      // Every side waits for pqcd: sleep until one of the answers' eventfds is written.
      std::vector<pollfd> fds;
      for (const Side& side : sides) {
        if (!side.waiting) continue;
        size_t n = 0;
        SSL_get_all_async_fds(side.ssl, nullptr, &n);
        std::vector<OSSL_ASYNC_FD> f(n);
        SSL_get_all_async_fds(side.ssl, f.data(), &n);
        for (size_t k = 0; k < n; ++k) fds.push_back({f[k], POLLIN, 0});
      }
      if (fds.empty()) Fail("a side waits for an async job but has no fd to wait on");
      ::poll(fds.data(), fds.size(), 1000);
    }
  }
  for (const Side& side : sides) {
    const int nid = SSL_get_negotiated_group(side.ssl);
    const char* name = SSL_group_to_name(side.ssl, nid);
    if (name == nullptr || std::strcmp(name, "X25519MLKEM768") != 0) {
      Fail("a handshake did not negotiate X25519MLKEM768");
    }
    SSL_free(side.ssl);
  }
  SSL_CTX_free(server);
  SSL_CTX_free(client);
  std::printf(
      "%d handshakes over X25519MLKEM768 in ASYNC jobs; at most %zu sides paused on pqcd "
      "at once\n",
      pairs, max_waiting);
  if (max_waiting < 2) Fail("never more than one daemon call in flight");
  return 0;
}
