// Fixed lane plans (kernels/src/mlkem/fixed_lanes.h): every plan of every parameter set, run on
// random inputs, must give exactly the outputs of the individual sponges and samplers (H, G, J,
// SampleNTT, CBD), on every backend, including matrix streams that need more than the three
// planned SHAKE128 blocks. A failure prints the plan, the output and the first differing index.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "mlkem/backend.h"
#include "mlkem/fixed_lanes.h"
#include "mlkem/poly.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels::mlkem {
namespace {

// SampleNTT (Alg. 7): SHAKE128(ρ || b32 || b33), one block after another.
void RefSampleNtt(const uint8_t rho[32], uint8_t b32, uint8_t b33, Poly& out) {
  uint8_t seed[34];
  std::memcpy(seed, rho, 32);
  seed[32] = b32;
  seed[33] = b33;
  Shake128 xof;
  xof.Absorb(Bytes(seed, sizeof(seed)));
  int ctr = 0;
  while (ctr < kN) {
    uint8_t block[Shake128::kRateBytes];
    xof.Squeeze(MutBytes(block, sizeof(block)));
    ctr += portable::RejectUniform(out.c + ctr, kN - ctr, block, sizeof(block));
  }
}
// SamplePolyCBD_eta(PRF_eta(seed, nonce)) (Alg. 8, §4.1).
void RefCbd(int eta, const uint8_t seed[32], uint8_t nonce, Poly& out) {
  uint8_t in[33];
  std::memcpy(in, seed, 32);
  in[32] = nonce;
  uint8_t prf[192];
  Shake256Digest(Bytes(in, sizeof(in)), MutBytes(prf, 64 * static_cast<size_t>(eta)));
  portable::Cbd(eta, out, prf);
}

template <class T>
bool Same(const T* want, const T* got, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    if (want[i] != got[i]) {
      ADD_FAILURE() << what << ": first difference at index " << i << ": reference " << +want[i]
                    << ", plan " << +got[i];
      return false;
    }
  }
  return true;
}

// Is one of the 3-block streams of ρ short (needs a 4th block)?
bool NeedsFourthBlock(const uint8_t rho[32], uint8_t b32, uint8_t b33) {
  uint8_t seed[34];
  std::memcpy(seed, rho, 32);
  seed[32] = b32;
  seed[33] = b33;
  uint8_t buf[504];
  Shake128 xof;
  xof.Absorb(Bytes(seed, sizeof(seed)));
  xof.Squeeze(MutBytes(buf, sizeof(buf)));
  int ctr = 0;
  for (size_t p = 0; p < sizeof(buf); p += 3) {
    const int d1 = buf[p] | ((buf[p + 1] & 0x0f) << 8);
    const int d2 = (buf[p + 1] >> 4) | (buf[p + 2] << 4);
    ctr += (d1 < kQ) + (d2 < kQ);
  }
  return ctr < kN;
}

enum class Op { kKeyGen, kEncaps, kEncrypt, kDecapsCheck, kDecaps };

template <int K>
void RunPlan(Op op, fixed::PlanIo& io) {
  fixed::LaneRunner lanes;
  switch (op) {
    case Op::kKeyGen:
      // The hook is where KeyGen writes the rows of t̂; here ek is complete from the start.
      lanes.Run<fixed::kKeyGenPlan<K>>(io, [](auto) {});
      break;
    case Op::kEncaps:
      lanes.Run<fixed::kEncapsPlan<K>>(io, [](auto) {});
      break;
    case Op::kEncrypt:
      lanes.Run<fixed::kEncryptPlan<K>>(io, [](auto) {});
      break;
    case Op::kDecapsCheck:
      lanes.Run<fixed::kDecapsPlan<K, true>>(io, [](auto) {});
      break;
    case Op::kDecaps:
      lanes.Run<fixed::kDecapsPlan<K, false>>(io, [](auto) {});
      break;
  }
}

