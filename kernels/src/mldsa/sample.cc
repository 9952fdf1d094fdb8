// ML-DSA samplers (FIPS 204 §7.3) on 4-lane Keccak (KeccakMulti<4>).
#include "mldsa/sample.h"

#include <cstring>

#include "keccak/keccak_multi.h"
#include "mldsa/avx2/mldsa_avx2.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels::mldsa {
namespace {

// Accepts 23-bit candidates below q from 3-byte groups (Alg. 30 with CoeffFromThreeBytes, Alg. 14).
inline int RejectUniform(int32_t* a, int count, const uint8_t* buf, size_t len) {
  for (size_t pos = 0; pos + 3 <= len && count < kN; pos += 3) {
    const uint32_t t = static_cast<uint32_t>(buf[pos]) | static_cast<uint32_t>(buf[pos + 1]) << 8 |
                       static_cast<uint32_t>(buf[pos + 2] & 0x7f) << 16;
    if (t < static_cast<uint32_t>(kQ)) a[count++] = static_cast<int32_t>(t);
  }
  return count;
}

// CoeffFromHalfByte (Alg. 15) without secret branches: returns the coefficient and sets accept.
template <int Eta>
inline int32_t CoeffFromHalfByte(uint32_t b, uint32_t& accept) {
  if constexpr (Eta == 2) {
    accept = static_cast<uint32_t>(static_cast<int32_t>(b) - 15) >> 31;  // b < 15
    // b mod 5 for b < 16: floor(b * 205 / 1024) = floor(b / 5) (error b / 5120 < 1/5).
    const uint32_t mod5 = b - 5 * ((b * 205) >> 10);
    return 2 - static_cast<int32_t>(mod5);
  } else {
    static_assert(Eta == 4);
    accept = static_cast<uint32_t>(static_cast<int32_t>(b) - 9) >> 31;  // b < 9
    return 4 - static_cast<int32_t>(b);
  }
}

// The accept bits of a whole chunk are computed first (branch-free) and declassified with one
// CtPublic() call: the accept pattern is independent of the accepted values.
template <int Eta>
int RejectEtaPortable(int32_t* a, int count, const uint8_t* buf, size_t len) {
  constexpr size_t kChunkBytes = 256;
  uint64_t bits[2 * kChunkBytes / 64];
  size_t pos = 0;
  while (pos < len && count < kN) {
    const size_t chunk = len - pos < kChunkBytes ? len - pos : kChunkBytes;
    const uint8_t* p = buf + pos;
    const size_t words = (2 * chunk + 63) / 64;
    for (size_t w = 0; w < words; ++w) bits[w] = 0;
    for (size_t i = 0; i < chunk; ++i) {
      uint32_t accept0, accept1;
      CoeffFromHalfByte<Eta>(p[i] & 15u, accept0);
      CoeffFromHalfByte<Eta>(static_cast<uint32_t>(p[i]) >> 4, accept1);
      bits[i / 32] |= static_cast<uint64_t>(accept0 | accept1 << 1) << (2 * (i % 32));
    }
    CtPublic(bits, words * sizeof(bits[0]));
    for (size_t i = 0; i < 2 * chunk && count < kN; ++i) {
      const uint32_t byte = p[i / 2];
      uint32_t unused;
      const int32_t c = CoeffFromHalfByte<Eta>(i % 2 ? byte >> 4 : byte & 15u, unused);
      if ((bits[i / 64] >> (i % 64)) & 1) a[count++] = c;
    }
    pos += chunk;
  }
  return count;
}

// Lanes of 4 sponges at a time (KeccakMulti dispatches to AVX-512 / AVX2 / portable by itself);
// unused lanes of the last group get null pointers. Output is identical to one stream per lane.
constexpr size_t kLanes = 4;

// Sets up the 4 sponges of group g: seed || IntegerToBytes(nonce_i, 2) for the lanes in use.
template <size_t SeedBytes>
inline size_t AbsorbGroup(KeccakMulti<kLanes>& xof, const uint8_t* seed, const uint16_t* nonces,
                          size_t n, size_t g, uint8_t (&nonce_bytes)[kLanes][2]) {
  const size_t used = n - g < kLanes ? n - g : kLanes;
  const uint8_t* in[kLanes] = {};
  const uint8_t* tail[kLanes] = {};
  for (size_t j = 0; j < used; ++j) {
    nonce_bytes[j][0] = static_cast<uint8_t>(nonces[g + j]);
    nonce_bytes[j][1] = static_cast<uint8_t>(nonces[g + j] >> 8);
    in[j] = seed;
    tail[j] = nonce_bytes[j];
  }
  xof.Reset();
  xof.AbsorbOnce2(in, SeedBytes, tail, 2);
  return used;
}

}  // namespace

