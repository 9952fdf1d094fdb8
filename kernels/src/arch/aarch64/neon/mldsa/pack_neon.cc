// ML-DSA bit packing with NEON (FIPS 204 §7.1; the portable PackCoeffs / UnpackCoeffs of
// mldsa/poly.cc): a group of C coefficients (4, 8 or 16: the most whose C·B bits fill at most 16
// whole bytes) of B bits each is one 16-byte vector of packed bytes.
//  * Unpack: one TBL per four coefficients gathers the four bytes that hold each coefficient into
//    its 32-bit lane, USHL shifts each lane right by its bit offset within its first byte, AND
//    keeps B bits; then the coefficient map (e.g. gamma1 - v) lane by lane.
//  * Pack: the map, USHL shifts each lane left by that bit offset, and two TBLs (four for 3-bit
//    fields) over the group's lanes pick every output byte from the coefficients that overlap it;
//    ORR.
// All tables and shifts are compile-time constants of the layout: the lanes, bytes and indices
// touched depend only on B and the position, never on a coefficient value, so packing secret
// data (t0, s1, s2, z before it is public) is constant time by construction.
// Loads and stores are whole 16-byte vectors while they stay inside the encoding (a store's bytes
// past its group are rewritten by the next group); the last groups load and store exactly their
// bytes lane by lane (no stack copy of possibly secret bytes), so nothing is read or written past
// the encoding.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "arch/aarch64/neon/mldsa/mldsa_neon.h"

