// SHA-3 / SHAKE against the NIST ACVP vectors (FIPS 202): AFT, VOT and MCT through every entry
// point (one-shot Hash(), the one-shot digest helpers, the streaming Hasher fed in random-sized
// chunks, and the raw sponge squeezed in random-sized chunks), on every backend the machine
// supports. The 1-8 GiB LDT cases run only with PQCD_LONG_TESTS=1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

using pqcd::testing::ScopedIsa;
using pqcd::testing::SupportedIsas;

using ::pqcd::testing::FromHex;
using ::pqcd::testing::LoadVectorJson;
using ::pqcd::testing::ToHex;
using ::pqcd::testing::VectorCounter;
using Json = nlohmann::json;

// ACVP files spell some integers as strings ("len": "168") and others as numbers.
uint64_t JsonU64(const Json& j) {
  return j.is_string() ? std::stoull(j.get<std::string>()) : j.get<uint64_t>();
}

std::string Abbrev(const std::vector<uint8_t>& v) {
  std::string s = ToHex(v);
  return s.size() > 96 ? s.substr(0, 96) + "..." : s;
}

// Chunk lengths that hit the interesting cases: empty, single bytes, around the rate, and random.
size_t NextChunk(std::mt19937_64& rng, size_t rate, size_t left) {
  size_t n = 0;
  switch (rng() % 6) {
    case 0:
      n = 0;
      break;
    case 1:
      n = 1;
      break;
    case 2:
      n = rate - 1 + rng() % 3;  // rate-1, rate, rate+1
      break;
    case 3:
      n = rng() % 8;
      break;
    default:
      n = rng() % (2 * rate + 1);
      break;
  }
  return std::min(n, left);
}

KeccakSponge MakeSponge(HashAlgorithm alg) {
  switch (alg) {
    case HashAlgorithm::kSha3_224:
      return Sha3_224();
    case HashAlgorithm::kSha3_256:
      return Sha3_256();
    case HashAlgorithm::kSha3_384:
      return Sha3_384();
    case HashAlgorithm::kSha3_512:
      return Sha3_512();
    case HashAlgorithm::kShake128:
      return Shake128();
    default:
      return Shake256();
  }
}

void DigestHelper(HashAlgorithm alg, Bytes msg, MutBytes out) {
  switch (alg) {
    case HashAlgorithm::kSha3_224:
      Sha3_224Digest(msg, std::span<uint8_t, 28>(out.data(), 28));
      break;
    case HashAlgorithm::kSha3_256:
      Sha3_256Digest(msg, std::span<uint8_t, 32>(out.data(), 32));
      break;
    case HashAlgorithm::kSha3_384:
      Sha3_384Digest(msg, std::span<uint8_t, 48>(out.data(), 48));
      break;
    case HashAlgorithm::kSha3_512:
      Sha3_512Digest(msg, std::span<uint8_t, 64>(out.data(), 64));
      break;
    case HashAlgorithm::kShake128:
      Shake128Digest(msg, out);
      break;
    default:
      Shake256Digest(msg, out);
      break;
  }
}

size_t RateOf(HashAlgorithm alg) {
  return MakeSponge(alg).rate();
}

enum class Path { kOneShot, kDigestHelper, kHasherStream, kSpongeStream };
constexpr Path kAllPaths[] = {Path::kOneShot, Path::kDigestHelper, Path::kHasherStream,
                              Path::kSpongeStream};
const char* PathName(Path p) {
  switch (p) {
    case Path::kOneShot:
      return "Hash()";
    case Path::kDigestHelper:
      return "digest helper";
    case Path::kHasherStream:
      return "Hasher (chunked)";
    case Path::kSpongeStream:
      return "sponge (chunked absorb+squeeze)";
  }
  return "?";
}

