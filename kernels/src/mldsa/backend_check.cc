// Start-up check of an ML-DSA backend table against the portable kernels (mldsa/backend.h): every
// hook a table sets to something other than its portable kernel runs on fixed pseudo-random
// inputs inside the hook's contract, and its outputs (polynomials, bytes and return values) must
// equal the portable kernel's exactly. isa_selftest.cc calls it (through SelfCheck in backend.cc)
// before a SIMD backend is first selected, beside the Keccak and SM3 checks: a miscompiled kernel
// or a faulty unit makes the whole ISA unavailable instead of computing wrong signatures. The
// differential tests (tests/kernels/test_mldsa_avx2.cc) cover the same hooks on edge and 10,000
// random inputs; this is the quick version every process runs once. It walks the hook list
// (mldsa/hooks.def), so a new hook is checked as soon as it has its case in CheckHook, and cannot
// be added without one.
#include <cstdint>
#include <cstring>
#include <memory>

#include "hook_check.h"
#include "mldsa/backend.h"
#include "mldsa/poly.h"

namespace pqcd::kernels::mldsa {
namespace {

constexpr int32_t kG2Small = (kQ - 1) / 88;
constexpr int32_t kG2Large = (kQ - 1) / 32;

using hook_check::Gen;

// What a hook call produced: polynomials, bytes and a scalar.
struct Out {
  Poly p[3];
  uint8_t b[1024];
  int64_t r;
  uint32_t u;
  uint64_t w;
};

// The check's inputs and outputs, on the heap (~60 KiB: any thread may be the one that runs the
// detection) and per call (tests call TableMatchesPortable too). The inputs are read-only once
// filled, one set per input range; each hook's check copies what its kernel modifies.
struct Scratch {
  Out ref, got, state;
  Poly in[8], in2[8];                           // |c| < q
  Poly hint;                                    // {0, 1}
  Poly y20;                                     // |c| <= 2^20
  Poly qq;                                      // [-q, q]
  Poly r32;                                     // [-2^31, 2^31 - 2^22 - 1]
  Poly w30, w30b;                               // |c| < 2^30
  Poly t10;                                     // [0, 2^10)
  Poly std;                                     // [0, q), with Decompose's corner case q - 1
  Poly a0_small, a1_small, a0_large, a1_large;  // make_hint's inputs
  Poly w1_small, w1_large;                      // [0, (q-1)/(2 gamma2))
  Poly eta2, eta4, t0, z17, z19;                // the packings' ranges
  uint8_t bytes[1024 + 64];
};

void Fill(Scratch& sc) {
  Gen g{0x6d6c647361ull};
  for (Poly& p : sc.in) g.Fill(p.coeffs, -(kQ - 1), kQ - 1);
  for (Poly& p : sc.in2) g.Fill(p.coeffs, -(kQ - 1), kQ - 1);
  for (int32_t& c : sc.hint.coeffs) c = static_cast<int32_t>(g.Next() & 1);
  g.Fill(sc.y20.coeffs, -(1 << 20), 1 << 20);
  g.Fill(sc.qq.coeffs, -kQ, kQ);
  g.Fill(sc.r32.coeffs, -(int64_t{1} << 31), (int64_t{1} << 31) - (1 << 22) - 1);
  g.Fill(sc.w30.coeffs, -(1 << 30) + 1, (1 << 30) - 1);
  g.Fill(sc.w30b.coeffs, -(1 << 30) + 1, (1 << 30) - 1);
  g.Fill(sc.t10.coeffs, 0, (1 << 10) - 1);
  g.Fill(sc.std.coeffs, 0, kQ - 1);
  sc.std.coeffs[0] = kQ - 1;  // Decompose's corner case
  g.Fill(sc.a0_small.coeffs, -kG2Small - 2, kG2Small + 2);
  g.Fill(sc.a1_small.coeffs, 0, (kQ - 1) / (2 * kG2Small) - 1);
  g.Fill(sc.a0_large.coeffs, -kG2Large - 2, kG2Large + 2);
  g.Fill(sc.a1_large.coeffs, 0, (kQ - 1) / (2 * kG2Large) - 1);
  g.Fill(sc.w1_small.coeffs, 0, (kQ - 1) / (2 * kG2Small) - 1);
  g.Fill(sc.w1_large.coeffs, 0, (kQ - 1) / (2 * kG2Large) - 1);
  g.Fill(sc.eta2.coeffs, -2, 2);
  g.Fill(sc.eta4.coeffs, -4, 4);
  g.Fill(sc.t0.coeffs, -(1 << 12) + 1, 1 << 12);
  g.Fill(sc.z17.coeffs, -(1 << 17) + 1, 1 << 17);
  g.Fill(sc.z19.coeffs, -(1 << 19) + 1, 1 << 19);
  g.Bytes(sc.bytes, sizeof(sc.bytes));
}

template <class Call>
bool Same(Scratch& sc, const Backend& be, Call&& call) {
  return hook_check::SameOutputs(sc.ref, sc.got, kPortable, be, call);
}

constexpr int kTau = 49;
constexpr uint32_t kFirst = kN - kTau;

// sample_in_ball_steps of table t from a fixed state on the first 96 candidate bytes: the list in
// o.b (positions, then signs), the next position in o.u, the unused sign bits in o.w.
void BallSteps(const Backend& t, Out& o, const uint8_t* cand) {
  uint8_t* pos = o.b;
  int8_t* sgn = reinterpret_cast<int8_t*>(o.b + kBallSlots);
  std::memset(o.b, 0, 2 * kBallSlots);
  uint32_t i = kFirst;
  uint64_t signs = 0x0123456789abcdefull;
  t.sample_in_ball_steps(pos, sgn, i, kFirst, signs, cand, 96);
  o.u = i;
  o.w = signs;
}

// The check of one hook of `be`: its kernel against the portable one on inputs inside the hook's
// contract (mldsa/hooks.def). One case per hook of the list and no default: a hook added to the
// list without a case here is a compile error (-Wswitch, made an error below).
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
bool CheckHook(Hook hook, const Backend& be, Scratch& sc) {
  const Poly* in = sc.in;
  const Poly* in2 = sc.in2;
  const uint8_t* bytes = sc.bytes;
  auto same = [&](auto&& call) { return Same(sc, be, call); };
  // Rejection sampling: outputs beyond the returned count are scratch, compared only up to it.
  auto reject = [&](int (*Backend::*member)(int32_t*, int, const uint8_t*, size_t), size_t len) {
    return same([&](const Backend& t, Out& o) {
      const int n = (t.*member)(o.p[0].coeffs, 3, bytes, len);
      o.r = n;
      for (int k = n; k < kN; ++k) o.p[0].coeffs[k] = 0;
    });
  };
  switch (hook) {
    // ---- Arithmetic ----
    case Hook::ntt:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = in[0];
        t.ntt(o.p[0]);
      });
    case Hook::invntt_to_mont:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = sc.qq;
        t.invntt_to_mont(o.p[0]);
      });
    case Hook::pointwise_montgomery:
      return same([&](const Backend& t, Out& o) { t.pointwise_montgomery(o.p[0], in[0], in2[0]); });
    case Hook::pointwise_acc_montgomery:
      return same(
          [&](const Backend& t, Out& o) { t.pointwise_acc_montgomery(o.p[0], in, in2, 7); });
    case Hook::pointwise_acc_sub_montgomery:
      return same([&](const Backend& t, Out& o) {
        t.pointwise_acc_sub_montgomery(o.p[0], in, in2, 6, in[7], in2[7]);
      });
    case Hook::reduce32:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = sc.r32;
        t.reduce32(o.p[0]);
      });
    case Hook::caddq:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = in[1];
        t.caddq(o.p[0]);
      });
    case Hook::add:
      return same([&](const Backend& t, Out& o) { t.add(o.p[0], sc.w30, sc.w30b); });
    case Hook::sub:
      return same([&](const Backend& t, Out& o) { t.sub(o.p[0], sc.w30, sc.w30b); });
    case Hook::shift_left_d:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = sc.t10;
        t.shift_left_d(o.p[0]);
      });
    case Hook::split_low9:
      return same([&](const Backend& t, Out& o) { t.split_low9(o.p[0], o.p[1], sc.w30); });
    case Hook::split_low9_add_norm:
      return same([&](const Backend& t, Out& o) {
        o.r = t.split_low9_add_norm(o.p[0], o.p[1], in[1], sc.y20, (1 << 19) - 17);
      });

    // ---- Rounding ----
    case Hook::power2round:
      return same([&](const Backend& t, Out& o) { t.power2round(o.p[0], o.p[1], sc.std); });
    case Hook::decompose_small:
      return same([&](const Backend& t, Out& o) { t.decompose_small(o.p[0], o.p[1], sc.std); });
    case Hook::decompose_large:
      return same([&](const Backend& t, Out& o) { t.decompose_large(o.p[0], o.p[1], sc.std); });
    case Hook::make_hint_small:
      return same([&](const Backend& t, Out& o) {
        o.u = t.make_hint_small(o.p[0], sc.a0_small, sc.a1_small);
      });
    case Hook::make_hint_large:
      return same([&](const Backend& t, Out& o) {
        o.u = t.make_hint_large(o.p[0], sc.a0_large, sc.a1_large);
      });
    case Hook::use_hint_small:
      return same([&](const Backend& t, Out& o) { t.use_hint_small(o.p[0], sc.std, sc.hint); });
    case Hook::use_hint_large:
      return same([&](const Backend& t, Out& o) { t.use_hint_large(o.p[0], sc.std, sc.hint); });
    case Hook::exceeds_norm:
      return same([&](const Backend& t, Out& o) {
        o.u = t.exceeds_norm(sc.y20, 1 << 19) ^ (t.exceeds_norm(sc.y20, 1 << 21) << 1);
      });

    // ---- Packing ----
    case Hook::pack_t1:
      return same([&](const Backend& t, Out& o) { t.pack_t1(o.b, sc.t10); });
    case Hook::unpack_t1:
      return same([&](const Backend& t, Out& o) { t.unpack_t1(o.p[0], bytes); });
    case Hook::unpack_t1_shifted:
      return same([&](const Backend& t, Out& o) { t.unpack_t1_shifted(o.p[0], bytes); });
    case Hook::power2round_pack_t1:
      return same(
          [&](const Backend& t, Out& o) { t.power2round_pack_t1(o.b, o.p[0], sc.std, in[3]); });
    case Hook::pack_eta2:
      return same([&](const Backend& t, Out& o) { t.pack_eta2(o.b, sc.eta2); });
    case Hook::pack_eta4:
      return same([&](const Backend& t, Out& o) { t.pack_eta4(o.b, sc.eta4); });
    case Hook::unpack_eta2:
      return same([&](const Backend& t, Out& o) { o.u = t.unpack_eta2(o.p[0], bytes); });
    case Hook::unpack_eta4:
      return same([&](const Backend& t, Out& o) { o.u = t.unpack_eta4(o.p[0], bytes); });
    case Hook::pack_t0:
      return same([&](const Backend& t, Out& o) { t.pack_t0(o.b, sc.t0); });
    case Hook::unpack_t0:
      return same([&](const Backend& t, Out& o) { t.unpack_t0(o.p[0], bytes); });
    case Hook::pack_z17:
      return same([&](const Backend& t, Out& o) { t.pack_z17(o.b, sc.z17); });
    case Hook::pack_z19:
      return same([&](const Backend& t, Out& o) { t.pack_z19(o.b, sc.z19); });
    case Hook::unpack_z17:
      return same([&](const Backend& t, Out& o) { t.unpack_z17(o.p[0], bytes); });
    case Hook::unpack_z19:
      return same([&](const Backend& t, Out& o) { t.unpack_z19(o.p[0], bytes); });
    case Hook::pack_w1_small:
      return same([&](const Backend& t, Out& o) { t.pack_w1_small(o.b, sc.w1_small); });
    case Hook::pack_w1_large:
      return same([&](const Backend& t, Out& o) { t.pack_w1_large(o.b, sc.w1_large); });
    case Hook::decompose_pack_w1_small:
      return same(
          [&](const Backend& t, Out& o) { t.decompose_pack_w1_small(o.b, o.p[0], o.p[1], in[2]); });
    case Hook::decompose_pack_w1_large:
      return same(
          [&](const Backend& t, Out& o) { t.decompose_pack_w1_large(o.b, o.p[0], o.p[1], in[2]); });
    case Hook::use_hint_pack_w1_small:
      return same([&](const Backend& t, Out& o) { t.use_hint_pack_w1_small(o.b, in[3], sc.hint); });
    case Hook::use_hint_pack_w1_large:
      return same([&](const Backend& t, Out& o) { t.use_hint_pack_w1_large(o.b, in[3], sc.hint); });

    // ---- Sampling ----
    case Hook::reject_uniform:
      return reject(&Backend::reject_uniform, 3 * 168);
    case Hook::reject_eta2:
      return reject(&Backend::reject_eta2, 136);
    case Hook::reject_eta4:
      return reject(&Backend::reject_eta4, 136);
    case Hook::sample_in_ball_steps:
      return same([&](const Backend& t, Out& o) { BallSteps(t, o, bytes); });
    case Hook::sample_in_ball_expand: {
      Out& state = sc.state;
      BallSteps(kPortable, state, bytes);  // a reachable list: the portable steps' output
      const int used = static_cast<int>(state.u - kFirst);
      return same([&](const Backend& t, Out& o) {
        t.sample_in_ball_expand(o.p[0], state.b,
                                reinterpret_cast<const int8_t*>(state.b + kBallSlots), used);
      });
    }

    case Hook::kCount:
      break;
  }
  return false;
}
#pragma GCC diagnostic pop

}  // namespace

bool TableMatchesPortable(const Backend& be) {
  const auto sc = std::make_unique<Scratch>();
  Fill(*sc);
  bool ok = true;
  // Every hook of the list that `be` sets to something other than the portable kernel.
#define PQCD_HOOK(hook, Kernel, Ret, Params) \
  if (be.hook != kPortable.hook) ok &= CheckHook(Hook::hook, be, *sc);
#include "mldsa/hooks.def"
  return ok;
}

}  // namespace pqcd::kernels::mldsa
