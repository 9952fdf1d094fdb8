// Start-up check of an ML-DSA backend table against the portable kernels (mldsa/backend.h): every
// hook a table sets to something other than its portable kernel runs on fixed pseudo-random
// inputs inside the hook's contract, and its outputs (polynomials, bytes and return values) must
// equal the portable kernel's exactly. isa_selftest.cc calls it (through SelfCheck in backend.cc)
// before a SIMD backend is first selected, beside the Keccak and SM3 checks: a miscompiled kernel
// or a faulty unit makes the whole ISA unavailable instead of computing wrong signatures. The
// differential tests (tests/kernels/test_mldsa_avx2.cc) cover the same hooks on edge and 10,000
// random inputs; this is the quick version every process runs once.
#include <cstdint>
#include <cstring>
#include <memory>

#include "mldsa/backend.h"
#include "mldsa/poly.h"

namespace pqcd::kernels::mldsa {
namespace {

constexpr int32_t kG2Small = (kQ - 1) / 88;
constexpr int32_t kG2Large = (kQ - 1) / 32;

struct Gen {
  uint64_t s;
  uint32_t Next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 32);
  }
  // Uniform-ish in [lo, hi] (modulo bias is irrelevant here).
  int32_t In(int64_t lo, int64_t hi) {
    const uint64_t r = (static_cast<uint64_t>(Next()) << 32) | Next();
    return static_cast<int32_t>(lo + static_cast<int64_t>(r % static_cast<uint64_t>(hi - lo + 1)));
  }
  void Fill(Poly& p, int64_t lo, int64_t hi) {
    for (int32_t& c : p.coeffs) c = In(lo, hi);
  }
  void Bytes(uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(Next() >> 24);
  }
};

// What a hook call produced: polynomials, bytes and a scalar.
struct Out {
  Poly p[3];
  uint8_t b[1024];
  int64_t r;
  uint32_t u;
  uint64_t w;
};

// The check's inputs and outputs, on the heap (~24 KiB: any thread may be the one that runs the
// detection) and per call (tests call TableMatchesPortable too).
struct Scratch {
  Out ref, got, state;
  Poly in[8], in2[8];
};

// Runs call(table, out) with the portable table and with `be` on identically pre-filled outputs
// and compares everything (a write past an encoding shows as a difference too).
template <class Call>
bool Same(Scratch& sc, const Backend& be, Call&& call) {
  std::memset(&sc.ref, 0x5a, sizeof(sc.ref));
  std::memset(&sc.got, 0x5a, sizeof(sc.got));
  call(kPortable, sc.ref);
  call(be, sc.got);
  return std::memcmp(&sc.ref, &sc.got, sizeof(sc.ref)) == 0;
}

}  // namespace

