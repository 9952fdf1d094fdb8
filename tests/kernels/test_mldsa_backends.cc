// Differential tests over every non-portable ML-DSA table of this architecture (AVX2 and AVX-512
// on x86-64, NEON on aarch64; mldsa/backend.h, BackendFor(isa)): the NTTs, pointwise products,
// coefficient-wise and rounding hooks (power2round, decompose, hints, exceeds_norm) are run against
// the portable kernel on edge inputs (zeros, the extremes of the documented input bounds,
// alternations) and 10,000 random inputs (1,000 under PQCD_TEST_QUICK). Results must be
// bit-identical; a failure names the ISA, the input and the first differing index. A hook left at
// the portable default, and an ISA the CPU lacks, is skipped. (test_mldsa_avx2.cc covers the other
// AVX2 hooks.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "common/test_support.h"
#include "mldsa/backend.h"
#include "pqcd/kernels/isa.h"

namespace pqcd::kernels::mldsa {
namespace {

class MlDsaBackends : public ::testing::TestWithParam<Isa> {
 public:
  void SetUp() override {
    if (!IsaSupported(GetParam())) GTEST_SKIP() << IsaName(GetParam()) << " not supported here";
    if (&BackendFor(GetParam()) == &kPortable) {
      GTEST_SKIP() << IsaName(GetParam()) << " has no ML-DSA table";
    }
  }
  const Backend& Simd() const { return BackendFor(GetParam()); }
  int Inputs() const { return kEdges + pqcd::testing::Iterations(10000, 1000); }
  static constexpr int kEdges = 5;

  // Input n: an edge polynomial for n < 5, else random, with coefficients in [lo, hi].
  Poly Input(int n, int32_t lo, int32_t hi) {
    Poly p;
    std::uniform_int_distribution<int32_t> d(lo, hi);
    for (int i = 0; i < kN; ++i) {
      const int32_t e[5] = {0, hi, lo, i % 2 ? hi : lo, i % 3 == 0 ? hi : i % 3 == 1 ? lo : 0};
      p.coeffs[i] = n < kEdges ? e[n] : d(rng_);
    }
    return p;
  }

  bool Same(const Poly& want, const Poly& got, const std::string& what, int input) {
    for (int i = 0; i < kN; ++i) {
      if (want.coeffs[i] != got.coeffs[i]) {
        ADD_FAILURE() << IsaName(GetParam()) << " " << what << ": input #" << input
                      << " first difference at index " << i << ": portable " << want.coeffs[i]
                      << ", simd " << got.coeffs[i];
        return false;
      }
    }
    return true;
  }

  void CheckUnary(const char* what, int32_t lo, int32_t hi, void (*ref)(Poly&),
                  void (*simd)(Poly&)) {
    if (simd == ref) return;
    for (int n = 0; n < Inputs(); ++n) {
      const Poly in = Input(n, lo, hi);
      Poly a = in, b = in;
      ref(a);
      simd(b);
      if (!Same(a, b, what, n)) return;
    }
  }

