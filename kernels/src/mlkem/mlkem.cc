// ML-KEM (FIPS 203): the algorithms of §5-§7, templated on k, on top of the polynomial module.
//
// Constant-time notes. Secret values are s, e, y (the r vector of Alg. 14), e1, e2, m, K, K̄, σ,
// the coins r, the seed d||z and everything derived from them before compression. They never reach
// a branch, a memory index or a division: arithmetic is Montgomery/Barrett (poly.cc), Compress uses
// a multiply-shift, the re-encryption check in Decaps compares with CtCompare and picks K' or K̄
// with CtSelect. The only data-dependent branches are on public data: rejection sampling of Â from
// ρ, the §7.2 modulus check and the §7.3 hash check (whose inputs are public or belong to the
// caller). Every secret temporary is wiped with ZeroOnExit / SecureZero on every return path.
// Nothing is allocated on the heap except the message of an error status.
#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "mlkem/poly.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

using mlkem::kPolyBytes;
using mlkem::kSymBytes;
using mlkem::Poly;
using mlkem::PolyMulCache;
using mlkem::XofSeed;

// Byte layout of keys and ciphertexts (FIPS 203 Alg. 13, 14, 16).
template <int K>
struct Layout {
  using P = MlKemParams<K>;
  static constexpr size_t kPolyVecBytes = kPolyBytes * K;
  static constexpr size_t kEkBytes = kPolyVecBytes + kSymBytes;  // ByteEncode12(t̂) || ρ
  static constexpr size_t kDkPkeBytes = kPolyVecBytes;           // ByteEncode12(ŝ)
  // dk = dk_PKE || ek || H(ek) || z
  static constexpr size_t kDkEkOffset = kDkPkeBytes;
  static constexpr size_t kDkHashOffset = kDkEkOffset + kEkBytes;
  static constexpr size_t kDkZOffset = kDkHashOffset + kSymBytes;
  static constexpr size_t kDkBytes = kDkZOffset + kSymBytes;
  static constexpr size_t kC1Bytes = 32 * P::du * K;  // ByteEncode_du(Compress_du(u))
  static constexpr size_t kC2Bytes = 32 * P::dv;      // ByteEncode_dv(Compress_dv(v))
  static constexpr size_t kCtBytes = kC1Bytes + kC2Bytes;

  static_assert(P::k == K);
  static_assert(P::eta1 == 2 || P::eta1 == 3);
  static_assert(P::eta2 == 2);
  static_assert(kEkBytes == MlKem<K>::kEncapsKeyBytes);
  static_assert(kDkBytes == MlKem<K>::kDecapsKeyBytes);
  static_assert(kCtBytes == MlKem<K>::kCiphertextBytes);
  // Nonces of the PRF stay below 256 (Alg. 13/14 use at most 2k + 1 of them).
  static_assert(2 * K + 1 < 256);
};

// G = SHA3-512 (§4.1) over the concatenation of two inputs.
void HashG(Bytes a, Bytes b, uint8_t out[64]) {
  Sha3_512 g;
  g.Absorb(a);
  g.Absorb(b);
  g.Final(std::span<uint8_t, 64>(out, 64));
}
// H = SHA3-256 (§4.1).
void HashH(Bytes in, uint8_t out[32]) {
  Sha3_256Digest(in, std::span<uint8_t, 32>(out, 32));
}
// J(z || c) = SHAKE256(z || c, 32) (§4.1).
void HashJ(const uint8_t z[32], Bytes c, uint8_t out[32]) {
  Shake256 j;
  j.Absorb(Bytes(z, 32));
  j.Absorb(c);
  j.Squeeze(MutBytes(out, 32));
}

// Â (transposed = false: Alg. 13 steps 3-7, entry [i][j] = SampleNTT(ρ || j || i)) or Â^T
// (transposed = true: Alg. 14 steps 4-8, entry [i][j] = Â[j][i]). All K² seeds go to one call of
// SampleNttMany so that a multi-lane SHAKE128 backend can process them side by side.
template <int K>
void GenerateMatrix(Poly (&a)[K][K], const uint8_t rho[kSymBytes], bool transposed) {
  std::array<XofSeed, K * K> seeds;
  for (int i = 0; i < K; ++i) {
    for (int j = 0; j < K; ++j) {
      XofSeed& s = seeds[i * K + j];
      std::memcpy(s.data(), rho, kSymBytes);
      s[32] = static_cast<uint8_t>(transposed ? i : j);
      s[33] = static_cast<uint8_t>(transposed ? j : i);
    }
  }
  mlkem::SampleNttMany(seeds.data(), &a[0][0], K * K);
}