// H(msg) with out_len output bytes through one entry point.
std::vector<uint8_t> Compute(Path path, HashAlgorithm alg, const std::vector<uint8_t>& msg,
                             size_t out_len, std::mt19937_64& rng) {
  std::vector<uint8_t> out(out_len);
  const size_t rate = RateOf(alg);
  switch (path) {
    case Path::kOneShot:
      EXPECT_TRUE(Hash(alg, msg, out).ok());
      break;
    case Path::kDigestHelper:
      DigestHelper(alg, msg, out);
      break;
    case Path::kHasherStream: {
      absl::StatusOr<Hasher> h = Hasher::Create(alg);
      EXPECT_TRUE(h.ok());
      if (!h.ok()) return {};
      for (size_t off = 0; off < msg.size();) {
        const size_t n = NextChunk(rng, rate, msg.size() - off);
        h->Update(Bytes(msg.data() + off, n));
        off += n;
      }
      EXPECT_TRUE(h->Finish(out).ok());
      break;
    }
    case Path::kSpongeStream: {
      KeccakSponge s = MakeSponge(alg);
      for (size_t off = 0; off < msg.size();) {
        const size_t n = NextChunk(rng, rate, msg.size() - off);
        s.Absorb(Bytes(msg.data() + off, n));
        off += n;
      }
      for (size_t off = 0; off < out.size();) {
        const size_t n = NextChunk(rng, rate, out.size() - off);
        s.Squeeze(MutBytes(out.data() + off, n));
        off += n;
      }
      break;
    }
  }
  return out;
}

// AFT and VOT: md == H(msg) (or SHAKE(msg, outLen)) through every path.
bool RunCase(HashAlgorithm alg, const Json& tc, std::mt19937_64& rng) {
  const uint64_t len_bits = JsonU64(tc["len"]);
  std::vector<uint8_t> msg = FromHex(tc["msg"].get<std::string>());
  EXPECT_EQ(msg.size() * 8, len_bits) << "tcId " << tc["tcId"];
  const std::vector<uint8_t> md = FromHex(tc["md"].get<std::string>());
  const size_t out_len = HashIsXof(alg) ? JsonU64(tc["outLen"]) / 8 : HashDigestBytes(alg);
  EXPECT_EQ(md.size(), out_len) << "tcId " << tc["tcId"];
  bool ok = true;
  for (Path p : kAllPaths) {
    const std::vector<uint8_t> got = Compute(p, alg, msg, out_len, rng);
    if (got != md) {
      ok = false;
      ADD_FAILURE() << HashName(alg) << " tcId " << tc["tcId"] << " via " << PathName(p)
                    << " (backend " << IsaName(ActiveIsa()) << ")\n  expected " << Abbrev(md)
                    << "\n  got      " << Abbrev(got);
    }
  }
  return ok;
}

// SHA-3 MCT: each of the 100 checkpoints hashes the previous digest 1000 times in a row. The
// streaming variant reuses one Hasher through Reset().
void RunSha3Mct(HashAlgorithm alg, const Json& tc, VectorCounter& counter,
                const std::string& group) {
  const std::vector<uint8_t> seed = FromHex(tc["msg"].get<std::string>());
  const size_t dlen = HashDigestBytes(alg);
  const Json& results = tc["resultsArray"];
  ASSERT_EQ(results.size(), 100u);
  for (int streaming = 0; streaming < 2; ++streaming) {
    absl::StatusOr<Hasher> hasher = Hasher::Create(alg);
    ASSERT_TRUE(hasher.ok());
    std::vector<uint8_t> md = seed, next(dlen);
    for (size_t j = 0; j < results.size(); ++j) {
      for (int i = 0; i < 1000; ++i) {
        if (streaming) {
          hasher->Reset();
          // Two updates with a split that moves around the message.
          const size_t split = static_cast<size_t>(i) % (md.size() + 1);
          hasher->Update(Bytes(md.data(), split));
          hasher->Update(Bytes(md.data() + split, md.size() - split));
          ASSERT_TRUE(hasher->Finish(next).ok());
        } else {
          ASSERT_TRUE(Hash(alg, md, next).ok());
        }
        md.assign(next.begin(), next.end());
      }
      const std::vector<uint8_t> want = FromHex(results[j]["md"].get<std::string>());
      const std::string sub = group + (streaming ? ".Hasher" : ".Hash()");
      if (md == want) {
        counter.Pass(sub);
      } else {
        counter.Fail(sub);
        ADD_FAILURE() << HashName(alg) << " MCT checkpoint " << j << " ("
                      << (streaming ? "Hasher" : "Hash()") << ", backend " << IsaName(ActiveIsa())
                      << ")\n  expected " << Abbrev(want) << "\n  got      " << Abbrev(md);
        return;  // every later checkpoint depends on this one
      }
    }
  }
}

