// Multi-lane Keccak (x4 AVX2, x8 AVX-512, portable) against the single-state portable permutation:
// through the dispatching entry points, and every hook of every supported backend's table
// (keccak/backend.h) directly.
#include <gtest/gtest.h>

#include "common/test_support.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "keccak/backend.h"
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
  for (size_t n : {4u, 5u, 8u}) {
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

// The x8 and x4 hooks of every supported backend's table, called directly.
TEST(KeccakMulti, DirectBackendEntryPoints) {
  alignas(64) uint64_t st[25 * 8], ref[25 * 8];
  SeededRandom rng(uint64_t{9});
  rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(st), sizeof(st))).IgnoreError();
  std::memcpy(ref, st, sizeof(st));
  KeccakF1600xNPortable(ref, 8);
  for (Isa isa : SupportedIsas()) {
    const keccak::Backend& be = keccak::BackendFor(isa);
    alignas(64) uint64_t a[25 * 8];
    std::memcpy(a, st, sizeof(st));
    be.f1600x8(a);
    EXPECT_EQ(0, std::memcmp(a, ref, sizeof(a))) << IsaName(isa) << " f1600x8";
    std::memcpy(a, st, sizeof(st));
    be.f1600x4(a, 8, keccak::kAllLanes);
    be.f1600x4(a + 4, 8, keccak::kAllLanes);
    EXPECT_EQ(0, std::memcmp(a, ref, sizeof(a))) << IsaName(isa) << " f1600x4";
  }
}

// The single-state hook of every supported backend (on AVX2: the BMI build) against the portable
// permutation.
TEST(KeccakSingle, BackendSingleStateEqualsPortable) {
  for (Isa isa : SupportedIsas()) {
    const keccak::Backend& be = keccak::BackendFor(isa);
    if (be.f1600 == &KeccakF1600Portable) continue;
    SeededRandom rng(uint64_t{11});
    uint64_t a[25], b[25];
    for (int iter = 0; iter < 10000; ++iter) {
      rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(a), sizeof(a))).IgnoreError();
      if (iter == 0) std::memset(a, 0, sizeof(a));
      if (iter == 1) std::memset(a, 0xff, sizeof(a));
      std::memcpy(b, a, sizeof(a));
      KeccakF1600Portable(a);
      be.f1600(b);
      for (int i = 0; i < 25; ++i) {
        ASSERT_EQ(a[i], b[i]) << IsaName(isa) << " iteration " << iter << " lane " << i;
      }
    }
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
    for (size_t len :
         {size_t{0}, size_t{1}, size_t{33}, rate - 3, rate - 1, rate, rate + 1, 2 * rate + 5}) {
      for (size_t tail : {size_t{0}, size_t{2}, size_t{5}}) {
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
        // The rest in uneven pieces: squeezes that start and end inside a lane and a block.
        for (size_t piece : {size_t{1}, size_t{2}, size_t{8}, size_t{13}, rate - 17}) {
          multi.Squeeze(outp, piece);
          for (size_t j = 0; j < N; ++j) outp[j] += piece;
        }
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

// The fused x4 + x1 permutation equals the two run separately (zeros, ones, 10,000 random inputs),
// directly and through the dispatching KeccakF1600xNWithRider on every backend (n = 4 and 8).
TEST(KeccakRider, FusedPermutationEqualsSeparate) {
  SeededRandom rng(uint64_t{13});
  ScopedIsa guard;
  alignas(64) uint64_t st[25 * 8], ref[25 * 8];
  uint64_t one[25], one_ref[25];
  for (int iter = 0; iter < 10000; ++iter) {
    rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(st), sizeof(st))).IgnoreError();
    rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(one), sizeof(one))).IgnoreError();
    if (iter < 2) {
      std::memset(st, iter == 0 ? 0 : 0xff, sizeof(st));
      std::memset(one, iter == 0 ? 0 : 0xff, sizeof(one));
    }
    const size_t n = iter % 2 == 0 ? 4 : 8;
    std::memcpy(ref, st, sizeof(st));
    std::memcpy(one_ref, one, sizeof(one));
    KeccakF1600xNPortable(ref, n);
    KeccakF1600Portable(one_ref);
    if (n == 4) {
      for (Isa isa : SupportedIsas()) {  // the f1600x4x1 hook of every table, directly
        const keccak::Backend& be = keccak::BackendFor(isa);
        if (isa != Isa::kPortable && be.f1600x4x1 == keccak::kPortable.f1600x4x1) continue;
        alignas(64) uint64_t a[25 * 4];
        uint64_t b[25];
        std::memcpy(a, st, sizeof(a));
        std::memcpy(b, one, sizeof(b));
        be.f1600x4x1(a, 4, keccak::kAllLanes, b);
        ASSERT_EQ(0, std::memcmp(a, ref, sizeof(a)))
            << IsaName(isa) << " x4 part, iteration " << iter;
        ASSERT_EQ(0, std::memcmp(b, one_ref, sizeof(b)))
            << IsaName(isa) << " x1 part, iteration " << iter;
      }
    }
    if (iter % 50 != 0) continue;  // the dispatcher on every backend: a sample suffices
    for (Isa isa : SupportedIsas()) {
      ASSERT_TRUE(SetActiveIsa(isa).ok());
      alignas(64) uint64_t a[25 * 8];
      uint64_t b[25];
      std::memcpy(a, st, sizeof(a));
      std::memcpy(b, one, sizeof(b));
      KeccakF1600xNWithRider(a, n, b);
      ASSERT_EQ(0, std::memcmp(a, ref, 25 * n * 8)) << IsaName(isa) << " n=" << n;
      ASSERT_EQ(0, std::memcmp(b, one_ref, sizeof(b))) << IsaName(isa) << " n=" << n;
    }
  }
}

