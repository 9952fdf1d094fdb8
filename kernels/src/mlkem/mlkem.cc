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
#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "keccak/backend.h"
#include "keccak/keccak_multi.h"
#include "mlkem/fixed_lanes.h"
#include "mlkem/poly.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

using mlkem::kPolyBytes;
using mlkem::kSymBytes;
using mlkem::Poly;
using mlkem::PolyMulCache;
namespace fixed = mlkem::fixed;

using fixed::kDecapsPlan;
using fixed::kEncapsPlan;
using fixed::kEncryptNoisePlan;
using fixed::kEncryptPlan;
using fixed::kKeyGenPlan;
using fixed::kMatrixTPlan;

// The plans' message lengths match the byte layouts.
template <int K>
constexpr bool PlansMatchLayout() {
  constexpr size_t ek = K * kPolyBytes + kSymBytes;
  return kKeyGenPlan<K>.tasks[0].a_len == ek && kEncapsPlan<K>.tasks[0].a_len == ek &&
         kDecapsPlan<K, true>.tasks[1].a_len == ek &&
         kDecapsPlan<K, true>.tasks[2].b_len == MlKem<K>::kCiphertextBytes &&
         kDecapsPlan<K, false>.tasks[1].b_len == MlKem<K>::kCiphertextBytes;
}
static_assert(PlansMatchLayout<2>() && PlansMatchLayout<3>() && PlansMatchLayout<4>());

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
// Rates in bytes of H = SHA3-256, G = SHA3-512 and J = SHAKE256 (FIPS 202).
constexpr size_t kRateH = 136;
constexpr size_t kRateG = 72;
constexpr size_t kRateJ = Shake256::kRateBytes;

// ---- Hashes of several independent requests side by side (batch entry points) ----------------

// Most items processed together by a batch entry point (fixed-size stack arrays, no heap).
constexpr size_t kBatchChunk = 8;

template <size_t N>
void MultiHashLanes(size_t rate, uint8_t suffix, const uint8_t* const* in, size_t len,
                    const uint8_t* const* tail, size_t tail_len, uint8_t* const* out,
                    size_t out_len, size_t n) {
  for (size_t t0 = 0; t0 < n; t0 += N) {
    const uint8_t* lin[N] = {};
    const uint8_t* ltail[N] = {};
    uint8_t* lout[N] = {};
    for (size_t j = 0; j < N && t0 + j < n; ++j) {
      lin[j] = in[t0 + j];
      ltail[j] = tail != nullptr ? tail[t0 + j] : nullptr;
      lout[j] = out[t0 + j];
    }
    KeccakMulti<N> sponge(rate, suffix);
    sponge.AbsorbOnce2(lin, len, ltail, tail_len);
    sponge.Squeeze(lout, out_len);
  }
}
// out[i] = Keccak[rate, suffix](in[i] || tail[i]) for i < n (n <= kBatchChunk): groups of 8 lanes
// on a Keccak backend that runs 8 side by side (AVX-512), else of 4 (AVX2: x4; the portable
// backend: one state after another). Identical results.
void MultiHash(size_t rate, uint8_t suffix, const uint8_t* const* in, size_t len,
               const uint8_t* const* tail, size_t tail_len, uint8_t* const* out, size_t out_len,
               size_t n) {
  if (keccak::ActiveBackend().lanes >= 8) {
    MultiHashLanes<8>(rate, suffix, in, len, tail, tail_len, out, out_len, n);
  } else {
    MultiHashLanes<4>(rate, suffix, in, len, tail, tail_len, out, out_len, n);
  }
}
// H = SHA3-256, G = SHA3-512, J = SHAKE256(·, 32) (§4.1) over n independent inputs.
void HashHMany(const uint8_t* const* in, size_t len, uint8_t* const* out, size_t n) {
  MultiHash(kRateH, 0x06, in, len, nullptr, 0, out, 32, n);
}
void HashGMany(const uint8_t* const* a, size_t a_len, const uint8_t* const* b, size_t b_len,
               uint8_t* const* out, size_t n) {
  MultiHash(kRateG, 0x06, a, a_len, b, b_len, out, 64, n);
}
void HashJMany(const uint8_t* const* z, const uint8_t* const* c, size_t c_len, uint8_t* const* out,
               size_t n) {
  MultiHash(kRateJ, 0x1f, z, 32, c, c_len, out, 32, n);
}