// SHAKE MCT with variable output length (README of the vectors; bytes, not bits):
// input = first 16 bytes of the previous output, zero-padded; output length starts at maxB and
// becomes minB + (last two output bytes, big endian) mod (maxB - minB + 1) after every step.
void RunShakeMct(HashAlgorithm alg, const Json& group_json, const Json& tc, VectorCounter& counter,
                 const std::string& group) {
  const size_t min_bytes = JsonU64(group_json["minOutLen"]) / 8;
  const size_t max_bytes = JsonU64(group_json["maxOutLen"]) / 8;
  ASSERT_GT(max_bytes, min_bytes);
  ASSERT_GE(min_bytes, 2u);
  const size_t range = max_bytes - min_bytes + 1;
  const std::vector<uint8_t> seed = FromHex(tc["msg"].get<std::string>());
  const Json& results = tc["resultsArray"];
  ASSERT_EQ(results.size(), 100u);
  for (int streaming = 0; streaming < 2; ++streaming) {
    absl::StatusOr<Hasher> hasher = Hasher::Create(alg);
    ASSERT_TRUE(hasher.ok());
    std::vector<uint8_t> output = seed;
    size_t out_len = max_bytes;
    bool first = true;
    for (size_t j = 0; j < results.size(); ++j) {
      for (int i = 0; i < 1000; ++i) {
        std::vector<uint8_t> msg;
        if (first) {
          msg = output;  // the first input is msg itself
          first = false;
        } else {
          msg.assign(16, 0);
          std::copy_n(output.begin(), std::min<size_t>(16, output.size()), msg.begin());
        }
        output.assign(out_len, 0);
        if (streaming) {
          hasher->Reset();
          const size_t split = static_cast<size_t>(i) % (msg.size() + 1);
          hasher->Update(Bytes(msg.data(), split));
          hasher->Update(Bytes(msg.data() + split, msg.size() - split));
          ASSERT_TRUE(hasher->Finish(output).ok());
        } else {
          ASSERT_TRUE(Hash(alg, msg, output).ok());
        }
        const size_t tail = (size_t{output[out_len - 2]} << 8) | output[out_len - 1];
        out_len = min_bytes + tail % range;
      }
      const std::vector<uint8_t> want = FromHex(results[j]["md"].get<std::string>());
      const uint64_t want_bits = JsonU64(results[j]["outLen"]);
      const std::string sub = group + (streaming ? ".Hasher" : ".Hash()");
      if (output == want && output.size() * 8 == want_bits) {
        counter.Pass(sub);
      } else {
        counter.Fail(sub);
        ADD_FAILURE() << HashName(alg) << " MCT checkpoint " << j << " ("
                      << (streaming ? "Hasher" : "Hash()") << ", backend " << IsaName(ActiveIsa())
                      << "): expected " << want_bits << " bits " << Abbrev(want) << "\n  got "
                      << output.size() * 8 << " bits " << Abbrev(output);
        return;
      }
    }
  }
}

void RunAcvpFile(const std::string& file, HashAlgorithm alg) {
  const Json doc = LoadVectorJson(file);
  ASSERT_FALSE(doc.is_null());
  // ACVP spells "SHAKE-128" where the registry says "SHAKE128": compare parsed names.
  ASSERT_EQ(ParseHashName(doc["algorithm"].get<std::string>()), alg);
  VectorCounter counter(file);
  ScopedIsa restore;
  std::mt19937_64 rng(0x5a3ULL ^ static_cast<uint64_t>(alg));
  for (Isa isa : SupportedIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (const Json& g : doc["testGroups"]) {
      const std::string type = g["testType"].get<std::string>();
      const std::string group = std::string(IsaName(isa)) + "/" + type;
      if (type == "AFT" || type == "VOT") {
        for (const Json& tc : g["tests"]) {
          if (RunCase(alg, tc, rng)) {
            counter.Pass(group);
          } else {
            counter.Fail(group);
          }
        }
      } else if (type == "MCT") {
        for (const Json& tc : g["tests"]) {
          if (HashIsXof(alg)) {
            RunShakeMct(alg, g, tc, counter, group + "-checkpoints");
          } else {
            RunSha3Mct(alg, tc, counter, group + "-checkpoints");
          }
        }
      } else if (type == "LDT") {
        continue;  // Sha3AcvpLong below
      } else {
        ADD_FAILURE() << file << ": unexpected testType " << type;
      }
    }
  }
}

