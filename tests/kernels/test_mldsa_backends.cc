// Differential tests over every non-portable ML-DSA table of this architecture (AVX2 and AVX-512
// on x86-64, NEON on aarch64; mldsa/backend.h, BackendFor(isa)): the NTTs, pointwise products,
// coefficient-wise and rounding hooks (power2round, decompose, hints, exceeds_norm), split_low9
// (_add_norm), every packing and unpacking hook, the fused rounding + packing passes and
// the sampling hooks (reject_uniform, reject_eta2/4, sample_in_ball_steps/expand) are run against
// the portable kernel on edge inputs (zeros, the extremes of the documented input bounds,
// alternations, all-0x00/0xff bytes) and 10,000 random inputs (1,000 under PQCD_TEST_QUICK).
// Results must be bit-identical; a failure names the ISA, the input and the first differing
// index. A hook left at the portable default, and an ISA the CPU lacks, is skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "mldsa/backend.h"
#include "pqcd/kernels/isa.h"

#if defined(__x86_64__)
#include "arch/x86_64/avx2/mldsa/mldsa_avx2.h"
#include "arch/x86_64/avx512/mldsa/mldsa_avx512.h"
#elif defined(__aarch64__)
#include "arch/aarch64/neon/mldsa/mldsa_neon.h"
#endif

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

TEST_P(MlDsaBackends, SplitLow9) {
  const Backend& s = Simd();
  const int32_t bounds[] = {(1 << 19) - 196, (1 << 17) - 78, 1, (1 << 30) - 1, 300};
  for (int n = 0; n < Inputs(); ++n) {
    // split_low9: |v| < 2^30, and the signer's range |v| <= 513 * 196.
    const int32_t vmax = n % 2 ? (1 << 30) - 1 : 513 * 196;
    const Poly v = Input(n, -vmax, vmax);
    Poly wl, wh, gl, gh;
    if (s.split_low9 != &portable::SplitLow9) {
      portable::SplitLow9(wl, wh, v);
      s.split_low9(gl, gh, v);
      ASSERT_TRUE(Same(wl, gl, "split_low9 lo", n) && Same(wh, gh, "split_low9 hi", n));
      gl = v;  // lo aliasing v
      s.split_low9(gl, gh, gl);
      ASSERT_TRUE(Same(wl, gl, "split_low9 lo (aliased)", n));
    }
    // split_low9_add_norm: |v| < q, |y| <= 2^20, bound in (0, 2^30).
    if (s.split_low9_add_norm != &portable::SplitLow9AddNorm) {
      const Poly x = Input(n, n % 3 ? -(kQ - 1) : -513 * 196, n % 3 ? kQ - 1 : 513 * 196);
      const Poly y = Input(n < kEdges ? (n + 2) % kEdges : n, -(1 << 20), 1 << 20);
      const int32_t bound =
          n < kEdges ? bounds[n] : 1 + static_cast<int32_t>(rng_() % ((1u << 30) - 1));
      const uint32_t want = portable::SplitLow9AddNorm(wl, wh, x, y, bound);
      const uint32_t got = s.split_low9_add_norm(gl, gh, x, y, bound);
      ASSERT_TRUE(Same(wl, gl, "split_low9_add_norm lo", n) &&
                  Same(wh, gh, "split_low9_add_norm hi", n));
      ASSERT_EQ(want, got) << "split_low9_add_norm result #" << n << " bound " << bound;
      gl = x;  // lo aliasing v
      ASSERT_EQ(want, s.split_low9_add_norm(gl, gh, gl, y, bound)) << "aliased #" << n;
      ASSERT_TRUE(Same(wl, gl, "split_low9_add_norm lo (aliased)", n));
    }
  }
}

