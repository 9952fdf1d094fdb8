// ML-KEM and ML-DSA through the engine with the pqcd_engine_pqc executor: round trips, per-item
// verdicts, size errors. (Correctness of the kernels themselves is tested against the vectors in
// tests/kernels.)
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "pqcd/engine/pqc_executor.h"

namespace pqcd::engine {
namespace {

using kernels::DsaAlgorithm;
using kernels::KemAlgorithm;

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
  const auto& info = kernels::GetKemInfo(KemAlgorithm::kMlKem768);
  std::vector<uint8_t> ek(info.ek_bytes), dk(info.dk_bytes), ct(info.ct_bytes);
  std::vector<uint8_t> ss1(32), ss2(32);
  Job kg;
  kg.SetKem(Operation::kKemKeyGen, KemAlgorithm::kMlKem768);
  kg.public_key = ek;
  kg.private_key = dk;
  ASSERT_TRUE(RunJob(*engine, kg).ok());

  // Several encapsulations submitted together (one group), then decapsulations.
  constexpr int kN = 12;
  std::vector<std::vector<uint8_t>> cts(kN, std::vector<uint8_t>(info.ct_bytes));
  std::vector<std::vector<uint8_t>> sse(kN, std::vector<uint8_t>(32)), ssd = sse;
  std::vector<Job> enc(kN), dec(kN);
  std::vector<Waiter> we(kN), wd(kN);
  for (int i = 0; i < kN; ++i) {
    enc[i].SetKem(Operation::kKemEncaps, KemAlgorithm::kMlKem768);
    enc[i].key = ek;
    enc[i].output = cts[i];
    enc[i].shared_secret = sse[i];
    Arm(enc[i], we[i]);
  }
  for (auto& j : enc) engine->Submit(&j);
  for (int i = 0; i < kN; ++i) {
    while (!we[i].done.load()) std::this_thread::yield();
    ASSERT_TRUE(we[i].status.ok()) << we[i].status;
    EXPECT_EQ(enc[i].output_bytes, info.ct_bytes);
    dec[i].SetKem(Operation::kKemDecaps, KemAlgorithm::kMlKem768);
    dec[i].key = dk;
    dec[i].ciphertext = cts[i];
    dec[i].shared_secret = ssd[i];
    Arm(dec[i], wd[i]);
  }
  for (auto& j : dec) engine->Submit(&j);
  for (int i = 0; i < kN; ++i) {
    while (!wd[i].done.load()) std::this_thread::yield();
    ASSERT_TRUE(wd[i].status.ok()) << wd[i].status;
    EXPECT_EQ(sse[i], ssd[i]);
  }

  Job bad;  // wrong shared-secret buffer size
  bad.SetKem(Operation::kKemEncaps, KemAlgorithm::kMlKem768);
  bad.key = ek;
  bad.output = ct;
  bad.shared_secret = std::span<uint8_t>(ss1.data(), 16);
  absl::Status s = RunJob(*engine, bad);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
}

TEST(EnginePqc, MlDsa44SignVerify) {
  auto engine = MakeEngine();
  const auto& info = kernels::GetDsaInfo(DsaAlgorithm::kMlDsa44);
  std::vector<uint8_t> pk(info.pk_bytes), sk(info.sk_bytes), sig(info.sig_bytes + 10);
  Job kg;
  kg.SetDsa(Operation::kDsaKeyGen, DsaAlgorithm::kMlDsa44);
  kg.public_key = pk;
  kg.private_key = sk;
  ASSERT_TRUE(RunJob(*engine, kg).ok());

  const std::vector<uint8_t> msg = {'h', 'e', 'l', 'l', 'o'};
  Job sign;
  sign.SetDsa(Operation::kDsaSign, DsaAlgorithm::kMlDsa44);
  sign.key = sk;
  sign.message = msg;
  sign.output = sig;
  ASSERT_TRUE(RunJob(*engine, sign).ok());
  EXPECT_EQ(sign.output_bytes, info.sig_bytes);

  Job verify;
  verify.SetDsa(Operation::kDsaVerify, DsaAlgorithm::kMlDsa44);
  verify.key = pk;
  verify.message = msg;
  verify.ciphertext = std::span<const uint8_t>(sig.data(), sign.output_bytes);
  ASSERT_TRUE(RunJob(*engine, verify).ok());
  EXPECT_TRUE(verify.verified);

  sig[0] ^= 1;
  verify.ResetForReuse();
  ASSERT_TRUE(RunJob(*engine, verify).ok());
  EXPECT_FALSE(verify.verified);
}

}  // namespace
}  // namespace pqcd::engine
