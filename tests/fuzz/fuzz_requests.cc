// libFuzzer target: arbitrary bytes through request decoding, the server's validation/preparation
// and the engine, and straight into the kernels' key / ciphertext / signature decoders. It must
// never crash, hang or trip ASan/UBSan; errors (INVALID_ARGUMENT, ...) are fine.
//
// Input layout: byte 0 selects the mode (low 3 bits) and a parameter set (bits 4..5); the rest is
// the payload.
//   0  payload is a serialized pqc.v1.Operation: PrepareOperation, then run through the engine
//   1  payload is a serialized pqc.v1.BatchRequest: each operation as in mode 0 (at most 8)
//   2  ML-KEM check_ek + Encaps with ek = payload (length as given)
//   3  ML-KEM check_dk + Decaps: dk = the first 64 (seed, bit 3 clear) or dk_bytes (expanded, bit 3
//      set) payload bytes (or fewer when short), ct = the rest
//   4  ML-DSA Verify: pk = the first pk_bytes, sig = the next sig_bytes, message = the rest
//      (bit 3: the first message byte is the context length)
//   5  ML-DSA Sign (deterministic): sk = the first 32 (seed, bit 3 clear) or sk_bytes (expanded,
//      bit 3 set), message = the rest
//   6  Hash: payload[0] picks the algorithm and payload[1] the XOF length; data = the rest
//   7  as 0, but the caller may not hold keys (the anonymous plain-TCP caller)
//   0 with bit 3 set: payload is a shared-memory lane slot (lane/include/pqcd/lane/protocol.h):
//      the daemon's lane decoder (DecodeLaneRequest), then as 0, then the answer's encoding
//
// Seeds: `fuzz_requests -write_seeds=DIR` writes a small seed corpus (our own valid requests for
// each operation and raw inputs of the right sizes) and exits; run_fuzz.sh uses it.
#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "keystore/key_store.h"
#include "lanes.h"
#include "ops.h"
#include "pqc/v1/crypto.pb.h"
#include "pqcd/engine/engine.h"
#include "pqcd/engine/pqc_executor.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/registry.h"
#include "pqcd/lane/protocol.h"
#include "pqcd/server/config.h"
#include "pqcd/server/service_context.h"
#include "pqcd/server/task_runner.h"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/spdlog.h"

namespace {

using namespace pqcd;
using kernels::Bytes;
using kernels::MutBytes;

// The server pieces PrepareOperation needs: a small real engine (1 unpinned worker), an in-memory
// key store holding one ML-KEM-768 and one ML-DSA-65 key ("kem", "dsa") of the identity "fuzz",
// and the auxiliary runner. Created once, never destroyed (libFuzzer exits without unwinding).
struct Env {
  server::Config config;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<server::KeyStore> keys;
  std::unique_ptr<server::TaskRunner> aux;
  server::ServiceContext ctx;
  server::Caller holder{"fuzz", true, false};
  server::Caller anonymous{"anonymous", false, false};
};

// Runs one operation to completion (synchronously). Held keys created by it are deleted again so
// that the store does not grow over a long run.
// Returns the final status; *result_out (if given) gets the result.
absl::Status RunOperation(Env& env, const server::Caller& caller, const pqc::v1::Operation& op,
                          pqc::v1::OperationResult* result_out = nullptr) {
  pqc::v1::OperationResult local;
  pqc::v1::OperationResult& result = result_out != nullptr ? *result_out : local;
  server::OpState st;
  absl::Status s = server::PrepareOperation(&env.ctx, caller, op, &result, &st);
  if (!s.ok()) {
    server::SetResultStatus(&result, s);
    return s;
  }
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  absl::Status final_status;
  st.done = [&](absl::Status status) {
    std::lock_guard<std::mutex> lock(mu);
    final_status = std::move(status);
    finished = true;
    cv.notify_one();  // under the lock: the waiter cannot destroy mu/cv before we are done
  };
  st.Submit(std::chrono::system_clock::now() + std::chrono::seconds(60));
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished; });
  }
  if (!final_status.ok()) server::SetResultStatus(&result, final_status);
  if (result.has_keygen() && !result.keygen().key_id().empty()) {
    (void)env.keys->Delete(caller.identity, result.keygen().key_id(), 0);
  }
  return final_status;
}