// FIPS 203 Alg. 13, K-PKE.KeyGen(d): writes ek_PKE to ek and dk_PKE to dk_pke.
template <int K>
void PkeKeyGen(const uint8_t d[kSymBytes], uint8_t* ek, uint8_t* dk_pke) {
  using P = MlKemParams<K>;
  // (ρ, σ) = G(d || k) (step 1).
  const uint8_t k_byte = static_cast<uint8_t>(K);
  uint8_t rho_sigma[64];
  ZeroOnExit wipe_rho_sigma(rho_sigma);
  HashG(Bytes(d, kSymBytes), Bytes(&k_byte, 1), rho_sigma);
  const uint8_t* rho = rho_sigma;
  const uint8_t* sigma = rho_sigma + 32;

  Poly a[K][K];
  GenerateMatrix<K>(a, rho, /*transposed=*/false);

  // s and e from CBD_eta1 with nonces 0..k-1 and k..2k-1 (steps 8-15), then NTT (16-17).
  Poly s[K], e[K];
  PolyMulCache s_cache[K];
  ZeroOnExit wipe_s(s), wipe_e(e), wipe_s_cache(s_cache);
  mlkem::SampleCbdMany(P::eta1, sigma, 0, s, K);
  mlkem::SampleCbdMany(P::eta1, sigma, K, e, K);
  for (int i = 0; i < K; ++i) {
    mlkem::PolyNtt(s[i]);
    mlkem::PolyNtt(e[i]);
    mlkem::PolyMulCacheCompute(s_cache[i], s[i]);
  }

  // t̂ = Â ∘ ŝ + ê (step 18); ek = ByteEncode12(t̂) || ρ (step 19).
  for (int i = 0; i < K; ++i) {
    Poly t;
    mlkem::PolyBasemulAcc(t, a[i], s, s_cache, K);  // R^-1 · (Â ∘ ŝ)[i]
    mlkem::PolyToMont(t);                           // back to the normal domain
    mlkem::PolyAdd(t, e[i]);
    mlkem::PolyReduceCanonical(t);
    mlkem::PolyEncode12(ek + i * kPolyBytes, t);
  }
  std::memcpy(ek + K * kPolyBytes, rho, kSymBytes);

  // dk_PKE = ByteEncode12(ŝ) (step 20).
  for (int i = 0; i < K; ++i) {
    mlkem::PolyReduceCanonical(s[i]);
    mlkem::PolyEncode12(dk_pke + i * kPolyBytes, s[i]);
  }
}

