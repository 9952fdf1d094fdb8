// Keccak-f[1600] and the sponge's streaming contract: any chunking of the input, and any chunking
// of the output (Squeeze or SqueezeBlocks), gives the same bytes as one call. Cross-checked against
// OpenSSL's SHA-3/SHAKE on random lengths.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

using ::pqcd::testing::ToHex;

struct SpongeKind {
  const char* name;
  size_t rate;
  uint8_t suffix;
  const char* evp_name;
};
constexpr SpongeKind kKinds[] = {
    {"SHA3-224", 144, 0x06, "SHA3-224"},  {"SHA3-256", 136, 0x06, "SHA3-256"},
    {"SHA3-384", 104, 0x06, "SHA3-384"},  {"SHA3-512", 72, 0x06, "SHA3-512"},
    {"SHAKE-128", 168, 0x1f, "SHAKE128"}, {"SHAKE-256", 136, 0x1f, "SHAKE256"},
};

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Lengths around multiples of the rate, where the block logic changes.
size_t LengthNearRate(std::mt19937_64& rng, size_t rate) {
  const size_t blocks = rng() % 4;
  const int delta = static_cast<int>(rng() % 5) - 2;  // -2..2
  const long n = static_cast<long>(blocks * rate) + delta;
  return n < 0 ? 0 : static_cast<size_t>(n);
}

std::vector<uint8_t> OneShot(const SpongeKind& k, const std::vector<uint8_t>& msg, size_t out) {
  KeccakSponge s(k.rate, k.suffix);
  s.Absorb(msg);
  std::vector<uint8_t> o(out);
  s.Squeeze(o);
  return o;
}

TEST(Keccak, ZeroStateKnownAnswer) {
  // Keccak-f[1600] applied to the all-zero state; first lanes from the Keccak team's
  // KeccakF-1600-IntermediateValues.txt.
  uint64_t s[kKeccakLanes] = {};
  KeccakF1600Portable(s);
  EXPECT_EQ(s[0], 0xF1258F7940E1DDE7ULL);
  EXPECT_EQ(s[1], 0x84D5CCF933C0478AULL);
  EXPECT_EQ(s[2], 0xD598261EA65AA9EEULL);
  EXPECT_EQ(s[3], 0xBD1547306F80494DULL);
  EXPECT_EQ(s[4], 0x8B284E056253D057ULL);
}

