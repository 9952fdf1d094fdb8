// ML-DSA polynomial kernels against their FIPS 204 definitions: exhaustive over [0, q) for the
// rounding functions (the constant-time multiply-shift forms must equal the division-based text),
// NTT products against schoolbook multiplication, the documented bounds at extreme inputs, packing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_support.h"
// Internal header of pqcd_mldsa (not on the public include path).
#include "mldsa/poly.h"
#include "mldsa/sample.h"
#include "pqcd/kernels/isa.h"

namespace pqcd::kernels::mldsa {
namespace {

constexpr int32_t kG2Small = (kQ - 1) / 88;
constexpr int32_t kG2Large = (kQ - 1) / 32;

uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// r mod+- m in (-m/2, m/2] for even m.
int32_t ModPm(int32_t r, int32_t m) {
  int32_t v = ((r % m) + m) % m;
  return v > m / 2 ? v - m : v;
}

// FIPS 204 Alg. 36, literally (division and branches: test only).
template <int32_t G2>
void RefDecompose(int32_t r, int32_t& r1, int32_t& r0) {
  const int32_t rp = ((r % kQ) + kQ) % kQ;
  r0 = ModPm(rp, 2 * G2);
  if (rp - r0 == kQ - 1) {
    r1 = 0;
    r0 = r0 - 1;
  } else {
    r1 = (rp - r0) / (2 * G2);
  }
}

template <int32_t G2>
int32_t RefHighBits(int32_t r) {
  int32_t r1, r0;
  RefDecompose<G2>(r, r1, r0);
  return r1;
}

// Runs f(poly_with_values_base..base+255) over all of [0, q).
template <class F>
void ForAllResidues(F f) {
  Poly p;
  for (int32_t base = 0; base < kQ; base += kN) {
    for (int i = 0; i < kN; ++i) p.coeffs[i] = base + i < kQ ? base + i : kQ - 1;
    f(p);
  }
}

template <int32_t G2>
void CheckDecomposeExhaustive() {
  size_t mismatches = 0;
  ForAllResidues([&](const Poly& r) {
    Poly r1, r0;
    Decompose<G2>(r1, r0, r);
    for (int i = 0; i < kN; ++i) {
      int32_t e1, e0;
      RefDecompose<G2>(r.coeffs[i], e1, e0);
      if (r1.coeffs[i] != e1 || r0.coeffs[i] != e0) {
        if (++mismatches < 5) {
          ADD_FAILURE() << "Decompose(" << r.coeffs[i] << "): got (" << r1.coeffs[i] << ", "
                        << r0.coeffs[i] << "), want (" << e1 << ", " << e0 << ")";
        }
      }
    }
  });
  EXPECT_EQ(mismatches, 0u);
}

TEST(MlDsaPoly, DecomposeExhaustive) {
  CheckDecomposeExhaustive<kG2Small>();
  CheckDecomposeExhaustive<kG2Large>();
}

TEST(MlDsaPoly, Power2RoundExhaustive) {
  size_t mismatches = 0;
  ForAllResidues([&](const Poly& t) {
    Poly t1, t0;
    Power2Round(t1, t0, t);
    for (int i = 0; i < kN; ++i) {
      const int32_t e0 = ModPm(t.coeffs[i], 1 << kD);
      const int32_t e1 = (t.coeffs[i] - e0) >> kD;
      if (t0.coeffs[i] != e0 || t1.coeffs[i] != e1) ++mismatches;
    }
  });
  EXPECT_EQ(mismatches, 0u);
}

template <int32_t G2>
void CheckUseHintExhaustive() {
  constexpr int32_t m = (kQ - 1) / (2 * G2);
  size_t mismatches = 0;
  Poly ones, zeros;
  for (int i = 0; i < kN; ++i) ones.coeffs[i] = 1, zeros.coeffs[i] = 0;
  ForAllResidues([&](const Poly& r) {
    Poly with, without;
    UseHint<G2>(with, r, ones);
    UseHint<G2>(without, r, zeros);
    for (int i = 0; i < kN; ++i) {
      int32_t r1, r0;
      RefDecompose<G2>(r.coeffs[i], r1, r0);
      const int32_t e = r0 > 0 ? (r1 + 1) % m : ((r1 - 1) % m + m) % m;
      if (with.coeffs[i] != e || without.coeffs[i] != r1) ++mismatches;
    }
  });
  EXPECT_EQ(mismatches, 0u);
}

TEST(MlDsaPoly, UseHintExhaustive) {
  CheckUseHintExhaustive<kG2Small>();
  CheckUseHintExhaustive<kG2Large>();
}

// The signer's low-bits MakeHint equals Alg. 39, MakeHint(-c t0, w - c s2 + c t0), whenever the
// signing checks passed: |LowBits(w - c s2)| < gamma2 - beta and |c t0| < gamma2.
template <int32_t G2>
void CheckMakeHint(int32_t beta) {
  uint64_t seed = static_cast<uint64_t>(G2);
  size_t checked = 0, ones_seen = 0;
  while (checked < 256 * 2000) {
    Poly a0, a1, h;
    int32_t r[kN], ct0[kN];
    for (int i = 0; i < kN; ++i) {
      int32_t lo;
      do {
        r[i] = static_cast<int32_t>(SplitMix(seed) % kQ);
        int32_t hi;
        RefDecompose<G2>(r[i], hi, lo);
        a1.coeffs[i] = hi;
      } while (lo <= -(G2 - beta) || lo >= G2 - beta);
      // Bias c t0 towards the edges so that hints occur.
      const uint64_t x = SplitMix(seed);
      const int32_t span = G2 - 1;
      const int32_t off = static_cast<int32_t>((x >> 2) % 64);
      ct0[i] = (x & 1) ? static_cast<int32_t>((x >> 8) % (2 * span + 1)) - span
                       : (((x >> 1) & 1) ? span - off : -span + off);
      a0.coeffs[i] = lo + ct0[i];
    }
    const unsigned count = MakeHint<G2>(h, a0, a1);
    unsigned ref_count = 0;
    for (int i = 0; i < kN; ++i) {
      const int32_t shifted = ((r[i] + ct0[i]) % kQ + kQ) % kQ;
      const int32_t e = RefHighBits<G2>(shifted) != RefHighBits<G2>(r[i]) ? 1 : 0;
      ref_count += e;
      ASSERT_EQ(h.coeffs[i], e) << "r=" << r[i] << " ct0=" << ct0[i];
    }
    ASSERT_EQ(count, ref_count);
    ones_seen += count;
    checked += kN;
  }
  EXPECT_GT(ones_seen, 1000u);
}

TEST(MlDsaPoly, MakeHintMatchesAlg39) {
  CheckMakeHint<kG2Small>(78);
  CheckMakeHint<kG2Large>(196);
  CheckMakeHint<kG2Large>(120);
}

// Negacyclic schoolbook product mod q.
Poly Schoolbook(const Poly& a, const Poly& b) {
  std::vector<int64_t> acc(kN, 0);
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      const int64_t prod = static_cast<int64_t>(a.coeffs[i]) * b.coeffs[j] % kQ;
      if (i + j < kN) {
        acc[i + j] += prod;
      } else {
        acc[i + j - kN] -= prod;
      }
    }
  }
  Poly c;
  for (int i = 0; i < kN; ++i) c.coeffs[i] = static_cast<int32_t>(((acc[i] % kQ) + kQ) % kQ);
  return c;
}

