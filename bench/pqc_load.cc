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
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "connection_flags.h"
#include "load_cost.h"
#include "pqcd/client/client.h"
#include "pqcd/client/histogram.h"
#include "pqcd/kernels/algorithms.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

#ifdef PQCD_LOAD_WITH_ENGINE
#include "pqcd/engine/engine.h"
#include "pqcd/engine/pqc_executor.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/registry.h"
#endif

namespace {

using namespace pqcd::client;  // NOLINT
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// ---- Operation mix -----------------------------------------------------------------------------
enum class Kind { kKeyGen, kEncaps, kDecaps, kSign, kVerify, kHash };
constexpr const char* kKindNames[] = {"keygen", "encaps", "decaps", "sign", "verify", "hash"};

struct MixEntry {
  Algorithm algorithm;
  Kind kind;
  double weight;
  std::string label;  // "ML-KEM-768:decaps"
};

absl::StatusOr<std::vector<MixEntry>> ParseMix(const std::string& spec) {
  std::vector<MixEntry> mix;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError("op '" + item + "' is not ALG:OP[=WEIGHT]");
    }
    std::string alg_name = item.substr(0, colon), rest = item.substr(colon + 1);
    double weight = 1;
    if (const size_t eq = rest.find('='); eq != std::string::npos) {
      try {
        weight = std::stod(rest.substr(eq + 1));
      } catch (...) {
        return absl::InvalidArgumentError("bad weight in '" + item + "'");
      }
      rest = rest.substr(0, eq);
    }
    auto alg = ParseAlgorithm(alg_name);
    if (!alg) return absl::InvalidArgumentError("unknown algorithm '" + alg_name + "'");
    int kind = -1;
    for (int k = 0; k < 6; ++k) {
      if (rest == kKindNames[k]) kind = k;
    }
    if (kind < 0) return absl::InvalidArgumentError("unknown operation '" + rest + "'");
    const Kind kd = static_cast<Kind>(kind);
    const bool ok =
        IsKem(*alg)   ? (kd == Kind::kKeyGen || kd == Kind::kEncaps || kd == Kind::kDecaps)
        : IsDsa(*alg) ? (kd == Kind::kKeyGen || kd == Kind::kSign || kd == Kind::kVerify)
                      : kd == Kind::kHash;
    if (!ok) return absl::InvalidArgumentError("'" + rest + "' does not apply to " + alg_name);
    if (!(weight > 0)) return absl::InvalidArgumentError("weight must be > 0 in '" + item + "'");
    mix.push_back({*alg, kd, weight, std::string(AlgorithmName(*alg)) + ":" + rest});
  }
  if (mix.empty()) return absl::InvalidArgumentError("empty operation mix");
  return mix;
}

// ---- Fixtures: keys, ciphertexts and signatures made once, before the run -----------------------
struct Fixture {
  std::string public_key, private_key, ciphertext, shared_secret, message, signature;
  std::string held_id;  // --private-key held: the key the daemon holds (key_ref)
};

// ---- Backends: the daemon through the client library, or the engine in-process ------------------
class Backend {
 public:
  virtual ~Backend() = default;
  virtual void Run(Operation op, Callback<Result> done) = 0;
  virtual void RunBatch(std::vector<Operation> ops, Callback<BatchResults> done) = 0;
  virtual bool SupportsStream() const { return false; }
  virtual absl::StatusOr<std::unique_ptr<Stream>> OpenStream(size_t /*inflight*/, size_t /*pack*/) {
    return absl::UnimplementedError("no streams");
  }
  // Messages of the batching client's shared streams (style auto), when there are any.
  virtual std::optional<StreamStats> BatchingStats() const { return std::nullopt; }
  // --private-key held: makes private_key (either form) a key the backend holds as key_id, and
  // lets it go again after the run.
  virtual absl::Status Hold(Algorithm algorithm, const std::string& key_id,
                            const std::string& private_key) = 0;
  virtual void Release(const std::string& key_id) = 0;
  virtual json Extra() { return json::object(); }

