// Differential tests over every non-portable ML-KEM table of this architecture (AVX2 and AVX-512
// on x86-64, NEON on aarch64; mlkem/backend.h, BackendFor(isa)): the NTT-domain and
// coefficient-wise hooks, cbd, compress/decompress and the message hooks, where the table sets
// them, are run against the portable kernel on edge inputs (zeros, all-ones bytes, the extremes of
// the documented input bounds, alternations) and 10,000 random inputs (1,000 under
// PQCD_TEST_QUICK), plus every int16 for the reductions and every canonical value for compression.
// Results must be bit-identical; a failure names the ISA, the input and the first differing index.
// A hook left at the portable default, and an ISA the CPU lacks, is skipped. (test_mlkem_avx2.cc
// covers the other AVX2 hooks.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "mlkem/backend.h"
#include "pqcd/kernels/isa.h"

#if defined(__x86_64__)
#include "arch/x86_64/avx2/mlkem/poly_avx2.h"
#include "arch/x86_64/avx512/mlkem/poly_avx512.h"
#elif defined(__aarch64__)
#include "arch/aarch64/neon/mlkem/poly_neon.h"
#endif

namespace pqcd::kernels::mlkem {
namespace {

class MlKemBackends : public ::testing::TestWithParam<Isa> {
 public:
  void SetUp() override {
    if (!IsaSupported(GetParam())) GTEST_SKIP() << IsaName(GetParam()) << " not supported here";
    if (&BackendFor(GetParam()) == &kPortable) {
      GTEST_SKIP() << IsaName(GetParam()) << " has no ML-KEM table";
    }
  }
  const Backend& Simd() const { return BackendFor(GetParam()); }
  int RandomInputs() const { return pqcd::testing::Iterations(10000, 1000); }

  int16_t Uniform(int lo, int hi) {
    return static_cast<int16_t>(std::uniform_int_distribution<int>(lo, hi)(rng_));
  }
  void Fill(Poly& p, int lo, int hi) {
    for (int16_t& c : p.c) c = Uniform(lo, hi);
  }
  // Input n: an edge polynomial for n < 5, else random, with coefficients in [lo, hi].
  Poly Input(int n, int lo, int hi) {
    Poly p;
    for (int i = 0; i < kN; ++i) {
      const int e[5] = {0, hi, lo, i % 2 ? hi : lo, i % 3 == 0 ? hi : i % 3 == 1 ? lo : 0};
      p.c[i] = static_cast<int16_t>(n < 5 ? e[n] : Uniform(lo, hi));
    }
    return p;
  }
  static constexpr int kEdges = 5;

  // true if equal; otherwise one failure naming the first differing index.
  bool Same(const int16_t* want, const int16_t* got, size_t n, const char* what, int input) {
    for (size_t i = 0; i < n; ++i) {
      if (want[i] != got[i]) {
        ADD_FAILURE() << IsaName(GetParam()) << " " << what << ": input #" << input
                      << " first difference at index " << i << ": portable " << want[i] << ", simd "
                      << got[i];
        return false;
      }
    }
    return true;
  }

  void CheckUnary(const char* what, int lo, int hi, void (*ref)(Poly&), void (*simd)(Poly&)) {
    if (simd == ref) return;
    for (int n = 0; n < kEdges + RandomInputs(); ++n) {
      const Poly in = Input(n, lo, hi);
      Poly a = in, b = in;
      ref(a);
      simd(b);
      if (!Same(a.c, b.c, kN, what, n)) return;
    }
  }