Poly NttProduct(Poly a, Poly b) {
  Ntt(a);
  Ntt(b);
  for (int i = 0; i < kN; ++i) {
    EXPECT_LT(std::abs(a.coeffs[i]), 9 * kQ);
    EXPECT_LT(std::abs(b.coeffs[i]), 9 * kQ);
  }
  Poly c;
  PointwiseMontgomery(c, a, b);
  InvNttToMont(c);
  for (int i = 0; i < kN; ++i) EXPECT_LT(std::abs(c.coeffs[i]), kQ);
  CAddQ(c);
  return c;
}

TEST(MlDsaPoly, NttMultiplicationMatchesSchoolbook) {
  uint64_t seed = 1;
  for (int round = 0; round < 6; ++round) {
    Poly a, b;
    for (int i = 0; i < kN; ++i) {
      switch (round) {
        case 0:  // extremes
          a.coeffs[i] = kQ - 1;
          b.coeffs[i] = -(kQ - 1);
          break;
        case 1:
          a.coeffs[i] = (i & 1) ? kQ - 1 : -(kQ - 1);
          b.coeffs[i] = i == 0 ? 1 : 0;
          break;
        default:
          a.coeffs[i] = static_cast<int32_t>(SplitMix(seed) % (2 * kQ - 1)) - (kQ - 1);
          b.coeffs[i] = static_cast<int32_t>(SplitMix(seed) % (2 * kQ - 1)) - (kQ - 1);
      }
    }
    const Poly got = NttProduct(a, b);
    const Poly want = Schoolbook(a, b);
    for (int i = 0; i < kN; ++i) {
      ASSERT_EQ(got.coeffs[i], want.coeffs[i]) << "round " << round << " index " << i;
    }
  }
}

