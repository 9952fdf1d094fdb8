// Hybrid KEMs (hybrid.h): the ML-KEM halves of a batch through MlKem<K>'s batch entry points, the
// curve halves through OpenSSL, one item at a time.
#include "pqcd/kernels/hybrid.h"

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

// ---- OpenSSL handles --------------------------------------------------------------------------
struct OsslFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
  void operator()(EC_POINT* p) const { EC_POINT_free(p); }
  void operator()(BN_CTX* p) const { BN_CTX_free(p); }
  void operator()(BIGNUM* p) const { BN_clear_free(p); }
};
template <class T>
using Owned = std::unique_ptr<T, OsslFree>;

absl::Status CurveError(Curve c, std::string_view what) {
  ERR_clear_error();
  const char* name = c == Curve::kX25519 ? "X25519" : c == Curve::kP256 ? "P-256" : "P-384";
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", std::string(what)));
}
absl::Status OpenSslFailure(std::string_view what) {
  ERR_clear_error();
  return absl::InternalError(absl::StrCat("OpenSSL: ", std::string(what), " failed"));
}

// All-ones when every byte of b is zero; no data-dependent branch.
bool AllZero(Bytes b) {
  uint8_t acc = 0;
  for (uint8_t x : b) acc |= x;
  return CtMaskNonZero(acc) == 0;
}

// ---- X25519 (RFC 7748) through EVP
// ---------------------------------------------------------------
// An X25519 private key. OpenSSL computes the public key (a scalar multiplication) whenever it
// loads a private key alone; given known_pk, the key's public key, it takes that instead.
Owned<EVP_PKEY> X25519Private(Bytes sk, Bytes known_pk = {}) {
  if (known_pk.empty()) {
    return Owned<EVP_PKEY>(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, sk.data(), 32));
  }
  OSSL_PARAM params[] = {OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PRIV_KEY,
                                                           const_cast<uint8_t*>(sk.data()), 32),
                         OSSL_PARAM_construct_octet_string(
                             OSSL_PKEY_PARAM_PUB_KEY, const_cast<uint8_t*>(known_pk.data()), 32),
                         OSSL_PARAM_construct_end()};
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_name(nullptr, "X25519", nullptr));
  EVP_PKEY* key = nullptr;
  if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_KEYPAIR, params) != 1) {
    return nullptr;
  }
  return Owned<EVP_PKEY>(key);
}

absl::Status X25519PublicOf(EVP_PKEY* key, MutBytes pk) {
  size_t len = 32;
  if (EVP_PKEY_get_raw_public_key(key, pk.data(), &len) != 1 || len != 32) {
    return OpenSslFailure("X25519 public key");
  }
  return absl::OkStatus();
}

absl::Status X25519Derive(EVP_PKEY* key, Bytes peer, MutBytes ss) {
  Owned<EVP_PKEY> pub(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer.data(), 32));
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new(key, nullptr));
  size_t len = 32;
  if (!pub || !ctx || EVP_PKEY_derive_init(ctx.get()) != 1 ||
      EVP_PKEY_derive_set_peer(ctx.get(), pub.get()) != 1) {
    return OpenSslFailure("X25519 derive set-up");
  }
  // OpenSSL refuses an all-zero result (a low-order peer point); so do we, should it not.
  if (EVP_PKEY_derive(ctx.get(), ss.data(), &len) != 1 || len != 32 || AllZero(ss)) {
    SecureZero(ss.data(), ss.size());
    return CurveError(Curve::kX25519, "the shared secret is all zero (a low-order peer key)");
  }
  return absl::OkStatus();
}

absl::Status X25519Public(Bytes sk, MutBytes pk) {
  Owned<EVP_PKEY> key = X25519Private(sk);
  if (!key) return OpenSslFailure("X25519 key");
  return X25519PublicOf(key.get(), pk);
}

// pk_out (optional) gets the key's public key; known_pk (optional) is it, already known.
absl::Status X25519Shared(Bytes sk, Bytes known_pk, Bytes peer, MutBytes pk_out, MutBytes ss) {
  Owned<EVP_PKEY> key = X25519Private(sk, known_pk);
  if (!key) return OpenSslFailure("X25519 key");
  if (!pk_out.empty()) {
    if (absl::Status s = X25519PublicOf(key.get(), pk_out); !s.ok()) return s;
  }
  return X25519Derive(key.get(), peer, ss);
}

