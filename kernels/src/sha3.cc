// FIPS 202 sponge construction over Keccak-f[1600].
#include "pqcd/kernels/sha3.h"

#include <cstring>

namespace pqcd::kernels {
namespace {

// Round constants RC[i] of FIPS 202 §3.2.5 (ι step).
constexpr uint64_t kRoundConstants[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL, 0x8000000080008000ULL,
    0x000000000000808bULL, 0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL,
    0x000000000000008aULL, 0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL, 0x8000000000008003ULL,
    0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800aULL, 0x800000008000000aULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL};

inline uint64_t Rotl(uint64_t x, int n) {
  return (x << n) | (x >> ((64 - n) & 63));
}

}  // namespace

// One round is θ, ρ, π, χ, ι (FIPS 202 Alg. 7). ρ and π are fused: lane (x,y) moves to
// (y, 2x+3y) rotated by its ρ offset; the 25 lanes are kept in locals so the compiler can keep
// them in registers.
void KeccakF1600Portable(uint64_t s[kKeccakLanes]) {
  uint64_t a00 = s[0], a01 = s[1], a02 = s[2], a03 = s[3], a04 = s[4];
  uint64_t a05 = s[5], a06 = s[6], a07 = s[7], a08 = s[8], a09 = s[9];
  uint64_t a10 = s[10], a11 = s[11], a12 = s[12], a13 = s[13], a14 = s[14];
  uint64_t a15 = s[15], a16 = s[16], a17 = s[17], a18 = s[18], a19 = s[19];
  uint64_t a20 = s[20], a21 = s[21], a22 = s[22], a23 = s[23], a24 = s[24];
  for (int round = 0; round < 24; ++round) {
    // θ
    const uint64_t c0 = a00 ^ a05 ^ a10 ^ a15 ^ a20;
    const uint64_t c1 = a01 ^ a06 ^ a11 ^ a16 ^ a21;
    const uint64_t c2 = a02 ^ a07 ^ a12 ^ a17 ^ a22;
    const uint64_t c3 = a03 ^ a08 ^ a13 ^ a18 ^ a23;
    const uint64_t c4 = a04 ^ a09 ^ a14 ^ a19 ^ a24;
    const uint64_t d0 = c4 ^ Rotl(c1, 1);
    const uint64_t d1 = c0 ^ Rotl(c2, 1);
    const uint64_t d2 = c1 ^ Rotl(c3, 1);
    const uint64_t d3 = c2 ^ Rotl(c4, 1);
    const uint64_t d4 = c3 ^ Rotl(c0, 1);
    // ρ and π: b[y][2x+3y] = rot(a[x][y] ^ d[x], r[x][y]). bXY names the destination lane x + 5y.
    const uint64_t b00 = a00 ^ d0;
    const uint64_t b01 = Rotl(a06 ^ d1, 44);
    const uint64_t b02 = Rotl(a12 ^ d2, 43);
    const uint64_t b03 = Rotl(a18 ^ d3, 21);
    const uint64_t b04 = Rotl(a24 ^ d4, 14);
    const uint64_t b05 = Rotl(a03 ^ d3, 28);
    const uint64_t b06 = Rotl(a09 ^ d4, 20);
    const uint64_t b07 = Rotl(a10 ^ d0, 3);
    const uint64_t b08 = Rotl(a16 ^ d1, 45);
    const uint64_t b09 = Rotl(a22 ^ d2, 61);
    const uint64_t b10 = Rotl(a01 ^ d1, 1);
    const uint64_t b11 = Rotl(a07 ^ d2, 6);
    const uint64_t b12 = Rotl(a13 ^ d3, 25);
    const uint64_t b13 = Rotl(a19 ^ d4, 8);
    const uint64_t b14 = Rotl(a20 ^ d0, 18);
    const uint64_t b15 = Rotl(a04 ^ d4, 27);
    const uint64_t b16 = Rotl(a05 ^ d0, 36);
    const uint64_t b17 = Rotl(a11 ^ d1, 10);
    const uint64_t b18 = Rotl(a17 ^ d2, 15);
    const uint64_t b19 = Rotl(a23 ^ d3, 56);
    const uint64_t b20 = Rotl(a02 ^ d2, 62);
    const uint64_t b21 = Rotl(a08 ^ d3, 55);
    const uint64_t b22 = Rotl(a14 ^ d4, 39);
    const uint64_t b23 = Rotl(a15 ^ d0, 41);
    const uint64_t b24 = Rotl(a21 ^ d1, 2);
    // χ and ι
    a00 = b00 ^ (~b01 & b02) ^ kRoundConstants[round];
    a01 = b01 ^ (~b02 & b03);
    a02 = b02 ^ (~b03 & b04);
    a03 = b03 ^ (~b04 & b00);
    a04 = b04 ^ (~b00 & b01);
    a05 = b05 ^ (~b06 & b07);
    a06 = b06 ^ (~b07 & b08);
    a07 = b07 ^ (~b08 & b09);
    a08 = b08 ^ (~b09 & b05);
    a09 = b09 ^ (~b05 & b06);
    a10 = b10 ^ (~b11 & b12);
    a11 = b11 ^ (~b12 & b13);
    a12 = b12 ^ (~b13 & b14);
    a13 = b13 ^ (~b14 & b10);
    a14 = b14 ^ (~b10 & b11);
    a15 = b15 ^ (~b16 & b17);
    a16 = b16 ^ (~b17 & b18);
    a17 = b17 ^ (~b18 & b19);
    a18 = b18 ^ (~b19 & b15);
    a19 = b19 ^ (~b15 & b16);
    a20 = b20 ^ (~b21 & b22);
    a21 = b21 ^ (~b22 & b23);
    a22 = b22 ^ (~b23 & b24);
    a23 = b23 ^ (~b24 & b20);
    a24 = b24 ^ (~b20 & b21);
  }
  s[0] = a00, s[1] = a01, s[2] = a02, s[3] = a03, s[4] = a04;
  s[5] = a05, s[6] = a06, s[7] = a07, s[8] = a08, s[9] = a09;
  s[10] = a10, s[11] = a11, s[12] = a12, s[13] = a13, s[14] = a14;
  s[15] = a15, s[16] = a16, s[17] = a17, s[18] = a18, s[19] = a19;
  s[20] = a20, s[21] = a21, s[22] = a22, s[23] = a23, s[24] = a24;
}

void KeccakF1600(uint64_t state[kKeccakLanes]) {
  KeccakF1600Portable(state);
}

KeccakSponge::KeccakSponge(size_t rate_bytes, uint8_t suffix)
    : rate_(static_cast<uint16_t>(rate_bytes)), pos_(0), suffix_(suffix), squeezing_(false) {
  std::memset(state_, 0, sizeof(state_));
}

KeccakSponge::~KeccakSponge() {
  SecureZero(state_, sizeof(state_));
}

void KeccakSponge::Reset() {
  SecureZero(state_, sizeof(state_));
  pos_ = 0;
  squeezing_ = false;
}

void KeccakSponge::Absorb(Bytes in) {
  auto* bytes = reinterpret_cast<uint8_t*>(state_);
  const uint8_t* p = in.data();
  size_t n = in.size();
  // Fill a partial block byte by byte.
  while (n > 0 && pos_ != 0) {
    bytes[pos_++] ^= *p++;
    --n;
    if (pos_ == rate_) {
      KeccakF1600(state_);
      pos_ = 0;
    }
  }
  // All input went into the partial block: keep pos_ (the tail code below assumes pos_ == 0).
  if (n == 0) return;
  // Whole blocks, a lane at a time.
  while (n >= rate_) {
    for (size_t i = 0; i < rate_ / 8u; ++i) {
      uint64_t lane;
      std::memcpy(&lane, p + 8 * i, 8);
      state_[i] ^= lane;
    }
    KeccakF1600(state_);
    p += rate_;
    n -= rate_;
  }
  for (size_t i = 0; i < n; ++i) bytes[i] ^= p[i];
  pos_ = static_cast<uint16_t>(n);
}

void KeccakSponge::Finalize() {
  if (squeezing_) return;
  auto* bytes = reinterpret_cast<uint8_t*>(state_);
  bytes[pos_] ^= suffix_;
  bytes[rate_ - 1] ^= 0x80;
  KeccakF1600(state_);
  pos_ = 0;
  squeezing_ = true;
}

void KeccakSponge::Squeeze(MutBytes out) {
  Finalize();
  const auto* bytes = reinterpret_cast<const uint8_t*>(state_);
  uint8_t* o = out.data();
  size_t n = out.size();
  while (n > 0) {
    if (pos_ == rate_) {
      KeccakF1600(state_);
      pos_ = 0;
    }
    const size_t take = std::min<size_t>(n, rate_ - pos_);
    std::memcpy(o, bytes + pos_, take);
    pos_ = static_cast<uint16_t>(pos_ + take);
    o += take;
    n -= take;
  }
}

void KeccakSponge::SqueezeBlocks(uint8_t* out, size_t nblocks) {
  Finalize();
  for (size_t b = 0; b < nblocks; ++b) {
    if (pos_ == rate_) KeccakF1600(state_);
    std::memcpy(out + b * rate_, state_, rate_);
    pos_ = rate_;
  }
}

void Sha3_224Digest(Bytes in, std::span<uint8_t, 28> out) {
  Sha3_224 h;
  h.Absorb(in);
  h.Final(out);
}
void Sha3_256Digest(Bytes in, std::span<uint8_t, 32> out) {
  Sha3_256 h;
  h.Absorb(in);
  h.Final(out);
}
void Sha3_384Digest(Bytes in, std::span<uint8_t, 48> out) {
  Sha3_384 h;
  h.Absorb(in);
  h.Final(out);
}
void Sha3_512Digest(Bytes in, std::span<uint8_t, 64> out) {
  Sha3_512 h;
  h.Absorb(in);
  h.Final(out);
}
void Shake128Digest(Bytes in, MutBytes out) {
  Shake128 h;
  h.Absorb(in);
  h.Squeeze(out);
}
void Shake256Digest(Bytes in, MutBytes out) {
  Shake256 h;
  h.Absorb(in);
  h.Squeeze(out);
}

}  // namespace pqcd::kernels
