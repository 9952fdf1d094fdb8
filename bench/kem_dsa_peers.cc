// kem-dsa-peers: pqcd's ML-KEM, ML-DSA, SHA3-256 and SHAKE128 beside liboqs (its bundled
// mlkem-native and mldsa-native), standalone mlkem-native and OpenSSL's EVP, interleaved in one
// process (../shared/PEERS.md's method): every call bracketed by lfence; rdtsc ... rdtscp; lfence,
// R rounds, in each round the operations in shuffled order and within each the implementations'
// blocks of calls in shuffled order, the median of the per-call ticks, pqcd/best peer per operation
// within the run. ML-DSA "sign" is deterministic (identical inputs); "sign hedged" is each
// library's randomized public entry point (pqcd Sign, OQS_SIG_sign).
//
// Every implementation gets the same inputs. Before timing:
//   ML-KEM: keys from the same 64-byte seed d||z equal byte for byte (pqcd KeyGenInternal, liboqs
//     OQS_KEM_keypair_derand, mlkem-native keypair_derand); ciphertext and shared secret from the
//     same m equal; decapsulation gives that secret in all; a changed ciphertext gives the same
//     implicit-rejection secret in all; an encapsulation key with a coefficient >= q and a
//     decapsulation key with a changed H(ek) are rejected by all.
//   ML-DSA: keys from the same 32-byte xi equal byte for byte, and the deterministic signatures
//     (rnd = 0, empty context) of the benchmark messages too. liboqs's public API has neither
//     seeded key generation nor deterministic signing; its bundled mldsa-native's keypair_internal
//     and signature_internal (global symbols in liboqs.a, not in oqs.h) are what OQS_SIG_keypair
//     and OQS_SIG_sign call with fresh randomness, so those are compared and timed. Hedged
//     signatures cross-verify (pqcd's in OQS_SIG_verify, OQS_SIG_sign's in pqcd); a changed
//     signature, message or public key is rejected by both.
//   SHA3-256 and SHAKE128 (32-byte output) of the same 64 KiB equal OpenSSL's.
//
// Built only when CMake is given a liboqs build with ML-KEM and ML-DSA and its x86_64 code
// (OQS_OPT_TARGET=auto, as bench/peers/build-kem-dsa-peers.sh builds it):
//   -DPQCD_LIBOQS_DIR=/path/to/liboqs-build        (its include/ and lib/liboqs.a)
// and, optionally, mlkem-native's own `make lib OPT=1 AUTO=1` output (default namespace):
//   -DPQCD_MLKEM_NATIVE_DIR=/path/to/its/build-dir  (libmlkem.a)
// Run pinned:  taskset -c 1 build/bench/kem-dsa-peers --cpu=1 --rounds=11 [--isa=avx2]
//              [--ops=ML-KEM-768,ML-DSA-65/sign,verify,...]
#include <openssl/evp.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/sha3.h"
#include "tsc.h"

extern "C" {
#include <oqs/oqs.h>

// mldsa-native's internal entry points inside liboqs.a (the x86_64 build of each parameter set).
#define PQCD_MLDSA_NATIVE(level)                                                         \
  int PQCP_MLDSA_NATIVE_MLDSA##level##_X86_64_keypair_internal(uint8_t* pk, uint8_t* sk, \
                                                               const uint8_t* seed);     \
  int PQCP_MLDSA_NATIVE_MLDSA##level##_X86_64_signature_internal(                        \
      uint8_t* sig, size_t* siglen, const uint8_t* m, size_t mlen, const uint8_t* pre,   \
      size_t prelen, const uint8_t* rnd, const uint8_t* sk, int externalmu);
PQCD_MLDSA_NATIVE(44)
PQCD_MLDSA_NATIVE(65)
PQCD_MLDSA_NATIVE(87)
#undef PQCD_MLDSA_NATIVE

#ifdef PQCD_HAVE_MLKEM_NATIVE
// mlkem-native's `make lib`: one build per level, named PQCP_MLKEM_NATIVE_MLKEM<level>_*.
#define PQCD_MLKEM_NATIVE(level)                                                               \
  int PQCP_MLKEM_NATIVE_MLKEM##level##_keypair_derand(uint8_t* pk, uint8_t* sk,                \
                                                      const uint8_t* coins);                   \
  int PQCP_MLKEM_NATIVE_MLKEM##level##_enc_derand(uint8_t* ct, uint8_t* ss, const uint8_t* pk, \
                                                  const uint8_t* coins);                       \
  int PQCP_MLKEM_NATIVE_MLKEM##level##_dec(uint8_t* ss, const uint8_t* ct, const uint8_t* sk);