// ---- P-256 / P-384 through OpenSSL's EC_POINT arithmetic --------------------------------------
// Made once, freed at exit or when the module holding this code is unloaded (the OpenSSL
// provider is dlclose'd by libcrypto: its memory must not outlive it).
struct NistGroup {
  EC_GROUP* group;
  std::array<uint8_t, 48> order{};  // big-endian, the scalar's length

  NistGroup(int nid, size_t len) : group(EC_GROUP_new_by_curve_name(nid)) {
    if (group == nullptr || BN_bn2binpad(EC_GROUP_get0_order(group), order.data(),
                                         static_cast<int>(len)) != static_cast<int>(len)) {
      std::abort();  // OpenSSL without the NIST curves: nothing here can work
    }
  }
  ~NistGroup() { EC_GROUP_free(group); }
  NistGroup(const NistGroup&) = delete;
  NistGroup& operator=(const NistGroup&) = delete;
};

const NistGroup& Group(Curve c) {
  static const NistGroup p256(NID_X9_62_prime256v1, 32);
  static const NistGroup p384(NID_secp384r1, 48);
  return c == Curve::kP256 ? p256 : p384;
}

// True when the big-endian scalar is in [1, n-1]. Constant time: the borrow of k - n is computed
// over every byte, and only the verdict is revealed (an out-of-range scalar is refused, a public
// event).
bool ScalarInRange(Curve c, Bytes k) {
  const NistGroup& g = Group(c);
  uint32_t borrow = 0;
  for (size_t i = k.size(); i-- > 0;) {
    const uint32_t d = uint32_t{k[i]} - g.order[i] - borrow;
    borrow = (d >> 31) & 1;
  }
  return borrow == 1 && !AllZero(k);
}

Owned<BIGNUM> SecretScalar(Bytes k) {
  Owned<BIGNUM> bn(BN_secure_new());
  if (bn && BN_bin2bn(k.data(), static_cast<int>(k.size()), bn.get()) == nullptr) bn.reset();
  if (bn) BN_set_flags(bn.get(), BN_FLG_CONSTTIME);
  return bn;
}

absl::Status NistPublic(Curve c, Bytes k, MutBytes point) {
  if (!ScalarInRange(c, k)) return CurveError(c, "private key not in [1, n-1]");
  const EC_GROUP* group = Group(c).group;
  Owned<BN_CTX> ctx(BN_CTX_secure_new());
  Owned<BIGNUM> scalar = SecretScalar(k);
  Owned<EC_POINT> p(EC_POINT_new(group));
  if (!ctx || !scalar || !p ||
      EC_POINT_mul(group, p.get(), scalar.get(), nullptr, nullptr, ctx.get()) != 1 ||
      EC_POINT_point2oct(group, p.get(), POINT_CONVERSION_UNCOMPRESSED, point.data(), point.size(),
                         ctx.get()) != point.size()) {
    return OpenSslFailure("EC public key");
  }
  return absl::OkStatus();
}

// The peer's point: uncompressed (the only form TLS allows) and on the curve.
absl::Status NistDecodePoint(Curve c, Bytes point, EC_POINT* out, BN_CTX* ctx) {
  if (point.empty() || point[0] != 0x04) return CurveError(c, "point not in uncompressed form");
  if (EC_POINT_oct2point(Group(c).group, out, point.data(), point.size(), ctx) != 1) {
    return CurveError(c, "not a point on the curve");
  }
  return absl::OkStatus();
}