// A lane slot (lane/include/pqcd/lane/protocol.h) as the daemon's workers take it: decoded into
// a private message, run as mode 0, and the answer encoded into a slot of the lane's size.
void RunLaneSlot(Env& env, Bytes slot) {
  constexpr uint32_t kMaxInput = 16384;
  static const size_t slot_bytes = lane::SlotBytes(kMaxInput);
  pqc::v1::Operation op;
  server::LaneRequestMeta meta;
  pqc::v1::OperationResult result;
  absl::Status s = server::DecodeLaneRequest(slot.data(), slot.size(), kMaxInput, &op, &meta);
  if (s.ok()) s = RunOperation(env, env.holder, op, &result);
  std::vector<uint8_t> answer(slot_bytes);
  const size_t n = server::EncodeLaneResponse(meta, s, result, answer.data(), answer.size());
  if (n > answer.size()) std::abort();
}

Env& GetEnv() {
  static Env* env = [] {
    auto* e = new Env;
    e->config.max_field_bytes = 64 << 10;  // small, so that the size check itself is reachable
    auto null_log =
        std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>());
    e->ctx.log = null_log;
    e->ctx.audit = null_log;
    engine::EngineOptions eo;
    eo.workers = 1;
    eo.pin_workers = false;
    eo.bind_memory = false;
    eo.queue_capacity = 64;
    eo.pqc_executor = engine::PqcKernelExecutor();
    auto eng = engine::Engine::Create(eo);
    if (!eng.ok()) {
      std::fprintf(stderr, "fuzz_requests: engine: %s\n",
                   std::string(eng.status().message()).c_str());
      std::abort();
    }
    e->engine = std::move(*eng);
    auto ks = server::KeyStore::Open(server::KeyStoreOptions{});
    if (!ks.ok()) {
      std::fprintf(stderr, "fuzz_requests: key store: %s\n",
                   std::string(ks.status().message()).c_str());
      std::abort();
    }
    e->keys = std::move(*ks);
    e->aux = std::make_unique<server::TaskRunner>(1, "fuzz-aux");
    e->ctx.config = &e->config;
    e->ctx.engine = e->engine.get();
    e->ctx.keys = e->keys.get();
    e->ctx.aux = e->aux.get();
    e->ctx.key_tasks = e->aux.get();  // held KeyGen stores through it (unbounded here)
    // The two held keys that key_ref requests can name (deterministic seeds).
    for (auto [id, alg, seed_len] :
         {std::tuple{"kem", pqc::v1::ML_KEM_768, 64}, std::tuple{"dsa", pqc::v1::ML_DSA_65, 32}}) {
      auto created = e->keys->Versions(e->holder.identity, id);
      if (!created.empty()) continue;
      // Generate through the normal path, then keep it (RunOperation would delete it).
      pqc::v1::Operation op;
      auto* kg = op.mutable_keygen();
      kg->set_algorithm(alg);
      kg->set_seed(std::string(static_cast<size_t>(seed_len), '\x42'));
      kg->set_hold(true);
      kg->set_key_id(id);
      pqc::v1::OperationResult result;
      server::OpState st;
      if (!server::PrepareOperation(&e->ctx, e->holder, op, &result, &st).ok()) std::abort();
      std::mutex mu;
      std::condition_variable cv;
      bool finished = false;
      st.done = [&](absl::Status) {
        std::lock_guard<std::mutex> lock(mu);
        finished = true;
        cv.notify_one();
      };
      st.Submit(std::chrono::system_clock::now() + std::chrono::seconds(60));
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return finished; });
    }
    return e;
  }();
  return *env;
}

Bytes Take(Bytes& in, size_t n) {
  n = std::min(n, in.size());
  Bytes head = in.first(n);
  in = in.subspan(n);
  return head;
}

void FuzzKemEncaps(kernels::KemAlgorithm alg, Bytes ek) {
  const kernels::AlgorithmDescriptor& d = kernels::Describe(kernels::IdOf(alg));
  (void)d.kem->check_ek(ek);
  std::vector<uint8_t> ct(d.facts->ciphertext_bytes), ss(d.facts->secret_bytes);
  kernels::KemEncapsItem item{ek, {}, MutBytes(ct), MutBytes(ss), {}};
  d.kem->encaps_batch(std::span(&item, 1), kernels::OsRandom());
}

