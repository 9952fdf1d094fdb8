// Hybrid KEMs: ML-KEM combined with an elliptic-curve Diffie-Hellman, each one row of the
// algorithm registry in the KEM family (same items, same operations as ML-KEM).
//
//   X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024   draft-ietf-tls-ecdhe-mlkem: the TLS 1.3
//       key shares. Every part is the concatenation of the two components in the draft's order:
//       ML-KEM first for X25519MLKEM768, the curve first for the two NIST curves. The client's
//       share is the encapsulation key ek, the server's share is the ciphertext ct, the shared
//       secret is the two secrets concatenated (64 or 80 bytes, no hashing: TLS's key schedule
//       does that).
//   X-Wing   draft-connolly-cfrg-xwing-kem: a 32-byte private seed expanded with SHAKE256, and the
//       SHA3-256 combiner; a 32-byte shared secret.
//
// The curves come from OpenSSL (X25519 through EVP, P-256/P-384 through its EC_POINT arithmetic);
// nothing of them is written here. ML-KEM is our own, and the ML-KEM halves of a batch go through
// MlKem<K>'s batch entry points together, so they keep sharing Keccak lanes.
//
// Private keys of the TLS hybrids are pqcd's own layout (TLS keeps them ephemeral and the draft
// defines none), again in the draft's order of components:
//   seed form      ML-KEM seed d||z (64) and the curve's private key (X25519: 32 raw bytes;
//                  P-256/P-384: the scalar, big-endian, 32/48 bytes, in [1, n-1])
//   expanded form  ML-KEM dk (FIPS 203) and the same curve private key; X25519MLKEM768 then
//                  also its X25519 public key (2464 bytes), as X-Wing's expanded form below
// X-Wing's private key is its 32-byte seed; pqcd also accepts its expansion (what the draft calls
// "keeping the expanded decapsulation key around", §5.5.1) as dk_M || sk_X || pk_X (2464 bytes),
// which saves the key generation on every Decaps.
//
// The derandomized encapsulation input (KemEncapsItem::m, for tests) is, in the same order, the
// ML-KEM message m (32) and the ephemeral curve private key (32 / 32 / 48); X-Wing's is its
// 64-byte eseed.
//
// Refused with INVALID_ARGUMENT: a peer point not on the curve or not in uncompressed form
// (NIST curves), a low-order X25519 public key in an encapsulation key (TLS hybrids; the check of
// CheckEncapsKey, before any computation), and an all-zero X25519 result
// (draft-ietf-tls-ecdhe-mlkem requires the check; OpenSSL's X25519 refuses it anyway, so X-Wing
// refuses it too).
#pragma once

#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/random.h"

namespace pqcd::kernels {

enum class Curve : uint8_t { kX25519, kP256, kP384 };

// The shape of one hybrid.
struct X25519MlKem768Spec {
  static constexpr std::string_view kName = "X25519MLKEM768";
  static constexpr int kK = 3;
  static constexpr Curve kCurve = Curve::kX25519;
  static constexpr bool kMlKemFirst = true;
  static constexpr bool kXWing = false;
};
struct SecP256r1MlKem768Spec {
  static constexpr std::string_view kName = "SecP256r1MLKEM768";
  static constexpr int kK = 3;
  static constexpr Curve kCurve = Curve::kP256;
  static constexpr bool kMlKemFirst = false;
  static constexpr bool kXWing = false;
};
struct SecP384r1MlKem1024Spec {
  static constexpr std::string_view kName = "SecP384r1MLKEM1024";
  static constexpr int kK = 4;
  static constexpr Curve kCurve = Curve::kP384;
  static constexpr bool kMlKemFirst = false;
  static constexpr bool kXWing = false;
};
struct XWingSpec {
  static constexpr std::string_view kName = "X-Wing";
  static constexpr int kK = 3;
  static constexpr Curve kCurve = Curve::kX25519;
  static constexpr bool kMlKemFirst = true;
  static constexpr bool kXWing = true;
};

// Sizes of a curve's parts: private key (scalar), public key / ciphertext (point), shared secret.
constexpr size_t CurvePrivateBytes(Curve c) {
  return c == Curve::kP384 ? 48 : 32;
}
constexpr size_t CurvePointBytes(Curve c) {
  return c == Curve::kX25519 ? 32 : c == Curve::kP256 ? 65 : 97;
}
constexpr size_t CurveSecretBytes(Curve c) {
  return c == Curve::kP384 ? 48 : 32;
}

template <class Spec>
class HybridKem {
 public:
  using Ml = MlKem<Spec::kK>;
  static constexpr std::string_view kName = Spec::kName;
  static constexpr Curve kCurve = Spec::kCurve;
  static constexpr size_t kCurvePrivate = CurvePrivateBytes(kCurve);
  static constexpr size_t kCurvePoint = CurvePointBytes(kCurve);
  static constexpr size_t kCurveSecret = CurveSecretBytes(kCurve);

