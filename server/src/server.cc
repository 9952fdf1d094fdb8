#include "pqcd/server/server.h"

#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "audit.h"
#include "bounds.h"
#include "core_queues.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/resource_quota.h"
#include "health_async.h"
#include "keystore/key_store.h"
#include "keystore/pg_conn.h"
#include "lanes.h"
#include "pqcd/engine/engine.h"
#include "pqcd/engine/pqc_executor.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/random.h"
#include "pqcd/lane/protocol.h"
#include "pqcd/server/algorithms.h"
#include "pqcd/server/config.h"
#include "pqcd/server/crypto_service.h"
#include "pqcd/server/identity.h"
#include "pqcd/server/keys_service.h"
#include "pqcd/server/metrics.h"
#include "pqcd/server/selftest.h"
#include "pqcd/server/service_context.h"
#include "reflection_async.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "tcp_gate.h"
#include "tls_files.h"
#include "unix_listener.h"

namespace pqcd::server {

// ---- ServiceContext / RequestScope -------------------------------------------------------------

void ServiceContext::Audit(const std::string& who, const std::string& action,
                           const std::string& owner, const std::string& key_id, uint32_t version,
                           const std::string& algorithm, const absl::Status& result) const {
  if (!audit) return;
  // Caller-supplied values are quoted, escaped and truncated (AuditValue): none can forge fields
  // or lines.
  const std::string& whose = owner.empty() ? who : owner;
  const std::string code = StatusCodeName(static_cast<grpc::StatusCode>(result.code()));
  std::string line = fmt::format(
      "who={} action={} owner={} key_id={} version={} algorithm={} result={}{}", AuditValue(who),
      action, AuditValue(whose), AuditValue(key_id), version, algorithm.empty() ? "-" : algorithm,
      code,
      result.ok() ? ""
                  : absl::StrCat(" reason=", AuditValue(std::string_view(result.message().data(),
                                                                         result.message().size()),
                                                        512)));
  if (!result.ok() && refusals != nullptr) {
    // A flood of refusals (Deletes of missing ids, say) becomes one line per window and kind.
    refusals->Record(who, whose, key_id, version, absl::StrCat(action, " ", code), line);
    return;
  }
  audit->info("{}", line);
}

RequestScope::RequestScope(ServiceContext* ctx, std::string rpc)
    : ctx_(ctx), rpc_(std::move(rpc)), start_(std::chrono::steady_clock::now()) {
  ctx_->inflight.fetch_add(1, std::memory_order_relaxed);
  if (ctx_->metrics) ctx_->metrics->InflightAdd(1);
}

RequestScope::~RequestScope() {
  if (!done_) Done(grpc::StatusCode::CANCELLED);
}

void RequestScope::Done(grpc::StatusCode code) {
  if (done_) return;
  done_ = true;
  if (ctx_->metrics) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    ctx_->metrics->RecordRequest(rpc_, algorithm_, code, seconds);
    ctx_->metrics->InflightAdd(-1);
  }
  ctx_->inflight.fetch_sub(1, std::memory_order_release);
}

// ---- Daemon ------------------------------------------------------------------------------------

