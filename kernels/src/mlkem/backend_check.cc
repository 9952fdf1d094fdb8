// Start-up check of an ML-KEM backend table against the portable kernels (mlkem/backend.h): every
// hook a table sets to something other than its portable kernel runs on fixed pseudo-random
// inputs inside the hook's contract, and its outputs (polynomials, bytes and return values) must
// equal the portable kernel's exactly. isa_selftest.cc calls it (through SelfCheck in backend.cc)
// before a SIMD backend is first selected, beside the Keccak and SM3 checks: a miscompiled kernel
// or a faulty unit makes the whole ISA unavailable instead of computing wrong shared secrets. The
// differential tests (tests/kernels/test_mlkem_avx2.cc, test_mlkem_backends.cc) cover the same
// hooks on edge and many random inputs; this is the quick version every process runs once.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "mlkem/backend.h"
#include "mlkem/poly.h"

namespace pqcd::kernels::mlkem {
namespace {

struct Gen {
  uint64_t s;
  uint32_t Next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 32);
  }
  int16_t In(int lo, int hi) {
    return static_cast<int16_t>(lo + static_cast<int>(Next() % static_cast<uint32_t>(hi - lo + 1)));
  }
  void Fill(Poly& p, int lo, int hi) {
    for (int16_t& c : p.c) c = In(lo, hi);
  }
  void Bytes(uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(Next() >> 24);
  }
};

// What a hook call produced: polynomials, a cache, bytes and a scalar.
struct Out {
  Poly p[2];
  PolyMulCache cache;
  uint8_t b[kPolyBytes + 64];
  int64_t r;
};

// The check's inputs and outputs, on the heap (any thread may be the one that runs the
// detection) and per call (tests call TableMatchesPortable too).
struct Scratch {
  Out ref, got;
  Poly in[8];
  PolyMulCache cache[4];
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
  Gen g{0x6d6c6b656dull};
  bool ok = true;
  const auto sc = std::make_unique<Scratch>();
  Poly(&in)[8] = sc->in;
  // Slack past the longest read (reject_uniform and cbd may read 8 bytes beyond their input).
  uint8_t bytes[3 * 168 + 64];
  uint8_t bytes2[kPolyBytes + 64];
  g.Bytes(bytes, sizeof(bytes));
  g.Bytes(bytes2, sizeof(bytes2));
#define PQCD_CHECK(hook, ...)                                            \
  if (be.hook != ref.hook) {                                             \
    ok &= Same(*sc, be, [&](const Backend& t, Out& o) { __VA_ARGS__; }); \
  }

  // ---- NTT domain ----
  for (Poly& p : in) g.Fill(p, -(kQ - 1), kQ - 1);
  for (int j = 0; j < 4; ++j) ref.mulcache_compute(sc->cache[j], in[4 + j]);
  PQCD_CHECK(ntt, o.p[0] = in[0]; t.ntt(o.p[0]));
  PQCD_CHECK(invntt_times_r, o.p[0] = in[1]; t.invntt_times_r(o.p[0]));
  PQCD_CHECK(mulcache_compute, t.mulcache_compute(o.cache, in[2]));
  PQCD_CHECK(basemul_acc, t.basemul_acc(o.p[0], in, in + 4, sc->cache, 4));
  PQCD_CHECK(add, o.p[0] = in[0]; t.add(o.p[0], in[1]));
  PQCD_CHECK(sub, o.p[0] = in[0]; t.sub(o.p[0], in[1]));
  // The fused passes clobber their first polynomial (scratch, not compared).
  Poly scratch;
  PQCD_CHECK(sub_to_message, scratch = in[2]; t.sub_to_message(o.b, scratch, in[3]));
  for (int d : {4, 5, 10, 11}) {
    PQCD_CHECK(add_compress_encode, scratch = in[2];
               t.add_compress_encode(d, o.b, scratch, in[3], d == 4 ? bytes : nullptr));
  }
  g.Fill(in[6], -32768, 32767);
  PQCD_CHECK(to_mont, o.p[0] = in[6]; t.to_mont(o.p[0]));
  PQCD_CHECK(reduce_canonical, o.p[0] = in[6]; t.reduce_canonical(o.p[0]));

  // ---- Encodings ----
  g.Fill(in[7], 0, kQ - 1);
  PQCD_CHECK(encode12, t.encode12(o.b, in[7]));
  PQCD_CHECK(to_message, t.to_message(o.b, in[7]));
  for (int d : {4, 5, 10, 11}) {
    PQCD_CHECK(compress_encode, t.compress_encode(d, o.b, in[7]));
    PQCD_CHECK(decode_decompress, t.decode_decompress(d, o.p[0], bytes2));
  }
  PQCD_CHECK(decode12, t.decode12(o.p[0], bytes2));
  PQCD_CHECK(from_message, t.from_message(o.p[0], bytes2));
  if (be.decode_ek != ref.decode_ek) {
    uint8_t ek[kPolyBytes];
    ref.encode12(ek, in[7]);  // a valid encoding, then one with a value >= q
    ok &= Same(*sc, be, [&](const Backend& t, Out& o) { o.r = t.decode_ek(o.p[0], ek); });
    ek[100] |= 0xf0;  // coefficient 67 = ek[100] >> 4 | ek[101] << 4 = 0xfff
    ek[101] = 0xff;
    ok &= Same(*sc, be, [&](const Backend& t, Out& o) { o.r = t.decode_ek(o.p[0], ek); });
  }

  // ---- Constant-time helpers ----
  std::memcpy(bytes2, bytes, 100);
  PQCD_CHECK(ct_diff_mask, o.r = t.ct_diff_mask(bytes, bytes2, 100) |
                                 t.ct_diff_mask(bytes, bytes2, 101) << 8 |
                                 t.ct_diff_mask(bytes, bytes2, 0) << 16);
  PQCD_CHECK(ct_select32, std::memcpy(o.b, bytes, 32); t.ct_select32(o.b, bytes2 + 200, 0xff);
             t.ct_select32(o.b + 32, bytes2 + 232, 0x00));

  // ---- Sampling (outputs beyond the returned count are scratch: compared only up to it) ----
  PQCD_CHECK(reject_uniform, {
    const int n = t.reject_uniform(o.p[0].c, kN, bytes, 3 * 168);
    o.r = n;
    for (int k = n; k < kN; ++k) o.p[0].c[k] = 0;
  });
  PQCD_CHECK(cbd, t.cbd(2, o.p[0], bytes); t.cbd(3, o.p[1], bytes));
#undef PQCD_CHECK
  return ok;
}

}  // namespace pqcd::kernels::mlkem
