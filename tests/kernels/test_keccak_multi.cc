// Multi-lane Keccak (x4 AVX2, x8 AVX-512, portable) against the single-state portable permutation.
#include <gtest/gtest.h>

#include "common/test_support.h"

#include <cstring>
#include <vector>

#include "keccak/keccak_multi.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

using pqcd::testing::ScopedIsa;
using pqcd::testing::SupportedIsas;

// Permutes n interleaved random states with every backend and compares with n single permutations.
void CheckPermutation(size_t n, const uint64_t* seed_state) {
  std::vector<uint64_t> expect(25 * n);
  for (size_t j = 0; j < n; ++j) {
    uint64_t one[25];
    for (size_t i = 0; i < 25; ++i) one[i] = seed_state[i * n + j];
    KeccakF1600Portable(one);
    for (size_t i = 0; i < 25; ++i) expect[i * n + j] = one[i];
  }
  ScopedIsa guard;
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    alignas(64) uint64_t st[25 * 8];
    std::memcpy(st, seed_state, 25 * n * sizeof(uint64_t));
    KeccakF1600xN(st, n);
    for (size_t k = 0; k < 25 * n; ++k) {
      ASSERT_EQ(st[k], expect[k]) << "backend " << IsaName(isa) << " n=" << n << " first difference"
                                  << " at lane " << k / n << " state " << k % n;
    }
  }
}

TEST(KeccakMulti, PermutationEqualsPortableOnEdgeAndRandomStates) {
  for (size_t n : {4u, 8u}) {
    std::vector<uint64_t> st(25 * n, 0);
    CheckPermutation(n, st.data());  // all zeros
    std::fill(st.begin(), st.end(), ~uint64_t{0});
    CheckPermutation(n, st.data());  // all ones
    SeededRandom rng(uint64_t{7});
    for (int iter = 0; iter < 2000; ++iter) {
      rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(st.data()), st.size() * 8)).IgnoreError();
      CheckPermutation(n, st.data());
    }
  }
}

TEST(KeccakMulti, DirectBackendEntryPoints) {
  alignas(64) uint64_t st[25 * 8], ref[25 * 8];
  SeededRandom rng(uint64_t{9});
  rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(st), sizeof(st))).IgnoreError();
  std::memcpy(ref, st, sizeof(st));
  KeccakF1600xNPortable(ref, 8);
  if (IsaSupported(Isa::kAvx512)) {
    uint64_t a[25 * 8];
    std::memcpy(a, st, sizeof(st));
    KeccakF1600x8Avx512(a);
    EXPECT_EQ(0, std::memcmp(a, ref, sizeof(a)));
    std::memcpy(a, st, sizeof(st));
    KeccakF1600x4Avx512(a, 8);
    KeccakF1600x4Avx512(a + 4, 8);
    EXPECT_EQ(0, std::memcmp(a, ref, sizeof(a)));
  }
  if (IsaSupported(Isa::kAvx2)) {
    uint64_t a[25 * 8];
    std::memcpy(a, st, sizeof(st));
    KeccakF1600x4Avx2(a, 8);
    KeccakF1600x4Avx2(a + 4, 8);
    EXPECT_EQ(0, std::memcmp(a, ref, sizeof(a)));
  }
}

TEST(KeccakSingle, BmiBuildEqualsPortable) {
  if (!IsaSupported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2/BMI on this CPU";
  SeededRandom rng(uint64_t{11});
  uint64_t a[25], b[25];
  for (int iter = 0; iter < 10000; ++iter) {
    rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(a), sizeof(a))).IgnoreError();
    if (iter == 0) std::memset(a, 0, sizeof(a));
    if (iter == 1) std::memset(a, 0xff, sizeof(a));
    std::memcpy(b, a, sizeof(a));
    KeccakF1600Portable(a);
    KeccakF1600Bmi(b);
    for (int i = 0; i < 25; ++i) ASSERT_EQ(a[i], b[i]) << "iteration " << iter << " lane " << i;
  }
}

// SHAKE128/256 and SHA3-256 through KeccakMulti equal the single sponge for lengths around the
// rate.
template <size_t N>
void CheckSponge(size_t rate, uint8_t suffix) {
  ScopedIsa guard;
  SeededRandom rng(uint64_t{rate * 31 + suffix});
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (size_t len : {size_t{0}, size_t{1}, size_t{33}, rate - 1, rate, rate + 1, 2 * rate + 5}) {
      for (size_t tail : {size_t{0}, size_t{2}}) {
        std::vector<std::vector<uint8_t>> in(N, std::vector<uint8_t>(len + 1)),
            tl(N, std::vector<uint8_t>(tail + 1)), out(N, std::vector<uint8_t>(3 * rate + 7));
        const uint8_t* inp[N];
        const uint8_t* tailp[N];
        uint8_t* outp[N];
        for (size_t j = 0; j < N; ++j) {
          rng.Generate(in[j]).IgnoreError();
          rng.Generate(tl[j]).IgnoreError();
          inp[j] = in[j].data();
          tailp[j] = tl[j].data();
          outp[j] = out[j].data();
        }
        KeccakMulti<N> multi(rate, suffix);
        multi.AbsorbOnce2(inp, len, tailp, tail);
        multi.SqueezeBlocks(outp, 2);
        for (size_t j = 0; j < N; ++j) outp[j] += 2 * rate;
        multi.Squeeze(outp, rate + 7);
        for (size_t j = 0; j < N; ++j) {
          KeccakSponge one(rate, suffix);
          one.Absorb(Bytes(in[j].data(), len));
          one.Absorb(Bytes(tl[j].data(), tail));
          std::vector<uint8_t> want(out[j].size());
          one.Squeeze(want);
          ASSERT_EQ(out[j], want) << IsaName(isa) << " N=" << N << " rate=" << rate
                                  << " len=" << len << " tail=" << tail << " lane=" << j;
        }
      }
    }
  }
}

TEST(KeccakMulti, SpongeEqualsSingle) {
  CheckSponge<4>(168, 0x1f);
  CheckSponge<4>(136, 0x1f);
  CheckSponge<8>(168, 0x1f);
  CheckSponge<8>(136, 0x06);
  CheckSponge<8>(72, 0x06);
}

}  // namespace
}  // namespace pqcd::kernels
