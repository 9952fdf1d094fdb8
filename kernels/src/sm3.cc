// SM3 (GB/T 32905-2016): Merkle-Damgard over a 64-byte-block compression function.
#include "pqcd/kernels/sm3.h"

#include <cstring>

namespace pqcd::kernels {
namespace {

constexpr uint32_t kIv[8] = {0x7380166f, 0x4914b2b9, 0x172442d7, 0xda8a0600,
                             0xa96f30bc, 0x163138aa, 0xe38dee4d, 0xb0fb0e4e};

inline uint32_t Rotl(uint32_t x, int n) {
  return (x << (n & 31)) | (x >> ((32 - n) & 31));
}
inline uint32_t P0(uint32_t x) {
  return x ^ Rotl(x, 9) ^ Rotl(x, 17);
}
inline uint32_t P1(uint32_t x) {
  return x ^ Rotl(x, 15) ^ Rotl(x, 23);
}
inline uint32_t LoadBe32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline void StoreBe32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// T_j rotated left by j mod 32, precomputed (T_j = 0x79cc4519 for j < 16, 0x7a879d8a after).
struct RotatedConstants {
  uint32_t t[64];
  constexpr RotatedConstants() : t() {
    for (int j = 0; j < 64; ++j) {
      const uint32_t base = j < 16 ? 0x79cc4519u : 0x7a879d8au;
      const int r = j % 32;
      t[j] = r == 0 ? base : (base << r) | (base >> (32 - r));
    }
  }
};
constexpr RotatedConstants kT;

}  // namespace

void Sm3CompressPortable(uint32_t v[8], const uint8_t* blocks, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, blocks += 64) {
    // Message expansion (§5.3.2).
    uint32_t w[68];
    for (int j = 0; j < 16; ++j) w[j] = LoadBe32(blocks + 4 * j);
    for (int j = 16; j < 68; ++j) {
      w[j] = P1(w[j - 16] ^ w[j - 9] ^ Rotl(w[j - 3], 15)) ^ Rotl(w[j - 13], 7) ^ w[j - 6];
    }
    uint32_t a = v[0], bb = v[1], c = v[2], d = v[3], e = v[4], f = v[5], g = v[6], h = v[7];
    // Compression (§5.3.3); rounds 0-15 use XOR for FF/GG, 16-63 majority/choice.
    for (int j = 0; j < 64; ++j) {
      const uint32_t a12 = Rotl(a, 12);
      const uint32_t ss1 = Rotl(a12 + e + kT.t[j], 7);
      const uint32_t ss2 = ss1 ^ a12;
      const uint32_t ff = j < 16 ? (a ^ bb ^ c) : ((a & bb) | (a & c) | (bb & c));
      const uint32_t gg = j < 16 ? (e ^ f ^ g) : ((e & f) | (~e & g));
      const uint32_t tt1 = ff + d + ss2 + (w[j] ^ w[j + 4]);
      const uint32_t tt2 = gg + h + ss1 + w[j];
      d = c;
      c = Rotl(bb, 9);
      bb = a;
      a = tt1;
      h = g;
      g = Rotl(f, 19);
      f = e;
      e = P0(tt2);
    }
    v[0] ^= a, v[1] ^= bb, v[2] ^= c, v[3] ^= d, v[4] ^= e, v[5] ^= f, v[6] ^= g, v[7] ^= h;
  }
}

void Sm3::Reset() {
  std::memcpy(v_, kIv, sizeof(v_));
  total_bytes_ = 0;
  used_ = 0;
}

void Sm3::Update(Bytes in) {
  // Empty input: nothing to do. It also keeps a null in.data() (an empty view of nothing) away from
  // memcpy, whose pointer arguments must be valid even for a zero length (C11 7.24.1p2; UBSan's
  // nonnull-attribute check).
  if (in.empty()) return;
  const uint8_t* p = in.data();
  size_t n = in.size();
  total_bytes_ += n;
  if (used_ != 0) {
    const size_t take = std::min(n, kBlockBytes - used_);
    std::memcpy(block_ + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
    if (used_ < kBlockBytes) return;
    Sm3CompressPortable(v_, block_, 1);
    used_ = 0;
  }
  const size_t whole = n / kBlockBytes;
  if (whole != 0) Sm3CompressPortable(v_, p, whole);
  p += whole * kBlockBytes;
  n -= whole * kBlockBytes;
  std::memcpy(block_, p, n);
  used_ = n;
}

void Sm3::Final(std::span<uint8_t, kDigestBytes> out) {
  // Padding (§5.2): 0x80, zeros, 64-bit big-endian bit length.
  const uint64_t bits = total_bytes_ * 8;
  block_[used_++] = 0x80;
  if (used_ > kBlockBytes - 8) {
    std::memset(block_ + used_, 0, kBlockBytes - used_);
    Sm3CompressPortable(v_, block_, 1);
    used_ = 0;
  }
  std::memset(block_ + used_, 0, kBlockBytes - 8 - used_);
  StoreBe32(block_ + 56, static_cast<uint32_t>(bits >> 32));
  StoreBe32(block_ + 60, static_cast<uint32_t>(bits));
  Sm3CompressPortable(v_, block_, 1);
  for (int i = 0; i < 8; ++i) StoreBe32(out.data() + 4 * i, v_[i]);
  Reset();
}

void Sm3Digest(Bytes in, std::span<uint8_t, Sm3::kDigestBytes> out) {
  Sm3 h;
  h.Update(in);
  h.Final(out);
}

}  // namespace pqcd::kernels