// Bit packing: every packer on edge and random polynomials inside its input range (bytes compared,
// nothing written past the encoding), every unpacker on edge (all 0x00, all 0xff, 0x55, 0xaa) and
// random byte strings of the exact encoding size (every bit pattern; the eta unpackers' malformed
// flag compared too).
TEST_P(MlDsaBackends, Packing) {
  const Backend& s = Simd();
  using PackFn = void (*)(uint8_t*, const Poly&);
  struct PackCase {
    const char* name;
    int32_t lo, hi;
    size_t bytes;
    PackFn ref, simd;
  };
  const PackCase packs[] = {
      {"pack_t1", 0, 1023, 320, portable::PackT1, s.pack_t1},
      {"pack_t0", -4095, 4096, 416, portable::PackT0, s.pack_t0},
      {"pack_eta2", -2, 2, 96, portable::PackEta2, s.pack_eta2},
      {"pack_eta4", -4, 4, 128, portable::PackEta4, s.pack_eta4},
      {"pack_z17", -(1 << 17) + 1, 1 << 17, 576, portable::PackZ17, s.pack_z17},
      {"pack_z19", -(1 << 19) + 1, 1 << 19, 640, portable::PackZ19, s.pack_z19},
      {"pack_w1_small", 0, 43, 192, portable::PackW1Small, s.pack_w1_small},
      {"pack_w1_large", 0, 15, 128, portable::PackW1Large, s.pack_w1_large},
  };
  for (const PackCase& c : packs) {
    if (c.simd == c.ref) continue;
    for (int n = 0; n < Inputs(); ++n) {
      const Poly in = Input(n, c.lo, c.hi);
      std::vector<uint8_t> want(c.bytes + 16, 0x5a), got(c.bytes + 16, 0xa5);
      c.ref(want.data(), in);
      c.simd(got.data(), in);
      for (size_t i = c.bytes; i < c.bytes + 16; ++i) {
        ASSERT_EQ(got[i], 0xa5) << IsaName(GetParam()) << " " << c.name
                                << " wrote past the encoding, input #" << n;
      }
      got.resize(c.bytes);
      want.resize(c.bytes);
      ASSERT_EQ(want, got) << IsaName(GetParam()) << " " << c.name << " input #" << n;
    }
  }

  using UnpackFn = void (*)(Poly&, const uint8_t*);
  struct UnpackCase {
    const char* name;
    size_t bytes;
    UnpackFn ref, simd;
  };
  const UnpackCase unpacks[] = {
      {"unpack_t1", 320, portable::UnpackT1, s.unpack_t1},
      {"unpack_t1_shifted", 320, portable::UnpackT1Shifted, s.unpack_t1_shifted},
      {"unpack_t0", 416, portable::UnpackT0, s.unpack_t0},
      {"unpack_z17", 576, portable::UnpackZ17, s.unpack_z17},
      {"unpack_z19", 640, portable::UnpackZ19, s.unpack_z19},
  };
  const uint8_t edge[4] = {0x00, 0xff, 0x55, 0xaa};
  for (int n = 0; n < Inputs(); ++n) {
    std::vector<uint8_t> bytes(640);
    for (auto& b : bytes) b = n < 4 ? edge[n] : static_cast<uint8_t>(rng_());
    for (const UnpackCase& c : unpacks) {
      if (c.simd == c.ref) continue;
      const std::vector<uint8_t> in(bytes.begin(), bytes.begin() + c.bytes);  // exact size
      Poly want, got;
      c.ref(want, in.data());
      c.simd(got, in.data());
      ASSERT_TRUE(Same(want, got, c.name, n));
    }
    // Eta: random fields (many above 2 eta) or valid ones only.
    std::vector<uint8_t> e2(bytes.begin(), bytes.begin() + 96),
        e4(bytes.begin(), bytes.begin() + 128);
    if (n >= kEdges && n % 2) {
      for (auto& b : e4) b = static_cast<uint8_t>((b & 15) % 9 | ((b >> 4) % 9) << 4);
      for (size_t i = 0; i + 3 <= e2.size(); i += 3) {
        uint32_t w = 0;
        for (int k = 0; k < 8; ++k) w |= static_cast<uint32_t>(rng_() % 5) << (3 * k);
        e2[i] = static_cast<uint8_t>(w);
        e2[i + 1] = static_cast<uint8_t>(w >> 8);
        e2[i + 2] = static_cast<uint8_t>(w >> 16);
      }
    }
    Poly want, got;
    if (s.unpack_eta2 != &portable::UnpackEta2) {
      const uint32_t bw = portable::UnpackEta2(want, e2.data()), bg = s.unpack_eta2(got, e2.data());
      ASSERT_TRUE(Same(want, got, "unpack_eta2", n));
      ASSERT_EQ(bw, bg) << "unpack_eta2 flag #" << n;
    }
    if (s.unpack_eta4 != &portable::UnpackEta4) {
      const uint32_t bw = portable::UnpackEta4(want, e4.data()), bg = s.unpack_eta4(got, e4.data());
      ASSERT_TRUE(Same(want, got, "unpack_eta4", n));
      ASSERT_EQ(bw, bg) << "unpack_eta4 flag #" << n;
    }
  }
}

