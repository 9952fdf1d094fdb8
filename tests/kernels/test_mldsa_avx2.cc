// Differential tests: every kernel of the avx2 and avx512 ML-DSA tables (mldsa/backend.h, reached
// through the poly.h / sample.h functions) against the portable kernel, on edge inputs (zeros,
// q - 1, the extremes of each documented input bound) and 10,000 random polynomials per kernel
// drawn inside the poly.h contract. Every test runs once per SIMD ISA (the test parameter; skipped
// where the CPU lacks it). The two paths are selected with SetActiveIsa(); outputs must be
// identical coefficient for coefficient (the first differing index is reported).
#include <gtest/gtest.h>

#include "common/test_support.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "mldsa/backend.h"
#include "mldsa/poly.h"
#include "mldsa/sample.h"
#include "pqcd/kernels/isa.h"

namespace pqcd::kernels::mldsa {
namespace {

using pqcd::testing::ScopedIsa;
using pqcd::testing::SupportedIsas;

constexpr int32_t kG2Small = (kQ - 1) / 88;
constexpr int32_t kG2Large = (kQ - 1) / 32;
constexpr int kRandomPolys = 10000;

uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [lo, hi].
int32_t Uniform(uint64_t& s, int64_t lo, int64_t hi) {
  return static_cast<int32_t>(
      lo + static_cast<int64_t>(SplitMix(s) % static_cast<uint64_t>(hi - lo + 1)));
}

// A polynomial generator: edge patterns first (index < kEdges), then random.
constexpr int kEdges = 6;
Poly MakePoly(uint64_t& s, int index, int64_t lo, int64_t hi) {
  Poly p;
  for (int i = 0; i < kN; ++i) {
    switch (index) {
      case 0:
        p.coeffs[i] = lo <= 0 && 0 <= hi ? 0 : static_cast<int32_t>(lo);
        break;
      case 1:
        p.coeffs[i] = static_cast<int32_t>(lo);
        break;
      case 2:
        p.coeffs[i] = static_cast<int32_t>(hi);
        break;
      case 3:
        p.coeffs[i] = static_cast<int32_t>(i % 2 ? lo : hi);
        break;
      case 4:
        p.coeffs[i] = std::min<int64_t>(hi, std::max<int64_t>(lo, kQ - 1));
        break;
      default:
        p.coeffs[i] = Uniform(s, lo, hi);
        break;
    }
  }
  return p;
}

// The SIMD ISA under test: the parameter of the running test, set by its fixture's SetUp (the
// helpers below compare it against the portable backend).
Isa g_simd = Isa::kAvx2;

// Runs f under the portable and the SIMD backend and compares the produced polynomials.
// f fills `out` (a few polynomials) and may return a scalar result that must also agree.
using Kernel = std::function<int64_t(std::vector<Poly>& out)>;
::testing::AssertionResult SameOnBothBackends(const Kernel& f, size_t outputs) {
  std::vector<Poly> ref(outputs), got(outputs);
  for (auto& p : ref) std::memset(&p, 0x5a, sizeof(p));
  for (auto& p : got) std::memset(&p, 0xa5, sizeof(p));
  if (!SetActiveIsa(Isa::kPortable).ok()) return ::testing::AssertionFailure() << "portable";
  const int64_t r_ref = f(ref);
  if (!SetActiveIsa(g_simd).ok()) return ::testing::AssertionFailure() << IsaName(g_simd);
  const int64_t r_got = f(got);
  for (size_t k = 0; k < outputs; ++k) {
    for (int i = 0; i < kN; ++i) {
      if (ref[k].coeffs[i] != got[k].coeffs[i]) {
        return ::testing::AssertionFailure()
               << "output " << k << " first differing index " << i << ": portable "
               << ref[k].coeffs[i] << ", " << IsaName(g_simd) << " " << got[k].coeffs[i];
      }
    }
  }
  if (r_ref != r_got) {
    return ::testing::AssertionFailure()
           << "result: portable " << r_ref << ", " << IsaName(g_simd) << " " << r_got;
  }
  return ::testing::AssertionSuccess();
}

class MlDsaAvx2 : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    g_simd = GetParam();
    if (!IsaSupported(g_simd)) GTEST_SKIP() << "CPU without " << IsaName(g_simd);
    ASSERT_NE(&BackendFor(g_simd), &kPortable)
        << "the " << IsaName(g_simd) << " backend has no ML-DSA table (arch/backends.h)";
  }
  ScopedIsa restore_;
};

