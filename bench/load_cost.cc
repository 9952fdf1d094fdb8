#include "load_cost.h"

#include <dirent.h>
#include <netdb.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

namespace pqcd::load {

// utime + stime of a whole process (all its threads, exited ones included), seconds.
std::optional<double> ProcCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  if (!fields) return std::nullopt;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Voluntary + non-voluntary context switches, summed over the process's live threads:
// /proc/PID/status alone counts only the main thread (threads that exited are not counted).
std::optional<uint64_t> ProcContextSwitches(int pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return std::nullopt;
  uint64_t total = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name + "/status");
    for (std::string line; std::getline(in, line);) {
      for (const char* key : {"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"}) {
        if (line.rfind(key, 0) == 0) total += std::stoull(line.substr(std::strlen(key)));
      }
    }
  }
  closedir(d);
  return total;
}

// GET of a plain-HTTP URL (http://host:port/path), HTTP/1.0 so that the body ends at close.
absl::StatusOr<std::string> HttpGet(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return absl::InvalidArgumentError("'" + url + "' is not http://");
  std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  const std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string hostport = rest.substr(0, slash);
  std::string host = hostport, port = "80";
  if (const size_t colon = hostport.rfind(':');
      colon != std::string::npos && hostport.find(']', colon) == std::string::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return absl::UnavailableError("cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  int fd = -1;
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return absl::UnavailableError("cannot connect to " + hostport);
  const std::string req =
      "GET " + path + " HTTP/1.0\r\nHost: " + hostport + "\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < req.size()) {
    const ssize_t n = write(fd, req.data() + sent, req.size() - sent);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string resp;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t header_end = resp.find("\r\n\r\n");
  if (resp.rfind("HTTP/1.", 0) != 0 || header_end == std::string::npos) {
    return absl::UnavailableError("no HTTP answer from " + url);
  }
  const std::string status_line = resp.substr(0, resp.find("\r\n"));
  if (status_line.find(" 200") == std::string::npos) {
    return absl::UnavailableError(url + " answered '" + status_line + "'");
  }
  return resp.substr(header_end + 4);
}

// process_cpu_seconds_total from a Prometheus text exposition.
absl::StatusOr<double> ScrapeCpuSeconds(const std::string& url) {
  auto body = HttpGet(url);
  if (!body.ok()) return body.status();
  std::istringstream in(*body);
  const std::string name = "process_cpu_seconds_total";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != ' ' && next != '{') continue;
    const size_t value_at =
        line.find(' ', line.find('}') == std::string::npos ? 0 : line.find('}'));
    if (value_at == std::string::npos) continue;
    try {
      return std::stod(line.substr(value_at + 1));
    } catch (...) {
      break;
    }
  }
  return absl::NotFoundError(url + " has no process_cpu_seconds_total sample");
}

CostMeter::CostMeter(std::vector<int> server_pids, std::string server_metrics, bool in_process)
    : server_pids_(std::move(server_pids)),
      server_metrics_(std::move(server_metrics)),
      in_process_(in_process) {
  cpu_set_t set;
  CPU_ZERO(&set);
  cores_ = sched_getaffinity(0, sizeof set, &set) == 0
               ? CPU_COUNT(&set)
               : static_cast<int>(std::thread::hardware_concurrency());
  cores_ = std::max(cores_, 1);
}

absl::Status CostMeter::Probe() const {
  for (int pid : server_pids_) {
    if (!ProcCpuSeconds(pid)) {
      return absl::NotFoundError("cannot read /proc/" + std::to_string(pid) + "/stat");
    }
  }
  if (!server_metrics_.empty()) return ScrapeCpuSeconds(server_metrics_).status();
  return absl::OkStatus();
}

CostSample CostMeter::Take(
    const std::function<std::optional<pqcd::client::StreamStats>()>& messages) const {
  CostSample s;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.client_cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  s.client_ctx = static_cast<uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw);
  if (!server_pids_.empty()) {
    double cpu = 0;
    uint64_t ctx = 0;
    bool ok = true;
    for (int pid : server_pids_) {
      auto c = ProcCpuSeconds(pid);
      auto x = ProcContextSwitches(pid);
      ok = ok && c && x;
      if (c) cpu += *c;
      if (x) ctx += *x;
    }
    if (ok) {
      s.server_cpu = cpu;
      s.server_ctx = ctx;
    }
  }
  if (!server_metrics_.empty()) {
    auto m = ScrapeCpuSeconds(server_metrics_);
    if (m.ok()) s.metrics_cpu = *m;
  }
  if (messages) s.messages = messages();
  return s;
}

nlohmann::json CostMeter::Report(const CostSample& a, const CostSample& b, double wall_s,
                                 uint64_t requests, uint64_t ops) const {
  auto per = [](std::optional<double> total, uint64_t n) -> nlohmann::json {
    if (!total || n == 0) return nullptr;
    return *total / static_cast<double>(n);
  };
  const double client_cpu = b.client_cpu - a.client_cpu;
  std::optional<double> server_cpu;
  std::optional<double> server_ctx;
  std::string source;
  if (in_process_) {
    server_cpu = client_cpu;
    server_ctx = static_cast<double>(b.client_ctx - a.client_ctx);
    source = "self (in-process)";
  } else if (a.server_cpu && b.server_cpu) {
    server_cpu = *b.server_cpu - *a.server_cpu;
    server_ctx = static_cast<double>(*b.server_ctx - *a.server_ctx);
    source = "/proc";
    for (int pid : server_pids_) {
      source += ' ';
      source += std::to_string(pid);
    }
  } else if (a.metrics_cpu && b.metrics_cpu) {
    server_cpu = *b.metrics_cpu - *a.metrics_cpu;
    source = server_metrics_;
  }
  nlohmann::json j;
  j["server_cpu_seconds"] = server_cpu ? nlohmann::json(*server_cpu) : nlohmann::json(nullptr);
  j["server_cpu_us_per_op"] =
      per(server_cpu ? std::optional(*server_cpu * 1e6) : std::nullopt, ops);
  j["server_cpu_us_per_request"] =
      per(server_cpu ? std::optional(*server_cpu * 1e6) : std::nullopt, requests);
  j["server_ctx_switches_per_request"] = per(server_ctx, requests);
  j["server_ctx_switches"] = server_ctx ? nlohmann::json(*server_ctx) : nlohmann::json(nullptr);
  j["server_cpu_source"] = source.empty() ? nlohmann::json(nullptr) : nlohmann::json(source);
  if (a.metrics_cpu && b.metrics_cpu && !source.empty() && source != server_metrics_) {
    j["server_metrics_cpu_seconds"] = *b.metrics_cpu - *a.metrics_cpu;
  }
  j["client_cpu_seconds"] = client_cpu;
  j["client_cores"] = cores_;
  j["client_cpu_share"] = wall_s > 0 ? client_cpu / (wall_s * cores_) : 0.0;
  if (a.messages && b.messages) {
    const uint64_t sent = b.messages->messages_sent - a.messages->messages_sent;
    const uint64_t received = b.messages->messages_received - a.messages->messages_received;
    const uint64_t op_sent = b.messages->operations_sent - a.messages->operations_sent;
    j["stream_messages_sent"] = sent;
    j["stream_messages_received"] = received;
    j["stream_ops_per_message_sent"] = sent ? static_cast<double>(op_sent) / sent : 0.0;
    j["server_cpu_us_per_message"] =
        per(server_cpu ? std::optional(*server_cpu * 1e6) : std::nullopt, sent);
  }
  return j;
}

}  // namespace pqcd::load
