// SLH-DSA (FIPS 205): the twelve parameter sets SLH-DSA-{SHA2,SHAKE}-{128,192,256}{s,f}, pure and
// pre-hash (HashSLH-DSA), with context strings, deterministic and hedged signing.
//
// Keys (FIPS 205 §9.1): the public key is PK.seed || PK.root (2n bytes), the private key
// SK.seed || SK.prf || PK.seed || PK.root (4n bytes). The seed form of a private key is the three
// random values of slh_keygen_internal, SK.seed || SK.prf || PK.seed (3n bytes); signing with it
// first recomputes PK.root (one top-layer XMSS tree).
//
// The rows join the signature (DSA) family of the registry: the items and options are ML-DSA's
// (mldsa.h). `DsaSignOptions::rnd` is the n-byte opt_rand of Alg. 19; `deterministic` uses
// opt_rand = PK.seed (FIPS 205 §10.2.1); `external_mu` does not exist in FIPS 205 and is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/mldsa.h"  // DsaAlgorithm, the DSA items and options
#include "pqcd/kernels/random.h"

namespace pqcd::kernels {

// FIPS 205 Table 2. The hash family picks §11.1 (SHAKE) or §11.2 (SHA2: §11.2.1 for n = 16,
// §11.2.2 for n = 24 and 32).
struct SlhDsaParams {
  std::string_view name;
  bool shake;
  int n;       // security parameter, bytes
  int h;       // total tree height
  int d;       // hypertree layers
  int hp;      // h' = h / d, height of one XMSS tree
  int a;       // FORS tree height
  int k;       // FORS trees
  int lg_w;    // always 4 (w = 16)
  int m;       // bytes of H_msg output
  size_t sig;  // signature bytes
  // Derived (FIPS 205 §5, Eq. 5.1-5.4): len1 = 2n, len2 = 3, len = 2n + 3.
  constexpr int len1() const { return 2 * n; }
  constexpr int len() const { return 2 * n + 3; }
  constexpr size_t SignatureBytes() const {
    return static_cast<size_t>(n) * (1 + k * (1 + a) + h + d * len());
  }
};

inline constexpr SlhDsaParams kSlhDsaSha2_128s{
    "SLH-DSA-SHA2-128s", false, 16, 63, 7, 9, 12, 14, 4, 30, 7856};
inline constexpr SlhDsaParams kSlhDsaSha2_128f{
    "SLH-DSA-SHA2-128f", false, 16, 66, 22, 3, 6, 33, 4, 34, 17088};
inline constexpr SlhDsaParams kSlhDsaSha2_192s{
    "SLH-DSA-SHA2-192s", false, 24, 63, 7, 9, 14, 17, 4, 39, 16224};
inline constexpr SlhDsaParams kSlhDsaSha2_192f{
    "SLH-DSA-SHA2-192f", false, 24, 66, 22, 3, 8, 33, 4, 42, 35664};
inline constexpr SlhDsaParams kSlhDsaSha2_256s{
    "SLH-DSA-SHA2-256s", false, 32, 64, 8, 8, 14, 22, 4, 47, 29792};
inline constexpr SlhDsaParams kSlhDsaSha2_256f{
    "SLH-DSA-SHA2-256f", false, 32, 68, 17, 4, 9, 35, 4, 49, 49856};
inline constexpr SlhDsaParams kSlhDsaShake128s{
    "SLH-DSA-SHAKE-128s", true, 16, 63, 7, 9, 12, 14, 4, 30, 7856};
inline constexpr SlhDsaParams kSlhDsaShake128f{
    "SLH-DSA-SHAKE-128f", true, 16, 66, 22, 3, 6, 33, 4, 34, 17088};
inline constexpr SlhDsaParams kSlhDsaShake192s{
    "SLH-DSA-SHAKE-192s", true, 24, 63, 7, 9, 14, 17, 4, 39, 16224};
inline constexpr SlhDsaParams kSlhDsaShake192f{
    "SLH-DSA-SHAKE-192f", true, 24, 66, 22, 3, 8, 33, 4, 42, 35664};
inline constexpr SlhDsaParams kSlhDsaShake256s{
    "SLH-DSA-SHAKE-256s", true, 32, 64, 8, 8, 14, 22, 4, 47, 29792};
inline constexpr SlhDsaParams kSlhDsaShake256f{
    "SLH-DSA-SHAKE-256f", true, 32, 68, 17, 4, 9, 35, 4, 49, 49856};

// One class per parameter set; P is one of the constants above.
// FIPS 205 Alg. 22 and 23: a context string of at most 255 bytes.
inline constexpr size_t kSlhDsaMaxContextBytes = 255;

template <const SlhDsaParams& P>
class SlhDsa {
 public:
  static constexpr const SlhDsaParams& kParams = P;
  static constexpr std::string_view kName = P.name;
  static constexpr size_t kN = static_cast<size_t>(P.n);
  static constexpr size_t kSeedBytes = 3 * kN;
  static constexpr size_t kPublicKeyBytes = 2 * kN;
  static constexpr size_t kPrivateKeyBytes = 4 * kN;
  static constexpr size_t kSignatureBytes = P.sig;
  static constexpr size_t kRndBytes = kN;
  static constexpr size_t kExternalMuBytes = 0;  // FIPS 205 has no external-μ interface
  static constexpr size_t kMaxContextBytes = kSlhDsaMaxContextBytes;
  // The signer's form of a private key (PreparePrivateKey): the checked 4n-byte key, then for
  // the SHA2 sets the SHA-256 and SHA-512 chaining values after the block PK.seed || 0^(64-n)
  // (resp. 0^(128-n)) that every F, H, T_l and PRF call starts with (FIPS 205 §11.2: the
  // standard notes this precomputation); 8 bytes of room to keep them aligned.
  static constexpr size_t kPreparedBytes = kPrivateKeyBytes + 8 + 32 + 64;
  static_assert(P.SignatureBytes() == P.sig, "FIPS 205 Table 2 signature size");