template <int K>
void Trial(Op op, std::mt19937_64& rng, const uint8_t* forced_rho, const std::string& what) {
  using P = MlKemParams<K>;
  constexpr size_t kEk = K * kPolyBytes + kSymBytes;
  constexpr size_t kCt = MlKem<K>::kCiphertextBytes;
  auto fill = [&](uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
  };
  std::vector<uint8_t> ek(kEk), ct(kCt);
  uint8_t m[32], h_in[32], z[32], seed[32];
  fill(ek.data(), ek.size());
  fill(ct.data(), ct.size());
  fill(m, 32);
  fill(h_in, 32);
  fill(z, 32);
  fill(seed, 32);
  if (forced_rho != nullptr) std::memcpy(ek.data() + K * kPolyBytes, forced_rho, 32);
  const uint8_t* rho = ek.data() + K * kPolyBytes;

  // Plan outputs (poisoned first).
  Poly mat[K][K], noise[2 * K + 1];
  std::memset(mat, 0x55, sizeof(mat));
  std::memset(noise, 0x55, sizeof(noise));
  uint8_t out0[64] = {}, out1[64] = {}, out2[64] = {};
  fixed::PlanIo io;
  io.rho = rho;
  io.matrix = &mat[0][0];
  io.noise = noise;
  const bool transposed = op != Op::kKeyGen;
  const int n_noise = op == Op::kKeyGen ? 2 * K : 2 * K + 1;
  switch (op) {
    case Op::kKeyGen:
      io.hash_a[0] = ek.data();
      io.hash_out[0] = out0;
      io.seed = seed;
      break;
    case Op::kEncaps:
      io.hash_a[0] = ek.data();
      io.hash_out[0] = out0;  // h
      io.hash_a[1] = m;
      io.hash_b[1] = out0;
      io.hash_out[1] = out1;  // (K, r)
      io.seed = out1 + 32;
      break;
    case Op::kEncrypt:
      io.seed = seed;
      break;
    case Op::kDecapsCheck:
    case Op::kDecaps:
      io.hash_a[0] = m;
      io.hash_b[0] = h_in;
      io.hash_out[0] = out0;  // (K', r')
      io.hash_a[1] = ek.data();
      io.hash_out[1] = out1;  // H(ek)
      io.hash_a[2] = z;
      io.hash_b[2] = ct.data();
      io.hash_out[2] = out2;  // J(z || c)
      io.seed = out0 + 32;
      break;
  }
  RunPlan<K>(op, io);

  // References.
  uint8_t h_ref[32], g_ref[64], j_ref[32];
  uint8_t coins[32];
  std::memcpy(coins, seed, 32);
  Sha3_256Digest(Bytes(ek.data(), ek.size()), std::span<uint8_t, 32>(h_ref, 32));
  if (op == Op::kKeyGen || op == Op::kEncaps || op == Op::kDecapsCheck) {
    Same(h_ref, op == Op::kDecapsCheck ? out1 : out0, 32, what + " H(ek)");
  }
  if (op == Op::kEncaps || op == Op::kDecapsCheck || op == Op::kDecaps) {
    Sha3_512 g;
    g.Absorb(Bytes(m, 32));
    g.Absorb(Bytes(op == Op::kEncaps ? h_ref : h_in, 32));
    g.Final(std::span<uint8_t, 64>(g_ref, 64));
    Same(g_ref, op == Op::kEncaps ? out1 : out0, 64, what + " G");
    std::memcpy(coins, g_ref + 32, 32);
  }
  if (op == Op::kDecapsCheck || op == Op::kDecaps) {
    Shake256 j;
    j.Absorb(Bytes(z, 32));
    j.Absorb(Bytes(ct.data(), ct.size()));
    j.Squeeze(MutBytes(j_ref, 32));
    Same(j_ref, out2, 32, what + " J");
  }
  for (int i = 0; i < K; ++i) {
    for (int j = 0; j < K; ++j) {
      Poly want;
      RefSampleNtt(rho, static_cast<uint8_t>(transposed ? i : j),
                   static_cast<uint8_t>(transposed ? j : i), want);
      Same(want.c, mat[i][j].c, kN,
           what + " A[" + std::to_string(i) + "][" + std::to_string(j) + "]");
    }
  }
  for (int t = 0; t < n_noise; ++t) {
    const int eta = op == Op::kKeyGen || t < K ? P::eta1 : P::eta2;
    Poly want;
    RefCbd(eta, coins, static_cast<uint8_t>(t), want);
    Same(want.c, noise[t].c, kN, what + " noise " + std::to_string(t));
  }
}