// One input polynomial in [lo, hi] through `op`, kEdges + kRandomPolys times.
void CheckUnary(uint64_t seed, int64_t lo, int64_t hi, size_t outputs,
                const std::function<int64_t(const Poly&, std::vector<Poly>&)>& op) {
  uint64_t s = seed;
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    const Poly in = MakePoly(s, n, lo, hi);
    ASSERT_TRUE(SameOnBothBackends([&](std::vector<Poly>& out) { return op(in, out); }, outputs))
        << "input #" << n << " (edge patterns < " << kEdges << ")";
  }
}

TEST_P(MlDsaAvx2, Ntt) {
  CheckUnary(1, -(kQ - 1), kQ - 1, 1, [](const Poly& in, std::vector<Poly>& out) {
    out[0] = in;
    Ntt(out[0]);
    return 0;
  });
}

TEST_P(MlDsaAvx2, InvNttToMont) {
  CheckUnary(2, -kQ, kQ, 1, [](const Poly& in, std::vector<Poly>& out) {
    out[0] = in;
    InvNttToMont(out[0]);
    return 0;
  });
}

TEST_P(MlDsaAvx2, PointwiseMontgomery) {
  uint64_t s = 3;
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    const Poly a = MakePoly(s, n, -(9 * int64_t{kQ} - 1), 9 * int64_t{kQ} - 1);
    const Poly b = MakePoly(s, (n + 3) % (kEdges + 1) == 0 ? 5 : n, -(9 * int64_t{kQ} - 1),
                            9 * int64_t{kQ} - 1);
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          PointwiseMontgomery(out[0], a, b);
          return 0;
        },
        1))
        << "input #" << n;
  }
}

TEST_P(MlDsaAvx2, PointwiseAccMontgomery) {
  uint64_t s = 4;
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    const int len = 1 + n % 8;
    Poly a[8], b[8];
    for (int j = 0; j < len; ++j) {
      a[j] = MakePoly(s, n, 0, kQ - 1);
      b[j] = MakePoly(s, n, -(9 * int64_t{kQ} - 1), 9 * int64_t{kQ} - 1);
    }
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          PointwiseAccMontgomery(out[0], a, b, len);
          return 0;
        },
        1))
        << "input #" << n << " n=" << len;
  }
}

TEST_P(MlDsaAvx2, ReductionsAndLinear) {
  CheckUnary(5, INT32_MIN + (1 << 22), (int64_t{1} << 31) - (1 << 22) - 1, 1,
             [](const Poly& in, std::vector<Poly>& out) {
               out[0] = in;
               Reduce32(out[0]);
               return 0;
             });
  CheckUnary(6, -(kQ - 1), kQ - 1, 1, [](const Poly& in, std::vector<Poly>& out) {
    out[0] = in;
    CAddQ(out[0]);
    return 0;
  });
  CheckUnary(7, 0, (1 << 10) - 1, 1, [](const Poly& in, std::vector<Poly>& out) {
    out[0] = in;
    ShiftLeftD(out[0]);
    return 0;
  });
  CheckUnary(9, -(1 << 30) + 1, (1 << 30) - 1, 2, [](const Poly& in, std::vector<Poly>& out) {
    Poly b;  // a second operand derived from the first (same on both backends)
    for (int i = 0; i < kN; ++i) b.coeffs[i] = -in.coeffs[kN - 1 - i] / 2 + i * 4099;
    Add(out[0], in, b);
    Sub(out[1], in, b);
    return 0;
  });
}

TEST_P(MlDsaAvx2, Power2RoundAndDecompose) {
  CheckUnary(10, 0, kQ - 1, 2, [](const Poly& in, std::vector<Poly>& out) {
    Power2Round(out[0], out[1], in);
    return 0;
  });
  CheckUnary(11, 0, kQ - 1, 2, [](const Poly& in, std::vector<Poly>& out) {
    Decompose<kG2Small>(out[0], out[1], in);
    return 0;
  });
  CheckUnary(12, 0, kQ - 1, 2, [](const Poly& in, std::vector<Poly>& out) {
    Decompose<kG2Large>(out[0], out[1], in);
    return 0;
  });
}

// Every r in [0, q) once, for both gammas (the rounding functions are exhaustively comparable).
TEST_P(MlDsaAvx2, DecomposeUseHintExhaustive) {
  for (int32_t base = 0; base < kQ; base += kN) {
    Poly r, h;
    for (int i = 0; i < kN; ++i) {
      r.coeffs[i] = std::min(base + i, kQ - 1);
      h.coeffs[i] = (i >> 1) & 1;
    }
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          Decompose<kG2Small>(out[0], out[1], r);
          Decompose<kG2Large>(out[2], out[3], r);
          UseHint<kG2Small>(out[4], r, h);
          UseHint<kG2Large>(out[5], r, h);
          return 0;
        },
        6))
        << "r from " << base;
  }
}

