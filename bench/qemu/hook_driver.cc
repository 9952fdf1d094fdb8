// Runs one kernel hook `count` times from the portable or the NEON table, for instruction counts
// under qemu-aarch64 with insn_count.c (bench/qemu/count_insns.sh). Usage:
//   hook_driver portable|neon|neon_x2|neon_sha3 OP COUNT
//   OP: keccak_x1 keccak_x4 mlkem_ntt mlkem_invntt mlkem_basemul3 mlkem_cbd2 mlkem_compress10
//   mlkem_reject mldsa_ntt mldsa_invntt mldsa_pwacc4 mldsa_decompose, or a whole operation through
//   the active backend (PQCD_ISA=portable|neon chooses it): mlkem768_keygen mlkem768_encaps
//   mlkem768_decaps mldsa65_sign mldsa65_verify.
// Keccak tables: portable; neon = the NEON row's (keccak::kNeonAuto: the SHA-3 kernels when the
// CPU, i.e. qemu's -cpu, reports HWCAP_SHA3, else scalar); neon_x2 = the plain-NEON x2 table
// (keccak::kNeon, in no row); neon_sha3 = keccak::kNeonSha3 (exits 5 without HWCAP_SHA3). The
// ML-KEM and ML-DSA tables are NEON's for all three neon* choices.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "arch/backends.h"
#include "keccak/backend.h"
#include "mldsa/backend.h"
#include "mlkem/backend.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"

using namespace pqcd::kernels;

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const bool neon_x2 = std::strcmp(argv[1], "neon_x2") == 0;
  const bool neon_sha3 = std::strcmp(argv[1], "neon_sha3") == 0;
  const Isa isa =
      std::strcmp(argv[1], "neon") == 0 || neon_x2 || neon_sha3 ? Isa::kNeon : Isa::kPortable;
  const char* op = argv[2];
  const int count = std::atoi(argv[3]);
  // Detection first: it also sets whether the NEON row's Keccak runs the SHA-3 kernels.
  if (!DetectedCpuFeatures().sha3 && neon_sha3) return 5;
  const keccak::Backend& kb = neon_x2     ? keccak::kNeon
                              : neon_sha3 ? keccak::kNeonSha3
                                          : keccak::BackendFor(isa);
  const mlkem::Backend& kem = mlkem::BackendFor(isa);
  const mldsa::Backend& dsa = mldsa::BackendFor(isa);
  static uint64_t st[25 * 4];
  static mlkem::Poly ka[4], kbp[4], kout;
  static mlkem::PolyMulCache kc[4];
  static mldsa::Poly da[8], db[8], dout, d1;
  static uint8_t buf[1024];
  for (int i = 0; i < 100; ++i) st[i] = i * 0x9e3779b97f4a7c15ULL;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 256; ++i) {
      ka[j].c[i] = static_cast<int16_t>((i * 17 + j) % 3329);
      kbp[j].c[i] = static_cast<int16_t>((i * 29 + j) % 3329);
    }
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 256; ++i) {
      da[j].coeffs[i] = (i * 7919 + j) % 8380417;
      db[j].coeffs[i] = (i * 104729 + j) % 8380417 - 4190208;
    }
  for (int i = 0; i < 1024; ++i) buf[i] = static_cast<uint8_t>(i * 31);
  // XOF-like bytes for the rejection sampler (about 81% of candidates accepted, as from SHAKE128).
  static uint8_t xof[3 * 168 + 8];
  static int16_t sampled[256];
  for (uint32_t i = 0, x = 1; i < sizeof(xof); ++i) {
    x = x * 1664525u + 1013904223u;
    xof[i] = static_cast<uint8_t>(x >> 24);
  }
  for (int j = 0; j < 4; ++j) kem.mulcache_compute(kc[j], kbp[j]);
  // Whole operations: keys, a ciphertext and a signature made once, before the counted calls.
  static uint8_t seed[64], ek[MlKem768::kEncapsKeyBytes], dk[MlKem768::kDecapsKeyBytes],
      ct[MlKem768::kCiphertextBytes], ss[32], m[32], pk[MlDsa65::kPublicKeyBytes],
      sk[MlDsa65::kPrivateKeyBytes], sig[MlDsa65::kSignatureBytes];
  const uint8_t msg[64] = {1, 2, 3};
  DsaSignOptions sign_options;
  sign_options.deterministic = true;
  const DsaMessageOptions verify_options;
  if (!std::strncmp(op, "mlkem768_", 9) || !std::strncmp(op, "mldsa65_", 8)) {
    if (!MlKem768::KeyGenFromSeed(seed, ek, dk).ok() ||
        !MlKem768::EncapsDerand(ek, m, ct, ss).ok() ||
        !MlDsa65::KeyGenFromSeed(Bytes(seed, 32), pk, sk).ok() ||
        !MlDsa65::Sign(sk, msg, sign_options, sig, OsRandom()).ok()) {
      return 4;
    }
  }
  for (int n = 0; n < count; ++n) {
    if (!std::strcmp(op, "keccak_x4"))
      kb.f1600x4(st, 4, 0xf);
    else if (!std::strcmp(op, "keccak_x1"))
      kb.f1600(st);
    else if (!std::strcmp(op, "mlkem_reject"))
      sampled[0] = static_cast<int16_t>(sampled[0] + kem.reject_uniform(sampled, 256, xof, 504));
    else if (!std::strcmp(op, "mlkem_ntt"))
      kem.ntt(ka[0]);
    else if (!std::strcmp(op, "mlkem_invntt"))
      kem.invntt_times_r(ka[0]);
    else if (!std::strcmp(op, "mlkem_basemul3"))
      kem.basemul_acc(kout, ka, kbp, kc, 3);
    else if (!std::strcmp(op, "mlkem_cbd2"))
      kem.cbd(2, kout, buf);
    else if (!std::strcmp(op, "mlkem_compress10"))
      kem.compress_encode(10, buf + 512, ka[1]);
    else if (!std::strcmp(op, "mldsa_ntt"))
      dsa.ntt(da[n & 7]);  // 8 inputs, each |a| < q first
    else if (!std::strcmp(op, "mldsa_invntt"))
      dsa.invntt_to_mont(da[1]);
    else if (!std::strcmp(op, "mldsa_pwacc4"))
      dsa.pointwise_acc_montgomery(dout, da, db, 4);
    else if (!std::strcmp(op, "mldsa_decompose"))
      dsa.decompose_large(dout, d1, da[2]);
    else if (!std::strcmp(op, "mlkem768_keygen"))
      (void)MlKem768::KeyGenFromSeed(seed, ek, dk);
    else if (!std::strcmp(op, "mlkem768_encaps"))
      (void)MlKem768::EncapsDerand(ek, m, ct, ss);
    else if (!std::strcmp(op, "mlkem768_decaps"))
      (void)MlKem768::Decaps(dk, ct, ss);
    else if (!std::strcmp(op, "mldsa65_sign"))
      (void)MlDsa65::Sign(sk, msg, sign_options, sig, OsRandom());
    else if (!std::strcmp(op, "mldsa65_verify"))
      (void)MlDsa65::Verify(pk, msg, sig, verify_options);
    else
      return 3;
    // Keep the inputs bounded for the next iteration.
  }
  std::printf("%d\n", static_cast<int>(st[0] & 1) + kout.c[0] + dout.coeffs[0] + sampled[0]);
  return 0;
}
