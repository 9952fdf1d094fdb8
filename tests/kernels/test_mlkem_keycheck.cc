// ML-KEM: the complete check of an expanded decapsulation key (MlKem::CheckExpandedPrivateKey),
// on every parameter set and every backend this CPU supports. Key generation's output passes; a
// changed dk_PKE, a changed ek with a matching hash (so that only the consistency of s-hat with
// t-hat can tell), a non-canonical encoding of s-hat, a wrong hash or a different ek is refused;
// z alone cannot be checked (it is random) and is documented as such.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/registry.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

using ByteVec = std::vector<uint8_t>;
using pqcd::testing::ScopedIsa;
using pqcd::testing::SupportedIsas;

constexpr int kQ = 3329;

template <class Kem>
struct KeyPair {
  ByteVec ek, dk;
};

template <class Kem>
KeyPair<Kem> MakeKeys(SeededRandom& rng) {
  KeyPair<Kem> kp{ByteVec(Kem::kEncapsKeyBytes), ByteVec(Kem::kDecapsKeyBytes)};
  EXPECT_TRUE(Kem::KeyGen(kp.ek, kp.dk, rng).ok());
  return kp;
}

// dk = dk_PKE (384 k bytes) || ek || H(ek) || z (FIPS 203 Alg. 16).
template <class Kem>
struct DkLayout {
  static constexpr size_t kEk = 384 * Kem::Params::k;
  static constexpr size_t kHash = kEk + Kem::kEncapsKeyBytes;
  static constexpr size_t kZ = kHash + 32;
};

// Re-establishes h = H(ek) after ek was changed inside dk (so the §7.3 hash check passes).
template <class Kem>
void RehashEk(ByteVec& dk) {
  using D = DkLayout<Kem>;
  Sha3_256Digest(Bytes(dk.data() + D::kEk, Kem::kEncapsKeyBytes),
                 std::span<uint8_t, 32>(dk.data() + D::kHash, 32));
}

// The 12-bit value number i of a ByteEncode12 string, and its replacement.
int Get12(const uint8_t* p, size_t i) {
  const uint8_t* b = p + 3 * (i / 2);
  return i % 2 == 0 ? (b[0] | (b[1] & 0x0f) << 8) : (b[1] >> 4 | b[2] << 4);
}
void Set12(uint8_t* p, size_t i, int v) {
  uint8_t* b = p + 3 * (i / 2);
  if (i % 2 == 0) {
    b[0] = static_cast<uint8_t>(v);
    b[1] = static_cast<uint8_t>((b[1] & 0xf0) | (v >> 8));
  } else {
    b[1] = static_cast<uint8_t>((b[1] & 0x0f) | (v & 0x0f) << 4);
    b[2] = static_cast<uint8_t>(v >> 4);
  }
}

template <class Kem>
class MlKemKeyCheckTest : public ::testing::Test {};
using ParameterSets = ::testing::Types<MlKem512, MlKem768, MlKem1024>;
TYPED_TEST_SUITE(MlKemKeyCheckTest, ParameterSets);

TYPED_TEST(MlKemKeyCheckTest, GeneratedKeysPass) {
  using Kem = TypeParam;
  ScopedIsa restore;
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    SCOPED_TRACE(std::string(IsaName(isa)));
    SeededRandom rng(uint64_t{100} + static_cast<uint64_t>(isa));
    for (int i = 0; i < 8; ++i) {
      const auto kp = MakeKeys<Kem>(rng);
      EXPECT_TRUE(Kem::CheckExpandedPrivateKey(kp.dk).ok());
      EXPECT_TRUE(Kem::CheckExpandedPrivateKey(kp.dk, kp.ek).ok());
    }
  }
}

TYPED_TEST(MlKemKeyCheckTest, ChangedDkPkeIsRefused) {
  using Kem = TypeParam;
  using D = DkLayout<Kem>;
  ScopedIsa restore;
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    SCOPED_TRACE(std::string(IsaName(isa)));
    SeededRandom rng(uint64_t{200} + static_cast<uint64_t>(isa));
    const auto kp = MakeKeys<Kem>(rng);
    // The hash check covers ek only: 30 random 1-3-bit changes of dk_PKE pass it, and must fail
    // the range check of s (or the canonical encoding check).
    for (int round = 0; round < 30; ++round) {
      ByteVec bad = kp.dk;
      uint8_t r[1 + 3 * 4];
      ASSERT_TRUE(rng.Generate(r).ok());
      for (int f = 0; f < 1 + r[0] % 3; ++f) {
        uint32_t v;
        std::memcpy(&v, r + 1 + 4 * f, 4);
        bad[(v >> 3) % D::kEk] ^= static_cast<uint8_t>(1u << (v & 7));
      }
      if (bad == kp.dk) continue;  // two flips cancelled
      EXPECT_REFUSED(Kem::CheckExpandedPrivateKey(bad), "decapsulation key");
    }
  }
}