template <int32_t G2>
void CheckMakeHint(uint64_t seed) {
  constexpr int32_t kM = (kQ - 1) / (2 * G2);
  uint64_t s = seed;
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    Poly a0, a1;
    for (int i = 0; i < kN; ++i) {
      // Mostly near the +-gamma2 decision points, sometimes anywhere in the contract.
      const int pick = static_cast<int>(SplitMix(s) % 4);
      const int32_t centre = pick == 0 ? G2 : pick == 1 ? -G2 : 0;
      a0.coeffs[i] = pick < 2 ? centre + Uniform(s, -2, 2)
                              : Uniform(s, -(int64_t{1} << 30) + 1, (int64_t{1} << 30) - 1);
      a1.coeffs[i] = n < kEdges ? (n % 2 ? kM - 1 : 0) : Uniform(s, 0, kM - 1);
    }
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) { return static_cast<int64_t>(MakeHint<G2>(out[0], a0, a1)); },
        1))
        << "input #" << n;
  }
}

TEST_P(MlDsaAvx2, MakeHint) {
  CheckMakeHint<kG2Small>(13);
  CheckMakeHint<kG2Large>(14);
}

TEST_P(MlDsaAvx2, UseHintRandom) {
  uint64_t s = 15;
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    const Poly r = MakePoly(s, n, 0, kQ - 1);
    Poly h;
    for (int i = 0; i < kN; ++i) h.coeffs[i] = static_cast<int32_t>(SplitMix(s) & 1);
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          UseHint<kG2Small>(out[0], r, h);
          UseHint<kG2Large>(out[1], r, h);
          return 0;
        },
        2))
        << "input #" << n;
  }
}

TEST_P(MlDsaAvx2, ExceedsNorm) {
  const int32_t bounds[] = {1,  kG2Small,          kG2Large, (1 << 17) - 78, (1 << 19) - 196,
                            kQ, (int32_t{1} << 30)};
  uint64_t s = 16;
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    const int32_t bound = bounds[n % 7];
    Poly a;
    const int mode = n % 3;
    for (int i = 0; i < kN; ++i) {
      a.coeffs[i] = mode == 0 ? Uniform(s, -(bound - 1), bound - 1)
                              : Uniform(s, -(int64_t{1} << 31) + 2, (int64_t{1} << 31) - 2);
    }
    if (mode == 1) {
      for (int i = 0; i < kN; ++i) a.coeffs[i] = Uniform(s, -(bound - 1), bound - 1);
      a.coeffs[SplitMix(s) % kN] = (SplitMix(s) & 1) ? bound : -bound;  // exactly one at the bound
    }
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>&) { return static_cast<int64_t>(ExceedsNorm(a, bound)); }, 0))
        << "input #" << n << " bound " << bound;
  }
}

// Bit unpacking: every bit pattern is a valid encoding; all-zero and all-one bytes are the edges.
TEST_P(MlDsaAvx2, Unpacking) {
  uint64_t s = 19;
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    std::vector<uint8_t> t1(320), z17(576), z19(640);  // exact sizes: the last group is the edge
    for (auto* v : {&t1, &z17, &z19}) {
      for (auto& b : *v) b = n == 0 ? 0 : n == 1 ? 0xff : static_cast<uint8_t>(SplitMix(s));
    }
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          UnpackT1(out[0], t1.data());
          UnpackZ<17>(out[1], z17.data());
          UnpackZ<19>(out[2], z19.data());
          return 0;
        },
        3))
        << "input #" << n;
  }
}

// Runs f (which fills `out` with an encoding) under both backends and compares the bytes.
::testing::AssertionResult SameBytesOnBothBackends(
    const std::function<void(std::vector<uint8_t>&)>& f, size_t size) {
  std::vector<uint8_t> ref(size + 16, 0x5a), got(size + 16, 0xa5);
  if (!SetActiveIsa(Isa::kPortable).ok()) return ::testing::AssertionFailure() << "portable";
  f(ref);
  if (!SetActiveIsa(g_simd).ok()) return ::testing::AssertionFailure() << IsaName(g_simd);
  f(got);
  for (size_t i = 0; i < size; ++i) {
    if (ref[i] != got[i]) {
      return ::testing::AssertionFailure()
             << "first differing byte " << i << ": portable " << int{ref[i]} << ", "
             << IsaName(g_simd) << " " << int{got[i]};
    }
  }
  for (size_t i = size; i < size + 16; ++i) {  // nothing written past the encoding
    if (ref[i] != 0x5a || got[i] != 0xa5) {
      return ::testing::AssertionFailure() << "write past the encoding at byte " << i;
    }
  }
  return ::testing::AssertionSuccess();
}