bool TableMatchesPortable(const Backend& be) {
  const Backend& ref = kPortable;
  Gen g{0x6d6c647361ull};
  bool ok = true;
  const auto sc = std::make_unique<Scratch>();
  Poly(&in)[8] = sc->in;
  Poly(&in2)[8] = sc->in2;
  uint8_t bytes[1024 + 64];
  auto fill_all = [&](int64_t lo, int64_t hi) {
    for (Poly& p : in) g.Fill(p, lo, hi);
    for (Poly& p : in2) g.Fill(p, lo, hi);
  };
#define PQCD_CHECK(hook, ...)                                            \
  if (be.hook != ref.hook) {                                             \
    ok &= Same(*sc, be, [&](const Backend& t, Out& o) { __VA_ARGS__; }); \
  }

  // ---- Arithmetic ----
  fill_all(-(kQ - 1), kQ - 1);
  PQCD_CHECK(ntt, o.p[0] = in[0]; t.ntt(o.p[0]));
  PQCD_CHECK(pointwise_montgomery, t.pointwise_montgomery(o.p[0], in[0], in2[0]));
  PQCD_CHECK(pointwise_acc_montgomery, t.pointwise_acc_montgomery(o.p[0], in, in2, 7));
  PQCD_CHECK(pointwise_acc_sub_montgomery,
             t.pointwise_acc_sub_montgomery(o.p[0], in, in2, 6, in[7], in2[7]));
  PQCD_CHECK(caddq, o.p[0] = in[1]; t.caddq(o.p[0]));
  PQCD_CHECK(decompose_pack_w1_small, t.decompose_pack_w1_small(o.b, o.p[0], o.p[1], in[2]));
  PQCD_CHECK(decompose_pack_w1_large, t.decompose_pack_w1_large(o.b, o.p[0], o.p[1], in[2]));
  for (int32_t& c : in2[3].coeffs) c = static_cast<int32_t>(g.Next() & 1);  // hints
  PQCD_CHECK(use_hint_pack_w1_small, t.use_hint_pack_w1_small(o.b, in[3], in2[3]));
  PQCD_CHECK(use_hint_pack_w1_large, t.use_hint_pack_w1_large(o.b, in[3], in2[3]));
  g.Fill(in[4], -(1 << 20), 1 << 20);
  PQCD_CHECK(split_low9_add_norm,
             o.r = t.split_low9_add_norm(o.p[0], o.p[1], in[1], in[4], (1 << 19) - 17));
  g.Fill(in[5], -kQ, kQ);
  PQCD_CHECK(invntt_to_mont, o.p[0] = in[5]; t.invntt_to_mont(o.p[0]));
  g.Fill(in[6], -(int64_t{1} << 31), (int64_t{1} << 31) - (1 << 22) - 1);
  PQCD_CHECK(reduce32, o.p[0] = in[6]; t.reduce32(o.p[0]));
  g.Fill(in[6], -(1 << 30) + 1, (1 << 30) - 1);
  g.Fill(in2[6], -(1 << 30) + 1, (1 << 30) - 1);
  PQCD_CHECK(add, t.add(o.p[0], in[6], in2[6]));
  PQCD_CHECK(sub, t.sub(o.p[0], in[6], in2[6]));
  PQCD_CHECK(split_low9, t.split_low9(o.p[0], o.p[1], in[6]));
  PQCD_CHECK(exceeds_norm,
             o.u = t.exceeds_norm(in[4], 1 << 19) ^ (t.exceeds_norm(in[4], 1 << 21) << 1));
  g.Fill(in[7], 0, (1 << 10) - 1);
  PQCD_CHECK(shift_left_d, o.p[0] = in[7]; t.shift_left_d(o.p[0]));
  PQCD_CHECK(pack_t1, t.pack_t1(o.b, in[7]));

  // ---- Rounding ----
  g.Fill(in[0], 0, kQ - 1);
  in[0].coeffs[0] = kQ - 1;  // Decompose's corner case
  PQCD_CHECK(power2round, t.power2round(o.p[0], o.p[1], in[0]));
  PQCD_CHECK(decompose_small, t.decompose_small(o.p[0], o.p[1], in[0]));
  PQCD_CHECK(decompose_large, t.decompose_large(o.p[0], o.p[1], in[0]));
  PQCD_CHECK(use_hint_small, t.use_hint_small(o.p[0], in[0], in2[3]));
  PQCD_CHECK(use_hint_large, t.use_hint_large(o.p[0], in[0], in2[3]));
  g.Fill(in[1], -kG2Small - 2, kG2Small + 2);
  g.Fill(in[2], 0, (kQ - 1) / (2 * kG2Small) - 1);
  PQCD_CHECK(make_hint_small, o.u = t.make_hint_small(o.p[0], in[1], in[2]));
  g.Fill(in[1], -kG2Large - 2, kG2Large + 2);
  g.Fill(in[2], 0, (kQ - 1) / (2 * kG2Large) - 1);
  PQCD_CHECK(make_hint_large, o.u = t.make_hint_large(o.p[0], in[1], in[2]));
  g.Fill(in[3], -(kQ - 1), kQ - 1);
  PQCD_CHECK(power2round_pack_t1, t.power2round_pack_t1(o.b, o.p[0], in[0], in[3]));
  g.Fill(in[4], 0, (kQ - 1) / (2 * kG2Small) - 1);
  PQCD_CHECK(pack_w1_small, t.pack_w1_small(o.b, in[4]));
  g.Fill(in[4], 0, (kQ - 1) / (2 * kG2Large) - 1);
  PQCD_CHECK(pack_w1_large, t.pack_w1_large(o.b, in[4]));

  // ---- Packing ----
  g.Fill(in[0], -2, 2);
  g.Fill(in[1], -4, 4);
  g.Fill(in[2], -(1 << 12) + 1, 1 << 12);
  g.Fill(in[3], -(1 << 17) + 1, 1 << 17);
  g.Fill(in[4], -(1 << 19) + 1, 1 << 19);
  PQCD_CHECK(pack_eta2, t.pack_eta2(o.b, in[0]));
  PQCD_CHECK(pack_eta4, t.pack_eta4(o.b, in[1]));
  PQCD_CHECK(pack_t0, t.pack_t0(o.b, in[2]));
  PQCD_CHECK(pack_z17, t.pack_z17(o.b, in[3]));
  PQCD_CHECK(pack_z19, t.pack_z19(o.b, in[4]));
  g.Bytes(bytes, sizeof(bytes));
  PQCD_CHECK(unpack_t1, t.unpack_t1(o.p[0], bytes));
  PQCD_CHECK(unpack_t1_shifted, t.unpack_t1_shifted(o.p[0], bytes));
  PQCD_CHECK(unpack_eta2, o.u = t.unpack_eta2(o.p[0], bytes));
  PQCD_CHECK(unpack_eta4, o.u = t.unpack_eta4(o.p[0], bytes));
  PQCD_CHECK(unpack_t0, t.unpack_t0(o.p[0], bytes));
  PQCD_CHECK(unpack_z17, t.unpack_z17(o.p[0], bytes));
  PQCD_CHECK(unpack_z19, t.unpack_z19(o.p[0], bytes));

  // ---- Sampling (outputs beyond the returned count are scratch: compared only up to it) ----
  auto reject = [&](int (*hook)(int32_t*, int, const uint8_t*, size_t), size_t len, Out& o) {
    const int n = hook(o.p[0].coeffs, 3, bytes, len);
    o.r = n;
    for (int k = n; k < kN; ++k) o.p[0].coeffs[k] = 0;
  };
  PQCD_CHECK(reject_uniform, reject(t.reject_uniform, 3 * 168, o));
  PQCD_CHECK(reject_eta2, reject(t.reject_eta2, 136, o));
  PQCD_CHECK(reject_eta4, reject(t.reject_eta4, 136, o));
  constexpr int kTau = 49;
  constexpr uint32_t kFirst = kN - kTau;
  auto steps = [&](const Backend& t, Out& o) {
    uint8_t* pos = o.b;
    int8_t* sgn = reinterpret_cast<int8_t*>(o.b + kBallSlots);
    std::memset(o.b, 0, 2 * kBallSlots);
    uint32_t i = kFirst;
    uint64_t signs = 0x0123456789abcdefull;
    t.sample_in_ball_steps(pos, sgn, i, kFirst, signs, bytes, 96);
    o.u = i;
    o.w = signs;
  };
  PQCD_CHECK(sample_in_ball_steps, steps(t, o));
  if (be.sample_in_ball_expand != ref.sample_in_ball_expand) {
    Out& state = sc->state;
    steps(ref, state);  // a reachable list: the portable steps' output
    const int used = static_cast<int>(state.u - kFirst);
    ok &= Same(*sc, be, [&](const Backend& t, Out& o) {
      t.sample_in_ball_expand(o.p[0], state.b,
                              reinterpret_cast<const int8_t*>(state.b + kBallSlots), used);
    });
  }
#undef PQCD_CHECK
  return ok;
}

}  // namespace pqcd::kernels::mldsa