// FIPS 203 Alg. 13, K-PKE.KeyGen(d), steps 2-20 from (ρ, σ) = G(d || k): writes ek_PKE to ek,
// dk_PKE to dk_pke, and also H(ek) to h_ek (Alg. 16 step 3), whose sponge absorbs ek while the
// rows of t̂ are still being computed: all the Keccak work of KeyGen after G runs on one fixed
// lane plan (noise first, then Â row by row, H as soon as row 0 of t̂ is encoded).
template <int K>
void PkeKeyGenFromRhoSigma(const uint8_t rho_sigma[64], uint8_t* ek, uint8_t* dk_pke,
                           uint8_t h_ek[32]) {
  const uint8_t* rho = rho_sigma;
  const uint8_t* sigma = rho_sigma + 32;

  Poly a[K][K];
  // s and e from CBD_eta1 with nonces 0..k-1 and k..2k-1 (steps 8-15); NTT (16-17).
  Poly se[2 * K];
  Poly* s = se;
  Poly* e = se + K;
  PolyMulCache s_cache[K];
  ZeroOnExit wipe_se(se);
  ZeroOnExit wipe_s_cache(s_cache);
  std::memcpy(ek + K * kPolyBytes, rho, kSymBytes);  // ek = ByteEncode12(t̂) || ρ (step 19)

  fixed::PlanIo io;
  io.hash_a[0] = ek;
  io.hash_out[0] = h_ek;
  io.rho = rho;
  io.seed = sigma;
  io.matrix = &a[0][0];
  io.noise = se;
  int rows = 0;
  fixed::LaneRunner lanes;
  lanes.Run<kKeyGenPlan<K>>(io, [&](auto step) {
    // t̂ = Â ∘ ŝ + ê (step 18), row by row as soon as the plan has its inputs; ByteEncode12
    // (19). NTT(s), NTT(e) (16-17) just before their first use.
    constexpr int kRows = kKeyGenPlan<K>.steps[decltype(step)::value].rows_after;
    for (; rows < kRows; ++rows) {
      if (rows == 0) {
        for (int i = 0; i < K; ++i) {
          mlkem::PolyNtt(s[i]);
          mlkem::PolyMulCacheCompute(s_cache[i], s[i]);
        }
      }
      mlkem::PolyNtt(e[rows]);
      Poly t;
      mlkem::PolyBasemulAcc(t, a[rows], s, s_cache, K);  // R^-1 · (Â ∘ ŝ)[i]
      mlkem::PolyToMont(t);                              // back to the normal domain
      mlkem::PolyAdd(t, e[rows]);
      mlkem::PolyReduceCanonical(t);
      mlkem::PolyEncode12(ek + rows * kPolyBytes, t);
    }
  });

  // dk_PKE = ByteEncode12(ŝ) (step 20).
  for (int i = 0; i < K; ++i) {
    mlkem::PolyReduceCanonical(s[i]);
    mlkem::PolyEncode12(dk_pke + i * kPolyBytes, s[i]);
  }
}

template <int K>
void PkeKeyGen(const uint8_t d[kSymBytes], uint8_t* ek, uint8_t* dk_pke, uint8_t h_ek[32]) {
  // (ρ, σ) = G(d || k) (step 1).
  const uint8_t k_byte = static_cast<uint8_t>(K);
  uint8_t rho_sigma[64];
  ZeroOnExit wipe_rho_sigma(rho_sigma);
  HashG(Bytes(d, kSymBytes), Bytes(&k_byte, 1), rho_sigma);
  PkeKeyGenFromRhoSigma<K>(rho_sigma, ek, dk_pke, h_ek);
}

// The sampled inputs of K-PKE.Encrypt (Alg. 14): Â^T (steps 4-8, public) and y, e1, e2 (steps
// 9-17, secret, nonces 0..2k), with the secret working space of steps 18-23 next to them so that
// one wipe covers all of it.
template <int K>
struct EncryptSamples {
  Poly at[K][K];
  struct Secret {
    Poly noise[2 * K + 1];  // y[0..k), e1[0..k), e2
    Poly scratch;           // u, then v, before compression
    PolyMulCache y_cache[K];
  } sec;
  ~EncryptSamples() { SecureZero(&sec, sizeof(sec)); }
};

// The Encrypt samples' part of a PlanIo: Â^T into es.at, y, e1, e2 from PRF(coins, 0..2k).
template <int K>
void SetEncryptIo(fixed::PlanIo& io, EncryptSamples<K>& es, const uint8_t rho[kSymBytes],
                  const uint8_t* coins) {
  io.rho = rho;
  io.seed = coins;
  io.matrix = &es.at[0][0];
  io.noise = es.sec.noise;
}

// FIPS 203 Alg. 14, steps 18-23, on the sampled Â^T, y, e1, e2 (es.sec is consumed; wiped by
// its destructor).
template <int K>
void PkeEncryptArith(const Poly (&t_hat)[K], EncryptSamples<K>& es, const uint8_t m[kSymBytes],
                     uint8_t* ct) {
  using P = MlKemParams<K>;
  using L = Layout<K>;
  Poly* y = es.sec.noise;
  Poly* e1 = es.sec.noise + K;
  Poly& e2 = es.sec.noise[2 * K];
  Poly& u = es.sec.scratch;
  Poly& v = es.sec.scratch;
  PolyMulCache* y_cache = es.sec.y_cache;
  // ŷ = NTT(y) (step 18).
  for (int i = 0; i < K; ++i) {
    mlkem::PolyNtt(y[i]);
    mlkem::PolyMulCacheCompute(y_cache[i], y[i]);
  }

  // u = NTT^-1(Â^T ∘ ŷ) + e1 (step 19); c1 = ByteEncode_du(Compress_du(u)) (step 22).
  for (int i = 0; i < K; ++i) {
    mlkem::PolyBasemulAcc(u, es.at[i], y, y_cache, K);
    mlkem::PolyInvNttTimesR(u);
    mlkem::PolyAddCompressEncode<P::du>(ct + i * 32 * P::du, u, e1[i], nullptr);
  }

  // v = NTT^-1(t̂^T ∘ ŷ) + e2 + μ with μ = Decompress_1(ByteDecode_1(m)) (steps 20-21);
  // c2 = ByteEncode_dv(Compress_dv(v)) (step 23).
  mlkem::PolyBasemulAcc(v, t_hat, y, y_cache, K);
  mlkem::PolyInvNttTimesR(v);
  mlkem::PolyAddCompressEncode<P::dv>(ct + L::kC1Bytes, v, e2, m);
}

