// ML-DSA (FIPS 204): key generation, signing and verification for ML-DSA-44/65/87, pure and
// HashML-DSA, with external mu. Portable path; the polynomial kernels live in poly.h / sample.h.
//
// Constant-time notes:
//  * Secret polynomials (s1, s2, t0, y, w, c, c s1, c s2, c t0, z and the hint before acceptance)
//    only go through the branch-free kernels of poly.h.
//  * The challenge of a signing attempt is secret until that attempt is accepted. Published
//    side-channel attacks recover the private key from the challenge c (and the response) of
//    REJECTED attempts: Karabulut et al. (HOST 2021, rejected-signature challenges), Zhou, Wang,
//    Sun and Yu ("Rejected Signatures' Challenges Pose New Challenges", TCHES 2025(4)) and Liu et
//    al. (ePrint 2025/582). A rejected c is not public (it is never output) and, combined with
//    the known rejection condition, it constrains s1 / s2. So c~ is never declassified before
//    acceptance; SampleInBall (sample.h) is constant time in c~; the products c s1, c s2, c t0
//    go through NTT(c), pointwise products with NTT(s1 + 2^9 s2), NTT(s2), NTT(t0) and inverse
//    NTTs (access pattern and branches independent of c).
//  * Declassified (CtPublic) in signing: the three rejection verdicts of each attempt (z norm,
//    r0 norm, c t0 norm + hint weight; FIPS 204 §3.6.3: a rejected attempt reveals only that it
//    was rejected), SampleInBall's "budget sufficed" bit (false with probability < 2^-69), and,
//    once an attempt is accepted, c~, z and h (the signature).
//  * Verification works on public data only (SampleInBallPublic may branch on c~).
//  * ExpandA works on the public rho; SampleEtaPolys declassifies only its accept pattern.
//  * Every secret temporary lives in a stack struct that is wiped on every return path.
#include "pqcd/kernels/mldsa.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "keccak/backend.h"
#include "keccak/keccak_multi.h"
#include "mldsa/poly.h"
#include "mldsa/rider.h"
#include "mldsa/sample.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/sha3.h"
#include "prehash.h"

namespace pqcd::kernels {
namespace {

using mldsa::GrowingRider;
using mldsa::kN;
using mldsa::Poly;
using mldsa::PolyVec;

constexpr size_t kMaxContextBytes = MlDsa44::kMaxContextBytes;  // the same for every set
// FIPS 204 Appendix C allows a bound on the signing loop; 1000 attempts fail with probability far
// below 2^-200 for a well-formed key (the expected count is 4.25 / 5.1 / 3.85).
constexpr int kMaxSignAttempts = 1000;

// String building for error messages (absl::StrCat here may not take std::string_view).
inline void AppendPart(std::string& out, std::string_view part) {
  out.append(part);
}
template <class T>
requires std::is_integral_v<T>
inline void AppendPart(std::string& out, T value) {
  out.append(std::to_string(value));
}
template <class... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  (AppendPart(out, parts), ...);
  return out;
}

// A RandomSource for code paths that must not draw randomness.
class NoRandom final : public RandomSource {
 public:
  absl::Status Generate(MutBytes) override {
    return absl::InternalError("ML-DSA: unexpected request for randomness");
  }
};

// ---- Error messages -----------------------------------------------------------------------------

absl::Status LengthError(std::string_view set, std::string_view field, size_t expected,
                         size_t got) {
  return absl::InvalidArgumentError(
      Cat(set, " ", field, ": expected ", expected, " bytes, got ", got));
}

// Checks the message options (context length, external mu length, pre-hash value).
absl::Status CheckMessageOptions(std::string_view set, Bytes message,
                                 const DsaMessageOptions& options) {
  if (options.external_mu) {
    if (message.size() != 64) return LengthError(set, "external mu", 64, message.size());
    return absl::OkStatus();
  }
  if (options.context.size() > kMaxContextBytes) {
    return absl::InvalidArgumentError(
        Cat(set, " context: at most ", kMaxContextBytes, " bytes, got ", options.context.size()));
  }
  if (options.prehash != PreHash::kNone && FindPreHash(options.prehash) == nullptr) {
    return absl::InvalidArgumentError(
        Cat(set, " pre-hash: unknown value ", static_cast<int>(options.prehash)));
  }
  return absl::OkStatus();
}

// mu = H(tr || M', 64) with M' formatted per options (Alg. 2 line 10 / Alg. 4 line 23 / Alg. 7
// line 6); external mu is copied. Options must have passed CheckMessageOptions.
absl::Status ComputeMuFromTr(const uint8_t tr[64], Bytes message, const DsaMessageOptions& options,
                             uint8_t mu[64]) {
  if (options.external_mu) {
    std::memcpy(mu, message.data(), 64);
    return absl::OkStatus();
  }
  Shake256 h;
  h.Absorb(Bytes(tr, 64));
  const uint8_t header[2] = {static_cast<uint8_t>(options.prehash == PreHash::kNone ? 0 : 1),
                             static_cast<uint8_t>(options.context.size())};
  h.Absorb(header);
  h.Absorb(options.context);
  if (options.prehash == PreHash::kNone) {
    h.Absorb(message);
  } else {
    uint8_t tail[prehash::kPreHashTailMaxBytes];
    absl::StatusOr<size_t> tail_len = prehash::PreHashTail(options.prehash, message, tail);
    if (!tail_len.ok()) return tail_len.status();
    h.Absorb(Bytes(tail, *tail_len));
  }
  h.Squeeze(MutBytes(mu, 64));
  return absl::OkStatus();
}

// mu = H(tr || M', 64) for an already formatted M' (Alg. 7 line 6, Alg. 8 line 7).
void ComputeMuInternal(const uint8_t tr[64], Bytes mprime, uint8_t mu[64]) {
  Shake256 h;
  h.Absorb(Bytes(tr, 64));
  h.Absorb(mprime);
  h.Squeeze(MutBytes(mu, 64));
}

// ---- Hashing several requests side by side (batch entry points) --------------------------------

// Batches are processed in chunks of this many requests (bounded stack, no heap).
constexpr size_t kChunk = 16;

// One SHAKE256 evaluation H(in || tail, out_len) of a batch.
struct HashJob {
  const uint8_t* in = nullptr;
  size_t len = 0;
  const uint8_t* tail = nullptr;
  size_t tail_len = 0;
  uint8_t* out = nullptr;
};

// Runs `used` jobs (indices group[0..used)) with equal (len, tail_len) in one W-lane sponge.
template <size_t W>
void RunShake256Group(const HashJob* jobs, const size_t* group, size_t used, size_t out_len) {
  const uint8_t* in[W] = {};
  const uint8_t* tail[W] = {};
  uint8_t* out[W] = {};
  for (size_t k = 0; k < used; ++k) {
    in[k] = jobs[group[k]].in;
    tail[k] = jobs[group[k]].tail;
    out[k] = jobs[group[k]].out;
  }
  KeccakMulti<W> x(Shake256::kRateBytes, 0x1f);
  x.AbsorbOnce2(in, jobs[group[0]].len, tail, jobs[group[0]].tail_len);
  x.Squeeze(out, out_len);
}

// Runs n <= kChunk jobs: jobs with equal (len, tail_len) share multi-lane sponges, up to 8 on a
// Keccak backend that permutes 8 states side by side (AVX-512; a group of 5 or more runs 8 wide,
// as the samplers' groups, sample.cc), else up to 4 (KeccakMulti<4>); a job without a partner,
// and every job on a Keccak backend without multi-lane permutations (the portable one), uses one
// sponge. Each output equals the single-sponge result.
void RunShake256Jobs(const HashJob* jobs, size_t n, size_t out_len) {
  bool done[kChunk] = {};
  const uint8_t lanes = keccak::ActiveBackend().lanes;
  const size_t max_group = lanes >= 8 ? 8 : lanes >= 4 ? 4 : 1;
  for (size_t i = 0; i < n; ++i) {
    if (done[i]) continue;
    size_t group[8];
    size_t used = 0;
    for (size_t j = i; j < n && used < max_group; ++j) {
      if (!done[j] && jobs[j].len == jobs[i].len && jobs[j].tail_len == jobs[i].tail_len) {
        group[used++] = j;
        done[j] = true;
      }
    }
    if (used == 1) {
      const HashJob& job = jobs[i];
      Shake256 h;
      h.Absorb(Bytes(job.in, job.len));
      if (job.tail_len != 0) h.Absorb(Bytes(job.tail, job.tail_len));
      h.Squeeze(MutBytes(job.out, out_len));
    } else if (used > 4) {
      RunShake256Group<8>(jobs, group, used, out_len);
    } else {
      RunShake256Group<4>(jobs, group, used, out_len);
    }
  }
}

// M' split for lane hashing: mu = H(prefix || tail) with prefix = tr || header || context (copied
// into `prefix`) and tail = the message itself (pure) or OID || PH(M) (copied into `ph_tail`).
// Options must have passed CheckMessageOptions and must not be external mu.
constexpr size_t kMuPrefixBytes = 64 + 2 + kMaxContextBytes;
constexpr size_t kPhTailBytes = prehash::kPreHashTailMaxBytes;
absl::Status MakeMuJob(const uint8_t tr[64], Bytes message, const DsaMessageOptions& options,
                       uint8_t* prefix, uint8_t* ph_tail, uint8_t mu[64], HashJob& job) {
  std::memcpy(prefix, tr, 64);
  prefix[64] = static_cast<uint8_t>(options.prehash == PreHash::kNone ? 0 : 1);
  prefix[65] = static_cast<uint8_t>(options.context.size());
  if (!options.context.empty()) {
    std::memcpy(prefix + 66, options.context.data(), options.context.size());
  }
  job.in = prefix;
  job.len = 66 + options.context.size();
  job.out = mu;
  if (options.prehash == PreHash::kNone) {
    job.tail = message.data();
    job.tail_len = message.size();
    return absl::OkStatus();
  }
  absl::StatusOr<size_t> tail_len = prehash::PreHashTail(options.prehash, message, ph_tail);
  if (!tail_len.ok()) return tail_len.status();
  job.tail = ph_tail;
  job.tail_len = *tail_len;
  return absl::OkStatus();
}

// Wipes n bytes at p when the scope ends: the secret part of a scratch struct whose large public
// members (A-hat, t1) are not worth wiping.
class WipeOnExit {
 public:
  WipeOnExit(void* p, size_t n) : p_(p), n_(n) {}
  ~WipeOnExit() { SecureZero(p_, n_); }
  WipeOnExit(const WipeOnExit&) = delete;
  WipeOnExit& operator=(const WipeOnExit&) = delete;

