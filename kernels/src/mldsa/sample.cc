// ML-DSA samplers (FIPS 204 §7.3) on multi-lane Keccak (KeccakMulti<4>, <5> and <8>).
#include "mldsa/sample.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "keccak/backend.h"
#include "keccak/keccak_multi.h"
#include "mldsa/backend.h"
#include "pqcd/kernels/common.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels::mldsa {
namespace {

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

// Streams run in groups of W sponges (KeccakMulti<W> dispatches to AVX-512 / AVX2 / portable by
// itself); unused lanes of the last group get null pointers. Output is identical to one stream per
// lane. The widths follow what the Keccak backend permutes side by side:
//  * 8 lanes (AVX-512): groups of 8; a last group of 5-7 streams stays 8 wide, one of 1-4 is 4
//    wide. On the AVX-512 Xeon measured one x8 permutation (ZMM) costs ~1.5x an x4 (YMM) and
//    ~0.8x the x4 + x1 pair, so 8 wide wins from 5 streams up (bench/RESULTS.md, "AVX-512
//    kernels (issue 26)").
//  * otherwise: W = 4 fills the vector lanes; W = 5 adds a fifth state that AVX2 permutes on the
//    integer units beside them (~1.33x the cost of a 4-lane call), which beats a mostly empty
//    extra group.
constexpr size_t kMaxLanes = 8;

// How many of n streams go to 5-wide groups (the rest in 4-wide ones): n = 4k + 1 -> one (instead
// of a group of 1), n = 4k + 2 -> two (instead of a group of 2), else none.
inline size_t FiveWideStreams(size_t n) {
  if (n % 4 == 1 && n >= 5) return 5;
  if (n % 4 == 2 && n >= 10) return 10;
  return 0;
}

// Runs group(first, count, width tag) over n streams in the groups chosen above.
template <class Group>
inline void ForEachGroup(size_t n, Group&& group) {
  if (keccak::ActiveBackend().lanes >= 8) {
    size_t g = 0;
    for (; g < n && n - g >= 5; g += 8) {
      group(g, std::min<size_t>(8, n - g), std::integral_constant<size_t, 8>{});
    }
    if (g < n) group(g, n - g, std::integral_constant<size_t, 4>{});
    return;
  }
  const size_t five = FiveWideStreams(n);
  for (size_t g = 0; g < five; g += 5) group(g, size_t{5}, std::integral_constant<size_t, 5>{});
  for (size_t g = five; g < n; g += 4) {
    group(g, std::min<size_t>(4, n - g), std::integral_constant<size_t, 4>{});
  }
}

// Sets up the sponges of one group: seed || IntegerToBytes(nonce_i, 2) for the `used` lanes.
template <size_t SeedBytes, size_t W>
inline void AbsorbGroup(KeccakMulti<W>& xof, const uint8_t* seed, const uint16_t* nonces,
                        size_t used, uint8_t (&nonce_bytes)[kMaxLanes][2]) {
  const uint8_t* in[W] = {};
  const uint8_t* tail[W] = {};
  for (size_t j = 0; j < used; ++j) {
    nonce_bytes[j][0] = static_cast<uint8_t>(nonces[j]);
    nonce_bytes[j][1] = static_cast<uint8_t>(nonces[j] >> 8);
    in[j] = seed;
    tail[j] = nonce_bytes[j];
  }
  xof.AbsorbOnce2(in, SeedBytes, tail, 2);
}

// Rejection sampling of `used` polynomials in one group: kFirstBlocks blocks per lane, then one
// more block at a time for the lanes that still lack coefficients (which lanes need more depends
// only on public or declassified accept patterns).
// buf: kMaxLanes rows of first_blocks * rate bytes.
// rider: see SampleUniformPolys; attached to 4-wide groups only (AVX2 fuses a rider with x4).
template <size_t W, size_t SeedBytes, class Reject>
void RejectionGroup(Poly* const* out, const uint8_t* seed, const uint16_t* nonces, size_t used,
                    size_t rate, size_t first_blocks, uint8_t* buf, Reject&& reject,
                    KeccakRider* rider = nullptr) {
  const size_t row = first_blocks * rate;
  KeccakMulti<W> xof(rate, 0x1f);
  if constexpr (W == 4) xof.SetRider(rider);
  uint8_t nonce_bytes[kMaxLanes][2];
  AbsorbGroup<SeedBytes>(xof, seed, nonces, used, nonce_bytes);
  uint8_t* outs[W] = {};
  for (size_t j = 0; j < used; ++j) outs[j] = buf + j * row;
  xof.SqueezeBlocks(outs, first_blocks);
  int count[W];
  bool more = false;
  for (size_t j = 0; j < used; ++j) {
    count[j] = reject(out[j]->coeffs, 0, buf + j * row, row);
    more |= count[j] < kN;
  }
  while (more) {
    for (size_t j = 0; j < W; ++j) outs[j] = j < used && count[j] < kN ? buf + j * row : nullptr;
    xof.SqueezeBlocks(outs, 1);
    more = false;
    for (size_t j = 0; j < used; ++j) {
      if (count[j] < kN) count[j] = reject(out[j]->coeffs, count[j], buf + j * row, rate);
      more |= count[j] < kN;
    }
  }
}

}  // namespace

