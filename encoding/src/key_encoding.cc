#include "pqcd/encoding/key_encoding.h"

#include <array>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "der.h"

namespace pqcd::encoding {

using kernels::Facts;
using kernels::Family;

void Wipe(void* p, size_t n) {
  if (n == 0) return;
  std::memset(p, 0, n);
  // The barrier tells the compiler the zeros are read: the memset may not be elided.
  __asm__ __volatile__("" : : "r"(p) : "memory");
}

SecretBuffer::SecretBuffer(SecretBuffer&& other) noexcept : bytes_(std::move(other.bytes_)) {
  other.bytes_.clear();
}

SecretBuffer& SecretBuffer::operator=(SecretBuffer&& other) noexcept {
  if (this != &other) {
    Clear();
    bytes_ = std::move(other.bytes_);
    other.bytes_.clear();
  }
  return *this;
}

void SecretBuffer::Clear() {
  Wipe(bytes_.data(), bytes_.size());
  bytes_.clear();
}

void SecretBuffer::Reserve(size_t n) {
  if (n <= bytes_.capacity()) return;
  std::vector<uint8_t> bigger;
  bigger.reserve(n);
  bigger.assign(bytes_.begin(), bytes_.end());
  Clear();
  bytes_ = std::move(bigger);
}

namespace {

// This absl has its own string_view: std::string_view arguments go through A().
absl::string_view A(std::string_view s) {
  return {s.data(), s.size()};
}

constexpr std::string_view kPublicLabel = "PUBLIC KEY";
constexpr std::string_view kPrivateLabel = "PRIVATE KEY";

// The DER content of the OID: 2.16.840.1.101.3.4 (NIST algorithms), then 4.n (KEM) or 3.n (sig).
constexpr std::array<uint8_t, 7> kNistAlgorithmsArc = {0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04};
constexpr size_t kOidContentBytes = 9;

struct OidEntry {
  AlgorithmId id;
  uint8_t arc;   // 4: KEM, 3: signature
  uint8_t leaf;  // 1.. / 17.. / 20..
  std::string_view dotted;
  // The PKCS#8 privateKey OCTET STRING holds the raw private key (SLH-DSA, RFC 9909), not the
  // seed / expanded / both CHOICE of ML-KEM and ML-DSA.
  bool raw_private = false;
};
constexpr std::array<OidEntry, 18> kOids = {{
    {AlgorithmId::kMlKem512, 4, 1, "2.16.840.1.101.3.4.4.1"},
    {AlgorithmId::kMlKem768, 4, 2, "2.16.840.1.101.3.4.4.2"},
    {AlgorithmId::kMlKem1024, 4, 3, "2.16.840.1.101.3.4.4.3"},
    {AlgorithmId::kMlDsa44, 3, 17, "2.16.840.1.101.3.4.3.17"},
    {AlgorithmId::kMlDsa65, 3, 18, "2.16.840.1.101.3.4.3.18"},
    {AlgorithmId::kMlDsa87, 3, 19, "2.16.840.1.101.3.4.3.19"},
    // id-slh-dsa-* (RFC 9909 §3; NIST CSOR sigAlgs).
    {AlgorithmId::kSlhDsaSha2_128s, 3, 20, "2.16.840.1.101.3.4.3.20", true},
    {AlgorithmId::kSlhDsaSha2_128f, 3, 21, "2.16.840.1.101.3.4.3.21", true},
    {AlgorithmId::kSlhDsaSha2_192s, 3, 22, "2.16.840.1.101.3.4.3.22", true},
    {AlgorithmId::kSlhDsaSha2_192f, 3, 23, "2.16.840.1.101.3.4.3.23", true},
    {AlgorithmId::kSlhDsaSha2_256s, 3, 24, "2.16.840.1.101.3.4.3.24", true},
    {AlgorithmId::kSlhDsaSha2_256f, 3, 25, "2.16.840.1.101.3.4.3.25", true},
    {AlgorithmId::kSlhDsaShake128s, 3, 26, "2.16.840.1.101.3.4.3.26", true},
    {AlgorithmId::kSlhDsaShake128f, 3, 27, "2.16.840.1.101.3.4.3.27", true},
    {AlgorithmId::kSlhDsaShake192s, 3, 28, "2.16.840.1.101.3.4.3.28", true},
    {AlgorithmId::kSlhDsaShake192f, 3, 29, "2.16.840.1.101.3.4.3.29", true},
    {AlgorithmId::kSlhDsaShake256s, 3, 30, "2.16.840.1.101.3.4.3.30", true},
    {AlgorithmId::kSlhDsaShake256f, 3, 31, "2.16.840.1.101.3.4.3.31", true},
}};

const OidEntry* EntryOf(AlgorithmId id) {
  for (const OidEntry& e : kOids) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

absl::Status NoStandardEncoding(AlgorithmId id) {
  return absl::InvalidArgumentError(
      absl::StrCat(A(Facts(id).name), " has no standard key encoding: give the raw key"));
}

std::array<uint8_t, kOidContentBytes> OidContent(const OidEntry& e) {
  std::array<uint8_t, kOidContentBytes> out{};
  std::memcpy(out.data(), kNistAlgorithmsArc.data(), kNistAlgorithmsArc.size());
  out[7] = e.arc;
  out[8] = e.leaf;
  return out;
}

// Reads AlgorithmIdentifier ::= SEQUENCE { OID } (parameters absent) and maps the OID.
absl::StatusOr<AlgorithmId> ReadAlgorithmIdentifier(der::Reader& r) {
  absl::StatusOr<ByteView> seq = r.Read(der::kSequence, "algorithm identifier");
  if (!seq.ok()) return seq.status();
  der::Reader inner(*seq);
  absl::StatusOr<ByteView> oid = inner.Read(der::kOid, "algorithm OID");
  if (!oid.ok()) return oid.status();
  if (!inner.empty()) {
    return absl::InvalidArgumentError(
        "algorithm identifier: parameters must be absent for ML-KEM / ML-DSA / SLH-DSA");
  }
  if (oid->size() == kOidContentBytes &&
      std::memcmp(oid->data(), kNistAlgorithmsArc.data(), kNistAlgorithmsArc.size()) == 0) {
    for (const OidEntry& e : kOids) {
      if ((*oid)[7] == e.arc && (*oid)[8] == e.leaf) return e.id;
    }
  }
  return absl::InvalidArgumentError("unsupported algorithm OID (not ML-KEM, ML-DSA or SLH-DSA)");
}

template <class Out>
void AppendAlgorithmIdentifier(Out& out, const OidEntry& e) {
  const std::array<uint8_t, kOidContentBytes> oid = OidContent(e);
  der::AppendHeader(out, der::kSequence, 2 + kOidContentBytes);
  der::AppendHeader(out, der::kOid, kOidContentBytes);
  if constexpr (std::is_same_v<Out, SecretBuffer>) {
    out.Append(oid);
  } else {
    out.insert(out.end(), oid.begin(), oid.end());
  }
}
constexpr size_t kAlgorithmIdentifierBytes = 2 + 2 + kOidContentBytes;

// --- base64 (RFC 4648, standard alphabet, padded) ---

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Base64Value(uint8_t c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Decodes canonical padded base64 (no whitespace) into out.
absl::Status Base64Decode(ByteView in, SecretBuffer& out) {
  if (in.size() % 4 != 0) return absl::InvalidArgumentError("PEM: bad base64 length");
  out.Reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    int v[4];
    size_t pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      const uint8_t c = in[i + j];
      if (c == '=' && last && j >= 2) {
        v[j] = 0;
        ++pad;
        continue;
      }
      if (pad != 0) return absl::InvalidArgumentError("PEM: bad base64 padding");
      v[j] = Base64Value(c);
      if (v[j] < 0) return absl::InvalidArgumentError("PEM: bad base64 character");
    }
    if (pad == 1 && in[i + 2] == '=') return absl::InvalidArgumentError("PEM: bad base64 padding");
    const uint32_t word = (static_cast<uint32_t>(v[0]) << 18) |
                          (static_cast<uint32_t>(v[1]) << 12) | (static_cast<uint32_t>(v[2]) << 6) |
                          static_cast<uint32_t>(v[3]);
    uint8_t b[3] = {static_cast<uint8_t>(word >> 16), static_cast<uint8_t>(word >> 8),
                    static_cast<uint8_t>(word)};
    // Non-canonical: bits below the last byte must be zero.
    if ((pad == 1 && b[2] != 0) || (pad == 2 && (b[1] != 0 || b[2] != 0))) {
      Wipe(b, sizeof(b));
      return absl::InvalidArgumentError("PEM: non-canonical base64");
    }
    out.Append(ByteView(b, 3 - pad));
    Wipe(b, sizeof(b));
  }
  return absl::OkStatus();
}

void Base64Encode(ByteView in, std::string& out) {
  for (size_t i = 0; i < in.size(); i += 3) {
    const size_t n = std::min<size_t>(3, in.size() - i);
    uint32_t word = static_cast<uint32_t>(in[i]) << 16;
    if (n > 1) word |= static_cast<uint32_t>(in[i + 1]) << 8;
    if (n > 2) word |= in[i + 2];
    out.push_back(kAlphabet[(word >> 18) & 63]);
    out.push_back(kAlphabet[(word >> 12) & 63]);
    out.push_back(n > 1 ? kAlphabet[(word >> 6) & 63] : '=');
    out.push_back(n > 2 ? kAlphabet[word & 63] : '=');
  }
}

bool IsSpace(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::string_view AsText(ByteView b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

absl::StatusOr<PrivateKey> DecodePrivateKeyChoice(AlgorithmId id, ByteView choice) {
  const kernels::AlgorithmFacts& f = Facts(id);
  PrivateKey key{id, {}, {}};
  if (EntryOf(id)->raw_private) {
    if (choice.size() != f.private_key_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("private key: expected ", f.private_key_bytes,
                                                     " bytes for ", A(f.name), ", got ",
                                                     choice.size()));
    }
    key.expanded = SecretBuffer(choice);
    return key;
  }
  der::Reader r(choice);
  switch (r.PeekTag()) {
    case der::kContext0Primitive: {
      absl::StatusOr<ByteView> seed = r.Read(der::kContext0Primitive, "private key seed");
      if (!seed.ok()) return seed.status();
      if (seed->size() != f.seed_bytes) {
        return absl::InvalidArgumentError(absl::StrCat("private key seed: expected ", f.seed_bytes,
                                                       " bytes for ", A(f.name), ", got ",
                                                       seed->size()));
      }
      key.seed = SecretBuffer(*seed);
      break;
    }
    case der::kOctetString: {
      absl::StatusOr<ByteView> sk = r.Read(der::kOctetString, "expanded private key");
      if (!sk.ok()) return sk.status();
      if (sk->size() != f.private_key_bytes) {
        return absl::InvalidArgumentError(absl::StrCat("expanded private key: expected ",
                                                       f.private_key_bytes, " bytes for ",
                                                       A(f.name), ", got ", sk->size()));
      }
      key.expanded = SecretBuffer(*sk);
      break;
    }
    case der::kSequence: {
      absl::StatusOr<ByteView> both = r.Read(der::kSequence, "private key (both)");
      if (!both.ok()) return both.status();
      der::Reader inner(*both);
      absl::StatusOr<ByteView> seed = inner.Read(der::kOctetString, "private key (both) seed");
      if (!seed.ok()) return seed.status();
      absl::StatusOr<ByteView> sk = inner.Read(der::kOctetString, "private key (both) expanded");
      if (!sk.ok()) return sk.status();
      if (absl::Status s = inner.ExpectEnd("private key (both)"); !s.ok()) return s;
      if (seed->size() != f.seed_bytes || sk->size() != f.private_key_bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("private key (both): expected a ", f.seed_bytes, "-byte seed and a ",
                         f.private_key_bytes, "-byte expanded key for ", A(f.name), ", got ",
                         seed->size(), " and ", sk->size()));
      }
      key.seed = SecretBuffer(*seed);
      key.expanded = SecretBuffer(*sk);
      break;
    }
    default:
      return absl::InvalidArgumentError(
          "private key: expected a seed [0], an expanded key or both (SEQUENCE)");
  }
  if (absl::Status s = r.ExpectEnd("private key"); !s.ok()) return s;
  return key;
}

}  // namespace

bool HasStandardEncoding(AlgorithmId id) {
  return EntryOf(id) != nullptr;
}

absl::StatusOr<std::string_view> OidOf(AlgorithmId id) {
  const OidEntry* e = EntryOf(id);
  if (e == nullptr) return NoStandardEncoding(id);
  return e->dotted;
}

absl::StatusOr<std::vector<uint8_t>> EncodeSpkiDer(AlgorithmId id, ByteView raw) {
  const OidEntry* e = EntryOf(id);
  if (e == nullptr) return NoStandardEncoding(id);
  const kernels::AlgorithmFacts& f = Facts(id);
  if (raw.size() != f.public_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("public key: expected ", f.public_key_bytes,
                                                   " bytes for ", A(f.name), ", got ", raw.size()));
  }
  const size_t bits = 1 + raw.size();
  const size_t body = kAlgorithmIdentifierBytes + der::HeaderSize(bits) + bits;
  std::vector<uint8_t> out;
  out.reserve(der::HeaderSize(body) + body);
  der::AppendHeader(out, der::kSequence, body);
  AppendAlgorithmIdentifier(out, *e);
  der::AppendHeader(out, der::kBitString, bits);
  out.push_back(0);  // unused bits
  out.insert(out.end(), raw.begin(), raw.end());
  return out;
}