// FIPS 203 Alg. 14, K-PKE.Encrypt(ek_PKE, m, r) with t̂ already decoded (canonical) and ρ given.
template <int K>
void PkeEncrypt(const Poly (&t_hat)[K], const uint8_t rho[kSymBytes], const uint8_t m[kSymBytes],
                const uint8_t coins[kSymBytes], uint8_t* ct) {
  using P = MlKemParams<K>;
  using L = Layout<K>;
  Poly at[K][K];
  GenerateMatrix<K>(at, rho, /*transposed=*/true);

  // y, e1 and e2 with nonces 0..k-1, k..2k-1 and 2k (steps 9-17); ŷ = NTT(y) (step 18).
  Poly y[K], e1[K], e2, mu, u, v;
  PolyMulCache y_cache[K];
  ZeroOnExit wipe_y(y), wipe_e1(e1), wipe_e2(e2), wipe_mu(mu), wipe_u(u), wipe_v(v),
      wipe_cache(y_cache);
  mlkem::SampleCbdMany(P::eta1, coins, 0, y, K);
  mlkem::SampleCbdMany(P::eta2, coins, K, e1, K);
  mlkem::SampleCbdMany(P::eta2, coins, 2 * K, &e2, 1);
  for (int i = 0; i < K; ++i) {
    mlkem::PolyNtt(y[i]);
    mlkem::PolyMulCacheCompute(y_cache[i], y[i]);
  }

  // u = NTT^-1(Â^T ∘ ŷ) + e1 (step 19); c1 = ByteEncode_du(Compress_du(u)) (step 22).
  for (int i = 0; i < K; ++i) {
    mlkem::PolyBasemulAcc(u, at[i], y, y_cache, K);
    mlkem::PolyInvNttTimesR(u);
    mlkem::PolyAdd(u, e1[i]);
    mlkem::PolyReduceCanonical(u);
    mlkem::PolyCompressEncode<P::du>(ct + i * 32 * P::du, u);
  }

  // v = NTT^-1(t̂^T ∘ ŷ) + e2 + μ with μ = Decompress_1(ByteDecode_1(m)) (steps 20-21);
  // c2 = ByteEncode_dv(Compress_dv(v)) (step 23).
  mlkem::PolyBasemulAcc(v, t_hat, y, y_cache, K);
  mlkem::PolyInvNttTimesR(v);
  mlkem::PolyAdd(v, e2);
  mlkem::PolyFromMessage(mu, m);
  mlkem::PolyAdd(v, mu);
  mlkem::PolyReduceCanonical(v);
  mlkem::PolyCompressEncode<P::dv>(ct + L::kC1Bytes, v);
}

// FIPS 203 Alg. 15, K-PKE.Decrypt(dk_PKE, c).
template <int K>
void PkeDecrypt(const uint8_t* dk_pke, const uint8_t* ct, uint8_t m[kSymBytes]) {
  using P = MlKemParams<K>;
  using L = Layout<K>;
  // u' = Decompress_du(ByteDecode_du(c1)) (step 3), then NTT(u') for step 6.
  Poly u[K];
  PolyMulCache u_cache[K];
  for (int i = 0; i < K; ++i) {
    mlkem::PolyDecodeDecompress<P::du>(u[i], ct + i * 32 * P::du);
    mlkem::PolyNtt(u[i]);
    mlkem::PolyMulCacheCompute(u_cache[i], u[i]);
  }
  // ŝ = ByteDecode12(dk_PKE) (step 5).
  Poly s[K], w, v;
  ZeroOnExit wipe_s(s), wipe_w(w), wipe_v(v);
  for (int i = 0; i < K; ++i) mlkem::PolyDecode12(s[i], dk_pke + i * kPolyBytes);
  // w = v' - NTT^-1(ŝ^T ∘ NTT(u')) (step 6); m = ByteEncode_1(Compress_1(w)) (step 7).
  mlkem::PolyBasemulAcc(w, s, u, u_cache, K);
  mlkem::PolyInvNttTimesR(w);
  mlkem::PolyDecodeDecompress<P::dv>(v, ct + L::kC1Bytes);  // v' (step 4)
  mlkem::PolySub(v, w);
  mlkem::PolyReduceCanonical(v);
  mlkem::PolyToMessage(m, v);
}

// FIPS 203 Alg. 16 writing ek only inside dk (dk = dk_PKE || ek || H(ek) || z).
template <int K>
void ExpandDecapsKey(const uint8_t d[kSymBytes], const uint8_t z[kSymBytes], uint8_t* dk) {
  using L = Layout<K>;
  uint8_t* ek = dk + L::kDkEkOffset;
  PkeKeyGen<K>(d, ek, dk);
  HashH(Bytes(ek, L::kEkBytes), dk + L::kDkHashOffset);
  std::memcpy(dk + L::kDkZOffset, z, kSymBytes);
}

// FIPS 203 Alg. 17, ML-KEM.Encaps_internal(ek, m), with t̂ decoded and checked by the caller.
template <int K>
void EncapsInternal(const Poly (&t_hat)[K], const uint8_t* ek, const uint8_t m[kSymBytes],
                    uint8_t* ct, uint8_t ss[32]) {
  using L = Layout<K>;
  // (K, r) = G(m || H(ek)) (step 1).
  uint8_t h[32];
  HashH(Bytes(ek, L::kEkBytes), h);
  uint8_t key_coins[64];
  ZeroOnExit wipe_key_coins(key_coins);
  HashG(Bytes(m, kSymBytes), Bytes(h, 32), key_coins);
  // c = K-PKE.Encrypt(ek, m, r) (step 2).
  PkeEncrypt<K>(t_hat, ek + K * kPolyBytes, m, key_coins + 32, ct);
  std::memcpy(ss, key_coins, 32);
}