absl::Status NistShared(Curve c, Bytes k, Bytes peer, MutBytes ss) {
  if (!ScalarInRange(c, k)) return CurveError(c, "private key not in [1, n-1]");
  const EC_GROUP* group = Group(c).group;
  Owned<BN_CTX> ctx(BN_CTX_secure_new());
  Owned<BIGNUM> scalar = SecretScalar(k);
  Owned<EC_POINT> q(EC_POINT_new(group));
  Owned<EC_POINT> r(EC_POINT_new(group));
  Owned<BIGNUM> x(BN_secure_new());
  if (!ctx || !scalar || !q || !r || !x) return OpenSslFailure("EC allocation");
  if (absl::Status s = NistDecodePoint(c, peer, q.get(), ctx.get()); !s.ok()) return s;
  // A single variable point and a secret scalar: OpenSSL's constant-time ladder / window path.
  if (EC_POINT_mul(group, r.get(), nullptr, q.get(), scalar.get(), ctx.get()) != 1) {
    return OpenSslFailure("ECDH");
  }
  if (EC_POINT_is_at_infinity(group, r.get()) == 1) {
    return CurveError(c, "the shared point is the point at infinity");
  }
  if (EC_POINT_get_affine_coordinates(group, r.get(), x.get(), nullptr, ctx.get()) != 1 ||
      BN_bn2binpad(x.get(), ss.data(), static_cast<int>(ss.size())) !=
          static_cast<int>(ss.size())) {
    return OpenSslFailure("ECDH x-coordinate");
  }
  return absl::OkStatus();
}

// ---- the curve interface used by the hybrids ----------------------------------------------------
absl::Status CurvePublic(Curve c, Bytes sk, MutBytes pk) {
  return c == Curve::kX25519 ? X25519Public(sk, pk) : NistPublic(c, sk, pk);
}
// known_pk (X25519 only, optional): sk's public key, which spares OpenSSL computing it.
absl::Status CurveShared(Curve c, Bytes sk, Bytes peer, MutBytes ss, Bytes known_pk = {}) {
  return c == Curve::kX25519 ? X25519Shared(sk, known_pk, peer, {}, ss)
                             : NistShared(c, sk, peer, ss);
}
// An encapsulation's ephemeral key: its public key (the ciphertext part) and the shared secret,
// from one X25519 key object.
absl::Status CurvePublicAndShared(Curve c, Bytes sk, Bytes peer, MutBytes pk, MutBytes ss) {
  if (c == Curve::kX25519) return X25519Shared(sk, {}, peer, pk, ss);
  if (absl::Status s = NistPublic(c, sk, pk); !s.ok()) return s;
  return NistShared(c, sk, peer, ss);
}
// The u-coordinates of the X25519 points of low order (RFC 7748: the curve's order-1, -2, -4 and
// -8 points), little-endian with bit 255 clear (X25519 ignores it), and the two encodings at or
// above p of them (p and p + 1). Any scalar gives an all-zero shared secret with these: one
// comparison refuses such a share before any computation (public data: no constant time needed).
constexpr uint8_t kX25519LowOrder[][32] = {
    {0x00},
    {0x01},
    {0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3,
     0xfa, 0xf1, 0x9f, 0xc4, 0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32,
     0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00},
    {0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1,
     0x55, 0x9c, 0x83, 0xef, 0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c,
     0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57},
    {0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
    {0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
    {0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
};

bool X25519LowOrder(Bytes u) {
  uint8_t v[32];
  std::memcpy(v, u.data(), 32);
  v[31] &= 0x7f;
  for (const auto& bad : kX25519LowOrder) {
    if (std::memcmp(v, bad, 32) == 0) return true;
  }
  return false;
}

// NIST curves: the point decoded and on the curve. X25519: any 32 bytes are a u-coordinate; the
// TLS hybrids (reject_low_order) refuse the low-order ones, whose shared secret is all zero.
absl::Status CheckCurvePublic(Curve c, Bytes pk, bool reject_low_order = false) {
  if (c == Curve::kX25519) {
    if (reject_low_order && X25519LowOrder(pk)) {
      return CurveError(c, "a public key of low order (the shared secret would be all zero)");
    }
    return absl::OkStatus();
  }
  Owned<BN_CTX> ctx(BN_CTX_new());
  Owned<EC_POINT> q(EC_POINT_new(Group(c).group));
  if (!ctx || !q) return OpenSslFailure("EC allocation");
  return NistDecodePoint(c, pk, q.get(), ctx.get());
}
bool CurvePrivateValid(Curve c, Bytes sk) {
  return c == Curve::kX25519 || ScalarInRange(c, sk);  // X25519 clamps any 32 bytes
}

// X-Wing's label "\./" "/^\" (draft-connolly-cfrg-xwing-kem §5.3).
constexpr uint8_t kXWingLabel[6] = {0x5c, 0x2e, 0x2f, 0x2f, 0x5e, 0x5c};

// SHA3-256(ss_M || ss_X || ct_X || pk_X || XWingLabel).
void XWingCombiner(Bytes ss_m, Bytes ss_x, Bytes ct_x, Bytes pk_x, MutBytes ss) {
  Sha3_256 h;
  h.Absorb(ss_m);
  h.Absorb(ss_x);
  h.Absorb(ct_x);
  h.Absorb(pk_x);
  h.Absorb(Bytes(kXWingLabel, sizeof(kXWingLabel)));
  h.Final(std::span<uint8_t, 32>(ss.data(), 32));
}

// A whole split into its ML-KEM part and its curve part, in the draft's order.
template <class Spec, class View>
std::pair<View, View> Split(View whole, size_t ml_bytes, size_t curve_bytes) {
  if constexpr (Spec::kMlKemFirst) {
    return {whole.subspan(0, ml_bytes), whole.subspan(ml_bytes, curve_bytes)};
  } else {
    return {whole.subspan(curve_bytes, ml_bytes), whole.subspan(0, curve_bytes)};
  }
}

template <class Spec>
absl::Status SizeError(std::string_view field, size_t expected, size_t got) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(Spec::kName), " ", std::string(field),
                                                 ": expected ", expected, " bytes, got ", got));
}
template <class Spec>
absl::Status Prefixed(const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(std::string(Spec::kName), ": ", s.message()));
}

