// ML-DSA (FIPS 204) API behaviour: input validation, tampering, contexts, key forms, hedging,
// pre-hashes, external mu, pairwise check and the batch entry points.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::kernels {
namespace {

using ByteVec = std::vector<uint8_t>;

ByteVec Pattern(size_t n, uint8_t salt) {
  ByteVec v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + salt * 17 + 7);
  return v;
}

template <class Dsa>
struct KeyPair {
  ByteVec seed, pk, sk;
};

template <class Dsa>
KeyPair<Dsa> MakeKeys(uint8_t salt) {
  KeyPair<Dsa> kp{Pattern(32, salt), ByteVec(Dsa::kPublicKeyBytes), ByteVec(Dsa::kPrivateKeyBytes)};
  EXPECT_TRUE(Dsa::KeyGenFromSeed(kp.seed, kp.pk, kp.sk).ok());
  return kp;
}

template <class Dsa>
class MlDsaTest : public ::testing::Test {};
using ParameterSets = ::testing::Types<MlDsa44, MlDsa65, MlDsa87>;
TYPED_TEST_SUITE(MlDsaTest, ParameterSets);

template <class Dsa>
ByteVec SignOk(const ByteVec& sk, const ByteVec& msg, const DsaSignOptions& options,
               RandomSource& rng) {
  ByteVec sig(Dsa::kSignatureBytes);
  const absl::Status s = Dsa::Sign(sk, msg, options, sig, rng);
  EXPECT_TRUE(s.ok()) << s;
  return sig;
}

template <class Dsa>
bool VerifyOk(const ByteVec& pk, const ByteVec& msg, const ByteVec& sig,
              const DsaMessageOptions& options) {
  absl::StatusOr<bool> r = Dsa::Verify(pk, msg, sig, options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() && *r;
}

TYPED_TEST(MlDsaTest, RoundTripAndTampering) {
  using Dsa = TypeParam;
  SeededRandom rng(uint64_t{42});
  const auto kp = MakeKeys<Dsa>(1);
  const ByteVec msg = Pattern(100, 2);
  const ByteVec ctx = Pattern(10, 3);
  DsaSignOptions options;
  options.context = ctx;
  const ByteVec sig = SignOk<Dsa>(kp.sk, msg, options, rng);
  EXPECT_TRUE(VerifyOk<Dsa>(kp.pk, msg, sig, options));

  // Every region of the signature: c~, z, hint.
  constexpr size_t kCTilde = Dsa::Params::lambda / 4;
  for (size_t pos : {size_t{0}, kCTilde - 1, kCTilde, kCTilde + 500, Dsa::kSignatureBytes - 1}) {
    ByteVec bad = sig;
    bad[pos] ^= 0x01;
    EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, bad, options)) << "byte " << pos;
  }
  ByteVec bad_msg = msg;
  bad_msg[50] ^= 0x80;
  EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, bad_msg, sig, options));
  // The options only view their bytes: they must outlive the options (BorrowedBytes refuses a
  // temporary such as Pattern(10, 4) at compile time).
  const ByteVec ctx4 = Pattern(10, 4);
  DsaMessageOptions other_ctx;
  other_ctx.context = ctx4;
  EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, sig, other_ctx));
  EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, sig, DsaMessageOptions{}));  // context dropped
  const auto other = MakeKeys<Dsa>(9);
  EXPECT_FALSE(VerifyOk<Dsa>(other.pk, msg, sig, options));

  // Wrong-length signatures are simply invalid.
  for (size_t n : {size_t{0}, Dsa::kSignatureBytes - 1, Dsa::kSignatureBytes + 1}) {
    ByteVec s = sig;
    s.resize(n);
    EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, s, options)) << n;
  }
}

