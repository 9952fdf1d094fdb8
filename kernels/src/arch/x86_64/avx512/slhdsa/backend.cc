// The SLH-DSA table of the avx512 backend (slhdsa/backend.h; listed in arch/backends.h): SHA-256
// (FIPS 180-4 §6.2.2) sixteen blocks at a time, one per 32-bit lane of a ZMM register, and
// SHA-512 (§6.4.2) eight at a time in 64-bit lanes, with vprord/vprorq for the rotations and
// vpternlog for Ch (0xca), Maj (0xe8) and the three-way XORs (0x96): a round is about half the
// instructions of the AVX2 one.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "slhdsa/backend.h"
#include "slhdsa/sha2.h"

// GCC 12 reports _mm512_undefined_epi32() inside _mm512_ror_epi32 as uninitialized (a false
// positive in its own header).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pqcd::kernels::slhdsa {
namespace {

template <int R>
__attribute__((always_inline)) inline __m512i Ror(__m512i x) {
  return _mm512_ror_epi32(x, R);
}
__attribute__((always_inline)) inline __m512i Xor3(__m512i a, __m512i b, __m512i c) {
  return _mm512_ternarylogic_epi32(a, b, c, 0x96);
}
__attribute__((always_inline)) inline __m512i Add(__m512i a, __m512i b) {
  return _mm512_add_epi32(a, b);
}

// SHA-256 rounds kFrom..kTo-1 on the state s (a..h, updated) with the message words of w, a ring
// of sixteen: W_t for t >= 16 replaces W_(t-16) as it is made, so rounds 0..15 read w as given.
template <int kFrom, int kTo>
__attribute__((always_inline)) inline void Rounds(__m512i s[8], __m512i w[16]) {
  __m512i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma GCC unroll 64
  for (int t = kFrom; t < kTo; ++t) {
    if (t >= 16) {
      const __m512i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
      const __m512i s0 = Xor3(Ror<7>(w15), Ror<18>(w15), _mm512_srli_epi32(w15, 3));
      const __m512i s1 = Xor3(Ror<17>(w2), Ror<19>(w2), _mm512_srli_epi32(w2, 10));
      w[t & 15] = Add(Add(w[t & 15], s0), Add(w[(t - 7) & 15], s1));
    }
    const __m512i big_s1 = Xor3(Ror<6>(e), Ror<11>(e), Ror<25>(e));
    const __m512i ch = _mm512_ternarylogic_epi32(e, f, g, 0xca);
    const __m512i t1 = Add(Add(Add(h, big_s1), Add(ch, w[t & 15])),
                           _mm512_set1_epi32(static_cast<int>(kSha256K[t])));
    const __m512i big_s0 = Xor3(Ror<2>(a), Ror<13>(a), Ror<22>(a));
    const __m512i maj = _mm512_ternarylogic_epi32(a, b, c, 0xe8);
    h = g;
    g = f;
    f = e;
    e = Add(d, t1);
    d = c;
    c = b;
    b = a;
    a = Add(t1, Add(big_s0, maj));
  }
  s[0] = a;
  s[1] = b;
  s[2] = c;
  s[3] = d;
  s[4] = e;
  s[5] = f;
  s[6] = g;
  s[7] = h;
}

void Sha256CompressX16Avx512(uint32_t* v, const uint8_t* const* blocks) {
  // The sixteen blocks' words transposed: m[t][j] is word t (big-endian) of lane j.
  alignas(64) uint32_t m[16][16];
  for (int j = 0; j < 16; ++j) {
    for (int t = 0; t < 16; ++t) m[t][j] = LoadBe32(blocks[j] + 4 * t);
  }
  __m512i w[16];
  for (int t = 0; t < 16; ++t) w[t] = _mm512_load_si512(m[t]);
  __m512i s[8], x[8];
  for (int i = 0; i < 8; ++i) x[i] = s[i] = _mm512_loadu_si512(v + 16 * i);
  Rounds<0, 64>(x, w);
  for (int i = 0; i < 8; ++i) _mm512_storeu_si512(v + 16 * i, Add(s[i], x[i]));
  // The blocks hold secret seeds (PRF): no copy of them stays behind.
  for (__m512i& y : w) y = _mm512_setzero_si512();
  std::memset(m, 0, sizeof(m));
  asm volatile("" : : "r"(m) : "memory");
}

// slhdsa::Backend::sha256_chains on sixteen lanes, kWords = n / 4 chaining words per value.
//
// Each lane runs chains one after another, keeping the running chain's value as words of the
// lanes (d[i], word i of every lane's value) from its first step to its last. A step's block is
// ADRSc || value || padding: words 0..3 and the top half of word 4 are the lane's address without
// its hash address (fixed while the lane runs one chain), then the hash address, then the value
// two bytes off the word boundary (22 = 4 * 5 + 2), so block word 5 + i is the low half of
// d[i - 1] over the high half of d[i]. Rounds 0..3 read only the fixed words and start from the
// fixed chaining value: they run again only when a lane takes up another chain.
//
// Which lane runs which chain is decided from the steps alone (public): each chain, in the order
// given (Hashes::Chains gives the longest first), goes to the lane with the fewest steps so far,
// so the lanes end about together: the chains of a WOTS+ signature, 0 to 15 steps each, take
// about their total steps / 16 compressions rather than the sum of each group's longest chain.
// A lane whose chain ends is found by a compare of its remaining steps (public); its value is
// written out and the next chain's read in.
template <int kWords>
void ChainsX16(const Sha256ChainsArgs& args) {
  constexpr size_t n = 4 * kWords;
  constexpr size_t kLanes = 16;
  constexpr size_t kBatch = 128;  // chains scheduled together
  __m512i iv[8];
  for (int i = 0; i < 8; ++i) iv[i] = _mm512_set1_epi32(static_cast<int>(args.chain[i]));
  const __m512i pad = _mm512_set1_epi32(0x8000);  // 0x80 after the value, at byte 22 + n
  const __m512i bits = _mm512_set1_epi32(static_cast<int>((64 + kAdrscBytes + n) * 8));
  const __m512i one = _mm512_set1_epi32(1);
  alignas(64) uint32_t m[16][kLanes];  // lane words: block (PRF) or values (d) and fixed words
  alignas(64) uint32_t hash_a[kLanes], left_a[kLanes];
  __m512i w[16];
  __m512i d[kWords];
  for (int i = 0; i < kWords; ++i) d[i] = _mm512_setzero_si512();
  // The PRF values that start the chains, sixteen blocks per compression, into values.
  for (size_t base = 0; args.prf_adrsc != nullptr && base < args.count; base += kLanes) {
    const size_t live = std::min(kLanes, args.count - base);
    std::memset(m, 0, sizeof(m));
    for (size_t j = 0; j < live; ++j) {
      alignas(16) uint8_t blk[64];
      LayOutPrfBlock(blk, args, base + j);
      for (int t = 0; t < 16; ++t) m[t][j] = LoadBe32(blk + 4 * t);
      std::memset(blk, 0, sizeof(blk));
      asm volatile("" : : "r"(blk) : "memory");
    }
    for (int t = 0; t < 16; ++t) w[t] = _mm512_load_si512(m[t]);
    __m512i x[8];
    for (int i = 0; i < 8; ++i) x[i] = iv[i];
    Rounds<0, 64>(x, w);
    for (int i = 0; i < kWords; ++i) _mm512_store_si512(m[i], Add(iv[i], x[i]));
    for (size_t j = 0; j < live; ++j) {
      for (int i = 0; i < kWords; ++i) StoreBe32(args.values[base + j] + 4 * i, m[i][j]);
    }
  }
  for (size_t base = 0; base < args.count; base += kBatch) {
    const size_t batch = std::min(kBatch, args.count - base);
    // The schedule: each lane's chains in order (queue), from the public steps.
    uint8_t queue[kLanes][kBatch];
    size_t queued[kLanes] = {}, next[kLanes] = {};
    uint32_t load[kLanes] = {};
    for (size_t i = 0; i < batch; ++i) {
      const uint32_t steps = args.steps[base + i];
      if (steps == 0) continue;  // its value stays (the PRF value, if any)
      size_t lane = 0;
      for (size_t j = 1; j < kLanes; ++j) lane = load[j] < load[lane] ? j : lane;
      queue[lane][queued[lane]++] = static_cast<uint8_t>(i);
      load[lane] += steps;
    }
    int running[kLanes];  // the chain in each lane, -1 for none
    // Takes up the next chain of lane j (or none): its fixed words, hash address, steps and
    // value into the lane arrays.
    auto take_up = [&](size_t j) {
      if (next[j] == queued[j]) {
        running[j] = -1;
        for (int t = 0; t < 5; ++t) m[kWords + t][j] = 0;
        hash_a[j] = left_a[j] = 0;
        return;
      }
      const size_t i = base + queue[j][next[j]++];
      running[j] = static_cast<int>(i - base);
      const uint8_t* ad = args.adrsc + i * kAdrscBytes;
      for (int t = 0; t < 4; ++t) m[kWords + t][j] = LoadBe32(ad + 4 * t);
      m[kWords + 4][j] = (uint32_t{ad[16]} << 24) | (uint32_t{ad[17]} << 16);
      hash_a[j] = args.start[i];
      left_a[j] = args.steps[i];
      for (int k = 0; k < kWords; ++k) m[k][j] = LoadBe32(args.values[i] + 4 * k);
    };
    std::memset(m, 0, sizeof(m));
    size_t busy = 0;
    for (size_t j = 0; j < kLanes; ++j) {
      take_up(j);
      busy += running[j] >= 0 ? 1 : 0;
    }
    __m512i fixed[5], hash, left, mid[8];
    // The lane arrays into registers, and rounds 0..3 of the fixed words.
    auto load_lanes = [&]() {
      for (int i = 0; i < kWords; ++i) d[i] = _mm512_load_si512(m[i]);
      for (int t = 0; t < 5; ++t) fixed[t] = _mm512_load_si512(m[kWords + t]);
      hash = _mm512_load_si512(hash_a);
      left = _mm512_load_si512(left_a);
      for (int i = 0; i < 8; ++i) mid[i] = iv[i];
      for (int t = 0; t < 4; ++t) w[t] = fixed[t];
      Rounds<0, 4>(mid, w);
    };
    load_lanes();
    while (busy > 0) {
      // Lanes with a chain running (its steps left are above zero): a public mask.
      const __mmask16 live_mask = _mm512_cmpgt_epu32_mask(left, _mm512_setzero_si512());
      for (int i = 0; i < 4; ++i) w[i] = fixed[i];
      w[4] = _mm512_or_si512(fixed[4], _mm512_srli_epi32(hash, 16));
      w[5] = _mm512_or_si512(_mm512_slli_epi32(hash, 16), _mm512_srli_epi32(d[0], 16));
      for (int i = 1; i < kWords; ++i) {
        w[5 + i] = _mm512_or_si512(_mm512_slli_epi32(d[i - 1], 16), _mm512_srli_epi32(d[i], 16));
      }
      w[5 + kWords] = _mm512_or_si512(_mm512_slli_epi32(d[kWords - 1], 16), pad);
      for (int i = 6 + kWords; i < 15; ++i) w[i] = _mm512_setzero_si512();
      w[15] = bits;
      __m512i x[8];
      for (int i = 0; i < 8; ++i) x[i] = mid[i];
      Rounds<4, 64>(x, w);
      for (int i = 0; i < kWords; ++i) {
        d[i] = _mm512_mask_mov_epi32(d[i], live_mask, Add(iv[i], x[i]));
      }
      hash = Add(hash, one);
      left = _mm512_mask_sub_epi32(left, live_mask, left, one);
      const __mmask16 ended = live_mask & _mm512_cmpeq_epu32_mask(left, _mm512_setzero_si512());
      if (ended == 0) continue;  // public: from the steps alone
      for (int i = 0; i < kWords; ++i) _mm512_store_si512(m[i], d[i]);
      for (int t = 0; t < 5; ++t) _mm512_store_si512(m[kWords + t], fixed[t]);
      _mm512_store_si512(hash_a, hash);
      _mm512_store_si512(left_a, left);
      for (size_t j = 0; j < kLanes; ++j) {
        if (((ended >> j) & 1) == 0) continue;
        uint8_t* out = args.values[base + static_cast<size_t>(running[j])];
        for (int i = 0; i < kWords; ++i) StoreBe32(out + 4 * i, m[i][j]);
        take_up(j);
        busy -= running[j] >= 0 ? 0 : 1;
      }
      load_lanes();
    }
  }
  // The chain values and the PRF blocks are secret: no copy of them stays behind.
  for (__m512i& y : w) y = _mm512_setzero_si512();
  for (__m512i& y : d) y = _mm512_setzero_si512();
  std::memset(m, 0, sizeof(m));
  asm volatile("" : : "r"(m) : "memory");
}

void Sha256ChainsX16Avx512(const Sha256ChainsArgs& args) {
  switch (args.n) {
    case 16:
      return ChainsX16<4>(args);
    case 24:
      return ChainsX16<6>(args);
    default:
      return ChainsX16<8>(args);
  }
}

template <int R>
__attribute__((always_inline)) inline __m512i Ror64(__m512i x) {
  return _mm512_ror_epi64(x, R);
}
__attribute__((always_inline)) inline __m512i Xor3x64(__m512i a, __m512i b, __m512i c) {
  return _mm512_ternarylogic_epi64(a, b, c, 0x96);
}
__attribute__((always_inline)) inline __m512i Add64(__m512i a, __m512i b) {
  return _mm512_add_epi64(a, b);
}

// SHA-512 rounds 0..79 (FIPS 180-4 §6.4.2) on the state s with the message words of w, a ring of
// sixteen (as Rounds).
__attribute__((always_inline)) inline void Rounds512(__m512i s[8], __m512i w[16]) {
  __m512i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma GCC unroll 80
  for (int t = 0; t < 80; ++t) {
    if (t >= 16) {
      const __m512i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
      const __m512i s0 = Xor3x64(Ror64<1>(w15), Ror64<8>(w15), _mm512_srli_epi64(w15, 7));
      const __m512i s1 = Xor3x64(Ror64<19>(w2), Ror64<61>(w2), _mm512_srli_epi64(w2, 6));
      w[t & 15] = Add64(Add64(w[t & 15], s0), Add64(w[(t - 7) & 15], s1));
    }
    const __m512i big_s1 = Xor3x64(Ror64<14>(e), Ror64<18>(e), Ror64<41>(e));
    const __m512i ch = _mm512_ternarylogic_epi64(e, f, g, 0xca);
    const __m512i t1 = Add64(Add64(Add64(h, big_s1), Add64(ch, w[t & 15])),
                             _mm512_set1_epi64(static_cast<long long>(kSha512K[t])));
    const __m512i big_s0 = Xor3x64(Ror64<28>(a), Ror64<34>(a), Ror64<39>(a));
    const __m512i maj = _mm512_ternarylogic_epi64(a, b, c, 0xe8);
    h = g;
    g = f;
    f = e;
    e = Add64(d, t1);
    d = c;
    c = b;
    b = a;
    a = Add64(t1, Add64(big_s0, maj));
  }
  s[0] = a;
  s[1] = b;
  s[2] = c;
  s[3] = d;
  s[4] = e;
  s[5] = f;
  s[6] = g;
  s[7] = h;
}

// SHA-512 (FIPS 180-4 §6.4.2) eight blocks at a time, one per 64-bit lane.
void Sha512CompressX8Avx512(uint64_t* v, const uint8_t* const* blocks) {
  alignas(64) uint64_t m[16][8];
  for (int j = 0; j < 8; ++j) {
    for (int t = 0; t < 16; ++t) m[t][j] = LoadBe64(blocks[j] + 8 * t);
  }
  __m512i w[16];
  for (int t = 0; t < 16; ++t) w[t] = _mm512_load_si512(m[t]);
  __m512i s[8], x[8];
  for (int i = 0; i < 8; ++i) x[i] = s[i] = _mm512_loadu_si512(v + 8 * i);
  Rounds512(x, w);
  for (int i = 0; i < 8; ++i) _mm512_storeu_si512(v + 8 * i, Add64(s[i], x[i]));
  for (__m512i& y : w) y = _mm512_setzero_si512();
  std::memset(m, 0, sizeof(m));
  asm volatile("" : : "r"(m) : "memory");
}

// slhdsa::Backend::sha512_h on eight lanes, kDataWords = 2n / 8 message words per call. The block
// ADRSc || M2 || padding is made in registers: words 0 and 1 are ADRSc bytes 0..15, word 2 its
// bytes 16..21 over the first two bytes of M2, then M2 two bytes off the word boundary (22 =
// 8 * 2 + 6): block word 3 + i is the low six bytes of E[i] over the high two of E[i + 1], E[i]
// being word i of M2, gathered from the eight inputs. The digests are scattered to the outputs,
// the live lanes only (an idle lane reads a zero block).
template <int kDataWords>
void HX8(const Sha512HArgs& args) {
  constexpr size_t n = 4 * kDataWords;
  // Byte order within each 64-bit word reversed (vpshufb works within 128-bit lanes).
  const __m512i bswap64 =
      _mm512_set_epi8(8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                      14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4,
                      5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  __m512i iv[8];
  for (int i = 0; i < 8; ++i) iv[i] = _mm512_set1_epi64(static_cast<long long>(args.chain[i]));
  const __m512i pad = _mm512_set1_epi64(0x8000);  // 0x80 after M2, at byte 22 + 2n
  const __m512i bits = _mm512_set1_epi64(static_cast<long long>((128 + kAdrscBytes + 2 * n) * 8));
  alignas(64) static constexpr uint8_t kZero[64] = {};
  alignas(64) uint64_t fixed[3][8];
  alignas(64) uint64_t in_at[8], out_at[8];
  __m512i w[16];
  for (size_t base = 0; base < args.count; base += 8) {
    const size_t live = std::min<size_t>(8, args.count - base);
    for (size_t j = 0; j < 8; ++j) {
      if (j < live) {  // public: the number of calls
        const uint8_t* ad = args.adrsc + (base + j) * kAdrscBytes;
        fixed[0][j] = LoadBe64(ad);
        fixed[1][j] = LoadBe64(ad + 8);
        uint64_t hi = 0;
        for (int k = 16; k < 22; ++k) hi = (hi << 8) | ad[k];
        fixed[2][j] = hi << 16;
        in_at[j] = reinterpret_cast<uintptr_t>(args.in[base + j]);
        out_at[j] = reinterpret_cast<uintptr_t>(args.out[base + j]);
      } else {
        fixed[0][j] = fixed[1][j] = fixed[2][j] = 0;
        in_at[j] = reinterpret_cast<uintptr_t>(kZero);
        out_at[j] = 0;  // never written: masked off
      }
    }
    const __mmask8 live_mask = static_cast<__mmask8>((1u << live) - 1);
    const __m512i in_v = _mm512_load_si512(in_at);
    const __m512i out_v = _mm512_load_si512(out_at);
    __m512i e[kDataWords];
    for (int i = 0; i < kDataWords; ++i) {
      e[i] = _mm512_shuffle_epi8(
          _mm512_i64gather_epi64(_mm512_add_epi64(in_v, _mm512_set1_epi64(8 * i)), nullptr, 1),
          bswap64);
    }
    w[0] = _mm512_load_si512(fixed[0]);
    w[1] = _mm512_load_si512(fixed[1]);
    w[2] = _mm512_or_si512(_mm512_load_si512(fixed[2]), _mm512_srli_epi64(e[0], 48));
    for (int i = 0; i + 1 < kDataWords; ++i) {
      w[3 + i] = _mm512_or_si512(_mm512_slli_epi64(e[i], 16), _mm512_srli_epi64(e[i + 1], 48));
    }
    w[2 + kDataWords] = _mm512_or_si512(_mm512_slli_epi64(e[kDataWords - 1], 16), pad);
    for (int i = 3 + kDataWords; i < 15; ++i) w[i] = _mm512_setzero_si512();
    w[15] = bits;
    __m512i x[8];
    for (int i = 0; i < 8; ++i) x[i] = iv[i];
    Rounds512(x, w);
    for (int i = 0; i < kDataWords / 2; ++i) {
      const __m512i digest = _mm512_shuffle_epi8(Add64(iv[i], x[i]), bswap64);
      _mm512_mask_i64scatter_epi64(nullptr, live_mask,
                                   _mm512_add_epi64(out_v, _mm512_set1_epi64(8 * i)), digest, 1);
    }
  }
  for (__m512i& y : w) y = _mm512_setzero_si512();
}

void Sha512HX8Avx512(const Sha512HArgs& args) {
  if (args.n == 24) return HX8<6>(args);
  return HX8<8>(args);
}

}  // namespace

extern const Backend kAvx512;
constinit const Backend kAvx512{
    .sha256_lanes = 16,
    .sha256_compress_lanes = &Sha256CompressX16Avx512,
    .sha256_chain_lanes = 16,
    .sha256_chains = &Sha256ChainsX16Avx512,
    .sha512_lanes = 8,
    .sha512_compress_lanes = &Sha512CompressX8Avx512,
    .sha512_h_lanes = 8,
    .sha512_h = &Sha512HX8Avx512,
};

}  // namespace pqcd::kernels::slhdsa
