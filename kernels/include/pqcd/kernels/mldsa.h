// ML-DSA (FIPS 204): ML-DSA-44, ML-DSA-65 and ML-DSA-87, pure and pre-hash (HashML-DSA).
//
// Private keys are accepted as the 32-byte seed xi or as the expanded private key encoding sk.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/random.h"

namespace pqcd::kernels {

// The signature family's kernel enum: ML-DSA (this header) and SLH-DSA (slhdsa.h), whose rows
// share the DSA items and operations.
enum class DsaAlgorithm : uint8_t {
  kMlDsa44,
  kMlDsa65,
  kMlDsa87,
  kSlhDsaSha2_128s,
  kSlhDsaSha2_128f,
  kSlhDsaSha2_192s,
  kSlhDsaSha2_192f,
  kSlhDsaSha2_256s,
  kSlhDsaSha2_256f,
  kSlhDsaShake128s,
  kSlhDsaShake128f,
  kSlhDsaShake192s,
  kSlhDsaShake192f,
  kSlhDsaShake256s,
  kSlhDsaShake256f,
};
constexpr bool IsMlDsa(DsaAlgorithm a) {
  return a <= DsaAlgorithm::kMlDsa87;
}

// HashML-DSA pre-hash functions (FIPS 204 §5.4); kNone selects pure ML-DSA.
enum class PreHash : uint8_t {
  kNone,
  kSha2_224,
  kSha2_256,
  kSha2_384,
  kSha2_512,
  kSha2_512_224,
  kSha2_512_256,
  kSha3_224,
  kSha3_256,
  kSha3_384,
  kSha3_512,
  kShake128,  // 256-bit output
  kShake256,  // 512-bit output
};
// PreHashName / ParsePreHashName: pqcd/kernels/algorithms.h (the names are the registry's).

// How a message is turned into mu. The byte fields are views of the caller's memory, which must
// outlive the options: BorrowedBytes refuses a temporary container (a compile error, not a view
// that dangles once the statement ends).
struct DsaMessageOptions {
  BorrowedBytes context;  // 0..255 bytes (FIPS 204 Alg. 2/3/4/5)
  PreHash prehash = PreHash::kNone;
  bool external_mu = false;  // the "message" is mu itself (64 bytes); context/prehash unused
};
struct DsaSignOptions : DsaMessageOptions {
  bool deterministic = false;  // rnd = 0^32 instead of fresh randomness
  BorrowedBytes rnd;           // explicit 32-byte rnd (tests); overrides the two above
};

struct DsaKeyGenItem {
  Bytes seed;  // 32 bytes xi, or empty: fresh randomness (then seed_out, if non-empty, gets it)
  MutBytes pk;
  MutBytes sk;
  MutBytes seed_out;  // optional, 32 bytes
  absl::Status status;
};
struct DsaSignItem {
  Bytes sk;       // 32-byte seed or expanded private key (or a prepared key, below)
  Bytes message;  // or mu when options.external_mu
  DsaSignOptions options;
  MutBytes sig;
  absl::Status status;
  // sk is the output of PreparePrivateKey (a held key, kPreparedBytes): the signer's form of the
  // key, used in place (no key generation, no decoding, no ExpandA per signature).
  bool prepared = false;
};
struct DsaVerifyItem {
  Bytes pk;
  Bytes message;  // or mu when options.external_mu
  Bytes sig;
  DsaMessageOptions options;
  bool valid = false;  // the verdict when status is OK
  absl::Status
      status;  // errors are for malformed requests only (e.g. pk length); bad sig -> !valid
};

template <int K, int L>
struct MlDsaParams;
template <>
struct MlDsaParams<4, 4> {
  static constexpr int k = 4, l = 4, eta = 2, tau = 39, beta = 78, gamma1_bits = 17, omega = 80,
                       lambda = 128;
  static constexpr int32_t gamma2 = (8380417 - 1) / 88;
  static constexpr std::string_view kName = "ML-DSA-44";
};
template <>
struct MlDsaParams<6, 5> {
  static constexpr int k = 6, l = 5, eta = 4, tau = 49, beta = 196, gamma1_bits = 19, omega = 55,
                       lambda = 192;
  static constexpr int32_t gamma2 = (8380417 - 1) / 32;
  static constexpr std::string_view kName = "ML-DSA-65";
};
template <>
struct MlDsaParams<8, 7> {
  static constexpr int k = 8, l = 7, eta = 2, tau = 60, beta = 120, gamma1_bits = 19, omega = 75,
                       lambda = 256;
  static constexpr int32_t gamma2 = (8380417 - 1) / 32;
  static constexpr std::string_view kName = "ML-DSA-87";
};

template <int K, int L>
class MlDsa {
 public:
  using Params = MlDsaParams<K, L>;
  static constexpr std::string_view kName = Params::kName;
  static constexpr size_t kSeedBytes = 32;
  static constexpr size_t kMuBytes = 64;
  static constexpr size_t kExternalMuBytes = kMuBytes;  // μ signed in place of the message
  static constexpr size_t kMaxContextBytes = 255;       // FIPS 204 Alg. 2 and 3
  static constexpr size_t kRndBytes = 32;
  static constexpr size_t kPublicKeyBytes = 32 + 320 * K;
  static constexpr size_t kEtaPackedBytes = Params::eta == 2 ? 96 : 128;
  static constexpr size_t kPrivateKeyBytes = 32 + 32 + 64 + (K + L) * kEtaPackedBytes + 416 * K;
  static constexpr size_t kSignatureBytes =
      Params::lambda / 4 + L * 32 * (1 + Params::gamma1_bits) + Params::omega + K;
  // The signer's form of a private key (PreparePrivateKey): A-hat, NTT(s1 + 2^9 s2), NTT(s2) of
  // the rows past l, NTT(t0) (one 1024-byte polynomial each), rho, K and tr (128 bytes), and 64
  // bytes of room for alignment.
  static constexpr size_t kPreparedBytes = (K * L + 2 * K) * 1024 + 192;