TYPED_TEST(MlDsaTest, MalformedHintAndZ) {
  using Dsa = TypeParam;
  using P = typename Dsa::Params;
  SeededRandom rng(uint64_t{7});
  const auto kp = MakeKeys<Dsa>(5);
  const ByteVec msg = Pattern(33, 1);
  const DsaSignOptions options;
  const ByteVec sig = SignOk<Dsa>(kp.sk, msg, options, rng);
  ASSERT_TRUE(VerifyOk<Dsa>(kp.pk, msg, sig, options));
  const size_t hint = Dsa::kSignatureBytes - P::omega - P::k;
  const uint8_t* counts = sig.data() + hint + P::omega;
  const int total = counts[P::k - 1];

  {  // Too many hints.
    ByteVec bad = sig;
    bad[hint + P::omega + P::k - 1] = static_cast<uint8_t>(P::omega + 1);
    EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, bad, options));
  }
  {  // Decreasing cumulative counts.
    ByteVec bad = sig;
    bad[hint + P::omega + 0] = static_cast<uint8_t>(total + 1);
    if (total + 1 <= P::omega) {
      EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, bad, options));
    }
  }
  {  // Non-increasing indices: all hints in the first polynomial, two equal indices.
    ByteVec bad = sig;
    std::fill(bad.begin() + hint, bad.end(), 0);
    bad[hint + 0] = 5;
    bad[hint + 1] = 5;
    for (int i = 0; i < P::k; ++i) bad[hint + P::omega + i] = 2;
    EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, bad, options));
    bad[hint + 1] = 4;  // decreasing
    EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, bad, options));
  }
  {  // Nonzero padding after the last index.
    ASSERT_LT(total, P::omega);
    ByteVec bad = sig;
    bad[hint + P::omega - 1] = 1;
    EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, bad, options));
  }
  {  // ||z|| too large: an all-zero z encoding is z_i = gamma1 everywhere.
    ByteVec bad = sig;
    const size_t ctilde = P::lambda / 4;
    std::fill(bad.begin() + ctilde, bad.begin() + ctilde + 32 * (P::gamma1_bits + 1), 0);
    EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, bad, options));
  }
  {  // Garbage everywhere must not crash.
    for (uint8_t salt = 0; salt < 8; ++salt) {
      EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, Pattern(Dsa::kSignatureBytes, salt), options));
    }
  }
}

TYPED_TEST(MlDsaTest, LengthAndOptionErrors) {
  using Dsa = TypeParam;
  SeededRandom rng(uint64_t{3});
  const auto kp = MakeKeys<Dsa>(2);
  const ByteVec msg = Pattern(10, 0);
  ByteVec sig(Dsa::kSignatureBytes);
  const std::string name(Dsa::kName);

  absl::StatusOr<bool> v = Dsa::Verify(ByteVec(7), msg, sig, {});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(v.status().message(), name + " public key: expected " +
                                      std::to_string(Dsa::kPublicKeyBytes) + " bytes, got 7");
  EXPECT_FALSE(Dsa::VerifyInternal(ByteVec(Dsa::kPublicKeyBytes + 1), msg, sig).ok());

  absl::Status s = Dsa::Sign(ByteVec(31), msg, {}, sig, rng);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(name + " private key"), std::string::npos) << s;
  s = Dsa::Sign(kp.sk, msg, {}, MutBytes(sig.data(), sig.size() - 1), rng);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("signature"), std::string::npos) << s;
  EXPECT_FALSE(Dsa::SignInternal(kp.sk, msg, ByteVec(31), sig).ok());

  const ByteVec rnd31(31);
  DsaSignOptions bad_rnd;
  bad_rnd.rnd = rnd31;
  EXPECT_FALSE(Dsa::Sign(kp.sk, msg, bad_rnd, sig, rng).ok());

  DsaSignOptions mu_opts;
  mu_opts.external_mu = true;
  EXPECT_FALSE(Dsa::Sign(kp.sk, ByteVec(63), mu_opts, sig, rng).ok());
  EXPECT_FALSE(Dsa::Verify(kp.pk, ByteVec(65), sig, mu_opts).ok());

  DsaSignOptions bad_ph;
  bad_ph.prehash = static_cast<PreHash>(99);
  EXPECT_FALSE(Dsa::Sign(kp.sk, msg, bad_ph, sig, rng).ok());
  EXPECT_FALSE(Dsa::Verify(kp.pk, msg, sig, bad_ph).ok());

  ByteVec pk(Dsa::kPublicKeyBytes), sk(Dsa::kPrivateKeyBytes);
  EXPECT_FALSE(Dsa::KeyGenFromSeed(ByteVec(31), pk, sk).ok());
  ByteVec tiny(1), mu63(63);
  EXPECT_FALSE(Dsa::KeyGenFromSeed(kp.seed, tiny, sk).ok());
  EXPECT_FALSE(Dsa::KeyGen(pk, tiny, rng).ok());
  ByteVec seed_out(16);
  EXPECT_FALSE(Dsa::KeyGen(pk, sk, rng, seed_out).ok());

  ByteVec mu(Dsa::kMuBytes);
  EXPECT_FALSE(Dsa::ComputeMu(kp.pk, msg, {}, mu63).ok());
  EXPECT_TRUE(Dsa::ComputeMu(kp.pk, msg, {}, mu).ok());

  // A malformed expanded private key (s1 coefficient outside [-eta, eta]) is refused.
  ByteVec bad_sk = kp.sk;
  bad_sk[128] = 0xff;
  s = Dsa::Sign(bad_sk, msg, {}, sig, rng);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TYPED_TEST(MlDsaTest, Contexts) {
  using Dsa = TypeParam;
  SeededRandom rng(uint64_t{4});
  const auto kp = MakeKeys<Dsa>(3);
  const ByteVec msg = Pattern(64, 5);
  const ByteVec ctx255 = Pattern(255, 6);
  const ByteVec ctx256 = Pattern(256, 6);

  DsaSignOptions options;
  options.context = ctx255;
  const ByteVec sig = SignOk<Dsa>(kp.sk, msg, options, rng);
  EXPECT_TRUE(VerifyOk<Dsa>(kp.pk, msg, sig, options));

  DsaSignOptions too_long;
  too_long.context = ctx256;
  ByteVec out(Dsa::kSignatureBytes);
  const absl::Status s = Dsa::Sign(kp.sk, msg, too_long, out, rng);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("context"), std::string::npos) << s;
  absl::StatusOr<bool> v = Dsa::Verify(kp.pk, msg, sig, too_long);
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);

  // Empty context; an empty message too.
  const ByteVec empty_sig = SignOk<Dsa>(kp.sk, msg, DsaSignOptions{}, rng);
  EXPECT_TRUE(VerifyOk<Dsa>(kp.pk, msg, empty_sig, {}));
  DsaMessageOptions one_zero;
  const ByteVec zero_byte(1, 0);
  one_zero.context = zero_byte;
  EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, empty_sig, one_zero));
  const ByteVec no_msg;
  const ByteVec sig_empty_msg = SignOk<Dsa>(kp.sk, no_msg, DsaSignOptions{}, rng);
  EXPECT_TRUE(VerifyOk<Dsa>(kp.pk, no_msg, sig_empty_msg, {}));
}