// Per-item secret scratch of a batch: wiped when the batch ends.
template <size_t N>
struct Scratch {
  std::vector<std::array<uint8_t, N>> v;
  explicit Scratch(size_t n) : v(n) {}
  ~Scratch() { SecureZero(v.data(), v.size() * N); }
  MutBytes operator[](size_t i) { return MutBytes(v[i]); }
};

}  // namespace

// ---- checks
// ----------------------------------------------------------------------------------------
template <class Spec>
absl::Status HybridKem<Spec>::CheckEncapsKey(Bytes ek) {
  if (ek.size() != kEncapsKeyBytes) {
    return SizeError<Spec>("encapsulation key", kEncapsKeyBytes, ek.size());
  }
  const auto [ek_m, pk_e] = Split<Spec>(ek, Ml::kEncapsKeyBytes, kCurvePoint);
  if (absl::Status s = Ml::CheckEncapsKey(ek_m); !s.ok()) return Prefixed<Spec>(s);
  // X-Wing takes any X25519 key (its combiner hashes the shares); the TLS hybrids refuse what
  // draft-ietf-tls-ecdhe-mlkem makes an illegal_parameter.
  return Prefixed<Spec>(CheckCurvePublic(kCurve, pk_e, /*reject_low_order=*/!Spec::kXWing));
}

template <class Spec>
absl::Status HybridKem<Spec>::CheckDecapsKey(Bytes dk) {
  if (dk.size() == kSeedBytes) {
    if constexpr (Spec::kXWing) return absl::OkStatus();
    const auto [seed_m, sk_e] = Split<Spec>(dk, Ml::kSeedBytes, kCurvePrivate);
    if (!CurvePrivateValid(kCurve, sk_e)) {
      return Prefixed<Spec>(CurveError(kCurve, "seed: private key not in [1, n-1]"));
    }
    return absl::OkStatus();
  }
  if (dk.size() != kDecapsKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(Spec::kName), " decapsulation key: expected ", kDecapsKeyBytes,
                     " bytes (expanded) or ", kSeedBytes, " bytes (seed), got ", dk.size()));
  }
  const auto [dk_m, sk_e] = Split<Spec>(dk, Ml::kDecapsKeyBytes, kCurvePrivate);
  if (absl::Status s = Ml::CheckDecapsKey(dk_m); !s.ok()) return Prefixed<Spec>(s);
  if (!CurvePrivateValid(kCurve, sk_e)) {
    return Prefixed<Spec>(CurveError(kCurve, "private key not in [1, n-1]"));
  }
  return absl::OkStatus();
}

