// Operations: metrics after a known workload (and promtool), drain on SIGTERM, flags / environment
// / config file, --help and --version, self-test reporting.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "daemon_fixture.h"
#include "grpcpp/impl/codegen/sync_stream.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pqcd/kernels/isa.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return ctx;
}

TEST(OpsTest, HelpAndVersion) {
  Daemon d;
  EXPECT_EQ(d.RunToExit({"--help"}), 0);
  const std::string help = d.log();
  for (const char* flag : {"--listen",
                           "--unix",
                           "--unix-mode",
                           "--tls-cert",
                           "--tls-key",
                           "--tls-client-ca",
                           "--allow-insecure-tcp",
                           "--admin",
                           "--data-dir",
                           "--kek-file",
                           "--metrics-listen",
                           "--workers",
                           "--queue-capacity",
                           "--max-batch",
                           "--isa",
                           "--log-level",
                           "--config",
                           "--grace-period",
                           "--max-message-bytes",
                           "--port-file",
                           "PQCD_"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
  Daemon v;
  EXPECT_EQ(v.RunToExit({"--version"}), 0);
  EXPECT_NE(v.log().find("pqcd "), std::string::npos) << v.log();
  Daemon bad;
  EXPECT_EQ(bad.RunToExit({"--isa", "sse9"}), 2);
  // Every backend the kernels know is a valid --isa value (the list comes from kernels::Isa): one
  // this CPU lacks (neon on x86-64, avx2/avx512 on aarch64) passes the flag parser and is refused
  // at start-up with the reason (exit 1, not the parser's 2).
  for (size_t i = 0; i < kernels::kIsaCount; ++i) {
    const auto isa = static_cast<kernels::Isa>(i);
    if (kernels::IsaSupported(isa)) continue;
    const std::string name(kernels::IsaName(isa));
    Daemon lacking;
    EXPECT_EQ(lacking.RunToExit({"--isa", name}), 1) << name << "\n" << lacking.log();
    EXPECT_NE(lacking.log().find("not supported by this CPU"), std::string::npos) << lacking.log();
    // The refusal names every backend this CPU has, and the one "auto" would pick.
    for (size_t j = 0; j < kernels::kIsaCount; ++j) {
      const auto other = static_cast<kernels::Isa>(j);
      if (!kernels::IsaSupported(other)) continue;
      EXPECT_NE(lacking.log().find(kernels::IsaName(other)), std::string::npos) << lacking.log();
    }
    EXPECT_NE(lacking.log().find("auto picks " +
                                 std::string(kernels::IsaName(kernels::BestSupportedIsa()))),
              std::string::npos)
        << lacking.log();
  }
  // The best backend, named explicitly (neon under qemu on aarch64), starts and serves.
  Daemon best;
  const std::string best_name(kernels::IsaName(kernels::BestSupportedIsa()));
  ASSERT_TRUE(best.Start({"--isa", best_name, "--workers", "1"})) << best.log();
  EXPECT_NE(best.log().find("isa " + best_name), std::string::npos) << best.log();
  EXPECT_EQ(best.Terminate(), 0) << best.log();
  Daemon nokek;
  EXPECT_EQ(nokek.RunToExit({"--data-dir", "/tmp/nowhere"}), 2);
  EXPECT_NE(nokek.log().find("--kek-file"), std::string::npos) << nokek.log();
}

// The flag contract is server/README.md: every option `pqcd --help` lists is named there, and
// every option named there is one `pqcd --help` lists, so a flag added (or renamed) in one place
// only fails here.
TEST(OpsTest, FlagsAreTheDocumentedOnes) {
  const auto options = [](const std::string& text) {
    std::set<std::string> out;
    for (size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at + 2)) {
      size_t end = at + 2;
      while (end < text.size() &&
             (std::islower(static_cast<unsigned char>(text[end])) ||
              std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '-')) {
        ++end;
      }
      if (end > at + 2 && std::islower(static_cast<unsigned char>(text[at + 2]))) {
        out.insert(text.substr(at, end - at));
      }
    }
    return out;
  };
  Daemon d;
  ASSERT_EQ(d.RunToExit({"--help"}), 0);
  const std::set<std::string> help = options(d.log());
  ASSERT_GT(help.size(), 50u) << d.log();
  std::ifstream readme(PQCD_SERVER_README);
  ASSERT_TRUE(readme) << PQCD_SERVER_README;
  const std::string doc{std::istreambuf_iterator<char>(readme), std::istreambuf_iterator<char>()};
  const std::set<std::string> documented = options(doc);
  for (const std::string& flag : help) {
    EXPECT_TRUE(documented.contains(flag)) << flag << " is in pqcd --help but not server/README.md";
  }
  for (const std::string& flag : documented) {
    EXPECT_TRUE(help.contains(flag)) << flag << " is in server/README.md but not pqcd --help";
  }
}

// SIGTERM during start-up stops the daemon at once, by the signal, instead of after start-up. Here
// start-up waits for a key store database that cannot be reached, which pqcd retries for up to
// 30 s (--key-store needs a build with PostgreSQL support).
TEST(OpsTest, SigtermDuringStartUpStopsAtOnce) {
#if !PQCD_WITH_POSTGRES
  GTEST_SKIP() << "built without PostgreSQL support: no start-up step that waits";
#endif
  Daemon d;
  const std::string kek = d.dir() / "kek";
  std::ofstream(kek, std::ios::binary) << std::string(32, 'k');
  ASSERT_EQ(::chmod(kek.c_str(), 0600), 0);
  ASSERT_TRUE(
      d.Launch({"--key-store",
                "postgresql:///postgres?host=" + std::string(d.dir() / "no-server") + "&user=pqcd",
                "--kek-file", kek}));
  ASSERT_TRUE(Eventually([&] { return d.log().find("retrying") != std::string::npos; })) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(std::chrono::seconds(5)), -SIGTERM) << d.log();
  EXPECT_NE(d.log().find("received Terminated during start-up"), std::string::npos) << d.log();
}

