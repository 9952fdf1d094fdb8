// AVX2 ML-DSA bounded rejection sampling (RejBoundedPoly's inner loop, FIPS 204 Alg. 31 / 15),
// compiled with -mavx2 -mbmi2 -mpopcnt only; see mldsa_avx2.h.
//
// The XOF output is secret. Each 8-byte unit gives 16 half-bytes (low half first, as the FIPS
// loop reads them); their accept bits (b < 15 for eta = 2, b < 9 for eta = 4) are computed with
// vector compares for a whole chunk, and the chunk's accept pattern, which says nothing about the
// accepted values, is declassified with one CtPublic() call. The accepted coefficients are then
// compacted 8 at a time with vpermd and a lane-index table indexed by the (public) 8-bit pattern.
// Helpers are static / anonymous-namespace only: nothing here may be shared with baseline files.
#include <immintrin.h>

#include <cstdint>

#include "arch/x86_64/avx2/mldsa/mldsa_avx2.h"
#include "pqcd/kernels/common.h"

namespace pqcd::kernels::mldsa::avx2 {
namespace {

#define PQCD_AI static inline __attribute__((always_inline))

struct CompactTable {
  uint8_t idx[256][8];  // for each 8-bit accept pattern, the accepted lane indices, in order
};

constexpr CompactTable MakeCompactTable() {
  CompactTable t{};
  for (int mask = 0; mask < 256; ++mask) {
    int n = 0;
    for (int l = 0; l < 8; ++l) {
      if ((mask >> l) & 1) t.idx[mask][n++] = static_cast<uint8_t>(l);
    }
    for (; n < 8; ++n) t.idx[mask][n] = 0;
  }
  return t;
}
alignas(64) constexpr CompactTable kCompact = MakeCompactTable();

// Scalar CoeffFromHalfByte (same formulas as sample.cc): coefficient of half-byte b < 16 and its
// accept bit, without branches.
template <int Eta>
PQCD_AI int32_t ScalarCoeff(uint32_t b, uint32_t& accept) {
  if constexpr (Eta == 2) {
    accept = static_cast<uint32_t>(static_cast<int32_t>(b) - 15) >> 31;
    const uint32_t mod5 = b - 5 * ((b * 205) >> 10);
    return 2 - static_cast<int32_t>(mod5);
  } else {
    accept = static_cast<uint32_t>(static_cast<int32_t>(b) - 9) >> 31;
    return 4 - static_cast<int32_t>(b);
  }
}

// 8 bytes -> their 16 half-bytes in stream order (byte i gives lanes 2i (low) and 2i + 1 (high)).
PQCD_AI __m128i HalfBytes(const uint8_t* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(15);
  const __m128i lo = _mm_and_si128(v, m);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
  return _mm_unpacklo_epi8(lo, hi);
}

template <int Eta>
PQCD_AI unsigned AcceptMask(__m128i b) {
  const __m128i bound = _mm_set1_epi8(Eta == 2 ? 15 : 9);
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpgt_epi8(bound, b)));
}

// Coefficients as signed bytes: eta - b (eta = 4) or 2 - (b mod 5) (eta = 2, every b < 16 gives
// the scalar formula's value).
template <int Eta>
PQCD_AI __m128i Coeffs(__m128i b) {
  const __m128i eta = _mm_set1_epi8(Eta);
  if constexpr (Eta == 2) {
    const __m128i five = _mm_set1_epi8(5);
    __m128i r = b;
    r = _mm_sub_epi8(r, _mm_and_si128(_mm_cmpgt_epi8(b, _mm_set1_epi8(4)), five));
    r = _mm_sub_epi8(r, _mm_and_si128(_mm_cmpgt_epi8(b, _mm_set1_epi8(9)), five));
    r = _mm_sub_epi8(r, _mm_and_si128(_mm_cmpgt_epi8(b, _mm_set1_epi8(14)), five));
    return _mm_sub_epi8(eta, r);
  } else {
    return _mm_sub_epi8(eta, b);
  }
}