// SampleInBall (constant time, secret c~) equals FIPS 204 Alg. 29 (SampleInBallPublic, the plain
// loop) on every backend: for every c~ length (32, 48, 64 bytes) and every tau (39, 49, 60),
// edge c~ (all zeros, all ones) and 10,000 random c~ each; then with tiny first budgets so that
// the continuation (rest of the block, further blocks) runs.
TEST(MlDsaPoly, SampleInBallMatchesFips) {
  pqcd::testing::ScopedIsa restore;
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    uint64_t seed = 11;
    int checked = 0;
    for (size_t len : {32, 48, 64}) {
      for (int tau : {39, 49, 60}) {
        const int count = 2 + pqcd::testing::Iterations(10000, 1000);  // PQCD_TEST_QUICK
        for (int n = 0; n < count; ++n) {
          uint8_t c_tilde[64];
          for (size_t k = 0; k < len; ++k) {
            c_tilde[k] = n == 0 ? 0 : n == 1 ? 0xff : static_cast<uint8_t>(SplitMix(seed));
          }
          const size_t budget = n % 500 == 7 ? 1 + n % 61 : 0;  // 0: the default budget
          Poly got, want;
          SampleInBall(got, c_tilde, len, tau, budget);
          SampleInBallPublic(want, c_tilde, len, tau);
          int weight = 0;
          for (int i = 0; i < kN; ++i) {
            ASSERT_EQ(got.coeffs[i], want.coeffs[i])
                << IsaName(isa) << " len " << len << " tau " << tau << " #" << n << " budget "
                << budget << ": first differing index " << i;
            weight += want.coeffs[i] != 0;
          }
          ASSERT_EQ(weight, tau);
          ++checked;
        }
      }
    }
    std::printf("[sampleinball] %s: %d c~ checked\n", std::string(IsaName(isa)).c_str(), checked);
  }
}

