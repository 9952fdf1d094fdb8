// ML-KEM polynomial module (kernels/src/mlkem/poly.h) against straightforward reference code
// written from the FIPS 203 definitions, on exhaustive, extreme and random inputs. These are the
// contracts a SIMD backend of the same functions must meet.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "common/test_support.h"
#include "mlkem/fixed_lanes.h"
#include "mlkem/poly.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels::mlkem {
namespace {

constexpr int64_t q = kQ;

int64_t Mod(int64_t a) {
  return ((a % q) + q) % q;
}
int64_t PowMod(int64_t b, int64_t e) {
  int64_t r = 1;
  b = Mod(b);
  for (; e > 0; e >>= 1, b = b * b % q) {
    if (e & 1) r = r * b % q;
  }
  return r;
}
int BitRev7(int k) {
  int r = 0;
  for (int i = 0; i < 7; ++i) r |= ((k >> i) & 1) << (6 - i);
  return r;
}
constexpr int64_t kR = 65536 % 3329;  // 2^16 mod q

// Reads value i of D bits from a little-endian bit string (ByteDecode's bit order).
uint32_t GetBits(const uint8_t* in, int d, int i) {
  uint32_t v = 0;
  for (int b = 0; b < d; ++b) v |= ((in[(i * d + b) / 8] >> ((i * d + b) % 8)) & 1u) << b;
  return v;
}
void PutBits(uint8_t* out, int d, int i, uint32_t v) {
  for (int b = 0; b < d; ++b) {
    const int bit = i * d + b;
    out[bit / 8] =
        static_cast<uint8_t>((out[bit / 8] & ~(1 << (bit % 8))) | (((v >> b) & 1) << (bit % 8)));
  }
}

// round(2^d / q · x) mod 2^d, from the definition (FIPS 203 §4.2.1), with exact integers.
uint32_t RefCompress(int d, int64_t x) {
  const int64_t num = x << d;
  int64_t r = num / q + (2 * (num % q) >= q ? 1 : 0);
  return static_cast<uint32_t>(r & ((1 << d) - 1));
}
int64_t RefDecompress(int d, int64_t y) {
  const int64_t num = q * y;
  return (num >> d) + (2 * (num & ((1 << d) - 1)) >= (1 << d) ? 1 : 0);
}

template <int D>
void CheckCompressExhaustive() {
  // All x in [0, q): 13 polynomials of 256 coefficients.
  for (int base = 0; base < q; base += kN) {
    Poly a;
    for (int i = 0; i < kN; ++i) a.c[i] = static_cast<int16_t>((base + i) % q);
    std::vector<uint8_t> out(32 * D);
    PolyCompressEncode<D>(out.data(), a);
    for (int i = 0; i < kN; ++i) {
      ASSERT_EQ(GetBits(out.data(), D, i), RefCompress(D, a.c[i])) << "D=" << D << " x=" << a.c[i];
    }
  }
  // Every y in [0, 2^D) decompresses to round(q/2^D · y).
  for (int base = 0; base < (1 << D); base += kN) {
    std::vector<uint8_t> in(32 * D, 0);
    for (int i = 0; i < kN; ++i)
      PutBits(in.data(), D, i, static_cast<uint32_t>((base + i) % (1 << D)));
    Poly a;
    PolyDecodeDecompress<D>(a, in.data());
    for (int i = 0; i < kN; ++i) {
      const int y = (base + i) % (1 << D);
      ASSERT_EQ(a.c[i], RefDecompress(D, y)) << "D=" << D << " y=" << y;
    }
  }
}

TEST(MlKemPoly, CompressDecompressExhaustive) {
  CheckCompressExhaustive<4>();
  CheckCompressExhaustive<5>();
  CheckCompressExhaustive<10>();
  CheckCompressExhaustive<11>();
}

TEST(MlKemPoly, MessageEncodingExhaustive) {
  for (int base = 0; base < q; base += kN) {
    Poly a;
    for (int i = 0; i < kN; ++i) a.c[i] = static_cast<int16_t>((base + i) % q);
    uint8_t m[32];
    PolyToMessage(m, a);
    for (int i = 0; i < kN; ++i) ASSERT_EQ(GetBits(m, 1, i), RefCompress(1, a.c[i])) << a.c[i];
  }
  uint8_t m[32];
  for (int i = 0; i < 32; ++i) m[i] = static_cast<uint8_t>(37 * i + 11);
  Poly mu;
  PolyFromMessage(mu, m);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(mu.c[i], GetBits(m, 1, i) ? 1665 : 0);
  uint8_t back[32];
  PolyToMessage(back, mu);
  EXPECT_EQ(0, std::memcmp(m, back, 32));
}

TEST(MlKemPoly, ReductionsExhaustive) {
  for (int base = -32768; base < 32768; base += kN) {
    Poly a, b;
    for (int i = 0; i < kN; ++i) a.c[i] = b.c[i] = static_cast<int16_t>(base + i);
    PolyReduceCanonical(a);
    PolyToMont(b);
    for (int i = 0; i < kN; ++i) {
      const int64_t x = base + i;
      ASSERT_EQ(a.c[i], Mod(x)) << x;
      ASSERT_LT(std::abs(b.c[i]), q) << x;
      ASSERT_EQ(Mod(b.c[i]), Mod(x * kR)) << x;
    }
  }
}

// FIPS 203 NTT from the definition: â[2i] + â[2i+1]X = f mod (X^2 - ζ^(2·BitRev7(i)+1)).
std::vector<int64_t> RefNtt(const Poly& f) {
  std::vector<int64_t> out(kN);
  for (int i = 0; i < 128; ++i) {
    const int64_t g = PowMod(17, 2 * BitRev7(i) + 1);
    int64_t e = 0, o = 0, p = 1;
    for (int j = 0; j < 128; ++j) {
      e = (e + Mod(f.c[2 * j]) * p) % q;
      o = (o + Mod(f.c[2 * j + 1]) * p) % q;
      p = p * g % q;
    }
    out[2 * i] = e;
    out[2 * i + 1] = o;
  }
  return out;
}

std::vector<Poly> TestPolys(std::mt19937& gen) {
  std::vector<Poly> v;
  Poly p;
  for (int16_t value : {int16_t{0}, int16_t{kQ - 1}, int16_t{-(kQ - 1)}, int16_t{1}}) {
    for (int i = 0; i < kN; ++i) p.c[i] = value;
    v.push_back(p);
  }
  for (int i = 0; i < kN; ++i) p.c[i] = static_cast<int16_t>(i % 2 ? kQ - 1 : -(kQ - 1));
  v.push_back(p);
  std::uniform_int_distribution<int> dist(-(kQ - 1), kQ - 1);
  for (int t = 0; t < 8; ++t) {
    for (int i = 0; i < kN; ++i) p.c[i] = static_cast<int16_t>(dist(gen));
    v.push_back(p);
  }
  return v;
}

TEST(MlKemPoly, NttMatchesDefinitionAndBounds) {
  std::mt19937 gen(1);
  for (const Poly& f : TestPolys(gen)) {
    Poly a = f;
    PolyNtt(a);
    const auto want = RefNtt(f);
    for (int i = 0; i < kN; ++i) {
      ASSERT_LE(std::abs(a.c[i]), (q - 1) / 2) << i;
      ASSERT_EQ(Mod(a.c[i]), want[i]) << "index " << i;
    }
    // Inverse: R · NTT^-1(NTT(f)) = R · f.
    PolyInvNttTimesR(a);
    for (int i = 0; i < kN; ++i) {
      ASSERT_LT(std::abs(a.c[i]), q) << i;
      ASSERT_EQ(Mod(a.c[i]), Mod(f.c[i] * kR)) << "index " << i;
    }
  }
}

// Schoolbook product in Z_q[X]/(X^256 + 1).
std::vector<int64_t> RefMul(const Poly& a, const Poly& b) {
  std::vector<int64_t> r(kN, 0);
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      const int64_t p = Mod(a.c[i]) * Mod(b.c[j]) % q;
      if (i + j < kN) {
        r[i + j] = (r[i + j] + p) % q;
      } else {
        r[i + j - kN] = Mod(r[i + j - kN] - p);
      }
    }
  }
  return r;
}

