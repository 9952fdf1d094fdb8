// Constant-time check, run under valgrind memcheck (see run_ct.sh) or MemorySanitizer.
//
// Every secret input (ML-KEM seeds d and z, the encapsulation randomness m, the secret parts of the
// decapsulation key; ML-DSA seeds, the secret parts of the private key, rnd) is marked undefined
// with CtSecret(). Memcheck then reports any conditional jump, memory index or syscall argument
// that depends on it. The kernels declassify (CtPublic) only what the algorithms reveal anyway: the
// public matrix seed rho, the ML-DSA rejection decision, and outputs that become public (public
// keys, ciphertexts, signatures). Shared secrets and private keys stay secret; this program marks
// them public itself only where it must look at them (it never branches on them before doing so).
//
// The same program runs under MemorySanitizer (a clang -fsanitize=memory build, where CtSecret and
// CtPublic poison and unpoison), which covers the AVX-512 backend that valgrind cannot execute.
//
// Exit status 0 with no report from valgrind (run with --error-exitcode) or MemorySanitizer is the
// pass condition. With --control=NAME the program instead leaks on purpose (see RunControl).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"
#include "pqcd/kernels/slhdsa.h"
#include "slhdsa/thash.h"

namespace k = pqcd::kernels;
namespace slh = pqcd::kernels::slhdsa;

namespace {

// Randomness that is secret by construction: every byte produced is poisoned.
class SecretRandom final : public k::RandomSource {
 public:
  absl::Status Generate(k::MutBytes out) override {
    absl::Status s = inner_.Generate(out);
    k::CtSecret(out.data(), out.size());
    return s;
  }

 private:
  k::SeededRandom inner_{uint64_t{42}};
};

int g_failures = 0;
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "ct_check: %s failed\n", what);
    ++g_failures;
  }
}

template <int K>
void RunKem() {
  using Kem = k::MlKem<K>;
  SecretRandom rng;
  std::vector<uint8_t> seed(64), ek(Kem::kEncapsKeyBytes), dk(Kem::kDecapsKeyBytes),
      ct(Kem::kCiphertextBytes), ss(32), ss2(32), m(32);
  k::SeededRandom(uint64_t{K}).Generate(seed).IgnoreError();
  k::CtSecret(seed.data(), seed.size());
  absl::Status s = Kem::KeyGenFromSeed(seed, ek, dk);
  Check(s.ok(), "ML-KEM keygen");
  k::CtPublic(ek.data(), ek.size());

  // Encaps with secret m (derandomized form) and with secret fresh randomness.
  k::SeededRandom(uint64_t{100 + K}).Generate(m).IgnoreError();
  k::CtSecret(m.data(), m.size());
  s = Kem::EncapsDerand(ek, m, ct, ss);
  Check(s.ok(), "ML-KEM encaps");
  k::CtPublic(ct.data(), ct.size());
  s = Kem::Encaps(ek, ct, ss, rng);
  Check(s.ok(), "ML-KEM encaps (rng)");
  k::CtPublic(ct.data(), ct.size());

  // Decaps with the expanded key: dk = dk_pke (secret) || ek || H(ek) || z (secret).
  k::CtSecret(dk.data(), 384 * K);
  k::CtSecret(dk.data() + dk.size() - 32, 32);
  s = Kem::Decaps(dk, ct, ss2);
  Check(s.ok(), "ML-KEM decaps");
  // A tampered ciphertext takes the implicit-rejection path in constant time too.
  ct[5] ^= 1;
  s = Kem::Decaps(dk, ct, ss2);
  Check(s.ok(), "ML-KEM decaps (tampered)");
  // The import check of an expanded key (the §7.3 hash check, the modulus check of its ek, and the
  // consistency of dk_PKE with ek), as the daemon runs it on every imported or stored key.
  s = Kem::CheckExpandedPrivateKey(dk);
  Check(s.ok(), "ML-KEM expanded-key check");
  // Decaps from the seed form.
  s = Kem::Decaps(seed, ct, ss2);
  Check(s.ok(), "ML-KEM decaps (seed)");
  // A held key's prepared form (the expanded key, checked when prepared), alone and in a batch
  // beside the seed form (the cross-request path).
  std::vector<uint8_t> ss3(32);
  k::KemDecapsItem prepared[2] = {{dk, ct, ss2, {}, true}, {seed, ct, ss3, {}, false}};
  Kem::DecapsBatch(std::span(prepared, 1));
  Check(prepared[0].status.ok(), "ML-KEM decaps (prepared)");
  Kem::DecapsBatch(prepared);
  Check(prepared[0].status.ok() && prepared[1].status.ok(), "ML-KEM decaps (prepared, batch)");
  // One expanded key given twice and its seed: one shared §7.3 hash, one shared Â^T.
  std::vector<uint8_t> ss4(32);
  k::KemDecapsItem same[3] = {
      {dk, ct, ss2, {}, false}, {dk, ct, ss3, {}, false}, {seed, ct, ss4, {}, false}};
  Kem::DecapsBatch(same);
  Check(same[0].status.ok() && same[1].status.ok() && same[2].status.ok(),
        "ML-KEM decaps (one key three times, batch)");
  std::printf("ct_check: %s done\n", std::string(Kem::kName).c_str());
}