// The port file is written through a fresh O_EXCL temporary and renamed: a symlink planted at its
// path is replaced, never followed into the file it points at.
TEST(OpsTest, PortFileDoesNotFollowAPlantedSymlink) {
  Daemon d;
  const std::string victim = d.dir() / "victim";
  {
    std::ofstream v(victim);
    v << "keep me\n";
  }
  // The fixture's first run writes its port file to <dir>/port0.
  ASSERT_EQ(::symlink(victim.c_str(), (d.dir() / "port0").c_str()), 0);
  ASSERT_TRUE(d.Start({"--log-level", "warn"})) << d.log();
  std::ifstream v(victim);
  std::string content((std::istreambuf_iterator<char>(v)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "keep me\n");
  struct stat st {};
  ASSERT_EQ(::lstat((d.dir() / "port0").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(d.Terminate(), 0);
}

TEST(OpsTest, ConfigFileAndEnvironment) {
  TempDir tmp;
  std::string sock = tmp / "cfg.sock";
  {
    std::ofstream cfg(tmp / "pqcd.json");
    cfg << R"({"unix": ")" << sock << R"(", "unix_mode": "0640", "log-level": "info",
              "max-batch": 8, "admin": ["tls:dns:a1", "tls:uri:spiffe://example.org/a2"]})";
  }
  ::setenv("PQCD_QUEUE_CAPACITY", "128", 1);
  ::setenv("PQCD_UNIX_MODE", "0604", 1);  // environment beats the config file
  Daemon d;
  bool started = d.Start({"--config", tmp / "pqcd.json"});
  ::unsetenv("PQCD_QUEUE_CAPACITY");
  ::unsetenv("PQCD_UNIX_MODE");
  ASSERT_TRUE(started);
  struct stat st {};
  ASSERT_EQ(::stat(sock.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0604u);
  const std::string log = d.log();
  EXPECT_NE(log.find("\"queue_capacity\":128"), std::string::npos) << log;
  EXPECT_NE(log.find("\"max_batch\":8"), std::string::npos) << log;
  EXPECT_NE(log.find("\"admin\":[\"tls:dns:a1\",\"tls:uri:spiffe://example.org/a2\"]"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("self-test passed"), std::string::npos) << log;
  std::string metrics = HttpGet(d.metrics_port(), "/metrics");
  EXPECT_EQ(MetricValue(metrics, "pqcd_selftest_passed"), 1);
  EXPECT_EQ(MetricValue(metrics, "pqcd_queue_capacity{node=\"0\"}"), 128) << metrics;
  EXPECT_EQ(d.Terminate(), 0);
}

// A key of the config file that names no flag is refused at start-up, naming the key and the
// flag it was probably meant to be (issue 45: a misspelt tls_client_ca went unnoticed).
TEST(OpsTest, ConfigFileWithAnUnknownKeyIsRefused) {
  TempDir tmp;
  {
    std::ofstream cfg(tmp / "pqcd.json");
    cfg << R"({"max-batch": 8, "tls_client_cax": "/etc/ca.pem"})";
  }
  Daemon d;
  EXPECT_EQ(d.RunToExit({"--config", tmp / "pqcd.json"}), 2) << d.log();
  EXPECT_NE(d.log().find("unknown key \"tls_client_cax\""), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("did you mean \"tls-client-ca\""), std::string::npos) << d.log();
  EXPECT_EQ(d.log().find("serving"), std::string::npos) << d.log();
}

// A second daemon given the port of a running one exits non-zero with "address already in use"
// instead of binding beside it (gRPC's SO_REUSEPORT), and the first keeps serving.
TEST(OpsTest, ASecondDaemonOnAPortInUseExitsNonZero) {
  Daemon first;
  ASSERT_TRUE(first.Start({"--log-level", "warn"})) << first.log();
  Daemon second;
  EXPECT_EQ(second.RunToExit({"--listen", first.target()}), 1) << second.log();
  EXPECT_NE(second.log().find("address already in use"), std::string::npos) << second.log();
  EXPECT_EQ(second.log().find("serving:"), std::string::npos) << second.log();
  EXPECT_EQ(Daemon::Health(first.Channel()), "SERVING");
  EXPECT_EQ(first.Terminate(), 0);
}

TEST(OpsTest, MetricsAddUpAndPassPromtool) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--allow-insecure-tcp"}));
  std::string before = HttpGet(d.metrics_port(), "/metrics");
  ASSERT_FALSE(before.empty());
  const double hash_ops0 =
      MetricValue(before, "pqcd_operations_total{algorithm=\"SHA3-256\",operation=\"hash\"}");
  const double kg_ops0 =
      MetricValue(before, "pqcd_operations_total{algorithm=\"ML-KEM-768\",operation=\"keygen\"}");
  // The start-up self-test ran through the engine but is not counted: no operation series yet,
  // and no histogram series for the ~50 (operation, algorithm) pairs it used (issue 45: ~3,000
  // series per instance before any request).
  EXPECT_EQ(hash_ops0, -1) << before;
  EXPECT_EQ(kg_ops0, -1);
  EXPECT_EQ(before.find("pqcd_compute_seconds_bucket"), std::string::npos) << before;
  size_t samples = 0;
  for (size_t at = 0; at < before.size(); at = before.find('\n', at) + 1) {
    if (before[at] != '#') ++samples;
    if (before.find('\n', at) == std::string::npos) break;
  }
  RecordProperty("series_at_start", std::to_string(samples));
  EXPECT_LT(samples, 600u) << before;
  // The standard process metrics.
  EXPECT_GT(MetricValue(before, "process_open_fds"), 0);
  EXPECT_GT(MetricValue(before, "process_max_fds"), 0);
  const double started = MetricValue(before, "process_start_time_seconds");
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_GT(started, now - 600) << before;
  EXPECT_LE(started, now + 5) << before;
  const double hash_ops_start = std::max(0.0, hash_ops0), kg_ops_start = std::max(0.0, kg_ops0);

  auto stub = d.Crypto();
  for (int i = 0; i < 10; ++i) {
    HashRequest hr;
    hr.set_algorithm(SHA3_256);
    hr.set_data("x");
    HashResponse h;
    ASSERT_TRUE(stub->Hash(Ctx().get(), hr, &h).ok());
  }
  for (int i = 0; i < 5; ++i) {
    KeyGenRequest kg;
    kg.set_algorithm(ML_KEM_768);
    kg.set_hold(i == 0);
    KeyGenResponse r;
    ASSERT_TRUE(stub->KeyGen(Ctx().get(), kg, &r).ok());
  }
  for (int i = 0; i < 3; ++i) {
    EncapsRequest er;
    er.set_algorithm(ML_KEM_768);
    er.set_public_key("bad");
    EncapsResponse e;
    EXPECT_EQ(stub->Encaps(Ctx().get(), er, &e).error_code(), grpc::INVALID_ARGUMENT);
  }
  BatchRequest batch;
  for (int i = 0; i < 4; ++i) {
    auto* h = batch.add_operations()->mutable_hash();
    h->set_algorithm(SHA3_256);
  }
  BatchResponse br;
  ASSERT_TRUE(stub->Batch(Ctx().get(), batch, &br).ok());

  // A request is recorded when gRPC is done with it (OnDone), which may be just after the client
  // has its answer: wait until nothing is in flight.
  std::string m;
  for (int i = 0; i < 200; ++i) {
    m = HttpGet(d.metrics_port(), "/metrics");
    if (MetricValue(m, "pqcd_inflight_requests") == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(MetricValue(m, "pqcd_requests_total{algorithm=\"SHA3-256\",code=\"OK\",rpc=\"Hash\"}"),
            10)
      << m;
  EXPECT_EQ(
      MetricValue(m, "pqcd_requests_total{algorithm=\"ML-KEM-768\",code=\"OK\",rpc=\"KeyGen\"}"),
      5);
  EXPECT_EQ(
      MetricValue(
          m,
          "pqcd_requests_total{algorithm=\"ML-KEM-768\",code=\"INVALID_ARGUMENT\",rpc=\"Encaps\"}"),
      3);
  EXPECT_EQ(MetricValue(m, "pqcd_requests_total{algorithm=\"mixed\",code=\"OK\",rpc=\"Batch\"}"),
            1);
  EXPECT_EQ(MetricValue(m, "pqcd_operations_total{algorithm=\"SHA3-256\",operation=\"hash\"}"),
            hash_ops_start + 14);
  EXPECT_EQ(MetricValue(m, "pqcd_operations_total{algorithm=\"ML-KEM-768\",operation=\"keygen\"}"),
            kg_ops_start + 5);
  EXPECT_EQ(
      MetricValue(m, "pqcd_queue_wait_seconds_count{algorithm=\"SHA3-256\",operation=\"hash\"}"),
      hash_ops_start + 14);
  EXPECT_EQ(
      MetricValue(m, "pqcd_compute_seconds_count{algorithm=\"ML-KEM-768\",operation=\"keygen\"}"),
      kg_ops_start + 5);
  EXPECT_EQ(MetricValue(m, "pqcd_request_duration_seconds_count{rpc=\"Hash\"}"), 10);
  EXPECT_EQ(MetricValue(m, "pqcd_held_keys"), 1);
  EXPECT_EQ(MetricValue(m, "pqcd_inflight_requests"), 0);
  EXPECT_EQ(MetricValue(m, "pqcd_draining"), 0);
  EXPECT_EQ(MetricValue(m, "pqcd_jobs_total{outcome=\"rejected\"}"), 0);
  EXPECT_GT(MetricValue(m, "pqcd_jobs_total{outcome=\"done\"}"), 0);
  EXPECT_EQ(MetricValue(m, "pqcd_workers{node=\"0\"}") >= 1, true) << m;
  EXPECT_NE(m.find("pqcd_build_info{isa=\""), std::string::npos);
  EXPECT_NE(m.find("pqcd_batch_size_bucket{le=\"1\"}"), std::string::npos);
  EXPECT_NE(m.find("pqcd_worker_busy_seconds_total{node=\"0\",worker=\"0\"}"), std::string::npos);

  // promtool (Debian package prometheus) lints the exposition.
  if (Shell("command -v promtool >/dev/null 2>&1") == 0) {
    TempDir tmp;
    {
      std::ofstream out(tmp / "metrics.txt");
      out << m;
    }
    EXPECT_EQ(Shell("promtool check metrics < " + (tmp / "metrics.txt") + " > " +
                    (tmp / "promtool.txt") + " 2>&1"),
              0);
    std::ifstream in(tmp / "promtool.txt");
    std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(out.empty()) << out;
  } else {
    GTEST_LOG_(WARNING) << "promtool not installed: lint skipped";
  }
  EXPECT_EQ(d.Terminate(), 0);
}

// The metric contract is server/METRICS.md: every family the daemon exports is listed there, and
// every listed one is exported (the PostgreSQL key store's only with that store), so a metric
// added in one place only fails here.
TEST(OpsTest, ExportedMetricsAreTheDocumentedOnes) {
  std::ifstream doc(PQCD_METRICS_DOC);
  ASSERT_TRUE(doc) << PQCD_METRICS_DOC;
  std::set<std::string> listed, optional;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("- ", 0) != 0) continue;
    const size_t end = line.find_first_of(" {", 2);
    const std::string name = line.substr(2, end - 2);
    if (name.rfind("pqcd_", 0) != 0 && name.rfind("process_", 0) != 0) continue;
    (line.find("PostgreSQL key store only") != std::string::npos ? optional : listed).insert(name);
  }
  ASSERT_GT(listed.size(), 20u);
  Daemon d;
  ASSERT_TRUE(d.Start({"--unix", d.dir() / "s.sock"}));
  HashRequest hr;  // requests_total and the histograms have series once a request ran
  hr.set_algorithm(SHA3_256);
  HashResponse h;
  ASSERT_TRUE(d.Crypto()->Hash(Ctx().get(), hr, &h).ok());
  std::set<std::string> exported;
  ASSERT_TRUE(Eventually([&] {
    exported.clear();
    std::istringstream in(HttpGet(d.metrics_port(), "/metrics"));
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("# TYPE ", 0) != 0) continue;
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      if (name.rfind("exposer_", 0) != 0) exported.insert(name);  // prometheus-cpp's own
    }
    return exported.contains("pqcd_request_duration_seconds");
  }));
  for (const std::string& name : exported) {
    EXPECT_TRUE(listed.contains(name) || optional.contains(name))
        << name << " is exported but not in server/METRICS.md";
  }
  for (const std::string& name : listed) {
    EXPECT_TRUE(exported.contains(name)) << name << " is in server/METRICS.md but not exported";
  }
  EXPECT_EQ(d.Terminate(), 0);
}