// FIPS 203 Alg. 18, ML-KEM.Decaps_internal(dk, c) on an expanded dk.
template <int K>
void DecapsInternal(const uint8_t* dk, const uint8_t* ct, uint8_t ss[32]) {
  using L = Layout<K>;
  const uint8_t* ek = dk + L::kDkEkOffset;
  const uint8_t* h = dk + L::kDkHashOffset;
  const uint8_t* z = dk + L::kDkZOffset;

  // m' = K-PKE.Decrypt(dk_PKE, c) (step 5).
  uint8_t m_prime[32];
  uint8_t key_coins[64];  // (K', r')
  uint8_t k_bar[32];
  uint8_t ct_prime[L::kCtBytes];
  ZeroOnExit wipe_m(m_prime), wipe_kc(key_coins), wipe_kbar(k_bar), wipe_ct(ct_prime);
  PkeDecrypt<K>(dk, ct, m_prime);
  // (K', r') = G(m' || h) (step 6); K̄ = J(z || c) (step 7).
  HashG(Bytes(m_prime, 32), Bytes(h, 32), key_coins);
  HashJ(z, Bytes(ct, L::kCtBytes), k_bar);
  // c' = K-PKE.Encrypt(ek_PKE, m', r') (step 8). ByteDecode12 reduces mod q (no modulus check:
  // FIPS 203 checks ek only at encapsulation; dk is covered by the hash check).
  Poly t_hat[K];
  for (int i = 0; i < K; ++i) mlkem::PolyDecode12(t_hat[i], ek + i * kPolyBytes);
  PkeEncrypt<K>(t_hat, ek + K * kPolyBytes, m_prime, key_coins + 32, ct_prime);
  // if c != c' then K' = K̄ (steps 9-11), without a branch: the whole ciphertext is compared and
  // the difference turned into a 0x00/0xff mask.
  const uint8_t diff = CtCompare(ct, ct_prime, L::kCtBytes);
  const uint8_t reject = static_cast<uint8_t>(CtMaskNonZero(diff));
  CtSelect(key_coins, k_bar, 32, reject);
  std::memcpy(ss, key_coins, 32);
}

// MlKem<K>::kName as the string_view type absl::StrCat takes (absl may not alias std's).
template <int K>
absl::string_view Name() {
  return absl::string_view(MlKem<K>::kName.data(), MlKem<K>::kName.size());
}

template <int K>
absl::Status SizeError(const char* field, size_t expected, size_t got) {
  return absl::InvalidArgumentError(
      absl::StrCat(Name<K>(), " ", field, ": expected ", expected, " bytes, got ", got));
}

template <int K>
absl::Status RandomError(const char* op, const absl::Status& st) {
  return absl::Status(
      st.code(), absl::StrCat(Name<K>(), " ", op, ": randomness source failed: ", st.message()));
}

// §7.2 modulus check fused with ByteDecode12 of t̂ (ek is public, so it may branch).
template <int K>
absl::Status DecodeEncapsKey(const uint8_t* ek, Poly (&t_hat)[K]) {
  for (int i = 0; i < K; ++i) {
    if (!mlkem::DecodeEncapsKeyPoly(t_hat[i], ek + i * kPolyBytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Name<K>(),
                       " encapsulation key: coefficient not reduced mod q (FIPS 203 §7.2 "
                       "modulus check)"));
    }
  }
  return absl::OkStatus();
}

template <int K>
absl::Status DecapsKeyLengthError(size_t got) {
  return absl::InvalidArgumentError(absl::StrCat(Name<K>(), " decapsulation key: expected ",
                                                 MlKem<K>::kDecapsKeyBytes, " bytes (expanded) or ",
                                                 MlKem<K>::kSeedBytes, " bytes (seed), got ", got));
}

}  // namespace