// A ρ whose stream (0, 0) needs a 4th block (entry [0][0] in every plan).
std::array<uint8_t, 32> SlowRho() {
  std::mt19937_64 rng(11);
  for (;;) {
    std::array<uint8_t, 32> rho;
    for (auto& x : rho) x = static_cast<uint8_t>(rng());
    if (NeedsFourthBlock(rho.data(), 0, 0)) return rho;
  }
}

template <int K>
void RunAll(const std::array<uint8_t, 32>& slow_rho, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const char* names[] = {"KeyGen", "Encaps", "Encrypt", "Decaps(check)", "Decaps"};
  for (int o = 0; o < 5; ++o) {
    const std::string base = "k=" + std::to_string(K) + " " + names[o] + " trial ";
    for (int trial = 0; trial < 40; ++trial) {
      Trial<K>(static_cast<Op>(o), rng, trial < 2 ? slow_rho.data() : nullptr,
               base + std::to_string(trial));
    }
  }
}

TEST(MlKemLanes, PlansMatchIndividualSponges) {
  pqcd::testing::ScopedIsa restore;
  const auto slow_rho = SlowRho();
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    SCOPED_TRACE(std::string(IsaName(isa)));
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    RunAll<2>(slow_rho, 0x6c616e6573 + static_cast<uint64_t>(isa));
    RunAll<3>(slow_rho, 0x6c616e6574 + static_cast<uint64_t>(isa));
    RunAll<4>(slow_rho, 0x6c616e6575 + static_cast<uint64_t>(isa));
  }
}

// The plans pack the lanes as the greedy schedule did: permutation counts per operation.
TEST(MlKemLanes, PlanShapes) {
  auto count = [](const fixed::Plan& p, int& x4, int& x1) {
    x4 = x1 = 0;
    for (int s = 0; s < p.num_steps; ++s) {
      int active = 0;
      for (const fixed::LaneOp& op : p.steps[s].lane) {
        active += op.kind == fixed::kHash || op.kind == fixed::kXof || op.kind == fixed::kPrf;
      }
      (active > 1 ? x4 : x1) += 1;
    }
  };
  int x4, x1;
  count(fixed::kKeyGenPlan<3>, x4, x1);
  EXPECT_EQ(x4, 10);
  EXPECT_EQ(x1, 4);  // the tail of H(ek) after the last row of t̂
  count(fixed::kKeyGenPlan<2>, x4, x1);
  EXPECT_EQ(x4, 6);
  EXPECT_EQ(x1, 4);
  count(fixed::kEncapsPlan<3>, x4, x1);
  EXPECT_EQ(x4, 11);
  EXPECT_EQ(x1, 1);  // G(m || H(ek))
  count(fixed::kEncryptPlan<3>, x4, x1);
  EXPECT_EQ(x4, 9);
  EXPECT_EQ(x1, 0);
  // The last PRF rides along the 13th x4 step.
  count(fixed::kDecapsPlan<3, true>, x4, x1);
  EXPECT_EQ(x4, 13);
  EXPECT_EQ(x1, 0);
  EXPECT_EQ((fixed::kDecapsPlan<3, true>.steps[12].rider.kind), fixed::kPrf);
  count(fixed::kEncryptPlan<4>, x4, x1);
  EXPECT_EQ(x4, 14);
  EXPECT_EQ(x1, 0);
}

}  // namespace
}  // namespace pqcd::kernels::mlkem
