// Keccak-f[1600] on one state in five ZMM registers (AVX-512F; lanes 5..7 of each register carry
// junk that never reaches lanes 0..4). Built with the avx512 flags; reached only through the
// avx512 Keccak table (backend.cc here).
//
// The state alternates between two layouts within a round:
//   rows:    register y holds row y, lane x = word 5y + x   (θ's column parities are three-way
//            XORs of whole registers; ρ is one vprolvq per register);
//   columns: register x holds column x, lane y = word 5y + x (χ is one vpternlogq per register:
//            0xd2 = a ^ (~b & c) of columns x, x+1, x+2).
// π moves word (x, y) to (y, 2x + 3y): the word stays in register y (rows in, columns out) and
// only changes lane, so π is one single-source vpermq per register. After χ and ι the columns
// are transposed back into rows: seven two-source or masked permutes and two blends build the
// pieces, five masked vpermi2q assemble the rows (the words a row takes from neither table ride in
// its index register). 19 permutes per round in all.
//
// Every lane is touched by the same instructions whatever the data; the only memory reads are the
// state, the constant tables and the round constant of the round counter.
#include <immintrin.h>

#include <cstdint>

#include "arch/x86_64/avx512/keccak/keccak_avx512.h"
#include "keccak/constants.h"

// GCC 12 reports _mm512_undefined_epi32() inside its own permute and rotate intrinsics as
// uninitialized (a false positive in its header; keccak_x8_avx512.cc has the same).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace pqcd::kernels {
namespace {

// The index and rotation tables, one 8-lane vector each (lanes 5..7 unused, kept at 0).
struct Tables {
  alignas(64) uint64_t rho[5][8];        // ρ offsets of row y, lane x
  alignas(64) uint64_t pi[5][8];         // π: lane L of column y takes lane (3L + y) % 5 of row y
  alignas(64) uint64_t prev[8];          // lane x takes lane x - 1 (mod 5)
  alignas(64) uint64_t next[8];          // lane x takes lane x + 1 (mod 5)
  alignas(64) uint64_t pair01[8];        // (c0[0], c1[0], c0[1], c1[1], ..., c0[3], c1[3])
  alignas(64) uint64_t last01[8];        // lanes 0, 1: c0[4], c1[4]
  alignas(64) uint64_t row_index[5][8];  // row y: lanes 0..3 for the final two-source permute,
                                         // lane 4 = y (picks e4[y] in the masked vpermq)
};

constexpr Tables MakeTables() {
  Tables t{};
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 5; ++x) {
      t.rho[y][x] = static_cast<uint64_t>(keccak::kRhoOffsets[5 * y + x]);
      t.pi[y][x] = static_cast<uint64_t>((3 * x + y) % 5);
    }
  }
  for (int x = 0; x < 5; ++x) {
    t.prev[x] = static_cast<uint64_t>((x + 4) % 5);
    t.next[x] = static_cast<uint64_t>((x + 1) % 5);
  }
  for (int y = 0; y < 4; ++y) {
    t.pair01[2 * y] = static_cast<uint64_t>(y);          // first source, lane y
    t.pair01[2 * y + 1] = static_cast<uint64_t>(8 + y);  // second source, lane y
  }
  t.last01[0] = 4;
  t.last01[1] = 8 + 4;
  // Row y < 4 from (pairs of columns 0/1, pairs of columns 2/3): lanes 2y, 2y + 1 of each. Row 4
  // from (column 2, column 3): lane 4 of each into lanes 2, 3 (lanes 0, 1 and 4 hold data).
  for (int y = 0; y < 4; ++y) {
    t.row_index[y][0] = static_cast<uint64_t>(2 * y);
    t.row_index[y][1] = static_cast<uint64_t>(2 * y + 1);
    t.row_index[y][2] = static_cast<uint64_t>(8 + 2 * y);
    t.row_index[y][3] = static_cast<uint64_t>(8 + 2 * y + 1);
    t.row_index[y][4] = static_cast<uint64_t>(y);
  }
  t.row_index[4][2] = 4;
  t.row_index[4][3] = 8 + 4;
  return t;
}

constexpr Tables kT = MakeTables();
constexpr const auto& kRc = keccak::kRoundConstants;
constexpr __mmask8 kRowLanes = 0x1f;

__attribute__((always_inline)) inline __m512i Ld(const uint64_t (&v)[8]) {
  return _mm512_load_si512(v);
}
__attribute__((always_inline)) inline __m512i Xor3(__m512i a, __m512i b, __m512i c) {
  return _mm512_ternarylogic_epi64(a, b, c, 0x96);
}
__attribute__((always_inline)) inline __m512i Chi(__m512i a, __m512i b, __m512i c) {
  return _mm512_ternarylogic_epi64(a, b, c, 0xd2);
}

}  // namespace

