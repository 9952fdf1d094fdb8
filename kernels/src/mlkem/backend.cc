// The ML-KEM table of each ISA (arch/backends.h), the active one, and the poly.h functions, which
// forward to it: the algorithm code (mlkem.cc, fixed_lanes.h) never names a backend.
#include "mlkem/backend.h"

#include <array>

#include "arch/backends.h"
#include "mlkem/poly.h"

namespace pqcd::kernels::mlkem {

constinit const Backend kPortable{};

namespace {
constinit const std::array<const Backend*, kIsaCount> kByIsa =
    TablesByIsa(&ArchBackend::mlkem, &kPortable);
}  // namespace

const Backend& BackendFor(Isa isa) {
  return *kByIsa[static_cast<size_t>(isa)];
}

bool SelfCheck(Isa isa) {
  return TableMatchesPortable(BackendFor(isa));
}

const Backend& ActiveBackend() {
  return *kByIsa[static_cast<size_t>(ActiveIsa())];
}

// ---- poly.h ----------------------------------------------------------------------------------

void PolyNtt(Poly& a) {
  ActiveBackend().ntt(a);
}
void PolyInvNttTimesR(Poly& a) {
  ActiveBackend().invntt_times_r(a);
}
void PolyMulCacheCompute(PolyMulCache& cache, const Poly& b) {
  ActiveBackend().mulcache_compute(cache, b);
}
void PolyBasemulAcc(Poly& out, const Poly* a, const Poly* b, const PolyMulCache* cache, int k) {
  ActiveBackend().basemul_acc(out, a, b, cache, k);
}
void PolyToMont(Poly& a) {
  ActiveBackend().to_mont(a);
}
void PolyAdd(Poly& r, const Poly& a) {
  ActiveBackend().add(r, a);
}
void PolySub(Poly& r, const Poly& a) {
  ActiveBackend().sub(r, a);
}
void PolyReduceCanonical(Poly& a) {
  ActiveBackend().reduce_canonical(a);
}
void PolyEncode12(uint8_t out[kPolyBytes], const Poly& a) {
  ActiveBackend().encode12(out, a);
}
void PolyDecode12(Poly& a, const uint8_t in[kPolyBytes]) {
  ActiveBackend().decode12(a, in);
}
bool DecodeEncapsKeyPoly(Poly& a, const uint8_t in[kPolyBytes]) {
  return ActiveBackend().decode_ek(a, in);
}
template <int D>
void PolyCompressEncode(uint8_t* out, const Poly& a) {
  ActiveBackend().compress_encode(D, out, a);
}
template <int D>
void PolyDecodeDecompress(Poly& a, const uint8_t* in) {
  ActiveBackend().decode_decompress(D, a, in);
}
template void PolyCompressEncode<4>(uint8_t*, const Poly&);
template void PolyCompressEncode<5>(uint8_t*, const Poly&);
template void PolyCompressEncode<10>(uint8_t*, const Poly&);
template void PolyCompressEncode<11>(uint8_t*, const Poly&);
template void PolyDecodeDecompress<4>(Poly&, const uint8_t*);
template void PolyDecodeDecompress<5>(Poly&, const uint8_t*);
template void PolyDecodeDecompress<10>(Poly&, const uint8_t*);
template void PolyDecodeDecompress<11>(Poly&, const uint8_t*);
void PolyFromMessage(Poly& a, const uint8_t m[kSymBytes]) {
  ActiveBackend().from_message(a, m);
}
void PolyToMessage(uint8_t m[kSymBytes], const Poly& a) {
  ActiveBackend().to_message(m, a);
}
template <int D>
void PolyAddCompressEncode(uint8_t* out, Poly& a, const Poly& b, const uint8_t* m) {
  ActiveBackend().add_compress_encode(D, out, a, b, m);
}
template void PolyAddCompressEncode<4>(uint8_t*, Poly&, const Poly&, const uint8_t*);
template void PolyAddCompressEncode<5>(uint8_t*, Poly&, const Poly&, const uint8_t*);
template void PolyAddCompressEncode<10>(uint8_t*, Poly&, const Poly&, const uint8_t*);
template void PolyAddCompressEncode<11>(uint8_t*, Poly&, const Poly&, const uint8_t*);
void PolySubToMessage(uint8_t m[kSymBytes], Poly& v, const Poly& w) {
  ActiveBackend().sub_to_message(m, v, w);
}
uint8_t CtDiffMask(const uint8_t* a, const uint8_t* b, size_t n) {
  return ActiveBackend().ct_diff_mask(a, b, n);
}
void CtSelect32(uint8_t dst[32], const uint8_t src[32], uint8_t mask) {
  ActiveBackend().ct_select32(dst, src, mask);
}

}  // namespace pqcd::kernels::mlkem