template <int K>
void MlKem<K>::KeyGenInternal(std::span<const uint8_t, 32> d, std::span<const uint8_t, 32> z,
                              std::span<uint8_t, kEncapsKeyBytes> ek,
                              std::span<uint8_t, kDecapsKeyBytes> dk) {
  ExpandDecapsKey<K>(d.data(), z.data(), dk.data());
  std::memcpy(ek.data(), dk.data() + Layout<K>::kDkEkOffset, kEncapsKeyBytes);
}

template <int K>
absl::Status MlKem<K>::KeyGenFromSeed(Bytes seed, MutBytes ek, MutBytes dk) {
  if (seed.size() != kSeedBytes) return SizeError<K>("seed", kSeedBytes, seed.size());
  if (ek.size() != kEncapsKeyBytes) {
    return SizeError<K>("encapsulation key buffer", kEncapsKeyBytes, ek.size());
  }
  if (dk.size() != kDecapsKeyBytes) {
    return SizeError<K>("decapsulation key buffer", kDecapsKeyBytes, dk.size());
  }
  KeyGenInternal(seed.template first<32>(), seed.template subspan<32, 32>(),
                 ek.template first<kEncapsKeyBytes>(), dk.template first<kDecapsKeyBytes>());
  return absl::OkStatus();
}

template <int K>
absl::Status MlKem<K>::KeyGen(MutBytes ek, MutBytes dk, RandomSource& rng, MutBytes seed_out) {
  if (ek.size() != kEncapsKeyBytes) {
    return SizeError<K>("encapsulation key buffer", kEncapsKeyBytes, ek.size());
  }
  if (dk.size() != kDecapsKeyBytes) {
    return SizeError<K>("decapsulation key buffer", kDecapsKeyBytes, dk.size());
  }
  if (!seed_out.empty() && seed_out.size() != kSeedBytes) {
    return SizeError<K>("seed output buffer", kSeedBytes, seed_out.size());
  }
  // Alg. 19: d, z <- random bytes; a failure of the source is reported, never ignored.
  uint8_t seed[kSeedBytes];
  ZeroOnExit wipe_seed(seed);
  if (absl::Status st = rng.Generate(MutBytes(seed, sizeof(seed))); !st.ok()) {
    return RandomError<K>("key generation", st);
  }
  const Bytes s(seed, sizeof(seed));
  KeyGenInternal(s.first<32>(), s.subspan<32, 32>(), ek.first<kEncapsKeyBytes>(),
                 dk.first<kDecapsKeyBytes>());
  if (!seed_out.empty()) std::memcpy(seed_out.data(), seed, kSeedBytes);
  return absl::OkStatus();
}

template <int K>
absl::Status MlKem<K>::CheckEncapsKey(Bytes ek) {
  if (ek.size() != kEncapsKeyBytes) {
    return SizeError<K>("encapsulation key", kEncapsKeyBytes, ek.size());
  }
  Poly t_hat[K];
  return DecodeEncapsKey<K>(ek.data(), t_hat);
}

template <int K>
absl::Status MlKem<K>::CheckDecapsKey(Bytes dk) {
  using L = Layout<K>;
  if (dk.size() == kSeedBytes) return absl::OkStatus();
  if (dk.size() != kDecapsKeyBytes) return DecapsKeyLengthError<K>(dk.size());
  // §7.3 hash check: H(dk[384k : 768k+32]) == dk[768k+32 : 768k+64].
  uint8_t h[32];
  HashH(dk.subspan(L::kDkEkOffset, L::kEkBytes), h);
  // The verdict is revealed by the returned status anyway: declassify it (not the key bytes).
  uint8_t diff = CtCompare(h, dk.data() + L::kDkHashOffset, 32);
  CtPublic(&diff, 1);
  if (diff != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        Name<K>(), " decapsulation key: H(ek) does not match (FIPS 203 §7.3 hash check)"));
  }
  return absl::OkStatus();
}

