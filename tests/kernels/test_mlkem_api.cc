// ML-KEM public API: input checks (FIPS 203 §7.1-7.3), implicit rejection, seed-form keys,
// randomness plumbing and the batch entry points.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/registry.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

using Buf = std::vector<uint8_t>;

template <class Kem>
class MlKemApiTest : public ::testing::Test {};
using KemTypes = ::testing::Types<MlKem512, MlKem768, MlKem1024>;
TYPED_TEST_SUITE(MlKemApiTest, KemTypes);

class FailingRandom final : public RandomSource {
 public:
  absl::Status Generate(MutBytes) override { return absl::UnavailableError("no entropy"); }
};

std::string Name(std::string_view name) {
  return std::string(name);
}

// An InvalidArgument status whose message names the parameter set and contains `part`.
template <class Kem>
void ExpectInvalid(const absl::Status& st, const std::string& part) {
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_NE(std::string(st.message()).find(Name(Kem::kName)), std::string::npos) << st;
  EXPECT_NE(std::string(st.message()).find(part), std::string::npos) << st << " / want: " << part;
}

template <class Kem>
struct KeyPair {
  Buf seed = Buf(Kem::kSeedBytes), ek = Buf(Kem::kEncapsKeyBytes), dk = Buf(Kem::kDecapsKeyBytes);
};

template <class Kem>
KeyPair<Kem> MakeKey(uint64_t label) {
  KeyPair<Kem> kp;
  SeededRandom rng(label);
  EXPECT_TRUE(rng.Generate(kp.seed).ok());
  EXPECT_TRUE(Kem::KeyGenFromSeed(kp.seed, kp.ek, kp.dk).ok());
  return kp;
}

// J(z || c) computed independently from the expanded key.
template <class Kem>
Buf ImplicitRejectionKey(const Buf& dk, const Buf& ct) {
  Shake256 j;
  j.Absorb(Bytes(dk.data() + dk.size() - 32, 32));
  j.Absorb(ct);
  Buf out(32);
  j.Squeeze(out);
  return out;
}

TYPED_TEST(MlKemApiTest, ExactMessages) {
  using Kem = TypeParam;
  const std::string name = Name(Kem::kName);
  const Buf short_ek(5);
  EXPECT_EQ(std::string(Kem::CheckEncapsKey(short_ek).message()),
            name + " encapsulation key: expected " + std::to_string(Kem::kEncapsKeyBytes) +
                " bytes, got 5");
  auto kp = MakeKey<Kem>(1);
  kp.ek[0] = 0x01;
  kp.ek[1] = (kp.ek[1] & 0xf0) | 0x0d;  // first coefficient 0xd01 = 3329 = q
  EXPECT_EQ(std::string(Kem::CheckEncapsKey(kp.ek).message()),
            name +
                " encapsulation key: coefficient not reduced mod q (FIPS 203 §7.2 modulus "
                "check)");
  kp.dk[Kem::kDecapsKeyBytes - 64] ^= 1;  // first byte of h
  EXPECT_EQ(std::string(Kem::CheckDecapsKey(kp.dk).message()),
            name + " decapsulation key: H(ek) does not match (FIPS 203 §7.3 hash check)");
}