void FuzzKemDecaps(kernels::KemAlgorithm alg, bool expanded, Bytes in) {
  const kernels::AlgorithmDescriptor& d = kernels::Describe(kernels::IdOf(alg));
  Bytes dk = Take(in, expanded ? d.facts->private_key_bytes : d.facts->seed_bytes);
  (void)d.kem->check_dk(dk);
  std::vector<uint8_t> ss(d.facts->secret_bytes);
  kernels::KemDecapsItem item{dk, in, MutBytes(ss), {}};
  d.kem->decaps_batch(std::span(&item, 1));
}

void FuzzDsaVerify(kernels::DsaAlgorithm alg, bool with_context, Bytes in) {
  const kernels::AlgorithmDescriptor& d = kernels::Describe(kernels::IdOf(alg));
  kernels::DsaVerifyItem item;
  item.pk = Take(in, d.facts->public_key_bytes);
  item.sig = Take(in, d.facts->signature_bytes);
  if (with_context && !in.empty()) {
    size_t n = in[0];
    in = in.subspan(1);
    item.options.context = Take(in, n);
  }
  item.message = in;
  d.dsa->verify_batch(std::span(&item, 1));
}

void FuzzDsaSign(kernels::DsaAlgorithm alg, bool expanded, Bytes in) {
  const kernels::AlgorithmDescriptor& d = kernels::Describe(kernels::IdOf(alg));
  std::vector<uint8_t> sig(d.facts->signature_bytes);
  kernels::DsaSignItem item;
  item.sk = Take(in, expanded ? d.facts->private_key_bytes : d.facts->seed_bytes);
  item.message = in;
  item.options.deterministic = true;
  item.sig = MutBytes(sig);
  d.dsa->sign_batch(std::span(&item, 1), kernels::OsRandom());
}

void FuzzHash(Bytes in) {
  if (in.size() < 2) return;
  auto alg = static_cast<kernels::HashAlgorithm>(in[0] % kernels::kNumHashAlgorithms);
  size_t out_len = kernels::HashIsXof(alg) ? in[1] : kernels::HashDigestBytes(alg);
  in = in.subspan(2);
  std::vector<uint8_t> out(out_len);
  (void)kernels::Hash(alg, in, MutBytes(out));
}

// ---- Seed corpus
// -----------------------------------------------------------------------------------

void WriteSeed(const std::string& dir, const std::string& name, uint8_t mode,
               const std::string& payload) {
  std::ofstream f(dir + "/" + name, std::ios::binary);
  f.put(static_cast<char>(mode));
  f << payload;
}

