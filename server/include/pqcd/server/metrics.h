// Prometheus metrics of the daemon. The metric names are a contract: see server/METRICS.md.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "grpcpp/support/status.h"
#include "pqcd/engine/stats.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace pqcd::engine {
class Engine;
}

namespace pqcd::server {

std::string StatusCodeName(grpc::StatusCode code);

class Metrics {
 public:
  Metrics(std::string version, std::string isa);
  ~Metrics();

  // Engine statistics are read at scrape time (nullptr until the engine exists).
  void SetEngine(const engine::Engine* engine);
  // Leaves what the engine has done so far out of the operation metrics (pqcd_operations_total,
  // the queue-wait and compute histograms): called once the start-up self-test has passed.
  void ExcludeEngineWorkSoFar();
  // Held keys are counted at scrape time.
  void SetHeldKeysSource(std::function<size_t()> source);
  // New held keys refused, by reason, read at scrape time.
  struct KeyRefusals {
    uint64_t memlock = 0;
    uint64_t quota = 0;
    uint64_t unprepared = 0;  // versions held without their prepared form (not a refusal)
  };
  void SetKeyRefusalsSource(std::function<KeyRefusals()> source);
  // The key store's database link (pqcd_key_store_*), read at scrape time; only exported when
  // the store has a database.
  struct KeyStoreLink {
    bool up = false;
    bool serving = false;
    double sync_age_s = 0;
    uint64_t reconnects = 0;
    uint64_t syncs = 0;
  };
  void SetKeyStoreLinkSource(std::function<KeyStoreLink()> source);
  // The Unix socket's connections (pqcd_unix_connections*), read at scrape time; only exported
  // when the daemon listens on one.
  struct UnixConnections {
    size_t open = 0;
    size_t pending = 0;
    uint64_t refused_limit = 0;
    uint64_t refused_uid_limit = 0;
    uint64_t refused_handshake_timeout = 0;
    uint64_t refused_not_http2 = 0;
  };
  void SetUnixConnectionsSource(std::function<UnixConnections()> source);
  // The shared-memory lanes (pqcd_lanes*, pqcd_lane_*), read at scrape time; only exported when
  // lanes are served. LaneServer::stats() fills it.
  struct Lanes {
    static constexpr int kCodes = 17;  // gRPC status codes
    size_t open = 0;
    size_t pending = 0;  // connected, not opened yet
    uint64_t opened = 0;
    uint64_t refused_limit = 0;           // --max-lanes
    uint64_t refused_identity_limit = 0;  // --max-lanes-per-identity
    uint64_t refused_memory = 0;          // --memory-limit, --memory-per-identity
    uint64_t refused_protocol = 0;        // not a lane request, or none within --handshake-timeout
    uint64_t broken = 0;                  // closed for a ring index that cannot be right
    uint64_t requests[kCodes] = {};       // answered, by status code
    // Arrival to answer, in the engine's latency buckets (engine::LatencyBucket).
    std::array<uint64_t, engine::kLatencyBuckets> duration_hist{};
    uint64_t duration_ns_sum = 0;
  };
  void SetLanesSource(std::function<Lanes()> source);
  // The TCP listener's connections (pqcd_tcp_connections*), read at scrape time; only exported
  // when the daemon listens on TCP.
  struct TcpConnections {
    size_t open = 0;
    uint64_t refused_limit = 0;
    uint64_t refused_address_limit = 0;
  };
  void SetTcpConnectionsSource(std::function<TcpConnections()> source);
  // The whole-daemon bounds (bounds.h), read at scrape time.
  struct Bounds {
    size_t memory_held = 0;
    uint64_t memory_refused = 0;
    uint64_t unread_cancelled = 0;
    uint32_t streams_open = 0;
    uint32_t hash_streams_open = 0;
    uint64_t streams_refused = 0;
    uint64_t hash_streams_refused = 0;
  };
  void SetBoundsSource(std::function<Bounds()> source);
  // A HashStream digest (computed outside the engine) counts in pqcd_operations_total.
  void CountStreamedHash(const std::string& algorithm);

  // The HTTP endpoint's threads (one per connection being served) and how long it waits for a
  // client's request or for a client to take the answer.
  static constexpr int kMetricsThreads = 16;
  static constexpr int kMetricsRequestTimeoutMs = 2000;
  // Starts the HTTP endpoint (path /metrics). Returns the bound port.
  int Serve(const std::string& listen_address);
  // Stops the HTTP endpoint.
  void StopServing() { exposer_.reset(); }

  void RecordRequest(const std::string& rpc, const std::string& algorithm, grpc::StatusCode code,
                     double seconds);
  void InflightAdd(int delta) { inflight_->Increment(delta); }
  void SetSelfTestPassed(bool passed) { selftest_->Set(passed ? 1 : 0); }
  void SetDraining(bool draining) { draining_->Set(draining ? 1 : 0); }

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  class EngineCollector;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<EngineCollector> engine_collector_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* duration_;
  prometheus::Gauge* inflight_;
  prometheus::Gauge* selftest_;
  prometheus::Gauge* draining_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace pqcd::server