template <int Eta>
int RejectEtaT(int32_t* a, int count, const uint8_t* buf, size_t len) {
  constexpr size_t kChunkUnits = 64;  // 512 bytes per declassified pattern
  uint16_t masks[kChunkUnits + 1];
  size_t pos = 0;
  while (pos < len && count < kN) {
    const size_t chunk = len - pos < 8 * kChunkUnits ? len - pos : 8 * kChunkUnits;
    const size_t units = chunk / 8;
    const size_t rest = chunk % 8;  // only the last chunk of an odd length has a remainder
    const uint8_t* p = buf + pos;
    for (size_t u = 0; u < units; ++u) {
      masks[u] = static_cast<uint16_t>(AcceptMask<Eta>(HalfBytes(p + 8 * u)));
    }
    size_t n_masks = units;
    if (rest != 0) {
      uint32_t m = 0;
      for (size_t i = 0; i < rest; ++i) {
        const uint32_t byte = p[8 * units + i];
        uint32_t a0, a1;
        ScalarCoeff<Eta>(byte & 15, a0);
        ScalarCoeff<Eta>(byte >> 4, a1);
        m |= (a0 | a1 << 1) << (2 * i);
      }
      masks[n_masks++] = static_cast<uint16_t>(m);
    }
    // The accept pattern is independent of the accepted values: declassify it once.
    CtPublic(masks, n_masks * sizeof(masks[0]));

    for (size_t u = 0; u < n_masks && count < kN; ++u) {
      const unsigned m = masks[u];
      const uint8_t* q = p + 8 * u;
      if (u < units) {
        const __m128i c = Coeffs<Eta>(HalfBytes(q));
        const unsigned m0 = m & 0xff, m1 = m >> 8;
        const __m256i v0 = _mm256_cvtepi8_epi32(c);
        const __m256i v1 = _mm256_cvtepi8_epi32(_mm_srli_si128(c, 8));
        const __m256i i0 = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(kCompact.idx[m0])));
        const __m256i i1 = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(kCompact.idx[m1])));
        const int n0 = _mm_popcnt_u32(m0), n1 = _mm_popcnt_u32(m1);
        if (count <= kN - 16) {  // both 8-lane stores stay inside a[0..256)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + count),
                              _mm256_permutevar8x32_epi32(v0, i0));
          count += n0;
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + count),
                              _mm256_permutevar8x32_epi32(v1, i1));
          count += n1;
          continue;
        }
        // Near the end of the polynomial: compact into a staging buffer, copy what still fits
        // (the count is public; the buffer holds secret coefficients and is wiped below).
        alignas(32) int32_t stage[16];
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(stage), _mm256_permutevar8x32_epi32(v0, i0));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(stage + n0),
                            _mm256_permutevar8x32_epi32(v1, i1));
        const int take = n0 + n1 < kN - count ? n0 + n1 : kN - count;
        for (int k = 0; k < take; ++k) a[count + k] = stage[k];
        count += take;
        SecureZero(stage, sizeof(stage));
        continue;
      }
      // The remainder of an odd length: one half-byte at a time, stores steered by the public
      // pattern only.
      const size_t bytes = rest;
      for (size_t i = 0; i < 2 * bytes && count < kN; ++i) {
        const uint32_t byte = q[i / 2];
        uint32_t unused;
        const int32_t coeff = ScalarCoeff<Eta>(i % 2 ? byte >> 4 : byte & 15, unused);
        if ((m >> i) & 1) a[count++] = coeff;
      }
    }
    pos += chunk;
  }
  return count;
}

}  // namespace

int RejectEta2(int32_t* a, int count, const uint8_t* buf, size_t len) {
  return RejectEtaT<2>(a, count, buf, len);
}
int RejectEta4(int32_t* a, int count, const uint8_t* buf, size_t len) {
  return RejectEtaT<4>(a, count, buf, len);
}