 private:
  void* p_;
  size_t n_;
};

// The bytes of `object` from member `first` to its end.
template <class T, class M>
WipeOnExit WipeFrom(T& object, M& first) {
  uint8_t* base = reinterpret_cast<uint8_t*>(&object);
  uint8_t* from = reinterpret_cast<uint8_t*>(&first);
  return WipeOnExit(from, sizeof(T) - static_cast<size_t>(from - base));
}

static_assert(std::endian::native == std::endian::little);

// ---- The algorithm, templated on the parameter set ---------------------------------------------

template <int K, int L>
struct Impl {
  using Api = MlDsa<K, L>;
  using P = MlDsaParams<K, L>;
  static constexpr std::string_view kName = P::kName;
  static constexpr int kEta = P::eta;
  static constexpr int kTau = P::tau;
  static constexpr int32_t kBeta = P::beta;
  static constexpr int kOmega = P::omega;
  static constexpr int kGamma1Bits = P::gamma1_bits;
  static constexpr int32_t kGamma1 = int32_t{1} << kGamma1Bits;
  static constexpr int32_t kGamma2 = P::gamma2;
  static constexpr size_t kCTildeBytes = P::lambda / 4;
  static constexpr size_t kEtaBytes = mldsa::kEtaPackedBytes<kEta>;
  static constexpr size_t kT1Bytes = 320;
  static constexpr size_t kT0Bytes = 416;
  static constexpr size_t kZBytes = 32 * (kGamma1Bits + 1);
  static constexpr size_t kW1Bytes = mldsa::kW1PackedBytes<kGamma2>;
  static constexpr size_t kPk = Api::kPublicKeyBytes;
  static constexpr size_t kSk = Api::kPrivateKeyBytes;
  static constexpr size_t kSig = Api::kSignatureBytes;

  // Byte layout checks against FIPS 204 §7.2 (pkEncode, skEncode, sigEncode).
  static_assert(P::k == K && P::l == L);
  static_assert(P::beta == P::tau * P::eta);
  static_assert(kEtaBytes == Api::kEtaPackedBytes);
  static_assert(kPk == 32 + K * kT1Bytes);
  static_assert(kSk == 32 + 32 + 64 + (K + L) * kEtaBytes + K * kT0Bytes);
  static_assert(kSig == kCTildeBytes + L * kZBytes + kOmega + K);
  static_assert(K * L <= 256 && kMaxSignAttempts * L < 65536, "nonces fit in 16 bits");

  // The signer's view of a private key: A-hat, and s1, s2, t0 in the NTT domain for the
  // constant-time challenge products (NTT(c) times these, inverse NTT). s1[j] and s2[j] (j < l)
  // share one polynomial, s1[j] + 2^9 s2[j]: one inverse NTT gives c s1[j] + 2^9 c s2[j], exact
  // (|c s1|, |c s2| <= beta < 256), which mldsa::SplitLow9 splits. The public members come first:
  // WipeSecrets() wipes from s12_hat on (A-hat is most of the struct).
  static_assert(K >= L && kBeta < 256);
  struct alignas(64) SigningKey {
    Poly a[K][L];           // A-hat (public, from rho)
    PolyVec<L> s12_hat;     // NTT(s1[j] + 2^9 s2[j])
    PolyVec<K - L> s2_hat;  // NTT(s2[l + r]), r < k - l
    PolyVec<K> t0_hat;
    uint8_t rho[32];
    uint8_t key[32];
    uint8_t tr[64];
  };
  static WipeOnExit WipeSecrets(SigningKey& key) { return WipeFrom(key, key.s12_hat); }

  // ExpandA (Alg. 32): A[r][s] = RejNTTPoly(rho || s || r).
  // rider (optional): a hash that rides along ExpandA's permutations (tr = H(pk) in verification).
  // on_done(ctx, m): entries [0, m) in row-major order are complete (see SampleUniformPolys).
  static void ExpandA(Poly (&a)[K][L], const uint8_t rho[32], KeccakRider* rider = nullptr,
                      mldsa::SampleDoneFn on_done = nullptr, void* ctx = nullptr) {
    Poly* out[K * L];
    uint16_t nonces[K * L];
    for (int r = 0; r < K; ++r) {
      for (int s = 0; s < L; ++s) {
        out[r * L + s] = &a[r][s];
        nonces[r * L + s] = static_cast<uint16_t>(r << 8 | s);
      }
    }
    mldsa::SampleUniformPolys(out, rho, nonces, K * L, rider, on_done, ctx);
  }

  // ExpandS (Alg. 33): s1[r] = RejBoundedPoly(rho' || r), s2[r] = RejBoundedPoly(rho' || r + l).
  static void ExpandS(PolyVec<L>& s1, PolyVec<K>& s2, const uint8_t rho_prime[64]) {
    Poly* out[K + L];
    uint16_t nonces[K + L];
    for (int i = 0; i < L; ++i) out[i] = &s1[i];
    for (int i = 0; i < K; ++i) out[L + i] = &s2[i];
    for (int i = 0; i < K + L; ++i) nonces[i] = static_cast<uint16_t>(i);
    mldsa::SampleEtaPolys<kEta>(out, rho_prime, nonces, K + L);
  }

  // ExpandMask (Alg. 34): y[r] = BitUnpack(H(rho'' || kappa + r), gamma1 - 1, gamma1).
  static void ExpandMask(PolyVec<L>& y, const uint8_t rho_pp[64], int kappa) {
    Poly* out[L];
    uint16_t nonces[L];
    for (int i = 0; i < L; ++i) {
      out[i] = &y[i];
      nonces[i] = static_cast<uint16_t>(kappa + i);
    }
    mldsa::SampleMaskPolys<kGamma1Bits>(out, rho_pp, nonces, L);
  }

  // ---- Key generation (Alg. 6) ----

  // Secret scratch of key generation (wiped on return); t1 goes straight into pk.
  struct alignas(64) KeyGenScratch {
    uint8_t seeds[128];  // rho || rho' || K
    PolyVec<L> s1;       // s1, then NTT(s1)
    PolyVec<K> s2;
    Poly t0;  // one row at a time: A-hat NTT(s1) row, then t0
  };

  // ML-DSA.KeyGen_internal(xi): writes pk, fills `key` (A-hat, rho, K, tr) and, when
  // sk != nullptr, skEncode into sk; with want_signing_key also s12-hat, s2-hat and t0-hat.
  static constexpr uint8_t kKL[2] = {static_cast<uint8_t>(K), static_cast<uint8_t>(L)};