// FIPS 203 Alg. 14, K-PKE.Encrypt(ek_PKE, m, r) with t̂ already decoded (canonical) and ρ given.
template <int K>
void PkeEncrypt(const Poly (&t_hat)[K], const uint8_t rho[kSymBytes], const uint8_t m[kSymBytes],
                const uint8_t coins[kSymBytes], uint8_t* ct) {
  EncryptSamples<K> es;
  {
    fixed::PlanIo io;
    SetEncryptIo<K>(io, es, rho, coins);
    fixed::LaneRunner lanes;
    lanes.Run<kEncryptPlan<K>>(io, [](auto) {});
  }
  PkeEncryptArith<K>(t_hat, es, m, ct);
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
  ZeroOnExit wipe_s(s);
  ZeroOnExit wipe_w(w);
  ZeroOnExit wipe_v(v);
  for (int i = 0; i < K; ++i) mlkem::PolyDecode12(s[i], dk_pke + i * kPolyBytes);
  // w = v' - NTT^-1(ŝ^T ∘ NTT(u')) (step 6); m = ByteEncode_1(Compress_1(w)) (step 7).
  mlkem::PolyBasemulAcc(w, s, u, u_cache, K);
  mlkem::PolyInvNttTimesR(w);
  mlkem::PolyDecodeDecompress<P::dv>(v, ct + L::kC1Bytes);  // v' (step 4)
  mlkem::PolySubToMessage(m, v, w);
}

// FIPS 203 Alg. 16 writing ek only inside dk (dk = dk_PKE || ek || H(ek) || z).
template <int K>
void ExpandDecapsKey(const uint8_t d[kSymBytes], const uint8_t z[kSymBytes], uint8_t* dk) {
  using L = Layout<K>;
  PkeKeyGen<K>(d, dk + L::kDkEkOffset, dk, dk + L::kDkHashOffset);
  std::memcpy(dk + L::kDkZOffset, z, kSymBytes);
}

// FIPS 203 Alg. 17, ML-KEM.Encaps_internal(ek, m), with t̂ decoded and checked by the caller.
// H(ek) (9 permutations for k = 3) runs in one lane while the others sample Â^T; then G, then the
// 2k + 1 PRF calls.
template <int K>
void EncapsInternal(const Poly (&t_hat)[K], const uint8_t* ek, const uint8_t m[kSymBytes],
                    uint8_t* ct, uint8_t ss[32]) {
  uint8_t h[32];
  uint8_t key_coins[64];  // (K, r)
  ZeroOnExit wipe_key_coins(key_coins);
  EncryptSamples<K> es;
  {
    // (K, r) = G(m || H(ek)) (step 1), then the samples of K-PKE.Encrypt on r.
    fixed::PlanIo io;
    io.hash_a[0] = ek;
    io.hash_out[0] = h;
    io.hash_a[1] = m;
    io.hash_b[1] = h;
    io.hash_out[1] = key_coins;
    SetEncryptIo<K>(io, es, ek + K * kPolyBytes, key_coins + 32);
    fixed::LaneRunner lanes;
    lanes.Run<kEncapsPlan<K>>(io, [](auto) {});
  }
  // c = K-PKE.Encrypt(ek, m, r) (step 2).
  PkeEncryptArith<K>(t_hat, es, m, ct);
  std::memcpy(ss, key_coins, 32);
}

// Steps 9-11 of Alg. 18: ss = K' if c == c' else K̄, without a branch: the whole ciphertext is
// compared and the difference turned into a 0x00/0xff mask.
template <int K>
void SelectSharedSecret(const uint8_t* ct, const uint8_t* ct_prime, const uint8_t k_prime[32],
                        const uint8_t k_bar[32], uint8_t ss[32]) {
  using L = Layout<K>;
  std::memcpy(ss, k_prime, 32);
  mlkem::CtSelect32(ss, k_bar, mlkem::CtDiffMask(ct, ct_prime, L::kCtBytes));
}

// Steps 8-11 of Alg. 18: c' = K-PKE.Encrypt(ek_PKE, m', r'), then ss = K' if c == c' else K̄.
// key_coins = (K', r'). ct_prime is scratch space of kCtBytes.
template <int K>
void DecapsReencrypt(const uint8_t* dk, const uint8_t* ct, const uint8_t m_prime[32],
                     uint8_t key_coins[64], const uint8_t k_bar[32], uint8_t* ct_prime,
                     uint8_t ss[32]) {
  using L = Layout<K>;
  const uint8_t* ek = dk + L::kDkEkOffset;
  // c' = K-PKE.Encrypt(ek_PKE, m', r') (step 8). ByteDecode12 reduces mod q (no modulus check:
  // FIPS 203 checks ek only at encapsulation; dk is covered by the hash check).
  Poly t_hat[K];
  for (int i = 0; i < K; ++i) mlkem::PolyDecode12(t_hat[i], ek + i * kPolyBytes);
  PkeEncrypt<K>(t_hat, ek + K * kPolyBytes, m_prime, key_coins + 32, ct_prime);
  SelectSharedSecret<K>(ct, ct_prime, key_coins, k_bar, ss);
}

// DecapsReencrypt for `count` batch items whose keys share one ek (public): t̂ decoded and Â^T
// sampled once, then per item the noise of K-PKE.Encrypt on its r', the arithmetic and the
// choice of K' or K̄. The same outputs as DecapsReencrypt item by item.
template <int K>
void DecapsReencryptRun(const uint8_t* ek, KemDecapsItem* const* items, size_t count,
                        const uint8_t (*m_prime)[32], uint8_t (*key_coins)[64],
                        const uint8_t (*k_bar)[32], uint8_t* ct_prime) {
  Poly t_hat[K];
  for (int i = 0; i < K; ++i) mlkem::PolyDecode12(t_hat[i], ek + i * kPolyBytes);
  EncryptSamples<K> es;
  {
    fixed::PlanIo io;
    io.rho = ek + K * kPolyBytes;
    io.matrix = &es.at[0][0];
    fixed::LaneRunner lanes;
    lanes.Run<kMatrixTPlan<K>>(io, [](auto) {});
  }
  for (size_t r = 0; r < count; ++r) {
    {
      fixed::PlanIo io;
      io.seed = key_coins[r] + 32;
      io.noise = es.sec.noise;
      fixed::LaneRunner lanes;
      lanes.Run<kEncryptNoisePlan<K>>(io, [](auto) {});
    }
    PkeEncryptArith<K>(t_hat, es, m_prime[r], ct_prime);  // reads es.at, consumes es.sec
    SelectSharedSecret<K>(items[r]->ct.data(), ct_prime, key_coins[r], k_bar[r],
                          items[r]->ss.data());
  }
}

