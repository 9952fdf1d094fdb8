#include "pqcd/server/metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "pqcd/engine/engine.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace pqcd::server {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// 1 µs .. 1 s, log spaced (4 per decade).
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (int i = 0; i <= 24; ++i) b.push_back(std::pow(10.0, -6.0 + i * 0.25));
  return b;
}

const char* OperationLabel(engine::Operation op) {
  switch (op) {
    case engine::Operation::kHash:
      return "hash";
    case engine::Operation::kKemKeyGen:
    case engine::Operation::kDsaKeyGen:
      return "keygen";
    case engine::Operation::kKemEncaps:
      return "encaps";
    case engine::Operation::kKemDecaps:
      return "decaps";
    case engine::Operation::kDsaSign:
      return "sign";
    case engine::Operation::kDsaVerify:
      return "verify";
    default:
      return "null";
  }
}

ClientMetric Labeled(std::vector<ClientMetric::Label> labels) {
  ClientMetric m;
  m.label = std::move(labels);
  return m;
}

// Engine histogram (per-bucket counts, bucket i up to 256 ns << i) -> Prometheus histogram.
// Buckets 0..2 (<= 1.024 µs) fold into the first exported bucket.
ClientMetric::Histogram EngineLatencyHistogram(
    const std::array<uint64_t, engine::kLatencyBuckets>& hist, uint64_t count, uint64_t sum_ns) {
  ClientMetric::Histogram h;
  uint64_t cumulative = 0;
  for (int i = 0; i < engine::kLatencyBuckets; ++i) {
    cumulative += hist[i];
    if (i < 2) continue;
    ClientMetric::Bucket b;
    b.cumulative_count = cumulative;
    b.upper_bound = i == engine::kLatencyBuckets - 1
                        ? std::numeric_limits<double>::infinity()
                        : static_cast<double>(engine::LatencyBucketUpperNs(i)) * 1e-9;
    h.bucket.push_back(b);
  }
  h.sample_count = std::max(count, cumulative);
  h.sample_sum = static_cast<double>(sum_ns) * 1e-9;
  return h;
}

}  // namespace

std::string StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::OK:
      return "OK";
    case grpc::CANCELLED:
      return "CANCELLED";
    case grpc::UNKNOWN:
      return "UNKNOWN";
    case grpc::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::ABORTED:
      return "ABORTED";
    case grpc::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::INTERNAL:
      return "INTERNAL";
    case grpc::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

class Metrics::EngineCollector : public prometheus::Collectable {
 public:
  void SetEngine(const engine::Engine* e) {
    absl::MutexLock lock(&mu_);
    engine_ = e;
  }
  // What the engine has done so far (the start-up self-test) is left out of the operation
  // metrics from now on.
  void ExcludeEngineWorkSoFar() {
    absl::MutexLock lock(&mu_);
    if (engine_ == nullptr) return;
    baseline_.clear();
    for (const engine::OpStats& op : engine_->GetStats().ops) {
      baseline_[{static_cast<int>(op.op), static_cast<int>(op.algorithm)}] = op;
    }
  }
  void SetHeldKeys(std::function<size_t()> f) {
    absl::MutexLock lock(&mu_);
    held_keys_ = std::move(f);
  }
  void CountStreamedHash(const std::string& algorithm) {
    absl::MutexLock lock(&mu_);
    ++streamed_hashes_[algorithm];
  }
  void SetKeyRefusals(std::function<KeyRefusals()> f) {
    absl::MutexLock lock(&mu_);
    key_refusals_ = std::move(f);
  }
  void SetKeyStoreLink(std::function<KeyStoreLink()> f) {
    absl::MutexLock lock(&mu_);
    key_store_link_ = std::move(f);
  }
  void SetBounds(std::function<Bounds()> f) {
    absl::MutexLock lock(&mu_);
    bounds_ = std::move(f);
  }
  void SetUnixConnections(std::function<UnixConnections()> f) {
    absl::MutexLock lock(&mu_);
    unix_connections_ = std::move(f);
  }
  void SetLanes(std::function<Lanes()> f) {
    absl::MutexLock lock(&mu_);
    lanes_ = std::move(f);
  }
  void SetTcpConnections(std::function<TcpConnections()> f) {
    absl::MutexLock lock(&mu_);
    tcp_connections_ = std::move(f);
  }