namespace {

// %j in a pattern: the message as the inside of a JSON string (quotes, backslashes and control
// characters escaped), so that every --log-format json line parses whatever the message holds.
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr char kHex[] = "0123456789abcdef";
    for (const char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        dest.push_back('\\');
        dest.push_back(c);
      } else if (u < 0x20) {
        const char esc[] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 15]};
        dest.append(esc, esc + sizeof(esc));
      } else {
        dest.push_back(c);
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name, const Config& config) {
  auto logger =
      std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (config.log_format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonEscapedMessage>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","msg":"%j"})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %l %n: %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(spdlog::level::from_str(config.log_level));
  logger->flush_on(spdlog::level::trace);
  return logger;
}

// Writes through a fresh temporary file (O_CREAT|O_EXCL|O_NOFOLLOW, random name beside `path`,
// mode 0644) renamed over `path`: a symlink planted at the temporary or final name is never
// followed (rename replaces the link itself).
// Why gRPC could not bind `listen` ("host:port", "[v6]:port"): gRPC reports only that it failed,
// so the address is bound once more here, with gRPC's own SO_REUSEADDR, to learn the errno.
std::string ExplainBindFailure(const std::string& listen) {
  std::string host = listen;
  std::string port;
  if (const size_t colon = listen.rfind(':'); colon != std::string::npos) {
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    return "the address does not resolve (give HOST:PORT, e.g. 127.0.0.1:50051 or [::1]:50051)";
  }
  int err = 0;
  for (addrinfo* a = found; a != nullptr && err == 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0) err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (err == EADDRINUSE) {
    return "address already in use (another pqcd, or another program, listens there; pqcd does "
           "not share a port: give another --listen, or stop the other process)";
  }
  if (err != 0) return std::strerror(err);
  return "gRPC could not bind it (see its log lines above)";
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  uint8_t rnd[8];
  if (absl::Status s = kernels::OsRandom().Generate(kernels::MutBytes(rnd, sizeof rnd)); !s.ok()) {
    return s;
  }
  std::string tmp = path + ".tmp-";
  for (uint8_t b : rnd) absl::StrAppend(&tmp, absl::Hex(b, absl::kZeroPad2));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
  }
  const bool written =
      ::write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size());
  if (::close(fd) != 0 || !written) {
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

// The grpc.health.v1 status of pqc.v1.Keys: SERVING while held keys are served, set from the key
// store's thread (Set), once the server exists (Attach), and NOT_SERVING for good at a drain.
class KeysHealth {
 public:
  void Set(bool serving) {
    std::lock_guard lock(mu_);
    if (health_ != nullptr && !draining_) health_->SetServingStatus("pqc.v1.Keys", serving);
  }
  void Attach(HealthService* health, bool serving) {
    std::lock_guard lock(mu_);
    health_ = health;
    health_->SetServingStatus("pqc.v1.Keys", serving);
  }
  void Drain() {
    std::lock_guard lock(mu_);
    draining_ = true;
    if (health_ != nullptr) health_->SetServingStatus("pqc.v1.Keys", false);
  }

 private:
  std::mutex mu_;
  HealthService* health_ = nullptr;
  bool draining_ = false;
};

// The per-owner locked-memory budget: --locked-memory-per-owner, but at most an eighth of a finite
// RLIMIT_MEMLOCK, so that no one owner can lock the whole allowance (0: unlimited).
size_t LockedBytesPerOwner(const Config& config, spdlog::logger& log) {
  if (config.locked_memory_per_owner_kib == 0) return 0;
  size_t bytes = size_t{config.locked_memory_per_owner_kib} << 10;
  rlimit rl{};
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur / 8 < bytes) {
    bytes = static_cast<size_t>(rl.rlim_cur / 8);
    log.info(
        "held keys: at most {} bytes of locked memory per identity (an eighth of "
        "RLIMIT_MEMLOCK {}; --locked-memory-per-owner asks for {} KiB)",
        bytes, rl.rlim_cur, config.locked_memory_per_owner_kib);
  }
  return bytes;
}

// SIGTERM and SIGINT during start-up (a key store database pqcd keeps retrying, a long file-store
// migration, a KEK rotation): nothing is served yet, so the daemon stops at once, by the signal
// (as a service manager stopping it expects), rather than when start-up is over. Every step
// start-up takes is safe to cut short (the key store's writes are atomic renames or
// transactions). Stop() (or the destructor) ends the watch; the serving loop's sigwait then takes
// the signals, also one sent meanwhile (it stays pending).
class StartupSignals {
 public:
  explicit StartupSignals(std::shared_ptr<spdlog::logger> log) : log_(std::move(log)) {
    thread_ = std::thread([this] { Watch(); });
  }
  ~StartupSignals() { Stop(); }
  StartupSignals(const StartupSignals&) = delete;
  StartupSignals& operator=(const StartupSignals&) = delete;
  void Stop() {
    if (!thread_.joinable()) return;
    pthread_kill(thread_.native_handle(), kStopSignal);
    thread_.join();
  }
  // Blocked in every thread (DaemonMain), taken only by this watch: the way Stop() ends it.
  static constexpr int kStopSignal = SIGUSR2;

 private:
  void Watch() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, kStopSignal);
    int sig = 0;
    if (sigwait(&set, &sig) != 0 || sig == kStopSignal) return;
    log_->warn("received {} during start-up: stopping now (nothing is served yet)", strsignal(sig));
    log_->flush();
    ::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    ::raise(sig);  // ends the process by the signal
  }
  std::shared_ptr<spdlog::logger> log_;
  std::thread thread_;
};

}  // namespace

