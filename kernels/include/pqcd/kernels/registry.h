// The algorithm registry: for each row of kAlgorithms (algorithms.h), the functions that run it.
// The engine executes through these tables, the server validates with the facts and generates
// keys through the engine, the start-up self-test runs every row's known-answer vector.
#pragma once

#include <span>

#include "absl/status/status.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/hybrid.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/slhdsa.h"

namespace pqcd::kernels {

// One KEM: an ML-KEM parameter set or a hybrid (hybrid.h). Single operations are batches of one
// (MlKem<K>::KeyGen etc. are conveniences over the same code); the batch entry points share Keccak
// lanes across items.
struct KemFunctions {
  absl::Status (*check_ek)(Bytes ek);  // FIPS 203 §7.2
  absl::Status (*check_dk)(Bytes dk);  // FIPS 203 §7.3 (a 64-byte seed is always well formed)
  void (*keygen_batch)(std::span<KemKeyGenItem>, RandomSource&);
  void (*encaps_batch)(std::span<KemEncapsItem>, RandomSource&);
  void (*decaps_batch)(std::span<KemDecapsItem>);
  // The complete consistency check of an expanded dk (MlKem<K>::CheckExpandedPrivateKey).
  absl::Status (*check_expanded_dk)(Bytes dk, Bytes ek);
};

// One ML-DSA parameter set.
struct DsaFunctions {
  void (*keygen_batch)(std::span<DsaKeyGenItem>, RandomSource&);
  void (*sign_batch)(std::span<DsaSignItem>, RandomSource&);
  void (*verify_batch)(std::span<DsaVerifyItem>);
  absl::Status (*pairwise_check)(Bytes pk, Bytes sk);
  // The complete consistency check of an expanded sk; pk_out (optional) gets the public key.
  absl::Status (*check_expanded_sk)(Bytes sk, Bytes pk, MutBytes pk_out);
};

struct AlgorithmDescriptor {
  const AlgorithmFacts* facts;
  const KemFunctions* kem;  // family kKem
  const DsaFunctions* dsa;  // family kDsa
  // KEM and DSA: the public key of a private key in either form (facts->seed_bytes or
  // facts->private_key_bytes). A seed is expanded by key generation; an expanded key must pass
  // the complete consistency check first (CheckExpandedPrivateKey), so that the public key
  // returned is the one the private key was made with. Sizes are checked; errors name the field.
  absl::Status (*public_key_of)(Bytes private_key, MutBytes public_key);
  // KEM and DSA: the form a held private key is computed with, made once when a key version
  // enters memory (the server's key store): prepared_private_key_bytes bytes that a
  // KemDecapsItem / DsaSignItem with prepared = true takes as its key, with no expansion and no
  // check per use (ML-KEM and the hybrids: the expanded key, its checks done; ML-DSA:
  // MlDsa<K, L>::PreparePrivateKey). private_key in either form; an expanded one must pass the
  // complete consistency check. The output is secret: the caller keeps it locked and wipes it.
  size_t prepared_private_key_bytes;
  absl::Status (*prepare_private_key)(Bytes private_key, MutBytes prepared);
  // Family kHash: Hasher / HashBatch (hash.h) with AsHash(facts->id).

  AlgorithmId id() const { return facts->id; }
  Family family() const { return facts->family; }
  std::string_view name() const { return facts->name; }
};

// The complete consistency check of an expanded private key of a parameter set (the
// CheckExpandedPrivateKey of its class).
absl::Status CheckExpandedPrivateKey(KemAlgorithm alg, Bytes dk, Bytes ek = {});
absl::Status CheckExpandedPrivateKey(DsaAlgorithm alg, Bytes sk, Bytes pk = {},
                                     MutBytes pk_out = {});

// KEM and DSA: whether `expanded` is the expanded private key that key generation makes from
// `seed` (a PKCS#8 key may carry both forms). The seed is expanded here (the one key-generation
// path) and the keys are compared in constant time; a mismatch is InvalidArgument, as are wrong
// sizes. Secret intermediate values are wiped.
absl::Status SeedMatchesExpanded(const AlgorithmDescriptor& d, Bytes seed, Bytes expanded);

// Every algorithm, in id order.
std::span<const AlgorithmDescriptor> Registry();
const AlgorithmDescriptor& Describe(AlgorithmId id);

}  // namespace pqcd::kernels