// FIPS 203 Alg. 18, ML-KEM.Decaps_internal(dk, c) on an expanded dk, with the §7.3 hash check
// when check_hash (returns false, ss untouched, if H(ek) != h). After K-PKE.Decrypt, all the
// Keccak work runs on one fixed lane plan: G(m' || h), the hash check H(ek) and J(z || c) (9
// permutations each for k = 3) side by side with Â^T, then the PRF calls of the re-encryption.
template <int K>
bool DecapsInternal(const uint8_t* dk, const uint8_t* ct, uint8_t ss[32], bool check_hash) {
  using L = Layout<K>;
  const uint8_t* ek = dk + L::kDkEkOffset;
  const uint8_t* h = dk + L::kDkHashOffset;
  const uint8_t* z = dk + L::kDkZOffset;

  // m' = K-PKE.Decrypt(dk_PKE, c) (step 5).
  uint8_t m_prime[32];
  uint8_t key_coins[64];  // (K', r')
  uint8_t k_bar[32];
  uint8_t h_check[32];
  ZeroOnExit wipe_m(m_prime);
  ZeroOnExit wipe_kc(key_coins);
  ZeroOnExit wipe_kbar(k_bar);
  PkeDecrypt<K>(dk, ct, m_prime);
  EncryptSamples<K> es;
  {
    // (K', r') = G(m' || h) (step 6); the §7.3 hash check; K̄ = J(z || c) (step 7); the
    // samples of the re-encryption on r'.
    fixed::PlanIo io;
    io.hash_a[0] = m_prime;
    io.hash_b[0] = h;
    io.hash_out[0] = key_coins;
    io.hash_a[1] = ek;
    io.hash_out[1] = h_check;
    io.hash_a[2] = z;
    io.hash_b[2] = ct;
    io.hash_out[2] = k_bar;
    SetEncryptIo<K>(io, es, ek + K * kPolyBytes, key_coins + 32);
    fixed::LaneRunner lanes;
    if (check_hash) {
      lanes.Run<kDecapsPlan<K, true>>(io, [](auto) {});
    } else {
      lanes.Run<kDecapsPlan<K, false>>(io, [](auto) {});
    }
  }
  if (check_hash) {
    // The verdict is revealed by the returned status anyway: declassify it (not the key bytes).
    uint8_t diff = CtCompare(h_check, h, 32);
    CtPublic(&diff, 1);
    if (diff != 0) return false;
  }
  // c' = K-PKE.Encrypt(ek_PKE, m', r') (step 8), t̂ = ByteDecode12 of ek (reduced mod q, no
  // modulus check: dk is covered by the hash check).
  Poly t_hat[K];
  for (int i = 0; i < K; ++i) mlkem::PolyDecode12(t_hat[i], ek + i * kPolyBytes);
  uint8_t ct_prime[L::kCtBytes];
  ZeroOnExit wipe_ct(ct_prime);
  PkeEncryptArith<K>(t_hat, es, m_prime, ct_prime);
  SelectSharedSecret<K>(ct, ct_prime, key_coins, k_bar, ss);
  return true;
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
absl::Status HashCheckError() {
  return absl::InvalidArgumentError(absl::StrCat(
      Name<K>(), " decapsulation key: H(ek) does not match (FIPS 203 §7.3 hash check)"));
}

// 0xffffffff when some coefficient of a (canonical) is outside [-eta, eta] mod q, i.e. in
// (eta, q - eta), else 0; no data-dependent branch.
uint32_t OutsideEta(const Poly& a, int eta) {
  uint32_t bad = 0;
  for (int i = 0; i < mlkem::kN; ++i) {
    const int32_t v = a.c[i];
    // Both differences negative iff eta < v < q - eta.
    bad |= static_cast<uint32_t>((eta - v) & (v - (mlkem::kQ - eta))) >> 31;
  }
  return 0u - bad;
}

// The rest of MlKem<K>::CheckExpandedPrivateKey once the length and §7.3 hash checks passed.
// dk = ByteEncode12(ŝ) || ek || H(ek) || z with ek = ByteEncode12(t̂) || ρ, where key generation
// (Alg. 13) made ŝ = NTT(s), t̂ = Â ∘ ŝ + NTT(e) with s, e from SamplePolyCBD_eta1, so every
// coefficient of s and e is in [-eta1, eta1]. Nothing else in dk ties ŝ to t̂: recover
// s = NTT^-1(ŝ) and e = NTT^-1(t̂ - Â ∘ ŝ) and check their range. Only z (random) is unchecked.
template <int K>
absl::Status CheckExpandedDecapsKey(const uint8_t* dk) {
  using L = Layout<K>;
  constexpr int kEta1 = MlKemParams<K>::eta1;
  const uint8_t* ek = dk + L::kDkEkOffset;
  CtPublic(ek, L::kEkBytes);  // the public key
  struct alignas(64) Scratch {
    Poly a[K][K];  // Â (public)
    Poly t_hat[K];
    Poly one_hat;  // NTT(1): BasemulAcc with it multiplies by R^-1
    PolyMulCache one_cache;
    struct Secret {
      Poly s_hat[K];
      PolyMulCache s_cache[K];
      Poly x, y;
      uint8_t encoded[kPolyBytes];
    } sec;
  };
  Scratch ws;
  ZeroOnExit wipe(ws.sec);
  // The embedded ek passes the §7.2 modulus check (t̂ canonical).
  if (absl::Status st = DecodeEncapsKey<K>(ek, ws.t_hat); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Name<K>(), " decapsulation key: its ek fails the FIPS 203 §7.2 modulus check"));
  }
  {  // Â[i][j] = SampleNTT(ρ || j || i) (Alg. 13 steps 3-7).
    fixed::PlanIo io;
    io.rho = ek + L::kPolyVecBytes;
    io.matrix = &ws.a[0][0];
    fixed::LaneRunner lanes;
    lanes.Run<fixed::kMatrixPlan<K>>(io, [](auto) {});
  }
  ws.one_hat = Poly{};
  ws.one_hat.c[0] = 1;
  mlkem::PolyNtt(ws.one_hat);
  mlkem::PolyMulCacheCompute(ws.one_cache, ws.one_hat);

  uint8_t non_canonical = 0;
  uint32_t s_bad = 0, e_bad = 0;
  for (int i = 0; i < K; ++i) {
    // ŝ[i] = ByteDecode12 (reduces mod q); key generation wrote canonical values, so the
    // encoding must come back byte for byte.
    const uint8_t* in = dk + i * kPolyBytes;
    mlkem::PolyDecode12(ws.sec.s_hat[i], in);
    mlkem::PolyEncode12(ws.sec.encoded, ws.sec.s_hat[i]);
    non_canonical |= CtCompare(ws.sec.encoded, in, kPolyBytes);
    mlkem::PolyMulCacheCompute(ws.sec.s_cache[i], ws.sec.s_hat[i]);
    // s[i] = NTT^-1(ŝ[i]) = InvNttTimesR(R^-1 ŝ[i]).
    mlkem::PolyBasemulAcc(ws.sec.x, &ws.sec.s_hat[i], &ws.one_hat, &ws.one_cache, 1);
    mlkem::PolyInvNttTimesR(ws.sec.x);
    mlkem::PolyReduceCanonical(ws.sec.x);
    s_bad |= OutsideEta(ws.sec.x, kEta1);
  }
  for (int i = 0; i < K; ++i) {
    // e[i] = NTT^-1(t̂[i] - (Â ∘ ŝ)[i]) = InvNttTimesR(R^-1 t̂[i] - R^-1 (Â ∘ ŝ)[i]).
    mlkem::PolyBasemulAcc(ws.sec.x, ws.a[i], ws.sec.s_hat, ws.sec.s_cache, K);
    mlkem::PolyBasemulAcc(ws.sec.y, &ws.t_hat[i], &ws.one_hat, &ws.one_cache, 1);
    mlkem::PolySub(ws.sec.y, ws.sec.x);  // |.| < 2q
    mlkem::PolyReduceCanonical(ws.sec.y);
    mlkem::PolyInvNttTimesR(ws.sec.y);
    mlkem::PolyReduceCanonical(ws.sec.y);
    e_bad |= OutsideEta(ws.sec.y, kEta1);
  }
  // Each verdict is the answer (which part is inconsistent); nothing else is revealed.
  CtPublic(&non_canonical, sizeof(non_canonical));
  CtPublic(&s_bad, sizeof(s_bad));
  CtPublic(&e_bad, sizeof(e_bad));
  if (non_canonical != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        Name<K>(), " decapsulation key: dk_PKE holds a value >= q (not ByteEncode12 of ŝ)"));
  }
  if (s_bad != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Name<K>(), " decapsulation key: s = NTT^-1(ŝ) has a coefficient outside [-",
                     kEta1, ", ", kEta1, "] (FIPS 203 Alg. 13)"));
  }
  if (e_bad != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Name<K>(), " decapsulation key: ek does not match dk_PKE (t̂ - Â ∘ ŝ is not ",
                     "the NTT of a vector with coefficients in [-", kEta1, ", ", kEta1, "])"));
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

