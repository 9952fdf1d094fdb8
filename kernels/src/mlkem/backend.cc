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

// Every PQCD_FORWARDED_HOOK of mlkem/hooks.def: `Ret Kernel Params { return
// ActiveBackend().hook Args; }`.
#define PQCD_FORWARDED_HOOK PQCD_HOOK_FORWARDER
#include "mlkem/hooks.def"

// The templates over d of poly.h, on the hooks that take d as their first argument.
template <int D>
void PolyCompressEncode(uint8_t* out, const Poly& a) {
  ActiveBackend().compress_encode(D, out, a);
}
template <int D>
void PolyDecodeDecompress(Poly& a, const uint8_t* in) {
  ActiveBackend().decode_decompress(D, a, in);
}
template <int D>
void PolyAddCompressEncode(uint8_t* out, Poly& a, const Poly& b, const uint8_t* m) {
  ActiveBackend().add_compress_encode(D, out, a, b, m);
}
template void PolyCompressEncode<4>(uint8_t*, const Poly&);
template void PolyCompressEncode<5>(uint8_t*, const Poly&);
template void PolyCompressEncode<10>(uint8_t*, const Poly&);
template void PolyCompressEncode<11>(uint8_t*, const Poly&);
template void PolyDecodeDecompress<4>(Poly&, const uint8_t*);
template void PolyDecodeDecompress<5>(Poly&, const uint8_t*);
template void PolyDecodeDecompress<10>(Poly&, const uint8_t*);
template void PolyDecodeDecompress<11>(Poly&, const uint8_t*);
template void PolyAddCompressEncode<4>(uint8_t*, Poly&, const Poly&, const uint8_t*);
template void PolyAddCompressEncode<5>(uint8_t*, Poly&, const Poly&, const uint8_t*);
template void PolyAddCompressEncode<10>(uint8_t*, Poly&, const Poly&, const uint8_t*);
template void PolyAddCompressEncode<11>(uint8_t*, Poly&, const Poly&, const uint8_t*);

}  // namespace pqcd::kernels::mlkem
