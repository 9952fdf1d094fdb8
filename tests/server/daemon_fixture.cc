#include "daemon_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/impl/codegen/client_unary_call.h"
#include "gtest/gtest.h"

extern char** environ;

namespace pqcd::testing {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "pqcd-test-XXXXXX").string();
  char* p = mkdtemp(tmpl.data());
  path_ = p ? std::filesystem::path(p) : std::filesystem::temp_directory_path();
}
TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Daemon::~Daemon() {
  if (pid_ > 0) Kill9();
}

bool Daemon::Spawn(std::vector<std::string> args) {
  auto has = [&](const std::string& flag) {
    for (const auto& a : args)
      if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
    return false;
  };
  if (!has("--listen")) args.insert(args.end(), {"--listen", "127.0.0.1:0"});
  if (!has("--metrics-listen")) args.insert(args.end(), {"--metrics-listen", "127.0.0.1:0"});
  if (!has("--workers")) args.insert(args.end(), {"--workers", "2"});
  std::string port_file = dir_ / ("port" + std::to_string(runs_));
  args.insert(args.end(), {"--port-file", port_file});
  log_path_ = dir_ / ("pqcd" + std::to_string(runs_) + ".log");
  ++runs_;

  std::vector<std::string> argv_s = {PQCD_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  int rc = posix_spawn(&pid_, PQCD_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "posix_spawn " << PQCD_BINARY << ": " << strerror(rc);
    return false;
  }
  return true;
}

bool Daemon::Start(std::vector<std::string> args, std::chrono::milliseconds timeout) {
  // With a Unix socket, health is checked there (the TCP port may require TLS).
  std::string unix_path;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--unix") unix_path = args[i + 1];
  }
  if (!Spawn(std::move(args))) return false;
  std::string port_file = dir_ / ("port" + std::to_string(runs_ - 1));
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      ADD_FAILURE() << "pqcd exited during start-up; log:\n" << log();
      return false;
    }
    std::ifstream in(port_file);
    if (in >> port_ >> metrics_port_) {
      auto channel = unix_path.empty() ? Channel()
                                       : grpc::CreateChannel("unix:" + unix_path,
                                                             grpc::InsecureChannelCredentials());
      if (Health(channel) == "SERVING") return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "pqcd did not become SERVING; log:\n" << log();
  Kill9();  // never leave a daemon behind
  return false;
}

int Daemon::RunToExit(std::vector<std::string> args, std::chrono::milliseconds timeout) {
  if (!Spawn(std::move(args))) return -1;
  return Wait(timeout);
}

void Daemon::Signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

int Daemon::Wait(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (pid_ > 0) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return -WTERMSIG(status);
      return -999;
    }
    if (std::chrono::steady_clock::now() > end) return -1000;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1001;
}

int Daemon::Terminate(std::chrono::milliseconds timeout) {
  Signal(SIGTERM);
  int code = Wait(timeout);
  if (code == -1000) Kill9();
  if (std::getenv("PQCD_TEST_SHOW_LOGS") != nullptr) std::cerr << "---- pqcd log\n" << log();
  return code;
}

void Daemon::Kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string Daemon::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::shared_ptr<grpc::Channel> Daemon::Channel() const {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  return grpc::CreateCustomChannel(target(), grpc::InsecureChannelCredentials(), args);
}
std::unique_ptr<pqc::v1::Crypto::Stub> Daemon::Crypto() const {
  return pqc::v1::Crypto::NewStub(Channel());
}
std::unique_ptr<pqc::v1::Keys::Stub> Daemon::Keys() const {
  return pqc::v1::Keys::NewStub(Channel());
}

std::string Daemon::Health(const std::shared_ptr<grpc::Channel>& channel) {
  // grpc.health.v1.HealthCheckRequest{service: ""} is the empty message; the response is
  // HealthCheckResponse{status = 1 (SERVING) | 2 (NOT_SERVING)}: bytes 08 xx.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::ByteBuffer request, response;
  grpc::Slice empty;
  request = grpc::ByteBuffer(&empty, 1);
  grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                   grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel.get(), method, &ctx, request, &response);
  if (!s.ok()) return "error " + std::to_string(s.error_code()) + ": " + s.error_message();
  std::vector<grpc::Slice> slices;
  (void)response.Dump(&slices);
  std::string bytes;
  for (auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  if (bytes.size() == 2 && bytes[0] == 0x08 && bytes[1] == 1) return "SERVING";
  if (bytes.size() == 2 && bytes[0] == 0x08 && bytes[1] == 2) return "NOT_SERVING";
  return "UNKNOWN";
}

// Runs the helper as `uid` (fork, drop to uid, exec: the child uses no gRPC before exec).
pid_t SpawnAs(uid_t uid, const std::vector<std::string>& args, int in_fd, int out_fd) {
  std::vector<std::string> args_copy = args;
  std::vector<char*> argv;
  for (auto& a : args_copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = {"ASAN_OPTIONS=detect_leaks=0", "PATH=/usr/bin:/bin"};
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if ((in_fd >= 0 && ::dup2(in_fd, 0) < 0) || (out_fd >= 0 && ::dup2(out_fd, 1) < 0)) {
      ::_exit(125);
    }
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

std::string RunHelperAs(uid_t uid, const std::string& sock, const std::string& op,
                        const std::string& key_id) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "pipe failed";
  const pid_t pid = SpawnAs(uid, {PQCD_IDENTITY_HELPER, sock, op, key_id}, -1, fds[1]);
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return "fork failed";
  }
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return "helper failed: status " + std::to_string(status) + " " + out;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

long RssKiB(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

bool HashServedOnUnix(const std::string& sock) {
  return HashServedOn(grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials()));
}

bool HashServedOn(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = pqc::v1::Crypto::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pqc::v1::HashRequest req;
  req.set_algorithm(pqc::v1::SHA3_256);
  req.set_data("abc");
  pqc::v1::HashResponse resp;
  return stub->Hash(&ctx, req, &resp).ok() && resp.digest().size() == 32;
}

std::string HttpGet(int port, const std::string& path, std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  (void)::write(fd, req.data(), req.size());
  std::string resp;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  auto pos = resp.find("\r\n\r\n");
  return pos == std::string::npos ? "" : resp.substr(pos + 4);
}

double MetricOf(const Daemon& d, const std::string& name_and_labels) {
  return MetricValue(HttpGet(d.metrics_port(), "/metrics"), name_and_labels);
}

std::vector<double> HashLatenciesMs(const std::shared_ptr<grpc::Channel>& channel, int n) {
  auto stub = pqc::v1::Crypto::NewStub(channel);
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pqc::v1::HashRequest req;
    req.set_algorithm(pqc::v1::SHA3_256);
    req.set_data("bystander");
    pqc::v1::HashResponse resp;
    const auto t0 = std::chrono::steady_clock::now();
    if (!stub->Hash(&ctx, req, &resp).ok()) return {};
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

std::unique_ptr<grpc::ClientContext> ContextWithDeadline(std::chrono::milliseconds in) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + in);
  return ctx;
}

double MetricValue(const std::string& text, const std::string& name_and_labels) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name_and_labels + " ", 0) == 0) {
      return std::strtod(line.c_str() + name_and_labels.size() + 1, nullptr);
    }
  }
  return -1;
}

int Shell(const std::string& command) {
  int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string Bytes(const std::vector<uint8_t>& v) {
  return std::string(v.begin(), v.end());
}
std::vector<uint8_t> Vec(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

}  // namespace pqcd::testing