template <class Spec>
absl::Status HybridKem<Spec>::CheckExpandedPrivateKey(Bytes dk, Bytes ek) {
  if (dk.size() != kDecapsKeyBytes) {
    return SizeError<Spec>("decapsulation key (expanded)", kDecapsKeyBytes, dk.size());
  }
  if (!ek.empty() && ek.size() != kEncapsKeyBytes) {
    return SizeError<Spec>("encapsulation key", kEncapsKeyBytes, ek.size());
  }
  const auto [dk_m, sk_e] = Split<Spec>(dk, Ml::kDecapsKeyBytes, kCurvePrivate);
  Bytes ek_m, pk_e;
  if (!ek.empty()) std::tie(ek_m, pk_e) = Split<Spec>(ek, Ml::kEncapsKeyBytes, kCurvePoint);
  if (absl::Status s = Ml::CheckExpandedPrivateKey(dk_m, ek_m); !s.ok()) return Prefixed<Spec>(s);
  uint8_t pk[kCurvePoint];
  if (absl::Status s = CurvePublic(kCurve, sk_e, pk); !s.ok()) return Prefixed<Spec>(s);
  if constexpr (kKeepsCurvePublic) {
    if (!std::equal(pk, pk + kCurvePoint, dk.begin() + Ml::kDecapsKeyBytes + kCurvePrivate)) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(Spec::kName), " decapsulation key: pk_X is not X25519(sk_X)"));
    }
  }
  if (!pk_e.empty() && !std::equal(pk, pk + kCurvePoint, pk_e.begin())) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(Spec::kName), ": the encapsulation key's curve part is not the private key's"));
  }
  return absl::OkStatus();
}

template <class Spec>
absl::Status HybridKem<Spec>::PublicKeyOf(Bytes sk, MutBytes ek) {
  if (ek.size() != kEncapsKeyBytes) {
    return SizeError<Spec>("public key buffer", kEncapsKeyBytes, ek.size());
  }
  if (sk.size() == kSeedBytes) {
    uint8_t expanded[kDecapsKeyBytes];
    ZeroOnExit wipe(expanded);
    KemKeyGenItem item{sk, ek, MutBytes(expanded, kDecapsKeyBytes), {}, {}};
    KeyGenBatch(std::span(&item, 1), OsRandom());
    return item.status;
  }
  if (absl::Status s = CheckExpandedPrivateKey(sk); !s.ok()) return s;
  const auto [dk_m, sk_e] = Split<Spec>(sk, Ml::kDecapsKeyBytes, kCurvePrivate);
  const auto [ek_m, pk_e] = Split<Spec>(ek, Ml::kEncapsKeyBytes, kCurvePoint);
  // dk_M = dk_PKE || ek || H(ek) || z (FIPS 203 Alg. 16).
  const Bytes embedded =
      dk_m.subspan(Ml::kDecapsKeyBytes - Ml::kEncapsKeyBytes - 64, Ml::kEncapsKeyBytes);
  std::copy(embedded.begin(), embedded.end(), ek_m.begin());
  return Prefixed<Spec>(CurvePublic(kCurve, sk_e, pk_e));
}