  static void AddGauge(std::vector<MetricFamily>& out, const char* name, const char* help,
                       double value, MetricType type = MetricType::Gauge) {
    MetricFamily f{name, help, type, {}};
    ClientMetric m;
    if (type == MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    f.metric.push_back(m);
    out.push_back(std::move(f));
  }

  // One family with one series per label value (label=value -> sample).
  static void AddLabelled(std::vector<MetricFamily>& out, const char* name, const char* help,
                          MetricType type, const char* label,
                          std::initializer_list<std::pair<const char*, double>> series) {
    MetricFamily f{name, help, type, {}};
    for (const auto& [value_label, value] : series) {
      ClientMetric m;
      m.label.push_back({label, value_label});
      (type == MetricType::Counter ? m.counter.value : m.gauge.value) = value;
      f.metric.push_back(std::move(m));
    }
    out.push_back(std::move(f));
  }

  // The standard process metrics (prometheus-cpp does not export them): CPU seconds and resident
  // memory from /proc/self, so that dashboards and pqc-load --server-metrics see the daemon's cost.
  static void AddProcessMetrics(std::vector<MetricFamily>& out) {
    std::ifstream stat("/proc/self/stat");
    std::string line;
    if (!std::getline(stat, line)) return;
    // Fields after the command name (which may hold spaces) start at state (field 3).
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) return;
    std::istringstream fields(line.substr(paren + 2));
    std::vector<std::string> f;
    for (std::string x; fields >> x;) f.push_back(x);
    if (f.size() < 22) return;  // utime = field 14, stime = 15, rss (pages) = 24
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double cpu = (std::stod(f[11]) + std::stod(f[12])) / ticks;
    const double rss = std::stod(f[21]) * static_cast<double>(sysconf(_SC_PAGESIZE));
    MetricFamily cpu_family{"process_cpu_seconds_total",
                            "Total user and system CPU time spent in seconds",
                            MetricType::Counter,
                            {}};
    ClientMetric c;
    c.counter.value = cpu;
    cpu_family.metric.push_back(c);
    out.push_back(std::move(cpu_family));
    MetricFamily rss_family{
        "process_resident_memory_bytes", "Resident memory size in bytes", MetricType::Gauge, {}};
    ClientMetric r;
    r.gauge.value = rss;
    rss_family.metric.push_back(r);
    out.push_back(std::move(rss_family));
    // The other standard process metrics (Prometheus' client conventions): start time (field 22,
    // in ticks since boot), virtual memory (field 23), open and allowed descriptors.
    static const double boot_time = [] {
      std::ifstream stat_file("/proc/stat");
      std::string key;
      double value = 0;
      while (stat_file >> key) {
        if (key == "btime" && stat_file >> value) return value;
        stat_file.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
      }
      return 0.0;
    }();
    AddGauge(out, "process_start_time_seconds",
             "Start time of the process since unix epoch in seconds",
             boot_time + std::stod(f[19]) / ticks);
    AddGauge(out, "process_virtual_memory_bytes", "Virtual memory size in bytes", std::stod(f[20]));
    size_t fds = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      ++fds;
    }
    AddGauge(out, "process_open_fds", "Number of open file descriptors", static_cast<double>(fds));
    rlimit nofile{};
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
      AddGauge(out, "process_max_fds", "Maximum number of open file descriptors",
               nofile.rlim_cur == RLIM_INFINITY ? -1.0 : static_cast<double>(nofile.rlim_cur));
    }
  }

  std::vector<MetricFamily> Collect() const override {
    absl::MutexLock lock(&mu_);
    std::vector<MetricFamily> out;
    MetricFamily held{
        "pqcd_held_keys", "Private key versions held by the daemon", MetricType::Gauge, {}};
    ClientMetric hm;
    hm.gauge.value = held_keys_ ? static_cast<double>(held_keys_()) : 0.0;
    held.metric.push_back(hm);
    out.push_back(std::move(held));
    {
      const KeyRefusals r = key_refusals_ ? key_refusals_() : KeyRefusals{};
      AddLabelled(
          out, "pqcd_held_keys_refused_total",
          "New held keys refused: reason=memlock (RLIMIT_MEMLOCK exhausted, the key would "
          "have been swappable), reason=quota (--max-keys-per-owner, "
          "--max-versions-per-key, --locked-memory-per-owner, --key-memory-per-owner)",
          MetricType::Counter, "reason",
          {{"memlock", static_cast<double>(r.memlock)}, {"quota", static_cast<double>(r.quota)}});
      MetricFamily unprepared{
          "pqcd_held_keys_unprepared_total",
          "Held key versions kept without their prepared form (it could not be locked in memory, "
          "or a loaded record could not be prepared): served from the stored key, expanded at "
          "every use",
          MetricType::Counter,
          {}};
      ClientMetric um;
      um.counter.value = static_cast<double>(r.unprepared);
      unprepared.metric.push_back(std::move(um));
      out.push_back(std::move(unprepared));
    }
    if (bounds_) {
      const Bounds b = bounds_();
      AddGauge(out, "pqcd_memory_held_bytes",
               "Bytes of requests being computed and answers not yet taken, charged to the memory "
               "account (--memory-limit, --memory-per-identity)",
               static_cast<double>(b.memory_held));
      AddGauge(out, "pqcd_memory_refused_total",
               "Requests refused with RESOURCE_EXHAUSTED because they would pass --memory-limit or "
               "their identity's --memory-per-identity",
               static_cast<double>(b.memory_refused), MetricType::Counter);
      AddGauge(out, "pqcd_unread_answers_cancelled_total",
               "Calls cancelled because their answer waited longer than --unread-answer-timeout "
               "for the client to take it",
               static_cast<double>(b.unread_cancelled), MetricType::Counter);
      AddLabelled(out, "pqcd_long_calls_open",
                  "Stream and HashStream calls open (--max-streams, --max-hash-streams)",
                  MetricType::Gauge, "rpc",
                  {{"Stream", static_cast<double>(b.streams_open)},
                   {"HashStream", static_cast<double>(b.hash_streams_open)}});
      AddLabelled(out, "pqcd_long_calls_refused_total",
                  "Stream and HashStream calls refused: the total or the caller identity's limit "
                  "was reached",
                  MetricType::Counter, "rpc",
                  {{"Stream", static_cast<double>(b.streams_refused)},
                   {"HashStream", static_cast<double>(b.hash_streams_refused)}});
    }
    if (unix_connections_) {
      const UnixConnections u = unix_connections_();
      AddLabelled(
          out, "pqcd_unix_connections",
          "Connections on the Unix socket: state=open (served by gRPC), state=pending "
          "(accepted, HTTP/2 preface not complete yet)",
          MetricType::Gauge, "state",
          {{"open", static_cast<double>(u.open)}, {"pending", static_cast<double>(u.pending)}});
      AddLabelled(out, "pqcd_unix_connections_refused_total",
                  "Unix socket connections closed by pqcd: reason=limit (--max-unix-connections), "
                  "uid_limit (--max-unix-connections-per-uid), handshake_timeout "
                  "(--handshake-timeout), not_http2 (sent something else, or closed before its "
                  "preface)",
                  MetricType::Counter, "reason",
                  {{"limit", static_cast<double>(u.refused_limit)},
                   {"uid_limit", static_cast<double>(u.refused_uid_limit)},
                   {"handshake_timeout", static_cast<double>(u.refused_handshake_timeout)},
                   {"not_http2", static_cast<double>(u.refused_not_http2)}});
    }
    if (lanes_) {
      const Lanes l = lanes_();
      AddLabelled(
          out, "pqcd_lanes",
          "Shared-memory lanes: state=open (served), state=pending (connected, not opened "
          "yet)",
          MetricType::Gauge, "state",
          {{"open", static_cast<double>(l.open)}, {"pending", static_cast<double>(l.pending)}});
      AddGauge(out, "pqcd_lanes_opened_total", "Shared-memory lanes opened",
               static_cast<double>(l.opened), MetricType::Counter);
      AddLabelled(out, "pqcd_lanes_refused_total",
                  "Lanes refused: reason=limit (--max-lanes), identity_limit "
                  "(--max-lanes-per-identity), memory (--memory-limit, --memory-per-identity), "
                  "protocol (not a lane request, or none within --handshake-timeout)",
                  MetricType::Counter, "reason",
                  {{"limit", static_cast<double>(l.refused_limit)},
                   {"identity_limit", static_cast<double>(l.refused_identity_limit)},
                   {"memory", static_cast<double>(l.refused_memory)},
                   {"protocol", static_cast<double>(l.refused_protocol)}});
      AddGauge(out, "pqcd_lanes_broken_total",
               "Lanes closed because the caller wrote a ring index that cannot be right",
               static_cast<double>(l.broken), MetricType::Counter);
      MetricFamily requests{"pqcd_lane_requests_total",
                            "Lane requests answered, by status code",
                            MetricType::Counter,
                            {}};
      for (int code = 0; code < Lanes::kCodes; ++code) {
        ClientMetric c = Labeled({{"code", StatusCodeName(static_cast<grpc::StatusCode>(code))}});
        c.counter.value = static_cast<double>(l.requests[code]);
        requests.metric.push_back(c);
      }
      out.push_back(std::move(requests));
      MetricFamily duration{"pqcd_lane_request_duration_seconds",
                            "Lane requests from their arrival in the daemon to their answer",
                            MetricType::Histogram,
                            {}};
      uint64_t answered = 0;
      for (uint64_t n : l.requests) answered += n;
      ClientMetric h;
      h.histogram = EngineLatencyHistogram(l.duration_hist, answered, l.duration_ns_sum);
      duration.metric.push_back(h);
      out.push_back(std::move(duration));
    }
    if (tcp_connections_) {
      const TcpConnections t = tcp_connections_();
      AddGauge(out, "pqcd_tcp_connections",
               "Connections on the TCP listener (--listen), counted from their accept",
               static_cast<double>(t.open));
      AddLabelled(out, "pqcd_tcp_connections_refused_total",
                  "TCP connections closed by pqcd as they were accepted: reason=limit "
                  "(--max-tcp-connections), address_limit (--max-tcp-connections-per-address)",
                  MetricType::Counter, "reason",
                  {{"limit", static_cast<double>(t.refused_limit)},
                   {"address_limit", static_cast<double>(t.refused_address_limit)}});
    }
    if (key_store_link_) {
      const KeyStoreLink l = key_store_link_();
      AddGauge(out, "pqcd_key_store_up",
               "1 while the key store database is connected, listened to and synchronized", l.up);
      AddGauge(out, "pqcd_key_store_serving",
               "1 while held keys are used (0: no synchronization for --key-store-max-staleness)",
               l.serving);
      AddGauge(out, "pqcd_key_store_sync_age_seconds",
               "Seconds since the last successful synchronization with the key store database",
               l.sync_age_s);
      AddGauge(out, "pqcd_key_store_reconnects_total",
               "Connections to the key store database re-established after a loss",
               static_cast<double>(l.reconnects), MetricType::Counter);
      AddGauge(out, "pqcd_key_store_syncs_total",
               "Synchronizations that applied key changes made by another replica",
               static_cast<double>(l.syncs), MetricType::Counter);
    }
    AddProcessMetrics(out);
    if (engine_ == nullptr) return out;

    engine::EngineStats s = engine_->GetStats();
    // Less the self-test's jobs: a pair used only by the self-test exports no series at all
    // (52 operation/algorithm pairs with two histograms each were ~3,000 series per instance).
    std::vector<engine::OpStats> served;
    for (engine::OpStats op : s.ops) {
      if (auto it = baseline_.find({static_cast<int>(op.op), static_cast<int>(op.algorithm)});
          it != baseline_.end()) {
        const engine::OpStats& b = it->second;
        op.jobs -= std::min(op.jobs, b.jobs);
        op.errors -= std::min(op.errors, b.errors);
        op.expired -= std::min(op.expired, b.expired);
        op.cancelled -= std::min(op.cancelled, b.cancelled);
        op.queue_wait_ns_sum -= std::min(op.queue_wait_ns_sum, b.queue_wait_ns_sum);
        op.compute_ns_sum -= std::min(op.compute_ns_sum, b.compute_ns_sum);
        for (int i = 0; i < engine::kLatencyBuckets; ++i) {
          op.queue_wait_hist[i] -= std::min(op.queue_wait_hist[i], b.queue_wait_hist[i]);
          op.compute_hist[i] -= std::min(op.compute_hist[i], b.compute_hist[i]);
        }
      }
      if (op.jobs + op.expired + op.cancelled > 0) served.push_back(op);
    }
    s.ops = std::move(served);
    MetricFamily ops{"pqcd_operations_total",
                     "Crypto operations executed: engine jobs, and HashStream digests",
                     MetricType::Counter,
                     {}};
    MetricFamily wait{
        "pqcd_queue_wait_seconds", "Time a job waited in its queue", MetricType::Histogram, {}};
    MetricFamily compute{
        "pqcd_compute_seconds", "Time a job spent in the kernels", MetricType::Histogram, {}};
    // HashStream digests are computed outside the engine; they count as hash operations too.
    std::map<std::string, uint64_t> streamed = streamed_hashes_;
    // Merge engine ops that map to the same (operation, algorithm) labels.
    for (const auto& op : s.ops) {
      if (op.op == engine::Operation::kNull) continue;
      const std::string algorithm(engine::AlgorithmName(op.op, op.algorithm));
      std::vector<ClientMetric::Label> labels = {{"algorithm", algorithm},
                                                 {"operation", OperationLabel(op.op)}};
      ClientMetric c = Labeled(labels);
      c.counter.value = static_cast<double>(op.jobs);
      if (op.op == engine::Operation::kHash) {
        if (auto it = streamed.find(algorithm); it != streamed.end()) {
          c.counter.value += static_cast<double>(it->second);
          streamed.erase(it);
        }
      }
      ops.metric.push_back(c);
      ClientMetric w = Labeled(labels);
      w.histogram = EngineLatencyHistogram(op.queue_wait_hist, op.jobs, op.queue_wait_ns_sum);
      wait.metric.push_back(w);
      ClientMetric m = Labeled(labels);
      m.histogram = EngineLatencyHistogram(op.compute_hist, op.jobs, op.compute_ns_sum);
      compute.metric.push_back(m);
    }
    for (const auto& [algorithm, n] : streamed) {
      ClientMetric c = Labeled({{"algorithm", algorithm}, {"operation", "hash"}});
      c.counter.value = static_cast<double>(n);
      ops.metric.push_back(c);
    }
    out.push_back(std::move(ops));
    out.push_back(std::move(wait));
    out.push_back(std::move(compute));

    MetricFamily jobs{"pqcd_jobs_total", "Engine jobs by outcome", MetricType::Counter, {}};
    auto job = [&](const char* outcome, uint64_t v) {
      ClientMetric c = Labeled({{"outcome", outcome}});
      c.counter.value = static_cast<double>(v);
      jobs.metric.push_back(c);
    };
    job("done", s.jobs_done);
    job("failed", s.jobs_failed);
    job("rejected", s.jobs_rejected);
    job("expired", s.jobs_expired);
    job("cancelled", s.jobs_cancelled);
    job("unavailable", s.jobs_unavailable);
    out.push_back(std::move(jobs));

    MetricFamily inl{"pqcd_jobs_inline_total",
                     "Engine jobs run at once on the thread that submitted them (--inline-crypto: "
                     "a worker whose own queue cannot hold a burst, or the key-management thread "
                     "while a worker was idle); also counted in pqcd_jobs_total",
                     MetricType::Counter,
                     {}};
    {
      ClientMetric c;
      c.counter.value = static_cast<double>(s.jobs_inline);
      inl.metric.push_back(c);
    }
    out.push_back(std::move(inl));

    // The slow pool (--slow-job-ms): jobs too slow for a worker, run on threads of their own.
    AddGauge(out, "pqcd_slow_workers", "Threads that run slow jobs (--slow-workers)",
             static_cast<double>(s.slow_workers));
    AddGauge(out, "pqcd_slow_jobs_total",
             "Engine jobs run by the slow pool (--slow-job-ms); also counted in pqcd_jobs_total",
             static_cast<double>(s.slow_jobs), MetricType::Counter);
    AddGauge(out, "pqcd_slow_rejected_total",
             "Slow jobs refused: their estimated CPU time would pass --slow-queue-seconds or the "
             "caller's --slow-queue-seconds-per-identity",
             static_cast<double>(s.slow_rejected), MetricType::Counter);
    AddGauge(out, "pqcd_slow_queue_jobs", "Slow jobs waiting for a slow thread",
             static_cast<double>(s.slow_queued));
    AddGauge(out, "pqcd_slow_queue_seconds",
             "Estimated CPU seconds of the slow jobs waiting for a slow thread",
             static_cast<double>(s.slow_queued_cost_ns) / 1e9);

    MetricFamily batch{
        "pqcd_batch_size", "Jobs taken by a worker per burst", MetricType::Histogram, {}};
    {
      ClientMetric c;
      uint64_t cumulative = 0;
      for (int i = 0; i < engine::kBatchBuckets; ++i) {
        cumulative += s.batch_size_hist[i];
        ClientMetric::Bucket b;
        b.cumulative_count = cumulative;
        b.upper_bound = static_cast<double>(1u << i);
        c.histogram.bucket.push_back(b);
      }
      ClientMetric::Bucket inf;
      inf.cumulative_count = cumulative;
      inf.upper_bound = std::numeric_limits<double>::infinity();
      c.histogram.bucket.push_back(inf);
      c.histogram.sample_count = cumulative;
      uint64_t total_jobs = 0;
      for (const auto& w : s.workers) total_jobs += w.jobs;
      c.histogram.sample_sum = static_cast<double>(total_jobs);
      batch.metric.push_back(c);
    }
    out.push_back(std::move(batch));

    MetricFamily depth{"pqcd_queue_depth", "Jobs queued per NUMA node", MetricType::Gauge, {}};
    MetricFamily cap{"pqcd_queue_capacity", "Queue bound per NUMA node", MetricType::Gauge, {}};
    MetricFamily workers{"pqcd_workers", "Worker threads per NUMA node", MetricType::Gauge, {}};
    for (const auto& n : s.nodes) {
      std::vector<ClientMetric::Label> labels = {{"node", std::to_string(n.node)}};
      ClientMetric d = Labeled(labels);
      d.gauge.value = static_cast<double>(n.queue_depth);
      depth.metric.push_back(d);
      ClientMetric c = Labeled(labels);
      c.gauge.value = static_cast<double>(n.queue_capacity);
      cap.metric.push_back(c);
      ClientMetric w = Labeled(labels);
      w.gauge.value = n.workers;
      workers.metric.push_back(w);
    }
    out.push_back(std::move(depth));
    out.push_back(std::move(cap));
    out.push_back(std::move(workers));

    MetricFamily busy{"pqcd_worker_busy_seconds_total",
                      "Time each worker spent processing jobs (rate() = busy ratio)",
                      MetricType::Counter,
                      {}};
    for (const auto& w : s.workers) {
      ClientMetric c =
          Labeled({{"node", std::to_string(w.node)}, {"worker", std::to_string(w.id)}});
      c.counter.value = static_cast<double>(w.busy_ns) * 1e-9;
      busy.metric.push_back(c);
    }
    out.push_back(std::move(busy));
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  const engine::Engine* engine_ = nullptr;
  std::function<size_t()> held_keys_;
  std::function<KeyRefusals()> key_refusals_;
  std::function<UnixConnections()> unix_connections_;
  std::function<TcpConnections()> tcp_connections_;
  std::function<Lanes()> lanes_;
  std::function<Bounds()> bounds_;
  std::function<KeyStoreLink()> key_store_link_;
  std::map<std::string, uint64_t> streamed_hashes_;  // HashStream digests by algorithm
  // The engine's statistics when the self-test ended, by (operation, algorithm).
  std::map<std::pair<int, int>, engine::OpStats> baseline_;
};