// ---- The portable sampling hooks of mldsa/backend.h --------------------------------------------

// Accepts 23-bit candidates below q from 3-byte groups (Alg. 30 with CoeffFromThreeBytes, Alg. 14).
int portable::RejectUniform(int32_t* a, int count, const uint8_t* buf, size_t len) {
  for (size_t pos = 0; pos + 3 <= len && count < kN; pos += 3) {
    const uint32_t t = static_cast<uint32_t>(buf[pos]) | static_cast<uint32_t>(buf[pos + 1]) << 8 |
                       static_cast<uint32_t>(buf[pos + 2] & 0x7f) << 16;
    if (t < static_cast<uint32_t>(kQ)) a[count++] = static_cast<int32_t>(t);
  }
  return count;
}
int portable::RejectEta2(int32_t* a, int count, const uint8_t* buf, size_t len) {
  return RejectEtaPortable<2>(a, count, buf, len);
}
int portable::RejectEta4(int32_t* a, int count, const uint8_t* buf, size_t len) {
  return RejectEtaPortable<4>(a, count, buf, len);
}

template <int Eta>
int RejectEta(int32_t* a, int count, const uint8_t* buf, size_t len) {
  const Backend& be = ActiveBackend();
  return (Eta == 2 ? be.reject_eta2 : be.reject_eta4)(a, count, buf, len);
}

void SampleUniformPolys(Poly* const* out, const uint8_t rho[32], const uint16_t* nonces, size_t n,
                        KeccakRider* rider, SampleDoneFn on_done, void* ctx) {
  constexpr size_t kRate = Shake128::kRateBytes;
  constexpr size_t kFirstBlocks = 5;  // 840 bytes: enough for 256 coefficients almost always
  alignas(64) uint8_t buf[kMaxLanes][kFirstBlocks * kRate];
  const auto reject = ActiveBackend().reject_uniform;
  ForEachGroup(n, [&](size_t g, size_t used, auto width) {
    RejectionGroup<decltype(width)::value, 32>(out + g, rho, nonces + g, used, kRate, kFirstBlocks,
                                               &buf[0][0], reject, rider);
    if (on_done != nullptr) on_done(ctx, g + used);
  });
}

template <int Eta>
void SampleEtaPolys(Poly* const* out, const uint8_t rho_prime[64], const uint16_t* nonces,
                    size_t n) {
  constexpr size_t kRate = Shake256::kRateBytes;
  constexpr size_t kFirstBlocks = 2;
  alignas(64) uint8_t buf[kMaxLanes][kFirstBlocks * kRate];
  ZeroOnExit wipe_buf(buf);
  ForEachGroup(n, [&](size_t g, size_t used, auto width) {
    RejectionGroup<decltype(width)::value, 64>(out + g, rho_prime, nonces + g, used, kRate,
                                               kFirstBlocks, &buf[0][0], RejectEta<Eta>);
  });
}

template <int Gamma1Bits>
void SampleMaskPolys(Poly* const* out, const uint8_t rho_pp[64], const uint16_t* nonces, size_t n) {
  constexpr size_t kRate = Shake256::kRateBytes;
  constexpr size_t kBytes = 32 * (Gamma1Bits + 1);  // 576 or 640
  constexpr size_t kBlocks = (kBytes + kRate - 1) / kRate;
  alignas(64) uint8_t buf[kMaxLanes][kBlocks * kRate];
  ZeroOnExit wipe_buf(buf);
  ForEachGroup(n, [&](size_t g, size_t used, auto width) {
    constexpr size_t W = decltype(width)::value;
    KeccakMulti<W> xof(kRate, 0x1f);
    uint8_t nonce_bytes[kMaxLanes][2];
    AbsorbGroup<64>(xof, rho_pp, nonces + g, used, nonce_bytes);
    uint8_t* outs[W] = {};
    for (size_t j = 0; j < used; ++j) outs[j] = buf[j];
    xof.SqueezeBlocks(outs, kBlocks);
    for (size_t j = 0; j < used; ++j) UnpackZ<Gamma1Bits>(*out[g + j], buf[j]);
  });
}