TYPED_TEST(MlDsaTest, KeyFormsDeterminismAndHedging) {
  using Dsa = TypeParam;
  SeededRandom rng(uint64_t{5});
  const auto kp = MakeKeys<Dsa>(4);
  const ByteVec msg = Pattern(200, 8);
  DsaSignOptions det;
  det.deterministic = true;
  const ByteVec a = SignOk<Dsa>(kp.sk, msg, det, rng);
  const ByteVec b = SignOk<Dsa>(kp.seed, msg, det, rng);
  EXPECT_EQ(a, b) << "seed-form and expanded private keys must sign identically";
  EXPECT_EQ(a, SignOk<Dsa>(kp.sk, msg, det, rng)) << "deterministic signing repeats";

  DsaSignOptions explicit_rnd;
  const ByteVec rnd = Pattern(32, 9);
  explicit_rnd.rnd = rnd;
  explicit_rnd.deterministic = true;  // rnd overrides
  const ByteVec c = SignOk<Dsa>(kp.sk, msg, explicit_rnd, rng);
  EXPECT_EQ(c, SignOk<Dsa>(kp.seed, msg, explicit_rnd, rng));
  EXPECT_NE(c, a);
  ByteVec d(Dsa::kSignatureBytes);
  const ByteVec mprime = [&] {
    ByteVec m = {0, 0};
    m.insert(m.end(), msg.begin(), msg.end());
    return m;
  }();
  ASSERT_TRUE(Dsa::SignInternal(kp.sk, mprime, rnd, d).ok());
  EXPECT_EQ(c, d) << "ML-DSA.Sign = Sign_internal on 0 || 0 || M";
  absl::StatusOr<bool> vi = Dsa::VerifyInternal(kp.pk, mprime, d);
  ASSERT_TRUE(vi.ok());
  EXPECT_TRUE(*vi);

  const ByteVec h1 = SignOk<Dsa>(kp.sk, msg, DsaSignOptions{}, rng);
  const ByteVec h2 = SignOk<Dsa>(kp.sk, msg, DsaSignOptions{}, rng);
  EXPECT_NE(h1, h2);
  EXPECT_NE(h1, a);
  EXPECT_TRUE(VerifyOk<Dsa>(kp.pk, msg, h1, {}));
  EXPECT_TRUE(VerifyOk<Dsa>(kp.pk, msg, h2, {}));

  // KeyGen with fresh randomness reports its seed; the seed reproduces the keys.
  ByteVec pk(Dsa::kPublicKeyBytes), sk(Dsa::kPrivateKeyBytes), seed(32);
  ASSERT_TRUE(Dsa::KeyGen(pk, sk, rng, seed).ok());
  ByteVec pk2(Dsa::kPublicKeyBytes), sk2(Dsa::kPrivateKeyBytes);
  ASSERT_TRUE(Dsa::KeyGenFromSeed(seed, pk2, sk2).ok());
  EXPECT_EQ(pk, pk2);
  EXPECT_EQ(sk, sk2);
}