PQCD_MLKEM_NATIVE(512)
PQCD_MLKEM_NATIVE(768)
PQCD_MLKEM_NATIVE(1024)
#undef PQCD_MLKEM_NATIVE

// libmlkem.a's randomized entry points (linked beside the derandomized ones, not called here)
// take their randomness from a randombytes() that the application supplies.
int randombytes(uint8_t* out, size_t outlen) {
  return pqcd::kernels::OsRandom().Generate({out, outlen}).ok() ? 0 : -1;
}
#endif
}

namespace k = pqcd::kernels;

namespace {

// One implementation's calls of one operation; call(i) is the block's i-th call.
struct Block {
  std::string alg, op, impl;
  int calls;
  std::function<bool(int)> call;
};

// Calls per block and round.
constexpr int kKemCalls = 64;
constexpr int kDsaCalls = 32;
constexpr int kHashCalls = 16;
// ML-DSA signs and verifies this many messages in turn (the same ones in every implementation),
// each once per block: the medians cover the spread of the signing rejection-loop counts rather
// than one message's count.
constexpr int kDsaMessages = kDsaCalls;
constexpr size_t kHashInputBytes = 64 * 1024;

// --ops: a comma-separated list of algorithms ("ML-KEM-768"), operations ("sign") or both
// ("ML-DSA-65/verify"), or "all".
class OpFilter {
 public:
  explicit OpFilter(const std::string& list) {
    for (size_t from = 0; from <= list.size();) {
      const size_t comma = std::min(list.find(',', from), list.size());
      items_.push_back(list.substr(from, comma - from));
      from = comma + 1;
    }
  }
  bool operator()(const std::string& alg, const std::string& op) const {
    for (const std::string& item : items_) {
      if (item == "all" || item == alg || item == op || item == alg + "/" + op) return true;
    }
    return false;
  }
  bool Any(const std::string& alg, std::initializer_list<const char*> ops) const {
    return std::any_of(ops.begin(), ops.end(), [&](const char* op) { return (*this)(alg, op); });
  }