// ---- batches
// --------------------------------------------------------------------------------------
template <class Spec>
void HybridKem<Spec>::KeyGenBatch(std::span<KemKeyGenItem> items, RandomSource& rng) {
  const size_t n = items.size();
  Scratch<kSeedBytes> seeds(n);
  Scratch<96> parts(n);  // X-Wing: SHAKE256(seed, 96) = ML-KEM seed || sk_X
  std::vector<KemKeyGenItem> ml(n);
  std::vector<size_t> live;
  live.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    KemKeyGenItem& it = items[i];
    if (it.ek.size() != kEncapsKeyBytes) {
      it.status = SizeError<Spec>("encapsulation key buffer", kEncapsKeyBytes, it.ek.size());
      continue;
    }
    if (it.dk.size() != kDecapsKeyBytes) {
      it.status = SizeError<Spec>("decapsulation key buffer", kDecapsKeyBytes, it.dk.size());
      continue;
    }
    if (!it.seed_out.empty() && it.seed_out.size() != kSeedBytes) {
      it.status = SizeError<Spec>("seed buffer", kSeedBytes, it.seed_out.size());
      continue;
    }
    MutBytes seed = seeds[i];
    if (!it.seed.empty()) {
      if (it.seed.size() != kSeedBytes) {
        it.status = SizeError<Spec>("seed", kSeedBytes, it.seed.size());
        continue;
      }
      std::copy(it.seed.begin(), it.seed.end(), seed.begin());
    } else {
      absl::Status s = rng.Generate(seed);
      if constexpr (!Spec::kXWing) {
        // A NIST scalar outside [1, n-1] (probability about 2^-32): draw that part again.
        for (int tries = 0; s.ok() && tries < 64; ++tries) {
          const auto [seed_m, sk_e] = Split<Spec>(seed, Ml::kSeedBytes, kCurvePrivate);
          if (CurvePrivateValid(kCurve, sk_e)) break;
          s = rng.Generate(sk_e);
        }
      }
      if (!s.ok()) {
        it.status = Prefixed<Spec>(s);
        continue;
      }
      if (!it.seed_out.empty()) std::copy(seed.begin(), seed.end(), it.seed_out.begin());
    }
    Bytes seed_m;
    if constexpr (Spec::kXWing) {
      Shake256Digest(seed, parts[i]);
      seed_m = Bytes(parts[i]).subspan(0, 64);
    } else {
      Bytes sk_e;
      std::tie(seed_m, sk_e) = Split<Spec>(Bytes(seed), Ml::kSeedBytes, kCurvePrivate);
      if (!CurvePrivateValid(kCurve, sk_e)) {
        it.status = Prefixed<Spec>(CurveError(kCurve, "seed: private key not in [1, n-1]"));
        continue;
      }
    }
    const auto [dk_m, dk_e] = Split<Spec>(it.dk, Ml::kDecapsKeyBytes, kCurvePrivate);
    const auto [ek_m, pk_e] = Split<Spec>(it.ek, Ml::kEncapsKeyBytes, kCurvePoint);
    ml[live.size()] = KemKeyGenItem{seed_m, ek_m, dk_m, {}, {}};
    live.push_back(i);
  }
  Ml::KeyGenBatch(std::span(ml.data(), live.size()), rng);
  for (size_t j = 0; j < live.size(); ++j) {
    KemKeyGenItem& it = items[live[j]];
    it.status = Prefixed<Spec>(ml[j].status);
    if (it.status.ok()) {
      const auto [dk_m, dk_e] = Split<Spec>(it.dk, Ml::kDecapsKeyBytes, kCurvePrivate);
      const auto [ek_m, pk_e] = Split<Spec>(it.ek, Ml::kEncapsKeyBytes, kCurvePoint);
      Bytes sk_e;
      if constexpr (Spec::kXWing) {
        sk_e = Bytes(parts[live[j]]).subspan(64, 32);
      } else {
        sk_e = Split<Spec>(Bytes(seeds[live[j]]), Ml::kSeedBytes, kCurvePrivate).second;
      }
      std::copy(sk_e.begin(), sk_e.end(), dk_e.begin());
      it.status = Prefixed<Spec>(CurvePublic(kCurve, sk_e, pk_e));
      if constexpr (kKeepsCurvePublic) {
        std::copy(pk_e.begin(), pk_e.end(), it.dk.begin() + Ml::kDecapsKeyBytes + kCurvePrivate);
      }
    }
    if (!it.status.ok()) {
      SecureZero(it.dk.data(), it.dk.size());
      if (!it.seed_out.empty()) SecureZero(it.seed_out.data(), it.seed_out.size());
    }
  }
}