  static void KeyGenCore(const uint8_t xi[32], uint8_t* pk, uint8_t* sk, SigningKey& key,
                         bool want_signing_key) {
    // (rho, rho', K) = H(xi || k || l, 128)
    uint8_t seeds[128];
    ZeroOnExit wipe(seeds);
    Shake256 h;
    h.Absorb(Bytes(xi, 32));
    h.Absorb(kKL);
    h.Squeeze(seeds);
    KeyGenFromSeeds(seeds, pk, sk, key, want_signing_key, /*compute_tr=*/true);
  }

  // State of the row-by-row part of key generation (ExpandA's on_done callback).
  struct KeyGenRows {
    KeyGenScratch* ws;
    SigningKey* key;
    uint8_t* pk;
    uint8_t* sk;  // may be null
    GrowingRider* rider;
    bool want_signing_key;
    int rows_done;
  };

  // Row i of t = InvNTT(A-hat NTT(s1)) + s2 as soon as A-hat row i is sampled (still in L1):
  // Power2Round, t1 into pk (which the tr rider then absorbs), t0 into sk / t0-hat.
  static void KeyGenRowsDone(void* ctx, size_t entries_done) {
    KeyGenRows& st = *static_cast<KeyGenRows*>(ctx);
    KeyGenScratch& ws = *st.ws;
    for (; st.rows_done < K && static_cast<size_t>(st.rows_done + 1) * L <= entries_done;
         ++st.rows_done) {
      const int i = st.rows_done;
      mldsa::PointwiseAccMontgomery(ws.t0, st.key->a[i], ws.s1.data(), L);  // |.| < q
      mldsa::InvNttToMont(ws.t0);                                           // |.| < q
      uint8_t* t1_out = st.pk + 32 + i * kT1Bytes;
      mldsa::Power2RoundPackT1(t1_out, ws.t0, ws.t0, ws.s2[i]);
      CtPublic(t1_out, kT1Bytes);  // t1 is the public key
      if (st.rider != nullptr) st.rider->Available(32 + (i + 1) * kT1Bytes);
      if (st.sk != nullptr) {
        mldsa::PackT0(st.sk + 128 + (K + L) * kEtaBytes + i * kT0Bytes, ws.t0);
      }
      if (st.want_signing_key) {
        st.key->t0_hat[i] = ws.t0;  // |t0| <= 2^12
        mldsa::Ntt(st.key->t0_hat[i]);
      }
    }
  }

  // KeyGen_internal from line 2 on, given (rho, rho', K). Without compute_tr, key.tr and the tr
  // field of sk are left for the caller (a batch hashes several public keys side by side).
  // With compute_tr, tr = H(pk) rides along ExpandA's permutations as pk fills up.
  static void KeyGenFromSeeds(const uint8_t seeds[128], uint8_t* pk, uint8_t* sk, SigningKey& key,
                              bool want_signing_key, bool compute_tr) {
    KeyGenScratch ws;
    ZeroOnExit wipe(ws);
    std::memcpy(ws.seeds, seeds, 128);
    ExpandS(ws.s1, ws.s2, ws.seeds + 32);  // rho' = seeds[32, 96)
    KeyGenFromSecrets(ws, pk, sk, key, want_signing_key, compute_tr);
  }

  // KeyGen_internal after ExpandS, from rho and K (ws.seeds[0, 32) and [96, 128)) and s1, s2
  // (ws.s1, ws.s2 with coefficients in [-eta, eta]); ws.s1 is left in the NTT domain. Key
  // generation gets s1, s2 from ExpandS; the expanded-key check from the key itself.
  static void KeyGenFromSecrets(KeyGenScratch& ws, uint8_t* pk, uint8_t* sk, SigningKey& key,
                                bool want_signing_key, bool compute_tr) {
    std::memcpy(key.rho, ws.seeds, 32);
    std::memcpy(key.key, ws.seeds + 96, 32);
    CtPublic(key.rho, 32);  // rho is part of the public key
    std::memcpy(pk, key.rho, 32);

    if (sk != nullptr) {  // skEncode (Alg. 24); tr and t0 follow
      std::memcpy(sk, key.rho, 32);
      std::memcpy(sk + 32, key.key, 32);
      uint8_t* p = sk + 128;
      for (int j = 0; j < L; ++j, p += kEtaBytes) mldsa::PackEta<kEta>(p, ws.s1[j]);
      for (int i = 0; i < K; ++i, p += kEtaBytes) mldsa::PackEta<kEta>(p, ws.s2[i]);
    }
    if (want_signing_key) {
      for (int i = 0; i < K; ++i) SetS2(key, i, ws.s1, ws.s2[i]);
    }
    for (int j = 0; j < L; ++j) mldsa::Ntt(ws.s1[j]);  // |s1| <= eta < q

    GrowingRider rider(pk, kPk);
    rider.Available(32);
    KeyGenRows rows{&ws, &key, pk, sk, compute_tr ? &rider : nullptr, want_signing_key, 0};
    ExpandA(key.a, key.rho, rows.rider, &KeyGenRowsDone, &rows);
    if (compute_tr) {
      rider.Finish(key.tr);
      if (sk != nullptr) std::memcpy(sk + 64, key.tr, 64);
    }
  }

  // Stores s2[i] into the signing key: s12_hat[i] = NTT(s1[i] + 2^9 s2[i]) for i < l (s1[i] taken
  // from s1, which may be key.s12_hat itself), s2_hat[i - l] = NTT(s2[i]) otherwise.
  template <size_t N>
  static void SetS2(SigningKey& key, int i, const PolyVec<N>& s1, const Poly& s2) {
    Poly& out = i < L ? key.s12_hat[i] : key.s2_hat[i - L];
    if (i < L) {  // public index
      for (int n = 0; n < kN; ++n) out.coeffs[n] = s1[i].coeffs[n] + s2.coeffs[n] * (1 << 9);
    } else {
      out = s2;
    }
    mldsa::Ntt(out);
  }

  // skDecode (Alg. 25) into the signer's form. Rejects s1/s2 coefficients outside [-eta, eta].
  static absl::Status DecodeSigningKey(const uint8_t* sk, SigningKey& key) {
    std::memcpy(key.rho, sk, 32);
    std::memcpy(key.key, sk + 32, 32);
    std::memcpy(key.tr, sk + 64, 64);
    const uint8_t* p = sk + 128;
    uint32_t bad = 0;
    // Decoded range [eta - 7 or -11, eta]: |s1 + 2^9 s2| < q for the NTT.
    for (int j = 0; j < L; ++j, p += kEtaBytes) bad |= mldsa::UnpackEta<kEta>(key.s12_hat[j], p);
    Poly s2;  // secret, wiped below
    for (int i = 0; i < K; ++i, p += kEtaBytes) {
      bad |= mldsa::UnpackEta<kEta>(s2, p);
      SetS2(key, i, key.s12_hat, s2);
    }
    SecureZero(&s2, sizeof(s2));
    for (int i = 0; i < K; ++i, p += kT0Bytes) {
      mldsa::UnpackT0(key.t0_hat[i], p);  // (-2^12, 2^12]
      mldsa::Ntt(key.t0_hat[i]);
    }
    CtPublic(&bad, sizeof(bad));  // only "malformed or not" is revealed
    if (bad != 0) {
      return absl::InvalidArgumentError(
          Cat(kName, " private key: malformed (s1/s2 coefficient outside [-eta, eta])"));
    }
    CtPublic(key.rho, 32);
    ExpandA(key.a, key.rho);
    return absl::OkStatus();
  }

  // Loads a 32-byte seed or an expanded private key. The caller wipes `key`.
  static absl::Status LoadSigningKey(Bytes sk, SigningKey& key) {
    if (sk.size() == Api::kSeedBytes) {
      alignas(8) uint8_t pk[kPk];  // public, discarded
      KeyGenCore(sk.data(), pk, nullptr, key, /*want_signing_key=*/true);
      return absl::OkStatus();
    }
    if (sk.size() == kSk) return DecodeSigningKey(sk.data(), key);
    return absl::InvalidArgumentError(Cat(kName, " private key: expected ", Api::kSeedBytes,
                                          " (seed) or ", kSk, " bytes, got ", sk.size()));
  }