TEST(MlKemPoly, BasemulAccumulateMatchesSchoolbookWithExtremeInputs) {
  std::mt19937 gen(2);
  const std::vector<Poly> polys = TestPolys(gen);
  for (int k = 1; k <= 4; ++k) {
    for (int trial = 0; trial < 4; ++trial) {
      Poly a[4], b[4];
      PolyMulCache cache[4];
      std::vector<int64_t> want(kN, 0);
      for (int j = 0; j < k; ++j) {
        const Poly& fa = polys[(trial * 5 + j) % polys.size()];
        const Poly& fb = polys[(trial * 3 + 2 * j + 1) % polys.size()];
        const auto prod = RefMul(fa, fb);
        for (int i = 0; i < kN; ++i) want[i] = (want[i] + prod[i]) % q;
        a[j] = fa;
        b[j] = fb;
        PolyNtt(a[j]);
        PolyNtt(b[j]);
        // Worst case for the left operand: canonical values up to q-1 (as Â and t̂ are).
        PolyReduceCanonical(a[j]);
        PolyMulCacheCompute(cache[j], b[j]);
        for (int i = 0; i < kN / 2; ++i) ASSERT_LT(std::abs(cache[j].c[i]), q);
      }
      Poly out;
      PolyBasemulAcc(out, a, b, cache, k);
      for (int i = 0; i < kN; ++i) ASSERT_LT(std::abs(out.c[i]), q);
      PolyInvNttTimesR(out);  // R · R^-1 cancel
      for (int i = 0; i < kN; ++i) ASSERT_EQ(Mod(out.c[i]), want[i]) << "k=" << k << " i=" << i;
    }
  }
}