template <int Eta>
int RejectEta(int32_t* a, int count, const uint8_t* buf, size_t len) {
  if (ActiveIsa() != Isa::kPortable) {
    return Eta == 2 ? avx2::RejectEta2(a, count, buf, len) : avx2::RejectEta4(a, count, buf, len);
  }
  return RejectEtaPortable<Eta>(a, count, buf, len);
}

void SampleUniformPolys(Poly* const* out, const uint8_t rho[32], const uint16_t* nonces, size_t n) {
  constexpr size_t kRate = Shake128::kRateBytes;
  constexpr size_t kFirstBlocks = 5;  // 840 bytes: enough for 256 coefficients almost always
  alignas(64) uint8_t buf[kLanes][kFirstBlocks * kRate];
  const bool avx2 = ActiveIsa() != Isa::kPortable;
  auto reject = [avx2](int32_t* a, int count, const uint8_t* b, size_t len) {
    return avx2 ? avx2::RejectUniform(a, count, b, len) : RejectUniform(a, count, b, len);
  };
  KeccakMulti<kLanes> xof(kRate, 0x1f);
  uint8_t nonce_bytes[kLanes][2];
  for (size_t g = 0; g < n; g += kLanes) {
    const size_t used = AbsorbGroup<32>(xof, rho, nonces, n, g, nonce_bytes);
    uint8_t* outs[kLanes] = {};
    for (size_t j = 0; j < used; ++j) outs[j] = buf[j];
    xof.SqueezeBlocks(outs, kFirstBlocks);
    int count[kLanes] = {kN, kN, kN, kN};
    bool more = false;
    for (size_t j = 0; j < used; ++j) {
      count[j] = reject(out[g + j]->coeffs, 0, buf[j], kFirstBlocks * kRate);
      more |= count[j] < kN;
    }
    while (more) {
      for (size_t j = 0; j < kLanes; ++j) outs[j] = count[j] < kN ? buf[j] : nullptr;
      xof.SqueezeBlocks(outs, 1);
      more = false;
      for (size_t j = 0; j < used; ++j) {
        if (count[j] < kN) count[j] = reject(out[g + j]->coeffs, count[j], buf[j], kRate);
        more |= count[j] < kN;
      }
    }
  }
}

