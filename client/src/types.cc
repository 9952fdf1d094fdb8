#include "pqcd/client/types.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pqcd/kernels/algorithms.h"

namespace pqcd::client {
namespace {

using kernels::AlgorithmId;

// Algorithm's and PreHash's enumerators are the proto's values (pqcd/client/api_enums.h,
// generated); names, families and sizes come from the registry (kernels/include/pqcd/kernels/
// algorithms.h), which holds every other fact of an algorithm under the same API numbers, and
// kernels::PreHash has pqc.v1.PreHash's numbers. tests/client/test_types.cc walks the proto's
// enums and fails when a value has no registry row or a row has no value.
const kernels::AlgorithmFacts* FactsOf(Algorithm a) {
  return kernels::FindByApiValue(static_cast<int>(a));
}

}  // namespace

std::string_view AlgorithmName(Algorithm algorithm) {
  const kernels::AlgorithmFacts* f = FactsOf(algorithm);
  return f != nullptr ? f->name : "UNSPECIFIED";
}

std::optional<Algorithm> ParseAlgorithm(std::string_view name) {
  const std::optional<AlgorithmId> id = kernels::ParseAlgorithmName(name);
  if (!id) return std::nullopt;
  return static_cast<Algorithm>(kernels::Facts(*id).api_value);
}

const std::vector<Algorithm>& AllAlgorithms() {
  static const std::vector<Algorithm> all = [] {
    std::vector<Algorithm> v;
    for (const kernels::AlgorithmFacts& f : kernels::kAlgorithms) {
      v.push_back(static_cast<Algorithm>(f.api_value));
    }
    std::sort(v.begin(), v.end());
    return v;
  }();
  return all;
}

bool IsKem(Algorithm a) {
  const kernels::AlgorithmFacts* f = FactsOf(a);
  return f != nullptr && f->family == kernels::Family::kKem;
}
bool IsDsa(Algorithm a) {
  const kernels::AlgorithmFacts* f = FactsOf(a);
  return f != nullptr && f->family == kernels::Family::kDsa;
}
bool IsHash(Algorithm a) {
  const kernels::AlgorithmFacts* f = FactsOf(a);
  return f != nullptr && f->family == kernels::Family::kHash;
}
bool IsXof(Algorithm a) {
  const kernels::AlgorithmFacts* f = FactsOf(a);
  return f != nullptr && f->xof;
}

std::string_view PreHashName(PreHash pre_hash) {
  return kernels::PreHashName(static_cast<kernels::PreHash>(static_cast<int>(pre_hash)));
}

std::optional<PreHash> ParsePreHash(std::string_view name) {
  const std::optional<kernels::PreHash> ph = kernels::ParsePreHashName(name);
  if (!ph) return std::nullopt;
  return static_cast<PreHash>(static_cast<int>(*ph));
}

const std::vector<PreHash>& AllPreHashes() {
  static const std::vector<PreHash> all = [] {
    std::vector<PreHash> v = {
#define PQCD_CLIENT_PRE_HASH(name, value, proto_name) PreHash::name,
        PQCD_CLIENT_PRE_HASHES(PQCD_CLIENT_PRE_HASH)
#undef PQCD_CLIENT_PRE_HASH
    };
    std::erase(v, PreHash::kNone);
    return v;
  }();
  return all;
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
