// Typed caller identities (mTLS SANs, Unix peer credentials), TLS reload on SIGHUP, the minimum
// TLS version, the Unix listener (stale sockets, connection bound) and --admin validation. Runs
// the real pqcd binary; certificates are made with the openssl CLI at test time.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "daemon_fixture.h"
#include "gtest/gtest.h"

extern char** environ;

namespace pqcd::testing {
namespace {

using namespace pqc::v1;

std::unique_ptr<grpc::ClientContext> Ctx(int seconds = 30) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return ctx;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path + ".tmp", std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  ASSERT_EQ(std::rename((path + ".tmp").c_str(), path.c_str()), 0);
}

// A CA pair (ca1, ca2), a server certificate under each, and client certificates under ca1.
class Pki {
 public:
  Pki() {
    const std::string script =
        "set -e; cd '" + dir_.path().string() +
        "';"
        "ca() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
        "  -subj /CN=$1 -keyout $1.key -out $1.pem 2>/dev/null; };"
        "mk() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=$1 "
        "  -keyout $1.key -out $1.csr 2>/dev/null;"
        "  if [ -n \"$3\" ]; then printf 'subjectAltName=%s\\n' \"$3\" > $1.ext;"
        "    openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -days 1"
        "      -extfile $1.ext -out $1.pem 2>/dev/null;"
        "  else openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -days 1"
        "      -out $1.pem 2>/dev/null; fi; };"
        "ca ca1; ca ca2;"
        "mk server1 ca1 DNS:localhost,IP:127.0.0.1; mk server2 ca2 DNS:localhost,IP:127.0.0.1;"
        "mk client-dns ca1 DNS:client-a,DNS:client-b;"
        "mk client-uri ca1 URI:spiffe://example.org/a,DNS:also-dns;"
        "mk client-unix ca1 DNS:unix:uid:0; mk client-anon ca1 DNS:anonymous;"
        "mk client-nosan ca1 ''";
    std::string escaped;
    for (char c : script) {
      if (c == '"' || c == '\\' || c == '$') escaped += '\\';
      escaped += c;
    }
    ok_ = Shell("bash -c \"" + escaped + "\"") == 0;
  }
  bool ok() const { return ok_; }
  std::string operator/(const std::string& name) const { return dir_ / name; }
  std::string Read(const std::string& name) const { return ReadFile(dir_ / name); }

  // A TLS channel of its own (no subchannel shared with other channels) to `target`, trusting
  // `ca`, with the client certificate `client` ("" for none).
  std::shared_ptr<grpc::Channel> Channel(const std::string& target, const std::string& ca,
                                         const std::string& client) const {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = Read(ca + ".pem");
    if (!client.empty()) {
      o.pem_cert_chain = Read(client + ".pem");
      o.pem_private_key = Read(client + ".key");
    }
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return grpc::CreateCustomChannel(target, grpc::SslCredentials(o), args);
  }

