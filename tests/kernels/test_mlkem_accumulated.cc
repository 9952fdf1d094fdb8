// Accumulated ML-KEM test: the C2SP/CCTV "accumulated pq-crystals vectors" procedure
// (https://c2sp.org/CCTV/ML-KEM, section "Accumulated pq-crystals vectors", FIPS 203 final).
//
// Procedure (implemented from the description there, no code copied):
//  * one deterministic RNG: SHAKE-128 over the empty string, read sequentially (its stream starts
//    7f9c2ba4e88f827d616045507605853e);
//  * per test, read d (32 bytes), z (32), m (32) and a random ciphertext ct_r (ciphertext size) in
//    that order;
//  * (ek, dk) = ML-KEM.KeyGen_internal(d, z); (ct, k) = ML-KEM.Encaps_internal(ek, m);
//    check Decaps(dk, ct) == k; k_r = Decaps(dk, ct_r) (implicit rejection);
//  * absorb ek, dk, ct, k, k_r in that order into one running SHAKE-128;
//  * after N tests, the first 32 bytes of that SHAKE-128's output are the result.
// The pinned values for N = 10 000 are the ones CCTV publishes for FIPS 203 (final); this
// implementation reproduces all three exactly. The N = 100 values are the same procedure cut short
// (as used by public ports of the CCTV test) and make a failure quick to localize.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

using pqcd::testing::ToHex;

template <int K>
std::string AccumulateOn(int count) {
  using Kem = MlKem<K>;
  Shake128 rng;
  rng.Finalize();
  Shake128 acc;
  std::vector<uint8_t> seed(64), m(32), ct_random(Kem::kCiphertextBytes);
  std::vector<uint8_t> ek(Kem::kEncapsKeyBytes), dk(Kem::kDecapsKeyBytes);
  std::vector<uint8_t> ct(Kem::kCiphertextBytes), k(32), k_dec(32), k_reject(32);
  int mismatches = 0;
  for (int i = 0; i < count; ++i) {
    rng.Squeeze(MutBytes(seed.data(), 32));       // d
    rng.Squeeze(MutBytes(seed.data() + 32, 32));  // z
    rng.Squeeze(m);
    rng.Squeeze(ct_random);
    EXPECT_TRUE(Kem::KeyGenFromSeed(seed, ek, dk).ok());
    EXPECT_TRUE(Kem::EncapsDerand(ek, m, ct, k).ok());
    EXPECT_TRUE(Kem::Decaps(dk, ct, k_dec).ok());
    if (k_dec != k) ++mismatches;
    EXPECT_TRUE(Kem::Decaps(dk, ct_random, k_reject).ok());
    acc.Absorb(ek);
    acc.Absorb(dk);
    acc.Absorb(ct);
    acc.Absorb(k);
    acc.Absorb(k_reject);
  }
  EXPECT_EQ(mismatches, 0) << "Decaps(dk, Encaps(ek)) disagreed with Encaps";
  std::vector<uint8_t> out(32);
  acc.Squeeze(out);
  return ToHex(out);
}

// Runs the procedure on every backend the CPU supports; returns the hash if all backends agree,
// else a description of the disagreement.
template <int K>
std::string Accumulate(int count) {
  const Isa saved = ActiveIsa();
  std::string first, result;
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!IsaSupported(isa)) continue;
    EXPECT_TRUE(SetActiveIsa(isa).ok());
    const std::string h = AccumulateOn<K>(count);
    std::printf("[accumulated] ML-KEM k=%d count=%d backend=%s: %s\n", K, count,
                std::string(IsaName(isa)).c_str(), h.c_str());
    if (first.empty()) {
      first = result = h;
    } else if (h != first) {
      result += " != " + std::string(IsaName(isa)) + ":" + h;
    }
  }
  EXPECT_TRUE(SetActiveIsa(saved).ok());
  return result;
}

TEST(MlKemAccumulated, RngStreamStart) {
  Shake128 rng;
  rng.Finalize();
  std::vector<uint8_t> out(16);
  rng.Squeeze(out);
  EXPECT_EQ(ToHex(out), "7f9c2ba4e88f827d616045507605853e");
}

TEST(MlKemAccumulated, MlKem512Count100) {
  EXPECT_EQ(Accumulate<2>(100), "449120c6e320ef3e9fbfa2316e5f2d2e1e6dd37d8ff5d086d5d2db7d42aff0a1");
}
TEST(MlKemAccumulated, MlKem768Count100) {
  EXPECT_EQ(Accumulate<3>(100), "8d65b902f28edc683cebee2872962fd165a4d197c9e24ec74caa4470270df0b7");
}
TEST(MlKemAccumulated, MlKem1024Count100) {
  EXPECT_EQ(Accumulate<4>(100), "c3ffe9ebecfa479c142656cbfbc6417efa05b77e994fe538eef4daed166363df");
}

// CCTV's published 10 000-test hashes for FIPS 203. This implementation reproduced all three
// (checked with --gtest_also_run_disabled_tests). To keep CI cheap, only ML-KEM-768 runs the full
// count by default (~2 s in Release); ML-KEM-512 and ML-KEM-1024 run 1 000 tests against values
// that CCTV does not publish: the same procedure with N = 1 000, pinned from this implementation
// after it matched CCTV's 10 000-test values (the first 1 000 tests are a prefix of those runs).
// Under PQCD_TEST_QUICK=1 (emulated runs) the 10 000-test run is left out; the 100- and 1 000-test
// values still pin the procedure on every parameter set.
TEST(MlKemAccumulated, MlKem768Cctv10k) {
  if (pqcd::testing::QuickTests())
    GTEST_SKIP() << "PQCD_TEST_QUICK=1: the 10 000-test run is skipped";
  EXPECT_EQ(Accumulate<3>(10000),
            "f959d18d3d1180121433bf0e05f11e7908cf9d03edc150b2b07cb90bef5bc1c1");
}
TEST(MlKemAccumulated, MlKem512Count1000) {
  EXPECT_EQ(Accumulate<2>(1000),
            "9144b1054d29546b0f7fdd2e48dbb6d68c573dd468845c5e97eb2dba77a8f1e9");
}
TEST(MlKemAccumulated, MlKem1024Count1000) {
  EXPECT_EQ(Accumulate<4>(1000),
            "df23d235ef494a38b2de2deda2704bb1312dd88ef6987ec4fc6f08fe5963ed7f");
}
TEST(MlKemAccumulated, DISABLED_MlKem512Cctv10k) {
  EXPECT_EQ(Accumulate<2>(10000),
            "705dcffc87f4e67e35a09dcaa31772e86f3341bd3ccf1e78a5fef99ae6a35a13");
}
TEST(MlKemAccumulated, DISABLED_MlKem1024Cctv10k) {
  EXPECT_EQ(Accumulate<4>(10000),
            "e3bf82b013307b2e9d47dde791ff6dfc82e694e6382404abdb948b908b75bad5");
}

}  // namespace
}  // namespace pqcd::kernels
