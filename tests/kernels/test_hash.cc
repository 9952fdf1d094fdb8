// The generic hash interface: SHA-2 known answers (FIPS 180-4 examples), streaming == one-shot for
// every algorithm, output-length errors, Reset, XOF lengths, name parsing and HashBatch.
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/registry.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/isa.h"

namespace pqcd::kernels {
namespace {

using ::pqcd::testing::ToHex;

constexpr HashAlgorithm kAll[] = {
    HashAlgorithm::kSha3_224,     HashAlgorithm::kSha3_256, HashAlgorithm::kSha3_384,
    HashAlgorithm::kSha3_512,     HashAlgorithm::kShake128, HashAlgorithm::kShake256,
    HashAlgorithm::kSm3,          HashAlgorithm::kSha2_224, HashAlgorithm::kSha2_256,
    HashAlgorithm::kSha2_384,     HashAlgorithm::kSha2_512, HashAlgorithm::kSha2_512_224,
    HashAlgorithm::kSha2_512_256,
};
static_assert(std::size(kAll) == kNumHashAlgorithms);

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> OneShot(HashAlgorithm alg, Bytes in, size_t out_len) {
  std::vector<uint8_t> out(out_len);
  const absl::Status s = Hash(alg, in, out);
  EXPECT_TRUE(s.ok()) << HashName(alg) << ": " << s;
  return out;
}
std::vector<uint8_t> OneShot(HashAlgorithm alg, Bytes in) {
  return OneShot(alg, in, HashDigestBytes(alg));
}
Bytes Str(const std::string& s) {
  return Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// FIPS 180-4 examples (NIST "Example Algorithms" documents): "", "abc" and the 448-bit message.
struct Sha2Kat {
  HashAlgorithm alg;
  const char* empty;
  const char* abc;
  const char* two_blocks;  // "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
};
constexpr Sha2Kat kSha2Kats[] = {
    {HashAlgorithm::kSha2_224, "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f",
     "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
     "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525"},
    {HashAlgorithm::kSha2_256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    {HashAlgorithm::kSha2_384,
     "38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da274edebfe76f65fbd51ad2f148"
     "98b95b",
     "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134"
     "c825a7",
     "3391fdddfc8dc7393707a65b1b4709397cf8b1d162af05abfe8f450de5f36bc6b0455a8520bc4e6f5fe95b1fe3"
     "c8452b"},
    {HashAlgorithm::kSha2_512,
     "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d287"
     "7eec2f63b931bd47417a81a538327af927da3e",
     "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3"
     "feebbd454d4423643ce80e2a9ac94fa54ca49f",
     "204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c33596fd15c13b1b07f9aa1d3bea57"
     "789ca031ad85c7a71dd70354ec631238ca3445"},
    {HashAlgorithm::kSha2_512_224, "6ed0dd02806fa89e25de060c19d3ac86cabb87d6a0ddd05c333b84f4",
     "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa",
     "e5302d6d54bb242275d1e7622d68df6eb02dedd13f564c13dbda2174"},
    {HashAlgorithm::kSha2_512_256,
     "c672b8d1ef56ed28ab87c3622c5114069bdd3ad7b8f9737498d0c01ecef0967a",
     "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23",
     "bde8e1f9f19bb9fd3406c90ec6bc47bd36d8ada9f11880dbc8a22a7078b6a461"},
};

TEST(Sha2, KnownAnswersOneShotAndStreaming) {
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  for (const Sha2Kat& k : kSha2Kats) {
    EXPECT_EQ(HashDigestBytes(k.alg) * 2, std::string(k.abc).size()) << HashName(k.alg);
    EXPECT_EQ(ToHex(OneShot(k.alg, Bytes())), k.empty) << HashName(k.alg);
    EXPECT_EQ(ToHex(OneShot(k.alg, Str("abc"))), k.abc) << HashName(k.alg);
    EXPECT_EQ(ToHex(OneShot(k.alg, Str(two_blocks))), k.two_blocks) << HashName(k.alg);
    // Streaming, byte at a time, and reuse through Reset.
    absl::StatusOr<Hasher> h = Hasher::Create(k.alg);
    ASSERT_TRUE(h.ok()) << h.status();
    std::vector<uint8_t> out(HashDigestBytes(k.alg));
    for (int round = 0; round < 2; ++round) {
      for (char c : two_blocks) h->Update(Str(std::string(1, c)));
      ASSERT_TRUE(h->Finish(out).ok());
      EXPECT_EQ(ToHex(out), k.two_blocks) << HashName(k.alg) << " round " << round;
      h->Reset();
    }
    ASSERT_TRUE(h->Finish(out).ok());  // nothing absorbed after Reset: the empty message
    EXPECT_EQ(ToHex(out), k.empty) << HashName(k.alg);
  }
}

TEST(Hasher, StreamingEqualsOneShotForEveryAlgorithm) {
  std::mt19937_64 rng(11);
  for (HashAlgorithm alg : kAll) {
    absl::StatusOr<Hasher> h = Hasher::Create(alg);
    ASSERT_TRUE(h.ok()) << HashName(alg) << ": " << h.status();
    EXPECT_EQ(h->algorithm(), alg);
    for (int trial = 0; trial < 60; ++trial) {
      const std::vector<uint8_t> msg = RandomBytes(rng, rng() % 700);
      const size_t out_len = HashIsXof(alg) ? rng() % 300 : HashDigestBytes(alg);
      h->Reset();
      for (size_t off = 0; off < msg.size();) {
        const size_t n = std::min<size_t>(rng() % 200, msg.size() - off);
        h->Update(Bytes(msg.data() + off, n));
        off += n;
      }
      std::vector<uint8_t> got(out_len);
      ASSERT_TRUE(h->Finish(got).ok());
      ASSERT_EQ(ToHex(got), ToHex(OneShot(alg, msg, out_len)))
          << HashName(alg) << " msg " << msg.size() << " out " << out_len;
    }
  }
}

TEST(Hasher, ResetDiscardsAbsorbedInput) {
  for (HashAlgorithm alg : kAll) {
    absl::StatusOr<Hasher> h = Hasher::Create(alg);
    ASSERT_TRUE(h.ok());
    h->Update(Str("garbage that must not count"));
    h->Reset();
    h->Update(Str("abc"));
    std::vector<uint8_t> out(HashDigestBytes(alg));
    ASSERT_TRUE(h->Finish(out).ok());
    EXPECT_EQ(ToHex(out), ToHex(OneShot(alg, Str("abc")))) << HashName(alg);
  }
}

TEST(Hasher, MoveKeepsState) {
  for (HashAlgorithm alg : kAll) {
    absl::StatusOr<Hasher> h = Hasher::Create(alg);
    ASSERT_TRUE(h.ok());
    h->Update(Str("ab"));
    Hasher moved = std::move(*h);
    moved.Update(Str("c"));
    std::vector<uint8_t> out(HashDigestBytes(alg));
    ASSERT_TRUE(moved.Finish(out).ok());
    EXPECT_EQ(ToHex(out), ToHex(OneShot(alg, Str("abc")))) << HashName(alg);
    absl::StatusOr<Hasher> other = Hasher::Create(HashAlgorithm::kSha3_256);
    ASSERT_TRUE(other.ok());
    *other = std::move(moved);  // move assignment
    EXPECT_EQ(other->algorithm(), alg);
  }
}

TEST(Hasher, WrongOutputLengthIsInvalidArgument) {
  for (HashAlgorithm alg : kAll) {
    if (HashIsXof(alg)) continue;
    const size_t n = HashDigestBytes(alg);
    for (size_t bad : {size_t{0}, n - 1, n + 1, size_t{200}}) {
      std::vector<uint8_t> out(bad);
      const absl::Status one = Hash(alg, Str("abc"), out);
      EXPECT_EQ(one.code(), absl::StatusCode::kInvalidArgument) << HashName(alg) << " " << bad;
      EXPECT_NE(one.message().find(std::to_string(n)), std::string::npos) << one.message();
      absl::StatusOr<Hasher> h = Hasher::Create(alg);
      ASSERT_TRUE(h.ok());
      h->Update(Str("abc"));
      const absl::Status s = h->Finish(out);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << HashName(alg) << " " << bad;
      // The failed Finish consumed nothing: the right length still gives the right answer.
      std::vector<uint8_t> good(n);
      ASSERT_TRUE(h->Finish(good).ok());
      EXPECT_EQ(ToHex(good), ToHex(OneShot(alg, Str("abc")))) << HashName(alg);
    }
  }
}

TEST(Hasher, InvalidAlgorithmIsRejected) {
  const auto bogus = static_cast<HashAlgorithm>(kNumHashAlgorithms);
  EXPECT_EQ(Hasher::Create(bogus).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> out(32);
  EXPECT_EQ(Hash(bogus, Str("abc"), out).code(), absl::StatusCode::kInvalidArgument);
  const Bytes ins[] = {Str("abc")};
  const MutBytes outs[] = {out};
  EXPECT_EQ(HashBatch(bogus, ins, outs).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Hasher, XofAnyLengthIsAPrefixOfLonger) {
  std::mt19937_64 rng(12);
  for (HashAlgorithm alg : {HashAlgorithm::kShake128, HashAlgorithm::kShake256}) {
    EXPECT_TRUE(HashIsXof(alg));
    const std::vector<uint8_t> msg = RandomBytes(rng, 100);
    const std::vector<uint8_t> longest = OneShot(alg, msg, 1000);
    for (size_t len = 0; len <= 1000; len += (len < 400 ? 1 : 37)) {
      const std::vector<uint8_t> got = OneShot(alg, msg, len);
      ASSERT_TRUE(std::equal(got.begin(), got.end(), longest.begin())) << HashName(alg) << len;
      absl::StatusOr<Hasher> h = Hasher::Create(alg);
      ASSERT_TRUE(h.ok());
      h->Update(msg);
      std::vector<uint8_t> streamed(len);
      ASSERT_TRUE(h->Finish(streamed).ok());
      ASSERT_EQ(streamed, got) << HashName(alg) << " " << len;
    }
  }
  for (HashAlgorithm alg : kAll) {
    if (alg != HashAlgorithm::kShake128 && alg != HashAlgorithm::kShake256) {
      EXPECT_FALSE(HashIsXof(alg)) << HashName(alg);
    }
  }
  EXPECT_EQ(HashDigestBytes(HashAlgorithm::kShake128), 32u);
  EXPECT_EQ(HashDigestBytes(HashAlgorithm::kShake256), 64u);
}

TEST(HashNames, ParseAcceptsCommonSpellings) {
  const std::pair<const char*, HashAlgorithm> cases[] = {
      {"SHA3-256", HashAlgorithm::kSha3_256},
      {"sha3_256", HashAlgorithm::kSha3_256},
      {"sha3-224", HashAlgorithm::kSha3_224},
      {"SHA3-384", HashAlgorithm::kSha3_384},
      {"Sha3_512", HashAlgorithm::kSha3_512},
      {"SHA-256", HashAlgorithm::kSha2_256},
      {"SHA256", HashAlgorithm::kSha2_256},
      {"sha256", HashAlgorithm::kSha2_256},
      {"SHA2-256", HashAlgorithm::kSha2_256},
      {"SHA-224", HashAlgorithm::kSha2_224},
      {"SHA384", HashAlgorithm::kSha2_384},
      {"SHA-512", HashAlgorithm::kSha2_512},
      {"SHAKE128", HashAlgorithm::kShake128},
      {"SHAKE-128", HashAlgorithm::kShake128},
      {"shake256", HashAlgorithm::kShake256},
      {"SHAKE_256", HashAlgorithm::kShake256},
      {"SM3", HashAlgorithm::kSm3},
      {"sm3", HashAlgorithm::kSm3},
      {"SHA2-512/256", HashAlgorithm::kSha2_512_256},
      {"SHA-512/256", HashAlgorithm::kSha2_512_256},
      {"SHA512/224", HashAlgorithm::kSha2_512_224},
      {"SHA2-512/224", HashAlgorithm::kSha2_512_224},
  };
  for (const auto& [name, alg] : cases) {
    const std::optional<HashAlgorithm> got = ParseHashName(name);
    ASSERT_TRUE(got.has_value()) << name;
    EXPECT_EQ(*got, alg) << name;
  }
  for (const char* bad : {"", "SHA", "SHA3", "SHA-1", "MD5", "SHA3-257", "SHAKE", "SHAKE-512",
                          "SM4", "SHA2-512/128", "BLAKE2b", "SHA 3 256 x"}) {
    EXPECT_FALSE(ParseHashName(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(HashNames, CanonicalNamesRoundTrip) {
  for (HashAlgorithm alg : kAll) {
    const std::optional<HashAlgorithm> back = ParseHashName(HashName(alg));
    ASSERT_TRUE(back.has_value()) << HashName(alg);
    EXPECT_EQ(*back, alg);
  }
  EXPECT_EQ(HashName(HashAlgorithm::kSha3_256), "SHA3-256");
  EXPECT_EQ(HashName(HashAlgorithm::kShake128), "SHAKE128");  // FIPS 202's spelling
  EXPECT_EQ(HashName(HashAlgorithm::kSha2_512_256), "SHA2-512/256");
  EXPECT_EQ(HashName(HashAlgorithm::kSm3), "SM3");
}

// On every backend: HashBatch runs the multi-lane kernels, which must equal the one-shot path.
TEST(HashBatch, EqualsOneShotForSizes0To17) {
  std::mt19937_64 rng(13);
  const Isa saved = ActiveIsa();
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!IsaSupported(isa)) continue;
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    SCOPED_TRACE(std::string("backend ") + std::string(IsaName(isa)));
    for (HashAlgorithm alg : kAll) {
      for (size_t count = 0; count <= 17; ++count) {
        std::vector<std::vector<uint8_t>> msgs(count), outs(count);
        std::vector<Bytes> ins(count);
        std::vector<MutBytes> out_views(count);
        for (size_t i = 0; i < count; ++i) {
          // Varied lengths: empty, around the block sizes, and random.
          const size_t len = i == 0 ? 0 : (i % 3 == 0 ? 136 * (i / 3) + i % 2 : rng() % 1100);
          msgs[i] = RandomBytes(rng, len);
          outs[i].resize(HashIsXof(alg) ? 1 + rng() % 200 : HashDigestBytes(alg));
          ins[i] = msgs[i];
          out_views[i] = outs[i];
        }
        std::vector<absl::Status> statuses(count, absl::UnknownError("not set"));
        ASSERT_TRUE(HashBatch(alg, ins, out_views, statuses.data()).ok());
        for (size_t i = 0; i < count; ++i) {
          EXPECT_TRUE(statuses[i].ok()) << HashName(alg) << " item " << i;
          ASSERT_EQ(ToHex(outs[i]), ToHex(OneShot(alg, msgs[i], outs[i].size())))
              << HashName(alg) << " batch " << count << " item " << i;
        }
        // Without a status array.
        ASSERT_TRUE(HashBatch(alg, ins, out_views).ok());
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TEST(HashBatch, BadItemGetsItsOwnStatus) {
  const std::vector<uint8_t> a = {1, 2, 3}, b = {4, 5};
  std::vector<uint8_t> good1(32), bad(31), good2(32);
  const Bytes ins[] = {a, b, a};
  const MutBytes outs[] = {good1, bad, good2};
  absl::Status statuses[3];
  const absl::Status first = HashBatch(HashAlgorithm::kSha3_256, ins, outs, statuses);
  EXPECT_EQ(first.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(statuses[2].ok());
  EXPECT_EQ(ToHex(good1), ToHex(OneShot(HashAlgorithm::kSha3_256, a)));
  EXPECT_EQ(ToHex(good2), ToHex(OneShot(HashAlgorithm::kSha3_256, a)));
  // Count mismatch.
  EXPECT_EQ(HashBatch(HashAlgorithm::kSha3_256, std::span<const Bytes>(ins, 2), outs).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pqcd::kernels
