// Differential tests: every hook of every non-portable Keccak table this CPU supports (AVX2 and
// AVX-512 on x86-64; on aarch64 the NEON row's, the plain-NEON x2 one and, with HWCAP_SHA3, the
// SHA-3-extension one; keccak/backend.h, BackendFor(isa), arch/backends.h) against the portable
// permutation, on edge states (all zeros, all ones) and random states: >= 10,000 states per hook
// (2,500 calls of the four-state hooks), fewer under PQCD_TEST_QUICK. Hooks a table leaves at the
// portable default are skipped, and so is the whole test where the CPU has no SIMD backend.
// On x86-64 also the single-state ZMM permutation (KeccakF1600x1Avx512) on its own, whether or not
// a table holds it, with SHA3-256 / SHAKE128 known answers through it and through the avx512
// backend (skipped without AVX-512).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "arch/backends.h"
#include "common/test_support.h"
#include "keccak/backend.h"
#include "keccak/keccak_multi.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"
#if defined(__x86_64__)
#include "arch/x86_64/avx512/keccak/keccak_avx512.h"
#endif

namespace pqcd::kernels::keccak {

namespace {

constexpr Isa kSimdIsas[] = {Isa::kAvx2, Isa::kAvx512, Isa::kNeon};

struct NamedTable {
  std::string name;
  const Backend* table;
};

// The tables of the ISAs' rows, and on aarch64 the two that are in no row: the plain-NEON x2
// permutation (keccak::kNeon, kept tested for hybrid scalar/NEON work) and the SHA-3-extension
// one (keccak::kNeonSha3, which the NEON row reaches through kNeonAuto only while the CPU reports
// HWCAP_SHA3, so the row's entry tests it as well where it is used).
std::vector<NamedTable> TablesToTest() {
  std::vector<NamedTable> out;
  for (Isa isa : kSimdIsas) {
    if (IsaSupported(isa) && &BackendFor(isa) != &kPortable) {
      out.push_back({std::string(IsaName(isa)), &BackendFor(isa)});
    }
  }
#if defined(__aarch64__)
  if (IsaSupported(Isa::kNeon)) out.push_back({"neon (plain x2)", &kNeon});
  if (IsaSupported(Isa::kNeon) && DetectedCpuFeatures().sha3) {
    out.push_back({"neon_sha3", &kNeonSha3});
  }
#endif
  return out;
}

// Portable permutation of column j of an interleaved array with `stride` columns.
void PermuteColumn(uint64_t* st, size_t stride, size_t j) {
  uint64_t one[kKeccakLanes];
  for (size_t i = 0; i < kKeccakLanes; ++i) one[i] = st[i * stride + j];
  KeccakF1600Portable(one);
  for (size_t i = 0; i < kKeccakLanes; ++i) st[i * stride + j] = one[i];
}

class KeccakBackends : public ::testing::Test {
 public:
  void SetUp() override {
    tables_ = TablesToTest();
    if (tables_.empty()) GTEST_SKIP() << "no SIMD Keccak backend on this CPU";
  }
  // Random words; call k in {0, 1} gives all zeros / all ones.
  void Fill(uint64_t* w, size_t n, int call) {
    for (size_t i = 0; i < n; ++i) w[i] = call == 0 ? 0 : call == 1 ? ~uint64_t{0} : rng_();
  }
  int Calls(int states_per_call) const {
    return pqcd::testing::Iterations(10000, 1000) / states_per_call + 2;
  }
  std::vector<NamedTable> tables_;
  std::mt19937_64 rng_{0x6b656363616b};
};

TEST_F(KeccakBackends, F1600) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.f1600 == kPortable.f1600) continue;
    for (int k = 0; k < Calls(1); ++k) {
      uint64_t got[kKeccakLanes], want[kKeccakLanes];
      Fill(got, kKeccakLanes, k);
      std::memcpy(want, got, sizeof(got));
      be.f1600(got);
      KeccakF1600Portable(want);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << t.name << " call " << k;
    }
  }
}