template <class Spec>
void HybridKem<Spec>::EncapsBatch(std::span<KemEncapsItem> items, RandomSource& rng) {
  const size_t n = items.size();
  Scratch<kEncapsRandomBytes> rand(n);
  Scratch<32> ss_m(n);  // X-Wing: the ML-KEM secret before the combiner
  std::vector<KemEncapsItem> ml(n);
  std::vector<size_t> live;
  live.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    KemEncapsItem& it = items[i];
    if (it.ek.size() != kEncapsKeyBytes) {
      it.status = SizeError<Spec>("encapsulation key", kEncapsKeyBytes, it.ek.size());
      continue;
    }
    if (it.ct.size() != kCiphertextBytes) {
      it.status = SizeError<Spec>("ciphertext buffer", kCiphertextBytes, it.ct.size());
      continue;
    }
    if (it.ss.size() != kSharedSecretBytes) {
      it.status = SizeError<Spec>("shared secret buffer", kSharedSecretBytes, it.ss.size());
      continue;
    }
    MutBytes r = rand[i];
    if (!it.m.empty()) {
      if (it.m.size() != kEncapsRandomBytes) {
        it.status = SizeError<Spec>("encapsulation randomness", kEncapsRandomBytes, it.m.size());
        continue;
      }
      std::copy(it.m.begin(), it.m.end(), r.begin());
    } else {
      absl::Status s = rng.Generate(r);
      for (int tries = 0; s.ok() && tries < 64; ++tries) {
        const auto [m_m, e] = Split<Spec>(r, Ml::kEncapsRandomBytes, kCurvePrivate);
        if (CurvePrivateValid(kCurve, e)) break;
        s = rng.Generate(e);
      }
      if (!s.ok()) {
        it.status = Prefixed<Spec>(s);
        continue;
      }
    }
    const auto [m_m, e] = Split<Spec>(Bytes(r), Ml::kEncapsRandomBytes, kCurvePrivate);
    const auto [ek_m, pk_e] = Split<Spec>(it.ek, Ml::kEncapsKeyBytes, kCurvePoint);
    const auto [ct_m, ct_e] = Split<Spec>(it.ct, Ml::kCiphertextBytes, kCurvePoint);
    MutBytes out_m = Spec::kXWing ? ss_m[i] : Split<Spec>(it.ss, 32, kCurveSecret).first;
    ml[live.size()] = KemEncapsItem{ek_m, m_m, ct_m, out_m, {}};
    live.push_back(i);
  }
  Ml::EncapsBatch(std::span(ml.data(), live.size()), rng);
  for (size_t j = 0; j < live.size(); ++j) {
    const size_t i = live[j];
    KemEncapsItem& it = items[i];
    it.status = Prefixed<Spec>(ml[j].status);
    if (it.status.ok()) {
      const auto [m_m, e] = Split<Spec>(Bytes(rand[i]), Ml::kEncapsRandomBytes, kCurvePrivate);
      const auto [ek_m, pk_e] = Split<Spec>(it.ek, Ml::kEncapsKeyBytes, kCurvePoint);
      const auto [ct_m, ct_e] = Split<Spec>(it.ct, Ml::kCiphertextBytes, kCurvePoint);
      if constexpr (Spec::kXWing) {
        uint8_t ss_x[32];
        ZeroOnExit wipe(ss_x);
        it.status = Prefixed<Spec>(CurvePublicAndShared(kCurve, e, pk_e, ct_e, ss_x));
        if (it.status.ok()) XWingCombiner(ss_m[i], ss_x, ct_e, pk_e, it.ss);
      } else {
        it.status = Prefixed<Spec>(CurvePublicAndShared(
            kCurve, e, pk_e, ct_e, Split<Spec>(it.ss, 32, kCurveSecret).second));
      }
    }
    if (!it.status.ok()) SecureZero(it.ss.data(), it.ss.size());
  }
}