  // ---- Complete check of an expanded private key ----
  //
  // skDecode (Alg. 25) gives (rho, K, tr, s1, s2, t0), but nothing in the encoding ties them
  // together: a flipped t0 bit still decodes, and signs with a wrong c t0 (a signature that
  // verifies only when the error does not move a hint). Everything but K is a function of rho,
  // s1 and s2 (Alg. 6), so the key is consistent iff recomputing it from them gives the
  // same bytes: s1, s2 within [-eta, eta] (the eta encoding has room for values outside), t0 of
  // Power2Round(NTT^-1(A-hat NTT(s1)) + s2), tr = H(rho || t1, 64), and pk = (rho, t1).
  struct alignas(64) CheckScratch {
    SigningKey key;    // A-hat, rho, tr (public); K (wiped)
    uint8_t pk[kPk];   // the recomputed public key
    KeyGenScratch ws;  // secret from here on (wiped)
    uint8_t sk[kSk];   // the recomputed encoding
  };

  static absl::Status CheckExpandedKey(const uint8_t* sk, const uint8_t* pk, uint8_t* pk_out) {
    CheckScratch cs;
    const WipeOnExit wipe = WipeFrom(cs, cs.ws);
    const WipeOnExit wipe_k(cs.key.key, sizeof(cs.key.key));
    std::memcpy(cs.ws.seeds, sk, 32);            // rho
    std::memset(cs.ws.seeds + 32, 0, 64);        // rho' is not part of sk (not needed)
    std::memcpy(cs.ws.seeds + 96, sk + 32, 32);  // K
    const uint8_t* p = sk + 128;
    uint32_t bad = 0;
    for (int j = 0; j < L; ++j, p += kEtaBytes) bad |= mldsa::UnpackEta<kEta>(cs.ws.s1[j], p);
    for (int i = 0; i < K; ++i, p += kEtaBytes) bad |= mldsa::UnpackEta<kEta>(cs.ws.s2[i], p);
    CtPublic(&bad, sizeof(bad));  // only "malformed or not" is revealed
    if (bad != 0) {
      return absl::InvalidArgumentError(
          Cat(kName, " private key: malformed (s1/s2 coefficient outside [-eta, eta])"));
    }
    // Alg. 6 from ExpandA on, on the key's rho, K, s1, s2: cs.pk = (rho, t1), cs.sk = skEncode(rho,
    // K, H(pk), s1, s2, t0).
    KeyGenFromSecrets(cs.ws, cs.pk, cs.sk, cs.key, /*want_signing_key=*/false,
                      /*compute_tr=*/true);
    // rho, K, s1 and s2 were copied, so comparing the whole encodings compares t0 and tr. One
    // constant-time comparison per field; each verdict is revealed (it is the answer).
    constexpr size_t kT0Offset = 128 + (K + L) * kEtaBytes;
    uint8_t t0_diff = CtCompare(cs.sk + kT0Offset, sk + kT0Offset, K * kT0Bytes);
    CtPublic(&t0_diff, sizeof(t0_diff));
    if (t0_diff != 0) {
      return absl::InvalidArgumentError(
          Cat(kName, " private key: t0 does not match rho, s1 and s2 (FIPS 204 Alg. 6)"));
    }
    uint8_t tr_diff = CtCompare(cs.sk + 64, sk + 64, 64);
    CtPublic(&tr_diff, sizeof(tr_diff));
    if (tr_diff != 0) {
      return absl::InvalidArgumentError(
          Cat(kName, " private key: tr does not match H(pk) (FIPS 204 Alg. 6)"));
    }
    if (pk != nullptr && std::memcmp(cs.pk, pk, kPk) != 0) {
      return absl::InvalidArgumentError(
          Cat(kName, " public key: does not match the private key (rho, t1)"));
    }
    if (pk_out != nullptr) std::memcpy(pk_out, cs.pk, kPk);
    return absl::OkStatus();
  }

  // ---- Signing (Alg. 7 from line 7 on) ----

  struct alignas(64) SignScratch {
    PolyVec<L> y;
    PolyVec<L> z;   // y-hat, then z
    PolyVec<K> w1;  // w, then w1 = HighBits(w)
    PolyVec<K> w0;  // LowBits(w), then r0 = w0 - c s2, then w0 - c s2 + c t0
    PolyVec<K> h;   // c s2, then c t0, then the hint
    uint8_t rho_pp[64];
    uint8_t w1_packed[K * kW1Bytes];
    uint8_t c_tilde[kCTildeBytes];  // secret until the attempt is accepted
    Poly c_hat;                     // NTT(c): secret until the attempt is accepted
  };

  static absl::Status SignWithKey(const SigningKey& key, const uint8_t mu[64],
                                  const uint8_t rnd[32], uint8_t* sig) {
    // rho'' = H(K || rnd || mu, 64)
    uint8_t rho_pp[64];
    ZeroOnExit wipe(rho_pp);
    Shake256 h;
    h.Absorb(Bytes(key.key, 32));
    h.Absorb(Bytes(rnd, 32));
    h.Absorb(Bytes(mu, 64));
    h.Squeeze(rho_pp);
    h.Reset();  // wipes the sponge (it absorbed K)
    return SignWithRhoPP(key, mu, rho_pp, sig);
  }

  // Alg. 7 from line 8 on, given rho''.
  static absl::Status SignWithRhoPP(const SigningKey& key, const uint8_t mu[64],
                                    const uint8_t rho_pp[64], uint8_t* sig) {
    SignScratch ws;
    ZeroOnExit wipe(ws);
    std::memcpy(ws.rho_pp, rho_pp, 64);
    for (int attempt = 0, kappa = 0; attempt < kMaxSignAttempts; ++attempt, kappa += L) {
      ExpandMask(ws.y, ws.rho_pp, kappa);  // (-gamma1, gamma1]
      // w = InvNTT(A-hat * NTT(y)); (w1, w0) = Decompose(w)
      for (int j = 0; j < L; ++j) {
        ws.z[j] = ws.y[j];
        mldsa::Ntt(ws.z[j]);
      }
      for (int i = 0; i < K; ++i) {
        mldsa::PointwiseAccMontgomery(ws.w1[i], key.a[i], ws.z.data(), L);  // |.| < q
        mldsa::InvNttToMont(ws.w1[i]);                                      // |.| < q
        mldsa::DecomposePackW1<kGamma2>(ws.w1_packed + i * kW1Bytes, ws.w1[i], ws.w0[i], ws.w1[i]);
      }
      // c~ = H(mu || w1Encode(w1), lambda / 4). c~ and c stay secret until the attempt is
      // accepted: SampleInBall and the products with c are constant time.
      {
        Shake256 h;
        h.Absorb(Bytes(mu, 64));
        h.Absorb(ws.w1_packed);
        h.Squeeze(MutBytes(ws.c_tilde, kCTildeBytes));
        h.Reset();  // wipes the sponge
      }
      mldsa::SampleInBall(ws.c_hat, ws.c_tilde, kCTildeBytes, kTau);
      mldsa::Ntt(ws.c_hat);

      // z = y + c s1 (c s2[j] for j < l comes along, into h[j]); reject if
      // ||z|| >= gamma1 - beta.
      uint32_t reject = 0;
      for (int j = 0; j < L; ++j) {
        mldsa::PointwiseMontgomery(ws.z[j], ws.c_hat, key.s12_hat[j]);
        mldsa::InvNttToMont(ws.z[j]);
        // Reduce32: exact c s1 + 2^9 c s2 (|.| <= 513 beta); split into c s1 and c s2 (h[j]);
        // z = y + c s1 (|.| <= gamma1 + beta); the norm check.
        reject |= mldsa::SplitLow9AddNorm(ws.z[j], ws.h[j], ws.z[j], ws.y[j], kGamma1 - kBeta);
      }
      CtPublic(&reject, sizeof(reject));
      if (reject != 0) continue;

      // r0 = LowBits(w - c s2) = w0 - c s2 (exact while the bound holds); reject if
      // ||r0|| >= gamma2 - beta.
      for (int i = 0; i < K; ++i) {
        if (i >= L) {  // public index
          mldsa::PointwiseMontgomery(ws.h[i], ws.c_hat, key.s2_hat[i - L]);
          mldsa::InvNttToMont(ws.h[i]);
          mldsa::Reduce32(ws.h[i]);  // exact c s2
        }
        mldsa::Sub(ws.w0[i], ws.w0[i], ws.h[i]);  // exact, |.| <= gamma2 + beta
        reject |= mldsa::ExceedsNorm(ws.w0[i], kGamma2 - kBeta);
      }
      CtPublic(&reject, sizeof(reject));
      if (reject != 0) continue;

      // c t0; reject if ||c t0|| >= gamma2. h = MakeHint(-c t0, w - c s2 + c t0).
      unsigned ones = 0;
      for (int i = 0; i < K; ++i) {
        mldsa::PointwiseMontgomery(ws.h[i], ws.c_hat, key.t0_hat[i]);
        mldsa::InvNttToMont(ws.h[i]);
        mldsa::Reduce32(ws.h[i]);  // exact, |c t0| <= tau 2^12
        reject |= mldsa::ExceedsNorm(ws.h[i], kGamma2);
        mldsa::Add(ws.w0[i], ws.w0[i], ws.h[i]);
        ones += mldsa::MakeHint<kGamma2>(ws.h[i], ws.w0[i], ws.w1[i]);
      }
      reject |= CtMaskNonZero(static_cast<uint32_t>(ones > static_cast<unsigned>(kOmega)));
      CtPublic(&reject, sizeof(reject));
      if (reject != 0) continue;

      // Accepted: sigEncode(c~, z, h) (Alg. 26). c~, z and h are now public.
      std::memcpy(sig, ws.c_tilde, kCTildeBytes);
      CtPublic(sig, kCTildeBytes);
      CtPublic(ws.z.data(), sizeof(ws.z));
      CtPublic(ws.h.data(), sizeof(ws.h));
      uint8_t* p = sig + kCTildeBytes;
      for (int j = 0; j < L; ++j, p += kZBytes) mldsa::PackZ<kGamma1Bits>(p, ws.z[j]);
      mldsa::PackHint(p, ws.h.data(), K, kOmega);
      return absl::OkStatus();
    }
    SecureZero(sig, kSig);
    return absl::InternalError(
        Cat(kName, " signing: no signature after ", kMaxSignAttempts, " attempts"));
  }