// Bit packing: each packer on edge polynomials (all at the bounds of its input range, alternating)
// and random ones inside the poly.h contract.
TEST_P(MlDsaAvx2, Packing) {
  struct Case {
    const char* name;
    int64_t lo, hi;
    size_t bytes;
    std::function<void(uint8_t*, const Poly&)> pack;
  };
  const Case cases[] = {
      {"t1", 0, 1023, 320, [](uint8_t* o, const Poly& a) { PackT1(o, a); }},
      {"t0", -4095, 4096, 416, [](uint8_t* o, const Poly& a) { PackT0(o, a); }},
      {"eta2", -2, 2, 96, [](uint8_t* o, const Poly& a) { PackEta<2>(o, a); }},
      {"eta4", -4, 4, 128, [](uint8_t* o, const Poly& a) { PackEta<4>(o, a); }},
      {"w1 (6 bits)", 0, 43, 192, [](uint8_t* o, const Poly& a) { PackW1<kG2Small>(o, a); }},
      {"w1 (4 bits)", 0, 15, 128, [](uint8_t* o, const Poly& a) { PackW1<kG2Large>(o, a); }},
      {"z (gamma1 2^19)", -(1 << 19) + 1, 1 << 19, 640,
       [](uint8_t* o, const Poly& a) { PackZ<19>(o, a); }},
      {"z (gamma1 2^17)", -(1 << 17) + 1, 1 << 17, 576,
       [](uint8_t* o, const Poly& a) { PackZ<17>(o, a); }},
  };
  uint64_t s = 22;
  for (const Case& c : cases) {
    for (int n = 0; n < kEdges + kRandomPolys; ++n) {
      const Poly in = MakePoly(s, n, c.lo, c.hi);
      ASSERT_TRUE(SameBytesOnBothBackends(
          [&](std::vector<uint8_t>& out) { c.pack(out.data(), in); }, c.bytes))
          << c.name << " input #" << n << " (edge patterns < " << kEdges << ")";
    }
  }
}