void SampleInBallPublic(Poly& c, const uint8_t* c_tilde, size_t c_tilde_len, int tau) {
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

namespace {
// All-ones byte when x == y (x, y < 2^31), else 0; no branch.
inline uint8_t EqMask(uint32_t x, uint32_t y) {
  return static_cast<uint8_t>(0u - (((x ^ y) - 1) >> 31));
}
}  // namespace

void portable::SampleInBallSteps(uint8_t* pos, int8_t* sgn, uint32_t& i_io, uint32_t first,
                                 uint64_t& signs_io, const uint8_t* cand, size_t n) {
  uint32_t i = i_io;
  uint64_t signs = signs_io;
  for (size_t t = 0; t < n; ++t) {
    const uint32_t b = cand[t];
    // accept = i <= 255 and b <= i (i <= 256, b <= 255: the differences fit easily).
    const uint32_t a = (i - 256) >> 31 & ((b - i - 1) >> 31);
    const uint8_t am = static_cast<uint8_t>(0u - a);
    const uint8_t s = static_cast<uint8_t>(1 - 2 * static_cast<int32_t>(signs & 1));
    const uint32_t slot = i - first;
    for (uint32_t k = 0; k < kBallSlots; ++k) {
      // c[i] = c[b]: the entry at position b (if any) moves to i; then c[b] = s in slot `slot`.
      uint8_t p = pos[k];
      const uint8_t move = EqMask(p, b) & am;
      p = static_cast<uint8_t>(p ^ ((p ^ i) & move));
      const uint8_t put = EqMask(k, slot) & am;
      pos[k] = static_cast<uint8_t>(p ^ ((p ^ b) & put));
      sgn[k] = static_cast<int8_t>(static_cast<uint8_t>(sgn[k]) ^ ((sgn[k] ^ s) & put));
    }
    i += a;
    signs >>= a;
  }
  i_io = i;
  signs_io = signs;
}

void portable::SampleInBallExpand(Poly& c, const uint8_t* pos, const int8_t* sgn, int used) {
  alignas(64) uint8_t c8[kN] = {};
  for (int t = 0; t < used; ++t) {
    const uint32_t p = pos[t];
    const uint8_t v = static_cast<uint8_t>(sgn[t]);
    for (uint32_t k = 0; k < kN; ++k) c8[k] |= v & EqMask(k, p);
  }
  for (int k = 0; k < kN; ++k) c.coeffs[k] = static_cast<int8_t>(c8[k]);
  SecureZero(c8, sizeof(c8));
}

void SampleInBall(Poly& c, const uint8_t* c_tilde, size_t c_tilde_len, int tau,
                  size_t first_budget) {
  constexpr size_t kRate = Shake256::kRateBytes;
  struct alignas(64) State {
    uint8_t buf[kRate];
    uint8_t pos[kBallSlots];
    int8_t sgn[kBallSlots];
    uint64_t signs;
    uint32_t i;
  };
  State st;
  ZeroOnExit wipe(st);
  const Backend& be = ActiveBackend();
  const auto steps = be.sample_in_ball_steps;
  Shake256 xof;
  xof.Absorb(Bytes(c_tilde, c_tilde_len));
  xof.Finalize();
  xof.SqueezeBlocks(st.buf, 1);
  st.signs = 0;
  for (int k = 0; k < 8; ++k) st.signs |= static_cast<uint64_t>(st.buf[k]) << (8 * k);
  std::memset(st.pos, 0, sizeof(st.pos));
  std::memset(st.sgn, 0, sizeof(st.sgn));
  const uint32_t first = static_cast<uint32_t>(kN - tau);
  st.i = first;
  size_t budget = first_budget != 0 ? first_budget : SampleInBallBudget(tau);
  budget = std::min(budget, kRate - 8);
  steps(st.pos, st.sgn, st.i, first, st.signs, st.buf + 8, budget);
  size_t pos = 8 + budget;
  for (;;) {
    // Only "all tau positions placed" is revealed (almost always true after the first budget).
    uint32_t done = ((st.i ^ static_cast<uint32_t>(kN)) - 1) >> 31;
    CtPublic(&done, sizeof(done));
    if (done != 0) break;
    if (pos == kRate) {
      xof.SqueezeBlocks(st.buf, 1);
      pos = 0;
    }
    steps(st.pos, st.sgn, st.i, first, st.signs, st.buf + pos, kRate - pos);
    pos = kRate;
  }
  be.sample_in_ball_expand(c, st.pos, st.sgn, tau);
  xof.Reset();  // wipes the sponge (it holds secret XOF state)
}

template int RejectEta<2>(int32_t*, int, const uint8_t*, size_t);
template int RejectEta<4>(int32_t*, int, const uint8_t*, size_t);
template void SampleEtaPolys<2>(Poly* const*, const uint8_t*, const uint16_t*, size_t);
template void SampleEtaPolys<4>(Poly* const*, const uint8_t*, const uint16_t*, size_t);
template void SampleMaskPolys<17>(Poly* const*, const uint8_t*, const uint16_t*, size_t);
template void SampleMaskPolys<19>(Poly* const*, const uint8_t*, const uint16_t*, size_t);

}  // namespace pqcd::kernels::mldsa