 private:
  std::vector<std::string> items_;
};

void Fill(uint64_t seed, k::MutBytes out) {
  k::SeededRandom rng(seed);
  if (!rng.Generate(out).ok()) std::abort();
}

bool Same(k::Bytes a, k::Bytes b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

const char* Verdict(bool ok) {
  return ok ? "ok" : "FAILED";
}

// ---- ML-KEM ----

struct MlKemNativeFns {
  int (*keypair_derand)(uint8_t*, uint8_t*, const uint8_t*);
  int (*enc_derand)(uint8_t*, uint8_t*, const uint8_t*, const uint8_t*);
  int (*dec)(uint8_t*, const uint8_t*, const uint8_t*);
};

template <int K>
const MlKemNativeFns* MlKemNativeOf() {
#ifdef PQCD_HAVE_MLKEM_NATIVE
#define PQCD_MLKEM_NATIVE(level)                                                                  \
  {                                                                                               \
    PQCP_MLKEM_NATIVE_MLKEM##level##_keypair_derand, PQCP_MLKEM_NATIVE_MLKEM##level##_enc_derand, \
        PQCP_MLKEM_NATIVE_MLKEM##level##_dec                                                      \
  }
  static constexpr MlKemNativeFns kFns[] = {PQCD_MLKEM_NATIVE(512), PQCD_MLKEM_NATIVE(768),
                                            PQCD_MLKEM_NATIVE(1024)};
#undef PQCD_MLKEM_NATIVE
  return &kFns[K - 2];
#else
  return nullptr;
#endif
}

template <int K>
bool AddMlKem(std::vector<Block>& blocks, const OpFilter& wanted) {
  using M = k::MlKem<K>;
  const std::string alg(M::kName);
  if (!wanted.Any(alg, {"keygen", "encaps", "decaps"})) return true;
  struct State {
    OQS_KEM* oqs = nullptr;
    const MlKemNativeFns* native = nullptr;
    std::array<uint8_t, 64> seed;  // d || z
    std::array<uint8_t, 32> m;
    std::array<uint8_t, M::kEncapsKeyBytes> ek;
    std::array<uint8_t, M::kDecapsKeyBytes> dk;
    std::array<uint8_t, M::kCiphertextBytes> ct;
    std::array<uint8_t, 32> ss;
    // Outputs of the timed calls (contents unused).
    std::array<uint8_t, M::kEncapsKeyBytes> ek_out;
    std::array<uint8_t, M::kDecapsKeyBytes> dk_out;
    std::array<uint8_t, M::kCiphertextBytes> ct_out;
    std::array<uint8_t, 32> ss_out;
    ~State() { OQS_KEM_free(oqs); }
  };
  auto s = std::make_shared<State>();
  s->oqs = OQS_KEM_new(alg.c_str());
  if (s->oqs == nullptr) {
    std::fprintf(stderr, "liboqs has no %s (enable it in OQS_MINIMAL_BUILD)\n", alg.c_str());
    return false;
  }
  s->native = MlKemNativeOf<K>();
  Fill(100 + K, s->seed);
  Fill(200 + K, s->m);
  const auto d = std::span(s->seed).template first<32>();
  const auto z = std::span(s->seed).template last<32>();
  M::KeyGenInternal(d, z, s->ek, s->dk);
  if (!M::EncapsDerand(s->ek, s->m, s->ct, s->ss).ok()) return false;

  // The same keys, ciphertext and secrets from every implementation.
  std::vector<uint8_t> ek(M::kEncapsKeyBytes), dk(M::kDecapsKeyBytes), ct(M::kCiphertextBytes),
      ss(32), ss2(32);
  bool keys = OQS_KEM_keypair_derand(s->oqs, ek.data(), dk.data(), s->seed.data()) == OQS_SUCCESS &&
              Same(ek, s->ek) && Same(dk, s->dk);
  bool encaps = OQS_KEM_encaps_derand(s->oqs, ct.data(), ss.data(), s->ek.data(), s->m.data()) ==
                    OQS_SUCCESS &&
                Same(ct, s->ct) && Same(ss, s->ss);
  bool decaps = OQS_KEM_decaps(s->oqs, ss.data(), s->ct.data(), s->dk.data()) == OQS_SUCCESS &&
                Same(ss, s->ss);
  if (s->native != nullptr) {
    keys = keys && s->native->keypair_derand(ek.data(), dk.data(), s->seed.data()) == 0 &&
           Same(ek, s->ek) && Same(dk, s->dk);
    encaps = encaps &&
             s->native->enc_derand(ct.data(), ss.data(), s->ek.data(), s->m.data()) == 0 &&
             Same(ct, s->ct) && Same(ss, s->ss);
    decaps =
        decaps && s->native->dec(ss.data(), s->ct.data(), s->dk.data()) == 0 && Same(ss, s->ss);
  }
  decaps = decaps && M::Decaps(s->dk, s->ct, ss).ok() && Same(ss, s->ss);
  // A changed ciphertext: every implementation returns the same implicit-rejection secret J(z||c).
  std::vector<uint8_t> bad_ct(s->ct.begin(), s->ct.end());
  bad_ct[bad_ct.size() / 2] ^= 1;
  std::vector<uint8_t> reject(32);
  bool implicit = M::Decaps(s->dk, bad_ct, reject).ok() && !Same(reject, s->ss) &&
                  OQS_KEM_decaps(s->oqs, ss2.data(), bad_ct.data(), s->dk.data()) == OQS_SUCCESS &&
                  Same(ss2, reject);
  if (s->native != nullptr) {
    implicit = implicit && s->native->dec(ss2.data(), bad_ct.data(), s->dk.data()) == 0 &&
               Same(ss2, reject);
  }
  // An encapsulation key whose first coefficient is 0xfff >= q (FIPS 203 §7.2), and a
  // decapsulation key whose H(ek) no longer matches (§7.3): refused by every implementation.
  std::vector<uint8_t> bad_ek(s->ek.begin(), s->ek.end());
  bad_ek[0] = 0xff;
  bad_ek[1] |= 0x0f;
  std::vector<uint8_t> bad_dk(s->dk.begin(), s->dk.end());
  bad_dk[768 * K + 32] ^= 1;
  bool bad_keys = !M::EncapsDerand(bad_ek, s->m, ct, ss).ok() &&
                  !M::Decaps(bad_dk, s->ct, ss).ok() &&
                  OQS_KEM_encaps_derand(s->oqs, ct.data(), ss.data(), bad_ek.data(), s->m.data()) !=
                      OQS_SUCCESS &&
                  OQS_KEM_decaps(s->oqs, ss.data(), s->ct.data(), bad_dk.data()) != OQS_SUCCESS;
  if (s->native != nullptr) {
    bad_keys = bad_keys &&
               s->native->enc_derand(ct.data(), ss.data(), bad_ek.data(), s->m.data()) != 0 &&
               s->native->dec(ss.data(), s->ct.data(), bad_dk.data()) != 0;
  }
  std::printf(
      "%s (pqcd, liboqs%s): keys from one seed equal %s, encapsulation from one m equal %s, "
      "decapsulation equal %s, changed ciphertext -> same implicit-rejection secret %s, ek with a "
      "coefficient >= q and dk with a changed H(ek) rejected %s\n",
      alg.c_str(), s->native != nullptr ? ", mlkem-native" : "", Verdict(keys), Verdict(encaps),
      Verdict(decaps), Verdict(implicit), Verdict(bad_keys));
  if (!keys || !encaps || !decaps || !implicit || !bad_keys) return false;

  auto add = [&](const char* op, const char* impl, std::function<bool(int)> call) {
    if (wanted(alg, op)) blocks.push_back({alg, op, impl, kKemCalls, std::move(call)});
  };
  add("keygen", "pqcd", [s, d, z](int) {
    M::KeyGenInternal(d, z, s->ek_out, s->dk_out);
    return true;
  });
  add("keygen", "liboqs", [s](int) {
    return OQS_KEM_keypair_derand(s->oqs, s->ek_out.data(), s->dk_out.data(), s->seed.data()) ==
           OQS_SUCCESS;
  });
  add("encaps", "pqcd",
      [s](int) { return M::EncapsDerand(s->ek, s->m, s->ct_out, s->ss_out).ok(); });
  add("encaps", "liboqs", [s](int) {
    return OQS_KEM_encaps_derand(s->oqs, s->ct_out.data(), s->ss_out.data(), s->ek.data(),
                                 s->m.data()) == OQS_SUCCESS;
  });
  add("decaps", "pqcd", [s](int) { return M::Decaps(s->dk, s->ct, s->ss_out).ok(); });
  add("decaps", "liboqs", [s](int) {
    return OQS_KEM_decaps(s->oqs, s->ss_out.data(), s->ct.data(), s->dk.data()) == OQS_SUCCESS;
  });
  if (s->native != nullptr) {
    add("keygen", "mlkem-native", [s](int) {
      return s->native->keypair_derand(s->ek_out.data(), s->dk_out.data(), s->seed.data()) == 0;
    });
    add("encaps", "mlkem-native", [s](int) {
      return s->native->enc_derand(s->ct_out.data(), s->ss_out.data(), s->ek.data(), s->m.data()) ==
             0;
    });
    add("decaps", "mlkem-native",
        [s](int) { return s->native->dec(s->ss_out.data(), s->ct.data(), s->dk.data()) == 0; });
  }
  return true;
}

// ---- ML-DSA ----

struct MlDsaNativeFns {
  int (*keypair_internal)(uint8_t*, uint8_t*, const uint8_t*);
  int (*signature_internal)(uint8_t*, size_t*, const uint8_t*, size_t, const uint8_t*, size_t,
                            const uint8_t*, const uint8_t*, int);
};
#define PQCD_MLDSA_NATIVE(level)                                   \
  {                                                                \
    PQCP_MLDSA_NATIVE_MLDSA##level##_X86_64_keypair_internal,      \
        PQCP_MLDSA_NATIVE_MLDSA##level##_X86_64_signature_internal \
  }
constexpr MlDsaNativeFns kMlDsa44Native = PQCD_MLDSA_NATIVE(44);
constexpr MlDsaNativeFns kMlDsa65Native = PQCD_MLDSA_NATIVE(65);
constexpr MlDsaNativeFns kMlDsa87Native = PQCD_MLDSA_NATIVE(87);
#undef PQCD_MLDSA_NATIVE

// FIPS 204 Alg. 2's prefix of M' for pure ML-DSA with an empty context: 0 || |ctx|.
constexpr uint8_t kPureEmptyContext[2] = {0, 0};

template <class S>
bool AddMlDsa(std::vector<Block>& blocks, const OpFilter& wanted, const MlDsaNativeFns& native) {
  const std::string alg(S::kName);
  if (!wanted.Any(alg, {"keygen", "sign", "sign hedged", "verify"})) return true;
  struct State {
    OQS_SIG* oqs = nullptr;
    MlDsaNativeFns native;
    std::array<uint8_t, 32> xi;
    std::array<uint8_t, 32> rnd{};  // deterministic signing: rnd = 0
    std::array<uint8_t, S::kPublicKeyBytes> pk;
    std::array<uint8_t, S::kPrivateKeyBytes> sk;
    std::array<std::array<uint8_t, 64>, kDsaMessages> msgs;
    std::array<std::array<uint8_t, S::kSignatureBytes>, kDsaMessages> sigs;
    k::DsaSignOptions deterministic, hedged;
    // Outputs of the timed calls (contents unused).
    std::array<uint8_t, S::kPublicKeyBytes> pk_out;
    std::array<uint8_t, S::kPrivateKeyBytes> sk_out;
    std::array<uint8_t, S::kSignatureBytes> sig_out;
    ~State() { OQS_SIG_free(oqs); }
  };
  auto s = std::make_shared<State>();
  s->oqs = OQS_SIG_new(alg.c_str());
  if (s->oqs == nullptr) {
    std::fprintf(stderr, "liboqs has no %s (enable it in OQS_MINIMAL_BUILD)\n", alg.c_str());
    return false;
  }
  s->native = native;
  s->deterministic.deterministic = true;
  Fill(300 + S::kPublicKeyBytes, s->xi);
  for (int i = 0; i < kDsaMessages; ++i) Fill(400 + i, s->msgs[i]);
  S::KeyGenInternal(s->xi, s->pk, s->sk);

  // Keys from xi and deterministic signatures, byte for byte.
  std::vector<uint8_t> pk(S::kPublicKeyBytes), sk(S::kPrivateKeyBytes), sig(S::kSignatureBytes);
  const bool keys = native.keypair_internal(pk.data(), sk.data(), s->xi.data()) == 0 &&
                    Same(pk, s->pk) && Same(sk, s->sk);
  bool sigs = true;
  for (int i = 0; i < kDsaMessages; ++i) {
    size_t len = 0;
    sigs = sigs && S::Sign(s->sk, s->msgs[i], s->deterministic, s->sigs[i], k::OsRandom()).ok() &&
           native.signature_internal(sig.data(), &len, s->msgs[i].data(), s->msgs[i].size(),
                                     kPureEmptyContext, sizeof kPureEmptyContext, s->rnd.data(),
                                     s->sk.data(), 0) == 0 &&
           len == S::kSignatureBytes && Same(sig, s->sigs[i]);
  }
  // Hedged signatures through the public APIs cross-verify.
  const std::array<uint8_t, 64>& msg = s->msgs[0];
  std::vector<uint8_t> ours(S::kSignatureBytes), theirs(S::kSignatureBytes);
  size_t len = 0;
  const bool cross = S::Sign(s->sk, msg, s->hedged, ours, k::OsRandom()).ok() &&
                     OQS_SIG_sign(s->oqs, theirs.data(), &len, msg.data(), msg.size(),
                                  s->sk.data()) == OQS_SUCCESS &&
                     len == S::kSignatureBytes &&
                     OQS_SIG_verify(s->oqs, msg.data(), msg.size(), ours.data(), ours.size(),
                                    s->pk.data()) == OQS_SUCCESS &&
                     *S::Verify(s->pk, msg, theirs, s->hedged);
  // A changed signature, message or public key is rejected by both.
  auto rejected = [&](k::Bytes p, k::Bytes m, k::Bytes sg) {
    const absl::StatusOr<bool> v = S::Verify(p, m, sg, s->hedged);
    return (!v.ok() || !*v) && OQS_SIG_verify(s->oqs, m.data(), m.size(), sg.data(), sg.size(),
                                              p.data()) != OQS_SUCCESS;
  };
  std::vector<uint8_t> bad_sig(s->sigs[0].begin(), s->sigs[0].end());
  bad_sig[bad_sig.size() / 3] ^= 1;
  std::vector<uint8_t> bad_msg(msg.begin(), msg.end());
  bad_msg[7] ^= 1;
  std::vector<uint8_t> bad_pk(s->pk.begin(), s->pk.end());
  bad_pk[32 + 100] ^= 1;  // a t1 coefficient
  const bool rejects = rejected(s->pk, msg, bad_sig) && rejected(s->pk, bad_msg, s->sigs[0]) &&
                       rejected(bad_pk, msg, s->sigs[0]);
  std::printf(
      "%s (pqcd, liboqs): keys from one xi equal %s, deterministic signatures of %d messages "
      "equal %s, hedged signatures cross-verify %s, changed signature/message/public key rejected "
      "%s\n",
      alg.c_str(), Verdict(keys), kDsaMessages, Verdict(sigs), Verdict(cross), Verdict(rejects));
  if (!keys || !sigs || !cross || !rejects) return false;

  auto add = [&](const char* op, const char* impl, std::function<bool(int)> call) {
    if (wanted(alg, op)) blocks.push_back({alg, op, impl, kDsaCalls, std::move(call)});
  };
  add("keygen", "pqcd", [s](int) {
    S::KeyGenInternal(s->xi, s->pk_out, s->sk_out);
    return true;
  });
  add("keygen", "liboqs", [s](int) {
    return s->native.keypair_internal(s->pk_out.data(), s->sk_out.data(), s->xi.data()) == 0;
  });
  add("sign", "pqcd", [s](int i) {
    return S::Sign(s->sk, s->msgs[i % kDsaMessages], s->deterministic, s->sig_out, k::OsRandom())
        .ok();
  });
  add("sign", "liboqs", [s](int i) {
    const std::array<uint8_t, 64>& m = s->msgs[i % kDsaMessages];
    size_t l = 0;
    return s->native.signature_internal(s->sig_out.data(), &l, m.data(), m.size(),
                                        kPureEmptyContext, sizeof kPureEmptyContext, s->rnd.data(),
                                        s->sk.data(), 0) == 0;
  });
  add("sign hedged", "pqcd", [s](int i) {
    return S::Sign(s->sk, s->msgs[i % kDsaMessages], s->hedged, s->sig_out, k::OsRandom()).ok();
  });
  add("sign hedged", "liboqs", [s](int i) {
    const std::array<uint8_t, 64>& m = s->msgs[i % kDsaMessages];
    size_t l = 0;
    return OQS_SIG_sign(s->oqs, s->sig_out.data(), &l, m.data(), m.size(), s->sk.data()) ==
           OQS_SUCCESS;
  });
  add("verify", "pqcd", [s](int i) {
    const absl::StatusOr<bool> v =
        S::Verify(s->pk, s->msgs[i % kDsaMessages], s->sigs[i % kDsaMessages], s->hedged);
    return v.ok() && *v;
  });
  add("verify", "liboqs", [s](int i) {
    const std::array<uint8_t, 64>& m = s->msgs[i % kDsaMessages];
    const std::array<uint8_t, S::kSignatureBytes>& sg = s->sigs[i % kDsaMessages];
    return OQS_SIG_verify(s->oqs, m.data(), m.size(), sg.data(), sg.size(), s->pk.data()) ==
           OQS_SUCCESS;
  });
  return true;
}

// ---- SHA3-256 and SHAKE128 on 64 KiB ----

bool AddHashes(std::vector<Block>& blocks, const OpFilter& wanted) {
  const std::string op = "64KiB";
  const bool sha3 = wanted("SHA3-256", op), shake = wanted("SHAKE128", op);
  if (!sha3 && !shake) return true;
  struct State {
    std::vector<uint8_t> in = std::vector<uint8_t>(kHashInputBytes);
    std::array<uint8_t, 32> out;
    EVP_MD* sha3_256 = EVP_MD_fetch(nullptr, "SHA3-256", nullptr);
    EVP_MD* shake128 = EVP_MD_fetch(nullptr, "SHAKE128", nullptr);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~State() {
      EVP_MD_CTX_free(ctx);
      EVP_MD_free(shake128);
      EVP_MD_free(sha3_256);
    }
    bool OpenSslSha3() {
      unsigned len = 0;
      return EVP_Digest(in.data(), in.size(), out.data(), &len, sha3_256, nullptr) == 1 &&
             len == out.size();
    }
    bool OpenSslShake() {
      return EVP_DigestInit_ex(ctx, shake128, nullptr) == 1 &&
             EVP_DigestUpdate(ctx, in.data(), in.size()) == 1 &&
             EVP_DigestFinalXOF(ctx, out.data(), out.size()) == 1;
    }
  };
  auto s = std::make_shared<State>();
  if (s->sha3_256 == nullptr || s->shake128 == nullptr || s->ctx == nullptr) {
    std::fprintf(stderr, "OpenSSL has no SHA3-256/SHAKE128\n");
    return false;
  }
  Fill(500, s->in);
  std::array<uint8_t, 32> ours;
  k::Sha3_256Digest(s->in, ours);
  const bool sha3_equal = s->OpenSslSha3() && s->out == ours;
  k::Shake128Digest(s->in, ours);
  const bool shake_equal = s->OpenSslShake() && s->out == ours;
  std::printf("SHA3-256, SHAKE128 (32 bytes) of 64 KiB (pqcd, OpenSSL): equal %s, %s\n",
              Verdict(sha3_equal), Verdict(shake_equal));
  if (!sha3_equal || !shake_equal) return false;
  if (sha3) {
    blocks.push_back({"SHA3-256", op, "pqcd", kHashCalls, [s](int) {
                        k::Sha3_256Digest(s->in, s->out);
                        return true;
                      }});
    blocks.push_back(
        {"SHA3-256", op, "OpenSSL", kHashCalls, [s](int) { return s->OpenSslSha3(); }});
  }
  if (shake) {
    blocks.push_back({"SHAKE128", op, "pqcd", kHashCalls, [s](int) {
                        k::Shake128Digest(s->in, s->out);
                        return true;
                      }});
    blocks.push_back(
        {"SHAKE128", op, "OpenSSL", kHashCalls, [s](int) { return s->OpenSslShake(); }});
  }
  return true;
}

double Median(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : static_cast<double>(v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 11, cpu = -1;
  std::string ops = "all";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--rounds=", 0) == 0) {
      rounds = std::atoi(a.c_str() + 9);
    } else if (a.rfind("--cpu=", 0) == 0) {
      cpu = std::atoi(a.c_str() + 6);
    } else if (a.rfind("--isa=", 0) == 0) {
      const absl::StatusOr<k::Isa> isa = k::ParseIsa(a.substr(6));
      if (!isa.ok() || !k::SetActiveIsa(*isa).ok()) {
        std::fprintf(stderr, "kem-dsa-peers: cannot run the %s backend here\n", a.c_str() + 6);
        return 2;
      }
    } else if (a.rfind("--ops=", 0) == 0) {
      ops = a.substr(6);
    } else {
      const std::string isas = k::AllIsaNames("|");
      std::fprintf(
          stderr,
          "usage: kem-dsa-peers [--cpu=N] [--rounds=R] [--isa=%s]\n"
          "                     [--ops=all|ALGORITHM|OPERATION|ALGORITHM/OPERATION,...]\n"
          "  pqcd's ML-KEM-512/768/1024 (keygen, encaps, decaps), ML-DSA-44/65/87 (keygen,\n"
          "  sign, sign hedged, verify), SHA3-256 and SHAKE128 (64KiB) beside liboqs,\n"
          "  mlkem-native and OpenSSL: median TSC ticks per call, pqcd/best peer\n",
          isas.c_str());
      return a == "--help" ? 0 : 2;
    }
  }
  if (rounds < 1) {
    std::fprintf(stderr, "kem-dsa-peers: --rounds must be at least 1\n");
    return 2;
  }
  if (cpu >= 0) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(cpu, &mask);
    if (sched_setaffinity(0, sizeof(mask), &mask) != 0) std::perror("sched_setaffinity");
  }
  const OpFilter wanted(ops);
  std::vector<Block> blocks;
  bool ok = AddMlKem<2>(blocks, wanted);
  ok = AddMlKem<3>(blocks, wanted) && ok;
  ok = AddMlKem<4>(blocks, wanted) && ok;
  ok = AddMlDsa<k::MlDsa44>(blocks, wanted, kMlDsa44Native) && ok;
  ok = AddMlDsa<k::MlDsa65>(blocks, wanted, kMlDsa65Native) && ok;
  ok = AddMlDsa<k::MlDsa87>(blocks, wanted, kMlDsa87Native) && ok;
  ok = AddHashes(blocks, wanted) && ok;
  if (!ok || blocks.empty()) {
    std::fprintf(stderr, "kem-dsa-peers: %s\n", ok ? "--ops selects nothing" : "setup failed");
    return 1;
  }
  std::printf("pqcd backend: %s; %d rounds; cpu %d\n",
              std::string(k::IsaName(k::ActiveIsa())).c_str(), rounds, sched_getcpu());
  std::vector<std::vector<uint64_t>> ticks(blocks.size());
  std::mt19937 shuffle(12345);
  // In each round every operation in shuffled order, and within it each implementation's block.
  std::vector<std::string> op_keys;
  std::map<std::string, std::vector<size_t>> by_op;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const std::string key = blocks[b].alg + "/" + blocks[b].op;
    if (by_op[key].empty()) op_keys.push_back(key);
    by_op[key].push_back(b);
  }
  for (int r = 0; r < rounds; ++r) {
    std::shuffle(op_keys.begin(), op_keys.end(), shuffle);
    for (const std::string& key : op_keys) {
      std::vector<size_t>& impls = by_op[key];
      std::shuffle(impls.begin(), impls.end(), shuffle);
      for (size_t b : impls) {
        for (int c = 0; c < blocks[b].calls; ++c) {
          const uint64_t t0 = pqcd::bench::TscStart();
          const bool good = blocks[b].call(c);
          const uint64_t t1 = pqcd::bench::TscStop();
          if (!good) {
            std::fprintf(stderr, "%s %s %s failed\n", blocks[b].alg.c_str(), blocks[b].op.c_str(),
                         blocks[b].impl.c_str());
            return 1;
          }
          ticks[b].push_back(t1 - t0);
        }
      }
    }
  }
  std::map<std::string, double> med;
  for (size_t b = 0; b < blocks.size(); ++b) {
    med[blocks[b].alg + "|" + blocks[b].op + "|" + blocks[b].impl] = Median(ticks[b]);
  }