// The single operations are batches of one: one entry path per operation, whose checks, error
// messages and randomness draws are those of the batch entry points. A chunk with one live item
// runs the single-request lane plan there (EncapsInternal, DecapsInternal, ExpandDecapsKey).
template <int K>
absl::Status MlKem<K>::KeyGenFromSeed(Bytes seed, MutBytes ek, MutBytes dk) {
  if (seed.size() != kSeedBytes) return SizeError<K>("seed", kSeedBytes, seed.size());
  KemKeyGenItem item{seed, ek, dk, {}, {}};
  KeyGenBatch(std::span(&item, 1), OsRandom());  // a seed is given: nothing is drawn
  return item.status;
}

template <int K>
absl::Status MlKem<K>::KeyGen(MutBytes ek, MutBytes dk, RandomSource& rng, MutBytes seed_out) {
  KemKeyGenItem item{{}, ek, dk, seed_out, {}};
  KeyGenBatch(std::span(&item, 1), rng);
  return item.status;
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
  if (diff != 0) return HashCheckError<K>();
  return absl::OkStatus();
}

template <int K>
absl::Status MlKem<K>::CheckExpandedPrivateKey(Bytes dk, Bytes ek) {
  using L = Layout<K>;
  if (dk.size() != kDecapsKeyBytes) {
    return SizeError<K>("expanded decapsulation key", kDecapsKeyBytes, dk.size());
  }
  if (!ek.empty() && ek.size() != kEncapsKeyBytes) {
    return SizeError<K>("encapsulation key", kEncapsKeyBytes, ek.size());
  }
  if (absl::Status st = CheckDecapsKey(dk); !st.ok()) return st;  // §7.3 hash check
  if (absl::Status st = CheckExpandedDecapsKey<K>(dk.data()); !st.ok()) return st;
  // ek is public: a plain comparison.
  if (!ek.empty() && std::memcmp(ek.data(), dk.data() + L::kDkEkOffset, kEncapsKeyBytes) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Name<K>(), " encapsulation key: does not match the decapsulation key"));
  }
  return absl::OkStatus();
}

