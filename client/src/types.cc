#include "pqcd/client/types.h"

#include <array>
#include <cctype>
#include <utility>

#include "absl/strings/str_cat.h"

namespace pqcd::client {
namespace {

struct AlgorithmEntry {
  Algorithm algorithm;
  std::string_view name;
};
constexpr AlgorithmEntry kAlgorithms[] = {
    {Algorithm::kMlKem512, "ML-KEM-512"},
    {Algorithm::kMlKem768, "ML-KEM-768"},
    {Algorithm::kMlKem1024, "ML-KEM-1024"},
    {Algorithm::kMlDsa44, "ML-DSA-44"},
    {Algorithm::kMlDsa65, "ML-DSA-65"},
    {Algorithm::kMlDsa87, "ML-DSA-87"},
    {Algorithm::kSha3_224, "SHA3-224"},
    {Algorithm::kSha3_256, "SHA3-256"},
    {Algorithm::kSha3_384, "SHA3-384"},
    {Algorithm::kSha3_512, "SHA3-512"},
    {Algorithm::kShake128, "SHAKE128"},
    {Algorithm::kShake256, "SHAKE256"},
    {Algorithm::kSm3, "SM3"},
    {Algorithm::kSha256, "SHA2-256"},
    {Algorithm::kSha384, "SHA2-384"},
    {Algorithm::kSha512, "SHA2-512"},
    {Algorithm::kSha224, "SHA2-224"},
    {Algorithm::kSha512_224, "SHA2-512/224"},
    {Algorithm::kSha512_256, "SHA2-512/256"},
};

constexpr std::pair<PreHash, std::string_view> kPreHashes[] = {
    {PreHash::kNone, "none"},
    {PreHash::kSha2_224, "SHA2-224"},
    {PreHash::kSha2_256, "SHA2-256"},
    {PreHash::kSha2_384, "SHA2-384"},
    {PreHash::kSha2_512, "SHA2-512"},
    {PreHash::kSha2_512_224, "SHA2-512/224"},
    {PreHash::kSha2_512_256, "SHA2-512/256"},
    {PreHash::kSha3_224, "SHA3-224"},
    {PreHash::kSha3_256, "SHA3-256"},
    {PreHash::kSha3_384, "SHA3-384"},
    {PreHash::kSha3_512, "SHA3-512"},
    {PreHash::kShake128, "SHAKE128"},
    {PreHash::kShake256, "SHAKE256"},
};

// Upper case without '-', '_', ' ' and '/'; "SHA2-" prefixes are also accepted as "SHA".
std::string Normalize(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ' || c == '/') continue;
    out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

std::string NormalizeHash(std::string_view name) {
  std::string n = Normalize(name);
  // "SHA2-256" -> SHA256, "SHA2-512/224" -> SHA512224; "SHA256" itself is 6 characters.
  if (n.size() >= 7 && n.compare(0, 4, "SHA2") == 0) n.erase(3, 1);
  return n;
}

}  // namespace

std::string_view AlgorithmName(Algorithm algorithm) {
  for (const auto& e : kAlgorithms) {
    if (e.algorithm == algorithm) return e.name;
  }
  return "UNSPECIFIED";
}

std::optional<Algorithm> ParseAlgorithm(std::string_view name) {
  const std::string wanted = NormalizeHash(name);
  for (const auto& e : kAlgorithms) {
    if (NormalizeHash(e.name) == wanted) return e.algorithm;
  }
  return std::nullopt;
}

const std::vector<Algorithm>& AllAlgorithms() {
  static const std::vector<Algorithm> all = [] {
    std::vector<Algorithm> v;
    for (const auto& e : kAlgorithms) v.push_back(e.algorithm);
    return v;
  }();
  return all;
}

bool IsKem(Algorithm a) {
  return a == Algorithm::kMlKem512 || a == Algorithm::kMlKem768 || a == Algorithm::kMlKem1024;
}
bool IsDsa(Algorithm a) {
  return a == Algorithm::kMlDsa44 || a == Algorithm::kMlDsa65 || a == Algorithm::kMlDsa87;
}
bool IsHash(Algorithm a) {
  return static_cast<int>(a) >= 20;
}
bool IsXof(Algorithm a) {
  return a == Algorithm::kShake128 || a == Algorithm::kShake256;
}

std::string_view PreHashName(PreHash pre_hash) {
  for (const auto& [p, name] : kPreHashes) {
    if (p == pre_hash) return name;
  }
  return "?";
}

std::optional<PreHash> ParsePreHash(std::string_view name) {
  const std::string wanted = NormalizeHash(name);
  for (const auto& [p, n] : kPreHashes) {
    if (NormalizeHash(n) == wanted) return p;
  }
  return std::nullopt;
}

std::string_view HealthStatusName(HealthStatus status) {
  switch (status) {
    case HealthStatus::kServing:
      return "SERVING";
    case HealthStatus::kNotServing:
      return "NOT_SERVING";
    case HealthStatus::kServiceUnknown:
      return "SERVICE_UNKNOWN";
    case HealthStatus::kUnknown:
      break;
  }
  return "UNKNOWN";
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.resize(bytes.size() * 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    out[2 * i] = kDigits[b >> 4];
    out[2 * i + 1] = kDigits[b & 15];
  }
  return out;
}

namespace {
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

absl::StatusOr<std::string> HexDecode(std::string_view hex) {
  std::string out;
  out.reserve(hex.size() / 2);
  int high = -1;
  for (size_t i = 0; i < hex.size(); ++i) {
    const char c = hex[i];
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    const int v = HexValue(c);
    if (v < 0) {
      return absl::InvalidArgumentError(absl::StrCat("invalid hex character at offset ", i));
    }
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<char>((high << 4) | v));
      high = -1;
    }
  }
  if (high >= 0) return absl::InvalidArgumentError("hex input has an odd number of digits");
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

absl::StatusOr<std::string> Base64Decode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+' || c == '-') {
      v = 62;
    } else if (c == '/' || c == '_') {
      v = 63;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("invalid base64 character at offset ", i));
    }
    if (padding) return absl::InvalidArgumentError("base64 data after padding");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6) return absl::InvalidArgumentError("truncated base64 input");
  return out;
}

}  // namespace pqcd::client