absl::StatusOr<PublicKey> DecodeSpkiDer(ByteView in) {
  der::Reader outer(in);
  absl::StatusOr<ByteView> spki = outer.Read(der::kSequence, "SubjectPublicKeyInfo");
  if (!spki.ok()) return spki.status();
  if (absl::Status s = outer.ExpectEnd("SubjectPublicKeyInfo"); !s.ok()) return s;
  der::Reader r(*spki);
  absl::StatusOr<AlgorithmId> id = ReadAlgorithmIdentifier(r);
  if (!id.ok()) return id.status();
  absl::StatusOr<ByteView> bits = r.Read(der::kBitString, "public key BIT STRING");
  if (!bits.ok()) return bits.status();
  if (absl::Status s = r.ExpectEnd("SubjectPublicKeyInfo"); !s.ok()) return s;
  if (bits->empty() || (*bits)[0] != 0) {
    return absl::InvalidArgumentError("public key BIT STRING: unused bits must be 0");
  }
  const kernels::AlgorithmFacts& f = Facts(*id);
  const ByteView key = bits->subspan(1);
  if (key.size() != f.public_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("public key: expected ", f.public_key_bytes,
                                                   " bytes for ", A(f.name), ", got ", key.size()));
  }
  return PublicKey{*id, std::vector<uint8_t>(key.begin(), key.end())};
}