 private:
  TempDir dir_;
  bool ok_ = false;
};

grpc::Status HashOn(const std::shared_ptr<grpc::Channel>& channel, int seconds = 30) {
  auto stub = Crypto::NewStub(channel);
  HashRequest req;
  req.set_algorithm(SHA3_256);
  req.set_data("x");
  HashResponse resp;
  return stub->Hash(Ctx(seconds).get(), req, &resp);
}

// Holds a new ML-KEM-768 key `key_id` and returns its owner, or "error <code>".
std::string HoldAndGetOwner(const std::shared_ptr<grpc::Channel>& channel,
                            const std::string& key_id) {
  KeyGenRequest kg;
  kg.set_algorithm(ML_KEM_768);
  kg.set_hold(true);
  kg.set_key_id(key_id);
  KeyGenResponse kr;
  if (auto s = Crypto::NewStub(channel)->KeyGen(Ctx().get(), kg, &kr); !s.ok()) {
    return "error " + std::to_string(s.error_code()) + " " + s.error_message();
  }
  GetPublicKeyRequest gp;
  gp.set_key_id(key_id);
  KeyInfo info;
  if (auto s = Keys::NewStub(channel)->GetPublicKey(Ctx().get(), gp, &info); !s.ok()) {
    return "error " + std::to_string(s.error_code()) + " " + s.error_message();
  }
  return info.owner();
}

std::shared_ptr<grpc::Channel> UnixChannel(const std::string& path) {
  return grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
}

// ---- mTLS identities ---------------------------------------------------------------------------

TEST(IdentityTest, MutualTlsIdentitiesAreTyped) {
  Pki pki;
  ASSERT_TRUE(pki.ok());
  Daemon d;
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--tls-cert", pki / "server1.pem", "--tls-key", pki / "server1.key",
                       "--tls-client-ca", pki / "ca1.pem", "--unix", sock}));
  auto channel = [&](const std::string& client) { return pki.Channel(d.target(), "ca1", client); };
  // A URI SAN (SPIFFE id) wins over DNS SANs; otherwise the first DNS SAN.
  EXPECT_EQ(HoldAndGetOwner(channel("client-uri"), "k-uri"), "tls:uri:spiffe://example.org/a");
  EXPECT_EQ(HoldAndGetOwner(channel("client-dns"), "k-dns"), "tls:dns:client-a");
  // A certificate cannot claim a Unix identity or "anonymous": everything from TLS is typed.
  EXPECT_EQ(HoldAndGetOwner(channel("client-unix"), "k-unix"), "tls:dns:unix:uid:0");
  EXPECT_EQ(HoldAndGetOwner(channel("client-anon"), "k-anon"), "tls:dns:anonymous");
  // A certificate without URI or DNS SAN: no held keys at all, given keys still work.
  EXPECT_EQ(HoldAndGetOwner(channel("client-nosan"), "k-nosan").rfind("error 7", 0), 0u);
  EXPECT_TRUE(HashOn(channel("client-nosan")).ok());

  // The Unix socket caller is unix:uid:<euid>; the certificate claiming "unix:uid:0" does not see
  // its key.
  const std::string me = "unix:uid:" + std::to_string(::geteuid());
  EXPECT_EQ(HoldAndGetOwner(UnixChannel(sock), "k-local"), me);
  GetPublicKeyRequest gp;
  gp.set_key_id("k-local");
  KeyInfo info;
  EXPECT_EQ(
      Keys::NewStub(channel("client-unix"))->GetPublicKey(Ctx().get(), gp, &info).error_code(),
      grpc::NOT_FOUND);
  EXPECT_EQ(d.Terminate(), 0);
}

// ---- SIGHUP reload -----------------------------------------------------------------------------

TEST(IdentityTest, SighupReloadsTheServerCertificate) {
  Pki pki;
  ASSERT_TRUE(pki.ok());
  Daemon d;
  const std::string cert = d.dir() / "tls.pem", key = d.dir() / "tls.key";
  WriteFile(cert, pki.Read("server1.pem"));
  WriteFile(key, pki.Read("server1.key"));
  ASSERT_TRUE(d.Start({"--tls-cert", cert, "--tls-key", key, "--unix", d.dir() / "s.sock"}));

  auto old_channel = pki.Channel(d.target(), "ca1", "");
  ASSERT_TRUE(HashOn(old_channel).ok());
  // A client that trusts only ca2 cannot connect yet.
  EXPECT_FALSE(HashOn(pki.Channel(d.target(), "ca2", ""), 5).ok());

  // A bad set (key of another certificate) is refused; the old certificate stays.
  WriteFile(cert, pki.Read("server2.pem"));
  d.Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] { return d.log().find("TLS files refused") != std::string::npos; }))
      << d.log();
  EXPECT_TRUE(HashOn(pki.Channel(d.target(), "ca1", "")).ok());

  WriteFile(key, pki.Read("server2.key"));
  d.Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] { return d.log().find("TLS files reloaded") != std::string::npos; }))
      << d.log();
  // New connections get the new certificate (the watcher picks it up within its refresh period).
  EXPECT_TRUE(Eventually([&] { return HashOn(pki.Channel(d.target(), "ca2", ""), 5).ok(); }))
      << d.log();
  EXPECT_FALSE(HashOn(pki.Channel(d.target(), "ca1", ""), 5).ok());
  // The connection made before the reload keeps working.
  EXPECT_TRUE(HashOn(old_channel).ok());
  EXPECT_EQ(old_channel->GetState(false), GRPC_CHANNEL_READY);
  EXPECT_EQ(d.Terminate(), 0);
}

// ---- --tls-min-version -------------------------------------------------------------------------

int SClient(const Pki& pki, int port, const std::string& version) {
  return Shell("openssl s_client -connect 127.0.0.1:" + std::to_string(port) + " " + version +
               " -CAfile " + (pki / "ca1.pem") +
               " -verify_return_error -alpn h2 </dev/null "
               ">/dev/null 2>&1");
}