  absl::StatusOr<Result> RunSync(Operation op) {
    std::promise<absl::StatusOr<Result>> p;
    Run(std::move(op), [&](absl::StatusOr<Result> r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
};

class GrpcBackend final : public Backend {
 public:
  explicit GrpcBackend(std::unique_ptr<Client> c) : client_(std::move(c)) {}
  void Run(Operation op, Callback<Result> done) override {
    client_->RunAsync(std::move(op), std::move(done));
  }
  void RunBatch(std::vector<Operation> ops, Callback<BatchResults> done) override {
    client_->BatchAsync(std::move(ops), std::move(done));
  }
  bool SupportsStream() const override { return true; }
  absl::StatusOr<std::unique_ptr<Stream>> OpenStream(size_t inflight, size_t pack) override {
    StreamOptions o;
    o.max_inflight = inflight;
    if (pack > 0) o.max_pack = pack;
    return client_->OpenStream(o);
  }
  std::optional<StreamStats> BatchingStats() const override {
    if (!client_->options().batching.enabled) return std::nullopt;
    return client_->batching_stats();
  }
  absl::Status Hold(Algorithm algorithm, const std::string& key_id,
                    const std::string& private_key) override {
    ImportKeyOp op;
    op.algorithm = algorithm;
    op.key_id = key_id;
    op.private_key = private_key;
    return client_->ImportKey(op).status();
  }
  void Release(const std::string& key_id) override {
    if (auto d = client_->DeleteKey(key_id); !d.ok()) {
      std::cerr << "pqc-load: deleting the held key " << key_id << ": " << d.status() << '\n';
    }
  }
  Client& client() { return *client_; }

 private:
  std::unique_ptr<Client> client_;
};

#ifdef PQCD_LOAD_WITH_ENGINE
namespace eng = pqcd::engine;
namespace ker = pqcd::kernels;

ker::Bytes B(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
ker::MutBytes M(std::string& s) {
  return {reinterpret_cast<uint8_t*>(s.data()), s.size()};
}

// The registry row of a client algorithm (the client's numbers are the API's).
const ker::AlgorithmFacts& KernelFacts(Algorithm a) {
  return *ker::FindByApiValue(static_cast<int>(a));
}

// One engine job with owned inputs and outputs.
struct EngineCall {
  eng::Job job;
  Operation op;
  std::string a, b, c, d;  // outputs
  Callback<Result> done;
};

class EngineBackend final : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<EngineBackend>> Create(int workers) {
    eng::EngineOptions o;
    o.workers = workers;
    o.pqc_executor = eng::PqcKernelExecutor();
    auto e = eng::Engine::Create(std::move(o));
    if (!e.ok()) return e.status();
    auto b = std::make_unique<EngineBackend>();
    b->engine_ = *std::move(e);
    return b;
  }
  void Run(Operation op, Callback<Result> done) override {
    auto* call = new EngineCall();
    call->op = std::move(op);
    call->done = std::move(done);
    absl::Status s = Prepare(*call);
    if (!s.ok()) {
      auto d = std::move(call->done);
      delete call;
      d(s);
      return;
    }
    call->job.on_complete = [call](eng::Job&, absl::Status st) {
      auto d = std::move(call->done);
      absl::StatusOr<Result> r = st.ok() ? Finish(*call) : absl::StatusOr<Result>(st);
      delete call;
      d(std::move(r));
    };
    engine_->Submit(&call->job);
  }
  void RunBatch(std::vector<Operation> ops, Callback<BatchResults> done) override {
    struct Group {
      std::mutex mu;
      BatchResults results;
      size_t left;
      Callback<BatchResults> done;
    };
    auto g = std::make_shared<Group>();
    g->results.assign(ops.size(), absl::UnknownError("not run"));
    g->left = ops.size();
    g->done = std::move(done);
    for (size_t i = 0; i < ops.size(); ++i) {
      Run(std::move(ops[i]), [g, i](absl::StatusOr<Result> r) {
        bool last;
        {
          std::lock_guard lock(g->mu);
          g->results[i] = std::move(r);
          last = --g->left == 0;
        }
        if (last) g->done(std::move(g->results));
      });
    }
  }
  // The daemon's way: the key in the form the kernels compute with, made once (the registry's
  // prepare_private_key); requests then carry prepared = true.
  absl::Status Hold(Algorithm algorithm, const std::string& key_id,
                    const std::string& private_key) override {
    const ker::AlgorithmDescriptor& d = ker::Describe(KernelFacts(algorithm).id);
    std::string prepared(d.prepared_private_key_bytes, '\0');
    if (absl::Status s = d.prepare_private_key(B(private_key), M(prepared)); !s.ok()) return s;
    held_[key_id] = std::move(prepared);
    return absl::OkStatus();
  }
  void Release(const std::string& key_id) override { held_.erase(key_id); }
  json Extra() override {
    const eng::EngineStats st = engine_->GetStats();
    uint64_t jobs = 0, batches = 0;
    for (const auto& w : st.workers) {
      jobs += w.jobs;
      batches += w.batches;
    }
    return json{{"engine_workers", st.workers.size()},
                {"engine_mean_batch", batches ? static_cast<double>(jobs) / batches : 0.0}};
  }

 private:
  // The engine call of one operation: its payload is the kernels' batch item (HashItem for hashes)
  // over buffers in c.
  absl::Status Prepare(EngineCall& c) const {
    eng::Job& j = c.job;
    // A held key's prepared bytes (Hold), or the key as given.
    auto key_of = [this](const Key& k, bool* prepared) -> absl::StatusOr<ker::Bytes> {
      *prepared = k.held();
      if (!k.held()) return B(k.bytes);
      auto it = held_.find(k.ref->key_id);
      if (it == held_.end()) return absl::NotFoundError("no held key " + k.ref->key_id);
      return B(it->second);
    };
    bool prepared = false;
    return std::visit(
        [&](auto& o) -> absl::Status {
          using T = std::decay_t<decltype(o)>;
          const ker::AlgorithmFacts& f = KernelFacts(o.algorithm);
          if constexpr (std::is_same_v<T, HashOp>) {
            c.a.resize(f.xof && o.output_length ? o.output_length : f.digest_bytes);
            j.Set<eng::HashItem>(f.id) = {B(o.data), M(c.a), {}};
          } else if constexpr (std::is_same_v<T, KeyGenOp>) {
            c.a.resize(f.public_key_bytes);
            c.b.resize(f.private_key_bytes);
            c.c.resize(f.seed_bytes);
            const ker::MutBytes seed_out = o.seed.empty() ? M(c.c) : ker::MutBytes();
            if (f.family == ker::Family::kKem) {
              j.Set<ker::KemKeyGenItem>(f.id) = {B(o.seed), M(c.a), M(c.b), seed_out, {}};
            } else {
              j.Set<ker::DsaKeyGenItem>(f.id) = {B(o.seed), M(c.a), M(c.b), seed_out, {}};
            }
          } else if constexpr (std::is_same_v<T, EncapsOp>) {
            c.a.resize(f.ciphertext_bytes);
            c.b.resize(f.secret_bytes);
            j.Set<ker::KemEncapsItem>(f.id) = {B(o.key.bytes), {}, M(c.a), M(c.b), {}};
          } else if constexpr (std::is_same_v<T, DecapsOp>) {
            auto dk = key_of(o.key, &prepared);
            if (!dk.ok()) return dk.status();
            c.a.resize(f.secret_bytes);
            j.Set<ker::KemDecapsItem>(f.id) = {*dk, B(o.ciphertext), M(c.a), {}, prepared};
          } else if constexpr (std::is_same_v<T, SignOp>) {
            auto sk = key_of(o.key, &prepared);
            if (!sk.ok()) return sk.status();
            c.a.resize(f.signature_bytes);
            auto& item = j.Set<ker::DsaSignItem>(f.id);
            item.sk = *sk;
            item.prepared = prepared;
            item.message = B(o.message);
            item.options.context = B(o.context);
            item.options.deterministic = o.deterministic;
            item.sig = M(c.a);
          } else {
            auto& item = j.Set<ker::DsaVerifyItem>(f.id);
            item.pk = B(o.key.bytes);
            item.message = B(o.message);
            item.sig = B(o.signature);
            item.options.context = B(o.context);
          }
          return absl::OkStatus();
        },
        c.op);
  }
  static absl::StatusOr<Result> Finish(EngineCall& c) {
    return std::visit(
        [&](auto& o) -> absl::StatusOr<Result> {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, HashOp>) {
            return Result(HashResult{std::move(c.a)});
          } else if constexpr (std::is_same_v<T, KeyGenOp>) {
            KeyPair kp;
            kp.algorithm = o.algorithm;
            kp.public_key = std::move(c.a);
            kp.private_key = std::move(c.b);
            kp.seed = o.seed.empty() ? std::move(c.c) : o.seed;
            return Result(std::move(kp));
          } else if constexpr (std::is_same_v<T, EncapsOp>) {
            return Result(EncapsResult{std::move(c.a), std::move(c.b), 0});
          } else if constexpr (std::is_same_v<T, DecapsOp>) {
            return Result(DecapsResult{std::move(c.a)});
          } else if constexpr (std::is_same_v<T, SignOp>) {
            return Result(SignResult{std::move(c.a), 0});
          } else {
            return Result(VerifyResult{c.job.item<ker::DsaVerifyItem>().valid});
          }
        },
        c.op);
  }

 public:
  std::unique_ptr<eng::Engine> engine_;

 private:
  std::map<std::string, std::string> held_;  // filled before the run, read-only during it
};
#endif  // PQCD_LOAD_WITH_ENGINE

// private_key: the form decaps and sign requests carry (--private-key: expanded, seed or held).
absl::StatusOr<std::vector<Fixture>> MakeFixtures(Backend& backend,
                                                  const std::vector<MixEntry>& mix, size_t payload,
                                                  const std::string& private_key) {
  std::vector<Fixture> out;
  std::mt19937_64 rng(2024);
  auto random_bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (auto& ch : s) ch = static_cast<char>(rng());
    return s;
  };
  for (const MixEntry& e : mix) {
    Fixture f;
    f.message = random_bytes(payload);
    if (IsKem(e.algorithm) || IsDsa(e.algorithm)) {
      KeyGenOp kg;
      kg.algorithm = e.algorithm;
      // The seed form's size is the registry row's (64 ML-KEM, 32 ML-DSA, 96 X25519MLKEM768...).
      kg.seed =
          random_bytes(pqcd::kernels::FindByApiValue(static_cast<int>(e.algorithm))->seed_bytes);
      auto kp = backend.RunSync(kg);
      if (!kp.ok())
        return absl::Status(kp.status().code(),
                            "fixture keygen: " + std::string(kp.status().message()));
      f.public_key = std::get<KeyPair>(*kp).public_key;
      f.private_key = private_key == "expanded" ? std::get<KeyPair>(*kp).private_key : kg.seed;
      if (private_key == "held" && (e.kind == Kind::kDecaps || e.kind == Kind::kSign)) {
        f.held_id = "pqc-load-" + std::to_string(getpid()) + "-" + std::to_string(out.size());
        if (absl::Status s = backend.Hold(e.algorithm, f.held_id, kg.seed); !s.ok()) {
          return absl::Status(s.code(),
                              "holding the key " + f.held_id + ": " + std::string(s.message()));
        }
      }
    }
    if (IsKem(e.algorithm)) {
      auto en = backend.RunSync(EncapsOp{e.algorithm, Key::Raw(f.public_key)});
      if (!en.ok())
        return absl::Status(en.status().code(),
                            "fixture encaps: " + std::string(en.status().message()));
      f.ciphertext = std::get<EncapsResult>(*en).ciphertext;
      f.shared_secret = std::get<EncapsResult>(*en).shared_secret;
    } else if (IsDsa(e.algorithm)) {
      SignOp s;
      s.algorithm = e.algorithm;
      s.key = Key::Raw(f.private_key);
      s.message = f.message;
      auto sg = backend.RunSync(s);
      if (!sg.ok())
        return absl::Status(sg.status().code(),
                            "fixture sign: " + std::string(sg.status().message()));
      f.signature = std::get<SignResult>(*sg).signature;
    }
    out.push_back(std::move(f));
  }
  return out;
}

Operation MakeOp(const MixEntry& e, const Fixture& f) {
  switch (e.kind) {
    case Kind::kKeyGen:
      return KeyGenOp{e.algorithm, {}, false, {}, {}};
    case Kind::kEncaps:
      return EncapsOp{e.algorithm, Key::Raw(f.public_key)};
    case Kind::kDecaps:
      return DecapsOp{e.algorithm,
                      f.held_id.empty() ? Key::Raw(f.private_key) : Key::Held(f.held_id),
                      f.ciphertext};
    case Kind::kSign: {
      SignOp s;
      s.algorithm = e.algorithm;
      s.key = f.held_id.empty() ? Key::Raw(f.private_key) : Key::Held(f.held_id);
      s.message = f.message;
      return s;
    }
    case Kind::kVerify: {
      VerifyOp v;
      v.algorithm = e.algorithm;
      v.key = Key::Raw(f.public_key);
      v.message = f.message;
      v.signature = f.signature;
      return v;
    }
    case Kind::kHash:
      break;
  }
  return HashOp{e.algorithm, f.message, 0};
}

// ---- Statistics -------------------------------------------------------------------------------
// Error slots: the gRPC status codes 0..16 (absl's, which are the same numbers), then two of
// pqc-load's own.
constexpr int kVerifyFailed = 17;  // a signature of our own that did not verify
constexpr int kMismatch = 18;      // an answer that disagrees with the fixture
constexpr int kCodes = 19;
std::string CodeName(int c) {
  if (c == kVerifyFailed) return "VERIFY_FAILED";
  if (c == kMismatch) return "MISMATCH";
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(c));
}