// The worst case of the contract: every operand at |q-1| with k = 4 (8 products per sum).
TEST(MlKemPoly, BasemulAccumulateWorstCaseBounds) {
  for (int sign : {1, -1}) {
    Poly a[4], b[4];
    PolyMulCache cache[4];
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < kN; ++i) {
        a[j].c[i] = static_cast<int16_t>(kQ - 1);
        b[j].c[i] = static_cast<int16_t>(sign * (kQ - 1));
      }
      for (int i = 0; i < kN / 2; ++i) cache[j].c[i] = static_cast<int16_t>(sign * (kQ - 1));
    }
    Poly out;
    PolyBasemulAcc(out, a, b, cache, 4);
    // Expected R^-1 · Σ (a0·b0 + a1·cache, a0·b1 + a1·b0) mod q.
    const int64_t prod = Mod(4 * 2 * (q - 1) * sign * (q - 1));
    for (int i = 0; i < kN; ++i) {
      ASSERT_LT(std::abs(out.c[i]), q);
      ASSERT_EQ(Mod(out.c[i] * kR), prod) << i;
    }
  }
}

TEST(MlKemPoly, Encode12AndDecodeChecks) {
  std::mt19937 gen(3);
  Poly a;
  for (int i = 0; i < kN; ++i) a.c[i] = static_cast<int16_t>(gen() % q);
  a.c[0] = 0;
  a.c[255] = kQ - 1;
  uint8_t buf[kPolyBytes];
  PolyEncode12(buf, a);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(GetBits(buf, 12, i), static_cast<uint32_t>(a.c[i]));
  Poly b, c;
  PolyDecode12(b, buf);
  EXPECT_TRUE(DecodeEncapsKeyPoly(c, buf));
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(b.c[i], a.c[i]);
    ASSERT_EQ(c.c[i], a.c[i]);
  }
  // Values q..4095: ByteDecode12 reduces them mod q; the modulus check refuses them.
  for (uint32_t v : {3329u, 3330u, 4095u}) {
    for (int pos : {0, 1, 128, 255}) {
      uint8_t bad[kPolyBytes];
      std::memcpy(bad, buf, sizeof(bad));
      PutBits(bad, 12, pos, v);
      PolyDecode12(b, bad);
      EXPECT_EQ(b.c[pos], static_cast<int16_t>(v - q));
      EXPECT_FALSE(DecodeEncapsKeyPoly(c, bad)) << v << " at " << pos;
    }
  }
}