  std::mt19937_64 rng_{0x6d6c64736e};
};

TEST_P(MlDsaBackends, NttAndInverse) {
  CheckUnary("ntt", -(kQ - 1), kQ - 1, portable::Ntt, Simd().ntt);
  CheckUnary("invntt_to_mont", -kQ, kQ, portable::InvNttToMont, Simd().invntt_to_mont);
}

TEST_P(MlDsaBackends, Reductions) {
  CheckUnary("reduce32", INT32_MIN, INT32_MAX - (1 << 22), portable::Reduce32, Simd().reduce32);
  CheckUnary("caddq", -(kQ - 1), kQ - 1, portable::CAddQ, Simd().caddq);
  CheckUnary("shift_left_d", 0, (1 << 10) - 1, portable::ShiftLeftD, Simd().shift_left_d);
}

TEST_P(MlDsaBackends, AddSub) {
  for (int n = 0; n < Inputs(); ++n) {
    const Poly a = Input(n, -(1 << 30), (1 << 30) - 1), b = Input(n, -(1 << 30), (1 << 30) - 1);
    Poly want, got;
    portable::Add(want, a, b);
    Simd().add(got, a, b);
    ASSERT_TRUE(Same(want, got, "add", n));
    portable::Sub(want, a, b);
    Simd().sub(got, a, b);
    ASSERT_TRUE(Same(want, got, "sub", n));
    got = a;  // c aliasing a
    Simd().add(got, got, b);
    portable::Add(want, a, b);
    ASSERT_TRUE(Same(want, got, "add (aliased)", n));
  }
}

TEST_P(MlDsaBackends, PointwiseProducts) {
  // Pointwise: |a_i b_i| < 2^31 q, e.g. |a| < q and |b| < 2^31.
  // Accumulated: n products with Σ|a b| < 2^31 q: |a| < q, |b| <= 2^31 / 8.
  const int32_t q = kQ - 1, big = (1 << 28);
  for (int n = 0; n < Inputs(); ++n) {
    const Poly a = Input(n, -q, q),
               b = Input(n < kEdges ? (n + 1) % kEdges : n, INT32_MIN + 1, INT32_MAX);
    Poly want, got;
    portable::PointwiseMontgomery(want, a, b);
    Simd().pointwise_montgomery(got, a, b);
    ASSERT_TRUE(Same(want, got, "pointwise_montgomery", n));
    got = a;  // c aliasing a
    Simd().pointwise_montgomery(got, got, b);
    ASSERT_TRUE(Same(want, got, "pointwise_montgomery (aliased)", n));

    Poly va[8], vb[8];
    for (int j = 0; j < 8; ++j) {
      va[j] = Input(n < kEdges ? (n + j) % kEdges : n, -q, q);
      vb[j] = Input(n < kEdges ? (n + 2 * j) % kEdges : n, -big, big - 1);
    }
    const int k = 1 + n % 8;
    portable::PointwiseAccMontgomery(want, va, vb, k);
    Simd().pointwise_acc_montgomery(got, va, vb, k);
    ASSERT_TRUE(Same(want, got, "pointwise_acc_montgomery n=" + std::to_string(k), n));
    const int k7 = 1 + n % 7;
    portable::PointwiseAccSubMontgomery(want, va, vb, k7, va[7], vb[7]);
    Simd().pointwise_acc_sub_montgomery(got, va, vb, k7, va[7], vb[7]);
    ASSERT_TRUE(Same(want, got, "pointwise_acc_sub_montgomery n=" + std::to_string(k7), n));
  }
}

TEST_P(MlDsaBackends, Rounding) {
  const Backend& s = Simd();
  constexpr int32_t kSmall = (kQ - 1) / 88, kLarge = (kQ - 1) / 32;
  for (int n = 0; n < kEdges + 1 + Inputs(); ++n) {
    // Standard inputs; input kEdges: the corner region near q - 1 and multiples of alpha.
    Poly r = Input(n, 0, kQ - 1);
    if (n == kEdges) {
      for (int i = 0; i < kN; ++i) r.coeffs[i] = i < 128 ? kQ - 1 - i : (i - 128) * kSmall;
    }
    Poly w1, w0, g1, g0;
    portable::Power2Round(w1, w0, r);
    s.power2round(g1, g0, r);
    ASSERT_TRUE(Same(w1, g1, "power2round t1", n) && Same(w0, g0, "power2round t0", n));
    portable::DecomposeSmall(w1, w0, r);
    s.decompose_small(g1, g0, r);
    ASSERT_TRUE(Same(w1, g1, "decompose_small r1", n) && Same(w0, g0, "decompose_small r0", n));
    Poly l1, l0;
    portable::DecomposeLarge(l1, l0, r);
    s.decompose_large(g1, g0, r);
    ASSERT_TRUE(Same(l1, g1, "decompose_large r1", n) && Same(l0, g0, "decompose_large r0", n));

    // Hints: a0 around +-gamma2 (and anywhere below 2^30), a1 from the decomposition.
    Poly hint = Input(n, 0, 1), a0s = Input(n, -2 * kSmall, 2 * kSmall),
         a0l = Input(n, -2 * kLarge, 2 * kLarge);
    if (n % 3 == 2) {
      for (int i = 0; i < kN; ++i) {
        a0s.coeffs[i] = (i % 4 - 2) + (i % 2 ? kSmall : -kSmall);
        a0l.coeffs[i] = (i % 4 - 2) + (i % 2 ? kLarge : -kLarge);
      }
    }
    Poly hw, hg;
    unsigned cw = portable::MakeHintSmall(hw, a0s, w1), cg = s.make_hint_small(hg, a0s, w1);
    ASSERT_TRUE(Same(hw, hg, "make_hint_small", n));
    ASSERT_EQ(cw, cg) << "make_hint_small count #" << n;
    cw = portable::MakeHintLarge(hw, a0l, l1);
    cg = s.make_hint_large(hg, a0l, l1);
    ASSERT_TRUE(Same(hw, hg, "make_hint_large", n));
    ASSERT_EQ(cw, cg) << "make_hint_large count #" << n;
    portable::UseHintSmall(hw, r, hint);
    s.use_hint_small(hg, r, hint);
    ASSERT_TRUE(Same(hw, hg, "use_hint_small", n));
    portable::UseHintLarge(hw, r, hint);
    s.use_hint_large(hg, r, hint);
    ASSERT_TRUE(Same(hw, hg, "use_hint_large", n));
    hg = r;  // out aliasing r
    s.use_hint_large(hg, hg, hint);
    ASSERT_TRUE(Same(hw, hg, "use_hint_large (aliased)", n));

    // Norm checks: coefficients near the bound, both signs.
    const int32_t bound =
        n < kEdges ? (1 << 17) - 78 : 1 + static_cast<int32_t>(rng_() % (1u << 29));
    Poly z = Input(n, -bound - 2, bound + 2);
    for (int i = 0; i < kN && n % 2; ++i) {
      z.coeffs[i] = std::max(-bound + 1, std::min(bound - 1, z.coeffs[i]));
    }
    ASSERT_EQ(portable::ExceedsNorm(z, bound), s.exceeds_norm(z, bound)) << "exceeds_norm #" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(AllSimd, MlDsaBackends,
                         ::testing::Values(Isa::kAvx2, Isa::kAvx512, Isa::kNeon),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(IsaName(info.param));
                         });

}  // namespace
}  // namespace pqcd::kernels::mldsa
