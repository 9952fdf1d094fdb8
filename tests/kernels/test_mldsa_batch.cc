// ML-DSA batch entry points (KeyGenBatch, SignBatch, VerifyBatch) on every backend the CPU
// supports, against the single-operation path on the portable backend: batch sizes 1..17 with
// shared and distinct keys (expanded and seed form), pure / context / pre-hash / external-mu
// messages, and invalid requests mixed in (each must fail alone with the single path's status).
#include <gtest/gtest.h>

#include "common/test_support.h"

#include <string>
#include <vector>

#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/mldsa.h"

namespace pqcd::kernels {
namespace {

using pqcd::testing::ScopedIsa;
using pqcd::testing::SupportedIsas;

using ByteVec = std::vector<uint8_t>;

ByteVec Pattern(size_t n, uint32_t salt) {
  ByteVec v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + salt * 17 + 7);
  return v;
}

template <class Dsa>
class MlDsaBatch : public ::testing::Test {};
using ParameterSets = ::testing::Types<MlDsa44, MlDsa65, MlDsa87>;
TYPED_TEST_SUITE(MlDsaBatch, ParameterSets);

// Request i of a batch of n: what it signs / verifies and how it is broken (if at all).
struct Shape {
  size_t key;        // index into the key pool (3 keys: shared and distinct keys in one batch)
  bool seed_form;    // private key given as the 32-byte seed
  int message_kind;  // 0 pure, 1 context, 2 pre-hash, 3 external mu
  int defect;        // 0 none, 1 bad sk/pk length, 2 bad sig buffer/length, 3 context > 255,
                     // 4 corrupted signature (verify only)
};
Shape ShapeOf(size_t n, size_t i) {
  Shape s;
  s.key = (i * 7 + n) % 5 < 3 ? 0 : 1 + (i % 2);
  s.seed_form = (i + n) % 4 == 1;
  s.message_kind = static_cast<int>((i * 3 + n) % 4);
  s.defect = i == n / 2 && n > 2 ? static_cast<int>(1 + n % 4) : (i % 9 == 8 ? 4 : 0);
  if (s.defect == 3 && s.message_kind == 3) s.message_kind = 1;  // external mu ignores context
  return s;
}

TYPED_TEST(MlDsaBatch, MatchesSingleOpsOnEveryBackend) {
  using Dsa = TypeParam;
  ScopedIsa restore;
  for (Isa isa : SupportedIsas()) {
    SCOPED_TRACE(std::string(IsaName(isa)));
    size_t items_checked = 0;
    for (size_t n = 1; n <= 17; ++n) {
      SCOPED_TRACE(n);
      // Keys: the batch (on `isa`) against KeyGenFromSeed on portable; item 0 draws a fresh seed.
      ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
      const size_t nkeys = 3;
      std::vector<ByteVec> seeds(nkeys), pks(nkeys), sks(nkeys);
      for (size_t k = 0; k < nkeys; ++k) {
        seeds[k] = Pattern(32, static_cast<uint32_t>(n * 5 + k));
        pks[k].resize(Dsa::kPublicKeyBytes);
        sks[k].resize(Dsa::kPrivateKeyBytes);
        ASSERT_TRUE(Dsa::KeyGenFromSeed(seeds[k], pks[k], sks[k]).ok());
      }
      {
        ASSERT_TRUE(SetActiveIsa(isa).ok());
        std::vector<ByteVec> kpk(n, ByteVec(Dsa::kPublicKeyBytes)),
            ksk(n, ByteVec(Dsa::kPrivateKeyBytes)), kseed(n, ByteVec(32)), kseed_in(n);
        std::vector<DsaKeyGenItem> kg(n);
        for (size_t i = 0; i < n; ++i) {
          kseed_in[i] = Pattern(32, static_cast<uint32_t>(n * 5 + i % nkeys));
          if (i % 5 != 0) kg[i].seed = kseed_in[i];
          kg[i].pk = kpk[i];
          kg[i].sk = ksk[i];
          kg[i].seed_out = kseed[i];
          if (i == n / 2 && n > 2) kg[i].sk = MutBytes(ksk[i].data(), 10);  // bad buffer
        }
        SeededRandom rng(uint64_t{n});
        Dsa::KeyGenBatch(kg, rng);
        ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
        SeededRandom ref_rng(uint64_t{n});
        for (size_t i = 0; i < n; ++i) {
          ByteVec pk(Dsa::kPublicKeyBytes), sk(Dsa::kPrivateKeyBytes), seed(32);
          absl::Status want;
          MutBytes skb = (i == n / 2 && n > 2) ? MutBytes(sk.data(), 10) : MutBytes(sk);
          if (i % 5 != 0) {
            want = Dsa::KeyGenFromSeed(kseed_in[i], pk, skb);
          } else {
            want = Dsa::KeyGen(pk, skb, ref_rng, seed);
          }
          ASSERT_EQ(kg[i].status, want) << "keygen item " << i;
          if (!want.ok()) continue;
          EXPECT_EQ(kpk[i], pk) << "keygen item " << i;
          EXPECT_EQ(ksk[i], sk) << "keygen item " << i;
          if (i % 5 == 0) {
            EXPECT_EQ(kseed[i], seed) << "keygen item " << i;
          }
          ++items_checked;
        }
      }

      // Requests.
      std::vector<ByteVec> msgs(n), ctxs(n), sigs(n), sig_ref(n), rnds(n);
      std::vector<DsaSignItem> sg(n);
      std::vector<Shape> shapes(n);
      for (size_t i = 0; i < n; ++i) {
        const Shape sh = shapes[i] = ShapeOf(n, i);
        msgs[i] = Pattern(sh.message_kind == 3 ? 64 : (i * 37) % 300, static_cast<uint32_t>(i));
        ctxs[i] = Pattern(sh.defect == 3 ? 256 : (sh.message_kind == 1 ? 1 + i * 13 % 255 : 0),
                          static_cast<uint32_t>(i + 99));
        sigs[i].assign(sh.defect == 2 ? Dsa::kSignatureBytes - 1 : Dsa::kSignatureBytes, 0);
        DsaSignItem& item = sg[i];
        item.sk = sh.defect == 1 ? Bytes(pks[sh.key])
                                 : (sh.seed_form ? Bytes(seeds[sh.key]) : Bytes(sks[sh.key]));
        item.message = msgs[i];
        item.options.context = ctxs[i];
        item.options.prehash = sh.message_kind == 2 ? PreHash::kSha3_256 : PreHash::kNone;
        item.options.external_mu = sh.message_kind == 3;
        item.options.deterministic = i % 3 == 1;
        if (i % 3 == 2) {
          rnds[i] = Pattern(32, static_cast<uint32_t>(i + 7));
          item.options.rnd = rnds[i];
        }
        item.sig = sigs[i];
      }
      ASSERT_TRUE(SetActiveIsa(isa).ok());
      SeededRandom rng(uint64_t{100 + n});
      Dsa::SignBatch(sg, rng);
      ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
      SeededRandom ref_rng(uint64_t{100 + n});
      for (size_t i = 0; i < n; ++i) {
        sig_ref[i].assign(sigs[i].size(), 0);
        const absl::Status want =
            Dsa::Sign(sg[i].sk, sg[i].message, sg[i].options, sig_ref[i], ref_rng);
        ASSERT_EQ(sg[i].status, want) << "sign item " << i;
        EXPECT_EQ(want.ok(), shapes[i].defect == 0 || shapes[i].defect == 4) << "sign item " << i;
        EXPECT_EQ(sigs[i], sig_ref[i]) << "sign item " << i;
        ++items_checked;
      }

      // Verification of what was signed (a valid signature under key 0 where signing failed).
      std::vector<ByteVec> vsig(n);
      std::vector<DsaVerifyItem> vf(n);
      for (size_t i = 0; i < n; ++i) {
        const Shape& sh = shapes[i];
        vsig[i] = sg[i].status.ok() ? sigs[i] : ByteVec(Dsa::kSignatureBytes, 0);
        if (sh.defect == 4) vsig[i][3 + i] ^= 0x10;
        if (sh.defect == 2) vsig[i].resize(Dsa::kSignatureBytes - 1);
        DsaVerifyItem& item = vf[i];
        item.pk = sh.defect == 1 ? Bytes(sks[sh.key]) : Bytes(pks[sh.key]);
        item.message = msgs[i];
        item.sig = vsig[i];
        item.options = sg[i].options;
      }
      ASSERT_TRUE(SetActiveIsa(isa).ok());
      Dsa::VerifyBatch(vf);
      ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
      for (size_t i = 0; i < n; ++i) {
        const absl::StatusOr<bool> want =
            Dsa::Verify(vf[i].pk, vf[i].message, vf[i].sig, vf[i].options);
        ASSERT_EQ(vf[i].status, want.status()) << "verify item " << i;
        EXPECT_EQ(vf[i].valid, want.ok() && *want) << "verify item " << i;
        EXPECT_EQ(vf[i].valid, sg[i].status.ok() && shapes[i].defect == 0) << "verify item " << i;
        ++items_checked;
      }
    }
    std::printf("[batch] %s %s: %zu batch items matched the single path\n",
                std::string(Dsa::kName).c_str(), std::string(IsaName(isa)).c_str(), items_checked);
  }
}

}  // namespace
}  // namespace pqcd::kernels