// The fused passes of key generation and verification: both backends agree (bytes and
// polynomials), and each fused pass equals its unfused composition.
TEST_P(MlDsaAvx2, FusedKernels) {
  uint64_t s = 31;
  const int64_t k9q = 9 * int64_t{kQ} - 1;
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    // A-hat z-hat - c-hat t1-hat: n <= 8 products plus one subtracted product.
    const int len = 1 + n % 8;
    Poly a[8], b[8];
    for (int j = 0; j < len; ++j) {
      a[j] = MakePoly(s, n, 0, kQ - 1);
      b[j] = MakePoly(s, n, -k9q, k9q);
    }
    const Poly x = MakePoly(s, n, -k9q, k9q), y = MakePoly(s, (n + 2) % kEdges, -k9q, k9q);
    int64_t unfused_diff = 0;  // set by either backend when the fused pass disagrees
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          PointwiseAccSubMontgomery(out[0], a, b, len, x, y);
          PointwiseAccMontgomery(out[1], a, b, len);  // the unfused form, up to the representative
          PointwiseMontgomery(out[2], x, y);
          Sub(out[1], out[1], out[2]);
          for (int i = 0; i < kN; ++i) {
            const int64_t d = (int64_t{out[0].coeffs[i]} - out[1].coeffs[i]) % kQ;
            if (d != 0 || out[0].coeffs[i] <= -kQ || out[0].coeffs[i] >= kQ) {
              unfused_diff = 1000 + i;
            }
          }
          std::memset(&out[1], 0, sizeof(Poly));  // representatives of the unfused form may differ
          std::memset(&out[2], 0, sizeof(Poly));
          return 0;
        },
        3))
        << "acc-sub input #" << n << " n=" << len;
    ASSERT_EQ(unfused_diff, 0) << "acc-sub vs unfused (1000 + index), input #" << n;

    // UnpackT1Shifted = UnpackT1 then ShiftLeftD.
    std::vector<uint8_t> t1(320);
    for (auto& v : t1) v = n == 0 ? 0 : n == 1 ? 0xff : static_cast<uint8_t>(SplitMix(s));
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          UnpackT1Shifted(out[0], t1.data());
          UnpackT1(out[1], t1.data());
          ShiftLeftD(out[1]);
          unfused_diff |= std::memcmp(&out[0], &out[1], sizeof(Poly)) != 0;
          return 0;
        },
        2))
        << "t1 input #" << n;
    ASSERT_EQ(unfused_diff, 0) << "t1 shifted vs unfused, input #" << n;

    // Power2RoundPackT1 on |r| < q, |s| <= 4 (and t0 aliasing r) against the unfused passes.
    const Poly r = MakePoly(s, n, -(kQ - 1), kQ - 1);
    const Poly e = MakePoly(s, (n + 1) % kEdges == 0 ? 3 : n, -4, 4);
    std::vector<uint8_t> packed_ref;
    Poly t0_unfused;
    {
      Poly t = r, t1p;
      Add(t, t, e);
      Reduce32(t);
      CAddQ(t);
      Power2Round(t1p, t0_unfused, t);
      packed_ref.resize(320);
      PackT1(packed_ref.data(), t1p);
    }
    ASSERT_TRUE(SameBytesOnBothBackends(
        [&](std::vector<uint8_t>& out) {
          Poly t0 = r;
          Power2RoundPackT1(out.data(), t0, t0, e);
        },
        320))
        << "power2round-pack input #" << n;
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          uint8_t buf[320];
          Power2RoundPackT1(buf, out[0], r, e);
          unfused_diff |= std::memcmp(buf, packed_ref.data(), 320) != 0 ||
                          std::memcmp(&out[0], &t0_unfused, sizeof(Poly)) != 0;
          return 0;
        },
        1))
        << "power2round-pack t0 input #" << n;
    ASSERT_EQ(unfused_diff, 0) << "power2round-pack vs unfused, input #" << n;

    // UseHintPackW1 on |r| < q against CAddQ, UseHint, PackW1.
    Poly h;
    for (int i = 0; i < kN; ++i) {
      h.coeffs[i] = n < kEdges ? (n + i) % 2 : static_cast<int32_t>(SplitMix(s) & 1);
    }
    Poly rc = r;
    CAddQ(rc);
    for (int which = 0; which < 2; ++which) {
      const size_t bytes = which == 0 ? 192 : 128;
      std::vector<uint8_t> want(bytes);
      Poly w;
      if (which == 0) {
        UseHint<kG2Small>(w, rc, h);
        PackW1<kG2Small>(want.data(), w);
      } else {
        UseHint<kG2Large>(w, rc, h);
        PackW1<kG2Large>(want.data(), w);
      }
      ASSERT_TRUE(SameBytesOnBothBackends(
          [&](std::vector<uint8_t>& out) {
            if (which == 0) {
              UseHintPackW1<kG2Small>(out.data(), r, h);
            } else {
              UseHintPackW1<kG2Large>(out.data(), r, h);
            }
          },
          bytes))
          << "use-hint-pack gamma2 #" << which << " input #" << n;
      std::vector<uint8_t> got(bytes);
      if (which == 0) {
        UseHintPackW1<kG2Small>(got.data(), r, h);
      } else {
        UseHintPackW1<kG2Large>(got.data(), r, h);
      }
      ASSERT_EQ(got, want) << "use-hint-pack vs unfused, gamma2 #" << which << " input #" << n;
    }
  }
}