TEST(OpsTest, JsonLogLinesParseWhateverTheyCarry) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--log-format", "json", "--allow-insecure-tcp"}));
  // A key id with a quote, a backslash and a newline is refused, and its audit line carries it.
  ImportKeyRequest req;
  req.set_algorithm(ML_KEM_768);
  req.set_key_id("bad\"id\\\nforged=1");
  req.set_private_key(std::string(64, '\x01'));
  KeyInfo info;
  auto ctx = Ctx();
  EXPECT_EQ(d.Keys()->Import(ctx.get(), req, &info).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_EQ(d.Terminate(), 0);
  std::istringstream lines(d.log());
  std::string line;
  int parsed = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
    if (!j.is_discarded()) {
      ++parsed;
      EXPECT_TRUE(j.contains("msg") && j.contains("level") && j.contains("time")) << line;
    }
  }
  EXPECT_GE(parsed, 3);
}

TEST(OpsTest, ServerReflectionListsTheServices) {
  Daemon d;
  ASSERT_TRUE(d.Start({}));
  auto channel = d.Channel();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::internal::RpcMethod method("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                   grpc::internal::RpcMethod::BIDI_STREAMING);
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          channel.get(), method, &ctx));
  // ServerReflectionRequest{list_services: ""}: field 7, length 0.
  const char request[] = {0x3a, 0x00};
  grpc::Slice slice(request, sizeof(request));
  grpc::ByteBuffer buffer(&slice, 1);
  ASSERT_TRUE(stream->Write(buffer));
  stream->WritesDone();
  grpc::ByteBuffer response;
  ASSERT_TRUE(stream->Read(&response));
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  EXPECT_NE(bytes.find("pqc.v1.Crypto"), std::string::npos);
  EXPECT_NE(bytes.find("pqc.v1.Keys"), std::string::npos);
  EXPECT_NE(bytes.find("grpc.health.v1.Health"), std::string::npos);
  while (stream->Read(&response)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(d.Terminate(), 0);
}

