// The generic hasher: our Keccak and SM3, OpenSSL EVP for SHA-2.
#include "pqcd/kernels/hash.h"

#include <openssl/evp.h>

#include <array>

#include "keccak/sha3_multi.h"
#include "pqcd/kernels/algorithms.h"
#include "sm3/sm3_multi.h"

namespace pqcd::kernels {
namespace {

// How each hash is computed; names, sizes and the XOF flag are facts of the registry
// (kAlgorithms in algorithms.h).
struct HashDesc {
  HashAlgorithm alg;
  size_t rate;           // Keccak rate in bytes, 0 otherwise
  uint8_t suffix;        // Keccak domain suffix
  const char* evp_name;  // OpenSSL EVP name (SHA-2), nullptr otherwise
};

constexpr std::array<HashDesc, kNumHashAlgorithms> kHashes = {{
    {HashAlgorithm::kSha3_224, 144, 0x06, nullptr},
    {HashAlgorithm::kSha3_256, 136, 0x06, nullptr},
    {HashAlgorithm::kSha3_384, 104, 0x06, nullptr},
    {HashAlgorithm::kSha3_512, 72, 0x06, nullptr},
    {HashAlgorithm::kShake128, 168, 0x1f, nullptr},
    {HashAlgorithm::kShake256, 136, 0x1f, nullptr},
    {HashAlgorithm::kSm3, 0, 0, nullptr},
    {HashAlgorithm::kSha2_224, 0, 0, "SHA2-224"},
    {HashAlgorithm::kSha2_256, 0, 0, "SHA2-256"},
    {HashAlgorithm::kSha2_384, 0, 0, "SHA2-384"},
    {HashAlgorithm::kSha2_512, 0, 0, "SHA2-512"},
    {HashAlgorithm::kSha2_512_224, 0, 0, "SHA2-512/224"},
    {HashAlgorithm::kSha2_512_256, 0, 0, "SHA2-512/256"},
}};
constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kHashes.size(); ++i) {
    if (static_cast<size_t>(kHashes[i].alg) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder());

const HashDesc& Desc(HashAlgorithm alg) {
  return kHashes[static_cast<size_t>(alg)];
}

// Fetched once; EVP_MD objects are immutable and shareable between threads.
const EVP_MD* EvpMd(HashAlgorithm alg) {
  static const std::array<const EVP_MD*, kNumHashAlgorithms> mds = [] {
    std::array<const EVP_MD*, kNumHashAlgorithms> out{};
    for (const HashDesc& d : kHashes) {
      if (d.evp_name != nullptr) {
        out[static_cast<size_t>(d.alg)] = EVP_MD_fetch(nullptr, d.evp_name, nullptr);
      }
    }
    return out;
  }();
  return mds[static_cast<size_t>(alg)];
}

// Fixed-length hashes write exactly their digest; XOFs any length.
absl::Status CheckOutputSize(const AlgorithmFacts& f, size_t size) {
  if (f.xof || size == f.digest_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(std::string(f.name) + " output: expected " +
                                    std::to_string(f.digest_bytes) + " bytes, got " +
                                    std::to_string(size));
}

}  // namespace

struct Hasher::EvpState {
  EVP_MD_CTX* ctx = nullptr;
  ~EvpState() { EVP_MD_CTX_free(ctx); }
};

std::string_view HashName(HashAlgorithm alg) {
  return Facts(IdOf(alg)).name;
}

std::optional<HashAlgorithm> ParseHashName(std::string_view name) {
  const std::optional<AlgorithmId> id = ParseAlgorithmName(name);
  if (!id || Facts(*id).family != Family::kHash) return std::nullopt;
  return AsHash(*id);
}

size_t HashDigestBytes(HashAlgorithm alg) {
  return Facts(IdOf(alg)).digest_bytes;
}
bool HashIsXof(HashAlgorithm alg) {
  return Facts(IdOf(alg)).xof;
}

Hasher::Hasher(HashAlgorithm alg) : alg_(alg), state_(Sm3()) {}
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;
Hasher::~Hasher() = default;

absl::StatusOr<Hasher> Hasher::Create(HashAlgorithm alg) {
  if (static_cast<size_t>(alg) >= kHashes.size()) {
    return absl::InvalidArgumentError("unknown hash algorithm");
  }
  Hasher h(alg);
  const HashDesc& d = Desc(alg);
  if (d.rate != 0) {
    h.state_.emplace<KeccakSponge>(d.rate, d.suffix);
  } else if (d.evp_name != nullptr) {
    const EVP_MD* md = EvpMd(alg);
    auto evp = std::make_unique<EvpState>();
    evp->ctx = EVP_MD_CTX_new();
    if (md == nullptr || evp->ctx == nullptr || EVP_DigestInit_ex(evp->ctx, md, nullptr) != 1) {
      return absl::InternalError(std::string("OpenSSL cannot provide ") + d.evp_name);
    }
    h.state_ = std::move(evp);
  }
  return h;
}

void Hasher::Update(Bytes in) {
  if (auto* k = std::get_if<KeccakSponge>(&state_)) {
    k->Absorb(in);
  } else if (auto* s = std::get_if<Sm3>(&state_)) {
    s->Update(in);
  } else {
    EVP_DigestUpdate(std::get<std::unique_ptr<EvpState>>(state_)->ctx, in.data(), in.size());
  }
}

absl::Status Hasher::Finish(MutBytes out) {
  if (absl::Status s = CheckOutputSize(Facts(IdOf(alg_)), out.size()); !s.ok()) return s;
  if (auto* k = std::get_if<KeccakSponge>(&state_)) {
    k->Squeeze(out);
  } else if (auto* s = std::get_if<Sm3>(&state_)) {
    s->Final(std::span<uint8_t, Sm3::kDigestBytes>(out.data(), Sm3::kDigestBytes));
  } else {
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(std::get<std::unique_ptr<EvpState>>(state_)->ctx, out.data(), &len) !=
        1) {
      return absl::InternalError("OpenSSL digest failed");
    }
  }
  return absl::OkStatus();
}

void Hasher::Reset() {
  if (auto* k = std::get_if<KeccakSponge>(&state_)) {
    k->Reset();
  } else if (auto* s = std::get_if<Sm3>(&state_)) {
    s->Reset();
  } else {
    EVP_DigestInit_ex(std::get<std::unique_ptr<EvpState>>(state_)->ctx, EvpMd(alg_), nullptr);
  }
}

absl::Status Hash(HashAlgorithm alg, Bytes in, MutBytes out) {
  if (static_cast<size_t>(alg) >= kHashes.size()) {
    return absl::InvalidArgumentError("unknown hash algorithm");
  }
  if (absl::Status s = CheckOutputSize(Facts(IdOf(alg)), out.size()); !s.ok()) return s;
  const HashDesc& d = Desc(alg);
  if (d.rate != 0) {
    KeccakSponge k(d.rate, d.suffix);
    k.Absorb(in);
    k.Squeeze(out);
    return absl::OkStatus();
  }
  if (alg == HashAlgorithm::kSm3) {
    Sm3Digest(in, std::span<uint8_t, Sm3::kDigestBytes>(out.data(), Sm3::kDigestBytes));
    return absl::OkStatus();
  }
  // One-shot EVP without a context allocation.
  unsigned int len = 0;
  if (EVP_Digest(in.data(), in.size(), out.data(), &len, EvpMd(alg), nullptr) != 1) {
    return absl::InternalError(std::string("OpenSSL digest failed for ") + d.evp_name);
  }
  return absl::OkStatus();
}

absl::Status HashBatch(HashAlgorithm alg, std::span<const Bytes> ins,
                       std::span<const MutBytes> outs, absl::Status* statuses) {
  if (ins.size() != outs.size()) {
    return absl::InvalidArgumentError("HashBatch: inputs and outputs differ in count");
  }
  if (static_cast<size_t>(alg) >= kHashes.size()) {
    return absl::InvalidArgumentError("unknown hash algorithm");
  }
  const HashDesc& d = Desc(alg);
  const AlgorithmFacts& facts = Facts(IdOf(alg));
  const bool multi_lane = d.rate != 0 || alg == HashAlgorithm::kSm3;
  absl::Status first;
  // Valid items go to the multi-lane kernels in chunks (fixed-size arrays: no allocation).
  constexpr size_t kChunk = 64;
  Bytes chunk_in[kChunk];
  MutBytes chunk_out[kChunk];
  size_t pending = 0;
  auto flush = [&] {
    if (pending == 0) return;
    if (alg == HashAlgorithm::kSm3) {
      Sm3DigestBatch(std::span(chunk_in, pending), std::span(chunk_out, pending));
    } else {
      KeccakDigestBatch(d.rate, d.suffix, std::span(chunk_in, pending),
                        std::span(chunk_out, pending));
    }
    pending = 0;
  };
  for (size_t i = 0; i < ins.size(); ++i) {
    absl::Status s = CheckOutputSize(facts, outs[i].size());
    if (s.ok() && multi_lane) {
      chunk_in[pending] = ins[i];
      chunk_out[pending] = outs[i];
      if (++pending == kChunk) flush();
    } else if (s.ok()) {
      s = Hash(alg, ins[i], outs[i]);
    }
    if (!s.ok() && first.ok()) first = s;
    if (statuses != nullptr) statuses[i] = std::move(s);
  }
  flush();
  return first;
}

}  // namespace pqcd::kernels
