// pqc-load: load generator for pqcd.
//
//   pqc-load --targets 127.0.0.1:50051 --op ML-KEM-768:decaps=50,ML-DSA-65:verify=50
//            --concurrency 64 --duration 10s --warmup 2s [--style unary|batch|stream|lane] [--json]
//   pqc-load --rate 20000 ...            open loop (latency measured from the intended send time)
//   pqc-load --in-process --workers 4    the same mix straight through the engine (no gRPC)
//   pqc-load --style auto -c 32          one call per operation through the batching client
//   pqc-load --server-pid PID ...        the daemon's CPU and context switches per operation
//
// Every latency is recorded in a log-bucketed histogram (no sampling). A progress line per second
// goes to stderr; the report goes to stdout (text, or JSON with --json).
// The pieces: load_mix (--op, fixtures, answer checks), load_backends (gRPC; in-process in
// load_backend_engine.cc), load_runner (loops, pacing, the measured window), load_report (JSON and
// text), load_cost (CPU and context switches). This file: the flags and the wiring.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "connection_flags.h"
#include "load_backends.h"
#include "load_config.h"
#include "load_cost.h"
#include "load_mix.h"
#include "load_report.h"
#include "load_runner.h"
#include "pqcd/client/client.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace {

using namespace pqcd::client;  // NOLINT
using namespace pqcd::load;    // NOLINT
using nlohmann::json;

absl::StatusOr<double> ParseSeconds(const std::string& s) {
  try {
    size_t pos = 0;
    const double v = std::stod(s, &pos);
    const std::string unit = s.substr(pos);
    if (unit.empty() || unit == "s") return v;
    if (unit == "ms") return v / 1000;
    if (unit == "m") return v * 60;
    if (unit == "us") return v / 1e6;
  } catch (...) {
  }
  return absl::InvalidArgumentError("bad duration '" + s + "' (use 10, 10s, 500ms, 2m)");
}

}  // namespace