// Messages signed per ML-DSA parameter set (each hedged and deterministic).
constexpr int kDsaMessages = 4;

template <int K, int L>
void RunDsa() {
  using Dsa = k::MlDsa<K, L>;
  SecretRandom rng;
  std::vector<uint8_t> seed(32), pk(Dsa::kPublicKeyBytes), sk(Dsa::kPrivateKeyBytes),
      sig(Dsa::kSignatureBytes);
  k::SeededRandom(uint64_t{K * 10 + L}).Generate(seed).IgnoreError();
  k::CtSecret(seed.data(), seed.size());
  absl::Status s = Dsa::KeyGenFromSeed(seed, pk, sk);
  Check(s.ok(), "ML-DSA keygen");
  k::CtPublic(pk.data(), pk.size());

  // sk = rho (public) || K (secret) || tr (public) || s1, s2, t0 (secret).
  k::CtPublic(sk.data(), sk.size());
  k::CtSecret(sk.data() + 32, 32);
  k::CtSecret(sk.data() + 128, sk.size() - 128);
  // The import check of an expanded key (t recomputed from s1 and s2, the encodings' ranges).
  s = Dsa::CheckExpandedPrivateKey(sk, pk);
  Check(s.ok(), "ML-DSA expanded-key check");
  // Several messages, hedged (rnd secret) and deterministic: every signature takes ~4-5 attempts
  // on average, so the rejected attempts (whose challenge c~ / c must stay secret: only their
  // reject verdicts are declassified) are exercised many times over.
  uint8_t msg[] = "constant-time check message #0";
  k::DsaSignOptions opts;
  for (int m = 0; m < kDsaMessages; ++m) {
    msg[sizeof(msg) - 2] = static_cast<uint8_t>('0' + m);
    opts.deterministic = false;
    s = Dsa::Sign(sk, k::Bytes(msg, sizeof(msg)), opts, sig, rng);  // hedged: rnd secret
    Check(s.ok(), "ML-DSA sign (hedged)");
    k::CtPublic(sig.data(), sig.size());
    opts.deterministic = true;
    s = Dsa::Sign(sk, k::Bytes(msg, sizeof(msg)), opts, sig, rng);
    Check(s.ok(), "ML-DSA sign (deterministic)");
    k::CtPublic(sig.data(), sig.size());
  }
  s = Dsa::Sign(seed, k::Bytes(msg, sizeof(msg)), opts, sig, rng);  // from the seed form
  Check(s.ok(), "ML-DSA sign (seed)");
  k::CtPublic(sig.data(), sig.size());
  // A held key's prepared form, made from the seed and from the expanded key (its complete
  // check), used in place as the daemon's page-aligned buffers are: hedged and deterministic.
  std::vector<uint8_t> raw(Dsa::kPreparedBytes + 64);
  uint8_t* aligned = raw.data() + (64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) % 64;
  const k::MutBytes prepared(aligned, Dsa::kPreparedBytes);
  s = Dsa::PreparePrivateKey(seed, prepared);
  Check(s.ok(), "ML-DSA prepare (seed)");
  s = Dsa::PreparePrivateKey(sk, prepared);
  Check(s.ok(), "ML-DSA prepare (expanded)");
  for (bool deterministic : {false, true}) {
    k::DsaSignItem item;
    item.sk = prepared;
    item.message = k::Bytes(msg, sizeof(msg));
    item.options.deterministic = deterministic;
    item.sig = sig;
    item.prepared = true;
    Dsa::SignBatch(std::span(&item, 1), rng);
    Check(item.status.ok(), "ML-DSA sign (prepared)");
    k::CtPublic(sig.data(), sig.size());
  }
  std::printf("ct_check: %s done\n", std::string(Dsa::kName).c_str());
}