  // ---- Verification (Alg. 8 from line 5 on) ----

  // The verifier's view of a public key: A-hat and NTT(t1 * 2^d), reused while consecutive
  // requests of a batch use the same key (A-hat alone while only rho matches).
  struct alignas(64) PublicKeyCache {
    Poly a[K][L];
    PolyVec<K> t1_hat;
    uint8_t pk[kPk];
    bool loaded = false;
  };

  static void LoadPublicKey(PublicKeyCache& cache, const uint8_t* pk) {
    if (cache.loaded && std::memcmp(cache.pk, pk, kPk) == 0) return;  // public data
    if (!cache.loaded || std::memcmp(cache.pk, pk, 32) != 0) ExpandA(cache.a, pk);
    for (int i = 0; i < K; ++i) {
      mldsa::UnpackT1Shifted(cache.t1_hat[i], pk + 32 + i * kT1Bytes);  // [0, q)
      mldsa::Ntt(cache.t1_hat[i]);
    }
    std::memcpy(cache.pk, pk, kPk);
    cache.loaded = true;
  }

  struct alignas(64) VerifyScratch {
    PolyVec<L> z;
    PolyVec<K> h;
    Poly w;
    Poly c;
  };

  // sigDecode (Alg. 27) into z-hat (NTT domain), h and c-hat (NTT domain); false for a malformed
  // hint or ||z|| >= gamma1 - beta.
  static bool DecodeSignature(PolyVec<L>& z, PolyVec<K>& h, Poly& c, const uint8_t* sig) {
    if (!mldsa::UnpackHint(h.data(), sig + kCTildeBytes + L * kZBytes, K, kOmega)) return false;
    uint32_t too_big = 0;
    for (int j = 0; j < L; ++j) {
      mldsa::UnpackZ<kGamma1Bits>(z[j], sig + kCTildeBytes + j * kZBytes);
      too_big |= mldsa::ExceedsNorm(z[j], kGamma1 - kBeta);
    }
    if (too_big != 0) return false;
    mldsa::SampleInBallPublic(c, sig, kCTildeBytes, kTau);  // public c~: may branch
    mldsa::Ntt(c);
    for (int j = 0; j < L; ++j) mldsa::Ntt(z[j]);  // |z| < gamma1 < q
    return true;
  }

  // Batch verification with a cached key: sigDecode, then w1' = UseHint(h, InvNTT(A-hat NTT(z) -
  // NTT(c) NTT(t1 2^d))) packed into w1_packed. False when the signature is already known to be
  // invalid (malformed hint, ||z||).
  static bool VerifyW1(const PublicKeyCache& key, const uint8_t* sig, uint8_t* w1_packed) {
    VerifyScratch ws;
    if (!DecodeSignature(ws.z, ws.h, ws.c, sig)) return false;
    for (int i = 0; i < K; ++i) {  // as StreamRowsDone
      mldsa::PointwiseAccSubMontgomery(ws.w, key.a[i], ws.z.data(), L, ws.c, key.t1_hat[i]);
      mldsa::InvNttToMont(ws.w);  // |.| < q
      mldsa::UseHintPackW1<kGamma2>(w1_packed + i * kW1Bytes, ws.w, ws.h[i]);
    }
    return true;
  }

  // ---- Single verification, streamed row by row ----
  //
  // sigDecode and NTT(z), NTT(c) first; then ExpandA, each row of A-hat consumed as soon as it is
  // sampled (still in L1): NTT(t1[i] 2^d), w1'[i] = UseHint(h[i], InvNTT(A-hat[i] z-hat - c-hat
  // t1-hat[i])) packed after mu. One rider hashes along the 4-lane permutations: first tr = H(pk)
  // (unless mu is given), then, once tr is complete, mu = make_mu(tr) and c~' = H(mu || w1Encode)
  // as the rows of w1' come in.
  struct alignas(64) StreamScratch {
    Poly a[K][L];
    PolyVec<L> z;
    PolyVec<K> h;
    Poly c;
    Poly t1;
    Poly w;
    uint8_t tr[64];
    uint8_t mu_w1[64 + K * kW1Bytes];  // mu || w1Encode(w1')
  };

  struct StreamState {
    StreamScratch* ws;
    const uint8_t* pk;
    GrowingRider* rider;
    absl::Status (*make_mu)(void* make_mu_ctx, const uint8_t* tr, uint8_t* mu);
    void* make_mu_ctx;
    absl::Status mu_status;
    bool hashing_tr;  // the rider still works on tr
    int rows_done;
  };

  // tr is complete: mu = make_mu(tr), then the rider moves on to mu || w1Encode(w1').
  static void StreamStartMu(StreamState& st) {
    st.rider->Finish(st.ws->tr);
    st.hashing_tr = false;
    st.mu_status = st.make_mu(st.make_mu_ctx, st.ws->tr, st.ws->mu_w1);
    st.rider->Begin(st.ws->mu_w1, sizeof(st.ws->mu_w1));
    st.rider->Available(64 + st.rows_done * kW1Bytes);
  }

  static void StreamRowsDone(void* ctx, size_t entries_done) {
    StreamState& st = *static_cast<StreamState*>(ctx);
    StreamScratch& ws = *st.ws;
    for (; st.rows_done < K && static_cast<size_t>(st.rows_done + 1) * L <= entries_done;
         ++st.rows_done) {
      const int i = st.rows_done;
      mldsa::UnpackT1Shifted(ws.t1, st.pk + 32 + i * kT1Bytes);  // [0, q)
      mldsa::Ntt(ws.t1);
      // A-hat[i] z-hat - c-hat t1-hat[i] in one 64-bit accumulation (A-hat in [0, q), the NTT
      // outputs below 9q: at most (9 L + 81) q^2 < 2^31 q), one reduction (|.| < q); then
      // InvNTT and one pass for CAddQ, UseHint and w1Encode.
      mldsa::PointwiseAccSubMontgomery(ws.w, ws.a[i], ws.z.data(), L, ws.c, ws.t1);
      mldsa::InvNttToMont(ws.w);  // |.| < q
      mldsa::UseHintPackW1<kGamma2>(ws.mu_w1 + 64 + i * kW1Bytes, ws.w, ws.h[i]);
    }
    if (st.hashing_tr) {
      if (st.rider->Absorbed()) StreamStartMu(st);
    } else {
      st.rider->Available(64 + st.rows_done * kW1Bytes);
    }
  }

  // mu given (external mu) or, with mu == nullptr, make_mu(ctx, tr, mu) once tr = H(pk) is known.
  // Returns make_mu's error, if any (also for a signature that fails to decode).
  static absl::StatusOr<bool> VerifyStream(const uint8_t* pk, const uint8_t* sig, const uint8_t* mu,
                                           absl::Status (*make_mu)(void* ctx, const uint8_t* tr,
                                                                   uint8_t* mu),
                                           void* make_mu_ctx) {
    StreamScratch ws;
    if (!DecodeSignature(ws.z, ws.h, ws.c, sig)) {
      if (mu != nullptr) return false;
      Shake256Digest(Bytes(pk, kPk), MutBytes(ws.tr, 64));
      if (absl::Status s = make_mu(make_mu_ctx, ws.tr, ws.mu_w1); !s.ok()) return s;
      return false;
    }
    GrowingRider rider(pk, kPk);
    StreamState st{&ws, pk, &rider, make_mu, make_mu_ctx, absl::OkStatus(), mu == nullptr, 0};
    if (mu != nullptr) {
      std::memcpy(ws.mu_w1, mu, 64);
      rider.Begin(ws.mu_w1, sizeof(ws.mu_w1));
      rider.Available(64);
    } else {
      rider.Available(kPk);
    }
    ExpandA(ws.a, pk, &rider, &StreamRowsDone, &st);
    if (st.hashing_tr) StreamStartMu(st);
    if (!st.mu_status.ok()) return st.mu_status;
    uint8_t c_tilde2[kCTildeBytes];
    rider.Finish(c_tilde2, kCTildeBytes);
    return std::memcmp(sig, c_tilde2, kCTildeBytes) == 0;
  }

