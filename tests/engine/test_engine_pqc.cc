// ML-KEM and ML-DSA through the engine with the pqcd_engine_pqc executor: round trips, per-item
// verdicts, size and family errors. (Correctness of the kernels themselves is tested against the
// vectors in tests/kernels.)
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "pqcd/engine/pqc_executor.h"

namespace pqcd::engine {
namespace {

using kernels::AlgorithmId;

struct Waiter {
  std::atomic<bool> done{false};
  absl::Status status;
};

void Arm(Job& j, Waiter& w) {
  j.on_complete = [&w](Job&, absl::Status s) {
    w.status = std::move(s);
    w.done.store(true, std::memory_order_release);
  };
}

absl::Status RunJob(Engine& e, Job& j) {
  Waiter w;
  Arm(j, w);
  e.Submit(&j);
  while (!w.done.load(std::memory_order_acquire)) std::this_thread::yield();
  return w.status;
}

std::unique_ptr<Engine> MakeEngine() {
  EngineOptions o;
  o.pqc_executor = PqcKernelExecutor();
  auto e = Engine::Create(o);
  EXPECT_TRUE(e.ok()) << e.status();
  return std::move(*e);
}

TEST(EnginePqc, MlKem768RoundTripInOneBatch) {
  auto engine = MakeEngine();
  constexpr AlgorithmId kAlg = AlgorithmId::kMlKem768;
  const kernels::AlgorithmFacts& f = kernels::Facts(kAlg);
  std::vector<uint8_t> ek(f.public_key_bytes), dk(f.private_key_bytes), ct(f.ciphertext_bytes);
  std::vector<uint8_t> ss1(32), ss2(32);
  Job kg;
  kg.Set<kernels::KemKeyGenItem>(kAlg) = {{}, ek, dk, {}, {}};
  ASSERT_TRUE(RunJob(*engine, kg).ok());

  // Several encapsulations submitted together (one group), then decapsulations.
  constexpr int kN = 12;
  std::vector<std::vector<uint8_t>> cts(kN, std::vector<uint8_t>(f.ciphertext_bytes));
  std::vector<std::vector<uint8_t>> sse(kN, std::vector<uint8_t>(32)), ssd = sse;
  std::vector<Job> enc(kN), dec(kN);
  std::vector<Waiter> we(kN), wd(kN);
  for (int i = 0; i < kN; ++i) {
    enc[i].Set<kernels::KemEncapsItem>(kAlg) = {ek, {}, cts[i], sse[i], {}};
    Arm(enc[i], we[i]);
  }
  for (auto& j : enc) engine->Submit(&j);
  for (int i = 0; i < kN; ++i) {
    while (!we[i].done.load()) std::this_thread::yield();
    ASSERT_TRUE(we[i].status.ok()) << we[i].status;
    dec[i].Set<kernels::KemDecapsItem>(kAlg) = {dk, cts[i], ssd[i], {}};
    Arm(dec[i], wd[i]);
  }
  for (auto& j : dec) engine->Submit(&j);
  for (int i = 0; i < kN; ++i) {
    while (!wd[i].done.load()) std::this_thread::yield();
    ASSERT_TRUE(wd[i].status.ok()) << wd[i].status;
    EXPECT_EQ(sse[i], ssd[i]);
  }

  Job bad;  // wrong shared-secret buffer size: the kernel refuses it, naming the field
  bad.Set<kernels::KemEncapsItem>(kAlg) = {ek, {}, ct, std::span<uint8_t>(ss1.data(), 16), {}};
  absl::Status s = RunJob(*engine, bad);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;

  Job wrong_family;  // a KEM operation on a hash algorithm
  wrong_family.Set<kernels::KemEncapsItem>(AlgorithmId::kSha3_256) = {ek, {}, ct, ss1, {}};
  s = RunJob(*engine, wrong_family);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
}

TEST(EnginePqc, MlDsa44SignVerify) {
  auto engine = MakeEngine();
  constexpr AlgorithmId kAlg = AlgorithmId::kMlDsa44;
  const kernels::AlgorithmFacts& f = kernels::Facts(kAlg);
  std::vector<uint8_t> pk(f.public_key_bytes), sk(f.private_key_bytes), sig(f.signature_bytes);
  Job kg;
  kg.Set<kernels::DsaKeyGenItem>(kAlg) = {{}, pk, sk, {}, {}};
  ASSERT_TRUE(RunJob(*engine, kg).ok());

  const std::vector<uint8_t> msg = {'h', 'e', 'l', 'l', 'o'};
  Job sign;
  auto& si = sign.Set<kernels::DsaSignItem>(kAlg);
  si.sk = sk;
  si.message = msg;
  si.sig = sig;
  ASSERT_TRUE(RunJob(*engine, sign).ok());

  Job verify;
  auto& vi = verify.Set<kernels::DsaVerifyItem>(kAlg);
  vi.pk = pk;
  vi.message = msg;
  vi.sig = sig;
  ASSERT_TRUE(RunJob(*engine, verify).ok());
  EXPECT_TRUE(verify.item<kernels::DsaVerifyItem>().valid);

  sig[0] ^= 1;
  verify.ResetForReuse();
  ASSERT_TRUE(RunJob(*engine, verify).ok());
  EXPECT_FALSE(verify.item<kernels::DsaVerifyItem>().valid);
}

}  // namespace
}  // namespace pqcd::engine