// The samples of K-PKE.Encrypt (k = 2: Â^T, y with eta = 3, e1 and e2 with eta = 2) through the
// fixed lane plan (mlkem/fixed_lanes.h) on the active backend.
struct EncryptSamples2 {
  Poly at[2][2];
  Poly noise[5];
};
void SampleEncrypt2(const uint8_t rho[32], const uint8_t coins[32], EncryptSamples2& out) {
  fixed::PlanIo io;
  io.rho = rho;
  io.seed = coins;
  io.matrix = &out.at[0][0];
  io.noise = out.noise;
  fixed::LaneRunner lanes;
  lanes.Run<fixed::kEncryptPlan<2>>(io, [](auto) {});
}

// SampleNTT (fixed lane plan, on every backend) against Alg. 7 read literally.
TEST(MlKemPoly, SampleNttMatchesAlgorithm7) {
  pqcd::testing::ScopedIsa restore;
  std::vector<std::array<uint8_t, 32>> rhos(5);
  for (size_t t = 0; t < rhos.size(); ++t) {
    for (size_t i = 0; i < 32; ++i) rhos[t][i] = static_cast<uint8_t>(t * 31 + i * 7);
  }
  uint8_t coins[32] = {};
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (size_t t = 0; t < rhos.size(); ++t) {
      EncryptSamples2 got;
      SampleEncrypt2(rhos[t].data(), coins, got);
      for (int r = 0; r < 2; ++r) {
        for (int c = 0; c < 2; ++c) {
          // Â^T[r][c] = SampleNTT(ρ || r || c); Alg. 7 literally: squeeze 3 bytes at a time.
          uint8_t seed[34];
          std::memcpy(seed, rhos[t].data(), 32);
          seed[32] = static_cast<uint8_t>(r);
          seed[33] = static_cast<uint8_t>(c);
          Shake128 xof;
          xof.Absorb(Bytes(seed, 34));
          int j = 0;
          while (j < kN) {
            uint8_t b[3];
            xof.Squeeze(MutBytes(b, 3));
            const int d1 = b[0] + 256 * (b[1] % 16);
            const int d2 = b[1] / 16 + 16 * b[2];
            if (d1 < q) {
              ASSERT_EQ(got.at[r][c].c[j], d1) << IsaName(isa) << " rho " << t << " j " << j;
              ++j;
            }
            if (d2 < q && j < kN) {
              ASSERT_EQ(got.at[r][c].c[j], d2) << IsaName(isa) << " rho " << t << " j " << j;
              ++j;
            }
          }
        }
      }
    }
  }
}

// SamplePolyCBD_eta(PRF_eta(seed, nonce)) (fixed lane plan, every backend) against Alg. 8.
TEST(MlKemPoly, CbdMatchesAlgorithm8) {
  pqcd::testing::ScopedIsa restore;
  uint8_t seed[32], rho[32] = {};
  for (int i = 0; i < 32; ++i) seed[i] = static_cast<uint8_t>(200 - 3 * i);
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    EncryptSamples2 got;
    SampleEncrypt2(rho, seed, got);
    for (int t = 0; t < 5; ++t) {
      const int eta = t < 2 ? 3 : 2;
      uint8_t in[33];
      std::memcpy(in, seed, 32);
      in[32] = static_cast<uint8_t>(t);
      std::vector<uint8_t> prf(64 * eta);
      Shake256Digest(Bytes(in, 33), prf);
      for (int i = 0; i < kN; ++i) {
        int x = 0, y = 0;
        for (int j = 0; j < eta; ++j) {
          x += static_cast<int>(GetBits(prf.data(), 1, 2 * i * eta + j));
          y += static_cast<int>(GetBits(prf.data(), 1, 2 * i * eta + eta + j));
        }
        ASSERT_EQ(got.noise[t].c[i], x - y)
            << IsaName(isa) << " eta " << eta << " poly " << t << " i " << i;
      }
    }
  }
}

}  // namespace
}  // namespace pqcd::kernels::mlkem