template <int K>
absl::Status MlKem<K>::EncapsDerand(Bytes ek, Bytes m, MutBytes ct, MutBytes ss) {
  if (m.size() != kEncapsRandomBytes) {
    return SizeError<K>("encapsulation randomness m", kEncapsRandomBytes, m.size());
  }
  KemEncapsItem item{ek, m, ct, ss, {}};
  EncapsBatch(std::span(&item, 1), OsRandom());  // m is given: nothing is drawn
  return item.status;
}

template <int K>
absl::Status MlKem<K>::Encaps(Bytes ek, MutBytes ct, MutBytes ss, RandomSource& rng) {
  KemEncapsItem item{ek, {}, ct, ss, {}};
  EncapsBatch(std::span(&item, 1), rng);
  return item.status;
}

template <int K>
absl::Status MlKem<K>::Decaps(Bytes dk, Bytes ct, MutBytes ss) {
  KemDecapsItem item{dk, ct, ss, {}};
  DecapsBatch(std::span(&item, 1));
  return item.status;
}

// Batch entry points. Each chunk of up to kBatchChunk items goes through three phases:
//  1. in item order, exactly as the single operation would: length checks, randomness draws (so
//     the randomness source is consumed identically), the §7.2/§7.3 input checks; an item that
//     fails gets its own status and leaves the chunk;
//  2. the hashes of the remaining items (G, H(ek), J, and the H of the §7.3 check) side by side on
//     multi-lane Keccak, the matrix and noise sampling inside each item on multi-lane Keccak too;
//  3. the per-item lattice arithmetic.
// Outputs are byte-identical to the single operations. Secret chunk state is wiped on exit.
template <int K>
void MlKem<K>::KeyGenBatch(std::span<KemKeyGenItem> items, RandomSource& rng) {
  using L = Layout<K>;
  const uint8_t k_byte = static_cast<uint8_t>(K);
  for (size_t c0 = 0; c0 < items.size(); c0 += kBatchChunk) {
    const size_t count = std::min(kBatchChunk, items.size() - c0);
    uint8_t seeds[kBatchChunk][kSeedBytes];
    uint8_t rho_sigma[kBatchChunk][64];
    ZeroOnExit wipe_seeds(seeds);
    ZeroOnExit wipe_rs(rho_sigma);
    KemKeyGenItem* live[kBatchChunk];
    size_t n = 0;
    for (size_t i = 0; i < count; ++i) {
      KemKeyGenItem& item = items[c0 + i];
      if (!item.seed_out.empty() && item.seed_out.size() != kSeedBytes) {
        item.status = SizeError<K>("seed output buffer", kSeedBytes, item.seed_out.size());
        continue;
      }
      if (!item.seed.empty() && item.seed.size() != kSeedBytes) {
        item.status = SizeError<K>("seed", kSeedBytes, item.seed.size());
        continue;
      }
      if (item.ek.size() != kEncapsKeyBytes) {
        item.status = SizeError<K>("encapsulation key buffer", kEncapsKeyBytes, item.ek.size());
        continue;
      }
      if (item.dk.size() != kDecapsKeyBytes) {
        item.status = SizeError<K>("decapsulation key buffer", kDecapsKeyBytes, item.dk.size());
        continue;
      }
      if (item.seed.empty()) {
        // Alg. 19: d, z <- random bytes.
        if (absl::Status st = rng.Generate(MutBytes(seeds[n], kSeedBytes)); !st.ok()) {
          item.status = RandomError<K>("key generation", st);
          continue;
        }
      } else {
        std::memcpy(seeds[n], item.seed.data(), kSeedBytes);
      }
      item.status = absl::OkStatus();
      live[n++] = &item;
    }
    if (n == 1) {
      // One request: Alg. 16 on its own (G alone instead of a one-lane multi-hash).
      KemKeyGenItem& item = *live[0];
      ExpandDecapsKey<K>(seeds[0], seeds[0] + kSymBytes, item.dk.data());
      std::memcpy(item.ek.data(), item.dk.data() + L::kDkEkOffset, kEncapsKeyBytes);
      if (!item.seed_out.empty()) std::memcpy(item.seed_out.data(), seeds[0], kSeedBytes);
      continue;
    }
    // (ρ, σ) = G(d || k) for every item (Alg. 13 step 1).
    const uint8_t* g_in[kBatchChunk];
    const uint8_t* g_tail[kBatchChunk];
    uint8_t* g_out[kBatchChunk];
    for (size_t i = 0; i < n; ++i) {
      g_in[i] = seeds[i];
      g_tail[i] = &k_byte;
      g_out[i] = rho_sigma[i];
    }
    HashGMany(g_in, kSymBytes, g_tail, 1, g_out, n);
    // K-PKE.KeyGen steps 2-20 and H(ek) per item, into dk = dk_PKE || ek || H(ek) || z.
    for (size_t i = 0; i < n; ++i) {
      uint8_t* dk = live[i]->dk.data();
      PkeKeyGenFromRhoSigma<K>(rho_sigma[i], dk + L::kDkEkOffset, dk, dk + L::kDkHashOffset);
    }
    for (size_t i = 0; i < n; ++i) {
      KemKeyGenItem& item = *live[i];
      std::memcpy(item.dk.data() + L::kDkZOffset, seeds[i] + 32, kSymBytes);
      std::memcpy(item.ek.data(), item.dk.data() + L::kDkEkOffset, kEncapsKeyBytes);
      if (!item.seed_out.empty()) std::memcpy(item.seed_out.data(), seeds[i], kSeedBytes);
    }
  }
}