// The fused rounding + packing passes against the portable ones (bytes and polynomials, with the
// documented aliasing).
TEST_P(MlDsaBackends, FusedPacking) {
  const Backend& s = Simd();
  for (int n = 0; n < Inputs(); ++n) {
    const Poly r = Input(n, -(kQ - 1), kQ - 1);
    if (s.power2round_pack_t1 != &portable::Power2RoundPackT1) {
      // |r + s| <= 2^31 - 2^22 - 1: r anywhere in that range, s small (key generation: |s| <= 4).
      const Poly big = Input(n, -(1 << 30), (1 << 30) - 1);
      const Poly e = Input(n < kEdges ? (n + 1) % kEdges : n, -4, 4);
      uint8_t want[320], got[320 + 16];
      std::memset(got, 0xa5, sizeof(got));
      Poly w0, g0;
      portable::Power2RoundPackT1(want, w0, n % 2 ? big : r, e);
      s.power2round_pack_t1(got, g0, n % 2 ? big : r, e);
      ASSERT_EQ(std::memcmp(want, got, 320), 0) << "power2round_pack_t1 bytes #" << n;
      ASSERT_TRUE(std::all_of(got + 320, got + sizeof(got), [](uint8_t b) { return b == 0xa5; }));
      ASSERT_TRUE(Same(w0, g0, "power2round_pack_t1 t0", n));
      g0 = r;  // t0 aliasing r
      s.power2round_pack_t1(got, g0, g0, e);
      portable::Power2RoundPackT1(want, w0, r, e);
      ASSERT_EQ(std::memcmp(want, got, 320), 0) << "power2round_pack_t1 (aliased) #" << n;
      ASSERT_TRUE(Same(w0, g0, "power2round_pack_t1 t0 (aliased)", n));
    }
    using DecFn = void (*)(uint8_t*, Poly&, Poly&, const Poly&);
    using UseFn = void (*)(uint8_t*, const Poly&, const Poly&);
    struct W1Case {
      const char* name;
      size_t bytes;
      DecFn dref, dsimd;
      UseFn uref, usimd;
    };
    const W1Case w1s[] = {
        {"small", 192, portable::DecomposePackW1Small, s.decompose_pack_w1_small,
         portable::UseHintPackW1Small, s.use_hint_pack_w1_small},
        {"large", 128, portable::DecomposePackW1Large, s.decompose_pack_w1_large,
         portable::UseHintPackW1Large, s.use_hint_pack_w1_large},
    };
    const Poly h = Input(n < kEdges ? (n + 3) % kEdges : n, 0, 1);
    for (const W1Case& c : w1s) {
      std::vector<uint8_t> want(c.bytes + 16, 0x5a), got(c.bytes + 16, 0x5a);
      if (c.dsimd != c.dref) {
        Poly w1, w0, g1, g0;
        c.dref(want.data(), w1, w0, r);
        c.dsimd(got.data(), g1, g0, r);
        ASSERT_EQ(want, got) << "decompose_pack_w1_" << c.name << " bytes #" << n;
        ASSERT_TRUE(Same(w1, g1, "decompose_pack_w1 r1", n) &&
                    Same(w0, g0, "decompose_pack_w1 r0", n));
        g1 = r;  // r1 aliasing r, then r0 aliasing r
        c.dsimd(got.data(), g1, g0, g1);
        ASSERT_EQ(want, got) << "decompose_pack_w1_" << c.name << " (r1 aliased) #" << n;
        ASSERT_TRUE(Same(w1, g1, "decompose_pack_w1 r1 (aliased)", n) &&
                    Same(w0, g0, "decompose_pack_w1 r0 (r1 aliased)", n));
        g0 = r;
        c.dsimd(got.data(), g1, g0, g0);
        ASSERT_TRUE(Same(w1, g1, "decompose_pack_w1 r1 (r0 aliased)", n) &&
                    Same(w0, g0, "decompose_pack_w1 r0 (aliased)", n));
      }
      if (c.usimd != c.uref) {
        c.uref(want.data(), r, h);
        c.usimd(got.data(), r, h);
        ASSERT_EQ(want, got) << "use_hint_pack_w1_" << c.name << " #" << n;
      }
    }
  }
}