// An AbsorbRider gives the one-shot digest of first || second however many permutations it rode
// (none, some, more than it needed), and the lanes it rode with are unaffected.
TEST(KeccakRider, AbsorbRiderEqualsOneShot) {
  ScopedIsa guard;
  SeededRandom rng(uint64_t{17});
  struct Fn {
    size_t rate;
    uint8_t suffix;
    size_t out;
  };
  const Fn fns[] = {{136, 0x06, 32}, {136, 0x1f, 64}, {168, 0x1f, 300}, {72, 0x06, 64}};
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (const Fn& fn : fns) {
      for (size_t len : {size_t{0}, size_t{1}, fn.rate - 1, fn.rate, fn.rate + 1, 3 * fn.rate + 5,
                         size_t{1184}, size_t{1952}}) {
        std::vector<uint8_t> msg(len);
        rng.Generate(msg).IgnoreError();
        std::vector<uint8_t> want(fn.out);
        {
          KeccakSponge one(fn.rate, fn.suffix);
          one.Absorb(msg);
          one.Squeeze(want);
        }
        for (size_t split : {size_t{0}, std::min<size_t>(32, len), len}) {
          for (int rides : {0, 1, 3, 40}) {
            AbsorbRider rider(fn.rate, fn.suffix);
            rider.Begin(Bytes(msg.data(), split), Bytes(msg.data() + split, len - split));
            // Ride along a 4-lane SHAKE128 squeeze of `rides` blocks and check its lanes too.
            const uint8_t seed[4][34] = {{1}, {2}, {3}, {4}};
            const uint8_t* in[4] = {seed[0], seed[1], seed[2], seed[3]};
            std::vector<uint8_t> lanes(4 * 168 * (rides + 1)), alone(lanes.size());
            uint8_t* out[4];
            uint8_t* out_alone[4];
            for (size_t j = 0; j < 4; ++j) {
              out[j] = lanes.data() + j * 168 * (rides + 1);
              out_alone[j] = alone.data() + j * 168 * (rides + 1);
            }
            KeccakMulti<4> multi(168, 0x1f);
            multi.SetRider(&rider);
            multi.AbsorbOnce(in, 34);  // one permutation
            multi.SqueezeBlocks(out, static_cast<size_t>(rides) + 1);
            KeccakMulti<4> plain(168, 0x1f);
            plain.AbsorbOnce(in, 34);
            plain.SqueezeBlocks(out_alone, static_cast<size_t>(rides) + 1);
            ASSERT_EQ(lanes, alone) << IsaName(isa) << " rate=" << fn.rate << " len=" << len;
            std::vector<uint8_t> got(fn.out);
            rider.Finish(got);
            ASSERT_EQ(got, want) << IsaName(isa) << " rate=" << fn.rate << " len=" << len
                                 << " split=" << split << " rides=" << rides;
          }
        }
      }
    }
  }
}