// The signer's fused passes against both backends and their unfused compositions.
TEST_P(MlDsaAvx2, SignerFusedKernels) {
  uint64_t s = 37;
  const int32_t bounds[] = {(1 << 19) - 196, (1 << 17) - 78, 1, (1 << 30) - 1, 300};
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    // Reduce32 + SplitLow9 + Add + ExceedsNorm; v mostly small (exact products), some any |v| < q.
    const int64_t vmax = n % 3 == 0 ? kQ - 1 : 513 * 196;
    const Poly v = MakePoly(s, n, -vmax, vmax);
    const Poly y = MakePoly(s, (n + 4) % kEdges == 0 ? 2 : n, -(1 << 19) + 1, 1 << 19);
    const int32_t bound = bounds[n % 5];
    int64_t unfused_diff = 0;
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          const uint32_t bad = SplitLow9AddNorm(out[0], out[1], v, y, bound);
          Poly x = v, lo, hi;
          Reduce32(x);
          SplitLow9(lo, hi, x);
          Add(lo, lo, y);
          const uint32_t want = ExceedsNorm(lo, bound);
          unfused_diff |= bad != want || std::memcmp(&lo, &out[0], sizeof(Poly)) != 0 ||
                          std::memcmp(&hi, &out[1], sizeof(Poly)) != 0;
          Poly alias = v;  // lo aliasing v
          SplitLow9AddNorm(alias, out[2], alias, y, bound);
          unfused_diff |= std::memcmp(&alias, &out[0], sizeof(Poly)) != 0;
          return static_cast<int64_t>(bad);
        },
        3))
        << "split-add-norm input #" << n << " bound " << bound;
    ASSERT_EQ(unfused_diff, 0) << "split-add-norm vs unfused, input #" << n;

    // CAddQ + Decompose + PackW1, both gamma2, r aliasing r1.
    const Poly r = MakePoly(s, n, -(kQ - 1), kQ - 1);
    for (int which = 0; which < 2; ++which) {
      const size_t bytes = which == 0 ? 192 : 128;
      auto fused = [&](uint8_t* o, Poly& r1, Poly& r0, const Poly& in) {
        if (which == 0) {
          DecomposePackW1<kG2Small>(o, r1, r0, in);
        } else {
          DecomposePackW1<kG2Large>(o, r1, r0, in);
        }
      };
      ASSERT_TRUE(SameBytesOnBothBackends(
          [&](std::vector<uint8_t>& out) {
            Poly r1 = r, r0;
            fused(out.data(), r1, r0, r1);
          },
          bytes))
          << "decompose-pack gamma2 #" << which << " input #" << n;
      ASSERT_TRUE(SameOnBothBackends(
          [&](std::vector<Poly>& out) {
            std::vector<uint8_t> got(bytes), want(bytes);
            fused(got.data(), out[0], out[1], r);
            Poly rc = r, r1, r0;
            CAddQ(rc);
            if (which == 0) {
              Decompose<kG2Small>(r1, r0, rc);
              PackW1<kG2Small>(want.data(), r1);
            } else {
              Decompose<kG2Large>(r1, r0, rc);
              PackW1<kG2Large>(want.data(), r1);
            }
            unfused_diff |= got != want || std::memcmp(&r1, &out[0], sizeof(Poly)) != 0 ||
                            std::memcmp(&r0, &out[1], sizeof(Poly)) != 0;
            return 0;
          },
          2))
          << "decompose-pack polys gamma2 #" << which << " input #" << n;
      ASSERT_EQ(unfused_diff, 0) << "decompose-pack vs unfused, gamma2 #" << which << " #" << n;
    }
  }
}

// Unpacking of t0 and eta fields: every byte pattern (eta: out-of-range fields must raise the same
// malformed flag and give the same coefficients).
TEST_P(MlDsaAvx2, UnpackT0AndEta) {
  uint64_t s = 23;
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    std::vector<uint8_t> t0(416), e2(96), e4(128);
    for (auto* v : {&t0, &e2, &e4}) {
      for (auto& b : *v) {
        const uint8_t r = static_cast<uint8_t>(SplitMix(s));
        b = n == 0 ? 0 : n == 1 ? 0xff : n == 2 ? 0x44 : n == 3 ? 0x92 : r;
      }
    }
    if (n >= kEdges && n % 2) {  // mostly valid eta encodings: fields in [0, 2 eta]
      for (auto& b : e4) b = static_cast<uint8_t>((b & 0x77) % 9 | ((b >> 4) % 9) << 4);
      for (size_t i = 0; i + 3 <= e2.size(); i += 3) {
        uint32_t w = 0;
        for (int k = 0; k < 8; ++k) w |= static_cast<uint32_t>(SplitMix(s) % 5) << (3 * k);
        e2[i] = static_cast<uint8_t>(w);
        e2[i + 1] = static_cast<uint8_t>(w >> 8);
        e2[i + 2] = static_cast<uint8_t>(w >> 16);
      }
    }
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          UnpackT0(out[0], t0.data());
          const uint32_t bad2 = UnpackEta<2>(out[1], e2.data());
          const uint32_t bad4 = UnpackEta<4>(out[2], e4.data());
          return static_cast<int64_t>(bad2) << 32 | bad4;
        },
        3))
        << "input #" << n;
  }
}