TEST(Keccak, DispatchedEqualsPortableOnEveryBackend) {
  const Isa saved = ActiveIsa();
  std::mt19937_64 rng(1);
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!IsaSupported(isa)) continue;
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (int trial = 0; trial < 200; ++trial) {
      uint64_t a[kKeccakLanes], b[kKeccakLanes];
      for (size_t i = 0; i < kKeccakLanes; ++i) a[i] = b[i] = trial == 0 ? 0 : rng();
      if (trial == 1) std::fill(std::begin(a), std::end(a), ~uint64_t{0});
      if (trial == 1) std::fill(std::begin(b), std::end(b), ~uint64_t{0});
      KeccakF1600(a);
      KeccakF1600Portable(b);
      for (size_t i = 0; i < kKeccakLanes; ++i) {
        ASSERT_EQ(a[i], b[i]) << "backend " << IsaName(isa) << " trial " << trial << " lane " << i;
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TEST(KeccakSponge, AnyAbsorbChunkingEqualsOneShot) {
  std::mt19937_64 rng(2);
  for (const SpongeKind& k : kKinds) {
    for (int trial = 0; trial < 300; ++trial) {
      const std::vector<uint8_t> msg = RandomBytes(rng, LengthNearRate(rng, k.rate));
      const std::vector<uint8_t> want = OneShot(k, msg, 64);
      KeccakSponge s(k.rate, k.suffix);
      size_t off = 0;
      std::vector<size_t> chunks;
      while (off < msg.size()) {
        size_t n = trial % 3 == 0 ? LengthNearRate(rng, k.rate) : rng() % (k.rate / 2 + 1);
        n = std::min(n, msg.size() - off);
        chunks.push_back(n);
        s.Absorb(Bytes(msg.data() + off, n));
        off += n;
      }
      std::vector<uint8_t> got(64);
      s.Squeeze(got);
      ASSERT_EQ(ToHex(got), ToHex(want))
          << k.name << " message " << msg.size() << " bytes in " << chunks.size() << " chunks";
    }
    // Byte at a time, with empty updates in between.
    const std::vector<uint8_t> msg = RandomBytes(rng, 3 * k.rate + 1);
    KeccakSponge s(k.rate, k.suffix);
    for (uint8_t b : msg) {
      s.Absorb(Bytes(&b, 1));
      s.Absorb(Bytes());
    }
    std::vector<uint8_t> got(64);
    s.Squeeze(got);
    EXPECT_EQ(ToHex(got), ToHex(OneShot(k, msg, 64))) << k.name << " byte at a time";
  }
}

TEST(KeccakSponge, AnySqueezeChunkingEqualsOneSqueeze) {
  std::mt19937_64 rng(3);
  for (const SpongeKind& k : kKinds) {
    for (int trial = 0; trial < 100; ++trial) {
      const std::vector<uint8_t> msg = RandomBytes(rng, rng() % 300);
      const size_t out_len = LengthNearRate(rng, k.rate) + rng() % 3 * k.rate;
      const std::vector<uint8_t> want = OneShot(k, msg, out_len);
      KeccakSponge s(k.rate, k.suffix);
      s.Absorb(msg);
      if (trial % 2) s.Finalize();  // explicit Finalize is the same as the implicit one
      std::vector<uint8_t> got(out_len);
      for (size_t off = 0; off < out_len;) {
        const size_t n = std::min<size_t>(rng() % (k.rate + 2), out_len - off);
        s.Squeeze(MutBytes(got.data() + off, n));
        off += n;
      }
      ASSERT_EQ(ToHex(got), ToHex(want)) << k.name << " out " << out_len;
    }
  }
}

TEST(KeccakSponge, SqueezeBlocksEqualsSqueeze) {
  std::mt19937_64 rng(4);
  for (const SpongeKind& k : kKinds) {
    for (int trial = 0; trial < 50; ++trial) {
      const std::vector<uint8_t> msg = RandomBytes(rng, LengthNearRate(rng, k.rate));
      const size_t total_blocks = 1 + rng() % 6;
      const std::vector<uint8_t> want = OneShot(k, msg, total_blocks * k.rate + 17);
      KeccakSponge s(k.rate, k.suffix);
      s.Absorb(msg);
      // Blocks in random groups (including groups of zero), then a byte-granular tail.
      std::vector<uint8_t> got(total_blocks * k.rate + 17);
      size_t done = 0;
      while (done < total_blocks) {
        const size_t n = std::min<size_t>(rng() % 3, total_blocks - done);
        s.SqueezeBlocks(got.data() + done * k.rate, n);
        done += n;
      }
      s.Squeeze(MutBytes(got.data() + total_blocks * k.rate, 17));
      ASSERT_EQ(ToHex(got), ToHex(want)) << k.name << " blocks " << total_blocks;
    }
  }
}

TEST(KeccakSponge, ResetAndCopy) {
  std::mt19937_64 rng(5);
  for (const SpongeKind& k : kKinds) {
    const std::vector<uint8_t> a = RandomBytes(rng, 200), b = RandomBytes(rng, 77);
    KeccakSponge s(k.rate, k.suffix);
    s.Absorb(a);
    std::vector<uint8_t> junk(40);
    s.Squeeze(junk);
    s.Reset();
    s.Absorb(b);
    // A copy continues independently of the original.
    KeccakSponge copy = s;
    std::vector<uint8_t> x(50), y(50);
    s.Squeeze(x);
    copy.Squeeze(y);
    EXPECT_EQ(ToHex(x), ToHex(OneShot(k, b, 50))) << k.name;
    EXPECT_EQ(ToHex(y), ToHex(x)) << k.name;
    EXPECT_EQ(s.rate(), k.rate);
  }
}

TEST(KeccakSponge, TypedClassesHaveFips202Parameters) {
  EXPECT_EQ(Sha3_224().rate(), 144u);
  EXPECT_EQ(Sha3_256().rate(), 136u);
  EXPECT_EQ(Sha3_384().rate(), 104u);
  EXPECT_EQ(Sha3_512().rate(), 72u);
  EXPECT_EQ(Shake128().rate(), 168u);
  EXPECT_EQ(Shake256().rate(), 136u);
  // SHA3-256("") and SHAKE128("", 32): FIPS 202 examples.
  std::array<uint8_t, 32> d{};
  Sha3_256Digest(Bytes(), d);
  EXPECT_EQ(ToHex(d.data(), d.size()),
            "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a");
  Shake128Digest(Bytes(), d);
  EXPECT_EQ(ToHex(d.data(), d.size()),
            "7f9c2ba4e88f827d616045507605853ed73b8093f6efbc88eb1a6eacfa66ef26");
}

// Differential test against OpenSSL on random lengths 0..700 (several blocks for every rate).
TEST(KeccakSponge, MatchesOpenSsl) {
  std::mt19937_64 rng(6);
  for (const SpongeKind& k : kKinds) {
    EVP_MD* md = EVP_MD_fetch(nullptr, k.evp_name, nullptr);
    if (md == nullptr) {
      ADD_FAILURE() << "OpenSSL lacks " << k.evp_name;
      continue;
    }
    const bool xof = k.suffix == 0x1f;
    for (int trial = 0; trial < 150; ++trial) {
      const std::vector<uint8_t> msg = RandomBytes(rng, rng() % 701);
      const size_t out_len = xof ? 1 + rng() % 400 : static_cast<size_t>(EVP_MD_get_size(md));
      std::vector<uint8_t> want(out_len);
      EVP_MD_CTX* ctx = EVP_MD_CTX_new();
      ASSERT_EQ(EVP_DigestInit_ex(ctx, md, nullptr), 1);
      ASSERT_EQ(EVP_DigestUpdate(ctx, msg.data(), msg.size()), 1);
      if (xof) {
        ASSERT_EQ(EVP_DigestFinalXOF(ctx, want.data(), want.size()), 1);
      } else {
        unsigned int len = 0;
        ASSERT_EQ(EVP_DigestFinal_ex(ctx, want.data(), &len), 1);
      }
      EVP_MD_CTX_free(ctx);
      ASSERT_EQ(ToHex(OneShot(k, msg, out_len)), ToHex(want))
          << k.name << " msg " << msg.size() << " out " << out_len;
    }
    EVP_MD_free(md);
  }
}

}  // namespace
}  // namespace pqcd::kernels