TYPED_TEST(MlKemKeyCheckTest, NonCanonicalSHatIsRefused) {
  using Kem = TypeParam;
  SeededRandom rng(uint64_t{300});
  const auto kp = MakeKeys<Kem>(rng);
  // v + q encodes the same residue as v: ByteDecode12 (mod q) gives the same s-hat, so only the
  // canonical-encoding check can tell.
  ByteVec bad = kp.dk;
  size_t i = 0;
  while (Get12(bad.data(), i) + kQ >= 4096) ++i;
  Set12(bad.data(), i, Get12(bad.data(), i) + kQ);
  EXPECT_REFUSED(Kem::CheckExpandedPrivateKey(bad), ">= q");
}

TYPED_TEST(MlKemKeyCheckTest, EkThatDoesNotMatchDkPkeIsRefused) {
  using Kem = TypeParam;
  using D = DkLayout<Kem>;
  ScopedIsa restore;
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    SCOPED_TRACE(std::string(IsaName(isa)));
    SeededRandom rng(uint64_t{400} + static_cast<uint64_t>(isa));
    const auto kp = MakeKeys<Kem>(rng);
    // One coefficient of t-hat moved by +1 (kept canonical), h recomputed: the hash check passes,
    // e = NTT^-1(t-hat - A-hat s-hat) is no longer small.
    for (size_t coeff : {size_t{0}, size_t{255}, size_t{256 * Kem::Params::k - 1}}) {
      ByteVec bad = kp.dk;
      uint8_t* t_hat = bad.data() + D::kEk;
      Set12(t_hat, coeff, (Get12(t_hat, coeff) + 1) % kQ);
      RehashEk<Kem>(bad);
      EXPECT_REFUSED(Kem::CheckExpandedPrivateKey(bad), "does not match dk_PKE");
    }
    {  // Another rho (so another A-hat), h recomputed.
      ByteVec bad = kp.dk;
      bad[D::kHash - 1] ^= 0x01;
      RehashEk<Kem>(bad);
      EXPECT_REFUSED(Kem::CheckExpandedPrivateKey(bad), "does not match dk_PKE");
    }
    {  // The embedded ek fails the §7.2 modulus check (value q), h recomputed.
      ByteVec bad = kp.dk;
      Set12(bad.data() + D::kEk, 7, kQ);
      RehashEk<Kem>(bad);
      EXPECT_REFUSED(Kem::CheckExpandedPrivateKey(bad), "modulus check");
    }
    {  // ek changed, h not recomputed: the §7.3 hash check.
      ByteVec bad = kp.dk;
      bad[D::kEk + 10] ^= 0x20;
      EXPECT_REFUSED(Kem::CheckExpandedPrivateKey(bad), "7.3");
      ByteVec bad_h = kp.dk;
      bad_h[D::kHash] ^= 0x01;
      EXPECT_REFUSED(Kem::CheckExpandedPrivateKey(bad_h), "7.3");
    }
    {  // A given ek must be the embedded one.
      const auto other = MakeKeys<Kem>(rng);
      EXPECT_REFUSED(Kem::CheckExpandedPrivateKey(kp.dk, other.ek), "encapsulation key");
      ByteVec ek = kp.ek;
      ek.back() ^= 0x01;  // in rho
      EXPECT_REFUSED(Kem::CheckExpandedPrivateKey(kp.dk, ek), "encapsulation key");
    }
    {  // z is random: nothing to recompute it from. It passes (documented limitation).
      ByteVec z_changed = kp.dk;
      z_changed[D::kZ] ^= 0x01;
      EXPECT_TRUE(Kem::CheckExpandedPrivateKey(z_changed, kp.ek).ok());
    }
  }
}

TYPED_TEST(MlKemKeyCheckTest, LengthsAndTheRunTimeEntryPoint) {
  using Kem = TypeParam;
  SeededRandom rng(uint64_t{500});
  const auto kp = MakeKeys<Kem>(rng);
  EXPECT_FALSE(Kem::CheckExpandedPrivateKey(ByteVec(64)).ok());  // a seed is not an expanded key
  EXPECT_FALSE(Kem::CheckExpandedPrivateKey(ByteVec(Kem::kDecapsKeyBytes + 1)).ok());
  EXPECT_FALSE(Kem::CheckExpandedPrivateKey(kp.dk, ByteVec(Kem::kEncapsKeyBytes - 1)).ok());

  const KemAlgorithm alg = Kem::Params::k == 2   ? KemAlgorithm::kMlKem512
                           : Kem::Params::k == 3 ? KemAlgorithm::kMlKem768
                                                 : KemAlgorithm::kMlKem1024;
  EXPECT_TRUE(CheckExpandedPrivateKey(alg, kp.dk, kp.ek).ok());
  ByteVec bad = kp.dk;
  bad[0] ^= 0x01;
  EXPECT_FALSE(CheckExpandedPrivateKey(alg, bad).ok());
  EXPECT_FALSE(Describe(IdOf(alg)).kem->check_expanded_dk(bad, {}).ok());
}

}  // namespace
}  // namespace pqcd::kernels