absl::StatusOr<SecretBuffer> EncodePkcs8Der(AlgorithmId id, ByteView seed, ByteView expanded) {
  const OidEntry* e = EntryOf(id);
  if (e == nullptr) return NoStandardEncoding(id);
  const kernels::AlgorithmFacts& f = Facts(id);
  if (seed.empty() && expanded.empty()) {
    return absl::InvalidArgumentError("private key: neither a seed nor an expanded key given");
  }
  if (!seed.empty() && seed.size() != f.seed_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("seed: expected ", f.seed_bytes, " bytes for ",
                                                   A(f.name), ", got ", seed.size()));
  }
  if (!expanded.empty() && expanded.size() != f.private_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("private key: expected ", f.private_key_bytes,
                                                   " bytes for ", A(f.name), ", got ",
                                                   expanded.size()));
  }
  if (e->raw_private) {
    // RFC 9909: the privateKey OCTET STRING is the 4n-byte key itself; a seed has no encoding.
    if (expanded.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("private key: ", A(f.name), " keys are encoded as the ", f.private_key_bytes,
                       "-byte private key, not the seed (RFC 9909)"));
    }
    const size_t body =
        3 + kAlgorithmIdentifierBytes + der::HeaderSize(expanded.size()) + expanded.size();
    SecretBuffer out;
    out.Reserve(der::HeaderSize(body) + body);
    der::AppendHeader(out, der::kSequence, body);
    static constexpr uint8_t kV0[] = {der::kInteger, 1, 0};
    out.Append(kV0);
    AppendAlgorithmIdentifier(out, *e);
    der::AppendHeader(out, der::kOctetString, expanded.size());
    out.Append(expanded);
    return out;
  }
  size_t choice = 0;
  if (!seed.empty() && !expanded.empty()) {
    const size_t inner = der::HeaderSize(seed.size()) + seed.size() +
                         der::HeaderSize(expanded.size()) + expanded.size();
    choice = der::HeaderSize(inner) + inner;
  } else if (!seed.empty()) {
    choice = der::HeaderSize(seed.size()) + seed.size();
  } else {
    choice = der::HeaderSize(expanded.size()) + expanded.size();
  }
  const size_t body = 3 + kAlgorithmIdentifierBytes + der::HeaderSize(choice) + choice;
  SecretBuffer out;
  out.Reserve(der::HeaderSize(body) + body);
  der::AppendHeader(out, der::kSequence, body);
  static constexpr uint8_t kVersion0[] = {der::kInteger, 1, 0};
  out.Append(kVersion0);
  AppendAlgorithmIdentifier(out, *e);
  der::AppendHeader(out, der::kOctetString, choice);
  if (!seed.empty() && !expanded.empty()) {
    const size_t inner = der::HeaderSize(seed.size()) + seed.size() +
                         der::HeaderSize(expanded.size()) + expanded.size();
    der::AppendHeader(out, der::kSequence, inner);
    der::AppendHeader(out, der::kOctetString, seed.size());
    out.Append(seed);
    der::AppendHeader(out, der::kOctetString, expanded.size());
    out.Append(expanded);
  } else if (!seed.empty()) {
    der::AppendHeader(out, der::kContext0Primitive, seed.size());
    out.Append(seed);
  } else {
    der::AppendHeader(out, der::kOctetString, expanded.size());
    out.Append(expanded);
  }
  return out;
}