template <int K>
void MlKem<K>::EncapsBatch(std::span<KemEncapsItem> items, RandomSource& rng) {
  using L = Layout<K>;
  for (size_t c0 = 0; c0 < items.size(); c0 += kBatchChunk) {
    const size_t count = std::min(kBatchChunk, items.size() - c0);
    uint8_t ms[kBatchChunk][kEncapsRandomBytes];
    uint8_t hs[kBatchChunk][32];
    uint8_t key_coins[kBatchChunk][64];
    Poly t_hat[kBatchChunk][K];
    ZeroOnExit wipe_ms(ms);
    ZeroOnExit wipe_kc(key_coins);
    KemEncapsItem* live[kBatchChunk];
    size_t n = 0;
    for (size_t i = 0; i < count; ++i) {
      KemEncapsItem& item = items[c0 + i];
      if (item.ek.size() != kEncapsKeyBytes) {
        item.status = SizeError<K>("encapsulation key", kEncapsKeyBytes, item.ek.size());
        continue;
      }
      if (!item.m.empty() && item.m.size() != kEncapsRandomBytes) {
        item.status = SizeError<K>("encapsulation randomness m", kEncapsRandomBytes, item.m.size());
        continue;
      }
      if (item.ct.size() != kCiphertextBytes) {
        item.status = SizeError<K>("ciphertext buffer", kCiphertextBytes, item.ct.size());
        continue;
      }
      if (item.ss.size() != kSharedSecretBytes) {
        item.status = SizeError<K>("shared secret buffer", kSharedSecretBytes, item.ss.size());
        continue;
      }
      if (item.m.empty()) {
        // Alg. 20: m <- 32 random bytes (drawn before the modulus check, as Encaps does).
        if (absl::Status st = rng.Generate(MutBytes(ms[n], kEncapsRandomBytes)); !st.ok()) {
          item.status = RandomError<K>("encapsulation", st);
          continue;
        }
      } else {
        std::memcpy(ms[n], item.m.data(), kEncapsRandomBytes);
      }
      if (absl::Status st = DecodeEncapsKey<K>(item.ek.data(), t_hat[n]); !st.ok()) {
        item.status = st;
        continue;
      }
      item.status = absl::OkStatus();
      live[n++] = &item;
    }
    if (n == 1) {
      // One request: its own fixed lane plan (H(ek) beside the rows of Â^T) costs about 0.7x
      // of the cross-request path below with three idle lanes (bench/RESULTS.md, "batch of
      // one"): the single-request strategy of the same entry point.
      EncapsInternal<K>(t_hat[0], live[0]->ek.data(), ms[0], live[0]->ct.data(),
                        live[0]->ss.data());
      continue;
    }
    // H(ek), then (K, r) = G(m || H(ek)) for every item (Alg. 17 step 1).
    const uint8_t* in[kBatchChunk];
    const uint8_t* tail[kBatchChunk];
    uint8_t* out[kBatchChunk];
    for (size_t i = 0; i < n; ++i) {
      in[i] = live[i]->ek.data();
      out[i] = hs[i];
    }
    HashHMany(in, L::kEkBytes, out, n);
    for (size_t i = 0; i < n; ++i) {
      in[i] = ms[i];
      tail[i] = hs[i];
      out[i] = key_coins[i];
    }
    HashGMany(in, kSymBytes, tail, 32, out, n);
    // c = K-PKE.Encrypt(ek, m, r) per item (step 2).
    for (size_t i = 0; i < n; ++i) {
      KemEncapsItem& item = *live[i];
      PkeEncrypt<K>(t_hat[i], item.ek.data() + K * kPolyBytes, ms[i], key_coins[i] + 32,
                    item.ct.data());
      std::memcpy(item.ss.data(), key_coins[i], 32);
    }
  }
}