TEST_F(KeccakBackends, F1600x4AnyStrideLeavesOtherColumns) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.f1600x4 == kPortable.f1600x4) continue;
    for (int k = 0; k < Calls(4); ++k) {
      for (size_t stride : {4, 5, 8}) {
        std::vector<uint64_t> got(kKeccakLanes * stride), want;
        Fill(got.data(), got.size(), k);
        want = got;
        be.f1600x4(got.data(), stride, k % 16);  // any `live`: all live columns are permuted
        for (size_t j = 0; j < 4; ++j) {
          if ((k % 16) >> j & 1) PermuteColumn(want.data(), stride, j);
        }
        for (size_t i = 0; i < kKeccakLanes; ++i) {
          for (size_t j = 0; j < stride; ++j) {
            if (j < 4 && ((k % 16) >> j & 1) == 0) continue;  // unspecified
            ASSERT_EQ(got[i * stride + j], want[i * stride + j])
                << t.name << " call " << k << " stride " << stride << " word " << i << " column "
                << j;
          }
        }
      }
    }
  }
}

TEST_F(KeccakBackends, F1600x4x1) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.f1600x4x1 == kPortable.f1600x4x1) continue;
    for (int k = 0; k < Calls(5); ++k) {
      constexpr size_t kStride = 4;
      uint64_t got[kKeccakLanes * kStride], want[kKeccakLanes * kStride];
      uint64_t one[kKeccakLanes], one_want[kKeccakLanes];
      Fill(got, std::size(got), k);
      Fill(one, kKeccakLanes, k);
      std::memcpy(want, got, sizeof(got));
      std::memcpy(one_want, one, sizeof(one));
      be.f1600x4x1(got, kStride, kAllLanes, one);
      for (size_t j = 0; j < 4; ++j) PermuteColumn(want, kStride, j);
      KeccakF1600Portable(one_want);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << t.name << " call " << k;
      ASSERT_EQ(std::memcmp(one, one_want, sizeof(one)), 0) << t.name << " call " << k;
    }
  }
}

TEST_F(KeccakBackends, F1600x8) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.f1600x8 == kPortable.f1600x8) continue;
    for (int k = 0; k < Calls(8); ++k) {
      uint64_t got[kKeccakLanes * 8], want[kKeccakLanes * 8];
      Fill(got, std::size(got), k);
      std::memcpy(want, got, sizeof(got));
      be.f1600x8(got);
      for (size_t j = 0; j < 8; ++j) PermuteColumn(want, 8, j);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << t.name << " call " << k;
    }
  }
}

TEST_F(KeccakBackends, ExtractLanes4) {
  for (const NamedTable& t : tables_) {
    const Backend& be = *t.table;
    if (be.extract_lanes4 == kPortable.extract_lanes4) continue;
    for (int k = 0; k < Calls(4); ++k) {
      const size_t stride = 4 + k % 5, words = k % 26;
      std::vector<uint64_t> st(kKeccakLanes * stride);
      Fill(st.data(), st.size(), k);
      uint8_t got[4][8 * kKeccakLanes + 8], want[4][8 * kKeccakLanes + 8];
      std::memset(got, 0xa5, sizeof(got));
      std::memset(want, 0xa5, sizeof(want));
      uint8_t* const got_p[4] = {got[0], got[1], got[2], got[3]};
      uint8_t* const want_p[4] = {want[0], want[1], want[2], want[3]};
      be.extract_lanes4(st.data(), stride, words, got_p);
      kPortable.extract_lanes4(st.data(), stride, words, want_p);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << t.name << " call " << k;
    }
  }
}