template <int Eta>
void SampleEtaPolys(Poly* const* out, const uint8_t rho_prime[64], const uint16_t* nonces,
                    size_t n) {
  constexpr size_t kRate = Shake256::kRateBytes;
  constexpr size_t kFirstBlocks = 2;
  alignas(64) uint8_t buf[kLanes][kFirstBlocks * kRate];
  ZeroOnExit wipe_buf(buf);
  const bool avx2 = ActiveIsa() != Isa::kPortable;
  auto reject = [avx2](int32_t* a, int count, const uint8_t* b, size_t len) {
    if (!avx2) return RejectEtaPortable<Eta>(a, count, b, len);
    return Eta == 2 ? avx2::RejectEta2(a, count, b, len) : avx2::RejectEta4(a, count, b, len);
  };
  KeccakMulti<kLanes> xof(kRate, 0x1f);
  uint8_t nonce_bytes[kLanes][2];
  for (size_t g = 0; g < n; g += kLanes) {
    const size_t used = AbsorbGroup<64>(xof, rho_prime, nonces, n, g, nonce_bytes);
    uint8_t* outs[kLanes] = {};
    for (size_t j = 0; j < used; ++j) outs[j] = buf[j];
    xof.SqueezeBlocks(outs, kFirstBlocks);
    int count[kLanes] = {kN, kN, kN, kN};
    bool more = false;
    for (size_t j = 0; j < used; ++j) {
      count[j] = reject(out[g + j]->coeffs, 0, buf[j], kFirstBlocks * kRate);
      more |= count[j] < kN;
    }
    while (more) {  // the number of extra blocks depends only on declassified accept patterns
      for (size_t j = 0; j < kLanes; ++j) outs[j] = count[j] < kN ? buf[j] : nullptr;
      xof.SqueezeBlocks(outs, 1);
      more = false;
      for (size_t j = 0; j < used; ++j) {
        if (count[j] < kN) count[j] = reject(out[g + j]->coeffs, count[j], buf[j], kRate);
        more |= count[j] < kN;
      }
    }
  }
}

template <int Gamma1Bits>
void SampleMaskPolys(Poly* const* out, const uint8_t rho_pp[64], const uint16_t* nonces, size_t n) {
  constexpr size_t kRate = Shake256::kRateBytes;
  constexpr size_t kBytes = 32 * (Gamma1Bits + 1);  // 576 or 640
  constexpr size_t kBlocks = (kBytes + kRate - 1) / kRate;
  alignas(64) uint8_t buf[kLanes][kBlocks * kRate];
  ZeroOnExit wipe_buf(buf);
  KeccakMulti<kLanes> xof(kRate, 0x1f);
  uint8_t nonce_bytes[kLanes][2];
  for (size_t g = 0; g < n; g += kLanes) {
    const size_t used = AbsorbGroup<64>(xof, rho_pp, nonces, n, g, nonce_bytes);
    uint8_t* outs[kLanes] = {};
    for (size_t j = 0; j < used; ++j) outs[j] = buf[j];
    xof.SqueezeBlocks(outs, kBlocks);
    for (size_t j = 0; j < used; ++j) UnpackZ<Gamma1Bits>(*out[g + j], buf[j]);
  }
}

void SampleInBall(Poly& c, const uint8_t* c_tilde, size_t c_tilde_len, int tau) {
  constexpr size_t kRate = Shake256::kRateBytes;
  alignas(64) uint8_t buf[kRate];
  Shake256 xof;
  xof.Absorb(Bytes(c_tilde, c_tilde_len));
  xof.Finalize();
  xof.SqueezeBlocks(buf, 1);
  uint64_t signs = 0;
  for (int i = 0; i < 8; ++i) signs |= static_cast<uint64_t>(buf[i]) << (8 * i);
  size_t pos = 8;
  std::memset(c.coeffs, 0, sizeof(c.coeffs));
  for (int i = kN - tau; i < kN; ++i) {
    int j;
    do {
      if (pos == kRate) {
        xof.SqueezeBlocks(buf, 1);
        pos = 0;
      }
      j = buf[pos++];
    } while (j > i);
    c.coeffs[i] = c.coeffs[j];
    c.coeffs[j] = 1 - 2 * static_cast<int32_t>(signs & 1);
    signs >>= 1;
  }
}

template int RejectEta<2>(int32_t*, int, const uint8_t*, size_t);
template int RejectEta<4>(int32_t*, int, const uint8_t*, size_t);
template void SampleEtaPolys<2>(Poly* const*, const uint8_t*, const uint16_t*, size_t);
template void SampleEtaPolys<4>(Poly* const*, const uint8_t*, const uint16_t*, size_t);
template void SampleMaskPolys<17>(Poly* const*, const uint8_t*, const uint16_t*, size_t);
template void SampleMaskPolys<19>(Poly* const*, const uint8_t*, const uint16_t*, size_t);

}  // namespace pqcd::kernels::mldsa