// reject_uniform against the portable loop: any start count (0..256), any length (not only whole
// triples, up to 5 SHAKE128 blocks), few or many rejections (third bytes 0x7f/0xff with high
// second bytes are mostly above q). Compares the count and a[0..count) and checks that nothing is
// written past a[256].
TEST_P(MlDsaBackends, RejectUniform) {
  const Backend& s = Simd();
  if (s.reject_uniform == &portable::RejectUniform) return;
  for (int n = 0; n < Inputs(); ++n) {
    uint8_t buf[840];
    const int mode = n % 3;
    for (size_t i = 0; i < sizeof(buf); ++i) {
      const uint8_t r = static_cast<uint8_t>(rng_());
      if (n < kEdges) {
        const uint8_t e[kEdges] = {0x00, 0xff, 0x7f, 0xe0, 0x01};
        buf[i] = e[n];
      } else if (mode == 0) {
        buf[i] = r;
      } else if (i % 3 == 2) {
        buf[i] = static_cast<uint8_t>(0x7f | (r & 0x80));
      } else if (i % 3 == 1) {
        buf[i] = static_cast<uint8_t>(mode == 1 ? 0xe0 | r : 0xdf + (r & 1));
      } else {
        buf[i] = mode == 2 ? static_cast<uint8_t>(r & 3) : r;  // around q - 1 = 0x7fe000
      }
    }
    const size_t len = n < kEdges ? sizeof(buf) : rng_() % (sizeof(buf) + 1);
    const int start = n < kEdges   ? 0
                      : n % 4 == 0 ? static_cast<int>(rng_() % (kN + 1))
                                   : static_cast<int>(rng_() % 64);
    int32_t want[kN + 8], got[kN + 8];
    std::fill(want, want + kN + 8, -1);
    std::fill(got, got + kN + 8, -1);
    const int cw = portable::RejectUniform(want, start, buf, len);
    const int cg = s.reject_uniform(got, start, buf, len);
    ASSERT_EQ(cw, cg) << IsaName(GetParam()) << " reject_uniform count, input #" << n << " len "
                      << len << " start " << start;
    for (int i = start; i < cw; ++i) {
      ASSERT_EQ(want[i], got[i]) << "reject_uniform input #" << n << " index " << i;
    }
    for (int i = kN; i < kN + 8; ++i) ASSERT_EQ(got[i], -1) << "write past a[256], input #" << n;
  }
}

// reject_eta2/4 against the portable loop: start counts up to 256 (the vector stores meet the end
// of the polynomial), any length up to 600 bytes (chunks of 256 bytes and remainders that are not
// whole 8-byte units), random bytes, half-bytes at the accept bounds (8, 9, 14, 15) and runs of
// rejected ones. Compares the count and a[start..count) (a[count..256) is scratch) and checks
// that nothing is written past a[256].
TEST_P(MlDsaBackends, RejectEta) {
  const Backend& s = Simd();
  using RejectFn = int (*)(int32_t*, int, const uint8_t*, size_t);
  const struct {
    const char* name;
    RejectFn ref, simd;
  } cases[] = {{"reject_eta2", portable::RejectEta2, s.reject_eta2},
               {"reject_eta4", portable::RejectEta4, s.reject_eta4}};
  const uint8_t edge_bytes[kEdges] = {0x00, 0xff, 0x0f, 0x88, 0x99};
  for (const auto& c : cases) {
    if (c.simd == c.ref) continue;
    for (int n = 0; n < Inputs(); ++n) {
      uint8_t buf[600];
      const int mode = n % 3;
      for (size_t i = 0; i < sizeof(buf); ++i) {
        const uint64_t r = rng_();
        if (n < kEdges) {
          buf[i] = (n == 2 && i % 2) ? 0xf0 : edge_bytes[n];
        } else if (mode == 0) {
          buf[i] = static_cast<uint8_t>(r);
        } else {  // half-bytes near the bounds or rejected
          static constexpr uint8_t kNear[4] = {8, 9, 14, 15};
          buf[i] = static_cast<uint8_t>(kNear[r & 3] | kNear[(r >> 2) & 3] << 4);
          if (mode == 2 && (r >> 8) % 4 == 0) buf[i] = static_cast<uint8_t>(r >> 16);
        }
      }
      const size_t len = n < kEdges ? sizeof(buf) - n : rng_() % (sizeof(buf) + 1);
      const int start = n % 4 == 0 ? static_cast<int>(rng_() % (kN + 1))
                                   : kN - 1 - static_cast<int>(rng_() % 200);
      int32_t want[kN + 8], got[kN + 8];
      std::fill(want, want + kN + 8, -7);
      std::fill(got, got + kN + 8, -7);
      const int cw = c.ref(want, start, buf, len);
      const int cg = c.simd(got, start, buf, len);
      ASSERT_EQ(cw, cg) << IsaName(GetParam()) << " " << c.name << " count, input #" << n << " len "
                        << len << " start " << start;
      for (int i = start; i < cw; ++i) {
        ASSERT_EQ(want[i], got[i]) << c.name << " input #" << n << " index " << i;
      }
      for (int i = kN; i < kN + 8; ++i) ASSERT_EQ(got[i], -7) << "write past a[256] #" << n;
    }
  }
}