// A plain SHA-3 / SHAKE sponge over `perm` (rate in bytes, domain byte ds; out.size() <= rate),
// so that a permutation no table holds can be run through whole hashes.
void Sponge(void (*perm)(uint64_t[25]), size_t rate, uint8_t ds, const std::vector<uint8_t>& msg,
            std::vector<uint8_t>& out) {
  uint64_t st[kKeccakLanes] = {};
  std::vector<uint8_t> padded(msg);
  padded.resize((msg.size() / rate + 1) * rate, 0);
  padded[msg.size()] ^= ds;
  padded.back() ^= 0x80;
  for (size_t off = 0; off < padded.size(); off += rate) {
    for (size_t i = 0; i < rate / 8; ++i) {
      uint64_t w = 0;
      for (size_t b = 0; b < 8; ++b) w |= uint64_t{padded[off + 8 * i + b]} << (8 * b);
      st[i] ^= w;
    }
    perm(st);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(st[i / 8] >> (8 * (i % 8)));
}

// FIPS 202 examples (checked against OpenSSL): "", "abc" and 200 bytes of 0xa3 (two blocks).
struct Kat {
  HashAlgorithm alg;
  std::vector<uint8_t> msg;
  const char* digest;  // 32 bytes (SHAKE128: the first 32 output bytes)
};
std::vector<Kat> Kats() {
  const std::vector<uint8_t> abc = {'a', 'b', 'c'}, a3(200, 0xa3);
  return {
      {HashAlgorithm::kSha3_256,
       {},
       "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"},
      {HashAlgorithm::kSha3_256, abc,
       "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"},
      {HashAlgorithm::kSha3_256, a3,
       "79f38adec5c20307a98ef76e8324afbfd46cfd81b22e3973c65fa1bd9de31787"},
      {HashAlgorithm::kShake128,
       {},
       "7f9c2ba4e88f827d616045507605853ed73b8093f6efbc88eb1a6eacfa66ef26"},
      {HashAlgorithm::kShake128, abc,
       "5881092dd818bf5cf8a3ddb793fbcba74097d5c526a6d35f97b83351940f2cc8"},
      {HashAlgorithm::kShake128, a3,
       "131ab8d2b594946b9c81333f9bb6e0ce75c3b93104fa3469d3917457385da037"},
  };
}

void SpongeKat(void (*perm)(uint64_t[25]), const Kat& kat, std::vector<uint8_t>& out) {
  const bool shake = kat.alg == HashAlgorithm::kShake128;
  out.assign(32, 0);
  Sponge(perm, shake ? 168 : 136, shake ? 0x1f : 0x06, kat.msg, out);
}

// The test's own sponge, on the portable permutation: keeps the helper and the vectors honest on
// every CPU.
TEST(KeccakSponge, KnownAnswersOnPortable) {
  for (const Kat& kat : Kats()) {
    std::vector<uint8_t> out;
    SpongeKat(&KeccakF1600Portable, kat, out);
    EXPECT_EQ(pqcd::testing::ToHex(out), kat.digest)
        << HashName(kat.alg) << " of " << kat.msg.size() << " bytes";
  }
}

#if defined(__x86_64__)
// The single-state ZMM permutation against the portable one: all zeros, all ones, random states;
// the words on either side of the state are not touched (it loads and stores with masks).
TEST(KeccakX1Avx512, MatchesPortable) {
  if (!IsaSupported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 F/BW/VL/DQ on this CPU";
  std::mt19937_64 rng(0x7a6d6d31);
  const int calls = pqcd::testing::Iterations(10000, 1000) + 2;
  for (int k = 0; k < calls; ++k) {
    uint64_t got[kKeccakLanes + 2], want[kKeccakLanes];
    for (size_t i = 0; i < kKeccakLanes; ++i) {
      want[i] = k == 0 ? 0 : k == 1 ? ~uint64_t{0} : rng();
    }
    got[0] = 0x5a5a5a5a5a5a5a5a;
    got[kKeccakLanes + 1] = 0xa5a5a5a5a5a5a5a5;
    std::memcpy(got + 1, want, sizeof(want));
    KeccakF1600x1Avx512(got + 1);
    KeccakF1600Portable(want);
    ASSERT_EQ(std::memcmp(got + 1, want, sizeof(want)), 0) << "call " << k;
    ASSERT_EQ(got[0], 0x5a5a5a5a5a5a5a5a) << "call " << k;
    ASSERT_EQ(got[kKeccakLanes + 1], 0xa5a5a5a5a5a5a5a5) << "call " << k;
  }
}

TEST(KeccakX1Avx512, Sha3ShakeKnownAnswers) {
  if (!IsaSupported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 F/BW/VL/DQ on this CPU";
  for (const Kat& kat : Kats()) {
    std::vector<uint8_t> out;
    SpongeKat(&KeccakF1600x1Avx512, kat, out);
    EXPECT_EQ(pqcd::testing::ToHex(out), kat.digest)
        << HashName(kat.alg) << " of " << kat.msg.size() << " bytes";
  }
}
#endif  // __x86_64__

// Whole hashes through the avx512 backend (whichever single-state permutation its table holds):
// the known answers, then a 64 KiB message and a 1000-byte SHAKE128 output (several squeezes)
// against the portable backend.
TEST(KeccakAvx512Backend, Sha3ShakeKnownAnswers) {
  if (!IsaSupported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 F/BW/VL/DQ on this CPU";
  const Isa saved = ActiveIsa();
  std::mt19937_64 rng(0x6b6174);
  std::vector<uint8_t> big(65536);
  for (uint8_t& b : big) b = static_cast<uint8_t>(rng());
  std::vector<uint8_t> want256(32), want_xof(1000);
  ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
  ASSERT_TRUE(Hash(HashAlgorithm::kSha3_256, big, want256).ok());
  ASSERT_TRUE(Hash(HashAlgorithm::kShake128, big, want_xof).ok());
  ASSERT_TRUE(SetActiveIsa(Isa::kAvx512).ok());
  for (const Kat& kat : Kats()) {
    std::vector<uint8_t> out(32);
    ASSERT_TRUE(Hash(kat.alg, kat.msg, out).ok());
    EXPECT_EQ(pqcd::testing::ToHex(out), kat.digest)
        << HashName(kat.alg) << " of " << kat.msg.size() << " bytes";
  }
  std::vector<uint8_t> got256(32), got_xof(1000);
  ASSERT_TRUE(Hash(HashAlgorithm::kSha3_256, big, got256).ok());
  ASSERT_TRUE(Hash(HashAlgorithm::kShake128, big, got_xof).ok());
  ASSERT_TRUE(SetActiveIsa(saved).ok());
  EXPECT_EQ(got256, want256);
  EXPECT_EQ(got_xof, want_xof);
}

#if defined(__aarch64__)
// The NEON row's table (kNeonAuto) follows the SHA-3 feature as isa.cc detected it, and with the
// switch off it runs the portable kernels (the path of CPUs with ASIMD but without SHA3): every
// hook against the portable permutation, then the switch is put back.
TEST_F(KeccakBackends, NeonRowWithAndWithoutSha3) {
  if (!IsaSupported(Isa::kNeon)) GTEST_SKIP() << "no NEON on this CPU";
  const bool sha3 = DetectedCpuFeatures().sha3;
  EXPECT_EQ(&BackendFor(Isa::kNeon), &kNeonAuto);
  EXPECT_EQ(NeonSha3KeccakInUse(), sha3);
  for (bool on : {false, sha3}) {
    UseNeonSha3Keccak(on);
    for (int k = 0; k < Calls(8); ++k) {
      alignas(16) uint64_t got[kKeccakLanes * 8], want[kKeccakLanes * 8];
      Fill(got, std::size(got), k);
      std::memcpy(want, got, sizeof(got));
      kNeonAuto.f1600(got);
      KeccakF1600Portable(want);
      kNeonAuto.f1600x4(got + 25, 5, kAllLanes);
      for (size_t j = 0; j < 4; ++j) PermuteColumn(want + 25, 5, j);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << "sha3 " << on << " call " << k;
      kNeonAuto.f1600x4x1(got + 25, 5, kAllLanes, got);
      for (size_t j = 0; j < 4; ++j) PermuteColumn(want + 25, 5, j);
      KeccakF1600Portable(want);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << "sha3 " << on << " call " << k;
      kNeonAuto.f1600x8(got);
      KeccakF1600xNPortable(want, 8);
      ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << "sha3 " << on << " call " << k;
    }
  }
  UseNeonSha3Keccak(sha3);
  EXPECT_EQ(NeonSha3KeccakInUse(), sha3);
}
#endif

}  // namespace
}  // namespace pqcd::kernels::keccak