  std::mt19937_64 rng_{0x6d6c6b656d4e};
};

TEST_P(MlKemBackends, NttAndInverse) {
  CheckUnary("ntt", -(kQ - 1), kQ - 1, portable::PolyNtt, Simd().ntt);
  CheckUnary("invntt_times_r", -(kQ - 1), kQ - 1, portable::PolyInvNttTimesR,
             Simd().invntt_times_r);
}

TEST_P(MlKemBackends, Reductions) {
  CheckUnary("to_mont", -32768, 32767, portable::PolyToMont, Simd().to_mont);
  CheckUnary("reduce_canonical", -32768, 32767, portable::PolyReduceCanonical,
             Simd().reduce_canonical);
  for (int base = -32768; base < 32768; base += kN) {  // every int16
    Poly a, b;
    for (int i = 0; i < kN; ++i) a.c[i] = b.c[i] = static_cast<int16_t>(base + i);
    portable::PolyReduceCanonical(a);
    Simd().reduce_canonical(b);
    ASSERT_TRUE(Same(a.c, b.c, kN, "reduce_canonical exhaustive", base));
    for (int i = 0; i < kN; ++i) a.c[i] = b.c[i] = static_cast<int16_t>(base + i);
    portable::PolyToMont(a);
    Simd().to_mont(b);
    ASSERT_TRUE(Same(a.c, b.c, kN, "to_mont exhaustive", base));
  }
}

TEST_P(MlKemBackends, AddSub) {
  for (int n = 0; n < kEdges + RandomInputs(); ++n) {
    const Poly r = Input(n, -32768, 32767);
    const Poly a = Input((n + 1) % (kEdges + RandomInputs()), -32768, 32767);
    Poly r1 = r, r2 = r;
    portable::PolyAdd(r1, a);
    Simd().add(r2, a);
    ASSERT_TRUE(Same(r1.c, r2.c, kN, "add", n));
    r1 = r2 = r;
    portable::PolySub(r1, a);
    Simd().sub(r2, a);
    ASSERT_TRUE(Same(r1.c, r2.c, kN, "sub", n));
  }
}

TEST_P(MlKemBackends, MulCacheAndBasemulAcc) {
  const int lo = -(kQ - 1), hi = kQ - 1;
  for (int n = 0; n < kEdges + RandomInputs(); ++n) {
    Poly a[4], b[4];
    PolyMulCache want_cache[4], got_cache[4];
    for (int j = 0; j < 4; ++j) {
      a[j] = Input(n, lo, hi);
      b[j] = Input(n < kEdges ? (n + j) % kEdges : n, lo, hi);
      portable::PolyMulCacheCompute(want_cache[j], b[j]);
      Simd().mulcache_compute(got_cache[j], b[j]);
      ASSERT_TRUE(Same(want_cache[j].c, got_cache[j].c, kN / 2, "mulcache_compute", n));
    }
    // The cache as the contract allows: any |cache| < q (edge inputs use extreme caches).
    if (n < kEdges) {
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < kN / 2; ++i) {
          want_cache[j].c[i] = static_cast<int16_t>(i % 2 ? hi : lo);
        }
      }
    }
    for (int k = 1; k <= 4; ++k) {
      Poly want, got;
      portable::PolyBasemulAcc(want, a, b, want_cache, k);
      Simd().basemul_acc(got, a, b, want_cache, k);
      ASSERT_TRUE(Same(want.c, got.c, kN, ("basemul_acc k=" + std::to_string(k)).c_str(), n));
    }
  }
}

TEST_P(MlKemBackends, Cbd) {
  if (Simd().cbd == kPortable.cbd) GTEST_SKIP() << "cbd is portable";
  for (int eta : {2, 3}) {
    for (int n = 0; n < 2 + RandomInputs(); ++n) {
      uint8_t buf[64 * 3 + 8];
      for (uint8_t& b : buf) b = n == 0 ? 0 : n == 1 ? 0xff : static_cast<uint8_t>(rng_());
      Poly want, got;
      portable::Cbd(eta, want, buf);
      Simd().cbd(eta, got, buf);
      ASSERT_TRUE(Same(want.c, got.c, kN, eta == 2 ? "cbd eta=2" : "cbd eta=3", n));
    }
  }
}

TEST_P(MlKemBackends, CompressDecompress) {
  for (int d : {4, 5, 10, 11}) {
    const std::string tag = " d=" + std::to_string(d);
    if (Simd().compress_encode != kPortable.compress_encode) {
      // Every canonical value (13 polynomials), then edges and random canonical polynomials.
      for (int n = 0; n < 13 + kEdges + RandomInputs(); ++n) {
        Poly a;
        if (n < 13) {
          for (int i = 0; i < kN; ++i) a.c[i] = static_cast<int16_t>((n * kN + i) % kQ);
        } else {
          a = Input(n - 13, 0, kQ - 1);
        }
        uint8_t want[32 * 11 + 1] = {}, got[32 * 11 + 1] = {};
        portable::PolyCompressEncode(d, want, a);
        Simd().compress_encode(d, got, a);
        ASSERT_EQ(0, std::memcmp(want, got, sizeof(want)))
            << IsaName(GetParam()) << tag << " #" << n;
      }
    }
    if (Simd().decode_decompress != kPortable.decode_decompress) {
      for (int n = 0; n < 2 + RandomInputs(); ++n) {
        uint8_t in[32 * 11];
        for (uint8_t& b : in) b = n == 0 ? 0 : n == 1 ? 0xff : static_cast<uint8_t>(rng_());
        Poly want, got;
        portable::PolyDecodeDecompress(d, want, in);
        Simd().decode_decompress(d, got, in);
        ASSERT_TRUE(Same(want.c, got.c, kN, ("decode_decompress" + tag).c_str(), n));
      }
    }
  }
}