void SampleInBallSteps(uint8_t* pos_io, int8_t* sgn_io, uint32_t& i_io, uint32_t first,
                       uint64_t& signs_io, const uint8_t* cand, size_t n) {
  const __m256i lane = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                        17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  const __m256i slot_idx[2] = {lane, _mm256_add_epi8(lane, _mm256_set1_epi8(32))};
  __m256i pos[2], sgn[2];
  for (int h = 0; h < 2; ++h) {
    pos[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pos_io + 32 * h));
    sgn[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sgn_io + 32 * h));
  }
  uint32_t i = i_io;
  uint64_t signs = signs_io;
  // Position i and slot i - first as byte vectors; both advance by one per accepted candidate.
  __m256i iv = _mm256_set1_epi8(static_cast<char>(i));
  __m256i slotv = _mm256_set1_epi8(static_cast<char>(i - first));
  for (size_t t = 0; t < n; ++t) {
    const uint32_t b = cand[t];
    // accept = i <= 255 and b <= i.
    const uint32_t a = (i - 256) >> 31 & ((b - i - 1) >> 31);
    const __m256i am = _mm256_set1_epi8(static_cast<char>(0u - a));
    const __m256i bv = _mm256_set1_epi8(static_cast<char>(b));
    const __m256i sv = _mm256_set1_epi8(static_cast<char>(1 - 2 * static_cast<int32_t>(signs & 1)));
    for (int h = 0; h < 2; ++h) {
      // c[i] = c[b]: the entry at position b (if any) moves to i; then (b, s) into the free slot.
      const __m256i move = _mm256_and_si256(_mm256_cmpeq_epi8(pos[h], bv), am);
      const __m256i put = _mm256_and_si256(_mm256_cmpeq_epi8(slot_idx[h], slotv), am);
      pos[h] = _mm256_blendv_epi8(_mm256_blendv_epi8(pos[h], iv, move), bv, put);
      sgn[h] = _mm256_blendv_epi8(sgn[h], sv, put);
    }
    iv = _mm256_sub_epi8(iv, am);
    slotv = _mm256_sub_epi8(slotv, am);
    i += a;
    signs >>= a;
  }
  for (int h = 0; h < 2; ++h) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pos_io + 32 * h), pos[h]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sgn_io + 32 * h), sgn[h]);
  }
  i_io = i;
  signs_io = signs;
}

void SampleInBallExpand(Poly& c, const uint8_t* pos, const int8_t* sgn, int used) {
  const __m256i lane = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                        17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  __m256i idx[8], out[8];
  for (int k = 0; k < 8; ++k) {
    idx[k] = _mm256_add_epi8(lane, _mm256_set1_epi8(static_cast<char>(32 * k)));
    out[k] = _mm256_setzero_si256();
  }
  for (int t = 0; t < used; ++t) {
    const __m256i p = _mm256_set1_epi8(static_cast<char>(pos[t]));
    const __m256i v = _mm256_set1_epi8(sgn[t]);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      out[k] = _mm256_or_si256(out[k], _mm256_and_si256(_mm256_cmpeq_epi8(idx[k], p), v));
    }
  }
  for (int k = 0; k < 8; ++k) {
    int32_t* r = c.coeffs + 32 * k;
    const __m128i lo = _mm256_castsi256_si128(out[k]);
    const __m128i hi = _mm256_extracti128_si256(out[k], 1);
    _mm256_store_si256(reinterpret_cast<__m256i*>(r), _mm256_cvtepi8_epi32(lo));
    _mm256_store_si256(reinterpret_cast<__m256i*>(r + 8),
                       _mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(r + 16), _mm256_cvtepi8_epi32(hi));
    _mm256_store_si256(reinterpret_cast<__m256i*>(r + 24),
                       _mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
  }
}

}  // namespace pqcd::kernels::mldsa::avx2
