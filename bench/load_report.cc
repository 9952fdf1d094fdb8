// pqc-load's report: its JSON keys and its text form.
#include "load_report.h"

#include <cmath>
#include <cstdio>

namespace pqcd::load {

using nlohmann::json;

json Report(const std::string& mode, const Config& cfg, const std::vector<MixEntry>& mix,
            const Stats& stats, const Measurement& measured, const CostMeter& meter,
            const json& backend_extra) {
  const double secs = measured.seconds;
  const auto& h = stats.total;
  auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
  json errors = json::object();
  uint64_t error_total = 0;
  for (int c = 1; c < kCodes; ++c) {
    const uint64_t n = stats.errors[c].load();
    if (n) errors[CodeName(c)] = n;
    error_total += n;
  }
  json mix_json = json::array();
  for (const auto& e : mix) mix_json.push_back({{"op", e.label}, {"weight", e.weight}});
  const uint64_t reqs = stats.requests.load(), ops = stats.ops.load();
  json j{{"mode", mode},
         {"style", cfg.style},
         {"private_key", cfg.private_key},
         {"loop", cfg.rate > 0 ? "open" : "closed"},
         {"mix", mix_json},
         {"measured_seconds", secs},
         {"requests", reqs},
         {"ops", ops},
         {"requests_per_second", reqs / secs},
         {"ops_per_second", ops / secs},
         {"effective_batch_size", reqs ? static_cast<double>(ops) / reqs : 0.0},
         {"latency_us",
          {{"p50", us(h.Quantile(0.5))},
           {"p90", us(h.Quantile(0.9))},
           {"p99", us(h.Quantile(0.99))},
           {"p99.9", us(h.Quantile(0.999))},
           {"max", us(h.max())},
           {"mean", h.mean() / 1000.0},
           {"min", us(h.min())}}},
         {"errors", errors},
         {"error_total", error_total}};
  if (cfg.rate > 0) {
    j["rate"] = cfg.rate;
    j["dropped_client_overload"] = measured.dropped;
  } else {
    j["concurrency"] = cfg.concurrency;
  }
  if (cfg.style == "batch") j["batch_size"] = cfg.batch_size;
  if (cfg.style == "stream") j["inflight"] = cfg.inflight;
  if (cfg.style == "stream" || cfg.style == "auto") {
    j["pack"] = cfg.pack > 0 ? json(cfg.pack) : json("default");
  }
  j.update(meter.Report(measured.cost_start, measured.cost_end, secs, reqs, ops));
  if (mode == "grpc") j["targets"] = cfg.connection.targets;
  j.update(backend_extra);
  return j;
}

void PrintText(const json& j) {
  std::printf("pqc-load: %s, %s loop, style %s\n", j["mode"].get<std::string>().c_str(),
              j["loop"].get<std::string>().c_str(), j["style"].get<std::string>().c_str());
  std::printf("  mix:          ");
  for (const auto& m : j["mix"]) {
    std::printf("%s=%g ", m["op"].get<std::string>().c_str(), m["weight"].get<double>());
  }
  std::printf("\n  measured:     %.2f s, %llu requests, %llu ops\n",
              j["measured_seconds"].get<double>(),
              static_cast<unsigned long long>(j["requests"].get<uint64_t>()),
              static_cast<unsigned long long>(j["ops"].get<uint64_t>()));
  std::printf("  throughput:   %.1f requests/s, %.1f crypto ops/s (effective batch %.2f)\n",
              j["requests_per_second"].get<double>(), j["ops_per_second"].get<double>(),
              j["effective_batch_size"].get<double>());
  const auto& l = j["latency_us"];
  std::printf("  latency (us): p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  (mean %.1f)\n",
              l["p50"].get<double>(), l["p90"].get<double>(), l["p99"].get<double>(),
              l["p99.9"].get<double>(), l["max"].get<double>(), l["mean"].get<double>());
  std::printf("  errors:       %llu",
              static_cast<unsigned long long>(j["error_total"].get<uint64_t>()));
  for (const auto& [name, n] : j["errors"].items()) {
    std::printf("  %s=%llu", name.c_str(), static_cast<unsigned long long>(n.get<uint64_t>()));
  }
  std::printf("\n");
  if (j.contains("stream_messages_sent")) {
    std::printf("  messages:     %llu sent (%.2f ops each), %llu received\n",
                static_cast<unsigned long long>(j["stream_messages_sent"].get<uint64_t>()),
                j["stream_ops_per_message_sent"].get<double>(),
                static_cast<unsigned long long>(j["stream_messages_received"].get<uint64_t>()));
  }
  if (!j["server_cpu_seconds"].is_null()) {
    auto num = [&](const char* key) {
      return j[key].is_null() ? std::nan("") : j[key].get<double>();
    };
    std::printf("  server cost:  %.2f us CPU/op, %.2f us CPU/request", num("server_cpu_us_per_op"),
                num("server_cpu_us_per_request"));
    if (j.contains("server_cpu_us_per_message") && !j["server_cpu_us_per_message"].is_null()) {
      std::printf(", %.2f us CPU/message", num("server_cpu_us_per_message"));
    }
    if (!j["server_ctx_switches_per_request"].is_null()) {
      std::printf(", %.3f context switches/request", num("server_ctx_switches_per_request"));
    }
    std::printf("  (%.3f s CPU, %s)\n", num("server_cpu_seconds"),
                j["server_cpu_source"].get<std::string>().c_str());
  }
  std::printf("  client cost:  %.3f s CPU, %.1f%% of %d core(s)\n",
              j["client_cpu_seconds"].get<double>(), 100 * j["client_cpu_share"].get<double>(),
              j["client_cores"].get<int>());
  if (j.contains("engine_mean_batch")) {
    std::printf("  engine:       %zu workers, mean batch %.2f\n", j["engine_workers"].get<size_t>(),
                j["engine_mean_batch"].get<double>());
  }
}

}  // namespace pqcd::load
