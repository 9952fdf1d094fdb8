// Client library pieces that need no network: names, encodings, channel targets, histogram.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "pqc/v1/common.pb.h"
#include "pqcd/client/client.h"
#include "pqcd/client/histogram.h"
#include "pqcd/client/types.h"

namespace pqcd::client {
// gtest prints Algorithm values by name (the drift checks below compare lists of them).
void PrintTo(Algorithm a, std::ostream* os) {
  *os << AlgorithmName(a) << " (" << static_cast<int>(a) << ")";
}

namespace {

TEST(Algorithms, NamesRoundTrip) {
  for (Algorithm a : AllAlgorithms()) {
    const std::string name(AlgorithmName(a));
    auto parsed = ParseAlgorithm(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, a) << name;
  }
}

// The client's enums against the proto's, value by value, and each value against the registry
// (kernels/include/pqcd/kernels/algorithms.h, where names, families and sizes come from): an
// algorithm or pre-hash added to common.proto without its registry row, or a row without its
// proto value, fails here. The enums are generated from the proto (client/gen_api_enums.cmake); the
// first check also catches a generator that misreads it.
TEST(ApiEnums, AlgorithmIsTheProtoEnum) {
  struct Value {
    int number;
    std::string proto_name;
  };
#define PQCD_VALUE(name, value, proto_name) Value{static_cast<int>(Algorithm::name), proto_name},
  const std::vector<Value> client = {PQCD_CLIENT_ALGORITHMS(PQCD_VALUE)};
#undef PQCD_VALUE
  const google::protobuf::EnumDescriptor* proto = pqc::v1::Algorithm_descriptor();
  ASSERT_EQ(client.size(), static_cast<size_t>(proto->value_count()));
  std::vector<Algorithm> served;
  for (int i = 0; i < proto->value_count(); ++i) {
    const google::protobuf::EnumValueDescriptor* v = proto->value(i);
    EXPECT_EQ(client[i].number, v->number()) << v->name();
    EXPECT_EQ(client[i].proto_name, v->name());
    if (v->number() == 0) continue;
    const auto a = static_cast<Algorithm>(v->number());
    EXPECT_NE(AlgorithmName(a), "UNSPECIFIED") << "pqc.v1." << v->name() << " has no registry row";
    EXPECT_EQ(ParseAlgorithm(AlgorithmName(a)), a) << v->name();
    served.push_back(a);
  }
  std::sort(served.begin(), served.end());
  EXPECT_EQ(AllAlgorithms(), served) << "the registry's rows and the proto's values differ";
}

TEST(ApiEnums, PreHashIsTheProtoEnum) {
  std::vector<int> client = {
#define PQCD_VALUE(name, value, proto_name) static_cast<int>(PreHash::name),
      PQCD_CLIENT_PRE_HASHES(PQCD_VALUE)
#undef PQCD_VALUE
  };
  const google::protobuf::EnumDescriptor* proto = pqc::v1::PreHash_descriptor();
  ASSERT_EQ(client.size(), static_cast<size_t>(proto->value_count()));
  for (int i = 0; i < proto->value_count(); ++i) {
    const google::protobuf::EnumValueDescriptor* v = proto->value(i);
    EXPECT_EQ(client[i], v->number()) << v->name();
    const auto p = static_cast<PreHash>(v->number());
    EXPECT_NE(PreHashName(p), "unknown") << "pqc.v1." << v->name() << " has no registry row";
    EXPECT_EQ(ParsePreHash(PreHashName(p)), p) << v->name();
  }
  EXPECT_EQ(AllPreHashes().size() + 1, client.size());
  // Every hash the registry accepts as a pre-hash is one of the proto's.
  for (Algorithm a : AllAlgorithms()) {
    const std::optional<PreHash> p = IsHash(a) ? ParsePreHash(AlgorithmName(a)) : std::nullopt;
    if (p) {
      EXPECT_NE(std::find(client.begin(), client.end(), static_cast<int>(*p)), client.end())
          << AlgorithmName(a);
    }
  }
}

// The enumerator names callers have always used (source compatibility with the hand-written
// enum the generated one replaced), with their registry names and API numbers.
TEST(Algorithms, EnumeratorsAreTheRegistryRows) {
  struct Row {
    Algorithm algorithm;
    const char* name;
    int api;
  };
  const Row rows[] = {
      {Algorithm::kMlKem512, "ML-KEM-512", 1},
      {Algorithm::kMlKem768, "ML-KEM-768", 2},
      {Algorithm::kMlKem1024, "ML-KEM-1024", 3},
      {Algorithm::kMlDsa44, "ML-DSA-44", 10},
      {Algorithm::kMlDsa65, "ML-DSA-65", 11},
      {Algorithm::kMlDsa87, "ML-DSA-87", 12},
      {Algorithm::kSha3_224, "SHA3-224", 20},
      {Algorithm::kSha3_256, "SHA3-256", 21},
      {Algorithm::kSha3_384, "SHA3-384", 22},
      {Algorithm::kSha3_512, "SHA3-512", 23},
      {Algorithm::kShake128, "SHAKE128", 24},
      {Algorithm::kShake256, "SHAKE256", 25},
      {Algorithm::kSm3, "SM3", 30},
      {Algorithm::kSha256, "SHA2-256", 40},
      {Algorithm::kSha384, "SHA2-384", 41},
      {Algorithm::kSha512, "SHA2-512", 42},
      {Algorithm::kSha224, "SHA2-224", 43},
      {Algorithm::kSha512_224, "SHA2-512/224", 44},
      {Algorithm::kSha512_256, "SHA2-512/256", 45},
      {Algorithm::kX25519MlKem768, "X25519MLKEM768", 50},
      {Algorithm::kSecP256r1MlKem768, "SecP256r1MLKEM768", 51},
      {Algorithm::kSecP384r1MlKem1024, "SecP384r1MLKEM1024", 52},
      {Algorithm::kXWing, "X-Wing", 53},
      {Algorithm::kSlhDsaSha2_128s, "SLH-DSA-SHA2-128s", 60},
      {Algorithm::kSlhDsaSha2_128f, "SLH-DSA-SHA2-128f", 61},
      {Algorithm::kSlhDsaSha2_192s, "SLH-DSA-SHA2-192s", 62},
      {Algorithm::kSlhDsaSha2_192f, "SLH-DSA-SHA2-192f", 63},
      {Algorithm::kSlhDsaSha2_256s, "SLH-DSA-SHA2-256s", 64},
      {Algorithm::kSlhDsaSha2_256f, "SLH-DSA-SHA2-256f", 65},
      {Algorithm::kSlhDsaShake128s, "SLH-DSA-SHAKE-128s", 66},
      {Algorithm::kSlhDsaShake128f, "SLH-DSA-SHAKE-128f", 67},
      {Algorithm::kSlhDsaShake192s, "SLH-DSA-SHAKE-192s", 68},
      {Algorithm::kSlhDsaShake192f, "SLH-DSA-SHAKE-192f", 69},
      {Algorithm::kSlhDsaShake256s, "SLH-DSA-SHAKE-256s", 70},
      {Algorithm::kSlhDsaShake256f, "SLH-DSA-SHAKE-256f", 71},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(AlgorithmName(r.algorithm), r.name);
    EXPECT_EQ(static_cast<int>(r.algorithm), r.api) << r.name;
  }
  EXPECT_TRUE(std::is_sorted(AllAlgorithms().begin(), AllAlgorithms().end()));
  EXPECT_EQ(AlgorithmName(Algorithm::kUnspecified), "UNSPECIFIED");
}

TEST(Algorithms, LenientSpellings) {
  EXPECT_EQ(ParseAlgorithm("ml-kem-768"), Algorithm::kMlKem768);
  EXPECT_EQ(ParseAlgorithm("MLKEM1024"), Algorithm::kMlKem1024);
  EXPECT_EQ(ParseAlgorithm("ml_dsa_65"), Algorithm::kMlDsa65);
  EXPECT_EQ(ParseAlgorithm("sha3-256"), Algorithm::kSha3_256);
  EXPECT_EQ(ParseAlgorithm("slh-dsa-shake-256f"), Algorithm::kSlhDsaShake256f);
  EXPECT_EQ(ParseAlgorithm("SLHDSASHA2128S"), Algorithm::kSlhDsaSha2_128s);
  EXPECT_EQ(ParseAlgorithm("slh_dsa_sha2_192f"), Algorithm::kSlhDsaSha2_192f);
  EXPECT_EQ(ParseAlgorithm("SHA256"), Algorithm::kSha256);
  EXPECT_EQ(ParseAlgorithm("sha2-256"), Algorithm::kSha256);
  EXPECT_EQ(ParseAlgorithm("SHA224"), Algorithm::kSha224);
  EXPECT_EQ(ParseAlgorithm("SHA-512/256"), Algorithm::kSha512_256);
  EXPECT_EQ(ParseAlgorithm("shake256"), Algorithm::kShake256);
  EXPECT_EQ(ParseAlgorithm("sm3"), Algorithm::kSm3);
  EXPECT_FALSE(ParseAlgorithm("ML-KEM-769").has_value());
  EXPECT_FALSE(ParseAlgorithm("").has_value());
}

TEST(Algorithms, Families) {
  EXPECT_TRUE(IsKem(Algorithm::kMlKem512));
  EXPECT_FALSE(IsKem(Algorithm::kMlDsa44));
  EXPECT_TRUE(IsDsa(Algorithm::kMlDsa87));
  EXPECT_TRUE(IsHash(Algorithm::kSm3));
  EXPECT_FALSE(IsHash(Algorithm::kMlDsa87));
  EXPECT_TRUE(IsXof(Algorithm::kShake128));
  EXPECT_FALSE(IsXof(Algorithm::kSha3_256));
}

TEST(PreHashes, RoundTrip) {
  for (PreHash p : AllPreHashes()) {
    auto parsed = ParsePreHash(PreHashName(p));
    ASSERT_TRUE(parsed.has_value()) << PreHashName(p);
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(ParsePreHash("none"), PreHash::kNone);
  EXPECT_EQ(ParsePreHash("sha2-256"), PreHash::kSha2_256);
  EXPECT_EQ(ParsePreHash("SHAKE-128"), PreHash::kShake128);
}

TEST(Encodings, HexKnownAndErrors) {
  EXPECT_EQ(HexEncode(std::string("\x00\x01\xab\xff", 4)), "0001abff");
  EXPECT_EQ(*HexDecode("0001ABff"), std::string("\x00\x01\xab\xff", 4));
  EXPECT_EQ(*HexDecode(" 00 01\nab\tff "), std::string("\x00\x01\xab\xff", 4));
  EXPECT_EQ(*HexDecode(""), "");
  EXPECT_EQ(HexDecode("abc").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HexDecode("zz").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Encodings, Base64KnownAnswers) {
  // RFC 4648 §10.
  const std::pair<std::string, std::string> cases[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, b64] : cases) {
    EXPECT_EQ(Base64Encode(plain), b64);
    EXPECT_EQ(*Base64Decode(b64), plain);
  }
  EXPECT_EQ(*Base64Decode("Zm9vYg"), "foob");                   // padding optional
  EXPECT_EQ(*Base64Decode("-_8"), std::string("\xfb\xff", 2));  // URL-safe alphabet
  EXPECT_FALSE(Base64Decode("Zm9v!").ok());
  EXPECT_FALSE(Base64Decode("Z").ok());
}

TEST(Encodings, RandomRoundTrips) {
  std::mt19937_64 rng(7);
  for (int n = 0; n < 200; ++n) {
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    EXPECT_EQ(*HexDecode(HexEncode(bytes)), bytes);
    EXPECT_EQ(*Base64Decode(Base64Encode(bytes)), bytes);
  }
}

TEST(Status, CodesMapOneToOne) {
  EXPECT_TRUE(StatusFromCode(0, "").ok());
  for (int code = 1; code <= 16; ++code) {
    const absl::Status s = StatusFromCode(code, "msg");
    EXPECT_EQ(static_cast<int>(s.code()), code);
    EXPECT_EQ(s.message(), "msg");
  }
  EXPECT_EQ(StatusFromCode(99, "x").code(), absl::StatusCode::kUnknown);
}

TEST(ChannelTarget, SingleTargetsKeptAsGiven) {
  EXPECT_EQ(*BuildChannelTarget({"127.0.0.1:50051"}), "127.0.0.1:50051");
  EXPECT_EQ(*BuildChannelTarget({"unix:/run/pqcd.sock"}), "unix:/run/pqcd.sock");
  EXPECT_EQ(*BuildChannelTarget({"dns:///pqcd.svc:50051"}), "dns:///pqcd.svc:50051");
  EXPECT_FALSE(BuildChannelTarget({}).ok());
  EXPECT_FALSE(BuildChannelTarget({""}).ok());
}

TEST(ChannelTarget, SeveralTargetsBecomeOneAddressList) {
  EXPECT_EQ(*BuildChannelTarget({"127.0.0.1:1", "127.0.0.2:2"}), "ipv4:127.0.0.1:1,127.0.0.2:2");
  EXPECT_EQ(*BuildChannelTarget({"localhost:5", "127.0.0.1:6"}), "ipv4:127.0.0.1:5,127.0.0.1:6");
  EXPECT_EQ(*BuildChannelTarget({"[::1]:7", "[::1]:8"}), "ipv6:[::1]:7,[::1]:8");
  EXPECT_EQ(*BuildChannelTarget({"unix:/a.sock", "unix:///b.sock"}), "unix:/a.sock,/b.sock");
  EXPECT_EQ(BuildChannelTarget({"unix:/a.sock", "127.0.0.1:1"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildChannelTarget({"127.0.0.1", "127.0.0.1:1"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildChannelTarget({"dns:///x:1", "127.0.0.1:1"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ChannelTarget, UnixSocketPathOfBothForms) {
  EXPECT_EQ(UnixSocketPath("unix:/run/pqcd.sock"), "/run/pqcd.sock");
  EXPECT_EQ(UnixSocketPath("unix:///run/pqcd.sock"), "/run/pqcd.sock");
  EXPECT_EQ(UnixSocketPath("unix:pqcd.sock"), "pqcd.sock");
  EXPECT_EQ(UnixSocketPath("unix-abstract:pqcd"), std::nullopt);
  EXPECT_EQ(UnixSocketPath("127.0.0.1:50051"), std::nullopt);
  EXPECT_EQ(UnixSocketPath("dns:///unix:/x"), std::nullopt);
}

TEST(Histogram, BucketsCoverValuesContiguously) {
  for (int b = 0; b + 1 < LatencyHistogram::kBuckets; ++b) {
    ASSERT_EQ(LatencyHistogram::BucketHigh(b) + 1, LatencyHistogram::BucketLow(b + 1)) << b;
  }
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    const int b = LatencyHistogram::BucketOf(v);
    ASSERT_LE(LatencyHistogram::BucketLow(b), v);
    ASSERT_GE(LatencyHistogram::BucketHigh(b), v);
    // Relative width at most 1/64.
    ASSERT_LE(LatencyHistogram::BucketHigh(b) - LatencyHistogram::BucketLow(b),
              LatencyHistogram::BucketLow(b) / 64);
  }
  EXPECT_EQ(LatencyHistogram::BucketOf(UINT64_MAX), LatencyHistogram::kBuckets - 1);
}

TEST(Histogram, QuantilesOfAUniformRange) {
  LatencyHistogram h;
  EXPECT_EQ(h.Quantile(0.5), 0u);
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v * 1000);  // 1 us .. 100 ms
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_EQ(h.min(), 1000u);
  EXPECT_EQ(h.max(), 100000000u);
  EXPECT_NEAR(h.mean(), 50000500.0, 1.0);
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double exact = q * 100000 * 1000;
    const double got = static_cast<double>(h.Quantile(q));
    EXPECT_GE(got, exact * (1 - 1e-9)) << q;
    EXPECT_LE(got, exact * (1 + 1.0 / 64)) << q;
  }
  EXPECT_EQ(h.Quantile(1.0), h.max());
}

TEST(Histogram, MergeAndReset) {
  LatencyHistogram a, b;
  a.Record(10, 3);
  b.Record(1000000);
  a.Merge(b);
  EXPECT_EQ(a.count(), 4u);
  EXPECT_EQ(a.max(), 1000000u);
  EXPECT_EQ(a.min(), 10u);
  EXPECT_EQ(a.Quantile(0.5), 10u);
  LatencyHistogram c(a);
  EXPECT_EQ(c.count(), 4u);
  a.Reset();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.max(), 0u);
  EXPECT_EQ(a.min(), 0u);
}

TEST(Client, CreateRejectsBadOptions) {
  ClientOptions o;
  o.targets = {};
  EXPECT_EQ(Client::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.targets = {"127.0.0.1:1"};
  o.tls.enabled = true;
  o.tls.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(Client::Create(o).status().code(), absl::StatusCode::kNotFound);
  o.tls.ca_file.clear();
  o.tls.cert_file = "/nonexistent/cert.pem";
  EXPECT_EQ(Client::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Client, UnreachableDaemonFailsFastWithUnavailable) {
  ClientOptions o;
  o.targets = {"127.0.0.1:1"};
  o.max_attempts = 2;
  auto c = Client::Create(o);
  ASSERT_TRUE(c.ok());
  CallOptions call;
  call.timeout = absl::Seconds(10);
  const absl::Time start = absl::Now();
  auto r = (*c)->Hash({Algorithm::kSha3_256, "abc", 0}, call);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace pqcd::client