TEST_P(MlKemBackends, Messages) {
  for (int n = 0; n < 2 + RandomInputs(); ++n) {
    uint8_t m[kSymBytes];
    for (uint8_t& b : m) b = n == 0 ? 0 : n == 1 ? 0xff : static_cast<uint8_t>(rng_());
    Poly want, got;
    portable::PolyFromMessage(want, m);
    Simd().from_message(got, m);
    ASSERT_TRUE(Same(want.c, got.c, kN, "from_message", n));
    const Poly a = n < 13 ? Poly{} : Input(n - 13, 0, kQ - 1);
    Poly c = a;
    if (n < 13) {
      for (int i = 0; i < kN; ++i) c.c[i] = static_cast<int16_t>((n * kN + i) % kQ);
    }
    uint8_t mw[kSymBytes], mg[kSymBytes];
    portable::PolyToMessage(mw, c);
    Simd().to_message(mg, c);
    ASSERT_EQ(0, std::memcmp(mw, mg, kSymBytes)) << IsaName(GetParam()) << " to_message #" << n;
  }
}

TEST_P(MlKemBackends, Encode12Decode12) {
  for (int n = 0; n < 13 + kEdges + RandomInputs(); ++n) {
    Poly a;  // every canonical value, then edges and random canonical polynomials
    if (n < 13) {
      for (int i = 0; i < kN; ++i) a.c[i] = static_cast<int16_t>((n * kN + i) % kQ);
    } else {
      a = Input(n - 13, 0, kQ - 1);
    }
    uint8_t want[kPolyBytes], got[kPolyBytes];
    portable::PolyEncode12(want, a);
    Simd().encode12(got, a);
    ASSERT_EQ(0, std::memcmp(want, got, kPolyBytes)) << IsaName(GetParam()) << " encode12 #" << n;
    // Decoding any bytes (12-bit values up to 4095, some >= q).
    uint8_t in[kPolyBytes];
    for (uint8_t& b : in) b = n == 0 ? 0 : n == 1 ? 0xff : static_cast<uint8_t>(rng_());
    if (n % 2 == 0 && n >= 13) std::memcpy(in, want, kPolyBytes);  // valid keys too
    Poly pw, pg;
    portable::PolyDecode12(pw, in);
    Simd().decode12(pg, in);
    ASSERT_TRUE(Same(pw.c, pg.c, kN, "decode12", n));
    const bool ok_w = portable::DecodeEncapsKeyPoly(pw, in);
    const bool ok_g = Simd().decode_ek(pg, in);
    ASSERT_EQ(ok_w, ok_g) << IsaName(GetParam()) << " decode_ek #" << n;
    ASSERT_TRUE(Same(pw.c, pg.c, kN, "decode_ek", n));
  }
}

TEST_P(MlKemBackends, FusedPasses) {
  for (int d : {4, 5, 10, 11}) {
    for (int n = 0; n < kEdges + RandomInputs() / 4; ++n) {
      const Poly a = Input(n, -(kQ - 1), kQ - 1), b = Input(n, -(kQ - 1), kQ - 1);
      uint8_t m[kSymBytes];
      for (uint8_t& x : m) x = static_cast<uint8_t>(rng_());
      for (const uint8_t* msg :
           {static_cast<const uint8_t*>(nullptr), static_cast<const uint8_t*>(m)}) {
        Poly aw = a, ag = a;
        uint8_t want[32 * 11], got[32 * 11];
        portable::PolyAddCompressEncode(d, want, aw, b, msg);
        Simd().add_compress_encode(d, got, ag, b, msg);
        ASSERT_EQ(0, std::memcmp(want, got, 32 * d))
            << IsaName(GetParam()) << " add_compress_encode d=" << d << " #" << n;
      }
      Poly vw = a, vg = a;
      uint8_t mw[kSymBytes], mg[kSymBytes];
      portable::PolySubToMessage(mw, vw, b);
      Simd().sub_to_message(mg, vg, b);
      ASSERT_EQ(0, std::memcmp(mw, mg, kSymBytes))
          << IsaName(GetParam()) << " sub_to_message #" << n;
    }
  }
}

