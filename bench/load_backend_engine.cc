// pqc-load's in-process backend (--in-process): the mix straight through the engine, no gRPC;
// built only with the engine (PQCD_LOAD_WITH_ENGINE).
#include <map>
#include <mutex>

#include "load_backends.h"
#include "pqcd/engine/engine.h"
#include "pqcd/engine/pqc_executor.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::load {

using namespace pqcd::client;  // NOLINT
using nlohmann::json;

namespace {

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

 private:
  std::unique_ptr<eng::Engine> engine_;
  std::map<std::string, std::string> held_;  // filled before the run, read-only during it
};
}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeEngineBackend(int workers) {
  auto b = EngineBackend::Create(workers);
  if (!b.ok()) return b.status();
  return std::unique_ptr<Backend>(*std::move(b));
}

}  // namespace pqcd::load