Metrics::Metrics(std::string version, std::string isa)
    : registry_(std::make_shared<prometheus::Registry>()),
      engine_collector_(std::make_shared<EngineCollector>()) {
  requests_ = &prometheus::BuildCounter()
                   .Name("pqcd_requests_total")
                   .Help("gRPC requests by rpc, algorithm and status code")
                   .Register(*registry_);
  duration_ = &prometheus::BuildHistogram()
                   .Name("pqcd_request_duration_seconds")
                   .Help("End-to-end handler time per rpc")
                   .Register(*registry_);
  inflight_ = &prometheus::BuildGauge()
                   .Name("pqcd_inflight_requests")
                   .Help("Requests being handled")
                   .Register(*registry_)
                   .Add({});
  selftest_ = &prometheus::BuildGauge()
                   .Name("pqcd_selftest_passed")
                   .Help("1 after a passing start-up self-test")
                   .Register(*registry_)
                   .Add({});
  draining_ = &prometheus::BuildGauge()
                   .Name("pqcd_draining")
                   .Help("1 while draining")
                   .Register(*registry_)
                   .Add({});
  prometheus::BuildGauge()
      .Name("pqcd_build_info")
      .Help("Build and backend information")
      .Register(*registry_)
      .Add({{"version", std::move(version)}, {"isa", std::move(isa)}})
      .Set(1);
}