TYPED_TEST(MlDsaTest, ExternalMuAndPreHash) {
  using Dsa = TypeParam;
  SeededRandom rng(uint64_t{6});
  const auto kp = MakeKeys<Dsa>(6);
  const ByteVec msg = Pattern(1000, 1);
  const ByteVec ctx = Pattern(17, 2);

  for (PreHash ph : {PreHash::kNone, PreHash::kSha2_224, PreHash::kSha2_256, PreHash::kSha2_384,
                     PreHash::kSha2_512, PreHash::kSha2_512_224, PreHash::kSha2_512_256,
                     PreHash::kSha3_224, PreHash::kSha3_256, PreHash::kSha3_384, PreHash::kSha3_512,
                     PreHash::kShake128, PreHash::kShake256}) {
    SCOPED_TRACE(std::string(PreHashName(ph)));
    EXPECT_EQ(ParsePreHashName(PreHashName(ph)), ph);
    DsaSignOptions options;
    options.context = ctx;
    options.prehash = ph;
    options.deterministic = true;
    const ByteVec sig = SignOk<Dsa>(kp.sk, msg, options, rng);
    EXPECT_TRUE(VerifyOk<Dsa>(kp.pk, msg, sig, options));
    DsaMessageOptions other = options;
    other.prehash = ph == PreHash::kSha2_256 ? PreHash::kSha3_256 : PreHash::kSha2_256;
    EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, msg, sig, other));

    // External mu: mu computed by the client gives the same signature and verifies.
    ByteVec mu(64);
    ASSERT_TRUE(Dsa::ComputeMu(kp.pk, msg, options, mu).ok());
    DsaSignOptions mu_opts;
    mu_opts.external_mu = true;
    mu_opts.deterministic = true;
    EXPECT_EQ(SignOk<Dsa>(kp.sk, mu, mu_opts, rng), sig);
    EXPECT_TRUE(VerifyOk<Dsa>(kp.pk, mu, sig, mu_opts));
    mu[0] ^= 1;
    EXPECT_FALSE(VerifyOk<Dsa>(kp.pk, mu, sig, mu_opts));
  }
  EXPECT_EQ(ParsePreHashName("SHA-256"), PreHash::kSha2_256);
  EXPECT_EQ(ParsePreHashName("SHAKE-256"), PreHash::kShake256);
  EXPECT_FALSE(ParsePreHashName("SM3").has_value());
  EXPECT_FALSE(ParsePreHashName("MD5").has_value());
}

TYPED_TEST(MlDsaTest, PairwiseCheck) {
  using Dsa = TypeParam;
  const auto kp = MakeKeys<Dsa>(7);
  const auto other = MakeKeys<Dsa>(8);
  EXPECT_TRUE(Dsa::PairwiseCheck(kp.pk, kp.sk).ok());
  EXPECT_TRUE(Dsa::PairwiseCheck(kp.pk, kp.seed).ok());
  EXPECT_FALSE(Dsa::PairwiseCheck(kp.pk, other.sk).ok());
  EXPECT_FALSE(Dsa::PairwiseCheck(other.pk, kp.seed).ok());
  EXPECT_FALSE(Dsa::PairwiseCheck(ByteVec(3), kp.sk).ok());

  // The registry's row for this parameter set: same facts, same functions.
  const std::optional<AlgorithmId> id = ParseAlgorithmName(Dsa::kName);
  ASSERT_TRUE(id.has_value());
  const AlgorithmDescriptor& d = Describe(*id);
  EXPECT_EQ(d.name(), Dsa::kName);
  EXPECT_EQ(d.facts->signature_bytes, Dsa::kSignatureBytes);
  EXPECT_TRUE(d.dsa->pairwise_check(kp.pk, kp.sk).ok());
}

