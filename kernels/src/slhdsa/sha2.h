// SHA-256 and SHA-512 (FIPS 180-4) for SLH-DSA's SHA2 parameter sets, written so that a hash can
// start from a saved chaining value: every F, H, T_l and PRF call begins with the same block
// PK.seed || 0^(64-n) (resp. 0^(128-n)), whose compression FIPS 205 §11.2 lets the signer do once.
// OpenSSL's one-shot digests (hash.h) cannot resume from a chaining value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pqcd/kernels/common.h"
#include "slhdsa/backend.h"

namespace pqcd::kernels::slhdsa {

inline constexpr uint32_t kSha256Iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
// The round constants K (FIPS 180-4 §4.2.2), shared by the portable code and the SIMD backends.
inline constexpr uint32_t kSha256K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
inline constexpr uint64_t kSha512Iv[8] = {
    0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
    0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179};

inline constexpr uint64_t kSha512K[80] = {
    0x428a2f98d728ae22, 0x7137449123ef65cd, 0xb5c0fbcfec4d3b2f, 0xe9b5dba58189dbbc,
    0x3956c25bf348b538, 0x59f111f1b605d019, 0x923f82a4af194f9b, 0xab1c5ed5da6d8118,
    0xd807aa98a3030242, 0x12835b0145706fbe, 0x243185be4ee4b28c, 0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f, 0x80deb1fe3b1696b1, 0x9bdc06a725c71235, 0xc19bf174cf692694,
    0xe49b69c19ef14ad2, 0xefbe4786384f25e3, 0x0fc19dc68b8cd5b5, 0x240ca1cc77ac9c65,
    0x2de92c6f592b0275, 0x4a7484aa6ea6e483, 0x5cb0a9dcbd41fbd4, 0x76f988da831153b5,
    0x983e5152ee66dfab, 0xa831c66d2db43210, 0xb00327c898fb213f, 0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2, 0xd5a79147930aa725, 0x06ca6351e003826f, 0x142929670a0e6e70,
    0x27b70a8546d22ffc, 0x2e1b21385c26c926, 0x4d2c6dfc5ac42aed, 0x53380d139d95b3df,
    0x650a73548baf63de, 0x766a0abb3c77b2a8, 0x81c2c92e47edaee6, 0x92722c851482353b,
    0xa2bfe8a14cf10364, 0xa81a664bbc423001, 0xc24b8b70d0f89791, 0xc76c51a30654be30,
    0xd192e819d6ef5218, 0xd69906245565a910, 0xf40e35855771202a, 0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8, 0x1e376c085141ab53, 0x2748774cdf8eeb99, 0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63, 0x4ed8aa4ae3418acb, 0x5b9cca4f7763e373, 0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc, 0x78a5636f43172f60, 0x84c87814a1f0ab72, 0x8cc702081a6439ec,
    0x90befffa23631e28, 0xa4506cebde82bde9, 0xbef9a3f7b2c67915, 0xc67178f2e372532b,
    0xca273eceea26619c, 0xd186b8c721c0c207, 0xeada7dd6cde0eb1e, 0xf57d4f7fee6ed178,
    0x06f067aa72176fba, 0x0a637dc5a2c898a6, 0x113f9804bef90dae, 0x1b710b35131c471b,
    0x28db77f523047d84, 0x32caab7b40c72493, 0x3c9ebe0a15c9bebc, 0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6, 0x597f299cfc657e2a, 0x5fcb6fab3ad6faec, 0x6c44198c4a475817};

// One compression of a 64-byte (SHA-256) / 128-byte (SHA-512) block into the chaining value.
using Sha256CompressFn = void (*)(uint32_t h[8], const uint8_t block[64]);
void Sha256CompressPortable(uint32_t h[8], const uint8_t block[64]);
// With the x86 SHA extensions (SHA-NI); only where Sha256ShaNiSupported().
void Sha256CompressShaNi(uint32_t h[8], const uint8_t block[64]);
bool Sha256ShaNiSupported();
// How the one-block SHA-256 calls of the SHA2 sets run: one at a time on the portable code or on
// the SHA extensions, or several at once on the backend's SHA-256 lanes (slhdsa/backend.h).
// SHA-2's big-endian words (a load or store and a byte swap).
inline uint32_t LoadBe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline void StoreBe32(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline uint64_t LoadBe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void StoreBe64(uint8_t* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}

// FIPS 180-4 padding (§5.1) of a message resumed after PK.seed's block of `chain_block` bytes
// (64 or 128): b holds the msg_len bytes that follow that block in `size` bytes (whole blocks),
// and the rest becomes 0x80, zeros and the bit length of the whole message, PK.seed's block
// included. The 64-bit length field serves SHA-512's 128-bit one too (its high half is zero).
inline void PadAfterChain(uint8_t* b, size_t size, size_t chain_block, size_t msg_len) {
  std::memset(b + msg_len, 0, size - msg_len);
  b[msg_len] = 0x80;
  StoreBe64(b + size - 8, (chain_block + msg_len) * 8);
}

// The block that PRF(PK.seed, SK.seed, ADRS) compresses after PK.seed's (FIPS 205 §11.2.1) for
// chain i of a sha256_chains call: ADRSc || SK.seed || padding. Secret: the caller wipes it.
inline void LayOutPrfBlock(uint8_t blk[64], const Sha256ChainsArgs& a, size_t i) {
  std::memcpy(blk, a.prf_adrsc + i * kAdrscBytes, kAdrscBytes);
  std::memcpy(blk + kAdrscBytes, a.sk_seed, a.n);
  PadAfterChain(blk, 64, 64, kAdrscBytes + a.n);
}

enum class Sha256Path : uint8_t { kAuto, kPortable, kShaNi, kLanes };
// The path for the active backend: portable on the portable backend (PQCD_ISA=portable keeps
// every kernel portable); the backend's lanes where it has sixteen (AVX-512) or F chains of its
// own (sha256_chains: AVX2, whose eight lanes then beat one SHA-NI stream); else SHA-NI where the
// CPU has it (one compression in about as few cycles as eight AVX2 lanes take per laid-out block,
// bench/RESULTS.md), else the backend's lanes.
Sha256Path ChosenSha256Path();
// Tests and benchmarks: force a path (kShaNi only where supported); kAuto restores the choice.
void SetSha256PathForTesting(Sha256Path path);
// The single-block compression of the chosen path: SHA-NI where the path is SHA-NI, or lanes on
// a CPU with SHA-NI; else portable. Callers that compress many blocks take it once.
Sha256CompressFn ActiveSha256Compress();
inline void Sha256Compress(uint32_t h[8], const uint8_t block[64]) {
  ActiveSha256Compress()(h, block);
}
void Sha512Compress(uint64_t h[8], const uint8_t block[128]);
// Sha512Compress is OpenSSL's block function, whose assembly keeps the message schedule in its own
// stack frame and leaves it there. After hashing secret data (PRF_msg's HMAC key block) the caller
// overwrites that stack region with this (noinline: its frame lies where the callee frames were).
void WipeStackBelow();

// Incremental SHA-256: from the IV, or from a chaining value after `blocks` whole blocks.
class Sha256 {
 public:
  Sha256();
  Sha256(const uint32_t chain[8], uint64_t blocks);
  ~Sha256();
  void Update(Bytes in);
  // Writes the first out_len (<= 32) bytes of the digest.
  void Final(uint8_t* out, size_t out_len);

 private:
  Sha256CompressFn compress_ = ActiveSha256Compress();
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t fill_ = 0;
  uint64_t total_ = 0;  // bytes hashed, including resumed blocks
};

class Sha512 {
 public:
  Sha512();
  Sha512(const uint64_t chain[8], uint64_t blocks);
  ~Sha512();
  void Update(Bytes in);
  // Writes the first out_len (<= 64) bytes of the digest.
  void Final(uint8_t* out, size_t out_len);

 private:
  uint64_t h_[8];
  uint8_t buf_[128];
  size_t fill_ = 0;
  uint64_t total_ = 0;
};

}  // namespace pqcd::kernels::slhdsa
