// The facts of every algorithm pqcd serves, in one table: its id, its one name, its family, its
// sizes, its number in the gRPC API (pqc.v1.Algorithm) and its start-up known-answer vector.
//
// Header only and constexpr: the client library and the CLI read names and sizes from here without
// linking the kernels. The function tables (what runs an algorithm) are in registry.h. Everything
// else that lists algorithms (engine statistics, server validation, metric labels, client names,
// the CLI, the load generator, the start-up self-test) iterates over kAlgorithms or maps through
// it; adding an algorithm starts with one row here (docs/ARCHITECTURE.md has the checklist).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pqcd/kernels/hybrid.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/slhdsa.h"

namespace pqcd::kernels {

enum class Family : uint8_t { kKem, kDsa, kHash };

// Dense ids, in table order: arrays indexed by id (engine statistics, metric children) are sized
// kNumAlgorithms.
enum class AlgorithmId : uint8_t {
  kMlKem512,
  kMlKem768,
  kMlKem1024,
  kMlDsa44,
  kMlDsa65,
  kMlDsa87,
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
  // Hybrid KEMs (hybrid.h), after the others so that no earlier id moved.
  kX25519MlKem768,
  kSecP256r1MlKem768,
  kSecP384r1MlKem1024,
  kXWing,
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
inline constexpr size_t kNumAlgorithms = 35;

struct AlgorithmFacts {
  AlgorithmId id;
  Family family;
  // The one name: metric label, logs, CLI, client library ("ML-KEM-768", "SHAKE128", "SHA2-256").
  std::string_view name;
  // The value of the family's kernel enum (KemAlgorithm, DsaAlgorithm or HashAlgorithm).
  uint8_t family_value;
  // pqc.v1.Algorithm number (proto/pqc/v1/common.proto); the server and the client static_assert
  // their enums against it.
  int api_value;
  // Sizes in bytes; 0 where the family has no such thing.
  size_t public_key_bytes;   // KEM encapsulation key ek, DSA public key pk
  size_t private_key_bytes;  // the expanded private key: KEM dk, DSA sk
  size_t seed_bytes;         // the seed form of a private key: KEM d||z (64), DSA xi (32)
  size_t ciphertext_bytes;   // KEM
  size_t signature_bytes;    // DSA
  size_t secret_bytes;       // KEM shared secret
  size_t digest_bytes;       // hash; for an XOF the default output length
  bool xof;
  // DSA: the longest context string (FIPS 204 and 205: 255 bytes); 0 elsewhere.
  size_t max_context_bytes;
  // DSA: the size of the μ signed or verified in place of the message (ML-DSA's external μ: 64
  // bytes); 0 where the algorithm offers no such interface.
  size_t external_mu_bytes;
  // Start-up known-answer test, hex. KEM/DSA: the key-generation seed (KEM d||z, DSA xi) and
  // SHA3-256(public key || expanded private key); hash: the digest of "abc".
  // The start-up known-answer test (server/src/selftest.cc): the seed (KEM, DSA) or message (hash)
  // and the expected SHA3-256(public key || private key) or digest. Empty for the SLH-DSA rows
  // that share their code with a row that has one (checked below).
  std::string_view kat_seed_hex;
  std::string_view kat_digest_hex;
};

namespace algorithms_detail {

template <class P>
constexpr AlgorithmFacts Kem(AlgorithmId id, KemAlgorithm v, int api, std::string_view seed,
                             std::string_view digest) {
  return {id,
          Family::kKem,
          P::kName,
          static_cast<uint8_t>(v),
          api,
          P::kEncapsKeyBytes,
          P::kDecapsKeyBytes,
          P::kSeedBytes,
          P::kCiphertextBytes,
          0,
          P::kSharedSecretBytes,
          0,
          false,
          0,
          0,
          seed,
          digest};
}

template <class P>
constexpr AlgorithmFacts Dsa(AlgorithmId id, DsaAlgorithm v, int api, std::string_view seed,
                             std::string_view digest) {
  return {id,
          Family::kDsa,
          P::kName,
          static_cast<uint8_t>(v),
          api,
          P::kPublicKeyBytes,
          P::kPrivateKeyBytes,
          P::kSeedBytes,
          0,
          P::kSignatureBytes,
          0,
          0,
          false,
          P::kMaxContextBytes,
          P::kExternalMuBytes,
          seed,
          digest};
}

constexpr AlgorithmFacts Hash(AlgorithmId id, std::string_view name, HashAlgorithm v, int api,
                              size_t digest_bytes, bool xof, std::string_view digest_of_abc) {
  return {id,
          Family::kHash,
          name,
          static_cast<uint8_t>(v),
          api,
          0,
          0,
          0,
          0,
          0,
          0,
          digest_bytes,
          xof,
          0,
          0,
          "616263",
          digest_of_abc};
}

}  // namespace algorithms_detail

// KEM/DSA vectors: the first ACVP ML-KEM-keyGen / ML-DSA-keyGen case of each parameter set
// (ACVP-Server v1.1.0.43). Hash vectors: the published digests of "abc" (FIPS 180-4 / FIPS 202
// examples, GB/T 32905-2016 example 1).
inline constexpr std::array<AlgorithmFacts, kNumAlgorithms> kAlgorithms = {{
    algorithms_detail::Kem<MlKem512>(
        AlgorithmId::kMlKem512, KemAlgorithm::kMlKem512, 1,
        "47B893474672BA92E4B12EE44FB32953AF8E8503B5FB471D1614FB8A021A660A"
        "1F8CB39E9E30BC458A0DC5408884B1187FB217018DF760FA57317703B844A0A9",
        "87bbb2263246b58f54839db8bd73e1356db3bf9d0e639fe676747290bd76e0f6"),
    algorithms_detail::Kem<MlKem768>(
        AlgorithmId::kMlKem768, KemAlgorithm::kMlKem768, 2,
        "E582B7D75E6C80B05AE392A1FC9F7153B12390FD99930368CC67A768BAEBC8A0"
        "1CDACB8740C0B87C4A379575F187B367CBFA3B300BF591B109F79816E9CBE8F0",
        "ed7108e524c6ccbdb5e4b856351c64691c33c7078f1385b080b64f4507442d70"),
    algorithms_detail::Kem<MlKem1024>(
        AlgorithmId::kMlKem1024, KemAlgorithm::kMlKem1024, 3,
        "F3A706FAF090C03DB506863AB0B20BD8A1627956318E88C67EB875E8E7266009"
        "35D2BC43DD1CC879F765BF2A0C5E297889DDE910E57E2BB0EAE417B90AB7A275",
        "5d2887aec8ea023cec74805e20cf5dac04a9a2a610025f6b1e88642523ff9a5e"),
    algorithms_detail::Dsa<MlDsa44>(
        AlgorithmId::kMlDsa44, DsaAlgorithm::kMlDsa44, 10,
        "7194B13C95231010AFD2C909992BD2003BA6F437C3886BDBE3F6B867A14BA161",
        "4ee0b7984f2abe107bc1460cef1e7e538af697583bbeb76bd2659646c653ddb8"),
    algorithms_detail::Dsa<MlDsa65>(
        AlgorithmId::kMlDsa65, DsaAlgorithm::kMlDsa65, 11,
        "A991FD42B071D49C48AE3E75C647459E0DAAD1E1BA356A04801912D3294BCFF8",
        "6d3c24fabceb657da3936711f675c1770bf0871cb623482b33e463fc92fd9058"),
    algorithms_detail::Dsa<MlDsa87>(
        AlgorithmId::kMlDsa87, DsaAlgorithm::kMlDsa87, 12,
        "A16F5B0796703E2D1A0140A35CBF36EFABE70E752BA59B6A9A0E9C4B05302F73",
        "f28942119ee717e4ddbf8b9acfce35c7c7d7cb875596a58af15e7f654add8ac1"),
    algorithms_detail::Hash(AlgorithmId::kSha3_224, "SHA3-224", HashAlgorithm::kSha3_224, 20, 28,
                            false, "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf"),
    algorithms_detail::Hash(AlgorithmId::kSha3_256, "SHA3-256", HashAlgorithm::kSha3_256, 21, 32,
                            false,
                            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"),
    algorithms_detail::Hash(AlgorithmId::kSha3_384, "SHA3-384", HashAlgorithm::kSha3_384, 22, 48,
                            false,
                            "ec01498288516fc926459f58e2c6ad8df9b473cb0fc08c2596da7cf0e49be4b2"
                            "98d88cea927ac7f539f1edf228376d25"),
    algorithms_detail::Hash(AlgorithmId::kSha3_512, "SHA3-512", HashAlgorithm::kSha3_512, 23, 64,
                            false,
                            "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e"
                            "10e116e9192af3c91a7ec57647e3934057340b4cf408d5a56592f8274eec53f0"),
    algorithms_detail::Hash(AlgorithmId::kShake128, "SHAKE128", HashAlgorithm::kShake128, 24, 32,
                            true,
                            "5881092dd818bf5cf8a3ddb793fbcba74097d5c526a6d35f97b83351940f2cc8"),
    algorithms_detail::Hash(AlgorithmId::kShake256, "SHAKE256", HashAlgorithm::kShake256, 25, 64,
                            true,
                            "483366601360a8771c6863080cc4114d8db44530f8f1e1ee4f94ea37e78b5739"
                            "d5a15bef186a5386c75744c0527e1faa9f8726e462a12a4feb06bd8801e751e4"),
    algorithms_detail::Hash(AlgorithmId::kSm3, "SM3", HashAlgorithm::kSm3, 30, 32, false,
                            "66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0"),
    algorithms_detail::Hash(AlgorithmId::kSha2_224, "SHA2-224", HashAlgorithm::kSha2_224, 43, 28,
                            false, "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"),
    algorithms_detail::Hash(AlgorithmId::kSha2_256, "SHA2-256", HashAlgorithm::kSha2_256, 40, 32,
                            false,
                            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    algorithms_detail::Hash(AlgorithmId::kSha2_384, "SHA2-384", HashAlgorithm::kSha2_384, 41, 48,
                            false,
                            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
                            "8086072ba1e7cc2358baeca134c825a7"),
    algorithms_detail::Hash(AlgorithmId::kSha2_512, "SHA2-512", HashAlgorithm::kSha2_512, 42, 64,
                            false,
                            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"),
    algorithms_detail::Hash(AlgorithmId::kSha2_512_224, "SHA2-512/224",
                            HashAlgorithm::kSha2_512_224, 44, 28, false,
                            "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa"),
    algorithms_detail::Hash(AlgorithmId::kSha2_512_256, "SHA2-512/256",
                            HashAlgorithm::kSha2_512_256, 45, 32, false,
                            "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23"),
    // Hybrid KEM vectors. X-Wing: the key of the first vector of draft-connolly-cfrg-xwing-kem
    // (tests/vectors/xwing/), whose public key tests/kernels/test_hybrid.cc checks. The TLS
    // hybrids have no published vectors: their seeds are the ML-KEM rows' seeds beside curve keys
    // of our choosing, and the digests are regression values of this implementation.
    algorithms_detail::Kem<X25519MlKem768>(
        AlgorithmId::kX25519MlKem768, KemAlgorithm::kX25519MlKem768, 50,
        "E582B7D75E6C80B05AE392A1FC9F7153B12390FD99930368CC67A768BAEBC8A0"
        "1CDACB8740C0B87C4A379575F187B367CBFA3B300BF591B109F79816E9CBE8F0"
        "7F9C2BA4E88F827D616045507605853ED73B8093F6EFBC88EB1A6EACFA66EF26",
        "2efb498f81bfe7822557654912043ca3e6632a3cbcb212475e375ebd2e372932"),
    algorithms_detail::Kem<SecP256r1MlKem768>(
        AlgorithmId::kSecP256r1MlKem768, KemAlgorithm::kSecP256r1MlKem768, 51,
        "7F9C2BA4E88F827D616045507605853ED73B8093F6EFBC88EB1A6EACFA66EF26"
        "E582B7D75E6C80B05AE392A1FC9F7153B12390FD99930368CC67A768BAEBC8A0"
        "1CDACB8740C0B87C4A379575F187B367CBFA3B300BF591B109F79816E9CBE8F0",
        "7cb306165bec632af750a83becdf481f1df1081c784d8bc63553b85786d3fd6e"),
    algorithms_detail::Kem<SecP384r1MlKem1024>(
        AlgorithmId::kSecP384r1MlKem1024, KemAlgorithm::kSecP384r1MlKem1024, 52,
        "7F9C2BA4E88F827D616045507605853ED73B8093F6EFBC88EB1A6EACFA66EF26"
        "BADFD6DFAAC359A5EFBB7BCC4B59D538"
        "F3A706FAF090C03DB506863AB0B20BD8A1627956318E88C67EB875E8E7266009"
        "35D2BC43DD1CC879F765BF2A0C5E297889DDE910E57E2BB0EAE417B90AB7A275",
        "d24e849c7eade62c4423333a77d6d07af2898dafffa2deb4c0ab9e7bd04ea046"),
    algorithms_detail::Kem<XWing>(
        AlgorithmId::kXWing, KemAlgorithm::kXWing, 53,
        "7F9C2BA4E88F827D616045507605853ED73B8093F6EFBC88EB1A6EACFA66EF26",
        "8d15aa9f382de5f8efd187b9064db375b199f69c2657e89ddefe4d4806697192"),
    // SLH-DSA (slhdsa.h): the start-up known-answer test runs on one row per hash code path
    // (SHAKE; SHA-256 only, n = 16; SHA-256 with SHA-512, n = 24 and 32), the 'f' sets; the other
    // rows run the same code with other parameters and are left out of it (an empty seed), as an
    // 's'-set signature takes about a second. The kernel tests run every row on the ACVP vectors.
    // The seeds are 00 01 02 ...; the digests were checked against liboqs 0.16's key generation.
    algorithms_detail::Dsa<SlhDsaSha2_128s>(AlgorithmId::kSlhDsaSha2_128s,
                                            DsaAlgorithm::kSlhDsaSha2_128s, 60, "", ""),
    algorithms_detail::Dsa<SlhDsaSha2_128f>(
        AlgorithmId::kSlhDsaSha2_128f, DsaAlgorithm::kSlhDsaSha2_128f, 61,
        "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"
        "202122232425262728292A2B2C2D2E2F",
        "88f6dc2411727f039a0de890ada317ade81a904a42e1665b5aedaffc41cfdbe1"),
    algorithms_detail::Dsa<SlhDsaSha2_192s>(AlgorithmId::kSlhDsaSha2_192s,
                                            DsaAlgorithm::kSlhDsaSha2_192s, 62, "", ""),
    algorithms_detail::Dsa<SlhDsaSha2_192f>(
        AlgorithmId::kSlhDsaSha2_192f, DsaAlgorithm::kSlhDsaSha2_192f, 63,
        "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"
        "202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F"
        "4041424344454647",
        "0386efe382c045bd2d3afe7ae4c9dc67484a1d39d36fd6cbd8f6dd4d8ccc7a46"),
    algorithms_detail::Dsa<SlhDsaSha2_256s>(AlgorithmId::kSlhDsaSha2_256s,
                                            DsaAlgorithm::kSlhDsaSha2_256s, 64, "", ""),
    algorithms_detail::Dsa<SlhDsaSha2_256f>(AlgorithmId::kSlhDsaSha2_256f,
                                            DsaAlgorithm::kSlhDsaSha2_256f, 65, "", ""),
    algorithms_detail::Dsa<SlhDsaShake128s>(AlgorithmId::kSlhDsaShake128s,
                                            DsaAlgorithm::kSlhDsaShake128s, 66, "", ""),
    algorithms_detail::Dsa<SlhDsaShake128f>(
        AlgorithmId::kSlhDsaShake128f, DsaAlgorithm::kSlhDsaShake128f, 67,
        "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"
        "202122232425262728292A2B2C2D2E2F",
        "e884720280e86d01899100df816a601b4a23cf785ffdc772f43fb9f86d9a52eb"),
    algorithms_detail::Dsa<SlhDsaShake192s>(AlgorithmId::kSlhDsaShake192s,
                                            DsaAlgorithm::kSlhDsaShake192s, 68, "", ""),
    algorithms_detail::Dsa<SlhDsaShake192f>(AlgorithmId::kSlhDsaShake192f,
                                            DsaAlgorithm::kSlhDsaShake192f, 69, "", ""),
    algorithms_detail::Dsa<SlhDsaShake256s>(AlgorithmId::kSlhDsaShake256s,
                                            DsaAlgorithm::kSlhDsaShake256s, 70, "", ""),
    algorithms_detail::Dsa<SlhDsaShake256f>(AlgorithmId::kSlhDsaShake256f,
                                            DsaAlgorithm::kSlhDsaShake256f, 71, "", ""),
}};

constexpr const AlgorithmFacts& Facts(AlgorithmId id) {
  return kAlgorithms[static_cast<size_t>(id)];
}

namespace algorithms_detail {
constexpr bool TableIsConsistent() {
  for (size_t i = 0; i < kNumAlgorithms; ++i) {
    const AlgorithmFacts& f = kAlgorithms[i];
    if (static_cast<size_t>(f.id) != i || f.name.empty() || f.api_value <= 0) return false;
    for (size_t j = 0; j < i; ++j) {
      if (kAlgorithms[j].api_value == f.api_value || kAlgorithms[j].name == f.name) return false;
      // Within a family the kernel enum values are distinct too.
      if (kAlgorithms[j].family == f.family && kAlgorithms[j].family_value == f.family_value) {
        return false;
      }
    }
    if (f.family == Family::kHash && f.family_value >= kNumHashAlgorithms) return false;
  }
  return true;
}
}  // namespace algorithms_detail
static_assert(algorithms_detail::TableIsConsistent(),
              "kAlgorithms: ids in order, names, API numbers and family values distinct");

namespace algorithms_detail {
// Every row has a start-up KAT except SLH-DSA rows, and SLH-DSA has one for each of its three hash
// code paths: SHAKE, SHA2 with n = 16 (SHA-256 only), SHA2 with n = 24 / 32 (SHA-512 too).
constexpr bool EveryCodePathHasAKat() {
  for (const AlgorithmFacts& f : kAlgorithms) {
    const bool slh = f.name.substr(0, 8) == "SLH-DSA-";
    if (f.kat_seed_hex.empty() != f.kat_digest_hex.empty()) return false;
    if (!slh && f.kat_seed_hex.empty()) return false;
  }
  return !Facts(AlgorithmId::kSlhDsaShake128f).kat_seed_hex.empty() &&
         !Facts(AlgorithmId::kSlhDsaSha2_128f).kat_seed_hex.empty() &&
         !Facts(AlgorithmId::kSlhDsaSha2_192f).kat_seed_hex.empty();
}
}  // namespace algorithms_detail
static_assert(algorithms_detail::EveryCodePathHasAKat(),
              "a start-up KAT for every row, SLH-DSA: one per hash code path");

// The registry id of a family's kernel enum value.
// The KEM rows are in two runs (ML-KEM, then the hybrids after every other row): a search.
constexpr AlgorithmId IdOf(KemAlgorithm a) {
  for (const AlgorithmFacts& f : kAlgorithms) {
    if (f.family == Family::kKem && f.family_value == static_cast<uint8_t>(a)) return f.id;
  }
  return AlgorithmId::kMlKem512;  // unreachable for a valid KemAlgorithm (checked below)
}
// The DSA rows are in two runs too (ML-DSA, then SLH-DSA after the hybrids).
constexpr AlgorithmId IdOf(DsaAlgorithm a) {
  for (const AlgorithmFacts& f : kAlgorithms) {
    if (f.family == Family::kDsa && f.family_value == static_cast<uint8_t>(a)) return f.id;
  }
  return AlgorithmId::kMlDsa44;  // unreachable for a valid DsaAlgorithm (checked below)
}
// The hash rows are in HashAlgorithm order (checked below): an index, not a search.
constexpr AlgorithmId IdOf(HashAlgorithm a) {
  return static_cast<AlgorithmId>(static_cast<uint8_t>(AlgorithmId::kSha3_224) +
                                  static_cast<uint8_t>(a));
}
constexpr KemAlgorithm AsKem(AlgorithmId id) {
  return static_cast<KemAlgorithm>(Facts(id).family_value);
}
constexpr DsaAlgorithm AsDsa(AlgorithmId id) {
  return static_cast<DsaAlgorithm>(Facts(id).family_value);
}
constexpr HashAlgorithm AsHash(AlgorithmId id) {
  return static_cast<HashAlgorithm>(Facts(id).family_value);
}
static_assert(AsKem(IdOf(KemAlgorithm::kMlKem1024)) == KemAlgorithm::kMlKem1024 &&
              Facts(IdOf(KemAlgorithm::kMlKem1024)).family == Family::kKem);
static_assert(AsKem(IdOf(KemAlgorithm::kXWing)) == KemAlgorithm::kXWing &&
              IdOf(KemAlgorithm::kXWing) == AlgorithmId::kXWing);
static_assert(AsDsa(IdOf(DsaAlgorithm::kMlDsa87)) == DsaAlgorithm::kMlDsa87 &&
              Facts(IdOf(DsaAlgorithm::kMlDsa87)).family == Family::kDsa);
static_assert(IdOf(DsaAlgorithm::kSlhDsaShake256f) == AlgorithmId::kSlhDsaShake256f &&
              Facts(AlgorithmId::kSlhDsaSha2_128f).signature_bytes == 17088);
namespace algorithms_detail {
constexpr bool FamilyRowsInEnumOrder() {
  for (const AlgorithmFacts& f : kAlgorithms) {
    const bool ok =
        f.family == Family::kKem   ? IdOf(static_cast<KemAlgorithm>(f.family_value)) == f.id
        : f.family == Family::kDsa ? IdOf(static_cast<DsaAlgorithm>(f.family_value)) == f.id
                                   : IdOf(static_cast<HashAlgorithm>(f.family_value)) == f.id;
    if (!ok) return false;
  }
  return true;
}
}  // namespace algorithms_detail
static_assert(algorithms_detail::FamilyRowsInEnumOrder(),
              "each row's family value maps back to the row (IdOf)");

// nullptr for an unknown pqc.v1.Algorithm number (including 0, unspecified).
constexpr const AlgorithmFacts* FindByApiValue(int api_value) {
  for (const AlgorithmFacts& f : kAlgorithms) {
    if (f.api_value == api_value) return &f;
  }
  return nullptr;
}

namespace algorithms_detail {
// Upper case without '-', '_', ' ' and '/'; "SHA2" followed by more than three characters loses
// its '2' ("SHA2-256" and "SHA256" both become "SHA256", "SHA2-512/224" becomes "SHA512224").
inline std::string NormalizedName(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ' || c == '/') continue;
    out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
  }
  if (out.size() >= 7 && out.compare(0, 4, "SHA2") == 0) out.erase(3, 1);
  return out;
}
}  // namespace algorithms_detail

// Accepts the one name and its common spellings: case-insensitive, '-', '_', ' ' and '/' ignored,
// "SHA256" for "SHA2-256", "SHAKE-128" (ACVP's spelling) for "SHAKE128", "mlkem768".
inline std::optional<AlgorithmId> ParseAlgorithmName(std::string_view name) {
  const std::string wanted = algorithms_detail::NormalizedName(name);
  for (const AlgorithmFacts& f : kAlgorithms) {
    if (algorithms_detail::NormalizedName(f.name) == wanted) return f.id;
  }
  return std::nullopt;
}

// ---- HashML-DSA pre-hash functions (FIPS 204 §5.4) --------------------------------------------
// kernels::PreHash (mldsa.h) and pqc.v1.PreHash have the same numbers; each names a hash of the
// table above, whose name is the pre-hash's name.
struct PreHashFacts {
  PreHash prehash;
  AlgorithmId hash;
  // The last byte of the hash function's DER-encoded OID (2.16.840.1.101.3.4.2.x), which
  // HashML-DSA puts in M'.
  uint8_t oid_last_byte;
};
inline constexpr std::array<PreHashFacts, 12> kPreHashes = {{
    {PreHash::kSha2_224, AlgorithmId::kSha2_224, 0x04},
    {PreHash::kSha2_256, AlgorithmId::kSha2_256, 0x01},
    {PreHash::kSha2_384, AlgorithmId::kSha2_384, 0x02},
    {PreHash::kSha2_512, AlgorithmId::kSha2_512, 0x03},
    {PreHash::kSha2_512_224, AlgorithmId::kSha2_512_224, 0x05},
    {PreHash::kSha2_512_256, AlgorithmId::kSha2_512_256, 0x06},
    {PreHash::kSha3_224, AlgorithmId::kSha3_224, 0x07},
    {PreHash::kSha3_256, AlgorithmId::kSha3_256, 0x08},
    {PreHash::kSha3_384, AlgorithmId::kSha3_384, 0x09},
    {PreHash::kSha3_512, AlgorithmId::kSha3_512, 0x0a},
    {PreHash::kShake128, AlgorithmId::kShake128, 0x0b},  // 32-byte output
    {PreHash::kShake256, AlgorithmId::kShake256, 0x0c},  // 64-byte output
}};
inline constexpr int kMaxPreHashValue = 12;  // PreHash::kShake256

// nullptr for PreHash::kNone and out-of-range values.
constexpr const PreHashFacts* FindPreHash(PreHash ph) {
  for (const PreHashFacts& p : kPreHashes) {
    if (p.prehash == ph) return &p;
  }
  return nullptr;
}
namespace algorithms_detail {
constexpr bool PreHashesAreConsistent() {
  for (size_t i = 0; i < kPreHashes.size(); ++i) {
    if (static_cast<int>(kPreHashes[i].prehash) != static_cast<int>(i) + 1) return false;
    if (Facts(kPreHashes[i].hash).family != Family::kHash) return false;
  }
  return static_cast<int>(kPreHashes.back().prehash) == kMaxPreHashValue;
}
}  // namespace algorithms_detail
static_assert(algorithms_detail::PreHashesAreConsistent(),
              "kPreHashes: in PreHash order, 1..kMaxPreHashValue, each naming a hash");

// The name of a pre-hash is its hash function's ("SHA2-256", "SHAKE128"); "none" for kNone.
inline std::string_view PreHashName(PreHash ph) {
  if (ph == PreHash::kNone) return "none";
  const PreHashFacts* p = FindPreHash(ph);
  return p != nullptr ? Facts(p->hash).name : "unknown";
}

// Any spelling ParseAlgorithmName accepts for a pre-hash's hash ("SHA-256", "SHAKE-128"); "none"
// or "" for kNone. SM3 is not a HashML-DSA pre-hash.
inline std::optional<PreHash> ParsePreHashName(std::string_view name) {
  if (name.empty() || name == "none" || name == "NONE") return PreHash::kNone;
  const std::optional<AlgorithmId> id = ParseAlgorithmName(name);
  if (!id) return std::nullopt;
  for (const PreHashFacts& p : kPreHashes) {
    if (p.hash == *id) return p.prehash;
  }
  return std::nullopt;
}

}  // namespace pqcd::kernels