std::string Str(Bytes b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

int WriteSeeds(const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  kernels::SeededRandom rng(Bytes(reinterpret_cast<const uint8_t*>("pqcd-fuzz-seeds"), 15));
  // A valid ML-KEM-768 key pair and ciphertext, and an ML-DSA-44 key pair and signature, from
  // fixed seeds (our own data).
  const kernels::AlgorithmDescriptor& kem = kernels::Describe(kernels::AlgorithmId::kMlKem768);
  std::vector<uint8_t> kseed(64, 7), ek(kem.facts->public_key_bytes),
      dk(kem.facts->private_key_bytes), ct(kem.facts->ciphertext_bytes), ss(32);
  kernels::KemKeyGenItem kg{Bytes(kseed), MutBytes(ek), MutBytes(dk), {}, {}};
  kem.kem->keygen_batch(std::span(&kg, 1), rng);
  kernels::KemEncapsItem en{Bytes(ek), {}, MutBytes(ct), MutBytes(ss), {}};
  kem.kem->encaps_batch(std::span(&en, 1), rng);
  const kernels::AlgorithmDescriptor& dsa = kernels::Describe(kernels::AlgorithmId::kMlDsa44);
  std::vector<uint8_t> dseed(32, 9), pk(dsa.facts->public_key_bytes),
      sk(dsa.facts->private_key_bytes), sig(dsa.facts->signature_bytes);
  kernels::DsaKeyGenItem dg{Bytes(dseed), MutBytes(pk), MutBytes(sk), {}, {}};
  dsa.dsa->keygen_batch(std::span(&dg, 1), rng);
  const std::string msg = "fuzz";
  kernels::DsaSignItem si;
  si.sk = Bytes(sk);
  si.message = Bytes(reinterpret_cast<const uint8_t*>(msg.data()), msg.size());
  si.options.deterministic = true;
  si.sig = MutBytes(sig);
  dsa.dsa->sign_batch(std::span(&si, 1), rng);
  if (!kg.status.ok() || !en.status.ok() || !dg.status.ok() || !si.status.ok()) return 1;

  // Mode 0: one valid Operation of each kind (small keys where the message allows it).
  std::vector<std::pair<std::string, pqc::v1::Operation>> ops(9);
  ops[0].first = "op_keygen_kem";
  ops[0].second.mutable_keygen()->set_algorithm(pqc::v1::ML_KEM_512);
  ops[1].first = "op_keygen_dsa_hold";
  ops[1].second.mutable_keygen()->set_algorithm(pqc::v1::ML_DSA_44);
  ops[1].second.mutable_keygen()->set_seed(Str(Bytes(dseed)));
  ops[1].second.mutable_keygen()->set_hold(true);
  ops[1].second.mutable_keygen()->set_key_id("k1");
  ops[2].first = "op_encaps";
  ops[2].second.mutable_encaps()->set_algorithm(pqc::v1::ML_KEM_768);
  ops[2].second.mutable_encaps()->set_public_key(Str(Bytes(ek)));
  ops[3].first = "op_decaps_seed";
  ops[3].second.mutable_decaps()->set_algorithm(pqc::v1::ML_KEM_768);
  ops[3].second.mutable_decaps()->set_private_key(Str(Bytes(kseed)));
  ops[3].second.mutable_decaps()->set_ciphertext(Str(Bytes(ct)));
  ops[4].first = "op_decaps_ref";
  ops[4].second.mutable_decaps()->mutable_key_ref()->set_key_id("kem");
  ops[4].second.mutable_decaps()->set_ciphertext(Str(Bytes(ct)));
  ops[5].first = "op_sign";
  ops[5].second.mutable_sign()->set_algorithm(pqc::v1::ML_DSA_44);
  ops[5].second.mutable_sign()->set_private_key(Str(Bytes(dseed)));
  ops[5].second.mutable_sign()->set_message(msg);
  ops[5].second.mutable_sign()->set_context("ctx");
  ops[5].second.mutable_sign()->set_pre_hash(pqc::v1::PRE_HASH_SHA2_256);
  ops[6].first = "op_verify";
  ops[6].second.mutable_verify()->set_algorithm(pqc::v1::ML_DSA_44);
  ops[6].second.mutable_verify()->set_public_key(Str(Bytes(pk)));
  ops[6].second.mutable_verify()->set_message(msg);
  ops[6].second.mutable_verify()->set_signature(Str(Bytes(sig)));
  ops[7].first = "op_hash_shake";
  ops[7].second.mutable_hash()->set_algorithm(pqc::v1::SHAKE256);
  ops[7].second.mutable_hash()->set_data("abc");
  ops[7].second.mutable_hash()->set_output_length(40);
  ops[8].first = "op_sign_ref";
  ops[8].second.mutable_sign()->mutable_key_ref()->set_key_id("dsa");
  ops[8].second.mutable_sign()->set_message(msg);
  ops[8].second.mutable_sign()->set_deterministic(true);
  pqc::v1::BatchRequest batch;
  for (auto& [name, op] : ops) {
    WriteSeed(dir, name, 0, op.SerializeAsString());
    if (name == "op_hash_shake" || name == "op_encaps" || name == "op_keygen_kem") {
      *batch.add_operations() = op;
    }
  }
  WriteSeed(dir, "batch", 1, batch.SerializeAsString());
  WriteSeed(dir, "anon_keygen_hold", 7, ops[1].second.SerializeAsString());
  // Raw decoder inputs (ML-KEM-768 = parameter 1, ML-DSA-44 = parameter 0).
  WriteSeed(dir, "raw_encaps", 2 | (1 << 4), Str(Bytes(ek)));
  WriteSeed(dir, "raw_decaps_seed", 3 | (1 << 4), Str(Bytes(kseed)) + Str(Bytes(ct)));
  WriteSeed(dir, "raw_decaps_expanded", 3 | 8 | (1 << 4), Str(Bytes(dk)) + Str(Bytes(ct)));
  // The hybrid KEMs (parameters 3..6): a key pair and a ciphertext of each.
  for (int k = 3; k <= static_cast<int>(kernels::KemAlgorithm::kXWing); ++k) {
    const kernels::AlgorithmDescriptor& h =
        kernels::Describe(kernels::IdOf(static_cast<kernels::KemAlgorithm>(k)));
    std::vector<uint8_t> hek(h.facts->public_key_bytes), hdk(h.facts->private_key_bytes),
        hseed(h.facts->seed_bytes), hct(h.facts->ciphertext_bytes), hss(h.facts->secret_bytes);
    kernels::KemKeyGenItem hkg{{}, MutBytes(hek), MutBytes(hdk), MutBytes(hseed), {}};
    h.kem->keygen_batch(std::span(&hkg, 1), rng);
    kernels::KemEncapsItem hen{Bytes(hek), {}, MutBytes(hct), MutBytes(hss), {}};
    h.kem->encaps_batch(std::span(&hen, 1), rng);
    if (!hkg.status.ok() || !hen.status.ok()) return 1;
    const std::string n = "_" + std::to_string(k);
    const uint8_t p = static_cast<uint8_t>(k << 4);
    WriteSeed(dir, "raw_encaps" + n, 2 | p, Str(Bytes(hek)));
    WriteSeed(dir, "raw_decaps_seed" + n, 3 | p, Str(Bytes(hseed)) + Str(Bytes(hct)));
    WriteSeed(dir, "raw_decaps_expanded" + n, 3 | 8 | p, Str(Bytes(hdk)) + Str(Bytes(hct)));
  }
  WriteSeed(dir, "raw_verify", 4, Str(Bytes(pk)) + Str(Bytes(sig)) + msg);
  WriteSeed(dir, "raw_sign_expanded", 5 | 8, Str(Bytes(sk)) + msg);
  WriteSeed(dir, "raw_hash", 6, std::string("\x05\x20", 2) + "abc");
  // Lane slots: a hash, and a decapsulation with the seed form of the key.
  auto lane_slot = [](uint32_t op, uint32_t algorithm, const std::string& key,
                      const std::string& input) {
    lane::RequestHeader h{};
    h.op = op;
    h.algorithm = algorithm;
    h.key_len = static_cast<uint32_t>(key.size());
    h.input_len = static_cast<uint32_t>(input.size());
    std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
    return out + key + input;
  };
  WriteSeed(dir, "lane_hash", 0 | 8,
            lane_slot(static_cast<uint32_t>(lane::Op::kHash), pqc::v1::SHA3_256, "", "abc"));
  WriteSeed(dir, "lane_decaps", 0 | 8,
            lane_slot(static_cast<uint32_t>(lane::Op::kDecaps), pqc::v1::ML_KEM_768,
                      Str(Bytes(kseed)), Str(Bytes(ct))));
  std::printf("fuzz_requests: seeds written to %s\n", dir.c_str());
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    const char* a = (*argv)[i];
    if (std::strncmp(a, "-write_seeds=", 13) == 0) std::exit(WriteSeeds(a + 13));
  }
  GetEnv();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Env& env = GetEnv();
  const uint8_t sel = data[0];
  Bytes payload(data + 1, size - 1);
  const int param = (sel >> 4) & 3;  // 3 wraps to the first parameter set
  // Bits 4..6: every KEM, the hybrids included (kXWing is the last KemAlgorithm).
  constexpr int kKems = static_cast<int>(kernels::KemAlgorithm::kXWing) + 1;
  const auto kem = static_cast<kernels::KemAlgorithm>(((sel >> 4) & 7) % kKems);
  const auto dsa = static_cast<kernels::DsaAlgorithm>(param % 3);
  const bool bit3 = (sel & 8) != 0;
  switch (sel & 7) {
    case 0:
    case 7: {
      if ((sel & 7) == 0 && bit3) {
        RunLaneSlot(env, payload);
        break;
      }
      pqc::v1::Operation op;
      if (op.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
        RunOperation(env, (sel & 7) == 0 ? env.holder : env.anonymous, op).IgnoreError();
      }
      break;
    }
    case 1: {
      pqc::v1::BatchRequest batch;
      if (batch.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
        int n = 0;
        for (const auto& op : batch.operations()) {
          if (++n > 8) break;
          RunOperation(env, env.holder, op).IgnoreError();
        }
      }
      break;
    }
    case 2:
      FuzzKemEncaps(kem, payload);
      break;
    case 3:
      FuzzKemDecaps(kem, bit3, payload);
      break;
    case 4:
      FuzzDsaVerify(dsa, bit3, payload);
      break;
    case 5:
      FuzzDsaSign(dsa, bit3, payload);
      break;
    case 6:
      FuzzHash(payload);
      break;
  }
  return 0;
}