TYPED_TEST(MlKemApiTest, WrongLengthsForEveryInput) {
  using Kem = TypeParam;
  const auto kp = MakeKey<Kem>(2);
  SeededRandom rng(uint64_t{3});
  Buf ek(Kem::kEncapsKeyBytes), dk(Kem::kDecapsKeyBytes), seed_out(64);
  Buf ct(Kem::kCiphertextBytes), ss(32), m(32, 7);
  const std::string ekn = std::to_string(Kem::kEncapsKeyBytes);
  const std::string dkn = std::to_string(Kem::kDecapsKeyBytes);
  const std::string ctn = std::to_string(Kem::kCiphertextBytes);

  for (size_t bad : {size_t{0}, size_t{63}, size_t{65}}) {
    ExpectInvalid<Kem>(Kem::KeyGenFromSeed(Buf(bad), ek, dk),
                       "seed: expected 64 bytes, got " + std::to_string(bad));
  }
  Buf ek_short(Kem::kEncapsKeyBytes - 1), dk_long(Kem::kDecapsKeyBytes + 1);
  ExpectInvalid<Kem>(Kem::KeyGenFromSeed(kp.seed, ek_short, dk),
                     "encapsulation key buffer: expected " + ekn);
  ExpectInvalid<Kem>(Kem::KeyGenFromSeed(kp.seed, ek, dk_long),
                     "decapsulation key buffer: expected " + dkn);
  Buf ek_small(10), dk_small(10), seed_small(10);
  ExpectInvalid<Kem>(Kem::KeyGen(ek_small, dk, rng), "encapsulation key buffer: expected " + ekn);
  ExpectInvalid<Kem>(Kem::KeyGen(ek, dk_small, rng), "decapsulation key buffer: expected " + dkn);
  ExpectInvalid<Kem>(Kem::KeyGen(ek, dk, rng, seed_small),
                     "seed output buffer: expected 64 bytes, got 10");

  for (size_t bad : {size_t{0}, Kem::kEncapsKeyBytes - 1, Kem::kEncapsKeyBytes + 1}) {
    const Buf e(bad);
    const std::string want =
        "encapsulation key: expected " + ekn + " bytes, got " + std::to_string(bad);
    ExpectInvalid<Kem>(Kem::CheckEncapsKey(e), want);
    ExpectInvalid<Kem>(Kem::EncapsDerand(e, m, ct, ss), want);
    ExpectInvalid<Kem>(Kem::Encaps(e, ct, ss, rng), want);
  }
  ExpectInvalid<Kem>(Kem::EncapsDerand(kp.ek, Buf(31), ct, ss),
                     "encapsulation randomness m: expected 32 bytes, got 31");
  Buf ct_small(Kem::kCiphertextBytes - 1), ss_small(31);
  ExpectInvalid<Kem>(Kem::EncapsDerand(kp.ek, m, ct_small, ss),
                     "ciphertext buffer: expected " + ctn);
  ExpectInvalid<Kem>(Kem::EncapsDerand(kp.ek, m, ct, ss_small),
                     "shared secret buffer: expected 32 bytes, got 31");
  ExpectInvalid<Kem>(Kem::Encaps(kp.ek, ct_small, ss, rng), "ciphertext buffer: expected " + ctn);
  ExpectInvalid<Kem>(Kem::Encaps(kp.ek, ct, ss_small, rng),
                     "shared secret buffer: expected 32 bytes, got 31");

  ASSERT_TRUE(Kem::EncapsDerand(kp.ek, m, ct, ss).ok());
  for (size_t bad : {size_t{0}, size_t{32}, size_t{63}, size_t{65}, Kem::kDecapsKeyBytes - 1,
                     Kem::kDecapsKeyBytes + 1}) {
    const Buf d(bad);
    const std::string want = "decapsulation key: expected " + dkn +
                             " bytes (expanded) or 64 bytes (seed), got " + std::to_string(bad);
    ExpectInvalid<Kem>(Kem::CheckDecapsKey(d), want);
    ExpectInvalid<Kem>(Kem::Decaps(d, ct, ss), want);
  }
  for (size_t bad : {size_t{0}, Kem::kCiphertextBytes - 1, Kem::kCiphertextBytes + 1}) {
    ExpectInvalid<Kem>(Kem::Decaps(kp.dk, Buf(bad), ss),
                       "ciphertext: expected " + ctn + " bytes, got " + std::to_string(bad));
  }
  ExpectInvalid<Kem>(Kem::Decaps(kp.dk, ct, ss_small),
                     "shared secret buffer: expected 32 bytes, got 31");
}