int main(int argc, char** argv) {
  // Diagnostics (e.g. the in-process engine's topology line) go to stderr: stdout carries only the
  // report, so that --json output parses.
  spdlog::set_default_logger(spdlog::stderr_color_mt("pqc-load"));
  // As in pqcd: no absl::Mutex deadlock detection (Debian's Abseil enables it; gRPC locks absl
  // mutexes on every call), so the load generator spends its CPU on calls.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  Config cfg;
  CLI::App app{"pqc-load: load generator for the pqcd daemon (or its engine in-process)",
               "pqc-load"};
  pqcd::cli::AddConnectionFlags(app, cfg.connection, "--targets,--target,-t", "");
  app.add_option("--op", cfg.op,
                 "operation mix ALG:OP[=WEIGHT],... OP: keygen encaps decaps sign verify hash")
      ->capture_default_str();
  app.add_option("--concurrency,-c", cfg.concurrency,
                 "closed loop: requests in flight (streams with --style stream; calls, each one "
                 "operation, with --style auto)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--rate,-r", cfg.rate, "open loop: requests per second (0: closed loop)");
  app.add_option("--duration,-d", cfg.duration, "measured time after the warm-up (10s, 500ms)")
      ->capture_default_str();
  app.add_option("--requests,-n", cfg.requests, "measured requests instead of a duration");
  app.add_option("--warmup,-w", cfg.warmup, "warm-up time, not measured")->capture_default_str();
  app.add_option("--style", cfg.style,
                 "call style: unary (an RPC per operation), batch (Batch RPCs of --batch-size), "
                 "stream (Streams of --inflight operations, packed --pack to a message), auto "
                 "(an async call per operation through the batching client, which packs the "
                 "calls in flight onto a shared Stream), lane (an operation at a time through the "
                 "daemon's shared-memory lanes, --channels lanes; needs a unix: target)")
      ->check(CLI::IsMember({"unary", "batch", "stream", "auto", "lane"}))
      ->capture_default_str();
  app.add_option("--batch-size", cfg.batch_size, "operations per Batch call")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--inflight", cfg.inflight, "operations in flight per stream")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--pack", cfg.pack,
                 "stream and auto: operations per Stream message at most (1: one operation per "
                 "message, the single form; 0: the client library's default, 64); must not "
                 "exceed the daemon's --max-batch-items")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_option("--server-pid", cfg.server_pids,
                 "daemon process id (repeatable, or comma-separated: summed): its CPU time "
                 "(/proc/PID/stat utime+stime) and context switches (/proc/PID/task/*/status) "
                 "over the measured window, reported per operation and per request")
      ->delimiter(',');
  app.add_option("--server-metrics", cfg.server_metrics,
                 "instead of --server-pid: a Prometheus URL (http://127.0.0.1:9464/metrics) whose "
                 "process_cpu_seconds_total gives the daemon's CPU over the measured window (no "
                 "context switches)");
  app.add_option("--channels", cfg.channels,
                 "gRPC channels (connections per daemon); 0: auto (auto style: 1, and one shared "
                 "stream per channel)");
  app.add_option("--payload-bytes", cfg.payload, "message size for sign/verify/hash")
      ->capture_default_str();
  app.add_option("--private-key", cfg.private_key,
                 "what decaps and sign requests carry: expanded (the expanded key), seed (its "
                 "seed), held (a key the daemon holds, by key_ref: imported before the run and "
                 "deleted after it; in-process: the key prepared once, as the daemon holds it)")
      ->check(CLI::IsMember({"expanded", "seed", "held"}))
      ->capture_default_str();
  app.add_option("--timeout", cfg.timeout_s, "deadline of each call, seconds")
      ->capture_default_str();
  app.add_option("--max-outstanding", cfg.max_outstanding,
                 "open loop: requests in flight before new ones are dropped")
      ->capture_default_str();
  app.add_flag("--in-process", cfg.in_process, "run the mix through the engine, no gRPC");
  app.add_option("--workers", cfg.workers, "--in-process: engine workers (0: all cores)");
  app.add_flag("--json", cfg.json, "print the report as JSON");
  app.add_flag("--quiet,-q", cfg.quiet, "no progress lines");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  auto mix = ParseMix(cfg.op);
  auto duration = ParseSeconds(cfg.duration);
  auto warmup = ParseSeconds(cfg.warmup);
  for (const absl::Status& s : {mix.status(), duration.status(), warmup.status()}) {
    if (!s.ok()) {
      std::cerr << "pqc-load: " << s.message() << '\n';
      return 2;
    }
  }

  const CostMeter meter(cfg.server_pids, cfg.server_metrics, cfg.in_process);
  if (absl::Status s = meter.Probe(); !s.ok()) {
    std::cerr << "pqc-load: cost accounting: " << s.message() << '\n';
    return 2;
  }

  std::unique_ptr<Backend> backend;
  std::string mode;
  if (cfg.in_process) {
#ifdef PQCD_LOAD_WITH_ENGINE
    auto b = MakeEngineBackend(cfg.workers);
    if (!b.ok()) {
      std::cerr << "pqc-load: engine: " << b.status() << '\n';
      return 3;
    }
    backend = *std::move(b);
    mode = "in-process";
#else
    std::cerr << "pqc-load: built without the engine; --in-process is not available\n";
    return 2;
#endif
  } else {
    ClientOptions o;
    pqcd::cli::ApplyConnectionFlags(cfg.connection, o);
    o.default_timeout = absl::Seconds(cfg.timeout_s);
    if (cfg.style == "auto") {
      // One shared stream packs best; more channels (--channels) mean more shared streams.
      o.batching.enabled = true;
      if (cfg.pack > 0) o.batching.max_pack = static_cast<size_t>(cfg.pack);
      o.channels = std::max(cfg.channels, 1);
    } else if (cfg.style == "lane") {
      o.lane.enabled = true;
      o.lane.lanes = std::max(cfg.channels, 1);
      o.lane.slots = static_cast<uint32_t>(std::clamp(cfg.concurrency, 1, 256));
    } else {
      o.channels = cfg.channels > 0 ? cfg.channels : std::clamp(cfg.concurrency / 16, 1, 8);
    }
    auto c = Client::Create(std::move(o));
    if (!c.ok()) {
      std::cerr << "pqc-load: " << c.status() << '\n';
      return 2;
    }
    if (cfg.style == "lane" && (*c)->lane_status() != "lanes") {
      std::cerr << "pqc-load: --style lane: " << (*c)->lane_status() << '\n';
      return 2;
    }
    // One check that fails at once when nothing listens (a wrong --target, a daemon not started):
    // waiting for SERVING is only for a daemon that answers but is still starting.
    pqcd::client::CallOptions probe;
    probe.timeout = absl::Seconds(5);
    probe.wait_for_ready = false;
    if (auto h = (*c)->Health("", probe);
        !h.ok() && h.status().code() == absl::StatusCode::kUnavailable) {
      std::cerr << "pqc-load: cannot connect to the daemon at " << cfg.connection.targets << ": "
                << h.status().message()
                << "\n(is pqcd running there? give its address with --target, e.g. --target "
                   "unix:/run/pqcd/pqcd.sock or --target 127.0.0.1:50051)\n";
      return 3;
    }
    auto ready = (*c)->WaitForServing(absl::Seconds(10));
    if (!ready.ok()) {
      std::cerr << "pqc-load: daemon not serving: " << ready << '\n';
      return 3;
    }
    backend = MakeGrpcBackend(*std::move(c));
    mode = "grpc";
  }

  auto fixtures = MakeFixtures(*backend, *mix, cfg.payload, cfg.private_key);
  if (!fixtures.ok()) {
    std::cerr << "pqc-load: " << fixtures.status() << '\n';
    return 3;
  }
  std::vector<std::string> held;
  for (const Fixture& f : *fixtures) {
    if (!f.held_id.empty()) held.push_back(f.held_id);
  }
  Runner runner(cfg, *backend, meter, *mix, *std::move(fixtures));
  runner.Run(*duration, *warmup);
  for (const std::string& id : held) backend->Release(id);
  const json report = Report(mode, cfg, runner.mix(), runner.stats(), runner.measurement(), meter,
                             backend->Extra());
  if (cfg.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    PrintText(report);
  }
  return report["error_total"].get<uint64_t>() == 0 ? 0 : 1;
}
