// The function tables of the registry: one row per algorithm of kAlgorithms.
#include "pqcd/kernels/registry.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

namespace pqcd::kernels {
namespace {

template <int K>
constexpr KemFunctions kKem = {&MlKem<K>::CheckEncapsKey, &MlKem<K>::CheckDecapsKey,
                               &MlKem<K>::KeyGenBatch,    &MlKem<K>::EncapsBatch,
                               &MlKem<K>::DecapsBatch,    &MlKem<K>::CheckExpandedPrivateKey};

template <class H>
constexpr KemFunctions kHybrid = {&H::CheckEncapsKey, &H::CheckDecapsKey,
                                  &H::KeyGenBatch,    &H::EncapsBatch,
                                  &H::DecapsBatch,    &H::CheckExpandedPrivateKey};

template <int K, int L>
constexpr DsaFunctions kDsa = {&MlDsa<K, L>::KeyGenBatch, &MlDsa<K, L>::SignBatch,
                               &MlDsa<K, L>::VerifyBatch, &MlDsa<K, L>::PairwiseCheck,
                               &MlDsa<K, L>::CheckExpandedPrivateKey};

// The public half of a private key of `Alg` (MlKem<K> or MlDsa<K, L>): key generation of a seed
// (a batch of one: the one key-generation path), or the consistency check of an expanded key,
// which yields the public key.
template <AlgorithmId kId, class Alg, class KeyGenItem>
absl::Status PublicKeyOf(Bytes sk, MutBytes pk) {
  constexpr bool kKemAlg = std::is_same_v<KeyGenItem, KemKeyGenItem>;
  constexpr size_t kPk = Facts(kId).public_key_bytes;
  constexpr size_t kSk = Facts(kId).private_key_bytes;
  if (pk.size() != kPk) {
    return absl::InvalidArgumentError(std::string(Alg::kName) + " public key buffer: expected " +
                                      std::to_string(kPk) + " bytes, got " +
                                      std::to_string(pk.size()));
  }
  if (sk.size() == Alg::kSeedBytes) {
    uint8_t expanded[kSk];
    ZeroOnExit wipe(expanded);
    KeyGenItem item{sk, pk, MutBytes(expanded, kSk), {}, {}};
    Alg::KeyGenBatch(std::span(&item, 1), OsRandom());
    return item.status;
  }
  if (sk.size() != kSk) {
    return absl::InvalidArgumentError(std::string(Alg::kName) + " private_key: expected " +
                                      std::to_string(Alg::kSeedBytes) + " (seed) or " +
                                      std::to_string(kSk) + " (expanded) bytes, got " +
                                      std::to_string(sk.size()));
  }
  if constexpr (kKemAlg) {
    if (absl::Status s = Alg::CheckExpandedPrivateKey(sk); !s.ok()) return s;
    // dk = dk_PKE (384 k bytes) || ek || H(ek) || z (FIPS 203 Alg. 16).
    const Bytes ek = sk.subspan(kSk - kPk - 64, kPk);
    std::copy(ek.begin(), ek.end(), pk.begin());
    return absl::OkStatus();
  } else {
    return Alg::CheckExpandedPrivateKey(sk, {}, pk);
  }
}

// The prepared form of a KEM private key (MlKem<K> or a hybrid): the expanded key, made by key
// generation from a seed or taken from an expanded key that passes the complete check.
template <class Alg>
absl::Status PrepareKemKey(Bytes sk, MutBytes prepared) {
  if (prepared.size() != Alg::kDecapsKeyBytes) {
    return absl::InvalidArgumentError(
        std::string(Alg::kName) + " prepared private key buffer: expected " +
        std::to_string(Alg::kDecapsKeyBytes) + " bytes, got " + std::to_string(prepared.size()));
  }
  if (absl::Status s = Alg::CheckDecapsKey(sk); !s.ok()) return s;  // the sizes of both forms
  if (sk.size() == Alg::kSeedBytes) {
    uint8_t ek[Alg::kEncapsKeyBytes];  // public, discarded
    KemKeyGenItem item{sk, MutBytes(ek, sizeof(ek)), prepared, {}, {}};
    Alg::KeyGenBatch(std::span(&item, 1), OsRandom());  // a seed is given: nothing is drawn
    if (!item.status.ok()) SecureZero(prepared.data(), prepared.size());
    return item.status;
  }
  if (absl::Status s = Alg::CheckExpandedPrivateKey(sk); !s.ok()) return s;
  std::copy(sk.begin(), sk.end(), prepared.begin());
  return absl::OkStatus();
}

// The functions of one row; one case per KEM or DSA parameter set, none for a hash.
struct RowFunctions {
  const KemFunctions* kem = nullptr;
  const DsaFunctions* dsa = nullptr;
  absl::Status (*public_key_of)(Bytes, MutBytes) = nullptr;
  size_t prepared_bytes = 0;
  absl::Status (*prepare)(Bytes, MutBytes) = nullptr;
};
template <AlgorithmId kId, int K>
constexpr RowFunctions Kem() {
  return {&kKem<K>, nullptr, &PublicKeyOf<kId, MlKem<K>, KemKeyGenItem>, MlKem<K>::kDecapsKeyBytes,
          &PrepareKemKey<MlKem<K>>};
}
template <class H>
constexpr RowFunctions Hybrid() {
  return {&kHybrid<H>, nullptr, &H::PublicKeyOf, H::kDecapsKeyBytes, &PrepareKemKey<H>};
}
template <class S>
constexpr DsaFunctions kSlhDsa = {&S::KeyGenBatch, &S::SignBatch, &S::VerifyBatch,
                                  &S::PairwiseCheck, &S::CheckExpandedPrivateKey};
// SLH-DSA: its own PublicKeyOf (the 4n-byte key ends with the public key; a seed takes one key
// generation) and prepared form (slhdsa.h).
template <class S>
constexpr RowFunctions SlhDsaRow() {
  return {nullptr, &kSlhDsa<S>, &S::PublicKeyOf, S::kPreparedBytes, &S::PreparePrivateKey};
}
template <AlgorithmId kId, int K, int L>
constexpr RowFunctions Dsa() {
  return {nullptr, &kDsa<K, L>, &PublicKeyOf<kId, MlDsa<K, L>, DsaKeyGenItem>,
          MlDsa<K, L>::kPreparedBytes, &MlDsa<K, L>::PreparePrivateKey};
}
constexpr RowFunctions FunctionsOf(AlgorithmId id) {
  switch (id) {
    case AlgorithmId::kMlKem512:
      return Kem<AlgorithmId::kMlKem512, 2>();
    case AlgorithmId::kMlKem768:
      return Kem<AlgorithmId::kMlKem768, 3>();
    case AlgorithmId::kMlKem1024:
      return Kem<AlgorithmId::kMlKem1024, 4>();
    case AlgorithmId::kX25519MlKem768:
      return Hybrid<X25519MlKem768>();
    case AlgorithmId::kSecP256r1MlKem768:
      return Hybrid<SecP256r1MlKem768>();
    case AlgorithmId::kSecP384r1MlKem1024:
      return Hybrid<SecP384r1MlKem1024>();
    case AlgorithmId::kXWing:
      return Hybrid<XWing>();
    case AlgorithmId::kMlDsa44:
      return Dsa<AlgorithmId::kMlDsa44, 4, 4>();
    case AlgorithmId::kMlDsa65:
      return Dsa<AlgorithmId::kMlDsa65, 6, 5>();
    case AlgorithmId::kMlDsa87:
      return Dsa<AlgorithmId::kMlDsa87, 8, 7>();
    case AlgorithmId::kSlhDsaSha2_128s:
      return SlhDsaRow<SlhDsaSha2_128s>();
    case AlgorithmId::kSlhDsaSha2_128f:
      return SlhDsaRow<SlhDsaSha2_128f>();
    case AlgorithmId::kSlhDsaSha2_192s:
      return SlhDsaRow<SlhDsaSha2_192s>();
    case AlgorithmId::kSlhDsaSha2_192f:
      return SlhDsaRow<SlhDsaSha2_192f>();
    case AlgorithmId::kSlhDsaSha2_256s:
      return SlhDsaRow<SlhDsaSha2_256s>();
    case AlgorithmId::kSlhDsaSha2_256f:
      return SlhDsaRow<SlhDsaSha2_256f>();
    case AlgorithmId::kSlhDsaShake128s:
      return SlhDsaRow<SlhDsaShake128s>();
    case AlgorithmId::kSlhDsaShake128f:
      return SlhDsaRow<SlhDsaShake128f>();
    case AlgorithmId::kSlhDsaShake192s:
      return SlhDsaRow<SlhDsaShake192s>();
    case AlgorithmId::kSlhDsaShake192f:
      return SlhDsaRow<SlhDsaShake192f>();
    case AlgorithmId::kSlhDsaShake256s:
      return SlhDsaRow<SlhDsaShake256s>();
    case AlgorithmId::kSlhDsaShake256f:
      return SlhDsaRow<SlhDsaShake256f>();
    default:
      return {};
  }
}

constexpr std::array<AlgorithmDescriptor, kNumAlgorithms> MakeRegistry() {
  std::array<AlgorithmDescriptor, kNumAlgorithms> out{};
  for (size_t i = 0; i < kNumAlgorithms; ++i) {
    const AlgorithmFacts& f = kAlgorithms[i];
    const RowFunctions fn = FunctionsOf(f.id);
    out[i] =
        AlgorithmDescriptor{&f, fn.kem, fn.dsa, fn.public_key_of, fn.prepared_bytes, fn.prepare};
  }
  return out;
}

constexpr std::array<AlgorithmDescriptor, kNumAlgorithms> kRegistry = MakeRegistry();

// Every KEM and DSA row has its function tables: checked by tests/kernels/test_kernels_registry.cc
// (a static_assert on the addresses is not a constant expression under -fsanitize=undefined).

}  // namespace

std::span<const AlgorithmDescriptor> Registry() {
  return kRegistry;
}

const AlgorithmDescriptor& Describe(AlgorithmId id) {
  return kRegistry[static_cast<size_t>(id)];
}

absl::Status SeedMatchesExpanded(const AlgorithmDescriptor& d, Bytes seed, Bytes expanded) {
  const AlgorithmFacts& f = *d.facts;
  if (seed.size() != f.seed_bytes || expanded.size() != f.private_key_bytes ||
      (d.kem == nullptr && d.dsa == nullptr)) {
    return absl::InvalidArgumentError(std::string(f.name) + ": expected a " +
                                      std::to_string(f.seed_bytes) + "-byte seed and a " +
                                      std::to_string(f.private_key_bytes) + "-byte expanded key");
  }
  std::vector<uint8_t> pk(f.public_key_bytes);
  std::vector<uint8_t> sk(f.private_key_bytes);
  absl::Status status;
  if (d.kem != nullptr) {
    KemKeyGenItem item{seed, pk, MutBytes(sk.data(), sk.size()), {}, {}};
    d.kem->keygen_batch(std::span(&item, 1), OsRandom());  // a seed is given: nothing is drawn
    status = std::move(item.status);
  } else {
    DsaKeyGenItem item{seed, pk, MutBytes(sk.data(), sk.size()), {}, {}};
    d.dsa->keygen_batch(std::span(&item, 1), OsRandom());
    status = std::move(item.status);
  }
  uint8_t diff = 0;
  for (size_t i = 0; i < sk.size(); ++i) diff |= sk[i] ^ expanded[i];
  SecureZero(sk.data(), sk.size());
  if (!status.ok()) return status;
  if (diff != 0) {
    return absl::InvalidArgumentError("the seed and expanded key do not match (" +
                                      std::string(f.name) + ")");
  }
  return absl::OkStatus();
}

absl::Status CheckExpandedPrivateKey(KemAlgorithm alg, Bytes dk, Bytes ek) {
  return Describe(IdOf(alg)).kem->check_expanded_dk(dk, ek);
}

absl::Status CheckExpandedPrivateKey(DsaAlgorithm alg, Bytes sk, Bytes pk, MutBytes pk_out) {
  return Describe(IdOf(alg)).dsa->check_expanded_sk(sk, pk, pk_out);
}

}  // namespace pqcd::kernels