absl::StatusOr<PrivateKey> DecodePkcs8Der(ByteView in) {
  der::Reader outer(in);
  absl::StatusOr<ByteView> p8 = outer.Read(der::kSequence, "PrivateKeyInfo");
  if (!p8.ok()) return p8.status();
  if (absl::Status s = outer.ExpectEnd("PrivateKeyInfo"); !s.ok()) return s;
  der::Reader r(*p8);
  absl::StatusOr<ByteView> version = r.Read(der::kInteger, "PrivateKeyInfo version");
  if (!version.ok()) return version.status();
  if (version->size() != 1 || (*version)[0] != 0) {
    return absl::InvalidArgumentError("PrivateKeyInfo version: only version 0 (v1) is accepted");
  }
  absl::StatusOr<AlgorithmId> id = ReadAlgorithmIdentifier(r);
  if (!id.ok()) return id.status();
  absl::StatusOr<ByteView> choice = r.Read(der::kOctetString, "PrivateKeyInfo privateKey");
  if (!choice.ok()) return choice.status();
  if (!r.empty()) {
    return absl::InvalidArgumentError(
        "PrivateKeyInfo: trailing bytes (attributes and public key are not accepted)");
  }
  return DecodePrivateKeyChoice(*id, *choice);
}

std::string PemEncode(std::string_view label, ByteView der) {
  std::string b64;
  b64.reserve((der.size() + 2) / 3 * 4);
  Base64Encode(der, b64);
  std::string out = absl::StrCat("-----BEGIN ", A(label), "-----\n");
  out.reserve(out.size() + b64.size() + b64.size() / 64 + 2 + label.size() + 16);
  for (size_t i = 0; i < b64.size(); i += 64) {
    out.append(b64, i, 64);
    out.push_back('\n');
  }
  absl::StrAppend(&out, "-----END ", A(label), "-----\n");
  Wipe(b64.data(), b64.size());
  return out;
}