int DaemonMain(int argc, char** argv) {
  // Signals are taken by sigwait in this thread; every thread started later inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);  // reloads the TLS files
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  sigset_t stop_watch;  // kept out of `signals`: the serving loop does not take it
  sigemptyset(&stop_watch);
  sigaddset(&stop_watch, StartupSignals::kStopSignal);
  pthread_sigmask(SIG_BLOCK, &stop_watch, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto parsed = ParseConfig(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "pqcd: " << parsed.status().message() << "\nRun 'pqcd --help' for the flags.\n";
    return 2;
  }
  if (parsed->exit_now) {
    std::cout << parsed->output;
    return parsed->exit_code;
  }
  const Config config = parsed->config;
  if (config.malloc_retain_mb > 0) {
    // glibc returns freed memory above 128 KiB to the kernel (trim and mmap thresholds), so the
    // buffers of every large message or Batch are faulted in afresh: on this project's VM that made
    // a Batch of 64 cost ~1 ms of server CPU instead of ~0.2 ms (bench/grpc_floor, perf). Keeping
    // a bounded amount mapped removes it; RSS may stay up to this much above the working set.
    const int bytes = static_cast<int>(std::min<uint32_t>(config.malloc_retain_mb, 1024) << 20);
    mallopt(M_MMAP_THRESHOLD, std::min(bytes, 32 << 20));
    mallopt(M_TRIM_THRESHOLD, bytes);
  }
  auto log = MakeLogger("pqcd", config);
  auto audit = MakeLogger("audit", config);
  // Audit lines are records, not diagnostics: --log-level warn/error does not silence them (only
  // "off" does).
  audit->set_level(config.log_level == "off" ? spdlog::level::off : spdlog::level::info);
  // Libraries that log through spdlog's default logger (the engine) use the same format and stream.
  spdlog::set_default_logger(log);
  log->info("pqcd {} starting, config {}", PQCD_VERSION, parsed->effective_json);
  StartupSignals startup_signals(log);

  KeyStoreOptions ks_options;
  ks_options.data_dir = config.data_dir;
  ks_options.kek_file = config.kek_file;
  ks_options.allow_shared_kek_file = config.allow_shared_kek_file;
  ks_options.max_keys_per_owner = config.max_keys_per_owner;
  ks_options.max_versions_per_key = config.max_versions_per_key;
  ks_options.max_locked_bytes_per_owner = LockedBytesPerOwner(config, *log);
  ks_options.max_plain_bytes_per_owner = size_t{config.key_memory_per_owner_kib} << 10;
  ks_options.migrate_owner = [local = config.legacy_local_owner](const std::string& owner) {
    return MigrateLegacyOwner(owner, local);
  };
  ks_options.postgres_dsn = config.key_store;
  ks_options.reconcile_interval_ms =
      static_cast<int64_t>(config.key_store_reconcile_interval_s * 1000.0);
  ks_options.max_staleness_ms = static_cast<int64_t>(config.key_store_max_staleness_s * 1000.0);
  // grpc.health.v1, ours, served on the core queues like Crypto's unary methods: gRPC's default
  // health service (callback API) would make gRPC run poller threads of its own that take the
  // sockets' events before the workers do. Declared before the key store, whose thread reports to
  // it until the store is closed.
  HealthService health;
  // The health status of pqc.v1.Keys follows whether held keys are served (a PostgreSQL store
  // past its staleness limit is not); the key store reports changes from its own thread.
  auto keys_health = std::make_shared<KeysHealth>();
  ks_options.on_serving_change = [keys_health](bool serving) { keys_health->Set(serving); };
  if (!config.import_data_dir.empty()) {
    // Import mode: copy a file store into the database and exit.
    KeyStoreOptions from = ks_options;
    from.data_dir = config.import_data_dir;
    from.postgres_dsn.clear();
    KeyStoreOptions to = ks_options;
    to.data_dir.clear();
    to.on_serving_change = nullptr;
    ImportReport imported;
    absl::Status s = KeyStore::ImportFileStore(from, to, &imported);
    for (const auto& c : imported.conflicts) log->error("import: {}", c);
    std::cout << "pqcd: import of " << config.import_data_dir << " into "
              << internal::RedactDsn(config.key_store) << ": " << imported.keys_copied
              << " key(s) (" << imported.versions_copied << " version(s)) copied, "
              << imported.keys_already_present << " already there, " << imported.conflicts.size()
              << " conflict(s)\n";
    if (!s.ok()) {
      std::cerr << "pqcd: import failed: " << s.message()
                << "\n(what was copied stays; rerunning the same command continues)\n";
      return 1;
    }
    if (!imported.conflicts.empty()) {
      std::cerr << "pqcd: keys with conflicts were not copied (see the log above)\n";
      return 1;
    }
    return 0;
  }
  if (!config.rotate_kek_to.empty()) {
    // KEK rotation mode: re-seal the key store under the new KEK and exit.
    LoadReport rotated;
    absl::Status s = KeyStore::RotateKek(ks_options, config.rotate_kek_to, &rotated);
    for (const auto& problem : rotated.problems) log->error("key store: {}", problem);
    if (!s.ok()) {
      std::cerr << "pqcd: KEK rotation failed: " << s.message()
                << "\n(an interrupted rotation is finished by rerunning the same command)\n";
      return 1;
    }
    std::cout << "pqcd: key store " << config.data_dir << " re-sealed under "
              << config.rotate_kek_to << ": " << rotated.loaded << " key versions, "
              << rotated.resealed << " re-sealed now, " << rotated.problems.size()
              << " problem(s) reported; use --kek-file " << config.rotate_kek_to
              << " from now on\n";
    return 0;
  }

  // Every method of pqc.v1.Crypto and pqc.v1.Keys has calls that serve it: the services are all
  // async, and a method no request is posted for would hold its callers until their deadline.
  for (absl::Status s :
       {CryptoService::CheckServesEveryMethod(), KeysService::CheckServesEveryMethod()}) {
    if (!s.ok()) {
      log->critical("{}; refusing to serve", std::string(s.message()));
      return 1;
    }
  }

  // Kernel backend.
  kernels::Isa isa = kernels::BestSupportedIsa();
  if (config.isa != "auto") {
    auto parsed_isa = kernels::ParseIsa(config.isa);
    if (!parsed_isa.ok() || !kernels::IsaSupported(*parsed_isa)) {
      log->critical("--isa {}: not supported by this CPU/OS (supported: {}; auto picks {})",
                    config.isa, kernels::SupportedIsaNames(", "),
                    kernels::IsaName(kernels::BestSupportedIsa()));
      return 1;
    }
    isa = *parsed_isa;
  }
  if (auto s = kernels::SetActiveIsa(isa); !s.ok()) {
    log->critical("cannot select ISA {}: {}", kernels::IsaName(isa), std::string(s.message()));
    return 1;
  }
  const std::string isa_name(kernels::IsaName(kernels::ActiveIsa()));

  Metrics metrics(PQCD_VERSION, isa_name);

  // Key store (ks_options: above). Held keys are kept in the form the kernels compute with, made by
  // the backend just selected (the import and KEK-rotation modes above only copy records).
  ks_options.prepare_private_key = [](int algorithm, const SecretBytes& private_key) {
    return PreparePrivateKey(algorithm, private_key);
  };
  LoadReport report;
  auto store = KeyStore::Open(ks_options, &report);
  if (!store.ok()) {
    log->critical("cannot open the key store: {}", std::string(store.status().message()));
    return 1;
  }
  if (!config.key_store.empty()) {
    for (const auto& problem : report.problems) log->error("key store: {}", problem);
    metrics.SetKeyStoreLinkSource([ks = store->get()] {
      const KeyStoreHealth h = ks->health();
      return Metrics::KeyStoreLink{h.up, h.serving, h.sync_age_s, h.reconnects, h.syncs};
    });
  } else if (config.data_dir.empty()) {
    log->warn("no --data-dir: held keys are kept in memory only and are lost when pqcd exits");
  } else {
    log->info("key store {}: {} key versions loaded, {} corrupted record(s) skipped",
              config.data_dir, report.loaded, report.corrupted);
    for (const auto& problem : report.problems) log->error("key store: {}", problem);
  }
  metrics.SetHeldKeysSource([ks = store->get()] { return ks->size(); });
  metrics.SetKeyRefusalsSource([ks = store->get()] {
    const KeyStoreCounters c = ks->counters();
    return Metrics::KeyRefusals{c.memlock_refusals, c.quota_refusals, c.unprepared};
  });

  // Engine.
  engine::EngineOptions eo;
  eo.workers = config.workers;
  eo.queue_capacity = config.queue_capacity;
  eo.max_batch = config.max_batch;
  eo.run_inline_when_idle = config.inline_crypto;
  eo.pqc_executor = engine::PqcKernelExecutor();
  const auto ns = [](double seconds) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(seconds));
  };
  eo.slow_job = ns(config.slow_job_ms / 1000);
  eo.slow_workers = static_cast<int>(config.slow_workers);
  eo.slow_queue = ns(config.slow_queue_s);
  eo.slow_queue_per_tenant = ns(config.slow_queue_per_identity_s);
  auto engine = engine::Engine::Create(eo);
  if (!engine.ok()) {
    log->critical("cannot start the engine: {}", std::string(engine.status().message()));
    return 1;
  }
  metrics.SetEngine(engine->get());
  log->info("engine: {} worker(s) on {} NUMA node(s), queue capacity {}, max batch {}, isa {}",
            (*engine)->workers().size(), (*engine)->num_nodes(), config.queue_capacity,
            config.max_batch, isa_name);

  // Self-test before serving.
  int tests = 0;
  if (auto s = RunSelfTest(**engine, &tests); !s.ok()) {
    log->critical("{}; refusing to serve", std::string(s.message()));
    (*engine)->Shutdown(engine::ShutdownMode::kAbort);
    return 1;
  }
  metrics.SetSelfTestPassed(true);
  metrics.ExcludeEngineWorkSoFar();
  log->info("self-test passed: {} known-answer tests on isa {}", tests, isa_name);

  TaskRunner aux(2);
  TaskRunner key_tasks(1, "pqcd-keys", config.key_queue);
  ServiceContext ctx;
  ctx.config = &config;
  ctx.engine = engine->get();
  ctx.keys = store->get();
  ctx.metrics = &metrics;
  ctx.aux = &aux;
  ctx.key_tasks = &key_tasks;
  ctx.identity_policy.allow_insecure_tcp = config.allow_insecure_tcp;
  ctx.identity_policy.admins = config.admins;
  ctx.identity_policy.allow_admin_key_use = config.allow_admin_key_use;
  ctx.identity_policy.audit_key_use = config.audit_key_use;
  ctx.identity_policy.unix_user_names = config.unix_user_names;
  // The Unix socket: pqcd accepts its connections itself to learn each caller's uid. Its mode
  // and handshake timeout are the lane socket's too (below).
  const auto unix_mode = static_cast<mode_t>(std::strtol(config.unix_mode.c_str(), nullptr, 8));
  const auto handshake_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.handshake_timeout_s * 1000));
  std::unique_ptr<UnixListener> unix_listener;
  if (!config.unix_socket.empty()) {
    auto listener =
        UnixListener::Listen({config.unix_socket, unix_mode, config.max_unix_connections,
                              config.max_unix_connections_per_uid, handshake_timeout, log});
    if (!listener.ok()) {
      log->critical("{}", std::string(listener.status().message()));
      return 1;
    }
    unix_listener = std::move(*listener);
    ctx.identity_policy.unix_peer_uid = [l = unix_listener.get()](std::string_view peer) {
      return l->PeerUid(peer);
    };
  }
  ctx.log = log;
  ctx.audit = audit;
  // Held-key uses by other identities (all uses with --audit-key-use), aggregated per 10 s window.
  const auto to_audit = [audit](const std::string& line) {
    if (audit) audit->info("{}", line);
  };
  KeyUseAuditor key_use(to_audit, std::chrono::seconds(10), 1024, {}, /*background_flush=*/true);
  ctx.key_use = &key_use;
  // Refused key-management actions, aggregated the same way.
  KeyUseAuditor refusals(to_audit, std::chrono::seconds(10), 1024, {}, /*background_flush=*/true,
                         "refusal");
  ctx.refusals = &refusals;
  // Whole-daemon bounds: long-lived calls and memory, in total and per identity (bounds.h).
  CallSlots streams(config.max_streams, config.max_streams_per_identity, "Streams", "--max-streams",
                    "--max-streams-per-identity");
  CallSlots hash_streams(config.max_hash_streams, config.max_hash_streams_per_identity,
                         "HashStreams", "--max-hash-streams", "--max-hash-streams-per-identity");
  MemoryAccount memory(size_t{config.memory_limit_mb} << 20,
                       size_t{config.memory_per_identity_mb} << 20);
  UnreadAnswers unread(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config.unread_answer_timeout_s)));
  ctx.streams = &streams;
  ctx.hash_streams = &hash_streams;
  ctx.memory = &memory;
  ctx.unread = &unread;
  metrics.SetBoundsSource([&] {
    return Metrics::Bounds{memory.charged(),      memory.refused(),    unread.cancelled(),
                           streams.open(),        hash_streams.open(), streams.refused(),
                           hash_streams.refused()};
  });
  CryptoService crypto(&ctx);
  KeysService keys(&ctx);
  // Reflection is ours, served on the core queues like Crypto's unary methods (health: above):
  // gRPC's reflection plugin (sync API) would make gRPC run poller threads of its own that take
  // the sockets' events before the workers do.
  const std::vector<std::string> service_names = {
      pqc::v1::Crypto::service_full_name(),
      pqc::v1::Keys::service_full_name(),
      grpc::health::v1::Health::service_full_name(),
      grpc::reflection::v1alpha::ServerReflection::service_full_name(),
      grpc::reflection::v1::ServerReflection::service_full_name(),
  };
  ReflectionV1Alpha reflection_v1alpha(service_names);
  ReflectionV1 reflection_v1(service_names);

  grpc::EnableDefaultHealthCheckService(false);
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config.max_message_bytes));
  // Bounds on what callers can make gRPC itself hold: buffer memory over all calls, and calls in
  // progress per connection.
  grpc::ResourceQuota quota("pqcd");
  quota.Resize(static_cast<size_t>(config.grpc_memory_mb) << 20);
  builder.SetResourceQuota(quota);
  // No SO_REUSEPORT: gRPC sets it by default, so a second daemon given the port of a running one
  // would bind beside it and the kernel would split the connections between two daemons with
  // different in-memory keys. Without it the second bind fails (EADDRINUSE) and pqcd exits.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(config.max_concurrent_streams));
  // A TCP connection that has not completed its handshake within --handshake-timeout is closed
  // (gRPC's default is two minutes). The Unix socket's own listener applies the same timeout.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(config.handshake_timeout_s * 1000));
  // A connection with no call in progress for --connection-idle-timeout gets a GOAWAY, so idle
  // connections do not keep their slots (--max-tcp-connections, --max-unix-connections) forever.
  if (config.connection_idle_timeout_s > 0) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_IDLE_MS,
        static_cast<int>(std::min(config.connection_idle_timeout_s * 1000, 2147483647.0)));
  }
  // TCP connections are counted and capped as gRPC accepts them (tcp_gate.h).
  std::shared_ptr<TcpConnectionGate> tcp_gate;
  if (!config.listen.empty()) {
    tcp_gate = TcpConnectionGate::Create(
        {config.max_tcp_connections, config.max_tcp_connections_per_address, log});
    tcp_gate->Install(builder);
  }
  builder.RegisterService(&crypto);
  builder.RegisterService(&keys);
  builder.RegisterService(&health);
  builder.RegisterService(&reflection_v1alpha);
  builder.RegisterService(&reflection_v1);
  // Thread-per-core: one completion queue per engine worker, polled by that worker.
  CoreQueues core_queues(builder, static_cast<int>((*engine)->workers().size()));

  int tcp_port = 0;
  std::unique_ptr<TlsFiles> tls_files;
  if (!config.listen.empty()) {
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (!config.tls_cert.empty()) {
      // Watched private copies of the TLS files: SIGHUP replaces them (tls_files.h).
      auto files = TlsFiles::Create({config.tls_cert, config.tls_key, config.tls_client_ca});
      if (!files.ok()) {
        log->critical("TLS (--tls-cert {}, --tls-key, --tls-client-ca {}): {}", config.tls_cert,
                      config.tls_client_ca, std::string(files.status().message()));
        return 1;
      }
      tls_files = std::move(*files);
      if (config.tls_min_version == "1.3") {
        if (auto s = RequireTls13ForNewTlsContexts(); !s.ok()) {
          log->critical("--tls-min-version 1.3: {}", std::string(s.message()));
          return 1;
        }
      }
      creds = tls_files->Credentials();
    } else {
      creds = grpc::InsecureServerCredentials();
    }
    builder.AddListeningPort(config.listen, creds, &tcp_port);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || (!config.listen.empty() && tcp_port == 0)) {
    log->critical("cannot listen on {}: {}", config.listen, ExplainBindFailure(config.listen));
    return 1;
  }
  if (tcp_gate) {
    if (!tcp_gate->installed()) {
      log->warn(
          "--max-tcp-connections and --max-tcp-connections-per-address are not in force: "
          "this gRPC did not call pqcd's socket mutator for its listening socket");
    }
    metrics.SetTcpConnectionsSource([g = tcp_gate] {
      const TcpConnectionGate::Refusals r = g->refusals();
      return Metrics::TcpConnections{g->open(), r.limit, r.address_limit};
    });
  }
  crypto.StartCoreServing(&core_queues);
  keys.StartCoreServing(&core_queues);
  // Every call of every service is charged and watched (bounds.h), not only the crypto ones.
  const CallBounds call_bounds{ctx.memory, ctx.unread};
  health.Start(&core_queues, call_bounds, &ctx.identity_policy);
  reflection_v1alpha.Start(&core_queues, call_bounds, &ctx.identity_policy);
  reflection_v1.Start(&core_queues, call_bounds, &ctx.identity_policy);
  // The order every stop keeps: health Watches end (once they have sent NOT_SERVING), no new
  // calls (the server shuts down once the calls in progress are answered or cancelled, which the
  // workers still serve), then the core queues end, then the engine.
  const auto stop_serving = [&](engine::ShutdownMode mode,
                                std::chrono::system_clock::time_point deadline) {
    health.Shutdown();
    server->Shutdown(deadline);
    core_queues.Stop();
    (*engine)->Shutdown(mode);
  };  // Shared-memory lanes beside the Unix socket (lanes.h): the workers poll them with their
  // completion queues.
  std::unique_ptr<LaneServer> lanes;
  if (config.lanes == "on" && !config.unix_socket.empty()) {
    LaneOptions lo;
    lo.socket_path = config.unix_socket + lane::kSocketSuffix;
    lo.mode = unix_mode;
    lo.max_lanes = config.max_lanes;
    lo.max_lanes_per_identity = config.max_lanes_per_identity;
    lo.max_slots = config.lane_slots;
    lo.default_slots = std::min<uint32_t>(32, config.lane_slots);
    lo.max_input_bytes = config.lane_max_input;
    lo.handshake_timeout = handshake_timeout;
    lo.intake_per_poll = config.max_batch;
    lo.log = log;
    auto started = LaneServer::Start(std::move(lo), &ctx, core_queues.size(), &core_queues);
    if (!started.ok()) {
      log->critical("lanes: {}", std::string(started.status().message()));
      if (unix_listener) unix_listener->Stop();
      (*engine)->AttachIo(&core_queues);
      stop_serving(engine::ShutdownMode::kAbort, std::chrono::system_clock::now());
      return 1;
    }
    lanes = std::move(*started);
    metrics.SetLanesSource([l = lanes.get()] { return l->stats(); });
  }
  ServingIo serving_io(&core_queues, lanes.get());
  (*engine)->AttachIo(&serving_io);

  if (unix_listener) {
    unix_listener->Start(server.get());
    metrics.SetUnixConnectionsSource([l = unix_listener.get()] {
      const UnixListener::Open o = l->open();
      const UnixListener::Refusals r = l->refusals();
      return Metrics::UnixConnections{o.handed,    o.pending,           r.limit,
                                      r.uid_limit, r.handshake_timeout, r.not_http2};
    });
  }

  int metrics_port = 0;
  if (!config.metrics_listen.empty()) {
    try {
      metrics_port = metrics.Serve(config.metrics_listen);
    } catch (const std::exception& e) {
      log->critical("cannot serve metrics on {}: {}", config.metrics_listen, e.what());
      if (unix_listener) unix_listener->Stop();
      stop_serving(engine::ShutdownMode::kAbort, std::chrono::system_clock::now());
      return 1;
    }
  }

  health.SetServingStatus("", true);
  health.SetServingStatus(pqc::v1::Crypto::service_full_name(), true);
  keys_health->Attach(&health, (*store)->health().serving);
  if (!config.port_file.empty()) {
    if (auto s =
            WriteFileAtomically(config.port_file, absl::StrCat(tcp_port, "\n", metrics_port, "\n"));
        !s.ok()) {
      log->critical("--port-file: {}", std::string(s.message()));
      if (unix_listener) unix_listener->Stop();
      stop_serving(engine::ShutdownMode::kAbort, std::chrono::system_clock::now());
      return 1;
    }
  }
  log->info(
      "serving: tcp={} (port {}{}) unix={} metrics={} (port {}) identity={}",
      config.listen.empty() ? "-" : config.listen, tcp_port,
      config.tls_cert.empty() ? ", plaintext" : (config.tls_client_ca.empty() ? ", TLS" : ", mTLS"),
      config.unix_socket.empty() ? "-" : config.unix_socket,
      config.metrics_listen.empty() ? "-" : config.metrics_listen, metrics_port,
      config.allow_insecure_tcp ? "anonymous callers may hold keys"
                                : "anonymous callers may use given keys only");

  // SIGHUP: re-read the TLS files; the old set stays when the new one is bad.
  const auto reload_tls = [&] {
    if (!tls_files) {
      log->info("SIGHUP: no TLS files to reload");
      return;
    }
    if (auto s = tls_files->Reload(); !s.ok()) {
      log->error("SIGHUP: TLS files refused, the previous ones stay in use: {}",
                 std::string(s.message()));
    } else {
      log->info("SIGHUP: TLS files reloaded; new connections use them within a second");
    }
  };
  startup_signals.Stop();  // from here on the loop below takes SIGTERM and SIGINT
  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) reload_tls();
  log->info("received {}: draining (grace period {} s)", strsignal(sig), config.grace_period_s);
  ctx.draining.store(true);
  metrics.SetDraining(true);
  // Every status NOT_SERVING (Watches are sent it), pqc.v1.Keys for good.
  keys_health->Drain();
  health.SetAllServing(false);

  const auto grace_end = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(config.grace_period_s));
  timespec poll{0, 10 * 1000 * 1000};
  bool forced = false;
  while (ctx.inflight.load(std::memory_order_acquire) > 0 &&
         std::chrono::steady_clock::now() < grace_end) {
    if (const int got = sigtimedwait(&signals, nullptr, &poll); got == SIGHUP) {
      reload_tls();
    } else if (got > 0) {
      log->warn("second signal: stopping without waiting for in-flight requests");
      forced = true;
      break;
    }
  }
  const int64_t left = ctx.inflight.load();
  if (left > 0 && !forced) log->warn("grace period over: cancelling {} request(s)", left);
  metrics.SetUnixConnectionsSource(nullptr);
  metrics.SetTcpConnectionsSource(nullptr);
  if (unix_listener) unix_listener->Stop();  // no connections are handed over from here on
  if (lanes) lanes->Stop();  // no new lanes; what the open ones still submit is refused
  stop_serving(left > 0 ? engine::ShutdownMode::kAbort : engine::ShutdownMode::kDrain,
               std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  log->debug("gRPC server, core queues and engine shut down");
  server->Wait();
  key_tasks.Stop();
  aux.Stop();
  log->debug("engine and task runner stopped");
  metrics.SetEngine(nullptr);
  metrics.SetHeldKeysSource(nullptr);
  metrics.SetKeyRefusalsSource(nullptr);
  metrics.SetKeyStoreLinkSource(nullptr);
  metrics.SetBoundsSource(nullptr);
  store->reset();  // zeroizes the held keys
  if (tls_files) tls_files->RemoveCopies();
  server.reset();
  engine->reset();
  key_use.Flush();  // the last window's key-use summaries
  refusals.Flush();
  log->info("stopped");
  log->flush();
  audit->flush();
  std::fflush(nullptr);
  // Everything that matters is done (requests answered, keys zeroized, logs flushed). Skip the
  // metrics endpoint's teardown: civetweb's mg_stop waits out a 2-second poll quantum.
  std::_Exit(0);
}

}  // namespace pqcd::server