  static bool VerifyMu(const uint8_t* pk, const uint8_t mu[64], const uint8_t* sig) {
    absl::StatusOr<bool> ok = VerifyStream(pk, sig, mu, nullptr, nullptr);
    return ok.ok() && *ok;
  }

  // Verification with tr = H(pk) and c~' riding along ExpandA; calls make_mu(tr, mu). Returns
  // make_mu's error, if any.
  template <class MakeMu>
  static absl::StatusOr<bool> VerifyWithTr(const uint8_t* pk, const uint8_t* sig, MakeMu make_mu) {
    auto call = [](void* ctx, const uint8_t* tr, uint8_t* mu) {
      return (*static_cast<MakeMu*>(ctx))(tr, mu);
    };
    return VerifyStream(pk, sig, nullptr, call, &make_mu);
  }

  static absl::Status CheckPk(Bytes pk) {
    if (pk.size() != kPk) return LengthError(kName, "public key", kPk, pk.size());
    return absl::OkStatus();
  }
  static absl::Status CheckSigBuffer(MutBytes sig) {
    if (sig.size() != kSig) return LengthError(kName, "signature buffer", kSig, sig.size());
    return absl::OkStatus();
  }
  static absl::Status CheckSkLength(Bytes sk) {
    if (sk.size() != Api::kSeedBytes && sk.size() != kSk) {
      return absl::InvalidArgumentError(Cat(kName, " private key: expected ", Api::kSeedBytes,
                                            " (seed) or ", kSk, " bytes, got ", sk.size()));
    }
    return absl::OkStatus();
  }

  // ---- Batches: chunks of kChunk requests; per-request results equal the single operations ----

  // KeyGen: (rho, rho', K) = H(xi || k || l) and tr = H(pk) of the chunk run side by side.
  static void KeyGenBatch(std::span<DsaKeyGenItem> items, RandomSource& rng) {
    struct alignas(64) Scratch {
      SigningKey key;
      uint8_t xi[kChunk][32];
      uint8_t seeds[kChunk][128];
    };
    Scratch ws;
    ZeroOnExit wipe(ws);
    for (size_t base = 0; base < items.size(); base += kChunk) {
      const size_t m = std::min(kChunk, items.size() - base);
      DsaKeyGenItem* it = items.data() + base;
      HashJob jobs[kChunk];
      size_t live[kChunk];
      size_t n = 0;
      for (size_t i = 0; i < m; ++i) {  // the single path's checks and draws, in item order
        DsaKeyGenItem& item = it[i];
        item.status = CheckKeyGenItem(item);
        if (item.status.ok() && item.seed.empty()) item.status = rng.Generate(ws.xi[i]);
        if (!item.status.ok()) continue;
        if (!item.seed.empty()) std::memcpy(ws.xi[i], item.seed.data(), 32);
        jobs[n] = {ws.xi[i], 32, kKL, 2, ws.seeds[i]};
        live[n++] = i;
      }
      RunShake256Jobs(jobs, n, 128);
      for (size_t k = 0; k < n; ++k) {
        const size_t i = live[k];
        KeyGenFromSeeds(ws.seeds[i], it[i].pk.data(), it[i].sk.data(), ws.key,
                        /*want_signing_key=*/false, /*compute_tr=*/false);
        jobs[k] = {it[i].pk.data(), kPk, nullptr, 0, it[i].sk.data() + 64};  // tr into sk
      }
      RunShake256Jobs(jobs, n, 64);
      for (size_t k = 0; k < n; ++k) {
        const size_t i = live[k];
        if (it[i].seed.empty() && !it[i].seed_out.empty()) {
          std::memcpy(it[i].seed_out.data(), ws.xi[i], 32);
        }
      }
    }
  }

  // The checks of KeyGenFromSeed (seed given) or KeyGen (fresh seed), in their order.
  static absl::Status CheckKeyGenItem(const DsaKeyGenItem& item) {
    if (!item.seed.empty() && item.seed.size() != Api::kSeedBytes) {
      return LengthError(kName, "seed", Api::kSeedBytes, item.seed.size());
    }
    if (item.pk.size() != kPk) return LengthError(kName, "public key buffer", kPk, item.pk.size());
    if (item.sk.size() != kSk) return LengthError(kName, "private key buffer", kSk, item.sk.size());
    if (item.seed.empty() && !item.seed_out.empty() && item.seed_out.size() != Api::kSeedBytes) {
      return LengthError(kName, "seed output", Api::kSeedBytes, item.seed_out.size());
    }
    return absl::OkStatus();
  }

  // Sign: mu = H(tr || M') and rho'' = H(K || rnd || mu) side by side for expanded private keys
  // (a seed-form key yields tr and K only after its key generation: those hash alone); the key is
  // decoded once per run of requests with the same private key (requests are grouped by key
  // within a chunk; randomness is still drawn in item order).
  static void SignBatch(std::span<DsaSignItem> items, RandomSource& rng) {
    struct alignas(64) Scratch {
      SigningKey key;
      uint8_t rnd[kChunk][32];
      uint8_t prefix[kChunk][kMuPrefixBytes];
      uint8_t ph_tail[kChunk][kPhTailBytes];
      uint8_t mu[kChunk][64];
      uint8_t krm[kChunk][128];  // K || rnd || mu
      uint8_t rho_pp[kChunk][64];
    };
    Scratch ws;
    ZeroOnExit wipe(ws);
    for (size_t base = 0; base < items.size(); base += kChunk) {
      const size_t m = std::min(kChunk, items.size() - base);
      DsaSignItem* it = items.data() + base;
      bool live[kChunk] = {}, hashed[kChunk] = {}, done[kChunk] = {};
      absl::Status mu_status[kChunk];
      HashJob jobs[kChunk];
      size_t n = 0;
      for (size_t i = 0; i < m; ++i) {  // Sign()'s checks and randomness, in item order
        DsaSignItem& item = it[i];
        item.status = CheckSignItem(item);
        if (item.status.ok()) item.status = DrawRnd(item.options, rng, ws.rnd[i]);
        live[i] = item.status.ok();
        if (!live[i] || (item.sk.size() != kSk && !item.prepared)) continue;
        hashed[i] = true;
        if (item.options.external_mu) {
          std::memcpy(ws.mu[i], item.message.data(), 64);
          continue;
        }
        mu_status[i] = MakeMuJob(TrOf(item), item.message, item.options, ws.prefix[i],
                                 ws.ph_tail[i], ws.mu[i], jobs[n]);
        if (mu_status[i].ok()) ++n;
      }
      RunShake256Jobs(jobs, n, 64);
      n = 0;
      for (size_t i = 0; i < m; ++i) {
        if (!hashed[i] || !mu_status[i].ok()) continue;
        std::memcpy(ws.krm[i], KOf(it[i]), 32);
        std::memcpy(ws.krm[i] + 32, ws.rnd[i], 32);
        std::memcpy(ws.krm[i] + 64, ws.mu[i], 64);
        jobs[n++] = {ws.krm[i], 128, nullptr, 0, ws.rho_pp[i]};
      }
      RunShake256Jobs(jobs, n, 64);

      for (size_t lead = 0; lead < m; ++lead) {
        if (!live[lead] || done[lead]) continue;
        const bool prepared = it[lead].prepared;
        const absl::Status load = prepared ? absl::OkStatus() : LoadSigningKey(it[lead].sk, ws.key);
        const SigningKey& key = prepared ? PreparedKey(it[lead], ws.key) : ws.key;
        for (size_t i = lead; i < m; ++i) {
          if (!live[i] || done[i] || it[i].prepared != prepared ||
              !SameSecretBytes(it[lead].sk, it[i].sk)) {
            continue;
          }
          done[i] = true;
          DsaSignItem& item = it[i];
          if (!load.ok()) {
            item.status = load;
          } else if (hashed[i]) {
            item.status = mu_status[i].ok()
                              ? SignWithRhoPP(key, ws.mu[i], ws.rho_pp[i], item.sig.data())
                              : mu_status[i];
          } else {
            item.status = ComputeMuFromTr(key.tr, item.message, item.options, ws.mu[i]);
            if (item.status.ok()) {
              item.status = SignWithKey(key, ws.mu[i], ws.rnd[i], item.sig.data());
            }
          }
        }
      }
    }
  }