struct Stats {
  LatencyHistogram total, interval;
  std::atomic<uint64_t> requests{0}, ops{0}, interval_requests{0}, interval_ops{0};
  std::array<std::atomic<uint64_t>, kCodes> errors{};
  std::atomic<uint64_t> interval_errors{0};
};

// Checks one operation's result; returns the error slot (0 = fine).
int Classify(const absl::StatusOr<Result>& r, const MixEntry& e, const Fixture& f) {
  if (!r.ok()) return static_cast<int>(r.status().code());
  if (e.kind == Kind::kVerify && !std::get<VerifyResult>(*r).valid) return kVerifyFailed;
  if (e.kind == Kind::kDecaps && std::get<DecapsResult>(*r).shared_secret != f.shared_secret) {
    return kMismatch;
  }
  return 0;
}

struct Config {
  pqcd::cli::ConnectionFlags connection;
  std::string op = "ML-KEM-768:decaps";
  int concurrency = 16;
  double rate = 0;
  std::string duration = "10s", warmup = "1s";
  uint64_t requests = 0;
  std::string style = "unary";
  std::string private_key = "expanded";
  int batch_size = 8;
  int inflight = 16;
  int pack = 0;  // operations per Stream message (stream, auto); 0: the client's default
  int channels = 0;
  size_t payload = 64;
  bool json = false, quiet = false, in_process = false;
  int workers = 0;
  double timeout_s = 30;
  uint64_t max_outstanding = 100000;
  std::vector<int> server_pids;
  std::string server_metrics;
};

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