TYPED_TEST(MlKemApiTest, TamperedCiphertextGivesImplicitRejectionKey) {
  using Kem = TypeParam;
  const auto kp = MakeKey<Kem>(4);
  Buf ct(Kem::kCiphertextBytes), ss(32), got(32);
  ASSERT_TRUE(Kem::EncapsDerand(kp.ek, Buf(32, 0xa5), ct, ss).ok());
  ASSERT_TRUE(Kem::Decaps(kp.dk, ct, got).ok());
  EXPECT_EQ(got, ss);
  // Flip one bit at the start, the middle (c1/c2 boundary) and the end.
  for (size_t pos : {size_t{0}, Kem::kCiphertextBytes - 32 * MlKemParams<Kem::Params::k>::dv,
                     Kem::kCiphertextBytes - 1}) {
    Buf bad = ct;
    bad[pos] ^= 0x10;
    Buf k(32), k_seed(32);
    const absl::Status st = Kem::Decaps(kp.dk, bad, k);
    EXPECT_TRUE(st.ok()) << st;  // not an error
    EXPECT_NE(k, ss);
    EXPECT_EQ(k, ImplicitRejectionKey<Kem>(kp.dk, bad));
    ASSERT_TRUE(Kem::Decaps(kp.seed, bad, k_seed).ok());
    EXPECT_EQ(k_seed, k);
  }
}

TYPED_TEST(MlKemApiTest, ModulusCheckRejectsEveryPosition) {
  using Kem = TypeParam;
  const auto kp = MakeKey<Kem>(5);
  Buf ct(Kem::kCiphertextBytes), ss(32);
  const size_t coeffs = 256 * Kem::Params::k;
  // Coefficient values q, q+1 and 4095 at the first, an inner and the last coefficient.
  for (size_t idx : {size_t{0}, size_t{1}, size_t{257}, coeffs - 2, coeffs - 1}) {
    for (uint16_t value : {uint16_t{3329}, uint16_t{3330}, uint16_t{4095}}) {
      Buf ek = kp.ek;
      const size_t byte = idx / 2 * 3;
      if (idx % 2 == 0) {
        ek[byte] = static_cast<uint8_t>(value);
        ek[byte + 1] = static_cast<uint8_t>((ek[byte + 1] & 0xf0) | (value >> 8));
      } else {
        ek[byte + 1] = static_cast<uint8_t>((ek[byte + 1] & 0x0f) | ((value & 0x0f) << 4));
        ek[byte + 2] = static_cast<uint8_t>(value >> 4);
      }
      ExpectInvalid<Kem>(Kem::CheckEncapsKey(ek), "§7.2 modulus check");
      ExpectInvalid<Kem>(Kem::EncapsDerand(ek, Buf(32), ct, ss), "§7.2 modulus check");
    }
  }
  // q-1 everywhere is fine.
  Buf ek = kp.ek;
  for (size_t i = 0; i < coeffs / 2; ++i) {
    ek[3 * i] = 0x00;
    ek[3 * i + 1] = 0x0d;
    ek[3 * i + 2] = 0xd0;  // 0xd00 = 3328 twice
  }
  EXPECT_TRUE(Kem::CheckEncapsKey(ek).ok());
  EXPECT_TRUE(Kem::EncapsDerand(ek, Buf(32), ct, ss).ok());
}

TYPED_TEST(MlKemApiTest, HashCheckRejectsModifiedKeys) {
  using Kem = TypeParam;
  const auto kp = MakeKey<Kem>(6);
  Buf ct(Kem::kCiphertextBytes, 1), ss(32);
  EXPECT_TRUE(Kem::CheckDecapsKey(kp.dk).ok());
  EXPECT_TRUE(Kem::CheckDecapsKey(kp.seed).ok());
  const size_t ek_off = 384 * Kem::Params::k;
  // A byte of the embedded ek, a byte of h: both fail. A byte of ŝ or z is not covered by §7.3.
  for (size_t pos : {ek_off, ek_off + Kem::kEncapsKeyBytes - 1, ek_off + Kem::kEncapsKeyBytes,
                     ek_off + Kem::kEncapsKeyBytes + 31}) {
    Buf dk = kp.dk;
    dk[pos] ^= 0x80;
    ExpectInvalid<Kem>(Kem::CheckDecapsKey(dk), "§7.3 hash check");
    ExpectInvalid<Kem>(Kem::Decaps(dk, ct, ss), "§7.3 hash check");
  }
  Buf dk = kp.dk;
  dk[0] ^= 1;
  dk[Kem::kDecapsKeyBytes - 1] ^= 1;
  EXPECT_TRUE(Kem::CheckDecapsKey(dk).ok());
}