Metrics::~Metrics() = default;

void Metrics::SetEngine(const engine::Engine* engine) {
  engine_collector_->SetEngine(engine);
}
void Metrics::ExcludeEngineWorkSoFar() {
  engine_collector_->ExcludeEngineWorkSoFar();
}
void Metrics::SetHeldKeysSource(std::function<size_t()> source) {
  engine_collector_->SetHeldKeys(std::move(source));
}
void Metrics::CountStreamedHash(const std::string& algorithm) {
  engine_collector_->CountStreamedHash(algorithm);
}
void Metrics::SetKeyStoreLinkSource(std::function<KeyStoreLink()> source) {
  engine_collector_->SetKeyStoreLink(std::move(source));
}

void Metrics::SetBoundsSource(std::function<Bounds()> source) {
  engine_collector_->SetBounds(std::move(source));
}

void Metrics::SetUnixConnectionsSource(std::function<UnixConnections()> source) {
  engine_collector_->SetUnixConnections(std::move(source));
}

void Metrics::SetLanesSource(std::function<Lanes()> source) {
  engine_collector_->SetLanes(std::move(source));
}
void Metrics::SetTcpConnectionsSource(std::function<TcpConnections()> source) {
  engine_collector_->SetTcpConnections(std::move(source));
}

void Metrics::SetKeyRefusalsSource(std::function<KeyRefusals()> source) {
  engine_collector_->SetKeyRefusals(std::move(source));
}

int Metrics::Serve(const std::string& listen_address) {
  // civetweb (under prometheus-cpp) serves one connection per thread and waits up to 30 s for a
  // request by default, so two stalled clients took the endpoint down. Enough threads for several
  // scrapers and stalled peers at once, and a stalled request is dropped after 2 s.
  exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
      "listening_ports", listen_address, "num_threads", std::to_string(kMetricsThreads),
      "request_timeout_ms", std::to_string(kMetricsRequestTimeoutMs)});
  exposer_->RegisterCollectable(registry_);
  exposer_->RegisterCollectable(engine_collector_);
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::RecordRequest(const std::string& rpc, const std::string& algorithm,
                            grpc::StatusCode code, double seconds) {
  requests_->Add({{"rpc", rpc}, {"algorithm", algorithm}, {"code", StatusCodeName(code)}})
      .Increment();
  static const auto buckets = LatencyBuckets();
  duration_->Add({{"rpc", rpc}}, buckets).Observe(seconds);
}

}  // namespace pqcd::server