// Batch entry points equal the single-operation path item by item, for sizes 1..17.
TYPED_TEST(MlDsaTest, BatchesMatchSingleOps) {
  using Dsa = TypeParam;
  for (size_t n = 1; n <= 17; ++n) {
    SCOPED_TRACE(n);
    std::vector<ByteVec> seeds(n), pks(n, ByteVec(Dsa::kPublicKeyBytes)),
        sks(n, ByteVec(Dsa::kPrivateKeyBytes)), msgs(n), sigs(n, ByteVec(Dsa::kSignatureBytes));
    std::vector<DsaKeyGenItem> kg(n);
    for (size_t i = 0; i < n; ++i) {
      seeds[i] = Pattern(32, static_cast<uint8_t>(n * 31 + i));
      msgs[i] = Pattern(i * 13, static_cast<uint8_t>(i));
      kg[i].seed = seeds[i];
      kg[i].pk = pks[i];
      kg[i].sk = sks[i];
    }
    SeededRandom batch_rng(uint64_t{n});
    Dsa::KeyGenBatch(kg, batch_rng);

    // Hedged signing: the batch consumes randomness in item order, like the single path.
    std::vector<DsaSignItem> sg(n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(kg[i].status.ok()) << kg[i].status;
      const auto single = MakeKeys<Dsa>(static_cast<uint8_t>(n * 31 + i));
      EXPECT_EQ(pks[i], single.pk);
      EXPECT_EQ(sks[i], single.sk);
      sg[i].sk = (i % 2 == 0) ? Bytes(sks[i]) : Bytes(seeds[i]);
      sg[i].message = msgs[i];
      sg[i].sig = sigs[i];
    }
    Dsa::SignBatch(sg, batch_rng);
    SeededRandom single_rng(uint64_t{n});
    for (size_t i = 0; i < n; ++i) {  // keygen drew nothing (seeds given)
      ASSERT_TRUE(sg[i].status.ok()) << sg[i].status;
      ByteVec single(Dsa::kSignatureBytes);
      ASSERT_TRUE(Dsa::Sign(sg[i].sk, msgs[i], {}, single, single_rng).ok());
      EXPECT_EQ(sigs[i], single) << "item " << i;
    }

    // Verification; a corrupted signature in the middle fails alone.
    const size_t bad = n / 2;
    ByteVec corrupted = sigs[bad];
    corrupted[10] ^= 0x40;
    std::vector<DsaVerifyItem> vf(n);
    for (size_t i = 0; i < n; ++i) {
      vf[i].pk = pks[i];
      vf[i].message = msgs[i];
      vf[i].sig = i == bad ? Bytes(corrupted) : Bytes(sigs[i]);
    }
    Dsa::VerifyBatch(vf);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(vf[i].status.ok()) << vf[i].status;
      EXPECT_EQ(vf[i].valid, i != bad) << "item " << i;
    }
  }

  // Per-item errors: a bad item does not disturb its neighbours.
  const auto kp = MakeKeys<Dsa>(77);
  const ByteVec msg = Pattern(5, 5);
  ByteVec sig_ok(Dsa::kSignatureBytes), sig_short(10);
  std::vector<DsaSignItem> sg(3);
  sg[0].sk = kp.sk;
  sg[0].message = msg;
  sg[0].sig = sig_ok;
  sg[1].sk = kp.sk;
  sg[1].message = msg;
  sg[1].sig = sig_short;
  sg[2].sk = kp.pk;  // wrong length for a private key
  sg[2].message = msg;
  sg[2].sig = sig_ok;
  SeededRandom rng(uint64_t{1});
  ByteVec sig_third(Dsa::kSignatureBytes);
  sg[2].sig = sig_third;
  Dsa::SignBatch(sg, rng);
  EXPECT_TRUE(sg[0].status.ok());
  EXPECT_FALSE(sg[1].status.ok());
  EXPECT_FALSE(sg[2].status.ok());

  std::vector<DsaVerifyItem> vf(2);
  vf[0].pk = kp.pk;
  vf[0].message = msg;
  vf[0].sig = sig_ok;
  vf[1].pk = msg;  // wrong pk length: error
  vf[1].message = msg;
  vf[1].sig = sig_ok;
  Dsa::VerifyBatch(vf);
  EXPECT_TRUE(vf[0].status.ok());
  EXPECT_TRUE(vf[0].valid);
  EXPECT_FALSE(vf[1].status.ok());
  EXPECT_FALSE(vf[1].valid);

  // Fresh-randomness keygen items report their seed.
  ByteVec pk(Dsa::kPublicKeyBytes), sk(Dsa::kPrivateKeyBytes), seed(32);
  std::vector<DsaKeyGenItem> kg(1);
  kg[0].pk = pk;
  kg[0].sk = sk;
  kg[0].seed_out = seed;
  Dsa::KeyGenBatch(kg, rng);
  ASSERT_TRUE(kg[0].status.ok());
  ByteVec pk2(Dsa::kPublicKeyBytes), sk2(Dsa::kPrivateKeyBytes);
  ASSERT_TRUE(Dsa::KeyGenFromSeed(seed, pk2, sk2).ok());
  EXPECT_EQ(pk, pk2);
  EXPECT_TRUE(Dsa::PairwiseCheck(pk, sk).ok());
}

}  // namespace
}  // namespace pqcd::kernels