bool LooksLikePem(ByteView bytes) {
  size_t i = 0;
  while (i < bytes.size() && IsSpace(bytes[i])) ++i;
  return AsText(bytes.subspan(i)).starts_with("-----BEGIN ");
}

absl::StatusOr<SecretBuffer> PemDecode(std::string_view label, ByteView bytes) {
  std::string_view text = AsText(bytes);
  while (!text.empty() && IsSpace(static_cast<uint8_t>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && IsSpace(static_cast<uint8_t>(text.back()))) text.remove_suffix(1);
  if (!text.starts_with("-----BEGIN ")) return absl::InvalidArgumentError("PEM: no BEGIN line");
  const size_t label_end = text.find("-----", 11);
  if (label_end == std::string_view::npos) {
    return absl::InvalidArgumentError("PEM: malformed BEGIN line");
  }
  if (text.substr(11, label_end - 11) != label) {
    return absl::InvalidArgumentError(absl::StrCat("PEM: expected label \"", A(label), "\""));
  }
  text.remove_prefix(label_end + 5);
  const std::string end_line = absl::StrCat("-----END ", A(label), "-----");
  if (!text.ends_with(end_line)) {
    return absl::InvalidArgumentError(absl::StrCat("PEM: expected \"", end_line, "\" at the end"));
  }
  text.remove_suffix(end_line.size());
  if (text.empty() || (text.front() != '\n' && !text.starts_with("\r\n"))) {
    return absl::InvalidArgumentError("PEM: expected a line break after the BEGIN line");
  }
  // The body: base64 lines; line breaks (\n or \r\n) are dropped, anything else is refused.
  SecretBuffer b64;
  b64.Reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    if (c == '\n' || c == '\r') continue;
    if (Base64Value(c) < 0 && c != '=') {
      return absl::InvalidArgumentError("PEM: bad base64 character");
    }
    const uint8_t one[1] = {c};
    b64.Append(one);
  }
  if (b64.empty()) return absl::InvalidArgumentError("PEM: empty body");
  SecretBuffer out;
  if (absl::Status s = Base64Decode(b64.view(), out); !s.ok()) return s;
  return out;
}

