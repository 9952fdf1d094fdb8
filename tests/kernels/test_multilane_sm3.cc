// Multi-buffer SM3 (AVX2 x8, AVX-512 x16) against the portable one-message path.
#include <gtest/gtest.h>

#include <vector>

#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/sm3.h"
#include "sm3/sm3_multi.h"

namespace pqcd::kernels {
namespace {

TEST(MultilaneSm3, BatchEqualsPortableForMixedLengths) {
  const Isa saved = ActiveIsa();
  SeededRandom rng(uint64_t{3});
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!IsaSupported(isa)) continue;
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (size_t count : {0, 1, 2, 7, 8, 9, 16, 17, 33}) {
      std::vector<std::vector<uint8_t>> msgs(count), outs(count, std::vector<uint8_t>(32));
      std::vector<Bytes> in;
      std::vector<MutBytes> out;
      for (size_t i = 0; i < count; ++i) {
        uint8_t len_bytes[2];
        rng.Generate(len_bytes).IgnoreError();
        // Lengths around the padding edges (55, 56, 63, 64) and up to ~1 KiB.
        static const size_t kEdges[] = {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128};
        const size_t len =
            i < std::size(kEdges) ? kEdges[i] : (len_bytes[0] | len_bytes[1] << 8) % 1100;
        msgs[i].resize(len);
        rng.Generate(msgs[i]).IgnoreError();
        in.emplace_back(msgs[i]);
        out.emplace_back(outs[i]);
      }
      Sm3DigestBatch(in, out);
      for (size_t i = 0; i < count; ++i) {
        uint8_t want[32];
        Sm3Digest(msgs[i], want);
        ASSERT_EQ(0, std::memcmp(want, outs[i].data(), 32))
            << IsaName(isa) << " batch " << count << " message " << i << " length "
            << msgs[i].size();
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

}  // namespace
}  // namespace pqcd::kernels