  // FIPS 205 Alg. 18, slh_keygen_internal(SK.seed, SK.prf, PK.seed); seed is their
  // concatenation (kSeedBytes).
  static absl::Status KeyGenFromSeed(Bytes seed, MutBytes pk, MutBytes sk);
  // FIPS 205 Alg. 21 with fresh randomness; seed_out (kSeedBytes) optional.
  static absl::Status KeyGen(MutBytes pk, MutBytes sk, RandomSource& rng, MutBytes seed_out = {});

  // FIPS 205 Alg. 22 (pure) / Alg. 23 (HashSLH-DSA) per options. Hedged unless
  // options.deterministic; options.rnd supplies opt_rand (n bytes). sk: the private key, its seed
  // form, or (prepared = true) the output of PreparePrivateKey.
  static absl::Status Sign(Bytes sk, Bytes message, const DsaSignOptions& options, MutBytes sig,
                           RandomSource& rng, bool prepared = false);
  // FIPS 205 Alg. 19, slh_sign_internal(M', SK, addrnd) on an already formatted M'.
  static absl::Status SignInternal(Bytes sk, Bytes mprime, Bytes addrnd, MutBytes sig);

  // FIPS 205 Alg. 24 / Alg. 25. A signature that does not verify (including a wrong length) is
  // `false`; errors are for a malformed public key or options (context over 255 bytes, external
  // mu, an unknown pre-hash).
  static absl::StatusOr<bool> Verify(Bytes pk, Bytes message, Bytes sig,
                                     const DsaMessageOptions& options);
  // FIPS 205 Alg. 20, slh_verify_internal(M', SIG, PK).
  static absl::StatusOr<bool> VerifyInternal(Bytes pk, Bytes mprime, Bytes sig);

  // Sign a fixed message with sk and verify it with pk (FIPS 140-3 pairwise consistency).
  static absl::Status PairwiseCheck(Bytes pk, Bytes sk);
  // A 4n-byte private key is consistent when PK.root is the root of the top XMSS tree made from
  // SK.seed and PK.seed (Alg. 18); pk (optional) must equal PK.seed || PK.root; pk_out
  // (optional) receives it. SK.prf cannot be checked (it is random). Costs one key generation.
  static absl::Status CheckExpandedPrivateKey(Bytes sk, Bytes pk = {}, MutBytes pk_out = {});
  // The signer's form of sk (seed or a private key that passes CheckExpandedPrivateKey) into
  // prepared (kPreparedBytes; secret: the caller keeps it locked and wipes it).
  static absl::Status PreparePrivateKey(Bytes sk, MutBytes prepared);
  // The public key of a private key: of a 4n-byte key its tail, once CheckExpandedPrivateKey
  // passes; of the seed form, one key generation. Either costs one key generation.
  static absl::Status PublicKeyOf(Bytes sk, MutBytes pk);

  // Batch entry points (registry DsaFunctions). Items are independent; their hashes run on
  // multi-lane Keccak / SHA-256 where the backend has it.
  static void KeyGenBatch(std::span<DsaKeyGenItem> items, RandomSource& rng);
  static void SignBatch(std::span<DsaSignItem> items, RandomSource& rng);
  static void VerifyBatch(std::span<DsaVerifyItem> items);
};

using SlhDsaSha2_128s = SlhDsa<kSlhDsaSha2_128s>;
using SlhDsaSha2_128f = SlhDsa<kSlhDsaSha2_128f>;
using SlhDsaSha2_192s = SlhDsa<kSlhDsaSha2_192s>;
using SlhDsaSha2_192f = SlhDsa<kSlhDsaSha2_192f>;
using SlhDsaSha2_256s = SlhDsa<kSlhDsaSha2_256s>;
using SlhDsaSha2_256f = SlhDsa<kSlhDsaSha2_256f>;
using SlhDsaShake128s = SlhDsa<kSlhDsaShake128s>;
using SlhDsaShake128f = SlhDsa<kSlhDsaShake128f>;
using SlhDsaShake192s = SlhDsa<kSlhDsaShake192s>;
using SlhDsaShake192f = SlhDsa<kSlhDsaShake192f>;
using SlhDsaShake256s = SlhDsa<kSlhDsaShake256s>;
using SlhDsaShake256f = SlhDsa<kSlhDsaShake256f>;

extern template class SlhDsa<kSlhDsaSha2_128s>;
extern template class SlhDsa<kSlhDsaSha2_128f>;
extern template class SlhDsa<kSlhDsaSha2_192s>;
extern template class SlhDsa<kSlhDsaSha2_192f>;
extern template class SlhDsa<kSlhDsaSha2_256s>;
extern template class SlhDsa<kSlhDsaSha2_256f>;
extern template class SlhDsa<kSlhDsaShake128s>;
extern template class SlhDsa<kSlhDsaShake128f>;
extern template class SlhDsa<kSlhDsaShake192s>;
extern template class SlhDsa<kSlhDsaShake192f>;
extern template class SlhDsa<kSlhDsaShake256s>;
extern template class SlhDsa<kSlhDsaShake256f>;

}  // namespace pqcd::kernels