absl::StatusOr<PublicKey> DecodePublicKey(ByteView bytes) {
  if (LooksLikePem(bytes)) {
    absl::StatusOr<SecretBuffer> der = PemDecode(kPublicLabel, bytes);
    if (!der.ok()) return der.status();
    return DecodeSpkiDer(der->view());
  }
  return DecodeSpkiDer(bytes);
}

absl::StatusOr<PrivateKey> DecodePrivateKey(ByteView bytes) {
  if (LooksLikePem(bytes)) {
    absl::StatusOr<SecretBuffer> der = PemDecode(kPrivateLabel, bytes);
    if (!der.ok()) return der.status();
    return DecodePkcs8Der(der->view());
  }
  return DecodePkcs8Der(bytes);
}

bool IsRawPublicKeySize(AlgorithmId id, size_t size) {
  const kernels::AlgorithmFacts& f = Facts(id);
  return f.public_key_bytes != 0 && size == f.public_key_bytes;
}

bool IsRawPrivateKeySize(AlgorithmId id, size_t size) {
  const kernels::AlgorithmFacts& f = Facts(id);
  return (f.private_key_bytes != 0 && size == f.private_key_bytes) ||
         (f.seed_bytes != 0 && size == f.seed_bytes);
}

namespace {
absl::Status CheckMatches(AlgorithmId expected, AlgorithmId got) {
  if (expected == got) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("key is encoded for ", A(Facts(got).name),
                                                 ", the request names ", A(Facts(expected).name)));
}
}  // namespace