TEST(IdentityTest, TlsMinVersion) {
  Pki pki;
  ASSERT_TRUE(pki.ok());
  {
    Daemon d;  // default: TLS 1.2 and 1.3
    ASSERT_TRUE(d.Start({"--tls-cert", pki / "server1.pem", "--tls-key", pki / "server1.key",
                         "--unix", d.dir() / "s.sock"}));
    EXPECT_EQ(SClient(pki, d.port(), "-tls1_2"), 0);
    EXPECT_EQ(SClient(pki, d.port(), "-tls1_3"), 0);
    EXPECT_EQ(d.Terminate(), 0);
  }
  Daemon d;
  ASSERT_TRUE(d.Start({"--tls-cert", pki / "server1.pem", "--tls-key", pki / "server1.key",
                       "--tls-min-version", "1.3", "--unix", d.dir() / "s.sock"}));
  EXPECT_NE(SClient(pki, d.port(), "-tls1_2"), 0);
  EXPECT_EQ(SClient(pki, d.port(), "-tls1_3"), 0);
  EXPECT_TRUE(HashOn(pki.Channel(d.target(), "ca1", "")).ok());
  EXPECT_EQ(d.Terminate(), 0);
}

// ---- Unix socket identities --------------------------------------------------------------------

TEST(IdentityTest, UnixCallerIsItsUid) {
  Daemon d;
  const std::string sock = d.dir() / "s.sock";
  const std::string uid = std::to_string(::geteuid());
  ASSERT_TRUE(d.Start({"--unix", sock}));
  EXPECT_EQ(HoldAndGetOwner(UnixChannel(sock), "mine"), "unix:uid:" + uid);
  EXPECT_EQ(d.Terminate(), 0);
  // The socket file is removed at exit.
  struct stat st {};
  EXPECT_NE(::lstat(sock.c_str(), &st), 0);

  Daemon named;
  const std::string sock2 = named.dir() / "s.sock";
  ASSERT_TRUE(named.Start({"--unix", sock2, "--unix-user", "me=" + uid}));
  EXPECT_EQ(HoldAndGetOwner(UnixChannel(sock2), "mine"), "unix:user:me");
  // Plain TCP stays anonymous (and may not hold keys).
  EXPECT_EQ(HoldAndGetOwner(named.Channel(), "tcp").rfind("error 7", 0), 0u);
  EXPECT_EQ(named.Terminate(), 0);
}

TEST(IdentityTest, TwoUidsOnTheUnixSocketAreSeparate) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to run callers as uids 1001 and 1002)";
  Daemon d;
  ASSERT_EQ(::chmod(d.dir().path().c_str(), 0755), 0);
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--unix-mode", "0666", "--unix-user", "alice=1001"}));
  EXPECT_EQ(RunHelperAs(1001, sock, "keygen", "alice-key"), "unix:user:alice");
  EXPECT_EQ(RunHelperAs(1002, sock, "keygen", "bob-key"), "unix:uid:1002");
  EXPECT_EQ(RunHelperAs(1001, sock, "encaps", "alice-key"), "ok");
  // uid 1002 can neither see nor use uid 1001's key, and root (unix:uid:0) is no admin.
  EXPECT_EQ(RunHelperAs(1002, sock, "get", "alice-key"), "error 5");
  EXPECT_EQ(RunHelperAs(1002, sock, "encaps", "alice-key"), "error 5");
  EXPECT_EQ(RunHelperAs(1001, sock, "get", "bob-key"), "error 5");
  GetPublicKeyRequest gp;
  gp.set_key_id("alice-key");
  KeyInfo info;
  EXPECT_EQ(Keys::NewStub(UnixChannel(sock))->GetPublicKey(Ctx().get(), gp, &info).error_code(),
            grpc::NOT_FOUND);
  EXPECT_EQ(d.Terminate(), 0);
}

// The kernel's overflow uid (65534) is every caller whose uid is not mapped into pqcd's user
// namespace (systemd's PrivateUsers=yes showed uids 1000 and 1001 both as it, and each could use
// the other's keys): it may not hold keys, the refusal says why, and the log warns. --unix-user
// naming the uid is the operator's statement that it is one caller.
TEST(IdentityTest, TheOverflowUidHoldsNoKeys) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to run a caller as uid 65534)";
  std::ifstream overflow_file("/proc/sys/kernel/overflowuid");
  uint32_t overflow = 65534;
  if (!(overflow_file >> overflow)) overflow = 65534;
  Daemon d;
  ASSERT_EQ(::chmod(d.dir().path().c_str(), 0755), 0);
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--unix-mode", "0666"}));
  EXPECT_EQ(RunHelperAs(overflow, sock, "keygen", "shared-key"), "error 7");  // PERMISSION_DENIED
  EXPECT_EQ(RunHelperAs(1001, sock, "keygen", "mine"), "unix:uid:1001");
  EXPECT_TRUE(Eventually([&] { return d.log().find("overflow uid") != std::string::npos; }))
      << d.log();
  EXPECT_EQ(d.Terminate(), 0);

  Daemon named;
  ASSERT_EQ(::chmod(named.dir().path().c_str(), 0755), 0);
  const std::string sock2 = named.dir() / "s.sock";
  ASSERT_TRUE(named.Start({"--unix", sock2, "--unix-mode", "0666", "--unix-user",
                           "nobody=" + std::to_string(overflow)}));
  EXPECT_EQ(RunHelperAs(overflow, sock2, "keygen", "named-key"), "unix:user:nobody");
  EXPECT_EQ(named.Terminate(), 0);
}