// The sampler end to end (4-lane Keccak + vector rejection) and the rejection loop alone.
TEST_P(MlDsaAvx2, UniformSampling) {
  uint64_t s = 17;
  for (int n = 0; n < 200; ++n) {
    uint8_t rho[32];
    for (auto& b : rho) b = static_cast<uint8_t>(SplitMix(s));
    uint16_t nonces[7];
    for (int i = 0; i < 7; ++i) nonces[i] = static_cast<uint16_t>(SplitMix(s));
    const size_t count = 1 + n % 7;
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          Poly* ptrs[7];
          for (size_t i = 0; i < count; ++i) ptrs[i] = &out[i];
          SampleUniformPolys(ptrs, rho, nonces, count);
          return 0;
        },
        count));
  }
  // Rejection alone against the FIPS 204 loop, with many rejections (high bytes near 0x7f/0xff).
  for (int n = 0; n < kRandomPolys; ++n) {
    uint8_t buf[840];
    for (size_t i = 0; i < sizeof(buf); ++i) {
      const uint8_t r = static_cast<uint8_t>(SplitMix(s));
      buf[i] = (i % 3 == 2 && n % 2) ? static_cast<uint8_t>(0x7f | (r & 0x80)) : r;
    }
    const size_t len = 3 * (SplitMix(s) % 281);
    const int start = static_cast<int>(SplitMix(s) % 200);
    int32_t want[kN] = {}, got[kN] = {};
    int want_count = start;
    for (size_t pos = 0; pos + 3 <= len && want_count < kN; pos += 3) {
      const uint32_t t = buf[pos] | buf[pos + 1] << 8 | (buf[pos + 2] & 0x7f) << 16;
      if (t < static_cast<uint32_t>(kQ)) want[want_count++] = static_cast<int32_t>(t);
    }
    const int got_count = BackendFor(g_simd).reject_uniform(got, start, buf, len);
    ASSERT_EQ(got_count, want_count) << "input #" << n;
    for (int i = 0; i < want_count; ++i) ASSERT_EQ(got[i], want[i]) << "index " << i;
  }
}

// RejBoundedPoly's inner loop alone: start counts up to 256 (the 8-lane stores meet the end of
// the polynomial), lengths that are not multiples of 8 (the remainder path), runs of rejected
// half-bytes and half-bytes at the accept bounds. Coefficients past the returned count are
// unspecified (the SIMD kernels may write there) and are not compared.
template <int Eta>
void CheckRejectEta(uint64_t seed) {
  uint64_t s = seed;
  const uint8_t edge_bytes[kEdges] = {0x00, 0xff, 0x0f, 0x88, 0x99, 0xee};
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    uint8_t buf[600];
    const int mode = n % 3;
    for (size_t i = 0; i < sizeof(buf); ++i) {
      const uint64_t r = SplitMix(s);
      if (n < kEdges) {
        buf[i] = (n == 2 && i % 2) ? 0xf0 : edge_bytes[n];
      } else if (mode == 0) {
        buf[i] = static_cast<uint8_t>(r);
      } else {  // half-bytes near the bounds (8, 9, 14, 15) or rejected
        static constexpr uint8_t kNear[4] = {8, 9, 14, 15};
        buf[i] = static_cast<uint8_t>(kNear[r & 3] | kNear[(r >> 2) & 3] << 4);
        if (mode == 2 && (r >> 8) % 4 == 0) buf[i] = static_cast<uint8_t>(r >> 16);
      }
    }
    const size_t len = n < kEdges ? sizeof(buf) - n : SplitMix(s) % (sizeof(buf) + 1);
    const int start = n % 4 == 0 ? static_cast<int>(SplitMix(s) % (kN + 1))
                                 : kN - 1 - static_cast<int>(SplitMix(s) % 40);
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          std::memset(&out[0], 0, sizeof(out[0]));
          const int count = RejectEta<Eta>(out[0].coeffs, start, buf, len);
          for (int i = count; i < kN; ++i) out[0].coeffs[i] = 0;
          return static_cast<int64_t>(count);
        },
        1))
        << "eta " << Eta << " input #" << n << " (edge patterns < " << kEdges << ") len " << len
        << " start " << start;
  }
}

TEST_P(MlDsaAvx2, RejectEta) {
  CheckRejectEta<2>(20);
  CheckRejectEta<4>(21);
}

TEST_P(MlDsaAvx2, EtaAndMaskSampling) {
  uint64_t s = 18;
  for (int n = 0; n < 100; ++n) {
    uint8_t seed[64];
    for (auto& b : seed) b = static_cast<uint8_t>(SplitMix(s));
    uint16_t nonces[15];
    for (int i = 0; i < 15; ++i) nonces[i] = static_cast<uint16_t>(n * 15 + i);
    const size_t count = 1 + n % 15;
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          Poly* ptrs[15];
          for (size_t i = 0; i < count; ++i) ptrs[i] = &out[i];
          if (n % 2) {
            SampleEtaPolys<2>(ptrs, seed, nonces, count);
          } else {
            SampleEtaPolys<4>(ptrs, seed, nonces, count);
          }
          return 0;
        },
        count));
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          Poly* ptrs[15];
          for (size_t i = 0; i < count; ++i) ptrs[i] = &out[i];
          SampleMaskPolys<19>(ptrs, seed, nonces, count);
          return 0;
        },
        count));
  }
}