// SampleInBall's constant-time kernels on the same state and candidates: edge states (empty list,
// every slot taken, i at 255 / 256, candidates all 0 or all 255), then random states, tau and
// candidate streams. Steps and expansion are compared separately (each on the portable state).
TEST_P(MlDsaBackends, SampleInBallKernels) {
  const Backend& s = Simd();
  if (s.sample_in_ball_steps == &portable::SampleInBallSteps &&
      s.sample_in_ball_expand == &portable::SampleInBallExpand) {
    return;
  }
  const int taus[] = {39, 49, 60};
  for (int n = 0; n < Inputs(); ++n) {
    const int tau = taus[n % 3];
    const uint32_t first = static_cast<uint32_t>(kN - tau);
    uint8_t pos0[kBallSlots], cand[136];
    int8_t sgn0[kBallSlots];
    const uint64_t signs0 = rng_();
    const uint32_t i0 = n == 3   ? 255
                        : n == 4 ? 256
                        : n < 3  ? first
                                 : first + static_cast<uint32_t>(rng_() % (tau + 1));
    for (int k = 0; k < kBallSlots; ++k) {
      const uint64_t r = rng_();
      pos0[k] = n == 0 ? 0 : static_cast<uint8_t>(r);
      sgn0[k] = n == 0 ? 0 : n == 1 ? 1 : n == 2 ? -1 : static_cast<int8_t>((r >> 8) % 3) - 1;
    }
    const size_t len = n < kEdges ? 136 : 1 + rng_() % 136;
    for (size_t t = 0; t < len; ++t) {
      cand[t] = n == 3 ? 255 : n == 4 ? 0 : static_cast<uint8_t>(rng_());
    }
    uint8_t pw[kBallSlots], pg[kBallSlots];
    int8_t sw[kBallSlots], sg[kBallSlots];
    std::memcpy(pw, pos0, sizeof(pw));
    std::memcpy(pg, pos0, sizeof(pg));
    std::memcpy(sw, sgn0, sizeof(sw));
    std::memcpy(sg, sgn0, sizeof(sg));
    uint32_t iw = i0, ig = i0;
    uint64_t signs_w = signs0, signs_g = signs0;
    portable::SampleInBallSteps(pw, sw, iw, first, signs_w, cand, len);
    s.sample_in_ball_steps(pg, sg, ig, first, signs_g, cand, len);
    ASSERT_EQ(std::memcmp(pw, pg, sizeof(pw)), 0) << "sample_in_ball_steps pos, input #" << n;
    ASSERT_EQ(std::memcmp(sw, sg, sizeof(sw)), 0) << "sample_in_ball_steps sgn, input #" << n;
    ASSERT_EQ(iw, ig) << "sample_in_ball_steps i, input #" << n;
    ASSERT_EQ(signs_w, signs_g) << "sample_in_ball_steps signs, input #" << n;
    // Expansion: distinct positions in the used slots (the contract), any signs.
    uint8_t perm[kN];
    for (int k = 0; k < kN; ++k) perm[k] = static_cast<uint8_t>(k);
    for (int k = kN - 1; k > 0; --k) std::swap(perm[k], perm[rng_() % (k + 1)]);
    if (n == 1) std::reverse(perm, perm + kN);  // 255, 254, ...
    for (int k = 0; k < kBallSlots; ++k) pw[k] = perm[k];
    const int used = n == 0 ? 0 : n == 2 ? kBallSlots : tau;
    Poly cw, cg;
    portable::SampleInBallExpand(cw, pw, sw, used);
    s.sample_in_ball_expand(cg, pw, sw, used);
    ASSERT_TRUE(Same(cw, cg, "sample_in_ball_expand", n));
  }
}