template <int K>
absl::Status MlKem<K>::EncapsDerand(Bytes ek, Bytes m, MutBytes ct, MutBytes ss) {
  if (ek.size() != kEncapsKeyBytes) {
    return SizeError<K>("encapsulation key", kEncapsKeyBytes, ek.size());
  }
  if (m.size() != kEncapsRandomBytes) {
    return SizeError<K>("encapsulation randomness m", kEncapsRandomBytes, m.size());
  }
  if (ct.size() != kCiphertextBytes) {
    return SizeError<K>("ciphertext buffer", kCiphertextBytes, ct.size());
  }
  if (ss.size() != kSharedSecretBytes) {
    return SizeError<K>("shared secret buffer", kSharedSecretBytes, ss.size());
  }
  Poly t_hat[K];
  if (absl::Status st = DecodeEncapsKey<K>(ek.data(), t_hat); !st.ok()) return st;
  EncapsInternal<K>(t_hat, ek.data(), m.data(), ct.data(), ss.data());
  return absl::OkStatus();
}

template <int K>
absl::Status MlKem<K>::Encaps(Bytes ek, MutBytes ct, MutBytes ss, RandomSource& rng) {
  // Length checks before drawing randomness; EncapsDerand repeats them (cheap) and does the
  // modulus check.
  if (ek.size() != kEncapsKeyBytes) {
    return SizeError<K>("encapsulation key", kEncapsKeyBytes, ek.size());
  }
  if (ct.size() != kCiphertextBytes) {
    return SizeError<K>("ciphertext buffer", kCiphertextBytes, ct.size());
  }
  if (ss.size() != kSharedSecretBytes) {
    return SizeError<K>("shared secret buffer", kSharedSecretBytes, ss.size());
  }
  // Alg. 20: m <- 32 random bytes.
  uint8_t m[kEncapsRandomBytes];
  ZeroOnExit wipe_m(m);
  if (absl::Status st = rng.Generate(MutBytes(m, sizeof(m))); !st.ok()) {
    return RandomError<K>("encapsulation", st);
  }
  return EncapsDerand(ek, Bytes(m, sizeof(m)), ct, ss);
}

template <int K>
absl::Status MlKem<K>::Decaps(Bytes dk, Bytes ct, MutBytes ss) {
  if (ct.size() != kCiphertextBytes) {
    return SizeError<K>("ciphertext", kCiphertextBytes, ct.size());
  }
  if (ss.size() != kSharedSecretBytes) {
    return SizeError<K>("shared secret buffer", kSharedSecretBytes, ss.size());
  }
  if (dk.size() == kSeedBytes) {
    // Seed form d||z: expand on the stack (Alg. 16), use, wipe.
    uint8_t expanded[kDecapsKeyBytes];
    ZeroOnExit wipe_expanded(expanded);
    ExpandDecapsKey<K>(dk.data(), dk.data() + 32, expanded);
    DecapsInternal<K>(expanded, ct.data(), ss.data());
    return absl::OkStatus();
  }
  if (absl::Status st = CheckDecapsKey(dk); !st.ok()) return st;
  DecapsInternal<K>(dk.data(), ct.data(), ss.data());
  return absl::OkStatus();
}

template <int K>
void MlKem<K>::KeyGenBatch(std::span<KemKeyGenItem> items, RandomSource& rng) {
  for (KemKeyGenItem& item : items) {
    if (item.seed.empty()) {
      item.status = KeyGen(item.ek, item.dk, rng, item.seed_out);
      continue;
    }
    if (!item.seed_out.empty() && item.seed_out.size() != kSeedBytes) {
      item.status = SizeError<K>("seed output buffer", kSeedBytes, item.seed_out.size());
      continue;
    }
    item.status = KeyGenFromSeed(item.seed, item.ek, item.dk);
    if (item.status.ok() && !item.seed_out.empty()) {
      std::memmove(item.seed_out.data(), item.seed.data(), kSeedBytes);
    }
  }
}

template <int K>
void MlKem<K>::EncapsBatch(std::span<KemEncapsItem> items, RandomSource& rng) {
  for (KemEncapsItem& item : items) {
    item.status = item.m.empty() ? Encaps(item.ek, item.ct, item.ss, rng)
                                 : EncapsDerand(item.ek, item.m, item.ct, item.ss);
  }
}

template <int K>
void MlKem<K>::DecapsBatch(std::span<KemDecapsItem> items) {
  for (KemDecapsItem& item : items) item.status = Decaps(item.dk, item.ct, item.ss);
}

template class MlKem<2>;
template class MlKem<3>;
template class MlKem<4>;

}  // namespace pqcd::kernels