template <class Spec>
void HybridKem<Spec>::DecapsBatch(std::span<KemDecapsItem> items) {
  const size_t n = items.size();
  Scratch<96 + 32> xw(n);  // X-Wing seed form: SHAKE256(seed, 96) || pk_X
  Scratch<32> ss_m(n);
  std::vector<KemDecapsItem> ml(n);
  std::vector<size_t> live;
  live.reserve(n);
  // The curve private key and (X-Wing) pk_X of each item, views into the item or into xw.
  std::vector<std::pair<Bytes, Bytes>> curve(n);
  for (size_t i = 0; i < n; ++i) {
    KemDecapsItem& it = items[i];
    if (it.dk.size() != kSeedBytes && it.dk.size() != kDecapsKeyBytes) {
      it.status = absl::InvalidArgumentError(
          absl::StrCat(std::string(Spec::kName), " decapsulation key: expected ", kDecapsKeyBytes,
                       " bytes (expanded) or ", kSeedBytes, " bytes (seed), got ", it.dk.size()));
      continue;
    }
    if (it.ct.size() != kCiphertextBytes) {
      it.status = SizeError<Spec>("ciphertext", kCiphertextBytes, it.ct.size());
      continue;
    }
    if (it.ss.size() != kSharedSecretBytes) {
      it.status = SizeError<Spec>("shared secret buffer", kSharedSecretBytes, it.ss.size());
      continue;
    }
    if (it.prepared && it.dk.size() != kDecapsKeyBytes) {
      it.status = SizeError<Spec>("prepared decapsulation key", kDecapsKeyBytes, it.dk.size());
      continue;
    }
    Bytes dk_m, sk_e, pk_x;
    if constexpr (Spec::kXWing) {
      if (it.dk.size() == kSeedBytes) {
        MutBytes x = xw[i];
        Shake256Digest(it.dk, x.subspan(0, 96));
        dk_m = x.subspan(0, 64);
        sk_e = x.subspan(64, 32);
        if (absl::Status s = X25519Public(sk_e, x.subspan(96, 32)); !s.ok()) {
          it.status = Prefixed<Spec>(s);
          continue;
        }
        pk_x = x.subspan(96, 32);  // known now: the derive below does not compute it again
      } else {
        dk_m = it.dk.subspan(0, Ml::kDecapsKeyBytes);
        sk_e = it.dk.subspan(Ml::kDecapsKeyBytes, 32);
        pk_x = it.dk.subspan(Ml::kDecapsKeyBytes + 32, 32);
      }
    } else {
      // The seed form's ML-KEM part is ML-KEM's own seed form, which MlKem<K> accepts as dk.
      const bool seed = it.dk.size() == kSeedBytes;
      std::tie(dk_m, sk_e) =
          Split<Spec>(it.dk, seed ? Ml::kSeedBytes : Ml::kDecapsKeyBytes, kCurvePrivate);
      if constexpr (kKeepsCurvePublic) {
        if (!seed) pk_x = it.dk.subspan(Ml::kDecapsKeyBytes + kCurvePrivate, kCurvePoint);
      }
    }
    curve[i] = {sk_e, pk_x};
    const auto [ct_m, ct_e] = Split<Spec>(it.ct, Ml::kCiphertextBytes, kCurvePoint);
    MutBytes out_m = Spec::kXWing ? ss_m[i] : Split<Spec>(it.ss, 32, kCurveSecret).first;
    // A prepared key is the expanded form, checked when it was prepared (ML-KEM part included).
    ml[live.size()] = KemDecapsItem{dk_m, ct_m, out_m, {}, it.prepared};
    live.push_back(i);
  }
  Ml::DecapsBatch(std::span(ml.data(), live.size()));
  for (size_t j = 0; j < live.size(); ++j) {
    const size_t i = live[j];
    KemDecapsItem& it = items[i];
    it.status = Prefixed<Spec>(ml[j].status);
    if (it.status.ok()) {
      const auto [ct_m, ct_e] = Split<Spec>(it.ct, Ml::kCiphertextBytes, kCurvePoint);
      const auto [sk_e, pk_x] = curve[i];
      if constexpr (Spec::kXWing) {
        uint8_t ss_x[32];
        ZeroOnExit wipe(ss_x);
        it.status = Prefixed<Spec>(CurveShared(kCurve, sk_e, ct_e, ss_x, pk_x));
        if (it.status.ok()) XWingCombiner(ss_m[i], ss_x, ct_e, pk_x, it.ss);
      } else {
        // pk_x: the expanded X25519MLKEM768 key's public key (empty otherwise), given to OpenSSL.
        it.status = Prefixed<Spec>(
            CurveShared(kCurve, sk_e, ct_e, Split<Spec>(it.ss, 32, kCurveSecret).second, pk_x));
      }
    }
    if (!it.status.ok()) SecureZero(it.ss.data(), it.ss.size());
  }
}

template class HybridKem<X25519MlKem768Spec>;
template class HybridKem<SecP256r1MlKem768Spec>;
template class HybridKem<SecP384r1MlKem1024Spec>;
template class HybridKem<XWingSpec>;

}  // namespace pqcd::kernels