absl::StatusOr<std::vector<uint8_t>> PublicKeyToRaw(AlgorithmId expected, ByteView bytes) {
  if (IsRawPublicKeySize(expected, bytes.size())) {
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
  }
  if (!HasStandardEncoding(expected)) {
    const kernels::AlgorithmFacts& f = Facts(expected);
    return absl::InvalidArgumentError(absl::StrCat("public key: expected ", f.public_key_bytes,
                                                   " bytes for ", A(f.name), ", got ",
                                                   bytes.size()));
  }
  absl::StatusOr<PublicKey> key = DecodePublicKey(bytes);
  if (!key.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("public key: not a raw ", A(Facts(expected).name),
                     " key and not a SubjectPublicKeyInfo: ", key.status().message()));
  }
  if (absl::Status s = CheckMatches(expected, key->algorithm); !s.ok()) return s;
  return std::move(key->key);
}

absl::StatusOr<PrivateKey> PrivateKeyToRaw(AlgorithmId expected, ByteView bytes) {
  const kernels::AlgorithmFacts& f = Facts(expected);
  if (f.private_key_bytes != 0 && bytes.size() == f.private_key_bytes) {
    return PrivateKey{expected, {}, SecretBuffer(bytes)};
  }
  if (f.seed_bytes != 0 && bytes.size() == f.seed_bytes) {
    return PrivateKey{expected, SecretBuffer(bytes), {}};
  }
  if (!HasStandardEncoding(expected)) {
    return absl::InvalidArgumentError(absl::StrCat("private key: expected ", f.seed_bytes, " or ",
                                                   f.private_key_bytes, " bytes for ", A(f.name),
                                                   ", got ", bytes.size()));
  }
  absl::StatusOr<PrivateKey> key = DecodePrivateKey(bytes);
  if (!key.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("private key: not a raw ", A(f.name),
                     " key and not a PKCS#8 private key: ", key.status().message()));
  }
  if (absl::Status s = CheckMatches(expected, key->algorithm); !s.ok()) return s;
  return key;
}

absl::StatusOr<std::vector<uint8_t>> EncodePublicKey(AlgorithmId id, ByteView raw, KeyFormat f) {
  if (f == KeyFormat::kRaw) return std::vector<uint8_t>(raw.begin(), raw.end());
  absl::StatusOr<std::vector<uint8_t>> der = EncodeSpkiDer(id, raw);
  if (!der.ok() || f == KeyFormat::kDer) return der;
  const std::string pem = PemEncode(kPublicLabel, *der);
  return std::vector<uint8_t>(pem.begin(), pem.end());
}

absl::StatusOr<SecretBuffer> EncodePrivateKey(AlgorithmId id, ByteView seed, ByteView expanded,
                                              KeyFormat f) {
  if (f == KeyFormat::kRaw) return SecretBuffer(expanded.empty() ? seed : expanded);
  absl::StatusOr<SecretBuffer> der = EncodePkcs8Der(id, seed, expanded);
  if (!der.ok() || f == KeyFormat::kDer) return der;
  std::string pem = PemEncode(kPrivateLabel, der->view());
  SecretBuffer out(ByteView(reinterpret_cast<const uint8_t*>(pem.data()), pem.size()));
  Wipe(pem.data(), pem.size());
  return out;
}

absl::StatusOr<SecretBuffer> EncodeGeneratedPrivateKey(AlgorithmId id, ByteView seed,
                                                       ByteView expanded, KeyFormat f) {
  const OidEntry* e = EntryOf(id);
  const bool seed_form = !seed.empty() && f != KeyFormat::kRaw && e != nullptr && !e->raw_private;
  return seed_form ? EncodePrivateKey(id, seed, {}, f) : EncodePrivateKey(id, {}, expanded, f);
}

absl::StatusOr<KeyFormat> ParseKeyFormat(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(A(name));
  if (lower == "raw") return KeyFormat::kRaw;
  if (lower == "der") return KeyFormat::kDer;
  if (lower == "pem") return KeyFormat::kPem;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown key format \"", A(name), "\" (expected raw, der or pem)"));
}

std::string_view KeyFormatName(KeyFormat f) {
  switch (f) {
    case KeyFormat::kRaw:
      return "raw";
    case KeyFormat::kDer:
      return "der";
    case KeyFormat::kPem:
      return "pem";
  }
  return "raw";
}

}  // namespace pqcd::encoding