// The signer's challenge products (NTT(c), pointwise products, inverse NTT, Reduce32) equal exact
// (integer, negacyclic) schoolbook products on every backend: c from SampleInBall with tau = 39 /
// 49 / 60, s in [-eta, eta], t0 in (-2^12, 2^12].
TEST(MlDsaPoly, ChallengeProductsMatchSchoolbook) {
  pqcd::testing::ScopedIsa restore;
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    uint64_t seed = 7;
    for (int round = 0; round < 60; ++round) {
      const int tau = round % 3 == 0 ? 39 : round % 3 == 1 ? 49 : 60;
      const int eta = round % 2 ? 2 : 4;
      uint8_t c_tilde[32];
      for (auto& b : c_tilde) b = static_cast<uint8_t>(SplitMix(seed));
      Poly c, s, t;
      SampleInBall(c, c_tilde, sizeof(c_tilde), tau);
      for (int i = 0; i < kN; ++i) {
        s.coeffs[i] = round == 0 ? eta : static_cast<int32_t>(SplitMix(seed) % (2 * eta + 1)) - eta;
        t.coeffs[i] = round == 0 ? (1 << 12) : static_cast<int32_t>(SplitMix(seed) % 8191) - 4095;
      }
      Poly c_hat = c, s_hat = s, t_hat = t, cs, ct;
      Ntt(c_hat);
      Ntt(s_hat);
      Ntt(t_hat);
      PointwiseMontgomery(cs, c_hat, s_hat);
      InvNttToMont(cs);
      Reduce32(cs);
      PointwiseMontgomery(ct, c_hat, t_hat);
      InvNttToMont(ct);
      Reduce32(ct);
      int64_t want_s[kN] = {}, want_t[kN] = {};
      for (int i = 0; i < kN; ++i) {
        for (int j = 0; j < kN; ++j) {
          const int sign = i + j < kN ? 1 : -1;
          want_s[(i + j) % kN] += sign * c.coeffs[i] * s.coeffs[j];
          want_t[(i + j) % kN] += sign * c.coeffs[i] * t.coeffs[j];
        }
      }
      for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(cs.coeffs[i], want_s[i]) << IsaName(isa) << " round " << round << " index " << i;
        ASSERT_EQ(ct.coeffs[i], want_t[i]) << IsaName(isa) << " round " << round << " index " << i;
      }
    }
  }
}

TEST(MlDsaPoly, InvNttBoundsAtExtremes) {
  for (int32_t v : {kQ, -kQ}) {
    Poly a;
    for (int i = 0; i < kN; ++i) a.coeffs[i] = v;
    InvNttToMont(a);
    for (int i = 0; i < kN; ++i) ASSERT_LT(std::abs(a.coeffs[i]), kQ);
  }
  // Accumulated products at the documented bound.
  Poly a[8], b[8], c;
  for (auto& p : a) {
    for (int i = 0; i < kN; ++i) p.coeffs[i] = kQ - 1;
  }
  for (auto& p : b) {
    for (int i = 0; i < kN; ++i) p.coeffs[i] = -(9 * kQ - 1);
  }
  PointwiseAccMontgomery(c, a, b, 8);
  for (int i = 0; i < kN; ++i) ASSERT_LT(std::abs(c.coeffs[i]), kQ);
}

TEST(MlDsaPoly, Reduce32AndNorm) {
  Poly a;
  const int32_t inputs[] = {INT32_MIN, -kQ, -1, 0, 1, kQ, 2 * kQ, INT32_MAX - (1 << 22)};
  for (int i = 0; i < kN; ++i) a.coeffs[i] = inputs[i % 8];
  Poly r = a;
  Reduce32(r);
  for (int i = 0; i < kN; ++i) {
    EXPECT_LE(std::abs(r.coeffs[i]), 6283008);
    EXPECT_EQ((static_cast<int64_t>(r.coeffs[i]) - a.coeffs[i]) % kQ, 0);
  }
  Poly z{};
  EXPECT_EQ(ExceedsNorm(z, 1), 0u);
  z.coeffs[200] = -5;
  EXPECT_EQ(ExceedsNorm(z, 6), 0u);
  EXPECT_EQ(ExceedsNorm(z, 5), 0xffffffffu);
  z.coeffs[200] = 5;
  EXPECT_EQ(ExceedsNorm(z, 5), 0xffffffffu);
}