void KeccakF1600x1Avx512(uint64_t st[25]) {
  __m512i r0 = _mm512_maskz_loadu_epi64(kRowLanes, st + 0);
  __m512i r1 = _mm512_maskz_loadu_epi64(kRowLanes, st + 5);
  __m512i r2 = _mm512_maskz_loadu_epi64(kRowLanes, st + 10);
  __m512i r3 = _mm512_maskz_loadu_epi64(kRowLanes, st + 15);
  __m512i r4 = _mm512_maskz_loadu_epi64(kRowLanes, st + 20);
  const __m512i prev = Ld(kT.prev), next = Ld(kT.next);
  const __m512i pair01 = Ld(kT.pair01), last01 = Ld(kT.last01);
  for (int round = 0; round < 24; ++round) {
    // θ: D[x] = C[x - 1] ^ rot(C[x + 1], 1), XORed into every row.
    const __m512i c = Xor3(Xor3(r0, r1, r2), r3, r4);
    const __m512i cm = _mm512_permutexvar_epi64(prev, c);
    const __m512i cp = _mm512_rol_epi64(_mm512_permutexvar_epi64(next, c), 1);
    // θ's D, then ρ (per-lane rotation), then π (rows become columns).
    const __m512i c0 =
        _mm512_permutexvar_epi64(Ld(kT.pi[0]), _mm512_rolv_epi64(Xor3(r0, cm, cp), Ld(kT.rho[0])));
    const __m512i c1 =
        _mm512_permutexvar_epi64(Ld(kT.pi[1]), _mm512_rolv_epi64(Xor3(r1, cm, cp), Ld(kT.rho[1])));
    const __m512i c2 =
        _mm512_permutexvar_epi64(Ld(kT.pi[2]), _mm512_rolv_epi64(Xor3(r2, cm, cp), Ld(kT.rho[2])));
    const __m512i c3 =
        _mm512_permutexvar_epi64(Ld(kT.pi[3]), _mm512_rolv_epi64(Xor3(r3, cm, cp), Ld(kT.rho[3])));
    const __m512i c4 =
        _mm512_permutexvar_epi64(Ld(kT.pi[4]), _mm512_rolv_epi64(Xor3(r4, cm, cp), Ld(kT.rho[4])));
    // χ on columns, ι on word 0 (lane 0 of column 0).
    const __m512i rc =
        _mm512_zextsi128_si512(_mm_cvtsi64_si128(static_cast<long long>(kRc[round])));
    const __m512i e0 = _mm512_xor_si512(Chi(c0, c1, c2), rc);
    const __m512i e1 = Chi(c1, c2, c3);
    const __m512i e2 = Chi(c2, c3, c4);
    const __m512i e3 = Chi(c3, c4, c0);
    const __m512i e4 = Chi(c4, c0, c1);
    // Columns back to rows. p01/p23: lanes 0..3 of columns 0, 1 (2, 3) interleaved; q01: lane 4
    // of columns 0, 1; i_y: row y's index vector with lane 4 = e4[y] (kept by the masked
    // vpermi2q).
    const __m512i p01 = _mm512_permutex2var_epi64(e0, pair01, e1);
    const __m512i p23 = _mm512_permutex2var_epi64(e2, pair01, e3);
    const __m512i q01 = _mm512_permutex2var_epi64(e0, last01, e1);
    // The index vector carries y in lane 4, so it also selects e4[y] there.
    auto with_e4 = [e4](int y) {
      const __m512i ix = Ld(kT.row_index[y]);
      return _mm512_mask_permutexvar_epi64(ix, 0x10, ix, e4);
    };
    const __m512i i0 = with_e4(0), i1 = with_e4(1), i2 = with_e4(2), i3 = with_e4(3);
    // Row 4: e0[4], e1[4] (q01) and e4[4] (in place) are blended into its index vector.
    const __m512i i4 =
        _mm512_mask_blend_epi64(0x03, _mm512_mask_blend_epi64(0x10, Ld(kT.row_index[4]), e4), q01);
    r0 = _mm512_mask2_permutex2var_epi64(p01, i0, 0x0f, p23);
    r1 = _mm512_mask2_permutex2var_epi64(p01, i1, 0x0f, p23);
    r2 = _mm512_mask2_permutex2var_epi64(p01, i2, 0x0f, p23);
    r3 = _mm512_mask2_permutex2var_epi64(p01, i3, 0x0f, p23);
    r4 = _mm512_mask2_permutex2var_epi64(e2, i4, 0x0c, e3);
  }
  _mm512_mask_storeu_epi64(st + 0, kRowLanes, r0);
  _mm512_mask_storeu_epi64(st + 5, kRowLanes, r1);
  _mm512_mask_storeu_epi64(st + 10, kRowLanes, r2);
  _mm512_mask_storeu_epi64(st + 15, kRowLanes, r3);
  _mm512_mask_storeu_epi64(st + 20, kRowLanes, r4);
}

}  // namespace pqcd::kernels
