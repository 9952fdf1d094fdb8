// Start-up check of an ML-KEM backend table against the portable kernels (mlkem/backend.h): every
// hook a table sets to something other than its portable kernel runs on fixed pseudo-random
// inputs inside the hook's contract, and its outputs (polynomials, bytes and return values) must
// equal the portable kernel's exactly. isa_selftest.cc calls it (through SelfCheck in backend.cc)
// before a SIMD backend is first selected, beside the Keccak and SM3 checks: a miscompiled kernel
// or a faulty unit makes the whole ISA unavailable instead of computing wrong shared secrets. The
// differential tests (tests/kernels/test_mlkem_avx2.cc, test_mlkem_backends.cc) cover the same
// hooks on edge and many random inputs; this is the quick version every process runs once. It
// walks the hook list (mlkem/hooks.def), so a new hook is checked as soon as it has its case in
// CheckHook, and cannot be added without one.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "hook_check.h"
#include "mlkem/backend.h"
#include "mlkem/poly.h"

namespace pqcd::kernels::mlkem {
namespace {

using hook_check::Gen;

// What a hook call produced: polynomials, a cache, bytes and a scalar.
struct Out {
  Poly p[2];
  PolyMulCache cache;
  uint8_t b[kPolyBytes + 64];
  int64_t r;
};

// The check's inputs and outputs, on the heap (any thread may be the one that runs the
// detection) and per call (tests call TableMatchesPortable too). The inputs are read-only once
// filled; each hook's check copies what its kernel modifies.
struct Scratch {
  Out ref, got;
  Poly in[8];             // |c| < q
  Poly wide;              // any int16
  Poly canon;             // [0, q)
  PolyMulCache cache[4];  // mulcache_compute(in[4 + j])
  // Slack past the longest read (reject_uniform and cbd may read 8 bytes beyond their input).
  uint8_t bytes[3 * 168 + 64];
  uint8_t bytes2[kPolyBytes + 64];
  uint8_t near[kPolyBytes + 64];  // bytes2 with its first 100 bytes equal to bytes'
};

void Fill(Scratch& sc) {
  Gen g{0x6d6c6b656dull};
  g.Bytes(sc.bytes, sizeof(sc.bytes));
  g.Bytes(sc.bytes2, sizeof(sc.bytes2));
  for (Poly& p : sc.in) g.Fill(p.c, -(kQ - 1), kQ - 1);
  for (int j = 0; j < 4; ++j) kPortable.mulcache_compute(sc.cache[j], sc.in[4 + j]);
  g.Fill(sc.wide.c, -32768, 32767);
  g.Fill(sc.canon.c, 0, kQ - 1);
  std::memcpy(sc.near, sc.bytes2, sizeof(sc.near));
  std::memcpy(sc.near, sc.bytes, 100);
}

template <class Call>
bool Same(Scratch& sc, const Backend& be, Call&& call) {
  return hook_check::SameOutputs(sc.ref, sc.got, kPortable, be, call);
}

// The check of one hook of `be`: its kernel against the portable one on inputs inside the hook's
// contract (mlkem/hooks.def). One case per hook of the list and no default: a hook added to the
// list without a case here is a compile error (-Wswitch, made an error below).
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
bool CheckHook(Hook hook, const Backend& be, Scratch& sc) {
  const Poly* in = sc.in;
  const uint8_t* bytes = sc.bytes;
  const uint8_t* bytes2 = sc.bytes2;
  auto same = [&](auto&& call) { return Same(sc, be, call); };
  Poly scratch;  // the fused passes clobber their first polynomial (not compared)
  bool ok = true;
  switch (hook) {
    // ---- NTT domain ----
    case Hook::ntt:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = in[0];
        t.ntt(o.p[0]);
      });
    case Hook::invntt_times_r:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = in[1];
        t.invntt_times_r(o.p[0]);
      });
    case Hook::mulcache_compute:
      return same([&](const Backend& t, Out& o) { t.mulcache_compute(o.cache, in[2]); });
    case Hook::basemul_acc:
      return same(
          [&](const Backend& t, Out& o) { t.basemul_acc(o.p[0], in, in + 4, sc.cache, 4); });
    case Hook::to_mont:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = sc.wide;
        t.to_mont(o.p[0]);
      });

    // ---- Coefficient-wise ----
    case Hook::add:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = in[0];
        t.add(o.p[0], in[1]);
      });
    case Hook::sub:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = in[0];
        t.sub(o.p[0], in[1]);
      });
    case Hook::reduce_canonical:
      return same([&](const Backend& t, Out& o) {
        o.p[0] = sc.wide;
        t.reduce_canonical(o.p[0]);
      });

    // ---- Encodings ----
    case Hook::encode12:
      return same([&](const Backend& t, Out& o) { t.encode12(o.b, sc.canon); });
    case Hook::decode12:
      return same([&](const Backend& t, Out& o) { t.decode12(o.p[0], bytes2); });
    case Hook::decode_ek: {
      uint8_t ek[kPolyBytes];
      kPortable.encode12(ek, sc.canon);  // a valid encoding, then one with a value >= q
      ok &= same([&](const Backend& t, Out& o) { o.r = t.decode_ek(o.p[0], ek); });
      ek[100] |= 0xf0;  // coefficient 67 = ek[100] >> 4 | ek[101] << 4 = 0xfff
      ek[101] = 0xff;
      ok &= same([&](const Backend& t, Out& o) { o.r = t.decode_ek(o.p[0], ek); });
      return ok;
    }
    case Hook::compress_encode:
      for (int d : {4, 5, 10, 11}) {
        ok &= same([&](const Backend& t, Out& o) { t.compress_encode(d, o.b, sc.canon); });
      }
      return ok;
    case Hook::decode_decompress:
      for (int d : {4, 5, 10, 11}) {
        ok &= same([&](const Backend& t, Out& o) { t.decode_decompress(d, o.p[0], bytes2); });
      }
      return ok;
    case Hook::from_message:
      return same([&](const Backend& t, Out& o) { t.from_message(o.p[0], bytes2); });
    case Hook::to_message:
      return same([&](const Backend& t, Out& o) { t.to_message(o.b, sc.canon); });

    // ---- Fused passes ----
    case Hook::add_compress_encode:
      for (int d : {4, 5, 10, 11}) {
        ok &= same([&](const Backend& t, Out& o) {
          scratch = in[2];
          t.add_compress_encode(d, o.b, scratch, in[3], d == 4 ? bytes : nullptr);
        });
      }
      return ok;
    case Hook::sub_to_message:
      return same([&](const Backend& t, Out& o) {
        scratch = in[2];
        t.sub_to_message(o.b, scratch, in[3]);
      });

    // ---- Constant-time helpers ----
    case Hook::ct_diff_mask:
      return same([&](const Backend& t, Out& o) {
        o.r = t.ct_diff_mask(bytes, sc.near, 100) | t.ct_diff_mask(bytes, sc.near, 101) << 8 |
              t.ct_diff_mask(bytes, sc.near, 0) << 16;
      });
    case Hook::ct_select32:
      return same([&](const Backend& t, Out& o) {
        std::memcpy(o.b, bytes, 32);
        t.ct_select32(o.b, bytes2 + 200, 0xff);
        t.ct_select32(o.b + 32, bytes2 + 232, 0x00);
      });

    // ---- Sampling (outputs beyond the returned count are scratch: compared only up to it) ----
    case Hook::reject_uniform:
      return same([&](const Backend& t, Out& o) {
        const int n = t.reject_uniform(o.p[0].c, kN, bytes, 3 * 168);
        o.r = n;
        for (int k = n; k < kN; ++k) o.p[0].c[k] = 0;
      });
    case Hook::cbd:
      return same([&](const Backend& t, Out& o) {
        t.cbd(2, o.p[0], bytes);
        t.cbd(3, o.p[1], bytes);
      });

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
#include "mlkem/hooks.def"
  return ok;
}

}  // namespace pqcd::kernels::mlkem