// SLH-DSA: SK.seed and SK.prf are secret (FIPS 205 §9.1), PK.seed and PK.root public; opt_rand
// is secret when hedged. The kernel declassifies R (the signature's first n bytes) and each
// layer's signed message (PK_FORS, the XMSS roots), which a verifier recomputes.
template <class Slh>
void RunSlhDsa() {
  SecretRandom rng;
  std::vector<uint8_t> seed(Slh::kSeedBytes), pk(Slh::kPublicKeyBytes), sk(Slh::kPrivateKeyBytes),
      sig(Slh::kSignatureBytes);
  k::SeededRandom(uint64_t{Slh::kN}).Generate(seed).IgnoreError();
  k::CtSecret(seed.data(), 2 * Slh::kN);
  absl::Status s = Slh::KeyGenFromSeed(seed, pk, sk);
  Check(s.ok(), "SLH-DSA keygen");
  k::CtPublic(pk.data(), pk.size());
  // The import check of a private key (PK.root recomputed from SK.seed).
  s = Slh::CheckExpandedPrivateKey(sk, pk);
  Check(s.ok(), "SLH-DSA expanded-key check");
  uint8_t msg[] = "constant-time check message";
  k::DsaSignOptions opts;
  for (bool deterministic : {false, true}) {
    opts.deterministic = deterministic;
    s = Slh::Sign(sk, k::Bytes(msg, sizeof(msg)), opts, sig, rng);
    Check(s.ok(), "SLH-DSA sign");
    k::CtPublic(sig.data(), sig.size());
  }
  std::vector<uint8_t> prepared(Slh::kPreparedBytes);
  s = Slh::PreparePrivateKey(sk, prepared);
  Check(s.ok(), "SLH-DSA prepare");
  s = Slh::Sign(prepared, k::Bytes(msg, sizeof(msg)), opts, sig, rng, /*prepared=*/true);
  Check(s.ok(), "SLH-DSA sign (prepared)");
  k::CtPublic(sig.data(), sig.size());
  std::printf("ct_check: %s done\n", std::string(Slh::kName).c_str());
}