  // A prepared key (PreparePrivateKey) is a SigningKey: used in place when its buffer is aligned
  // for one (the key store's buffers are page-aligned), else copied into `scratch` (wiped by the
  // caller).
  static const SigningKey& PreparedKey(const DsaSignItem& item, SigningKey& scratch) {
    static_assert(sizeof(SigningKey) <= Api::kPreparedBytes);
    if (reinterpret_cast<uintptr_t>(item.sk.data()) % alignof(SigningKey) == 0) {
      return *reinterpret_cast<const SigningKey*>(item.sk.data());
    }
    std::memcpy(&scratch, item.sk.data(), sizeof(SigningKey));
    return scratch;
  }
  // tr and K of an expanded or prepared key (skEncode: rho || K || tr || ...).
  static const uint8_t* TrOf(const DsaSignItem& item) {
    return item.prepared ? item.sk.data() + offsetof(SigningKey, tr) : item.sk.data() + 64;
  }
  static const uint8_t* KOf(const DsaSignItem& item) {
    return item.prepared ? item.sk.data() + offsetof(SigningKey, key) : item.sk.data() + 32;
  }

  static absl::Status CheckSignItem(const DsaSignItem& item) {
    if (item.prepared) {
      if (item.sk.size() != Api::kPreparedBytes) {
        return LengthError(kName, "prepared private key", Api::kPreparedBytes, item.sk.size());
      }
    } else if (absl::Status s = CheckSkLength(item.sk); !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckSigBuffer(item.sig); !s.ok()) return s;
    if (absl::Status s = CheckMessageOptions(kName, item.message, item.options); !s.ok()) return s;
    if (!item.options.rnd.empty() && item.options.rnd.size() != Api::kRndBytes) {
      return LengthError(kName, "rnd", Api::kRndBytes, item.options.rnd.size());
    }
    return absl::OkStatus();
  }

  // rnd per options: explicit, 0^32 (deterministic) or fresh.
  static absl::Status DrawRnd(const DsaSignOptions& options, RandomSource& rng, uint8_t rnd[32]) {
    std::memset(rnd, 0, 32);
    if (!options.rnd.empty()) {
      std::memcpy(rnd, options.rnd.data(), 32);
    } else if (!options.deterministic) {
      return rng.Generate(MutBytes(rnd, 32));
    }
    return absl::OkStatus();
  }

  // Verify: tr = H(pk) once per distinct public key of the chunk and side by side, mu = H(tr ||
  // M') and c~' = H(mu || w1Encode(w1')) side by side; A-hat and NTT(t1) once per run of equal
  // keys (requests grouped by key within a chunk, the last key carried to the next chunk).
  static void VerifyBatch(std::span<DsaVerifyItem> items) {
    struct alignas(64) Scratch {
      PublicKeyCache key;
      uint8_t tr[kChunk][64];
      uint8_t prefix[kChunk][kMuPrefixBytes];
      uint8_t ph_tail[kChunk][kPhTailBytes];
      uint8_t mu[kChunk][64];
      uint8_t w1_packed[kChunk][K * kW1Bytes];
      uint8_t c_tilde[kChunk][kCTildeBytes];
    };
    Scratch ws;
    for (size_t base = 0; base < items.size(); base += kChunk) {
      const size_t m = std::min(kChunk, items.size() - base);
      DsaVerifyItem* it = items.data() + base;
      bool live[kChunk] = {}, done[kChunk] = {};
      size_t tr_from[kChunk];
      HashJob jobs[kChunk];
      size_t n = 0;
      for (size_t i = 0; i < m; ++i) {
        DsaVerifyItem& item = it[i];
        item.valid = false;
        item.status = CheckPk(item.pk);
        if (item.status.ok()) item.status = CheckMessageOptions(kName, item.message, item.options);
        live[i] = item.status.ok() && item.sig.size() == kSig;  // wrong length: just invalid
        if (!live[i] || item.options.external_mu) continue;
        tr_from[i] = i;
        for (size_t j = 0; j < i; ++j) {
          if (live[j] && !it[j].options.external_mu && tr_from[j] == j &&
              std::memcmp(it[j].pk.data(), item.pk.data(), kPk) == 0) {
            tr_from[i] = j;
            break;
          }
        }
        if (tr_from[i] == i) jobs[n++] = {item.pk.data(), kPk, nullptr, 0, ws.tr[i]};
      }
      RunShake256Jobs(jobs, n, 64);
      n = 0;
      for (size_t i = 0; i < m; ++i) {
        if (!live[i]) continue;
        DsaVerifyItem& item = it[i];
        if (item.options.external_mu) {
          std::memcpy(ws.mu[i], item.message.data(), 64);
          continue;
        }
        item.status = MakeMuJob(ws.tr[tr_from[i]], item.message, item.options, ws.prefix[i],
                                ws.ph_tail[i], ws.mu[i], jobs[n]);
        live[i] = item.status.ok();
        if (live[i]) ++n;
      }
      RunShake256Jobs(jobs, n, 64);

      // Polynomial part, grouped by public key (the current cache entry first).
      for (size_t pass = 0; pass < 2; ++pass) {
        for (size_t lead = 0; lead < m; ++lead) {
          if (!live[lead] || done[lead]) continue;
          if (pass == 0 &&
              !(ws.key.loaded && std::memcmp(ws.key.pk, it[lead].pk.data(), kPk) == 0)) {
            continue;
          }
          LoadPublicKey(ws.key, it[lead].pk.data());
          for (size_t i = lead; i < m; ++i) {
            if (!live[i] || done[i] || std::memcmp(ws.key.pk, it[i].pk.data(), kPk) != 0) continue;
            done[i] = true;
            live[i] = VerifyW1(ws.key, it[i].sig.data(), ws.w1_packed[i]);
          }
        }
      }
      n = 0;
      for (size_t i = 0; i < m; ++i) {
        if (live[i]) jobs[n++] = {ws.mu[i], 64, ws.w1_packed[i], K * kW1Bytes, ws.c_tilde[i]};
      }
      RunShake256Jobs(jobs, n, kCTildeBytes);
      for (size_t i = 0; i < m; ++i) {
        if (live[i]) it[i].valid = std::memcmp(it[i].sig.data(), ws.c_tilde[i], kCTildeBytes) == 0;
      }
    }
  }

  // Loads the key, derives mu with `make_mu(tr, mu)` and signs with rnd.
  template <class MakeMu>
  static absl::Status SignCommon(Bytes sk, const uint8_t rnd[32], MutBytes sig, MakeMu make_mu) {
    SigningKey key;
    const WipeOnExit wipe_key = WipeSecrets(key);
    if (absl::Status s = LoadSigningKey(sk, key); !s.ok()) return s;
    uint8_t mu[64];
    if (absl::Status s = make_mu(key.tr, mu); !s.ok()) return s;
    return SignWithKey(key, mu, rnd, sig.data());
  }
};

}  // namespace

// ---- MlDsa<K, L> --------------------------------------------------------------------------------

template <int K, int L>
void MlDsa<K, L>::KeyGenInternal(std::span<const uint8_t, 32> xi,
                                 std::span<uint8_t, kPublicKeyBytes> pk,
                                 std::span<uint8_t, kPrivateKeyBytes> sk) {
  using I = Impl<K, L>;
  typename I::SigningKey key;
  // Only K is secret here (s12-hat, s2-hat and t0-hat stay unused without want_signing_key).
  const WipeOnExit wipe_k(key.key, sizeof(key.key));
  I::KeyGenCore(xi.data(), pk.data(), sk.data(), key, /*want_signing_key=*/false);
}

template <int K, int L>
absl::Status MlDsa<K, L>::KeyGenFromSeed(Bytes seed, MutBytes pk, MutBytes sk) {
  if (seed.size() != kSeedBytes) return LengthError(kName, "seed", kSeedBytes, seed.size());
  if (pk.size() != kPublicKeyBytes) {
    return LengthError(kName, "public key buffer", kPublicKeyBytes, pk.size());
  }
  if (sk.size() != kPrivateKeyBytes) {
    return LengthError(kName, "private key buffer", kPrivateKeyBytes, sk.size());
  }
  KeyGenInternal(seed.first<32>(), pk.first<kPublicKeyBytes>(), sk.first<kPrivateKeyBytes>());
  return absl::OkStatus();
}