TEST_P(MlKemBackends, CtHelpers) {
  for (int n = 0; n < RandomInputs(); ++n) {
    const size_t len = n % 1600;  // 0 and lengths around the 16-byte vectors and ciphertext sizes
    std::vector<uint8_t> a(len), b;
    for (uint8_t& x : a) x = static_cast<uint8_t>(rng_());
    b = a;
    if (len > 0 && n % 3 != 0) b[rng_() % len] ^= static_cast<uint8_t>(1u << (n % 8));
    ASSERT_EQ(portable::CtDiffMask(a.data(), b.data(), len),
              Simd().ct_diff_mask(a.data(), b.data(), len))
        << IsaName(GetParam()) << " ct_diff_mask len " << len;
    uint8_t dw[32], dg[32], src[32];
    for (int i = 0; i < 32; ++i) {
      dw[i] = dg[i] = static_cast<uint8_t>(rng_());
      src[i] = static_cast<uint8_t>(rng_());
    }
    const uint8_t mask = n % 2 ? 0xff : 0x00;
    portable::CtSelect32(dw, src, mask);
    Simd().ct_select32(dg, src, mask);
    ASSERT_EQ(0, std::memcmp(dw, dg, 32)) << IsaName(GetParam()) << " ct_select32 #" << n;
  }
}

// reject_uniform: random XOF-like buffers (some biased toward candidates >= q, one alternating
// q-1 / q) of 168, 504 and every other multiple of 3 below 504 bytes, any `wanted`; the count and
// the accepted values must equal portable's.
TEST_P(MlKemBackends, RejectUniform) {
  if (Simd().reject_uniform == kPortable.reject_uniform) GTEST_SKIP() << "portable reject_uniform";
  alignas(32) uint8_t buf[3 * 168 + 32] = {};
  for (int n = 0; n < RandomInputs(); ++n) {
    const size_t len = n % 3 == 0 ? 168 : n % 3 == 1 ? 3 * 168 : 3 * static_cast<size_t>(n % 168);
    for (size_t i = 0; i < len; ++i) buf[i] = static_cast<uint8_t>(rng_());
    if (n % 5 == 0) {
      for (size_t i = 1; i < len; i += 3) buf[i] |= 0xd0;
    }
    if (n == 1) {
      for (size_t i = 0; i + 3 <= len; i += 3) {
        const uint32_t v = (kQ - 1) | (uint32_t{kQ} << 12);
        buf[i] = static_cast<uint8_t>(v);
        buf[i + 1] = static_cast<uint8_t>(v >> 8);
        buf[i + 2] = static_cast<uint8_t>(v >> 16);
      }
    }
    const int wanted = n < 256 ? 1 + n : 1 + static_cast<int>(rng_() % kN);
    int16_t want[kN], got[kN];
    const int c1 = portable::RejectUniform(want, wanted, buf, len);
    const int c2 = Simd().reject_uniform(got, wanted, buf, len);
    ASSERT_EQ(c1, c2) << IsaName(GetParam()) << " reject_uniform count, input #" << n << " len "
                      << len << " wanted " << wanted;
    ASSERT_TRUE(Same(want, got, static_cast<size_t>(c1), "reject_uniform", n));
  }
}

