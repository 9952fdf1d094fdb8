// ML-KEM (FIPS 203): ML-KEM-512, ML-KEM-768 and ML-KEM-1024.
//
// Private keys are accepted in two forms everywhere: the 64-byte seed d||z (FIPS 203 §7.1 allows
// storing the seed and re-deriving the key) and the expanded decapsulation key dk of §7.1.
#pragma once

#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/random.h"

namespace pqcd::kernels {

// Every KEM: the ML-KEM parameter sets (this header) and the hybrids built on them (hybrid.h).
enum class KemAlgorithm : uint8_t {
  kMlKem512,
  kMlKem768,
  kMlKem1024,
  kX25519MlKem768,
  kSecP256r1MlKem768,
  kSecP384r1MlKem1024,
  kXWing,
};

// Items of the batch entry points. Views point at caller-owned memory; each item gets its own
// status (one bad item never affects the others).
struct KemKeyGenItem {
  Bytes seed;   // 64 bytes d||z, or empty: fresh randomness (then seed_out, if non-empty, gets it)
  MutBytes ek;  // kEncapsKeyBytes
  MutBytes dk;  // kDecapsKeyBytes
  MutBytes seed_out;  // optional, 64 bytes
  absl::Status status;
};
struct KemEncapsItem {
  Bytes ek;     // kEncapsKeyBytes
  Bytes m;      // 32 bytes of encapsulation randomness (tests), or empty: fresh randomness
  MutBytes ct;  // kCiphertextBytes
  MutBytes ss;  // 32 bytes
  absl::Status status;
};
struct KemDecapsItem {
  Bytes dk;     // 64-byte seed or kDecapsKeyBytes expanded key
  Bytes ct;     // kCiphertextBytes
  MutBytes ss;  // 32 bytes
  absl::Status status;
  // dk is the output of the registry's prepare_private_key (a held key): the expanded key whose
  // checks were done when it was prepared, used as it is (no expansion, no §7.3 hash check).
  bool prepared = false;
};

template <int K>
struct MlKemParams;
template <>
struct MlKemParams<2> {
  static constexpr int k = 2, eta1 = 3, eta2 = 2, du = 10, dv = 4;
  static constexpr std::string_view kName = "ML-KEM-512";
};
template <>
struct MlKemParams<3> {
  static constexpr int k = 3, eta1 = 2, eta2 = 2, du = 10, dv = 4;
  static constexpr std::string_view kName = "ML-KEM-768";
};
template <>
struct MlKemParams<4> {
  static constexpr int k = 4, eta1 = 2, eta2 = 2, du = 11, dv = 5;
  static constexpr std::string_view kName = "ML-KEM-1024";
};

template <int K>
class MlKem {
 public:
  using Params = MlKemParams<K>;
  static constexpr std::string_view kName = Params::kName;
  static constexpr size_t kEncapsKeyBytes = 384 * K + 32;
  static constexpr size_t kDecapsKeyBytes = 768 * K + 96;
  static constexpr size_t kCiphertextBytes = 32 * (Params::du * K + Params::dv);
  static constexpr size_t kSharedSecretBytes = 32;
  static constexpr size_t kSeedBytes = 64;
  static constexpr size_t kEncapsRandomBytes = 32;

  // FIPS 203 Alg. 16, ML-KEM.KeyGen_internal(d, z).
  static void KeyGenInternal(std::span<const uint8_t, 32> d, std::span<const uint8_t, 32> z,
                             std::span<uint8_t, kEncapsKeyBytes> ek,
                             std::span<uint8_t, kDecapsKeyBytes> dk);
  // KeyGen from the 64-byte seed d||z (length-checked).
  static absl::Status KeyGenFromSeed(Bytes seed, MutBytes ek, MutBytes dk);
  // FIPS 203 Alg. 19 with fresh randomness. If seed_out is non-empty (64 bytes) the seed d||z is
  // returned too, so that the key can be stored compactly.
  static absl::Status KeyGen(MutBytes ek, MutBytes dk, RandomSource& rng, MutBytes seed_out = {});

  // FIPS 203 §7.2 input check: length and modulus check (every coefficient < q).
  static absl::Status CheckEncapsKey(Bytes ek);
  // FIPS 203 §7.3 input check on an expanded key: length and H(ek) == h. A 64-byte seed is also
  // accepted (it is always well formed).
  static absl::Status CheckDecapsKey(Bytes dk);
  // Complete consistency check of an expanded key dk = ByteEncode12(ŝ) || ek || h || z (FIPS 203
  // Alg. 13 and 16): the §7.3 hash check h == H(ek), the §7.2 modulus check of the embedded ek,
  // dk_PKE canonical, and s = NTT^-1(ŝ), e = NTT^-1(t̂ - Â ∘ ŝ) with every coefficient in
  // [-eta1, eta1], as key generation makes them. ek (optional) must equal the embedded one.
  // Only z (random) is unchecked. Constant time in the secret parts (only the verdict, and which
  // part failed, is revealed). A seed has nothing to check: KeyGenFromSeed re-derives the key.
  static absl::Status CheckExpandedPrivateKey(Bytes dk, Bytes ek = {});

  // FIPS 203 Alg. 17 (Encaps_internal) after the §7.2 check: derandomized, m is 32 bytes.
  static absl::Status EncapsDerand(Bytes ek, Bytes m, MutBytes ct, MutBytes ss);
  // FIPS 203 Alg. 20 with fresh randomness.
  static absl::Status Encaps(Bytes ek, MutBytes ct, MutBytes ss, RandomSource& rng);
  // FIPS 203 Alg. 21 after the §7.3 checks. dk is the seed or the expanded key. A tampered
  // ciphertext is not an error: the implicit-rejection secret J(z||c) is returned.
  static absl::Status Decaps(Bytes dk, Bytes ct, MutBytes ss);

  // Batch entry points: independent operations; any count.
  static void KeyGenBatch(std::span<KemKeyGenItem> items, RandomSource& rng);
  static void EncapsBatch(std::span<KemEncapsItem> items, RandomSource& rng);
  static void DecapsBatch(std::span<KemDecapsItem> items);
};

using MlKem512 = MlKem<2>;
using MlKem768 = MlKem<3>;
using MlKem1024 = MlKem<4>;

// FIPS 203 Table 3 sizes.
static_assert(MlKem512::kEncapsKeyBytes == 800 && MlKem512::kDecapsKeyBytes == 1632 &&
              MlKem512::kCiphertextBytes == 768);
static_assert(MlKem768::kEncapsKeyBytes == 1184 && MlKem768::kDecapsKeyBytes == 2400 &&
              MlKem768::kCiphertextBytes == 1088);
static_assert(MlKem1024::kEncapsKeyBytes == 1568 && MlKem1024::kDecapsKeyBytes == 3168 &&
              MlKem1024::kCiphertextBytes == 1568);

extern template class MlKem<2>;
extern template class MlKem<3>;
extern template class MlKem<4>;

}  // namespace pqcd::kernels