// The start-up check (backend_check.cc, run before the ISA is first selected) passes this table
// and fails it once a hook is wrong: here a table whose invntt_to_mont, unpack_z19 or
// sample_in_ball_steps differs from the real one (each alone), built from the ISA's table.
void WrongInvNtt(Poly& a) {
  portable::InvNttToMont(a);
  a.coeffs[200] += 1;
}
void WrongUnpackZ19(Poly& z, const uint8_t* in) {
  portable::UnpackZ19(z, in);
  z.coeffs[0] = -z.coeffs[0];
}
void WrongBallSteps(uint8_t* pos, int8_t* sgn, uint32_t& i, uint32_t first, uint64_t& signs,
                    const uint8_t* cand, size_t n) {
  portable::SampleInBallSteps(pos, sgn, i, first, signs, cand, n);
  signs ^= 1;
}
TEST_P(MlDsaBackends, StartUpCheckPassesTheTableAndCatchesAWrongHook) {
  EXPECT_TRUE(TableMatchesPortable(Simd()));
  EXPECT_TRUE(SelfCheck(GetParam()));
  Backend wrong = Simd();
  wrong.invntt_to_mont = &WrongInvNtt;
  EXPECT_FALSE(TableMatchesPortable(wrong));
  wrong = Simd();
  wrong.unpack_z19 = &WrongUnpackZ19;
  EXPECT_FALSE(TableMatchesPortable(wrong));
  wrong = Simd();
  wrong.sample_in_ball_steps = &WrongBallSteps;
  EXPECT_FALSE(TableMatchesPortable(wrong));
}

// The start-up self-check keeps every SIMD backend the CPU can run (its check of this family's
// table passes), so the tests above ran rather than skipped.
TEST(MlDsaBackendsSelfCheck, KeepsEveryBackendTheCpuRuns) {
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!pqcd::testing::CpuRunsIsa(isa)) continue;
    EXPECT_TRUE(IsaSupported(isa))
        << IsaName(isa) << ": the CPU runs it, the self-check refused it";
  }
}

// Each table, as its backend's WithKernels builds it from the hook list: a hook in the backend's
// kKernels is its own kernel, any other the table it builds on (avx512 on avx2, the others on the
// portable one). Pointer comparisons only: runs whatever the CPU.
TEST(MlDsaTables, EachHookIsTheBackendsKernelOrTheInheritedOne) {
#if defined(__x86_64__)
  const Backend& a2 = BackendFor(Isa::kAvx2);
  const Backend& a512 = BackendFor(Isa::kAvx512);
#define PQCD_HOOK(hook, Kernel, Ret, Params)                  \
  if constexpr (avx2::kKernels.Has(Hook::hook)) {             \
    EXPECT_EQ(a2.hook, &avx2::Kernel) << "avx2 " #hook;       \
  } else {                                                    \
    EXPECT_EQ(a2.hook, kPortable.hook) << "avx2 " #hook;      \
  }                                                           \
  if constexpr (avx512::kKernels.Has(Hook::hook)) {           \
    EXPECT_EQ(a512.hook, &avx512::Kernel) << "avx512 " #hook; \
  } else {                                                    \
    EXPECT_EQ(a512.hook, a2.hook) << "avx512 " #hook;         \
  }
#include "mldsa/hooks.def"
#elif defined(__aarch64__)
  const Backend& n = BackendFor(Isa::kNeon);
#define PQCD_HOOK(hook, Kernel, Ret, Params)            \
  if constexpr (neon::kKernels.Has(Hook::hook)) {       \
    EXPECT_EQ(n.hook, &neon::Kernel) << "neon " #hook;  \
  } else {                                              \
    EXPECT_EQ(n.hook, kPortable.hook) << "neon " #hook; \
  }
#include "mldsa/hooks.def"
#else
  GTEST_SKIP() << "no SIMD backend on this architecture";
#endif
}

INSTANTIATE_TEST_SUITE_P(AllSimd, MlDsaBackends,
                         ::testing::Values(Isa::kAvx2, Isa::kAvx512, Isa::kNeon),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(IsaName(info.param));
                         });

}  // namespace
}  // namespace pqcd::kernels::mldsa