// SplitLow9 over its whole input range and over the signer's range (|c s1 + 2^9 c s2| <= 513 *
// 196); the portable result must also satisfy the definition (v = lo + 2^9 hi, lo in [-256, 256)).
TEST_P(MlDsaAvx2, SplitLow9) {
  for (int64_t bound : {int64_t{(1 << 30) - 1}, int64_t{513 * 196}}) {
    CheckUnary(31 + bound, -bound, bound, 2, [](const Poly& in, std::vector<Poly>& out) {
      SplitLow9(out[0], out[1], in);
      for (int i = 0; i < kN; ++i) {
        EXPECT_EQ(out[0].coeffs[i] + 512 * int64_t{out[1].coeffs[i]}, in.coeffs[i]);
        EXPECT_TRUE(out[0].coeffs[i] >= -256 && out[0].coeffs[i] < 256);
      }
      Poly aliased = in, hi;  // lo may alias v
      SplitLow9(aliased, hi, aliased);
      EXPECT_EQ(std::memcmp(&aliased, &out[0], sizeof(Poly)), 0);
      return 0;
    });
  }
}

// SampleInBall's constant-time kernels: the SIMD steps and expansion against the portable ones on
// the same state and candidates (edge states: empty list, every slot taken, i at 255 / 256,
// candidates all 0 or all 255; then random states, tau and candidate streams). The end-to-end
// comparison with FIPS 204 Alg. 29 (every backend, every tau and c~ length) is in
// test_mldsa_poly.cc.
TEST_P(MlDsaAvx2, SampleInBallKernels) {
  uint64_t s = 29;
  const int taus[] = {39, 49, 60};
  for (int n = 0; n < kEdges + kRandomPolys; ++n) {
    const int tau = taus[n % 3];
    const uint32_t first = static_cast<uint32_t>(kN - tau);
    uint8_t pos0[kBallSlots], cand[136];
    int8_t sgn0[kBallSlots];
    const uint64_t signs0 = SplitMix(s);
    const uint32_t i0 = n == 3   ? 255
                        : n == 5 ? 256
                        : n < 3  ? first
                                 : first + static_cast<uint32_t>(SplitMix(s) % (tau + 1));
    for (int k = 0; k < kBallSlots; ++k) {
      const uint64_t r = SplitMix(s);
      pos0[k] = n == 0 ? 0 : static_cast<uint8_t>(r);
      sgn0[k] = n == 0 ? 0 : n == 1 ? 1 : n == 2 ? -1 : static_cast<int8_t>((r >> 8) % 3) - 1;
    }
    const size_t len = n < kEdges ? 136 : 1 + SplitMix(s) % 136;
    for (size_t t = 0; t < len; ++t) {
      cand[t] = n == 3 ? 255 : n == 4 ? 0 : static_cast<uint8_t>(SplitMix(s));
    }
    ASSERT_TRUE(SameOnBothBackends(
        [&](std::vector<Poly>& out) {
          uint8_t pos[kBallSlots];
          int8_t sgn[kBallSlots];
          std::memcpy(pos, pos0, sizeof(pos));
          std::memcpy(sgn, sgn0, sizeof(sgn));
          uint32_t i = i0;
          uint64_t signs = signs0;
          const Backend& be = ActiveBackend();  // portable, then the SIMD one
          be.sample_in_ball_steps(pos, sgn, i, first, signs, cand, len);
          be.sample_in_ball_expand(out[0], pos, sgn, tau);
          for (int k = 0; k < kBallSlots; ++k) {
            out[1].coeffs[k] = pos[k];
            out[1].coeffs[kBallSlots + k] = sgn[k];
          }
          out[1].coeffs[128] = static_cast<int32_t>(i);
          out[1].coeffs[129] = static_cast<int32_t>(signs);
          out[1].coeffs[130] = static_cast<int32_t>(signs >> 32);
          for (int k = 131; k < kN; ++k) out[1].coeffs[k] = 0;
          return 0;
        },
        2))
        << "input #" << n << " (edge patterns < " << kEdges << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Simd, MlDsaAvx2, ::testing::Values(Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(IsaName(info.param));
                         });

}  // namespace
}  // namespace pqcd::kernels::mldsa
