// Batched SHA-3/SHAKE on multi-lane Keccak against one sponge at a time, on every backend.
#include <gtest/gtest.h>

#include <vector>

#include "keccak/sha3_multi.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/random.h"

namespace pqcd::kernels {
namespace {

TEST(MultilaneSha3, BatchEqualsSingleForMixedLengths) {
  const Isa saved = ActiveIsa();
  SeededRandom rng(uint64_t{5});
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!IsaSupported(isa)) continue;
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (HashAlgorithm alg :
         {HashAlgorithm::kSha3_224, HashAlgorithm::kSha3_256, HashAlgorithm::kSha3_384,
          HashAlgorithm::kSha3_512, HashAlgorithm::kShake128, HashAlgorithm::kShake256,
          HashAlgorithm::kSm3}) {
      for (size_t count : {0, 1, 2, 3, 4, 5, 8, 9, 17, 70}) {
        std::vector<std::vector<uint8_t>> msgs(count), outs(count);
        std::vector<Bytes> in;
        std::vector<MutBytes> out;
        for (size_t i = 0; i < count; ++i) {
          uint8_t r[4];
          rng.Generate(r).IgnoreError();
          static const size_t kEdges[] = {0, 1, 71, 72, 103, 104, 135, 136, 167, 168, 169, 337};
          msgs[i].resize(i < std::size(kEdges) ? kEdges[i] : (r[0] | r[1] << 8) % 700);
          rng.Generate(msgs[i]).IgnoreError();
          // SHAKE outputs of any length, including several blocks.
          outs[i].resize(HashIsXof(alg) ? (r[2] | r[3] << 8) % 600 : HashDigestBytes(alg));
          in.emplace_back(msgs[i]);
          out.emplace_back(outs[i]);
        }
        std::vector<absl::Status> statuses(count);
        ASSERT_TRUE(HashBatch(alg, in, out, statuses.data()).ok());
        for (size_t i = 0; i < count; ++i) {
          std::vector<uint8_t> want(outs[i].size());
          ASSERT_TRUE(Hash(alg, msgs[i], want).ok());
          ASSERT_EQ(want, outs[i]) << IsaName(isa) << " " << HashName(alg) << " batch " << count
                                   << " item " << i << " length " << msgs[i].size();
        }
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TEST(MultilaneSha3, BadItemFailsAlone) {
  std::vector<uint8_t> a(10, 1), b(10, 2), c(10, 3), oa(32), ob(31), oc(32), wa(32), wc(32);
  const Bytes in[] = {a, b, c};
  const MutBytes out[] = {oa, ob, oc};
  absl::Status st[3];
  EXPECT_FALSE(HashBatch(HashAlgorithm::kSha3_256, in, out, st).ok());
  EXPECT_TRUE(st[0].ok());
  EXPECT_EQ(st[1].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(st[2].ok());
  ASSERT_TRUE(Hash(HashAlgorithm::kSha3_256, a, wa).ok());
  ASSERT_TRUE(Hash(HashAlgorithm::kSha3_256, c, wc).ok());
  EXPECT_EQ(oa, wa);
  EXPECT_EQ(oc, wc);
}

}  // namespace
}  // namespace pqcd::kernels
