// pqcd_encoding: round trips of SubjectPublicKeyInfo and PKCS#8 in DER and PEM for the six
// ML-KEM / ML-DSA parameter sets, and strict refusal of malformed input.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pqcd/encoding/key_encoding.h"

namespace pqcd::encoding {
namespace {

using kernels::Facts;

constexpr AlgorithmId kEncoded[] = {AlgorithmId::kMlKem512,  AlgorithmId::kMlKem768,
                                    AlgorithmId::kMlKem1024, AlgorithmId::kMlDsa44,
                                    AlgorithmId::kMlDsa65,   AlgorithmId::kMlDsa87};

std::vector<uint8_t> Pattern(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + i * 7);
  return v;
}

std::vector<uint8_t> ToVec(ByteView v) {
  return {v.begin(), v.end()};
}
ByteView View(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::string ToStr(ByteView v) {
  return {reinterpret_cast<const char*>(v.data()), v.size()};
}

void ExpectInvalid(const absl::Status& s, std::string_view fragment) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(std::string(s.message()).find(fragment), std::string::npos)
      << "message: " << s.message() << " (expected to contain: " << fragment << ")";
}

TEST(KeyEncoding, OidsAndStandardRows) {
  EXPECT_EQ(*OidOf(AlgorithmId::kMlKem768), "2.16.840.1.101.3.4.4.2");
  EXPECT_EQ(*OidOf(AlgorithmId::kMlDsa87), "2.16.840.1.101.3.4.3.19");
  int encoded = 0;
  for (const kernels::AlgorithmFacts& f : kernels::kAlgorithms) {
    const bool standard = HasStandardEncoding(f.id);
    encoded += standard ? 1 : 0;
    if (!standard) {
      ExpectInvalid(OidOf(f.id).status(), "has no standard key encoding");
      std::vector<uint8_t> some(16, 1);
      ExpectInvalid(EncodeSpkiDer(f.id, some).status(), "has no standard key encoding");
      ExpectInvalid(EncodePkcs8Der(f.id, some, {}).status(), "has no standard key encoding");
    }
  }
  EXPECT_EQ(encoded, 18);  // ML-KEM 3, ML-DSA 3, SLH-DSA 12
}

TEST(KeyEncoding, PublicKeyRoundTrips) {
  for (AlgorithmId id : kEncoded) {
    SCOPED_TRACE(Facts(id).name);
    const std::vector<uint8_t> pk = Pattern(Facts(id).public_key_bytes, 3);
    for (KeyFormat f : {KeyFormat::kRaw, KeyFormat::kDer, KeyFormat::kPem}) {
      absl::StatusOr<std::vector<uint8_t>> enc = EncodePublicKey(id, pk, f);
      ASSERT_TRUE(enc.ok()) << enc.status();
      if (f == KeyFormat::kPem) {
        EXPECT_TRUE(ToStr(*enc).starts_with("-----BEGIN PUBLIC KEY-----\n"));
      }
      absl::StatusOr<std::vector<uint8_t>> raw = PublicKeyToRaw(id, *enc);
      ASSERT_TRUE(raw.ok()) << raw.status();
      EXPECT_EQ(*raw, pk);
      if (f != KeyFormat::kRaw) {
        absl::StatusOr<PublicKey> dec = DecodePublicKey(*enc);
        ASSERT_TRUE(dec.ok()) << dec.status();
        EXPECT_EQ(dec->algorithm, id);
        EXPECT_EQ(dec->key, pk);
      }
    }
  }
}

TEST(KeyEncoding, PrivateKeyRoundTripsAllForms) {
  for (AlgorithmId id : kEncoded) {
    SCOPED_TRACE(Facts(id).name);
    const std::vector<uint8_t> seed = Pattern(Facts(id).seed_bytes, 1);
    const std::vector<uint8_t> sk = Pattern(Facts(id).private_key_bytes, 9);
    struct Form {
      ByteView seed, sk;
    };
    for (Form form : {Form{seed, {}}, Form{{}, sk}, Form{seed, sk}}) {
      for (KeyFormat f : {KeyFormat::kDer, KeyFormat::kPem}) {
        absl::StatusOr<SecretBuffer> enc = EncodePrivateKey(id, form.seed, form.sk, f);
        ASSERT_TRUE(enc.ok()) << enc.status();
        absl::StatusOr<PrivateKey> dec = PrivateKeyToRaw(id, enc->view());
        ASSERT_TRUE(dec.ok()) << dec.status();
        EXPECT_EQ(dec->algorithm, id);
        EXPECT_EQ(ToVec(dec->seed.view()), ToVec(form.seed));
        EXPECT_EQ(ToVec(dec->expanded.view()), ToVec(form.sk));
      }
    }
    // Raw: either size.
    absl::StatusOr<PrivateKey> raw_seed = PrivateKeyToRaw(id, seed);
    ASSERT_TRUE(raw_seed.ok());
    EXPECT_EQ(ToVec(raw_seed->seed.view()), seed);
    EXPECT_TRUE(raw_seed->expanded.empty());
    absl::StatusOr<PrivateKey> raw_sk = PrivateKeyToRaw(id, sk);
    ASSERT_TRUE(raw_sk.ok());
    EXPECT_EQ(ToVec(raw_sk->expanded.view()), sk);
    EXPECT_TRUE(raw_sk->seed.empty());
  }
}

TEST(KeyEncoding, KnownDerLayout) {
  // ML-KEM-512 seed form: the LAMPS example's prefix (30 54 02 01 00 30 0b 06 09 ... 04 42 80 40).
  const std::vector<uint8_t> seed = Pattern(64, 0);
  absl::StatusOr<SecretBuffer> der = EncodePkcs8Der(AlgorithmId::kMlKem512, seed, {});
  ASSERT_TRUE(der.ok());
  const std::vector<uint8_t> prefix = {0x30, 0x54, 0x02, 0x01, 0x00, 0x30, 0x0b, 0x06,
                                       0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
                                       0x04, 0x01, 0x04, 0x42, 0x80, 0x40};
  ASSERT_EQ(der->size(), prefix.size() + 64);
  EXPECT_EQ(ToVec(der->view().first(prefix.size())), prefix);
  // ML-DSA-44 SPKI: 30 82 05 32 30 0b 06 09 ... 03 11 03 82 05 21 00.
  absl::StatusOr<std::vector<uint8_t>> spki =
      EncodeSpkiDer(AlgorithmId::kMlDsa44, Pattern(1312, 0));
  ASSERT_TRUE(spki.ok());
  const std::vector<uint8_t> spki_prefix = {0x30, 0x82, 0x05, 0x32, 0x30, 0x0b, 0x06, 0x09,
                                            0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03,
                                            0x11, 0x03, 0x82, 0x05, 0x21, 0x00};
  EXPECT_EQ(std::vector<uint8_t>(spki->begin(), spki->begin() + spki_prefix.size()), spki_prefix);
}

// SLH-DSA (RFC 9909): SPKI with the raw 2n-byte key, PKCS#8 whose privateKey OCTET STRING is the
// raw 4n-byte key; the seed form has no encoding.
// A key just made is exported in the seed form where PKCS#8 has one, else as the key itself;
// raw is the expanded key.
TEST(KeyEncoding, GeneratedPrivateKeyForm) {
  for (const kernels::AlgorithmFacts& f : kernels::kAlgorithms) {
    if (!HasStandardEncoding(f.id)) continue;
    SCOPED_TRACE(f.name);
    const std::vector<uint8_t> seed = Pattern(f.seed_bytes, 3);
    const std::vector<uint8_t> sk = Pattern(f.private_key_bytes, 7);
    const bool slh = f.name.starts_with("SLH-DSA-");
    absl::StatusOr<SecretBuffer> der = EncodeGeneratedPrivateKey(f.id, seed, sk, KeyFormat::kDer);
    ASSERT_TRUE(der.ok()) << der.status();
    absl::StatusOr<PrivateKey> back = PrivateKeyToRaw(f.id, der->view());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(ToVec(back->seed.view()), slh ? std::vector<uint8_t>{} : seed);
    EXPECT_EQ(ToVec(back->expanded.view()), slh ? sk : std::vector<uint8_t>{});
    absl::StatusOr<SecretBuffer> raw = EncodeGeneratedPrivateKey(f.id, seed, sk, KeyFormat::kRaw);
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(ToVec(raw->view()), sk);
    absl::StatusOr<SecretBuffer> no_seed = EncodeGeneratedPrivateKey(f.id, {}, sk, KeyFormat::kDer);
    ASSERT_TRUE(no_seed.ok());
    back = PrivateKeyToRaw(f.id, no_seed->view());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(ToVec(back->expanded.view()), sk);
  }
}

TEST(KeyEncoding, SlhDsaForms) {
  int rows = 0;
  for (const kernels::AlgorithmFacts& f : kernels::kAlgorithms) {
    if (!f.name.starts_with("SLH-DSA-")) continue;
    ++rows;
    SCOPED_TRACE(f.name);
    const std::vector<uint8_t> pk = Pattern(f.public_key_bytes, 5);
    const std::vector<uint8_t> sk = Pattern(f.private_key_bytes, 11);
    for (KeyFormat fmt : {KeyFormat::kDer, KeyFormat::kPem}) {
      absl::StatusOr<std::vector<uint8_t>> pub = EncodePublicKey(f.id, pk, fmt);
      ASSERT_TRUE(pub.ok()) << pub.status();
      absl::StatusOr<std::vector<uint8_t>> pk_back = PublicKeyToRaw(f.id, *pub);
      ASSERT_TRUE(pk_back.ok()) << pk_back.status();
      EXPECT_EQ(*pk_back, pk);
      absl::StatusOr<SecretBuffer> priv = EncodePrivateKey(f.id, {}, sk, fmt);
      ASSERT_TRUE(priv.ok()) << priv.status();
      absl::StatusOr<PrivateKey> back = PrivateKeyToRaw(f.id, priv->view());
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(ToVec(back->expanded.view()), sk);
      EXPECT_TRUE(back->seed.empty());
    }
    // DER: 30 len 02 01 00 30 0b 06 09 <2.16.840.1.101.3.4.3.x> 04 len <key> (the lengths take
    // two bytes for 128-byte keys).
    absl::StatusOr<SecretBuffer> der = EncodePkcs8Der(f.id, {}, sk);
    ASSERT_TRUE(der.ok());
    const ByteView d = der->view();
    const size_t len_bytes = sk.size() < 128 ? 1 : 2;
    ASSERT_EQ(d.size(),
              1 + len_bytes + 3 + 13 + 1 + len_bytes + sk.size());  // 30 L, v0, AlgId, 04 L
    EXPECT_EQ(d[d.size() - sk.size() - len_bytes - 1], 0x04);
    EXPECT_EQ(d[d.size() - sk.size() - 1], sk.size());
    EXPECT_EQ(ToVec(d.subspan(d.size() - sk.size())), sk);
    // A seed has no PKCS#8 form; a privateKey of another size is refused, naming the size.
    const std::vector<uint8_t> seed = Pattern(f.seed_bytes, 1);
    ExpectInvalid(EncodePkcs8Der(f.id, seed, {}).status(), "not the seed");
    if (len_bytes == 1) {
      std::vector<uint8_t> shorter(d.begin(), d.end() - 1);
      shorter[1] = static_cast<uint8_t>(shorter[1] - 1);
      shorter[19] = static_cast<uint8_t>(shorter[19] - 1);
      ExpectInvalid(DecodePkcs8Der(shorter).status(),
                    "expected " + std::to_string(f.private_key_bytes) + " bytes");
    }
  }
  EXPECT_EQ(rows, 12);
  // RFC 9909's example prefix for SLH-DSA-SHA2-128s.
  absl::StatusOr<SecretBuffer> der =
      EncodePkcs8Der(AlgorithmId::kSlhDsaSha2_128s, {}, Pattern(64, 0));
  ASSERT_TRUE(der.ok());
  const std::vector<uint8_t> prefix = {0x30, 0x52, 0x02, 0x01, 0x00, 0x30, 0x0b, 0x06, 0x09, 0x60,
                                       0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x14, 0x04, 0x40};
  EXPECT_EQ(ToVec(der->view().first(prefix.size())), prefix);
}

TEST(KeyEncoding, WrongOidAndMismatchRefused) {
  const std::vector<uint8_t> pk = Pattern(Facts(AlgorithmId::kMlKem768).public_key_bytes, 0);
  std::vector<uint8_t> der = *EncodeSpkiDer(AlgorithmId::kMlKem768, pk);
  // Another algorithm's request: mismatch (ML-KEM-512 expects 800 raw bytes).
  ExpectInvalid(PublicKeyToRaw(AlgorithmId::kMlKem512, der).status(),
                "encoded for ML-KEM-768, the request names ML-KEM-512");
  // An unknown OID (the last arc changed to 9).
  std::vector<uint8_t> bad = der;
  ASSERT_EQ(bad[16], 0x02);
  bad[16] = 0x09;
  ExpectInvalid(DecodeSpkiDer(bad).status(), "unsupported algorithm OID");
  ExpectInvalid(PublicKeyToRaw(AlgorithmId::kMlKem768, bad).status(), "unsupported algorithm OID");
  // A private key for ML-DSA given to an ML-KEM request.
  SecretBuffer p8 = *EncodePkcs8Der(AlgorithmId::kMlDsa65, Pattern(32, 0), {});
  ExpectInvalid(PrivateKeyToRaw(AlgorithmId::kMlKem768, p8.view()).status(),
                "encoded for ML-DSA-65");
  // Algorithms without a standard encoding take the raw size only.
  ExpectInvalid(PublicKeyToRaw(AlgorithmId::kSha3_256, der).status(), "public key: expected");
}

TEST(KeyEncoding, MalformedDerRefused) {
  const std::vector<uint8_t> pk = Pattern(800, 0);
  const std::vector<uint8_t> der = *EncodeSpkiDer(AlgorithmId::kMlKem512, pk);
  // Trailing bytes after the outer SEQUENCE.
  std::vector<uint8_t> trailing = der;
  trailing.push_back(0);
  ExpectInvalid(DecodeSpkiDer(trailing).status(), "trailing bytes");
  // Truncated.
  ExpectInvalid(DecodeSpkiDer(ByteView(der).first(der.size() - 1)).status(),
                "length exceeds the data");
  ExpectInvalid(DecodeSpkiDer({}).status(), "missing");
  // Non-minimal length: the 2-byte outer length rewritten as 3 bytes.
  ASSERT_EQ(der[1], 0x82);
  std::vector<uint8_t> long_form = {0x30, 0x83, 0x00, der[2], der[3]};
  long_form.insert(long_form.end(), der.begin() + 4, der.end());
  ExpectInvalid(DecodeSpkiDer(long_form).status(), "non-minimal length");
  // Long form for a short length.
  const std::vector<uint8_t> short_long = {0x30, 0x81, 0x05, 0x02, 0x01, 0x00, 0x05, 0x00};
  ExpectInvalid(DecodeSpkiDer(short_long).status(), "non-minimal length");
  // Indefinite length.
  const std::vector<uint8_t> indefinite = {0x30, 0x80, 0x00, 0x00};
  ExpectInvalid(DecodeSpkiDer(indefinite).status(), "indefinite length");
  // Unused bits in the BIT STRING.
  std::vector<uint8_t> unused = der;
  const size_t bits_at = 4 + 13 + 4;  // outer header, AlgorithmIdentifier, BIT STRING header
  ASSERT_EQ(unused[bits_at - 4], 0x03);
  ASSERT_EQ(unused[bits_at], 0x00);
  unused[bits_at] = 0x01;
  ExpectInvalid(DecodeSpkiDer(unused).status(), "unused bits");
  // Parameters present (NULL) in the AlgorithmIdentifier.
  std::vector<uint8_t> params = {0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
                                 0x65, 0x03, 0x04, 0x04, 0x01, 0x05, 0x00};
  std::vector<uint8_t> with_params = {0x30, 0x82, 0x03, 0x34};
  with_params.insert(with_params.end(), params.begin(), params.end());
  with_params.insert(with_params.end(), {0x03, 0x82, 0x03, 0x21, 0x00});
  with_params.insert(with_params.end(), pk.begin(), pk.end());
  ASSERT_EQ(with_params.size(), 4u + 0x334u);
  ExpectInvalid(DecodeSpkiDer(with_params).status(), "parameters must be absent");
  // Wrong public key size inside a well-formed SPKI (a 799-byte key).
  std::vector<uint8_t> small = {0x30, 0x82, 0x03, 0x31, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48,
                                0x01, 0x65, 0x03, 0x04, 0x04, 0x01, 0x03, 0x82, 0x03, 0x20, 0x00};
  small.insert(small.end(), pk.begin(), pk.end() - 1);
  ExpectInvalid(DecodeSpkiDer(small).status(), "expected 800 bytes for ML-KEM-512, got 799");
}

// A PKCS#8 v0 with the given private-key CHOICE bytes for ML-KEM-512.
std::vector<uint8_t> Pkcs8With(const std::vector<uint8_t>& choice) {
  std::vector<uint8_t> body = {0x02, 0x01, 0x00, 0x30, 0x0b, 0x06, 0x09, 0x60,
                               0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x04, 0x01};
  auto header = [](std::vector<uint8_t>& out, uint8_t tag, size_t n) {
    out.push_back(tag);
    if (n < 0x80) {
      out.push_back(static_cast<uint8_t>(n));
    } else if (n < 0x100) {
      out.insert(out.end(), {0x81, static_cast<uint8_t>(n)});
    } else {
      out.insert(out.end(), {0x82, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)});
    }
  };
  header(body, 0x04, choice.size());
  body.insert(body.end(), choice.begin(), choice.end());
  std::vector<uint8_t> out;
  header(out, 0x30, body.size());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<uint8_t> Both(size_t seed_size, size_t sk_size) {
  std::vector<uint8_t> inner = {0x04, static_cast<uint8_t>(seed_size)};
  inner.resize(inner.size() + seed_size, 1);
  inner.insert(inner.end(),
               {0x04, 0x82, static_cast<uint8_t>(sk_size >> 8), static_cast<uint8_t>(sk_size)});
  inner.resize(inner.size() + sk_size, 2);
  std::vector<uint8_t> out = {0x30, 0x82, static_cast<uint8_t>(inner.size() >> 8),
                              static_cast<uint8_t>(inner.size())};
  out.insert(out.end(), inner.begin(), inner.end());
  return out;
}

TEST(KeyEncoding, MalformedPkcs8Refused) {
  // The helper itself produces a valid key.
  ASSERT_TRUE(DecodePkcs8Der(Pkcs8With(Both(64, 1632))).ok());
  ExpectInvalid(DecodePkcs8Der(Pkcs8With(Both(63, 1632))).status(),
                "expected a 64-byte seed and a 1632-byte expanded key for ML-KEM-512, got 63 and "
                "1632");
  ExpectInvalid(DecodePkcs8Der(Pkcs8With(Both(64, 1631))).status(), "got 64 and 1631");
  // Seed of the wrong size.
  std::vector<uint8_t> seed = {0x80, 32};
  seed.resize(34, 0);
  ExpectInvalid(DecodePkcs8Der(Pkcs8With(seed)).status(),
                "private key seed: expected 64 bytes for ML-KEM-512, got 32");
  // Expanded key of the wrong size.
  std::vector<uint8_t> sk = {0x04, 0x82, 0x06, 0x5f};
  sk.resize(4 + 1631, 0);
  ExpectInvalid(DecodePkcs8Der(Pkcs8With(sk)).status(), "expected 1632 bytes");
  // Trailing bytes inside the private key OCTET STRING.
  std::vector<uint8_t> seed_trailing = {0x80, 64};
  seed_trailing.resize(66, 0);
  seed_trailing.push_back(0);
  ExpectInvalid(DecodePkcs8Der(Pkcs8With(seed_trailing)).status(), "trailing bytes");
  // An unknown CHOICE tag.
  std::vector<uint8_t> other = {0x81, 64};
  other.resize(66, 0);
  ExpectInvalid(DecodePkcs8Der(Pkcs8With(other)).status(), "expected a seed [0]");
  // Version 1 is refused.
  std::vector<uint8_t> good = Pkcs8With(Both(64, 1632));
  std::vector<uint8_t> v1 = good;
  ASSERT_EQ(v1[4 + 2], 0x00);
  v1[4 + 2] = 0x01;
  ExpectInvalid(DecodePkcs8Der(v1).status(), "only version 0");
}

TEST(KeyEncoding, PemStrict) {
  const std::vector<uint8_t> pk = Pattern(1184, 5);
  const std::vector<uint8_t> pem = *EncodePublicKey(AlgorithmId::kMlKem768, pk, KeyFormat::kPem);
  const std::string text = ToStr(pem);
  // Lines of 64 characters.
  EXPECT_EQ(text.find('\n', 27) - 27, 64u);
  // CRLF line endings and surrounding whitespace are accepted.
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf.push_back('\r');
    crlf.push_back(c);
  }
  EXPECT_TRUE(PublicKeyToRaw(AlgorithmId::kMlKem768, View("\n  " + crlf + "\n\n")).ok());
  // The private label for a public key.
  std::string wrong_label = text;
  wrong_label.replace(wrong_label.find("PUBLIC"), 6, "PRIVATE");
  wrong_label.replace(wrong_label.rfind("PUBLIC"), 6, "PRIVATE");
  ExpectInvalid(PublicKeyToRaw(AlgorithmId::kMlKem768, View(wrong_label)).status(),
                "expected label \"PUBLIC KEY\"");
  ExpectInvalid(PemDecode("PRIVATE KEY", pem).status(), "expected label \"PRIVATE KEY\"");
  // A bad base64 character in the body.
  std::string bad_char = text;
  bad_char[40] = '*';
  ExpectInvalid(PemDecode("PUBLIC KEY", View(bad_char)).status(), "bad base64 character");
  // A missing character: bad length.
  std::string short_body = text;
  short_body.erase(40, 1);
  ExpectInvalid(PemDecode("PUBLIC KEY", View(short_body)).status(), "bad base64 length");
  // No END line; text after the END line.
  std::string no_end = text.substr(0, text.find("-----END"));
  ExpectInvalid(PemDecode("PUBLIC KEY", View(no_end)).status(), "-----END PUBLIC KEY-----");
  ExpectInvalid(PemDecode("PUBLIC KEY", View(text + "extra")).status(), "-----END PUBLIC KEY-----");
  // Non-canonical base64: "AB==" decodes with non-zero unused bits.
  ExpectInvalid(PemDecode("X", View("-----BEGIN X-----\nAB==\n-----END X-----\n")).status(),
                "non-canonical");
  ExpectInvalid(PemDecode("X", View("-----BEGIN X-----\nA===\n-----END X-----\n")).status(),
                "bad base64");
  ExpectInvalid(PemDecode("X", View("-----BEGIN X-----\nAA=A\n-----END X-----\n")).status(),
                "padding");
  absl::StatusOr<SecretBuffer> ok =
      PemDecode("X", View("-----BEGIN X-----\nAA==\n-----END X-----"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->size(), 1u);
  ExpectInvalid(PemDecode("X", View("-----BEGIN X-----\n-----END X-----")).status(), "empty");
}

TEST(KeyEncoding, FormatNames) {
  EXPECT_EQ(*ParseKeyFormat("PEM"), KeyFormat::kPem);
  EXPECT_EQ(*ParseKeyFormat("der"), KeyFormat::kDer);
  EXPECT_EQ(*ParseKeyFormat("raw"), KeyFormat::kRaw);
  ExpectInvalid(ParseKeyFormat("jwk").status(), "unknown key format");
  EXPECT_EQ(KeyFormatName(KeyFormat::kPem), "pem");
}

TEST(KeyEncoding, SecretBufferWipesOnClearAndMove) {
  SecretBuffer a(Pattern(16, 1));
  SecretBuffer b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is defined: empty
  EXPECT_EQ(b.size(), 16u);
  b.Clear();
  EXPECT_TRUE(b.empty());
}

}  // namespace
}  // namespace pqcd::encoding
