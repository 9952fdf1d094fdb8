// Test fixture: runs the real pqcd binary as a child process (posix_spawn), waits for it to listen
// and report health SERVING, and talks to it over real gRPC channels.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/test_support.h"
#include "grpcpp/grpcpp.h"
#include "pqc/v1/crypto.grpc.pb.h"
#include "pqc/v1/keys.grpc.pb.h"

namespace pqcd::testing {

// A temporary directory removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

class Daemon {
 public:
  Daemon() = default;
  ~Daemon();  // kills the daemon if it still runs

  // Starts pqcd with `args` plus --listen 127.0.0.1:0 (unless args has --listen),
  // --metrics-listen 127.0.0.1:0, --port-file and --workers 2 (unless given). Returns false (and
  // records the log) when it does not become SERVING within `timeout`.
  bool Start(std::vector<std::string> args,
             std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Starts pqcd with the same additions as Start and returns without waiting for anything (false
  // when it could not be started): for tests that act during start-up.
  bool Launch(std::vector<std::string> args) { return Spawn(std::move(args)); }
  // Starts and expects the process to exit (bad config, self-test failure): returns its exit code.
  int RunToExit(std::vector<std::string> args,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // SIGTERM (drain) and wait: returns the exit code (-signal if killed by a signal).
  int Terminate(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  void Signal(int sig);
  // Waits for the exit; returns the code or -signal; -1000 on timeout.
  int Wait(std::chrono::milliseconds timeout);
  void Kill9();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string log() const;  // the daemon's stderr so far
  const TempDir& dir() const { return dir_; }

  std::shared_ptr<grpc::Channel> Channel() const;  // plaintext TCP
  std::unique_ptr<pqc::v1::Crypto::Stub> Crypto() const;
  std::unique_ptr<pqc::v1::Keys::Stub> Keys() const;
  // grpc.health.v1 check of the empty service name: "SERVING", "NOT_SERVING", or an error text.
  static std::string Health(const std::shared_ptr<grpc::Channel>& channel);

 private:
  bool Spawn(std::vector<std::string> args);
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;
  int runs_ = 0;
  std::string log_path_;
};

// Runs pqcd_identity_helper (identity_helper.cc) as `uid` against the Unix socket `sock`: fork,
// drop to uid, exec (the child uses no gRPC before exec). Returns what it printed ("error <code>"
// for a failed call), or "helper failed: ..." when it could not run.
// Forks, drops to `uid` (group `uid` too, no supplementary groups) and executes args[0] with
// `args`, in an environment of its own (ASan without leak checks, a plain PATH); the child's
// standard input and output are in_fd and out_fd (-1: this process's). Only async-signal-safe
// calls between fork and execve, so it is safe in a process that runs gRPC. The pid, or -1.
pid_t SpawnAs(uid_t uid, const std::vector<std::string>& args, int in_fd, int out_fd);

std::string RunHelperAs(uid_t uid, const std::string& sock, const std::string& op,
                        const std::string& key_id);

// HTTP GET of http://127.0.0.1:port/path; returns the body ("" on failure, or when connecting or
// any read takes longer than `timeout`).
std::string HttpGet(int port, const std::string& path,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60));
// Value of a sample line "name{labels} value" ("name value" when labels empty); -1 if absent.
double MetricValue(const std::string& text, const std::string& name_and_labels);
// The same read from daemon `d`'s /metrics now.
double MetricOf(const Daemon& d, const std::string& name_and_labels);
// `n` SHA3-256 Hash calls on `channel`, one after another: their latencies in ms, sorted; empty
// when a call failed. For tests that record a bystander's latency as a property (tests do not
// assert on time).
std::vector<double> HashLatenciesMs(const std::shared_ptr<grpc::Channel>& channel, int n);
// A client deadline `in` from now.
std::unique_ptr<grpc::ClientContext> ContextWithDeadline(std::chrono::milliseconds in);

// The resident set of process `pid` in KiB (VmRSS), -1 if unreadable.
long RssKiB(pid_t pid);
// One SHA3-256 Hash over the Unix socket `sock` on a fresh channel: whether it was answered right.
bool HashServedOnUnix(const std::string& sock);
// The same on any channel (a fresh one makes a new connection).
bool HashServedOn(const std::shared_ptr<grpc::Channel>& channel);

// Runs a shell command; returns its exit status.
int Shell(const std::string& command);

std::string Bytes(const std::vector<uint8_t>& v);
std::vector<uint8_t> Vec(const std::string& s);

}  // namespace pqcd::testing
