// FIPS 202 sponge construction over Keccak-f[1600].
#include "pqcd/kernels/sha3.h"

#include <cstring>

#include "keccak/constants.h"

namespace pqcd::kernels {
#define PQCD_KECCAK_F1600_NAME KeccakF1600Portable
#include "keccak/keccak_f1600_body.inc"
#undef PQCD_KECCAK_F1600_NAME

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
