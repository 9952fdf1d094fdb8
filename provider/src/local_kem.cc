#include "local_kem.h"

#include <openssl/crypto.h>

#include "absl/strings/str_cat.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/registry.h"

namespace pqcd::provider::local {
namespace {

// The registry's row of a client algorithm (the same pqc.v1.Algorithm number), or an error.
absl::StatusOr<const kernels::AlgorithmDescriptor*> Row(client::Algorithm algorithm) {
  const kernels::AlgorithmFacts* f = kernels::FindByApiValue(static_cast<int>(algorithm));
  if (f == nullptr || f->family != kernels::Family::kKem) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a KEM: algorithm ", static_cast<int>(algorithm)));
  }
  return &kernels::Describe(f->id);
}

kernels::MutBytes Mut(std::string& s) {
  return {reinterpret_cast<uint8_t*>(s.data()), s.size()};
}
kernels::Bytes View(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

absl::StatusOr<client::KeyPair> KeyGen(client::Algorithm algorithm) {
  absl::StatusOr<const kernels::AlgorithmDescriptor*> d = Row(algorithm);
  if (!d.ok()) {
    return d.status();
  }
  const kernels::AlgorithmFacts& f = *(*d)->facts;
  client::KeyPair k;
  k.algorithm = algorithm;
  k.public_key.resize(f.public_key_bytes);
  k.private_key.resize(f.private_key_bytes);
  kernels::KemKeyGenItem item;
  item.ek = Mut(k.public_key);
  item.dk = Mut(k.private_key);
  (*d)->kem->keygen_batch({&item, 1}, kernels::OsRandom());
  if (!item.status.ok()) {
    OPENSSL_cleanse(k.private_key.data(), k.private_key.size());
    return item.status;
  }
  return k;
}

absl::StatusOr<client::EncapsResult> Encaps(client::Algorithm algorithm,
                                            const std::string& public_key) {
  absl::StatusOr<const kernels::AlgorithmDescriptor*> d = Row(algorithm);
  if (!d.ok()) {
    return d.status();
  }
  const kernels::AlgorithmFacts& f = *(*d)->facts;
  client::EncapsResult r;
  r.ciphertext.resize(f.ciphertext_bytes);
  r.shared_secret.resize(f.secret_bytes);
  kernels::KemEncapsItem item;
  item.ek = View(public_key);
  item.ct = Mut(r.ciphertext);
  item.ss = Mut(r.shared_secret);
  (*d)->kem->encaps_batch({&item, 1}, kernels::OsRandom());  // checks the key (length included)
  if (!item.status.ok()) {
    OPENSSL_cleanse(r.shared_secret.data(), r.shared_secret.size());
    return item.status;
  }
  return r;
}

absl::StatusOr<client::DecapsResult> Decaps(client::Algorithm algorithm,
                                            const std::string& private_key,
                                            const std::string& ciphertext) {
  absl::StatusOr<const kernels::AlgorithmDescriptor*> d = Row(algorithm);
  if (!d.ok()) {
    return d.status();
  }
  const kernels::AlgorithmFacts& f = *(*d)->facts;
  client::DecapsResult r;
  r.shared_secret.resize(f.secret_bytes);
  kernels::KemDecapsItem item;
  item.dk = View(private_key);
  item.ct = View(ciphertext);
  item.ss = Mut(r.shared_secret);
  (*d)->kem->decaps_batch({&item, 1});  // checks the lengths
  if (!item.status.ok()) {
    OPENSSL_cleanse(r.shared_secret.data(), r.shared_secret.size());
    return item.status;
  }
  return r;
}

}  // namespace pqcd::provider::local