// reject_uniform edges: nothing accepted, everything accepted, only q-1 (accepted) beside values
// >= q, random; every length that is a multiple of 3 up to 504; counts that fill `wanted` exactly
// at and around the 8-lane stores and 32-candidate steps. out[wanted..) must stay untouched.
TEST_P(MlKemBackends, RejectUniformEdges) {
  if (Simd().reject_uniform == kPortable.reject_uniform) GTEST_SKIP() << "portable reject_uniform";
  alignas(32) uint8_t buf[3 * 168 + 32] = {};
  int input = 0;
  for (int pattern = 0; pattern < 4; ++pattern) {
    for (size_t len = 0; len <= 3 * 168; len += 3) {
      for (int wanted : {1, 7, 8, 9, 15, 16, 31, 32, 33, 64, 128, 224, 255, 256}) {
        for (size_t i = 0; i < len; ++i) {
          buf[i] = pattern == 0   ? 0xff
                   : pattern == 1 ? 0x00
                   : pattern == 2 ? static_cast<uint8_t>(i % 3 == 0 ? 0x00 : 0xd0)
                                  : static_cast<uint8_t>(rng_());
        }
        int16_t want[kN], got[kN];
        std::fill(std::begin(want), std::end(want), int16_t{-7});
        std::fill(std::begin(got), std::end(got), int16_t{-7});
        const int c1 = portable::RejectUniform(want, wanted, buf, len);
        const int c2 = Simd().reject_uniform(got, wanted, buf, len);
        ASSERT_EQ(c1, c2) << IsaName(GetParam()) << " reject_uniform count, edge input #" << input
                          << " len " << len << " wanted " << wanted;
        ASSERT_TRUE(Same(want, got, static_cast<size_t>(c1), "reject_uniform (edge)", input));
        ASSERT_TRUE(Same(want + wanted, got + wanted, static_cast<size_t>(kN - wanted),
                         "reject_uniform (edge, past wanted)", input));
        ++input;
      }
    }
  }
}

// The start-up check (backend_check.cc, run before the ISA is first selected) passes this table
// and fails it once a hook is wrong: here a table whose ntt, cbd or reject_uniform differs from
// the real one (each alone), built from the ISA's table.
void WrongNtt(Poly& a) {
  portable::PolyNtt(a);
  a.c[17] ^= 1;
}
void WrongCbd(int eta, Poly& a, const uint8_t* buf) {
  portable::Cbd(eta, a, buf);
  a.c[255] = static_cast<int16_t>(-a.c[255] + 1);
}
int WrongReject(int16_t* out, int wanted, const uint8_t* buf, size_t len) {
  const int n = portable::RejectUniform(out, wanted, buf, len);
  return n > 0 ? n - 1 : n;
}
TEST_P(MlKemBackends, StartUpCheckPassesTheTableAndCatchesAWrongHook) {
  EXPECT_TRUE(TableMatchesPortable(Simd()));
  EXPECT_TRUE(SelfCheck(GetParam()));
  Backend wrong = Simd();
  wrong.ntt = &WrongNtt;
  EXPECT_FALSE(TableMatchesPortable(wrong));
  wrong = Simd();
  wrong.cbd = &WrongCbd;
  EXPECT_FALSE(TableMatchesPortable(wrong));
  wrong = Simd();
  wrong.reject_uniform = &WrongReject;
  EXPECT_FALSE(TableMatchesPortable(wrong));
}

// The start-up self-check keeps every SIMD backend the CPU can run (its check of this family's
// table passes), so the tests above ran rather than skipped.
TEST(MlKemBackendsSelfCheck, KeepsEveryBackendTheCpuRuns) {
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!pqcd::testing::CpuRunsIsa(isa)) continue;
    EXPECT_TRUE(IsaSupported(isa))
        << IsaName(isa) << ": the CPU runs it, the self-check refused it";
  }
}

// Each table, as its backend's WithKernels builds it from the hook list: a hook in the backend's
// kKernels is its own kernel, any other the table it builds on (avx512 on avx2, the others on the
// portable one). Pointer comparisons only: runs whatever the CPU.
TEST(MlKemTables, EachHookIsTheBackendsKernelOrTheInheritedOne) {
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
#include "mlkem/hooks.def"
#elif defined(__aarch64__)
  const Backend& n = BackendFor(Isa::kNeon);
#define PQCD_HOOK(hook, Kernel, Ret, Params)            \
  if constexpr (neon::kKernels.Has(Hook::hook)) {       \
    EXPECT_EQ(n.hook, &neon::Kernel) << "neon " #hook;  \
  } else {                                              \
    EXPECT_EQ(n.hook, kPortable.hook) << "neon " #hook; \
  }
#include "mlkem/hooks.def"
#else
  GTEST_SKIP() << "no SIMD backend on this architecture";
#endif
}

INSTANTIATE_TEST_SUITE_P(AllSimd, MlKemBackends,
                         ::testing::Values(Isa::kAvx2, Isa::kAvx512, Isa::kNeon),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(IsaName(info.param));
                         });

}  // namespace
}  // namespace pqcd::kernels::mlkem