#ifdef PQCD_HAVE_MLKEM_NATIVE
  const std::vector<std::string> peers = {"liboqs", "mlkem-native", "OpenSSL"};
#else
  const std::vector<std::string> peers = {"liboqs", "OpenSSL"};
#endif
  std::printf("\n| algorithm | operation | pqcd ticks |");
  for (const std::string& p : peers) std::printf(" %s ticks |", p.c_str());
  std::printf(" best peer | pqcd/best |\n|---|---|---:|");
  for (size_t i = 0; i < peers.size(); ++i) std::printf("---:|");
  std::printf("---|---:|\n");
  for (const Block& blk : blocks) {
    if (blk.impl != "pqcd") continue;
    const std::string key = blk.alg + "|" + blk.op + "|";
    const double ours = med[key + "pqcd"];
    std::printf("| %s | %s | %.0f |", blk.alg.c_str(), blk.op.c_str(), ours);
    std::string best;
    double best_ticks = 0;
    for (const std::string& p : peers) {
      const auto it = med.find(key + p);
      if (it == med.end()) {
        std::printf(" - |");
        continue;
      }
      std::printf(" %.0f |", it->second);
      if (best.empty() || it->second < best_ticks) {
        best = p;
        best_ticks = it->second;
      }
    }
    std::printf(" %s | %.2f |\n", best.c_str(), ours / best_ticks);
  }
  std::printf(
      "\nML-KEM and ML-DSA keygen, encaps, decaps, sign (deterministic, rnd = 0) and verify: the "
      "same inputs in every implementation. ML-DSA sign hedged: each implementation's fresh rnd "
      "(pqcd OsRandom, liboqs OQS_SIG_sign); the rejection-loop counts differ between calls.\n");
  return 0;
}