template <int K>
void MlKem<K>::DecapsBatch(std::span<KemDecapsItem> items) {
  using L = Layout<K>;
  for (size_t c0 = 0; c0 < items.size(); c0 += kBatchChunk) {
    const size_t count = std::min(kBatchChunk, items.size() - c0);
    // Expanded keys of seed-form items (secret), and the per-item Decaps state.
    uint8_t expanded[kBatchChunk][kDecapsKeyBytes];
    uint8_t m_prime[kBatchChunk][32];
    uint8_t key_coins[kBatchChunk][64];
    uint8_t k_bar[kBatchChunk][32];
    uint8_t ct_prime[L::kCtBytes];
    uint8_t check[kBatchChunk][32];
    ZeroOnExit wipe_exp(expanded);
    ZeroOnExit wipe_m(m_prime);
    ZeroOnExit wipe_kc(key_coins);
    ZeroOnExit wipe_kbar(k_bar);
    ZeroOnExit wipe_ct(ct_prime);
    KemDecapsItem* cand[kBatchChunk];
    const uint8_t* cand_dk[kBatchChunk];
    bool needs_check[kBatchChunk];
    size_t nc = 0;
    for (size_t i = 0; i < count; ++i) {
      KemDecapsItem& item = items[c0 + i];
      if (item.ct.size() != kCiphertextBytes) {
        item.status = SizeError<K>("ciphertext", kCiphertextBytes, item.ct.size());
        continue;
      }
      if (item.ss.size() != kSharedSecretBytes) {
        item.status = SizeError<K>("shared secret buffer", kSharedSecretBytes, item.ss.size());
        continue;
      }
      if (item.dk.size() == kSeedBytes && !item.prepared) {
        // Seed form d||z: expand (Alg. 16).
        ExpandDecapsKey<K>(item.dk.data(), item.dk.data() + 32, expanded[nc]);
        cand_dk[nc] = expanded[nc];
        needs_check[nc] = false;
      } else if (item.dk.size() == kDecapsKeyBytes) {
        // A prepared key was checked when it was prepared.
        cand_dk[nc] = item.dk.data();
        needs_check[nc] = !item.prepared;
      } else {
        item.status = DecapsKeyLengthError<K>(item.dk.size());
        continue;
      }
      cand[nc++] = &item;
    }
    if (nc == 1) {
      // One request: the single-request fixed lane plan (G, the §7.3 hash check and J beside
      // the rows of Â^T) costs about 0.55x of the cross-request path below (bench/RESULTS.md,
      // "batch of one").
      KemDecapsItem& item = *cand[0];
      item.status = DecapsInternal<K>(cand_dk[0], item.ct.data(), item.ss.data(), needs_check[0])
                        ? absl::OkStatus()
                        : HashCheckError<K>();
      continue;
    }
    // §7.3 hash check of the expanded keys given unchecked: H(ek) side by side, compared with the
    // stored h. H(ek) depends on ek alone, which is public, so items with equal ek (one key sent
    // many times in a Batch or packed message) share one hash, each compared with its own h; ek
    // is compared with memcmp, which reveals nothing secret.
    const uint8_t* in[kBatchChunk];
    const uint8_t* tail[kBatchChunk];
    uint8_t* out[kBatchChunk];
    size_t hashed_as[kBatchChunk];  // the item whose H(ek) this item's check uses
    size_t nh = 0;
    for (size_t i = 0; i < nc; ++i) {
      if (!needs_check[i]) continue;
      CtPublic(cand_dk[i] + L::kDkEkOffset, L::kEkBytes);  // the public key
      hashed_as[i] = i;
      for (size_t j = 0; j < i; ++j) {
        if (needs_check[j] && hashed_as[j] == j &&
            std::memcmp(cand_dk[j] + L::kDkEkOffset, cand_dk[i] + L::kDkEkOffset, L::kEkBytes) ==
                0) {
          hashed_as[i] = j;
          break;
        }
      }
      if (hashed_as[i] != i) continue;
      in[nh] = cand_dk[i] + L::kDkEkOffset;
      out[nh++] = check[i];
    }
    HashHMany(in, L::kEkBytes, out, nh);
    KemDecapsItem* live[kBatchChunk];
    const uint8_t* dks[kBatchChunk];
    size_t n = 0;
    for (size_t i = 0; i < nc; ++i) {
      if (needs_check[i]) {
        uint8_t diff = CtCompare(check[hashed_as[i]], cand_dk[i] + L::kDkHashOffset, 32);
        CtPublic(&diff, 1);  // revealed by the status anyway
        if (diff != 0) {
          cand[i]->status = HashCheckError<K>();
          continue;
        }
      }
      cand[i]->status = absl::OkStatus();
      live[n] = cand[i];
      dks[n++] = cand_dk[i];
    }
    // m' = K-PKE.Decrypt(dk_PKE, c) per item (Alg. 18 step 5).
    for (size_t i = 0; i < n; ++i) PkeDecrypt<K>(dks[i], live[i]->ct.data(), m_prime[i]);
    // (K', r') = G(m' || h) and K̄ = J(z || c) side by side (steps 6-7).
    for (size_t i = 0; i < n; ++i) {
      in[i] = m_prime[i];
      tail[i] = dks[i] + L::kDkHashOffset;
      out[i] = key_coins[i];
    }
    HashGMany(in, kSymBytes, tail, 32, out, n);
    for (size_t i = 0; i < n; ++i) {
      in[i] = dks[i] + L::kDkZOffset;
      tail[i] = live[i]->ct.data();
      out[i] = k_bar[i];
    }
    HashJMany(in, tail, L::kCtBytes, out, n);
    // Re-encryption and the constant-time choice of K' or K̄ per item (steps 8-11). Items next to
    // each other with one ek (a key sent many times, one held key) share t̂ and Â^T: decoded and
    // sampled once per run, only the noise is sampled per item. ek is public.
    for (size_t i = 0; i < n;) {
      const uint8_t* ek = dks[i] + L::kDkEkOffset;
      CtPublic(ek, L::kEkBytes);
      size_t run = 1;
      for (; i + run < n; ++run) {
        const uint8_t* next = dks[i + run] + L::kDkEkOffset;
        CtPublic(next, L::kEkBytes);
        if (std::memcmp(next, ek, L::kEkBytes) != 0) break;
      }
      if (run == 1) {
        DecapsReencrypt<K>(dks[i], live[i]->ct.data(), m_prime[i], key_coins[i], k_bar[i], ct_prime,
                           live[i]->ss.data());
        ++i;
        continue;
      }
      DecapsReencryptRun<K>(ek, live + i, run, m_prime + i, key_coins + i, k_bar + i, ct_prime);
      i += run;
    }
  }
}

template class MlKem<2>;
template class MlKem<3>;
template class MlKem<4>;

}  // namespace pqcd::kernels
