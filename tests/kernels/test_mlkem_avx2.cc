// Differential tests: every hook of the avx2 and avx512 ML-KEM tables (mlkem/backend.h,
// BackendFor(kAvx2), BackendFor(kAvx512)) against the portable kernel on edge inputs (zeros,
// extremes of the documented input bounds) and 10,000 random inputs each. The SIMD kernels perform
// the same reductions, so results must be bit-identical; a failure prints the first differing
// index. Each ISA's instance is skipped where the CPU lacks it (and on every other architecture).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "keccak/backend.h"
#include "keccak/keccak_multi.h"
#include "mlkem/backend.h"
#include "mlkem/fixed_lanes.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/isa.h"

namespace pqcd::kernels::mlkem {
namespace {

constexpr int kRandomInputs = 10000;

// Run once per SIMD ISA (the test parameter) against the table that backend runs.
class MlKemAvx2Test : public ::testing::TestWithParam<Isa> {
 public:
  void SetUp() override {
    if (!IsaSupported(GetParam())) GTEST_SKIP() << IsaName(GetParam()) << " not supported here";
    ASSERT_NE(&Simd(), &kPortable)
        << "the " << IsaName(GetParam()) << " backend has no ML-KEM table (arch/backends.h)";
  }
  // The table under test.
  const Backend& Simd() const { return BackendFor(GetParam()); }
  std::mt19937_64 rng_{0x6d6c6b656d};
  int16_t Uniform(int lo, int hi) {  // [lo, hi]
    return static_cast<int16_t>(std::uniform_int_distribution<int>(lo, hi)(rng_));
  }
  void Fill(Poly& p, int lo, int hi) {
    for (int16_t& c : p.c) c = Uniform(lo, hi);
  }
  void FillBytes(uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng_());
  }
  // Edge polynomials for inputs in [lo, hi].
  std::vector<Poly> Edges(int lo, int hi) {
    std::vector<Poly> e(5);
    for (int i = 0; i < kN; ++i) {
      e[0].c[i] = 0;
      e[1].c[i] = static_cast<int16_t>(hi);
      e[2].c[i] = static_cast<int16_t>(lo);
      e[3].c[i] = static_cast<int16_t>(i % 2 ? hi : lo);
      e[4].c[i] = static_cast<int16_t>(i % 3 == 0 ? hi : i % 3 == 1 ? lo : 0);
    }
    return e;
  }
};

// Returns true if equal; otherwise reports the first differing index.
template <class T>
bool Same(const T* want, const T* got, size_t n, const char* what, int input) {
  for (size_t i = 0; i < n; ++i) {
    if (want[i] != got[i]) {
      ADD_FAILURE() << what << ": input #" << input << " first difference at index " << i
                    << ": portable " << +want[i] << ", simd " << +got[i];
      return false;
    }
  }
  return true;
}

// Runs an in-place unary kernel on edge + random inputs in [lo, hi].
void CheckUnary(MlKemAvx2Test* t, const char* what, int lo, int hi, void (*ref)(Poly&),
                void (*simd)(Poly&)) {
  std::vector<Poly> inputs = t->Edges(lo, hi);
  for (int n = 0; n < static_cast<int>(inputs.size()) + kRandomInputs; ++n) {
    Poly in;
    if (n < static_cast<int>(inputs.size())) {
      in = inputs[n];
    } else {
      t->Fill(in, lo, hi);
    }
    Poly a = in, b = in;
    ref(a);
    simd(b);
    if (!Same(a.c, b.c, kN, what, n)) return;
  }
}

TEST_P(MlKemAvx2Test, NttAndInverse) {
  CheckUnary(this, "PolyNtt", -(kQ - 1), kQ - 1, portable::PolyNtt, Simd().ntt);
  CheckUnary(this, "PolyInvNttTimesR", -(kQ - 1), kQ - 1, portable::PolyInvNttTimesR,
             Simd().invntt_times_r);
}

TEST_P(MlKemAvx2Test, Reductions) {
  CheckUnary(this, "PolyToMont", -32768, 32767, portable::PolyToMont, Simd().to_mont);
  CheckUnary(this, "PolyReduceCanonical", -32768, 32767, portable::PolyReduceCanonical,
             Simd().reduce_canonical);
  // Every int16 through the Barrett + conditional add and the Montgomery multiplication.
  for (int base = -32768; base < 32768; base += kN) {
    Poly a, b;
    for (int i = 0; i < kN; ++i) a.c[i] = static_cast<int16_t>(base + i);
    b = a;
    portable::PolyReduceCanonical(a);
    Simd().reduce_canonical(b);
    ASSERT_TRUE(Same(a.c, b.c, kN, "PolyReduceCanonical exhaustive", base));
    for (int i = 0; i < kN; ++i) a.c[i] = b.c[i] = static_cast<int16_t>(base + i);
    portable::PolyToMont(a);
    Simd().to_mont(b);
    ASSERT_TRUE(Same(a.c, b.c, kN, "PolyToMont exhaustive", base));
  }
}

TEST_P(MlKemAvx2Test, AddSub) {
  for (int n = 0; n < kRandomInputs; ++n) {
    Poly r, a;
    Fill(r, -32768, 32767);
    Fill(a, -32768, 32767);
    Poly r1 = r, r2 = r;
    portable::PolyAdd(r1, a);
    Simd().add(r2, a);
    ASSERT_TRUE(Same(r1.c, r2.c, kN, "PolyAdd", n));
    r1 = r2 = r;
    portable::PolySub(r1, a);
    Simd().sub(r2, a);
    ASSERT_TRUE(Same(r1.c, r2.c, kN, "PolySub", n));
  }
}

TEST_P(MlKemAvx2Test, MulCacheAndBasemulAcc) {
  const int lo = -(kQ - 1), hi = kQ - 1;
  std::vector<Poly> edges = Edges(lo, hi);
  for (int n = 0; n < kRandomInputs + 25; ++n) {
    Poly a[4], b[4];
    PolyMulCache cache[4];
    for (int j = 0; j < 4; ++j) {
      if (n < 25) {
        a[j] = edges[n % 5];
        b[j] = edges[(n / 5) % 5];
      } else {
        Fill(a[j], lo, hi);
        Fill(b[j], lo, hi);
      }
      PolyMulCache c1, c2;
      portable::PolyMulCacheCompute(c1, b[j]);
      Simd().mulcache_compute(c2, b[j]);
      ASSERT_TRUE(Same(c1.c, c2.c, kN / 2, "PolyMulCacheCompute", n));
      cache[j] = c1;
      // Extremes of the cache bound too (the contract allows any |cache| < q).
      if (n >= 25 && n % 7 == 0) {
        for (int16_t& c : cache[j].c) c = Uniform(0, 1) ? hi : lo;
      }
    }
    const int k = 1 + n % 4;
    Poly o1, o2;
    portable::PolyBasemulAcc(o1, a, b, cache, k);
    Simd().basemul_acc(o2, a, b, cache, k);
    ASSERT_TRUE(Same(o1.c, o2.c, kN, "PolyBasemulAcc", n));
  }
}

TEST_P(MlKemAvx2Test, Encode12Decode12) {
  std::vector<Poly> edges = Edges(0, kQ - 1);
  for (int n = 0; n < kRandomInputs + 5; ++n) {
    Poly a;
    if (n < 5) {
      a = edges[n];
    } else {
      Fill(a, 0, kQ - 1);
    }
    // Same canary bytes after the 384 output bytes: the kernels must write exactly 384.
    uint8_t e1[kPolyBytes + 32], e2[kPolyBytes + 32];
    std::memset(e1, 0x5a, sizeof(e1));
    std::memset(e2, 0x5a, sizeof(e2));
    portable::PolyEncode12(e1, a);
    Simd().encode12(e2, a);
    ASSERT_TRUE(Same(e1, e2, sizeof(e1), "PolyEncode12", n));
    // Decode of arbitrary bytes (values up to 4095) and of valid encodings, from a heap buffer
    // of exactly 384 bytes (memcheck flags any read past it).
    std::vector<uint8_t> in_buf(kPolyBytes);
    uint8_t* in = in_buf.data();
    if (n % 2) {
      FillBytes(in, kPolyBytes);
    } else {
      std::memcpy(in, e1, kPolyBytes);
    }
    if (n == 1) std::memset(in, 0xff, kPolyBytes);
    Poly d1, d2;
    portable::PolyDecode12(d1, in);
    Simd().decode12(d2, in);
    ASSERT_TRUE(Same(d1.c, d2.c, kN, "PolyDecode12", n));
    const bool ok1 = portable::DecodeEncapsKeyPoly(d1, in);
    const bool ok2 = Simd().decode_ek(d2, in);
    ASSERT_EQ(ok1, ok2) << "DecodeEncapsKeyPoly verdict, input #" << n;
    ASSERT_TRUE(Same(d1.c, d2.c, kN, "DecodeEncapsKeyPoly", n));
  }
  // A single out-of-range value at every position is caught.
  for (int pos = 0; pos < kN; ++pos) {
    Poly a;
    Fill(a, 0, kQ - 1);
    uint8_t in[kPolyBytes];
    portable::PolyEncode12(in, a);
    const int bit = 12 * pos;  // value `pos` := q
    uint32_t v = kQ;
    for (int b = 0; b < 12; ++b, v >>= 1) {
      in[(bit + b) / 8] = static_cast<uint8_t>((in[(bit + b) / 8] & ~(1 << ((bit + b) % 8))) |
                                               ((v & 1) << ((bit + b) % 8)));
    }
    Poly d;
    ASSERT_FALSE(Simd().decode_ek(d, in)) << "position " << pos;
  }
}

TEST_P(MlKemAvx2Test, CompressDecompress) {
  for (int d : {4, 5, 10, 11}) {
    std::vector<Poly> edges = Edges(0, kQ - 1);
    // Exhaustive over [0, q) first (13 polynomials), then edges and random.
    for (int n = 0; n < 13 + 5 + kRandomInputs; ++n) {
      Poly a;
      if (n < 13) {
        for (int i = 0; i < kN; ++i) a.c[i] = static_cast<int16_t>((n * kN + i) % kQ);
      } else if (n < 18) {
        a = edges[n - 13];
      } else {
        Fill(a, 0, kQ - 1);
      }
      // Same canary bytes after the 32·d output bytes: the kernels must write exactly 32·d.
      uint8_t c1[32 * 11 + 32], c2[32 * 11 + 32];
      std::memset(c1, 0x5a, sizeof(c1));
      std::memset(c2, 0x5a, sizeof(c2));
      portable::PolyCompressEncode(d, c1, a);
      Simd().compress_encode(d, c2, a);
      ASSERT_TRUE(Same(c1, c2, sizeof(c1), "PolyCompressEncode", n)) << " d=" << d;
      // Input in a heap buffer of exactly 32·d bytes (memcheck flags any read past it).
      std::vector<uint8_t> in(32 * static_cast<size_t>(d));
      FillBytes(in.data(), in.size());
      if (n == 0) std::memset(in.data(), 0xff, in.size());
      if (n == 1) std::memset(in.data(), 0, in.size());
      Poly p1, p2;
      portable::PolyDecodeDecompress(d, p1, in.data());
      Simd().decode_decompress(d, p2, in.data());
      ASSERT_TRUE(Same(p1.c, p2.c, kN, "PolyDecodeDecompress", n)) << " d=" << d;
    }
  }
}

TEST_P(MlKemAvx2Test, Message) {
  for (int n = 0; n < 13 + kRandomInputs; ++n) {
    Poly a;
    if (n < 13) {
      for (int i = 0; i < kN; ++i) a.c[i] = static_cast<int16_t>((n * kN + i) % kQ);
    } else {
      Fill(a, 0, kQ - 1);
    }
    uint8_t m1[kSymBytes], m2[kSymBytes];
    portable::PolyToMessage(m1, a);
    Simd().to_message(m2, a);
    ASSERT_TRUE(Same(m1, m2, kSymBytes, "PolyToMessage", n));
    FillBytes(m1, sizeof(m1));
    if (n == 0) std::memset(m1, 0xff, sizeof(m1));
    Poly p1, p2;
    portable::PolyFromMessage(p1, m1);
    Simd().from_message(p2, m1);
    ASSERT_TRUE(Same(p1.c, p2.c, kN, "PolyFromMessage", n));
  }
}

// Fused add + (message) + reduce + compress + encode: against the portable composition, with the
// output canaries of CompressDecompress. Inputs: edges (sums at ±(q-1) ± 3 and the int16 extremes
// Barrett accepts) and random inputs in the ranges Encrypt produces (|a| < q, |b| <= 3) and wider.
TEST_P(MlKemAvx2Test, AddCompressEncode) {
  for (int d : {4, 5, 10, 11}) {
    for (bool msg : {false, true}) {
      for (int n = 0; n < 6 + kRandomInputs; ++n) {
        Poly a, b;
        uint8_t m[kSymBytes];
        FillBytes(m, sizeof(m));
        if (n < 6) {
          const int16_t av[6] = {0, kQ - 1, -(kQ - 1), 16000, -16000, kQ - 1};
          const int16_t bv[6] = {0, 3, -3, 3, -3, -(kQ - 1)};
          for (int i = 0; i < kN; ++i) {
            a.c[i] = static_cast<int16_t>(i % 2 ? av[n] : -av[n]);
            b.c[i] = static_cast<int16_t>(i % 3 ? bv[n] : -bv[n]);
          }
          if (n == 1) std::memset(m, 0xff, sizeof(m));
          if (n == 2) std::memset(m, 0, sizeof(m));
        } else if (n % 4 == 0) {
          Fill(a, -15000, 15000);
          Fill(b, -kQ, kQ);
        } else {
          Fill(a, -(kQ - 1), kQ - 1);
          Fill(b, -3, 3);
        }
        uint8_t c1[32 * 11 + 32], c2[32 * 11 + 32];
        std::memset(c1, 0x5a, sizeof(c1));
        std::memset(c2, 0x5a, sizeof(c2));
        Poly a1 = a, a2 = a;
        portable::PolyAddCompressEncode(d, c1, a1, b, msg ? m : nullptr);
        Simd().add_compress_encode(d, c2, a2, b, msg ? m : nullptr);
        ASSERT_TRUE(Same(c1, c2, sizeof(c1), "PolyAddCompressEncode", n))
            << " d=" << d << " msg=" << msg;
        // The portable kernel is the composition of the unfused ones.
        Poly r = a, mu;
        portable::PolyAdd(r, b);
        if (msg) {
          portable::PolyFromMessage(mu, m);
          portable::PolyAdd(r, mu);
        }
        portable::PolyReduceCanonical(r);
        uint8_t c3[32 * 11 + 32];
        std::memset(c3, 0x5a, sizeof(c3));
        portable::PolyCompressEncode(d, c3, r);
        ASSERT_TRUE(Same(c3, c1, sizeof(c1), "PolyAddCompressEncode (portable)", n));
      }
    }
  }
}

TEST_P(MlKemAvx2Test, SubToMessage) {
  for (int n = 0; n < 5 + kRandomInputs; ++n) {
    Poly v, w;
    if (n < 5) {
      const int16_t vv[5] = {0, kQ - 1, 0, 16000, 833};
      const int16_t wv[5] = {0, -(kQ - 1), kQ - 1, -16000, 0};
      for (int i = 0; i < kN; ++i) {
        v.c[i] = static_cast<int16_t>(vv[n] + (n == 4 ? i % 7 : 0));
        w.c[i] = wv[n];
      }
    } else {
      Fill(v, 0, kQ - 1);
      Fill(w, n % 3 == 0 ? -15000 : -(kQ - 1), n % 3 == 0 ? 15000 : kQ - 1);
    }
    uint8_t m1[kSymBytes], m2[kSymBytes], m3[kSymBytes];
    Poly v1 = v, v2 = v, v3 = v;
    portable::PolySubToMessage(m1, v1, w);
    Simd().sub_to_message(m2, v2, w);
    ASSERT_TRUE(Same(m1, m2, kSymBytes, "PolySubToMessage", n));
    portable::PolySub(v3, w);
    portable::PolyReduceCanonical(v3);
    portable::PolyToMessage(m3, v3);
    ASSERT_TRUE(Same(m3, m1, kSymBytes, "PolySubToMessage (portable)", n));
  }
}

// Constant-time compare and select of the Decaps FO check against the byte loops.
TEST_P(MlKemAvx2Test, CtDiffMaskAndSelect) {
  std::vector<uint8_t> a(1600), b(1600);
  for (int n = 0; n < kRandomInputs; ++n) {
    const size_t len = n % 4 == 0 ? 768 : n % 4 == 1 ? 1088 : n % 4 == 2 ? 1568 : n % 1600;
    FillBytes(a.data(), len);
    b = a;
    if (n % 2 == 1 && len > 0) {
      const size_t at = n < 1600 ? static_cast<size_t>(n) % len : rng_() % len;  // every position
      b[at] ^= static_cast<uint8_t>(1u << (rng_() % 8));
    }
    const uint8_t want = static_cast<uint8_t>(CtMaskNonZero(CtCompare(a.data(), b.data(), len)));
    ASSERT_EQ(want, Simd().ct_diff_mask(a.data(), b.data(), len)) << "CtDiffMask, input #" << n;
    uint8_t d1[32], d2[32], src[32];
    FillBytes(d1, 32);
    FillBytes(src, 32);
    std::memcpy(d2, d1, 32);
    CtSelect(d1, src, 32, want);
    Simd().ct_select32(d2, src, want);
    ASSERT_TRUE(Same(d1, d2, 32, "CtSelect32", n));
  }
}

TEST_P(MlKemAvx2Test, RejectUniform) {
  alignas(32) uint8_t buf[3 * 168 + 32] = {};
  for (int n = 0; n < kRandomInputs; ++n) {
    const size_t len = n % 3 == 0 ? 168 : n % 3 == 1 ? 3 * 168 : 3 * static_cast<size_t>(n % 168);
    FillBytes(buf, len);
    // Bias some inputs toward values >= q (more rejections) and exact boundary values.
    if (n % 5 == 0) {
      for (size_t i = 1; i < len; i += 3) buf[i] |= 0xd0;
    }
    if (n == 1) {  // 12-bit values q-1 and q alternating
      for (size_t i = 0; i + 3 <= len; i += 3) {
        const uint32_t v = (kQ - 1) | (uint32_t{kQ} << 12);
        buf[i] = static_cast<uint8_t>(v);
        buf[i + 1] = static_cast<uint8_t>(v >> 8);
        buf[i + 2] = static_cast<uint8_t>(v >> 16);
      }
    }
    const int wanted = n < 256 ? 1 + n : 1 + static_cast<int>(rng_() % kN);
    int16_t o1[kN], o2[kN];
    const int c1 = portable::RejectUniform(o1, wanted, buf, len);
    const int c2 = Simd().reject_uniform(o2, wanted, buf, len);
    ASSERT_EQ(c1, c2) << "RejectUniform count, input #" << n << " wanted " << wanted;
    ASSERT_TRUE(Same(o1, o2, static_cast<size_t>(c1), "RejectUniform", n));
  }
}

// Edges of the two-pass AVX2 rejection: nothing accepted, everything accepted (all groups written
// straight to out), values q-1 / q, exact fills of `wanted`, every length that is a multiple of 3;
// out[wanted..] must stay untouched (slots between the count and `wanted` may be scratch).
TEST_P(MlKemAvx2Test, RejectUniformEdges) {
  alignas(32) uint8_t buf[3 * 168 + 32] = {};
  int input = 0;
  for (int pattern = 0; pattern < 4; ++pattern) {
    for (size_t len = 0; len <= 3 * 168; len += 3) {
      for (int wanted : {1, 15, 16, 31, 32, 33, 128, 255, 256}) {
        for (size_t i = 0; i < len; ++i) {
          buf[i] = pattern == 0   ? 0xff
                   : pattern == 1 ? 0x00
                   : pattern == 2 ? static_cast<uint8_t>(i % 3 == 0 ? 0x00 : 0xd0)  // q-1 < 0xd00
                                  : static_cast<uint8_t>(rng_());
        }
        int16_t o1[kN], o2[kN];
        std::fill(std::begin(o1), std::end(o1), int16_t{-7});
        std::fill(std::begin(o2), std::end(o2), int16_t{-7});
        const int c1 = portable::RejectUniform(o1, wanted, buf, len);
        const int c2 = Simd().reject_uniform(o2, wanted, buf, len);
        ASSERT_EQ(c1, c2) << "RejectUniform count, edge input #" << input << " len " << len
                          << " wanted " << wanted;
        ASSERT_TRUE(Same(o1, o2, static_cast<size_t>(c1), "RejectUniform (edge)", input));
        ASSERT_TRUE(Same(o1 + wanted, o2 + wanted, static_cast<size_t>(kN - wanted),
                         "RejectUniform (edge, past wanted)", input));
        ++input;
      }
    }
  }
}

TEST_P(MlKemAvx2Test, Cbd) {
  alignas(32) uint8_t buf[192 + 32] = {};
  for (int eta : {2, 3}) {
    for (int n = 0; n < kRandomInputs + 2; ++n) {
      FillBytes(buf, 64 * static_cast<size_t>(eta));
      if (n == 0) std::memset(buf, 0xff, 192);
      if (n == 1) std::memset(buf, 0, 192);
      Poly p1, p2;
      portable::Cbd(eta, p1, buf);
      Simd().cbd(eta, p2, buf);
      ASSERT_TRUE(Same(p1.c, p2.c, kN, "Cbd", n)) << " eta=" << eta;
    }
  }
}

// The samples of K-PKE.Encrypt through the fixed lane plan (mlkem/fixed_lanes.h).
template <int K>
void SampleEncrypt(const uint8_t rho[32], const uint8_t coins[32], Poly* at, Poly* noise) {
  fixed::PlanIo io;
  io.rho = rho;
  io.seed = coins;
  io.matrix = at;
  io.noise = noise;
  fixed::LaneRunner lanes;
  lanes.Run<fixed::kEncryptPlan<K>>(io, [](auto) {});
}

template <int K>
void SamplersAgree(Isa isa, std::mt19937_64& rng) {
  for (int trial = 0; trial < 20; ++trial) {
    uint8_t rho[32], coins[32];
    for (auto& x : rho) x = static_cast<uint8_t>(rng());
    for (auto& x : coins) x = static_cast<uint8_t>(rng());
    Poly a[2][K * K], c[2][2 * K + 1];
    for (int b = 0; b < 2; ++b) {
      ASSERT_TRUE(SetActiveIsa(b == 0 ? Isa::kPortable : isa).ok());
      SampleEncrypt<K>(rho, coins, a[b], c[b]);
    }
    for (int t = 0; t < K * K; ++t) ASSERT_TRUE(Same(a[0][t].c, a[1][t].c, kN, "SampleNtt", t));
    for (int t = 0; t < 2 * K + 1; ++t) ASSERT_TRUE(Same(c[0][t].c, c[1][t].c, kN, "Cbd", t));
  }
}

// The plan's samplers give the same polynomials on every backend, for every k.
TEST_P(MlKemAvx2Test, SamplersAgreeAcrossBackends) {
  const Isa saved = ActiveIsa();
  std::mt19937_64 rng(99);
  SamplersAgree<2>(GetParam(), rng);
  SamplersAgree<3>(GetParam(), rng);
  SamplersAgree<4>(GetParam(), rng);
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

// The squeeze transpose as the fixed lane plans call it (whole 4-word groups of the four
// interleaved Keccak states; keccak/keccak_multi.h), against a word-by-word copy.
TEST_P(MlKemAvx2Test, LanesToBytes) {
  alignas(64) uint64_t st[100];
  constexpr size_t kStride = 200;
  for (int n = 0; n < kRandomInputs; ++n) {
    for (auto& w : st) w = n == 0 ? 0 : n == 1 ? ~uint64_t{0} : rng_();
    const size_t words = 1 + static_cast<size_t>(n % 24);
    const size_t covered = (words + 3) / 4 * 4;
    uint8_t want[4][kStride], got[4][kStride];
    std::memset(want, 0xa5, sizeof(want));
    std::memset(got, 0xa5, sizeof(got));
    for (size_t j = 0; j < 4; ++j) {
      for (size_t i = 0; i < covered; ++i) std::memcpy(want[j] + 8 * i, &st[4 * i + j], 8);
    }
    uint8_t* const outs[4] = {got[0], got[1], got[2], got[3]};
    keccak::BackendFor(GetParam()).extract_lanes4(st, 4, covered, outs);
    ASSERT_TRUE(Same(&want[0][0], &got[0][0], sizeof(want), "LanesToBytes", n));
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, MlKemAvx2Test, ::testing::Values(Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(IsaName(info.param));
                         });

}  // namespace
}  // namespace pqcd::kernels::mlkem