template <int K, int L>
absl::Status MlDsa<K, L>::KeyGen(MutBytes pk, MutBytes sk, RandomSource& rng, MutBytes seed_out) {
  if (pk.size() != kPublicKeyBytes) {
    return LengthError(kName, "public key buffer", kPublicKeyBytes, pk.size());
  }
  if (sk.size() != kPrivateKeyBytes) {
    return LengthError(kName, "private key buffer", kPrivateKeyBytes, sk.size());
  }
  if (!seed_out.empty() && seed_out.size() != kSeedBytes) {
    return LengthError(kName, "seed output", kSeedBytes, seed_out.size());
  }
  // Alg. 1: xi <- B^32
  std::array<uint8_t, kSeedBytes> xi;
  ZeroOnExit wipe(xi);
  if (absl::Status s = rng.Generate(xi); !s.ok()) return s;
  KeyGenInternal(xi, pk.first<kPublicKeyBytes>(), sk.first<kPrivateKeyBytes>());
  if (!seed_out.empty()) std::memcpy(seed_out.data(), xi.data(), kSeedBytes);
  return absl::OkStatus();
}

template <int K, int L>
absl::Status MlDsa<K, L>::PairwiseCheck(Bytes pk, Bytes sk) {
  using I = Impl<K, L>;
  if (absl::Status s = I::CheckPk(pk); !s.ok()) return s;
  if (absl::Status s = I::CheckSkLength(sk); !s.ok()) return s;
  static constexpr uint8_t kMessage[] = "pqcd ML-DSA pairwise consistency test";
  DsaSignOptions options;
  options.deterministic = true;
  std::array<uint8_t, kSignatureBytes> sig;
  NoRandom no_rng;  // deterministic signing never draws randomness
  if (absl::Status s = Sign(sk, kMessage, options, sig, no_rng); !s.ok()) return s;
  absl::StatusOr<bool> ok = Verify(pk, kMessage, sig, options);
  if (!ok.ok()) return ok.status();
  if (!*ok) {
    return absl::InvalidArgumentError(
        Cat(kName,
            " pairwise consistency check failed: the private key does not match "
            "the public key"));
  }
  return absl::OkStatus();
}

template <int K, int L>
absl::Status MlDsa<K, L>::CheckExpandedPrivateKey(Bytes sk, Bytes pk, MutBytes pk_out) {
  using I = Impl<K, L>;
  if (sk.size() != kPrivateKeyBytes) {
    return LengthError(kName, "expanded private key", kPrivateKeyBytes, sk.size());
  }
  if (!pk.empty() && pk.size() != kPublicKeyBytes) {
    return LengthError(kName, "public key", kPublicKeyBytes, pk.size());
  }
  if (!pk_out.empty() && pk_out.size() != kPublicKeyBytes) {
    return LengthError(kName, "public key buffer", kPublicKeyBytes, pk_out.size());
  }
  return I::CheckExpandedKey(sk.data(), pk.empty() ? nullptr : pk.data(),
                             pk_out.empty() ? nullptr : pk_out.data());
}

template <int K, int L>
absl::Status MlDsa<K, L>::Sign(Bytes sk, Bytes message, const DsaSignOptions& options, MutBytes sig,
                               RandomSource& rng) {
  using I = Impl<K, L>;
  if (absl::Status s = I::CheckSkLength(sk); !s.ok()) return s;
  if (absl::Status s = I::CheckSigBuffer(sig); !s.ok()) return s;
  if (absl::Status s = CheckMessageOptions(kName, message, options); !s.ok()) return s;
  if (!options.rnd.empty() && options.rnd.size() != kRndBytes) {
    return LengthError(kName, "rnd", kRndBytes, options.rnd.size());
  }
  std::array<uint8_t, kRndBytes> rnd{};  // deterministic: 0^32
  ZeroOnExit wipe_rnd(rnd);
  if (!options.rnd.empty()) {
    std::memcpy(rnd.data(), options.rnd.data(), kRndBytes);
  } else if (!options.deterministic) {
    if (absl::Status s = rng.Generate(rnd); !s.ok()) return s;
  }
  return I::SignCommon(sk, rnd.data(), sig, [&](const uint8_t* tr, uint8_t* mu) {
    return ComputeMuFromTr(tr, message, options, mu);
  });
}

template <int K, int L>
absl::Status MlDsa<K, L>::PreparePrivateKey(Bytes sk, MutBytes prepared) {
  using I = Impl<K, L>;
  if (prepared.size() != kPreparedBytes) {
    return LengthError(kName, "prepared private key buffer", kPreparedBytes, prepared.size());
  }
  if (absl::Status s = I::CheckSkLength(sk); !s.ok()) return s;
  if (sk.size() == kPrivateKeyBytes) {
    if (absl::Status s = CheckExpandedPrivateKey(sk); !s.ok()) return s;
  }
  typename I::SigningKey key;
  const WipeOnExit wipe_key = I::WipeSecrets(key);
  if (absl::Status s = I::LoadSigningKey(sk, key); !s.ok()) return s;
  std::memset(prepared.data(), 0, prepared.size());
  std::memcpy(prepared.data(), &key, sizeof(key));
  return absl::OkStatus();
}

template <int K, int L>
absl::Status MlDsa<K, L>::SignInternal(Bytes sk, Bytes mprime, Bytes rnd, MutBytes sig) {
  using I = Impl<K, L>;
  if (absl::Status s = I::CheckSkLength(sk); !s.ok()) return s;
  if (absl::Status s = I::CheckSigBuffer(sig); !s.ok()) return s;
  if (rnd.size() != kRndBytes) return LengthError(kName, "rnd", kRndBytes, rnd.size());
  return I::SignCommon(sk, rnd.data(), sig, [&](const uint8_t* tr, uint8_t* mu) {
    ComputeMuInternal(tr, mprime, mu);
    return absl::OkStatus();
  });
}

template <int K, int L>
absl::StatusOr<bool> MlDsa<K, L>::Verify(Bytes pk, Bytes message, Bytes sig,
                                         const DsaMessageOptions& options) {
  using I = Impl<K, L>;
  if (absl::Status s = I::CheckPk(pk); !s.ok()) return s;
  if (absl::Status s = CheckMessageOptions(kName, message, options); !s.ok()) return s;
  if (sig.size() != kSignatureBytes) return false;
  if (options.external_mu) return I::VerifyMu(pk.data(), message.data(), sig.data());
  return I::VerifyWithTr(pk.data(), sig.data(), [&](const uint8_t* tr, uint8_t* mu) {
    return ComputeMuFromTr(tr, message, options, mu);
  });
}

template <int K, int L>
absl::StatusOr<bool> MlDsa<K, L>::VerifyInternal(Bytes pk, Bytes mprime, Bytes sig) {
  using I = Impl<K, L>;
  if (absl::Status s = I::CheckPk(pk); !s.ok()) return s;
  if (sig.size() != kSignatureBytes) return false;
  return I::VerifyWithTr(pk.data(), sig.data(), [&](const uint8_t* tr, uint8_t* mu) {
    ComputeMuInternal(tr, mprime, mu);
    return absl::OkStatus();
  });
}

template <int K, int L>
absl::Status MlDsa<K, L>::ComputeMu(Bytes pk, Bytes message, const DsaMessageOptions& options,
                                    MutBytes mu) {
  using I = Impl<K, L>;
  if (absl::Status s = I::CheckPk(pk); !s.ok()) return s;
  if (mu.size() != kMuBytes) return LengthError(kName, "mu buffer", kMuBytes, mu.size());
  if (absl::Status s = CheckMessageOptions(kName, message, options); !s.ok()) return s;
  uint8_t tr[64];
  Shake256Digest(pk, tr);
  return ComputeMuFromTr(tr, message, options, mu.data());
}

template <int K, int L>
void MlDsa<K, L>::KeyGenBatch(std::span<DsaKeyGenItem> items, RandomSource& rng) {
  Impl<K, L>::KeyGenBatch(items, rng);
}

template <int K, int L>
void MlDsa<K, L>::SignBatch(std::span<DsaSignItem> items, RandomSource& rng) {
  Impl<K, L>::SignBatch(items, rng);
}

template <int K, int L>
void MlDsa<K, L>::VerifyBatch(std::span<DsaVerifyItem> items) {
  Impl<K, L>::VerifyBatch(items);
}

template class MlDsa<4, 4>;
template class MlDsa<6, 5>;
template class MlDsa<8, 7>;

}  // namespace pqcd::kernels