// ---- The Unix listener -------------------------------------------------------------------------

// Connects without gRPC and sends the HTTP/2 client preface: true when the daemon answers (its
// SETTINGS frame), false when it closes the connection at once. -1 in *fd_out when connect fails.
bool RawConnect(const std::string& path, int* fd_out) {
  *fd_out = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  if (::connect(*fd_out, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(*fd_out);
    *fd_out = -1;
    return false;
  }
  timeval tv{20, 0};
  ::setsockopt(*fd_out, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
  (void)::send(*fd_out, kPreface, sizeof(kPreface) - 1, MSG_NOSIGNAL);
  char buf[64];
  return ::recv(*fd_out, buf, sizeof(buf), 0) > 0;
}

TEST(IdentityTest, UnixConnectionsAreBounded) {
  Daemon d;
  const std::string sock = d.dir() / "s.sock";
  ASSERT_TRUE(d.Start({"--unix", sock, "--max-unix-connections", "3"}));
  std::vector<int> open;
  int rejected_fd = -1;
  for (int i = 0; i < 10 && rejected_fd < 0; ++i) {
    int fd = -1;
    if (RawConnect(sock, &fd)) {
      open.push_back(fd);
    } else {
      rejected_fd = fd;
    }
  }
  EXPECT_GE(rejected_fd, 0) << "no connection was refused";
  EXPECT_GE(open.size(), 1u);
  EXPECT_LE(open.size(), 3u);
  if (rejected_fd >= 0) ::close(rejected_fd);
  EXPECT_TRUE(Eventually([&] {
    return d.log().find("--max-unix-connections 3 reached") != std::string::npos;
  })) << d.log();
  for (int fd : open) ::close(fd);
  // Once gRPC has closed them, connections are accepted again.
  EXPECT_TRUE(Eventually([&] { return HashOn(UnixChannel(sock), 5).ok(); })) << d.log();
  EXPECT_EQ(d.Terminate(), 0);
}

TEST(IdentityTest, StaleSocketIsReplacedLiveOneAndOtherFilesAreNot) {
  Daemon first;
  const std::string sock = first.dir() / "s.sock";
  ASSERT_TRUE(first.Start({"--unix", sock}));
  first.Kill9();  // leaves the socket file behind
  struct stat st {};
  ASSERT_EQ(::lstat(sock.c_str(), &st), 0);

  Daemon second;
  ASSERT_TRUE(second.Start({"--unix", sock}));
  EXPECT_TRUE(HashOn(UnixChannel(sock)).ok());
  Daemon third;  // the socket is live: refused, and the running daemon is unaffected
  EXPECT_NE(third.RunToExit({"--unix", sock}), 0);
  EXPECT_NE(third.log().find("another process is listening"), std::string::npos) << third.log();
  EXPECT_TRUE(HashOn(UnixChannel(sock)).ok());
  EXPECT_EQ(second.Terminate(), 0);

  const std::string file = second.dir() / "not-a-socket";
  WriteFile(file, "keep me");
  Daemon fourth;
  EXPECT_NE(fourth.RunToExit({"--unix", file}), 0);
  EXPECT_NE(fourth.log().find("not a socket"), std::string::npos) << fourth.log();
  EXPECT_EQ(ReadFile(file), "keep me");
}

// ---- Flags -------------------------------------------------------------------------------------

TEST(IdentityTest, UntypedAdminIsRefusedAtStart) {
  Daemon d;
  EXPECT_EQ(d.RunToExit({"--admin", "ops", "--unix", d.dir() / "s.sock"}), 2);
  EXPECT_NE(d.log().find("tls:dns:"), std::string::npos) << d.log();
  Daemon e;
  EXPECT_EQ(e.RunToExit({"--unix-user", "x", "--unix", e.dir() / "s.sock"}), 2);
  Daemon f;
  EXPECT_EQ(f.RunToExit({"--tls-min-version", "1.1", "--unix", f.dir() / "s.sock"}), 2);
}

}  // namespace
}  // namespace pqcd::testing