  static constexpr size_t kEncapsKeyBytes = Ml::kEncapsKeyBytes + kCurvePoint;
  static constexpr size_t kCiphertextBytes = Ml::kCiphertextBytes + kCurvePoint;
  static constexpr size_t kSeedBytes = Spec::kXWing ? 32 : Ml::kSeedBytes + kCurvePrivate;
  // The X25519 hybrids keep the X25519 public key at the end of the expanded private key: X-Wing's
  // combiner needs it, and OpenSSL computes it (a scalar multiplication) on every Decaps unless it
  // is given (the NIST-curve ECDH needs no public key).
  static constexpr bool kKeepsCurvePublic = kCurve == Curve::kX25519;
  static constexpr size_t kDecapsKeyBytes =
      Ml::kDecapsKeyBytes + kCurvePrivate + (kKeepsCurvePublic ? kCurvePoint : 0);
  static constexpr size_t kSharedSecretBytes =
      Spec::kXWing ? 32 : Ml::kSharedSecretBytes + kCurveSecret;
  static constexpr size_t kEncapsRandomBytes = Ml::kEncapsRandomBytes + kCurvePrivate;

  // Length and the checks of both components: FIPS 203 §7.2 on the ML-KEM key, the point decoded
  // and on the curve (NIST curves), an X25519 key not of low order (X-Wing: any 32 bytes).
  static absl::Status CheckEncapsKey(Bytes ek);
  // Length; on an expanded key the FIPS 203 §7.3 hash check and the scalar range (NIST curves).
  static absl::Status CheckDecapsKey(Bytes dk);
  // The complete check of an expanded key: MlKem<K>::CheckExpandedPrivateKey on the ML-KEM part,
  // the curve part valid (and, for X-Wing, pk_X its public key); ek (optional) must be the key's
  // public key.
  static absl::Status CheckExpandedPrivateKey(Bytes dk, Bytes ek = {});
  // The public key of a private key in either form.
  static absl::Status PublicKeyOf(Bytes sk, MutBytes ek);

  static void KeyGenBatch(std::span<KemKeyGenItem> items, RandomSource& rng);
  static void EncapsBatch(std::span<KemEncapsItem> items, RandomSource& rng);
  static void DecapsBatch(std::span<KemDecapsItem> items);
};

using X25519MlKem768 = HybridKem<X25519MlKem768Spec>;
using SecP256r1MlKem768 = HybridKem<SecP256r1MlKem768Spec>;
using SecP384r1MlKem1024 = HybridKem<SecP384r1MlKem1024Spec>;
using XWing = HybridKem<XWingSpec>;

// draft-ietf-tls-ecdhe-mlkem and draft-connolly-cfrg-xwing-kem sizes.
static_assert(X25519MlKem768::kEncapsKeyBytes == 1216 && X25519MlKem768::kCiphertextBytes == 1120 &&
              X25519MlKem768::kSharedSecretBytes == 64);
static_assert(SecP256r1MlKem768::kEncapsKeyBytes == 1249 &&
              SecP256r1MlKem768::kCiphertextBytes == 1153 &&
              SecP256r1MlKem768::kSharedSecretBytes == 64);
static_assert(SecP384r1MlKem1024::kEncapsKeyBytes == 1665 &&
              SecP384r1MlKem1024::kCiphertextBytes == 1665 &&
              SecP384r1MlKem1024::kSharedSecretBytes == 80);
static_assert(XWing::kEncapsKeyBytes == 1216 && XWing::kCiphertextBytes == 1120 &&
              XWing::kSharedSecretBytes == 32 && XWing::kSeedBytes == 32);

extern template class HybridKem<X25519MlKem768Spec>;
extern template class HybridKem<SecP256r1MlKem768Spec>;
extern template class HybridKem<SecP384r1MlKem1024Spec>;
extern template class HybridKem<XWingSpec>;

}  // namespace pqcd::kernels