TEST(MlDsaPoly, PackingRoundTrips) {
  uint64_t seed = 9;
  Poly p, q;
  uint8_t buf[640];
  // z, gamma1 = 2^17 and 2^19, including both ends of (-gamma1, gamma1].
  for (int bits : {17, 19}) {
    const int32_t g1 = 1 << bits;
    for (int i = 0; i < kN; ++i) {
      p.coeffs[i] = i == 0   ? g1
                    : i == 1 ? -g1 + 1
                             : static_cast<int32_t>(SplitMix(seed) % (2 * g1)) - g1 + 1;
    }
    if (bits == 17) {
      PackZ<17>(buf, p);
      UnpackZ<17>(q, buf);
    } else {
      PackZ<19>(buf, p);
      UnpackZ<19>(q, buf);
    }
    EXPECT_EQ(std::memcmp(p.coeffs, q.coeffs, sizeof(p.coeffs)), 0) << bits;
  }
  for (int i = 0; i < kN; ++i) p.coeffs[i] = static_cast<int32_t>(SplitMix(seed) % 8192) - 4095;
  PackT0(buf, p);
  UnpackT0(q, buf);
  EXPECT_EQ(std::memcmp(p.coeffs, q.coeffs, sizeof(p.coeffs)), 0);
  for (int i = 0; i < kN; ++i) p.coeffs[i] = static_cast<int32_t>(SplitMix(seed) % 1024);
  PackT1(buf, p);
  UnpackT1(q, buf);
  EXPECT_EQ(std::memcmp(p.coeffs, q.coeffs, sizeof(p.coeffs)), 0);
  for (int i = 0; i < kN; ++i) p.coeffs[i] = static_cast<int32_t>(SplitMix(seed) % 5) - 2;
  PackEta<2>(buf, p);
  EXPECT_EQ(UnpackEta<2>(q, buf), 0u);
  EXPECT_EQ(std::memcmp(p.coeffs, q.coeffs, sizeof(p.coeffs)), 0);
  buf[0] |= 0x07;  // first coefficient 2 - 7 = -5
  EXPECT_EQ(UnpackEta<2>(q, buf), 0xffffffffu);
  for (int i = 0; i < kN; ++i) p.coeffs[i] = static_cast<int32_t>(SplitMix(seed) % 9) - 4;
  PackEta<4>(buf, p);
  EXPECT_EQ(UnpackEta<4>(q, buf), 0u);
  EXPECT_EQ(std::memcmp(p.coeffs, q.coeffs, sizeof(p.coeffs)), 0);
  buf[127] |= 0xf0;
  EXPECT_EQ(UnpackEta<4>(q, buf), 0xffffffffu);
}

TEST(MlDsaPoly, HintPacking) {
  constexpr int k = 4, omega = 80;
  Poly h[k] = {};
  h[0].coeffs[3] = h[0].coeffs[200] = h[2].coeffs[0] = h[3].coeffs[255] = 1;
  uint8_t buf[omega + k];
  PackHint(buf, h, k, omega);
  Poly back[k];
  ASSERT_TRUE(UnpackHint(back, buf, k, omega));
  for (int i = 0; i < k; ++i) {
    EXPECT_EQ(std::memcmp(h[i].coeffs, back[i].coeffs, sizeof(h[i].coeffs)), 0);
  }
  uint8_t bad[omega + k];
  std::memcpy(bad, buf, sizeof(buf));
  bad[1] = 3;  // equal indices inside polynomial 0
  EXPECT_FALSE(UnpackHint(back, bad, k, omega));
  std::memcpy(bad, buf, sizeof(buf));
  bad[omega + 1] = 1;  // count decreases
  EXPECT_FALSE(UnpackHint(back, bad, k, omega));
  std::memcpy(bad, buf, sizeof(buf));
  bad[omega + 3] = omega + 1;  // too many
  EXPECT_FALSE(UnpackHint(back, bad, k, omega));
  std::memcpy(bad, buf, sizeof(buf));
  bad[omega - 1] = 9;  // padding
  EXPECT_FALSE(UnpackHint(back, bad, k, omega));
}

}  // namespace
}  // namespace pqcd::kernels::mldsa
