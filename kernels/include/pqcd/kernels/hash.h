// One interface over every hash the daemon serves: SHA-3/SHAKE and SM3 (ours), SHA-2 (OpenSSL EVP).
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/sha3.h"
#include "pqcd/kernels/sm3.h"

namespace pqcd::kernels {

enum class HashAlgorithm : uint8_t {
  kSha3_224,
  kSha3_256,
  kSha3_384,
  kSha3_512,
  kShake128,
  kShake256,
  kSm3,
  kSha2_224,
  kSha2_256,
  kSha2_384,
  kSha2_512,
  kSha2_512_224,
  kSha2_512_256,
};
inline constexpr int kNumHashAlgorithms = 13;

// The registry's names (algorithms.h): "SHA3-256", "SHAKE128", "SM3", "SHA2-512/256", ...
std::string_view HashName(HashAlgorithm alg);
// Accepts the canonical names and common variants ("SHA-256", "SHAKE128", "sha3_256").
std::optional<HashAlgorithm> ParseHashName(std::string_view name);
// Digest size in bytes; for SHAKE the default output length (32 for SHAKE128, 64 for SHAKE256).
size_t HashDigestBytes(HashAlgorithm alg);
bool HashIsXof(HashAlgorithm alg);

// Streaming hasher. Created once, Update any number of times, Finish once (then Reset to reuse).
class Hasher {
 public:
  static absl::StatusOr<Hasher> Create(HashAlgorithm alg);
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;
  ~Hasher();

  HashAlgorithm algorithm() const { return alg_; }
  void Update(Bytes in);
  // Fixed-length hashes need out.size() == HashDigestBytes(); XOFs take any length.
  absl::Status Finish(MutBytes out);
  void Reset();

 private:
  struct EvpState;
  explicit Hasher(HashAlgorithm alg);
  HashAlgorithm alg_;
  std::variant<KeccakSponge, Sm3, std::unique_ptr<EvpState>> state_;
};

// One-shot.
absl::Status Hash(HashAlgorithm alg, Bytes in, MutBytes out);

// Batch entry point: hashes ins[i] into outs[i] for every i (independent messages). statuses, if
// non-null, receives one status per item; the return value is the first error, if any.
absl::Status HashBatch(HashAlgorithm alg, std::span<const Bytes> ins,
                       std::span<const MutBytes> outs, absl::Status* statuses = nullptr);

}  // namespace pqcd::kernels
