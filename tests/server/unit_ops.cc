// Units of server/src/ops.cc without a daemon: a held KeyGen whose caller gave up before the key
// could be stored stores nothing (issue 25), and GivenKeys prepares a private key that a Batch
// repeats once, at its second sighting (issue 24).
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"
#include "keystore/key_store.h"
#include "ops.h"
#include "pqcd/engine/engine.h"
#include "pqcd/engine/pqc_executor.h"
#include "pqcd/kernels/registry.h"
#include "pqcd/server/config.h"
#include "pqcd/server/service_context.h"
#include "pqcd/server/task_runner.h"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/spdlog.h"

namespace pqcd::server {
namespace {

using Clock = std::chrono::system_clock;

// A small real engine (1 unpinned worker), an in-memory key store and a key-management runner.
struct Env {
  Env() {
    auto null_log =
        std::make_shared<spdlog::logger>("unit", std::make_shared<spdlog::sinks::null_sink_mt>());
    ctx.log = null_log;
    ctx.audit = null_log;
    engine::EngineOptions eo;
    eo.workers = 1;
    eo.pin_workers = false;
    eo.bind_memory = false;
    eo.pqc_executor = engine::PqcKernelExecutor();
    engine = std::move(*engine::Engine::Create(eo));
    keys = std::move(*KeyStore::Open(KeyStoreOptions{}));
    key_tasks = std::make_unique<TaskRunner>(1, "unit-keys");
    ctx.config = &config;
    ctx.engine = engine.get();
    ctx.keys = keys.get();
    ctx.key_tasks = key_tasks.get();
    ctx.aux = key_tasks.get();
  }
  ~Env() {
    key_tasks->Stop();
    engine->Shutdown();
  }
  uint64_t JobsRun() const {
    uint64_t n = 0;
    for (const auto& w : engine->GetStats().workers) n += w.jobs;
    return n;
  }
  Config config;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<KeyStore> keys;
  std::unique_ptr<TaskRunner> key_tasks;
  ServiceContext ctx;
  Caller caller{"unit", true, false};
};

// Runs a held KeyGen of `key_id` with the given deadline while the key-management runner is held
// up until the deadline has passed (when `hold_past_deadline`): returns the call's final status.
absl::Status HeldKeyGen(Env& env, const std::string& key_id, Clock::time_point deadline,
                        bool hold_past_deadline) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  env.key_tasks->Post([released] { released.wait(); });
  pqc::v1::KeyGenRequest req;
  req.set_algorithm(pqc::v1::ML_KEM_768);
  req.set_hold(true);
  req.set_key_id(key_id);
  pqc::v1::KeyGenResponse resp;
  OpState st;
  absl::Status prepared = Prepare(&env.ctx, env.caller, req, &resp, &st);
  if (!prepared.ok()) return prepared;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<absl::Status> final_status;
  st.done = [&](absl::Status status) {
    std::lock_guard<std::mutex> lock(mu);
    final_status = std::move(status);
    cv.notify_one();
  };
  const uint64_t jobs_before = env.JobsRun();
  st.Submit(deadline);
  // The key pair is generated (the job ran): its store step now waits behind the held-up runner.
  while (env.JobsRun() == jobs_before) std::this_thread::yield();
  if (hold_past_deadline) {
    while (Clock::now() <= deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  release.set_value();
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return final_status.has_value(); });
  return *final_status;
}

TEST(HeldKeyGen, NotStoredWhenTheCallersDeadlinePassedBeforeTheStore) {
  Env env;
  const absl::Status late =
      HeldKeyGen(env, "late", Clock::now() + std::chrono::milliseconds(200), true);
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded) << late;
  EXPECT_NE(std::string(late.message()).find("nothing was stored"), std::string::npos) << late;
  EXPECT_TRUE(env.keys->Versions("unit", "late").empty());
  // In time: stored.
  const absl::Status in_time =
      HeldKeyGen(env, "in-time", Clock::now() + std::chrono::seconds(60), false);
  EXPECT_TRUE(in_time.ok()) << in_time;
  EXPECT_EQ(env.keys->Versions("unit", "in-time").size(), 1u);
}

TEST(GivenKeys, ARepeatedKeyIsPreparedOnceAtItsSecondSighting) {
  const kernels::AlgorithmDescriptor& kem = kernels::Describe(kernels::AlgorithmId::kMlKem768);
  const kernels::AlgorithmDescriptor& other = kernels::Describe(kernels::AlgorithmId::kMlKem512);
  std::vector<uint8_t> a(64, 0x11), a_copy(64, 0x11), b(64, 0x22), bad(63, 0x11);
  GivenKeys given;
  EXPECT_EQ(given.Find(kem, a, nullptr), nullptr);   // first sighting: used as given
  auto prepared = given.Find(kem, a_copy, nullptr);  // the same bytes again: prepared
  ASSERT_NE(prepared, nullptr);
  std::vector<uint8_t> want(kem.prepared_private_key_bytes);
  ASSERT_TRUE(kem.prepare_private_key(a, kernels::MutBytes(want)).ok());
  EXPECT_EQ(std::vector<uint8_t>(prepared->data(), prepared->data() + prepared->size()), want);
  EXPECT_EQ(given.Find(kem, a, nullptr), prepared);  // the rest of the run shares it
  EXPECT_EQ(given.Find(kem, b, nullptr), nullptr);   // another key ends the run
  EXPECT_EQ(given.Find(kem, a, nullptr), nullptr);   // ... and a new one starts
  EXPECT_NE(given.Find(kem, a, nullptr), nullptr);
  // The same bytes for another algorithm are another key.
  EXPECT_EQ(given.Find(other, a, nullptr), nullptr);
  // A key that cannot be prepared is used as given each time (each op reports its own error).
  EXPECT_EQ(given.Find(kem, bad, nullptr), nullptr);
  EXPECT_EQ(given.Find(kem, bad, nullptr), nullptr);
  EXPECT_EQ(given.Find(kem, bad, nullptr), nullptr);
}

}  // namespace
}  // namespace pqcd::server