void CheckExtractLanes4(const keccak::Backend& be);

// Every supported backend's squeeze transpose (extract_lanes4; AVX2: 4x4 transposes) equals
// word-by-word extraction for every stride and length used, and writes nothing past `words`.
TEST(KeccakMulti, ExtractLanes4EqualsScalar) {
  for (Isa isa : SupportedIsas()) {
    SCOPED_TRACE(IsaName(isa));
    CheckExtractLanes4(keccak::BackendFor(isa));
  }
}

void CheckExtractLanes4(const keccak::Backend& be) {
  SeededRandom rng(uint64_t{19});
  alignas(64) uint64_t st[25 * 8];
  for (size_t stride : {size_t{4}, size_t{5}, size_t{8}}) {
    for (size_t words = 0; words <= 25; ++words) {
      rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(st), sizeof(st))).IgnoreError();
      uint8_t got[4][208], want[4][208];
      std::memset(got, 0xee, sizeof(got));
      std::memset(want, 0xee, sizeof(want));
      uint8_t* const out[4] = {got[0], got[1], got[2], got[3]};
      be.extract_lanes4(st, stride, words, out);
      for (size_t j = 0; j < 4; ++j) {
        for (size_t w = 0; w < words; ++w) std::memcpy(want[j] + 8 * w, &st[w * stride + j], 8);
        for (size_t k = 0; k < sizeof(got[j]); ++k) {
          ASSERT_EQ(got[j][k], want[j][k]) << "stride " << stride << " words " << words << " lane "
                                           << j << " first difference at byte " << k;
        }
      }
    }
  }
}

// Null lanes: a null input absorbs the empty-but-padded message of zeros, a null output is skipped,
// and the other lanes are unaffected.
TEST(KeccakMulti, NullLanes) {
  ScopedIsa guard;
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    const std::vector<uint8_t> msg(40, 0xa5), zeros(40, 0);
    const uint8_t* in[4] = {msg.data(), nullptr, msg.data(), nullptr};
    std::vector<uint8_t> out0(200), out2(200), out3(200);
    uint8_t* out[4] = {out0.data(), nullptr, out2.data(), out3.data()};
    KeccakMulti<4> multi(168, 0x1f);
    multi.AbsorbOnce(in, msg.size());
    multi.Squeeze(out, 200);
    std::vector<uint8_t> want(200), want_zero(200);
    Shake128Digest(msg, want);
    Shake128Digest(zeros, want_zero);
    EXPECT_EQ(out0, want) << IsaName(isa);
    EXPECT_EQ(out2, want) << IsaName(isa);
    EXPECT_EQ(out3, want_zero) << IsaName(isa);
  }
}

TEST(KeccakMulti, SpongeEqualsSingle) {
  CheckSponge<4>(168, 0x1f);
  CheckSponge<4>(136, 0x1f);
  CheckSponge<5>(168, 0x1f);
  CheckSponge<5>(136, 0x1f);
  CheckSponge<8>(168, 0x1f);
  CheckSponge<8>(136, 0x06);
  CheckSponge<8>(72, 0x06);
}

}  // namespace
}  // namespace pqcd::kernels