// One key sent many times in a batch shares one §7.3 hash H(ek) per chunk (items with equal ek),
// and items next to each other with one ek share t̂ and Â^T in the re-encryption: copies whose
// ek (its last byte) or h was changed must still fail, wherever they sit; the intact ones must
// give each its own ciphertext's shared secret, and a tampered ciphertext the implicit-rejection
// key, on every backend, in seed, expanded and prepared form.
TYPED_TEST(MlKemApiTest, BatchOfOneKeyChecksEveryCopy) {
  using Kem = TypeParam;
  const auto kp = MakeKey<Kem>(7);
  const auto other = MakeKey<Kem>(8);  // items 2, 3 and 11 (inside runs of the first key)
  auto key_of = [&](size_t k) -> const KeyPair<Kem>& {
    return k == 2 || k == 3 || k == 11 ? other : kp;
  };
  const size_t ek_off = 384 * Kem::Params::k;
  const size_t n = 20;  // more than one chunk
  SeededRandom rng(77);
  std::vector<Buf> cts(n, Buf(Kem::kCiphertextBytes)), sss(n, Buf(32));
  for (size_t k = 0; k < n; ++k) ASSERT_TRUE(Kem::Encaps(key_of(k).ek, cts[k], sss[k], rng).ok());
  auto ct_tampered = [](size_t k) { return k == 3 || k == 6 || k == 16 || k == 17; };
  for (size_t k = 0; k < n; ++k) {
    if (ct_tampered(k)) cts[k][k] ^= 0x04;
  }
  Buf bad_ek = kp.dk, bad_h = kp.dk;
  bad_ek[ek_off + Kem::kEncapsKeyBytes - 1] ^= 0x10;
  bad_h[ek_off + Kem::kEncapsKeyBytes + 7] ^= 0x01;
  // The tampered keys come first, between and last, and twice in a row.
  auto key_tampered = [&](size_t k) -> const Buf* {
    if (k == 0 || k == 9 || k == 10 || k == 19) return &bad_h;
    if (k == 4 || k == 13 || k == 14) return &bad_ek;
    return nullptr;
  };
  const Isa saved = ActiveIsa();
  for (size_t i = 0; i < kIsaCount; ++i) {
    const auto isa = static_cast<Isa>(i);
    if (!IsaSupported(isa)) continue;
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (int form = 0; form < 3; ++form) {  // expanded, seed, prepared (no check, no tampering)
      SCOPED_TRACE(std::string(IsaName(isa)) + " form " + std::to_string(form));
      std::vector<Buf> outs(n, Buf(32));
      std::vector<KemDecapsItem> de(n);
      for (size_t k = 0; k < n; ++k) {
        const Buf* bad = form == 0 ? key_tampered(k) : nullptr;
        de[k].dk = bad != nullptr ? Bytes(*bad)
                   : form == 1    ? Bytes(key_of(k).seed)
                                  : Bytes(key_of(k).dk);
        de[k].prepared = form == 2;
        de[k].ct = cts[k];
        de[k].ss = outs[k];
      }
      Kem::DecapsBatch(de);
      for (size_t k = 0; k < n; ++k) {
        if (form == 0 && key_tampered(k) != nullptr) {
          ExpectInvalid<Kem>(de[k].status, "§7.3 hash check");
          continue;
        }
        ASSERT_TRUE(de[k].status.ok()) << "item " << k << ": " << de[k].status;
        EXPECT_EQ(outs[k],
                  ct_tampered(k) ? ImplicitRejectionKey<Kem>(key_of(k).dk, cts[k]) : sss[k])
            << "item " << k;
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TYPED_TEST(MlKemApiTest, SeedAndExpandedKeysAgree) {
  using Kem = TypeParam;
  for (uint64_t label = 10; label < 14; ++label) {
    const auto kp = MakeKey<Kem>(label);
    SeededRandom rng(label + 100);
    Buf ct(Kem::kCiphertextBytes), ss(32);
    ASSERT_TRUE(Kem::Encaps(kp.ek, ct, ss, rng).ok());
    Buf a(32), b(32);
    ASSERT_TRUE(Kem::Decaps(kp.dk, ct, a).ok());
    ASSERT_TRUE(Kem::Decaps(kp.seed, ct, b).ok());
    EXPECT_EQ(a, ss);
    EXPECT_EQ(b, ss);
    // Random ciphertext: both forms reject identically.
    Buf junk(Kem::kCiphertextBytes);
    ASSERT_TRUE(rng.Generate(junk).ok());
    ASSERT_TRUE(Kem::Decaps(kp.dk, junk, a).ok());
    ASSERT_TRUE(Kem::Decaps(kp.seed, junk, b).ok());
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, ImplicitRejectionKey<Kem>(kp.dk, junk));
  }
}

TYPED_TEST(MlKemApiTest, SeededRandomIsReproducibleAndSeedOutWorks) {
  using Kem = TypeParam;
  Buf ek1(Kem::kEncapsKeyBytes), dk1(Kem::kDecapsKeyBytes), seed1(64);
  Buf ek2(Kem::kEncapsKeyBytes), dk2(Kem::kDecapsKeyBytes);
  SeededRandom r1(uint64_t{42}), r2(uint64_t{42});
  ASSERT_TRUE(Kem::KeyGen(ek1, dk1, r1, seed1).ok());
  ASSERT_TRUE(Kem::KeyGen(ek2, dk2, r2).ok());
  EXPECT_EQ(ek1, ek2);
  EXPECT_EQ(dk1, dk2);
  Buf ek3(Kem::kEncapsKeyBytes), dk3(Kem::kDecapsKeyBytes);
  ASSERT_TRUE(Kem::KeyGenFromSeed(seed1, ek3, dk3).ok());
  EXPECT_EQ(ek3, ek1);
  EXPECT_EQ(dk3, dk1);
  // The stream advanced: a second key differs.
  ASSERT_TRUE(Kem::KeyGen(ek2, dk2, r2).ok());
  EXPECT_NE(ek2, ek1);

  Buf ct1(Kem::kCiphertextBytes), ss1(32), ct2(Kem::kCiphertextBytes), ss2(32), back(32);
  SeededRandom e1(uint64_t{7}), e2(uint64_t{7});
  ASSERT_TRUE(Kem::Encaps(ek1, ct1, ss1, e1).ok());
  ASSERT_TRUE(Kem::Encaps(ek1, ct2, ss2, e2).ok());
  EXPECT_EQ(ct1, ct2);
  EXPECT_EQ(ss1, ss2);
  ASSERT_TRUE(Kem::Decaps(dk1, ct1, back).ok());
  EXPECT_EQ(back, ss1);
  // Encaps draws exactly m: EncapsDerand with the same 32 bytes gives the same result.
  SeededRandom e3(uint64_t{7});
  Buf m(32), ct3(Kem::kCiphertextBytes), ss3(32);
  ASSERT_TRUE(e3.Generate(m).ok());
  ASSERT_TRUE(Kem::EncapsDerand(ek1, m, ct3, ss3).ok());
  EXPECT_EQ(ct3, ct1);
  EXPECT_EQ(ss3, ss1);
}

TYPED_TEST(MlKemApiTest, RandomnessFailureIsReported) {
  using Kem = TypeParam;
  const auto kp = MakeKey<Kem>(8);
  FailingRandom bad;
  Buf ek(Kem::kEncapsKeyBytes), dk(Kem::kDecapsKeyBytes), ct(Kem::kCiphertextBytes), ss(32);
  const absl::Status a = Kem::KeyGen(ek, dk, bad);
  EXPECT_EQ(a.code(), absl::StatusCode::kUnavailable) << a;
  const absl::Status b = Kem::Encaps(kp.ek, ct, ss, bad);
  EXPECT_EQ(b.code(), absl::StatusCode::kUnavailable) << b;
}

// On every backend: the batch runs on that backend, the single-operation references on the
// portable backend.
TYPED_TEST(MlKemApiTest, BatchesMatchSingleOperations) {
  using Kem = TypeParam;
  const Isa saved = ActiveIsa();
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!IsaSupported(isa)) continue;
    SCOPED_TRACE(std::string(IsaName(isa)));
    for (size_t n = 1; n <= 17; ++n) {
      const size_t bad = n / 2;  // a wrong-length item in the middle (for n > 2)
      const size_t tampered = n - 1;
      // KeyGen: alternate seed-given and fresh items.
      std::vector<Buf> seeds(n, Buf(64)), eks(n, Buf(Kem::kEncapsKeyBytes)),
          dks(n, Buf(Kem::kDecapsKeyBytes)), seed_outs(n, Buf(64));
      std::vector<KemKeyGenItem> kg(n);
      SeededRandom seed_src(n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(seed_src.Generate(seeds[i]).ok());
        kg[i].seed = i % 2 == 0 ? Bytes(seeds[i]) : Bytes();
        kg[i].ek = eks[i];
        kg[i].dk = dks[i];
        kg[i].seed_out = seed_outs[i];
      }
      Buf short_dk(10);
      if (n > 2) kg[bad].dk = short_dk;
      SeededRandom batch_rng(1000 + n), single_rng(1000 + n);
      ASSERT_TRUE(SetActiveIsa(isa).ok());
      Kem::KeyGenBatch(kg, batch_rng);
      ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
      for (size_t i = 0; i < n; ++i) {
        if (n > 2 && i == bad) {
          EXPECT_EQ(kg[i].status.code(), absl::StatusCode::kInvalidArgument);
          continue;
        }
        ASSERT_TRUE(kg[i].status.ok()) << "n=" << n << " i=" << i << " " << kg[i].status;
        Buf ek(Kem::kEncapsKeyBytes), dk(Kem::kDecapsKeyBytes), so(64);
        if (i % 2 == 0) {
          ASSERT_TRUE(Kem::KeyGenFromSeed(seeds[i], ek, dk).ok());
          so = seeds[i];
        } else {
          ASSERT_TRUE(Kem::KeyGen(ek, dk, single_rng, so).ok());
        }
        EXPECT_EQ(eks[i], ek) << "n=" << n << " i=" << i;
        EXPECT_EQ(dks[i], dk) << "n=" << n << " i=" << i;
        EXPECT_EQ(seed_outs[i], so) << "n=" << n << " i=" << i;
      }
      if (n > 2) {  // the failed item is replaced by a good key for the next stages
        ASSERT_TRUE(Kem::KeyGenFromSeed(seeds[bad], eks[bad], dks[bad]).ok());
      }

      // Encaps: explicit m on odd items, fresh randomness on even ones.
      std::vector<Buf> ms(n, Buf(32)), cts(n, Buf(Kem::kCiphertextBytes)), sss(n, Buf(32));
      std::vector<KemEncapsItem> en(n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(seed_src.Generate(ms[i]).ok());
        en[i].ek = eks[i];
        en[i].m = i % 2 == 1 ? Bytes(ms[i]) : Bytes();
        en[i].ct = cts[i];
        en[i].ss = sss[i];
      }
      Buf short_ek(Kem::kEncapsKeyBytes - 1);
      if (n > 2) en[bad].ek = short_ek;
      SeededRandom enc_batch_rng(2000 + n), enc_single_rng(2000 + n);
      ASSERT_TRUE(SetActiveIsa(isa).ok());
      Kem::EncapsBatch(en, enc_batch_rng);
      ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
      for (size_t i = 0; i < n; ++i) {
        if (n > 2 && i == bad) {
          EXPECT_EQ(en[i].status.code(), absl::StatusCode::kInvalidArgument);
          // Make a valid ciphertext for the decaps stage.
          ASSERT_TRUE(Kem::EncapsDerand(eks[i], ms[i], cts[i], sss[i]).ok());
          continue;
        }
        ASSERT_TRUE(en[i].status.ok()) << en[i].status;
        Buf ct(Kem::kCiphertextBytes), ss(32);
        if (i % 2 == 1) {
          ASSERT_TRUE(Kem::EncapsDerand(eks[i], ms[i], ct, ss).ok());
        } else {
          ASSERT_TRUE(Kem::Encaps(eks[i], ct, ss, enc_single_rng).ok());
        }
        EXPECT_EQ(cts[i], ct) << "n=" << n << " i=" << i;
        EXPECT_EQ(sss[i], ss) << "n=" << n << " i=" << i;
      }

      // Decaps: seed-form keys on every third item, a tampered ciphertext last, a wrong-length
      // ciphertext in the middle.
      if (n > 1) cts[tampered][3] ^= 1;
      std::vector<Buf> outs(n, Buf(32));
      std::vector<KemDecapsItem> de(n);
      for (size_t i = 0; i < n; ++i) {
        de[i].dk = i % 3 == 0 ? Bytes(seeds[i].data(), 64) : Bytes(dks[i]);
        de[i].ct = cts[i];
        de[i].ss = outs[i];
      }
      // Seeds of odd KeyGen items came from the rng: use their seed_out.
      for (size_t i = 0; i < n; ++i) {
        if (i % 3 == 0 && i % 2 == 1) de[i].dk = seed_outs[i];
      }
      if (n > 2) de[bad].ct = Bytes(cts[bad].data(), Kem::kCiphertextBytes - 1);
      ASSERT_TRUE(SetActiveIsa(isa).ok());
      Kem::DecapsBatch(de);
      ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
      for (size_t i = 0; i < n; ++i) {
        if (n > 2 && i == bad) {
          EXPECT_EQ(de[i].status.code(), absl::StatusCode::kInvalidArgument);
          continue;
        }
        ASSERT_TRUE(de[i].status.ok()) << de[i].status;
        Buf ss(32);
        ASSERT_TRUE(Kem::Decaps(dks[i], cts[i], ss).ok());
        EXPECT_EQ(outs[i], ss) << "n=" << n << " i=" << i;
        if (n > 1 && i == tampered) {
          EXPECT_NE(outs[i], sss[i]);
          EXPECT_EQ(outs[i], ImplicitRejectionKey<Kem>(dks[i], cts[i]));
        } else {
          EXPECT_EQ(outs[i], sss[i]) << "n=" << n << " i=" << i;
        }
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TEST(MlKemRegistry, RowsMatchClasses) {
  const AlgorithmFacts& f = Facts(AlgorithmId::kMlKem768);
  EXPECT_EQ(f.name, "ML-KEM-768");
  EXPECT_EQ(f.public_key_bytes, 1184u);
  EXPECT_EQ(f.private_key_bytes, 2400u);
  EXPECT_EQ(f.ciphertext_bytes, 1088u);
  EXPECT_EQ(Facts(AlgorithmId::kMlKem512).public_key_bytes, 800u);
  EXPECT_EQ(Facts(AlgorithmId::kMlKem1024).ciphertext_bytes, 1568u);
  const auto kp = MakeKey<MlKem1024>(9);
  const KemFunctions& kem = *Describe(AlgorithmId::kMlKem1024).kem;
  EXPECT_TRUE(kem.check_ek(kp.ek).ok());
  EXPECT_TRUE(kem.check_dk(kp.dk).ok());
}

}  // namespace
}  // namespace pqcd::kernels