// The active backend's outputs for public inputs, beside the portable backend's: equal bytes. In
// the MemorySanitizer build this also shows that tests/ct/msan_intrinsics.h computes what the
// intrinsics it replaces compute.
using Outputs = std::vector<std::vector<uint8_t>>;
Outputs KnownOutputs() {
  Outputs out;
  k::SeededRandom rng(uint64_t{77});
  const uint8_t msg[] = "constant-time check, outputs beside portable";
  k::DsaSignOptions opts;
  opts.deterministic = true;
  {
    using Kem = k::MlKem<3>;
    std::vector<uint8_t> seed(64), m(32), ek(Kem::kEncapsKeyBytes), dk(Kem::kDecapsKeyBytes),
        ct(Kem::kCiphertextBytes), ss(32), ss2(32), rejected(32);
    k::SeededRandom(uint64_t{1}).Generate(seed).IgnoreError();
    k::SeededRandom(uint64_t{2}).Generate(m).IgnoreError();
    Check(Kem::KeyGenFromSeed(seed, ek, dk).ok(), "known-output keygen");
    Check(Kem::EncapsDerand(ek, m, ct, ss).ok(), "known-output encaps");
    Check(Kem::Decaps(dk, ct, ss2).ok(), "known-output decaps");
    ct[0] ^= 1;  // the implicit-rejection key
    Check(Kem::Decaps(dk, ct, rejected).ok(), "known-output decaps (tampered)");
    out.insert(out.end(), {ek, dk, ct, ss, ss2, rejected});
  }
  {
    using Dsa = k::MlDsa<6, 5>;
    std::vector<uint8_t> seed(32), pk(Dsa::kPublicKeyBytes), sk(Dsa::kPrivateKeyBytes),
        sig(Dsa::kSignatureBytes);
    k::SeededRandom(uint64_t{3}).Generate(seed).IgnoreError();
    Check(Dsa::KeyGenFromSeed(seed, pk, sk).ok(), "known-output keygen");
    Check(Dsa::Sign(sk, k::Bytes(msg, sizeof(msg)), opts, sig, rng).ok(), "known-output sign");
    out.insert(out.end(), {pk, sk, sig});
  }
  auto slh = [&]<class Slh>() {
    std::vector<uint8_t> seed(Slh::kSeedBytes), pk(Slh::kPublicKeyBytes), sk(Slh::kPrivateKeyBytes),
        sig(Slh::kSignatureBytes);
    k::SeededRandom(uint64_t{4}).Generate(seed).IgnoreError();
    Check(Slh::KeyGenFromSeed(seed, pk, sk).ok(), "known-output keygen");
    Check(Slh::Sign(sk, k::Bytes(msg, sizeof(msg)), opts, sig, rng).ok(), "known-output sign");
    out.insert(out.end(), {pk, sig});
  };
  slh.template operator()<k::SlhDsaShake128f>();
  slh.template operator()<k::SlhDsaSha2_128f>();
  slh.template operator()<k::SlhDsaSha2_192f>();
  return out;
}

void CheckSameAsPortable() {
  const k::Isa active = k::ActiveIsa();
  if (active == k::Isa::kPortable) return;
  const Outputs mine = KnownOutputs();
  Check(k::SetActiveIsa(k::Isa::kPortable).ok(), "switch to portable");
  const Outputs reference = KnownOutputs();
  Check(k::SetActiveIsa(active).ok(), "switch back");
  Check(mine == reference, "outputs beside the portable backend's");
  std::printf("ct_check: %zu outputs equal to the portable backend's: %s\n", mine.size(),
              mine == reference ? "yes" : "NO");
}

// The controls: one operation whose secret-dependent output is then used as a memory index, as a
// leaking kernel would. The checker must report it (the ctest controls pass only on its report),
// which shows that it is active and that secrets flow through the backend's kernels into their
// outputs: a kernel that lost its inputs' secrecy on the way would hide real leaks.
void UseAsIndex(const uint8_t* secret_byte, const char* what) {
  static const char* const kParity[2] = {"even", "odd"};
  std::printf("ct_check: control %s: a secret output's parity is %s (must be reported)\n", what,
              kParity[*secret_byte & 1]);
}