  // FIPS 204 Alg. 6, ML-DSA.KeyGen_internal(xi).
  static void KeyGenInternal(std::span<const uint8_t, 32> xi,
                             std::span<uint8_t, kPublicKeyBytes> pk,
                             std::span<uint8_t, kPrivateKeyBytes> sk);
  static absl::Status KeyGenFromSeed(Bytes seed, MutBytes pk, MutBytes sk);
  // FIPS 204 Alg. 1 with fresh randomness; seed_out (32 bytes) optional.
  static absl::Status KeyGen(MutBytes pk, MutBytes sk, RandomSource& rng, MutBytes seed_out = {});
  // FIPS 140-3 style pairwise consistency test: sign a fixed message with sk, verify with pk.
  static absl::Status PairwiseCheck(Bytes pk, Bytes sk);
  // Complete consistency check of an expanded private key sk = skEncode(rho, K, tr, s1, s2, t0)
  // (FIPS 204 Alg. 24): every s1/s2 coefficient within [-eta, eta] (the encoding has room for
  // more), and t0, tr recomputed from rho, s1, s2 as key generation does (Alg. 6: t =
  // NTT^-1(A-hat NTT(s1)) + s2, (t1, t0) = Power2Round(t), tr = H(pkEncode(rho, t1), 64)) equal
  // to the key's. pk (optional) must equal the recomputed public key (rho, t1); pk_out (optional,
  // kPublicKeyBytes) receives it. Only K is unchecked (it is random). Constant time in the secret
  // parts; only the verdict (and which field failed) is revealed. Costs about one key generation.
  static absl::Status CheckExpandedPrivateKey(Bytes sk, Bytes pk = {}, MutBytes pk_out = {});
  // The signer's form of sk (a seed, or an expanded key that passes CheckExpandedPrivateKey) into
  // prepared (kPreparedBytes; secret, the caller keeps it locked and wipes it): a DsaSignItem with
  // prepared = true signs with it directly. Costs about one key generation, once per key.
  static absl::Status PreparePrivateKey(Bytes sk, MutBytes prepared);

  // FIPS 204 Alg. 2 (pure) / Alg. 4 (HashML-DSA) / Alg. 7 with external mu, per options.
  // Hedged unless options.deterministic; options.rnd supplies explicit randomness.
  static absl::Status Sign(Bytes sk, Bytes message, const DsaSignOptions& options, MutBytes sig,
                           RandomSource& rng);
  // FIPS 204 Alg. 7, ML-DSA.Sign_internal(sk, M', rnd) on an already formatted M'.
  static absl::Status SignInternal(Bytes sk, Bytes mprime, Bytes rnd, MutBytes sig);

  // FIPS 204 Alg. 3 / Alg. 5 / Alg. 8 with external mu. A signature that does not verify
  // (including a wrong length or a malformed hint) is `false`; errors are for a malformed public
  // key or options (context > 255 bytes, mu not 64 bytes).
  static absl::StatusOr<bool> Verify(Bytes pk, Bytes message, Bytes sig,
                                     const DsaMessageOptions& options);
  // FIPS 204 Alg. 8 on an already formatted M'.
  static absl::StatusOr<bool> VerifyInternal(Bytes pk, Bytes mprime, Bytes sig);

  // mu = H(tr || M', 64) for a message formatted per options (lets clients use external mu).
  static absl::Status ComputeMu(Bytes pk, Bytes message, const DsaMessageOptions& options,
                                MutBytes mu);

  static void KeyGenBatch(std::span<DsaKeyGenItem> items, RandomSource& rng);
  static void SignBatch(std::span<DsaSignItem> items, RandomSource& rng);
  static void VerifyBatch(std::span<DsaVerifyItem> items);
};

using MlDsa44 = MlDsa<4, 4>;
using MlDsa65 = MlDsa<6, 5>;
using MlDsa87 = MlDsa<8, 7>;

// FIPS 204 Table 2 sizes.
static_assert(MlDsa44::kPublicKeyBytes == 1312 && MlDsa44::kPrivateKeyBytes == 2560 &&
              MlDsa44::kSignatureBytes == 2420);
static_assert(MlDsa65::kPublicKeyBytes == 1952 && MlDsa65::kPrivateKeyBytes == 4032 &&
              MlDsa65::kSignatureBytes == 3309);
static_assert(MlDsa87::kPublicKeyBytes == 2592 && MlDsa87::kPrivateKeyBytes == 4896 &&
              MlDsa87::kSignatureBytes == 4627);

extern template class MlDsa<4, 4>;
extern template class MlDsa<6, 5>;
extern template class MlDsa<8, 7>;

}  // namespace pqcd::kernels