TEST(OpsTest, DrainOnSigtermAnswersInFlightAndExitsZero) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--grace-period", "20"}));
  auto stub = d.Crypto();
  // An open HashStream is an in-flight request.
  HashResponse resp;
  auto ctx = Ctx();
  auto writer = stub->HashStream(ctx.get(), &resp);
  HashStreamRequest first;
  first.set_algorithm(SHA3_512);
  first.set_data("part one;");
  ASSERT_TRUE(writer->Write(first));
  // The HashStream is in flight in the daemon before the drain starts.
  ASSERT_TRUE(Eventually([&] {
    return MetricValue(HttpGet(d.metrics_port(), "/metrics"), "pqcd_inflight_requests") == 1;
  }));

  d.Signal(SIGTERM);
  auto channel = d.Channel();
  std::string health;
  for (int i = 0; i < 200 && health != "NOT_SERVING"; ++i) {
    health = Daemon::Health(channel);
    if (health != "NOT_SERVING") std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(health, "NOT_SERVING");
  HashRequest hr;
  hr.set_algorithm(SHA256);
  HashResponse h;
  EXPECT_EQ(stub->Hash(Ctx().get(), hr, &h).error_code(), grpc::UNAVAILABLE);
  // The refused Hash is recorded when gRPC is done with it: wait until only the HashStream is left.
  std::string metrics;
  for (int i = 0; i < 200; ++i) {
    metrics = HttpGet(d.metrics_port(), "/metrics");
    if (MetricValue(metrics, "pqcd_inflight_requests") == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(MetricValue(metrics, "pqcd_draining"), 1);
  EXPECT_EQ(MetricValue(metrics, "pqcd_inflight_requests"), 1);

  HashStreamRequest second;
  second.set_data("part two");
  ASSERT_TRUE(writer->Write(second));
  writer->WritesDone();
  auto s = writer->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.digest().size(), 64u);
  EXPECT_EQ(d.Wait(std::chrono::seconds(20)), 0) << d.log();
  EXPECT_NE(d.log().find("draining"), std::string::npos);
}

TEST(OpsTest, GracePeriodCancelsStuckRequests) {
  Daemon d;
  ASSERT_TRUE(d.Start({"--grace-period", "0.3"}));
  auto stub = d.Crypto();
  HashResponse resp;
  auto ctx = Ctx();
  auto writer = stub->HashStream(ctx.get(), &resp);
  HashStreamRequest first;
  first.set_algorithm(SHA3_256);
  ASSERT_TRUE(writer->Write(first));
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(std::chrono::seconds(20)), 0) << d.log();
  EXPECT_FALSE(writer->Finish().ok());
}

}  // namespace
}  // namespace pqcd::testing