TEST(Sha3Acvp, Sha3_224) {
  RunAcvpFile("acvp/SHA3-224-2.0/internalProjection.byte-aligned.json", HashAlgorithm::kSha3_224);
}
TEST(Sha3Acvp, Sha3_256) {
  RunAcvpFile("acvp/SHA3-256-2.0/internalProjection.byte-aligned.json", HashAlgorithm::kSha3_256);
}
TEST(Sha3Acvp, Sha3_384) {
  RunAcvpFile("acvp/SHA3-384-2.0/internalProjection.byte-aligned.json", HashAlgorithm::kSha3_384);
}
TEST(Sha3Acvp, Sha3_512) {
  RunAcvpFile("acvp/SHA3-512-2.0/internalProjection.byte-aligned.json", HashAlgorithm::kSha3_512);
}
TEST(Sha3Acvp, Shake128) {
  RunAcvpFile("acvp/SHAKE-128-1.0/internalProjection.byte-aligned.json", HashAlgorithm::kShake128);
}
TEST(Sha3Acvp, Shake256) {
  RunAcvpFile("acvp/SHAKE-256-1.0/internalProjection.byte-aligned.json", HashAlgorithm::kShake256);
}

// LDT: an 8-byte pattern repeated to 1, 2, 4 or 8 GiB, hashed through the streaming Hasher in
// 1 MiB updates, on the active backend (choose it with PQCD_ISA). About 15 GiB of hashing per file.
TEST(Sha3AcvpLong, LargeDataTests) {
  const char* env = std::getenv("PQCD_LONG_TESTS");
  if (env == nullptr || std::string(env) != "1") {
    GTEST_SKIP() << "SHA-3 LDT (1-8 GiB messages, 60 GiB in all, ~5 min of CPU) is skipped; "
                    "set PQCD_LONG_TESTS=1 to run it";
  }
  const std::pair<const char*, HashAlgorithm> files[] = {
      {"acvp/SHA3-224-2.0/internalProjection.byte-aligned.json", HashAlgorithm::kSha3_224},
      {"acvp/SHA3-256-2.0/internalProjection.byte-aligned.json", HashAlgorithm::kSha3_256},
      {"acvp/SHA3-384-2.0/internalProjection.byte-aligned.json", HashAlgorithm::kSha3_384},
      {"acvp/SHA3-512-2.0/internalProjection.byte-aligned.json", HashAlgorithm::kSha3_512},
  };
  constexpr size_t kBuffer = size_t{1} << 20;
  for (const auto& [file, alg] : files) {
    const Json doc = LoadVectorJson(file);
    ASSERT_FALSE(doc.is_null());
    VectorCounter counter(std::string(file) + " (LDT)");
    const std::string group = std::string(IsaName(ActiveIsa())) + "/LDT";
    for (const Json& g : doc["testGroups"]) {
      if (g["testType"].get<std::string>() != "LDT") continue;
      for (const Json& tc : g["tests"]) {
        const Json& large = tc["largeMsg"];
        ASSERT_EQ(large["expansionTechnique"].get<std::string>(), "repeating");
        const std::vector<uint8_t> content = FromHex(large["content"].get<std::string>());
        ASSERT_EQ(JsonU64(large["contentLength"]), content.size() * 8);
        const uint64_t full_bits = JsonU64(large["fullLength"]);
        ASSERT_EQ(full_bits % 8, 0u);
        ASSERT_EQ(kBuffer % content.size(), 0u);
        std::vector<uint8_t> buffer(kBuffer);
        for (size_t i = 0; i < kBuffer; ++i) buffer[i] = content[i % content.size()];
        absl::StatusOr<Hasher> h = Hasher::Create(alg);
        ASSERT_TRUE(h.ok());
        // The pattern restarts at every buffer because kBuffer is a multiple of its length.
        for (uint64_t left = full_bits / 8; left > 0;) {
          const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kBuffer));
          h->Update(Bytes(buffer.data(), n));
          left -= n;
        }
        std::vector<uint8_t> got(HashDigestBytes(alg));
        ASSERT_TRUE(h->Finish(got).ok());
        const std::vector<uint8_t> want = FromHex(tc["md"].get<std::string>());
        if (got == want) {
          counter.Pass(group);
        } else {
          counter.Fail(group);
          ADD_FAILURE() << file << " LDT tcId " << tc["tcId"] << " (" << full_bits / 8
                        << " bytes)\n  expected " << Abbrev(want) << "\n  got      " << Abbrev(got);
        }
      }
    }
  }
}

}  // namespace
}  // namespace pqcd::kernels