class Runner {
 public:
  Runner(const Config& cfg, Backend& backend, const pqcd::load::CostMeter& meter,
         std::vector<MixEntry> mix, std::vector<Fixture> fixtures)
      : cfg_(cfg),
        backend_(backend),
        meter_(meter),
        mix_(std::move(mix)),
        fixtures_(std::move(fixtures)) {
    double sum = 0;
    for (const auto& e : mix_) sum += e.weight;
    double acc = 0;
    for (const auto& e : mix_) {
      acc += e.weight / sum;
      cumulative_.push_back(acc);
    }
    cumulative_.back() = 1.0;
  }

  int Run(double duration_s, double warmup_s) {
    start_ = Clock::now();
    measure_from_ = start_ + ToDur(warmup_s);
    end_ = cfg_.requests > 0 ? Clock::time_point::max() : measure_from_ + ToDur(duration_s);
    std::thread progress([&] { Progress(); });
    // Cost readings at both ends of the measured window: its start, and the end of the duration
    // (or, with --requests, the end of the run).
    std::thread sampler([&] {
      std::this_thread::sleep_until(measure_from_);
      cost_start_ = meter_.Take([this] { return Messages(); });
      std::unique_lock lock(mu_);
      if (end_ == Clock::time_point::max()) {
        cv_.wait(lock, [&] { return run_over_; });
      } else {
        cv_.wait_until(lock, end_, [&] { return run_over_; });
      }
      lock.unlock();
      cost_end_ = meter_.Take([this] { return Messages(); });
    });
    if (cfg_.rate > 0) {
      OpenLoop();
    } else {
      ClosedLoop();
    }
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return outstanding_ == 0; });
      run_over_ = true;
      cv_.notify_all();
    }
    sampler.join();
    measure_end_ = std::min(Clock::now(), end_);
    if (cfg_.requests > 0) measure_end_ = last_completion_.load();
    finished_ = true;
    progress.join();
    for (auto& s : streams_) (void)s->Finish();
    return 0;
  }

  json Report(const std::string& mode) const {
    const double secs =
        std::max(1e-9, std::chrono::duration<double>(measure_end_ - measure_from_).count());
    const auto& h = stats_.total;
    auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
    json errors = json::object();
    uint64_t error_total = 0;
    for (int c = 1; c < kCodes; ++c) {
      const uint64_t n = stats_.errors[c].load();
      if (n) errors[CodeName(c)] = n;
      error_total += n;
    }
    json mix = json::array();
    for (const auto& e : mix_) mix.push_back({{"op", e.label}, {"weight", e.weight}});
    const uint64_t reqs = stats_.requests.load(), ops = stats_.ops.load();
    json j{{"mode", mode},
           {"style", cfg_.style},
           {"private_key", cfg_.private_key},
           {"loop", cfg_.rate > 0 ? "open" : "closed"},
           {"mix", mix},
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
    if (cfg_.rate > 0) {
      j["rate"] = cfg_.rate;
      j["dropped_client_overload"] = dropped_.load();
    } else {
      j["concurrency"] = cfg_.concurrency;
    }
    if (cfg_.style == "batch") j["batch_size"] = cfg_.batch_size;
    if (cfg_.style == "stream") j["inflight"] = cfg_.inflight;
    if (cfg_.style == "stream" || cfg_.style == "auto") {
      j["pack"] = cfg_.pack > 0 ? json(cfg_.pack) : json("default");
    }
    j.update(meter_.Report(cost_start_, cost_end_, secs, reqs, ops));
    if (mode == "grpc") j["targets"] = cfg_.connection.targets;
    j.update(backend_.Extra());
    return j;
  }

 private:
  // Messages written and read so far: the streams' (style stream) or the batching client's.
  std::optional<StreamStats> Messages() {
    if (cfg_.style == "auto") return backend_.BatchingStats();
    if (cfg_.style != "stream") return std::nullopt;
    StreamStats total;
    std::lock_guard lock(streams_mu_);
    for (const auto& st : streams_) {
      const StreamStats s = st->stats();
      total.messages_sent += s.messages_sent;
      total.operations_sent += s.operations_sent;
      total.messages_received += s.messages_received;
      total.results_received += s.results_received;
    }
    return total;
  }

  static Clock::duration ToDur(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  // splitmix64 over a shared counter: cheap, thread-safe, reproducible per user.
  static uint64_t Next(std::atomic<uint64_t>& state) {
    uint64_t z = state.fetch_add(0x9e3779b97f4a7c15ull, std::memory_order_relaxed);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t Pick(std::atomic<uint64_t>& rng) const {
    const double u = static_cast<double>(Next(rng) >> 11) * 0x1.0p-53;
    return static_cast<size_t>(std::lower_bound(cumulative_.begin(), cumulative_.end(), u) -
                               cumulative_.begin());
  }

  // Decides whether one more request may start (the stop conditions).
  bool MayStart(Clock::time_point now) {
    if (now >= end_) return false;
    if (cfg_.requests > 0 && now >= measure_from_) {
      if (measured_started_.fetch_add(1) >= cfg_.requests) return false;
    }
    return true;
  }

  void Begin() {
    std::lock_guard lock(mu_);
    ++outstanding_;
  }
  void End() {
    std::lock_guard lock(mu_);
    if (--outstanding_ == 0) cv_.notify_all();
  }

  // Records one completed request of `ops` operations; slots are the per-op error classes.
  void Record(Clock::time_point started, uint64_t ops, const std::vector<int>& slots) {
    const Clock::time_point now = Clock::now();
    const uint64_t ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - started).count());
    uint64_t errs = 0;
    for (int s : slots) errs += s != 0;
    stats_.interval.Record(ns);
    stats_.interval_requests.fetch_add(1);
    stats_.interval_ops.fetch_add(ops);
    stats_.interval_errors.fetch_add(errs);
    if (started >= measure_from_ && started < end_) {
      stats_.total.Record(ns);
      stats_.requests.fetch_add(1);
      stats_.ops.fetch_add(ops - errs);
      for (int s : slots) {
        if (s) stats_.errors[s].fetch_add(1);
      }
      Clock::time_point prev = last_completion_.load();
      while (now > prev && !last_completion_.compare_exchange_weak(prev, now)) {
      }
    }
  }

  // Issues one request (unary, batch, or on a stream); `next` runs after it completed.
  void Issue(std::atomic<uint64_t>& rng, Clock::time_point started, Stream* stream,
             std::function<void()> next) {
    Begin();
    if (cfg_.style == "batch") {
      std::vector<Operation> ops;
      std::vector<size_t> which;
      for (int i = 0; i < cfg_.batch_size; ++i) {
        const size_t k = Pick(rng);
        which.push_back(k);
        ops.push_back(MakeOp(mix_[k], fixtures_[k]));
      }
      backend_.RunBatch(
          std::move(ops), [this, started, which, next](absl::StatusOr<BatchResults> r) {
            std::vector<int> slots;
            for (size_t i = 0; i < which.size(); ++i) {
              slots.push_back(r.ok() ? Classify((*r)[i], mix_[which[i]], fixtures_[which[i]])
                                     : static_cast<int>(r.status().code()));
            }
            Record(started, which.size(), slots);
            if (next) next();
            End();
          });
      return;
    }
    const size_t k = Pick(rng);
    auto done = [this, started, k, next](absl::StatusOr<Result> r) {
      Record(started, 1, {Classify(r, mix_[k], fixtures_[k])});
      if (next) next();
      End();
    };
    if (stream != nullptr) {
      absl::Status s = stream->Submit(MakeOp(mix_[k], fixtures_[k]), done);
      if (!s.ok()) {  // the stream has ended: count the error and stop this slot
        Record(started, 1, {static_cast<int>(s.code())});
        End();
      }
      return;
    }
    backend_.Run(MakeOp(mix_[k], fixtures_[k]), std::move(done));
  }

  // Closed loop: each user (or each stream slot) issues its next request when the previous ends.
  void ClosedLoop() {
    const bool stream = cfg_.style == "stream" && backend_.SupportsStream();
    const int slots_per_user = stream ? cfg_.inflight : 1;
    users_ = std::make_unique<User[]>(static_cast<size_t>(cfg_.concurrency));
    for (int u = 0; u < cfg_.concurrency; ++u) {
      Stream* s = nullptr;
      if (stream) {
        auto st =
            backend_.OpenStream(static_cast<size_t>(cfg_.inflight), static_cast<size_t>(cfg_.pack));
        if (!st.ok()) {
          std::cerr << "pqc-load: cannot open a stream: " << st.status() << '\n';
          continue;
        }
        s = st->get();
        std::lock_guard lock(streams_mu_);
        streams_.push_back(*std::move(st));
      }
      users_[u].rng.store(1000 + static_cast<uint64_t>(u));
      for (int slot = 0; slot < slots_per_user; ++slot) Loop(u, s);
    }
  }
  void Loop(int u, Stream* s) {
    const Clock::time_point now = Clock::now();
    if (!MayStart(now)) return;
    Issue(users_[u].rng, now, s, [this, u, s] { Loop(u, s); });
  }

  // Open loop: requests leave on a fixed schedule whatever the answers; latency is measured
  // from the scheduled time so that a slow server cannot hide its queueing.
  void OpenLoop() {
    const bool stream = cfg_.style == "stream" && backend_.SupportsStream();
    if (stream) {
      for (int u = 0; u < std::max(1, cfg_.concurrency); ++u) {
        auto st = backend_.OpenStream(static_cast<size_t>(std::max(cfg_.inflight, 1)),
                                      static_cast<size_t>(cfg_.pack));
        std::lock_guard lock(streams_mu_);
        if (st.ok()) streams_.push_back(*std::move(st));
      }
    }
    std::atomic<uint64_t> rng{99};
    const auto interval = ToDur(1.0 / cfg_.rate);
    Clock::time_point t = start_;
    for (uint64_t i = 0;; ++i) {
      t = start_ + interval * static_cast<int64_t>(i);
      std::this_thread::sleep_until(t);
      if (!MayStart(t)) break;
      {
        std::lock_guard lock(mu_);
        if (outstanding_ >= cfg_.max_outstanding) {
          dropped_.fetch_add(1);
          continue;
        }
      }
      Stream* s = streams_.empty() ? nullptr : streams_[i % streams_.size()].get();
      Issue(rng, t, s, nullptr);
    }
  }

  void Progress() {
    auto next = start_ + std::chrono::seconds(1);
    while (!finished_) {
      std::this_thread::sleep_until(std::min(next, Clock::now() + std::chrono::milliseconds(50)));
      if (Clock::now() < next) continue;
      const double t = std::chrono::duration<double>(Clock::now() - start_).count();
      LatencyHistogram snap(stats_.interval);
      stats_.interval.Reset();
      const uint64_t reqs = stats_.interval_requests.exchange(0);
      const uint64_t ops = stats_.interval_ops.exchange(0);
      const uint64_t errs = stats_.interval_errors.exchange(0);
      if (!cfg_.quiet) {
        std::fprintf(stderr, "[%5.1fs]%s %9llu req/s %9llu ops/s  p99 %8.3f ms  errors %llu\n", t,
                     next <= measure_from_ ? " warm-up" : "        ",
                     static_cast<unsigned long long>(reqs), static_cast<unsigned long long>(ops),
                     static_cast<double>(snap.Quantile(0.99)) / 1e6,
                     static_cast<unsigned long long>(errs));
      }
      next += std::chrono::seconds(1);
    }
  }

  struct User {
    std::atomic<uint64_t> rng{0};
  };

  const Config& cfg_;
  Backend& backend_;
  const pqcd::load::CostMeter& meter_;
  pqcd::load::CostSample cost_start_, cost_end_;
  bool run_over_ = false;  // guarded by mu_
  std::mutex streams_mu_;  // streams_ grows while the sampler may read it
  std::vector<MixEntry> mix_;
  std::vector<Fixture> fixtures_;
  std::vector<double> cumulative_;
  std::unique_ptr<User[]> users_;
  std::vector<std::unique_ptr<Stream>> streams_;
  Stats stats_;
  Clock::time_point start_, measure_from_, end_, measure_end_;
  std::atomic<Clock::time_point> last_completion_{Clock::time_point{}};
  std::atomic<uint64_t> measured_started_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> finished_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t outstanding_ = 0;
};

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

  const pqcd::load::CostMeter meter(cfg.server_pids, cfg.server_metrics, cfg.in_process);
  if (absl::Status s = meter.Probe(); !s.ok()) {
    std::cerr << "pqc-load: cost accounting: " << s.message() << '\n';
    return 2;
  }

  std::unique_ptr<Backend> backend;
  std::string mode;
  if (cfg.in_process) {
#ifdef PQCD_LOAD_WITH_ENGINE
    auto b = EngineBackend::Create(cfg.workers);
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
    auto ready = (*c)->WaitForServing(absl::Seconds(10));
    if (!ready.ok()) {
      std::cerr << "pqc-load: daemon not serving: " << ready << '\n';
      return 3;
    }
    backend = std::make_unique<GrpcBackend>(*std::move(c));
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
  const json report = runner.Report(mode);
  if (cfg.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    PrintText(report);
  }
  return report["error_total"].get<uint64_t>() == 0 ? 0 : 1;
}