int RunControl(const std::string& name) {
  if (name == "mlkem") {  // the shared secret of a decapsulation: NTTs, basemul, Keccak
    using Kem = k::MlKem<3>;
    std::vector<uint8_t> seed(64), ek(Kem::kEncapsKeyBytes), dk(Kem::kDecapsKeyBytes),
        ct(Kem::kCiphertextBytes), ss(32), m(32);
    k::SeededRandom(uint64_t{7}).Generate(seed).IgnoreError();
    k::SeededRandom(uint64_t{8}).Generate(m).IgnoreError();
    Check(Kem::KeyGenFromSeed(seed, ek, dk).ok(), "control keygen");
    Check(Kem::EncapsDerand(ek, m, ct, ss).ok(), "control encaps");
    k::CtSecret(dk.data(), 384 * 3);
    Check(Kem::Decaps(dk, ct, ss).ok(), "control decaps");
    UseAsIndex(&ss[31], "ML-KEM-768 decaps");
  } else if (name == "mldsa") {  // the private key's t0 from a secret seed: NTTs, Power2Round
    using Dsa = k::MlDsa<6, 5>;
    std::vector<uint8_t> seed(32), pk(Dsa::kPublicKeyBytes), sk(Dsa::kPrivateKeyBytes);
    k::SeededRandom(uint64_t{9}).Generate(seed).IgnoreError();
    k::CtSecret(seed.data(), seed.size());
    Check(Dsa::KeyGenFromSeed(seed, pk, sk).ok(), "control keygen");
    UseAsIndex(&sk[sk.size() - 1], "ML-DSA-65 keygen (t0)");
  } else if (name == "slhdsa-shake" || name == "slhdsa-sha2") {
    // WOTS+ chains from their PRF start (FIPS 205 Alg. 5, 7) on a secret SK.seed, as signing runs
    // them: 16 chains of 15 steps on the multi-lane Keccak or the backend's SHA-256 chains kernel.
    // (Signatures and public keys are declassified by the kernel itself, so the chain outputs are
    // taken here before that.)
    const k::SlhDsaParams& p = name == "slhdsa-shake" ? k::kSlhDsaShake128f : k::kSlhDsaSha2_128f;
    uint8_t pk_seed[16], sk_seed[16];
    k::SeededRandom(uint64_t{10}).Generate(pk_seed).IgnoreError();
    k::SeededRandom(uint64_t{11}).Generate(sk_seed).IgnoreError();
    k::CtSecret(sk_seed, sizeof(sk_seed));
    const slh::Hashes hashes(p, pk_seed, sk_seed);
    constexpr size_t kChains = 16;
    slh::Adrs adrs[kChains], prf[kChains];
    uint32_t start[kChains], steps[kChains];
    uint8_t values[kChains][16];
    uint8_t* out[kChains];
    for (size_t i = 0; i < kChains; ++i) {
      adrs[i].SetTypeAndClear(slh::kWotsHash);
      adrs[i].SetKeyPair(1);
      adrs[i].SetChain(static_cast<uint32_t>(i));
      prf[i] = adrs[i];
      prf[i].SetTypeAndClear(slh::kWotsPrf);
      prf[i].SetKeyPair(1);
      prf[i].SetChain(static_cast<uint32_t>(i));
      start[i] = 0;
      steps[i] = 15;
      out[i] = values[i];
    }
    hashes.Chains(adrs, start, steps, prf, out, kChains);
    UseAsIndex(&values[kChains - 1][15], std::string(p.name).c_str());
  } else {
    std::fprintf(stderr, "ct_check: unknown control %s (mlkem, mldsa, slhdsa-shake, slhdsa-sha2)\n",
                 name.c_str());
    return 2;
  }
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

// usage: ct_check [BACKEND [--control=NAME]]. Exit 77 (a ctest skip) when BACKEND is not available
// on this CPU.
int main(int argc, char** argv) {
  if (argc > 1) {
    auto isa = k::ParseIsa(argv[1]);
    if (!isa.ok() || !k::SetActiveIsa(*isa).ok()) {
      std::printf("ct_check: backend %s not available here, skipped\n", argv[1]);
      return 77;
    }
  }
  std::printf("ct_check: backend %s\n", std::string(k::IsaName(k::ActiveIsa())).c_str());
  if (argc > 2) {
    const std::string arg = argv[2];
    if (arg.rfind("--control=", 0) != 0) {
      std::fprintf(stderr, "ct_check: unknown argument %s\n", argv[2]);
      return 2;
    }
    return RunControl(arg.substr(10));
  }
  CheckSameAsPortable();
  RunKem<2>();
  RunKem<3>();
  RunKem<4>();
  RunDsa<4, 4>();
  RunDsa<6, 5>();
  RunDsa<8, 7>();
  // One 'f' set per hash code path: SHAKE, SHA-256 only (n = 16), SHA-256 with SHA-512 (n = 24).
  RunSlhDsa<k::SlhDsaShake128f>();
  RunSlhDsa<k::SlhDsaSha2_128f>();
  RunSlhDsa<k::SlhDsaSha2_192f>();
  return g_failures == 0 ? 0 : 1;
}