namespace pqcd::kernels::mldsa::neon {
namespace {

template <int B>
constexpr int GroupCoeffs() {
  return 16 * B <= 128 && (16 * B) % 8 == 0 ? 16 : 8 * B <= 128 && (8 * B) % 8 == 0 ? 8 : 4;
}

template <int B>
struct Layout {
  static constexpr int kC = GroupCoeffs<B>();  // coefficients per group
  static constexpr int kVecs = kC / 4;
  static constexpr int kBytes = kC * B / 8;  // packed bytes per group
  static constexpr int kGroups = kN / kC;
  // Groups whose 16-byte load / store stays inside the 32·B-byte encoding.
  static constexpr int kSafe = kGroups - (16 + kBytes - 1) / kBytes + 1;
  static_assert(kC * B % 8 == 0 && kBytes <= 16 && B + 7 <= 32);
  uint8_t unpack_idx[kVecs][16];   // lane j: bytes first(j) .. first(j) + 3 (0xff past 16)
  int32_t unpack_shift[kVecs][4];  // -(j·B mod 8)
  int32_t pack_shift[kVecs][4];    // j·B mod 8
  // The most coefficients that overlap one byte (2 for B >= 4, 4 for B = 3).
  static constexpr int kTables = [] {
    int most = 0;
    for (int k = 0; k < kBytes; ++k) {
      int n = 0;
      for (int j = 0; j < kC; ++j) n += j * B / 8 <= k && k <= (j * B + B - 1) / 8;
      most = n > most ? n : most;
    }
    return most;
  }();
  uint8_t pack_idx[kTables][16];  // per output byte: the n-th overlapping lane byte (0xff: none)
};

template <int B>
consteval Layout<B> MakeLayout() {
  using L = Layout<B>;
  L l{};
  for (int j = 0; j < L::kC; ++j) {
    const int first = j * B / 8, s = j * B % 8;
    for (int t = 0; t < 4; ++t) {
      l.unpack_idx[j / 4][4 * (j % 4) + t] =
          static_cast<uint8_t>(first + t < 16 ? first + t : 0xff);
    }
    l.unpack_shift[j / 4][j % 4] = -s;
    l.pack_shift[j / 4][j % 4] = s;
  }
  for (auto& t : l.pack_idx) {
    for (uint8_t& i : t) i = 0xff;
  }
  for (int k = 0; k < L::kBytes; ++k) {
    int n = 0;
    for (int j = 0; j < L::kC; ++j) {
      const int first = j * B / 8, last = (j * B + B - 1) / 8;
      if (k < first || k > last) continue;
      if (n >= L::kTables) throw "too many coefficients in one byte";
      l.pack_idx[n++][k] = static_cast<uint8_t>(4 * j + (k - first));
    }
  }
  return l;
}
template <int B>
constexpr Layout<B> kLayout = MakeLayout<B>();

// Exactly N bytes (N < 16) from p into the low lanes, the rest zero.
template <size_t... I>
inline uint8x16_t SetLanes([[maybe_unused]] uint8x16_t v, [[maybe_unused]] const uint8_t* p,
                           std::index_sequence<I...>) {
  ((v = vsetq_lane_u8(p[I], v, static_cast<int>(I))), ...);
  return v;
}
template <size_t Off, size_t... I>
inline uint8x16_t SetLanesFrom([[maybe_unused]] uint8x16_t v, [[maybe_unused]] const uint8_t* p,
                               std::index_sequence<I...>) {
  ((v = vsetq_lane_u8(p[Off + I], v, static_cast<int>(Off + I))), ...);
  return v;
}
template <int N>
inline uint8x16_t LoadN(const uint8_t* p) {
  if constexpr (N >= 8) {
    const uint8x16_t v = vcombine_u8(vld1_u8(p), vdup_n_u8(0));
    return SetLanesFrom<8>(v, p, std::make_index_sequence<N - 8>());
  } else {
    return SetLanes(vdupq_n_u8(0), p, std::make_index_sequence<N>());
  }
}
template <size_t Off, size_t... I>
inline void GetLanes([[maybe_unused]] uint8_t* p, [[maybe_unused]] uint8x16_t v,
                     std::index_sequence<I...>) {
  ((p[Off + I] = vgetq_lane_u8(v, static_cast<int>(Off + I))), ...);
}
template <int N>
inline void StoreN(uint8_t* p, uint8x16_t v) {
  if constexpr (N >= 8) {
    vst1_u8(p, vget_low_u8(v));
    GetLanes<8>(p, v, std::make_index_sequence<N - 8>());
  } else {
    GetLanes<0>(p, v, std::make_index_sequence<N>());
  }
}

// Unpack: map(v) for each B-bit field v (uint32x4_t -> int32x4_t).
template <int B, class Map>
inline void UnpackGroup(int32_t* dst, uint8x16_t bytes, Map& map) {
  constexpr const Layout<B>& L = kLayout<B>;
  const uint32x4_t mask = vdupq_n_u32((uint32_t{1} << B) - 1);
  for (int v = 0; v < Layout<B>::kVecs; ++v) {
    const uint32x4_t g = vreinterpretq_u32_u8(vqtbl1q_u8(bytes, vld1q_u8(L.unpack_idx[v])));
    const uint32x4_t f = vandq_u32(vshlq_u32(g, vld1q_s32(L.unpack_shift[v])), mask);
    vst1q_s32(dst + 4 * v, map(f));
  }
}
template <int B, class Map>
inline void Unpack(Poly& a, const uint8_t* in, Map map) {
  using L = Layout<B>;
  int g = 0;
  for (; g < L::kSafe; ++g) {
    UnpackGroup<B>(a.coeffs + g * L::kC, vld1q_u8(in + g * L::kBytes), map);
  }
  for (; g < L::kGroups; ++g) {
    UnpackGroup<B>(a.coeffs + g * L::kC, LoadN<L::kBytes>(in + g * L::kBytes), map);
  }
}

// Pack: map(c) for each coefficient (int32x4_t -> uint32x4_t in [0, 2^B)).
template <int B, class Map>
inline uint8x16_t PackGroup(const int32_t* src, Map& map) {
  constexpr const Layout<B>& L = kLayout<B>;
  constexpr int kVecs = Layout<B>::kVecs;
  uint8x16_t y[kVecs];
  for (int v = 0; v < kVecs; ++v) {
    y[v] = vreinterpretq_u8_u32(vshlq_u32(map(vld1q_s32(src + 4 * v)), vld1q_s32(L.pack_shift[v])));
  }
  uint8x16_t r = vdupq_n_u8(0);
  for (int k = 0; k < Layout<B>::kTables; ++k) {
    const uint8x16_t idx = vld1q_u8(L.pack_idx[k]);
    if constexpr (kVecs == 1) {
      r = vorrq_u8(r, vqtbl1q_u8(y[0], idx));
    } else if constexpr (kVecs == 2) {
      r = vorrq_u8(r, vqtbl2q_u8(uint8x16x2_t{{y[0], y[1]}}, idx));
    } else {
      r = vorrq_u8(r, vqtbl4q_u8(uint8x16x4_t{{y[0], y[1], y[2], y[3]}}, idx));
    }
  }
  return r;
}
template <int B, class Map>
inline void Pack(uint8_t* out, const Poly& a, Map map) {
  using L = Layout<B>;
  int g = 0;
  for (; g < L::kSafe; ++g) vst1q_u8(out + g * L::kBytes, PackGroup<B>(a.coeffs + g * L::kC, map));
  for (; g < L::kGroups; ++g) {
    StoreN<L::kBytes>(out + g * L::kBytes, PackGroup<B>(a.coeffs + g * L::kC, map));
  }
}

struct Identity {
  int32x4_t operator()(uint32x4_t v) const { return vreinterpretq_s32_u32(v); }
  uint32x4_t operator()(int32x4_t v) const { return vreinterpretq_u32_s32(v); }
};
// c -> K - c (pack), v -> K - v (unpack): the offset encodings of eta, t0 and z.
template <int32_t K>
struct Offset {
  int32x4_t operator()(uint32x4_t v) const {
    return vsubq_s32(vdupq_n_s32(K), vreinterpretq_s32_u32(v));
  }
  uint32x4_t operator()(int32x4_t v) const {
    return vreinterpretq_u32_s32(vsubq_s32(vdupq_n_s32(K), v));
  }
};

template <int Eta>
uint32_t UnpackEtaT(Poly& s, const uint8_t* in) {
  constexpr int kBits = Eta == 2 ? 3 : 4;
  uint32x4_t bad = vdupq_n_u32(0);
  const uint32x4_t two_eta = vdupq_n_u32(2 * Eta);
  Unpack<kBits>(s, in, [&bad, two_eta](uint32x4_t v) {
    bad = vorrq_u32(bad, vcgtq_u32(v, two_eta));  // v > 2 eta: all ones
    return vsubq_s32(vdupq_n_s32(Eta), vreinterpretq_s32_u32(v));
  });
  return vmaxvq_u32(bad);
}

}  // namespace

void PackT1(uint8_t* out, const Poly& t1) {
  Pack<10>(out, t1, Identity{});
}
void UnpackT1(Poly& t1, const uint8_t* in) {
  Unpack<10>(t1, in, Identity{});
}
void UnpackT1Shifted(Poly& t, const uint8_t* in) {
  Unpack<10>(t, in, [](uint32x4_t v) { return vreinterpretq_s32_u32(vshlq_n_u32(v, kD)); });
}
void PackEta2(uint8_t* out, const Poly& s) {
  Pack<3>(out, s, Offset<2>{});
}
void PackEta4(uint8_t* out, const Poly& s) {
  Pack<4>(out, s, Offset<4>{});
}
uint32_t UnpackEta2(Poly& s, const uint8_t* in) {
  return UnpackEtaT<2>(s, in);
}
uint32_t UnpackEta4(Poly& s, const uint8_t* in) {
  return UnpackEtaT<4>(s, in);
}
void PackT0(uint8_t* out, const Poly& t0) {
  Pack<kD>(out, t0, Offset<(1 << (kD - 1))>{});
}
void UnpackT0(Poly& t0, const uint8_t* in) {
  Unpack<kD>(t0, in, Offset<(1 << (kD - 1))>{});
}
void PackZ17(uint8_t* out, const Poly& z) {
  Pack<18>(out, z, Offset<(1 << 17)>{});
}
void PackZ19(uint8_t* out, const Poly& z) {
  Pack<20>(out, z, Offset<(1 << 19)>{});
}
void UnpackZ17(Poly& z, const uint8_t* in) {
  Unpack<18>(z, in, Offset<(1 << 17)>{});
}
void UnpackZ19(Poly& z, const uint8_t* in) {
  Unpack<20>(z, in, Offset<(1 << 19)>{});
}
void PackW1Small(uint8_t* out, const Poly& w1) {
  Pack<6>(out, w1, Identity{});
}
void PackW1Large(uint8_t* out, const Poly& w1) {
  Pack<4>(out, w1, Identity{});
}

}  // namespace pqcd::kernels::mldsa::neon
