// The ML-DSA table of each ISA (arch/backends.h), the active one, and the poly.h functions, which
// forward to it: the algorithm code (mldsa.cc, sample.cc) never names a backend.
#include "mldsa/backend.h"

#include <array>

#include "arch/backends.h"
#include "mldsa/poly.h"

namespace pqcd::kernels::mldsa {

constinit const Backend kPortable{};

namespace {
constinit const std::array<const Backend*, kIsaCount> kByIsa =
    TablesByIsa(&ArchBackend::mldsa, &kPortable);

inline constexpr int32_t kGamma2Small = (kQ - 1) / 88;  // ML-DSA-44
inline constexpr int32_t kGamma2Large = (kQ - 1) / 32;  // ML-DSA-65/87
static_assert(kW1PackedBytes<kGamma2Small> == 192 && kW1PackedBytes<kGamma2Large> == 128);
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

// Every PQCD_FORWARDED_HOOK of mldsa/hooks.def: `Ret Kernel Params { return
// ActiveBackend().hook Args; }`.
#define PQCD_FORWARDED_HOOK PQCD_HOOK_FORWARDER
#include "mldsa/hooks.def"

// The templates over the parameter set of poly.h, each on the pair of hooks it picks from.
template <int32_t Gamma2>
void Decompose(Poly& r1, Poly& r0, const Poly& r) {
  const Backend& be = ActiveBackend();
  (Gamma2 == kGamma2Small ? be.decompose_small : be.decompose_large)(r1, r0, r);
}
template <int32_t Gamma2>
unsigned MakeHint(Poly& h, const Poly& a0, const Poly& a1) {
  const Backend& be = ActiveBackend();
  return (Gamma2 == kGamma2Small ? be.make_hint_small : be.make_hint_large)(h, a0, a1);
}
template <int32_t Gamma2>
void UseHint(Poly& out, const Poly& r, const Poly& h) {
  const Backend& be = ActiveBackend();
  (Gamma2 == kGamma2Small ? be.use_hint_small : be.use_hint_large)(out, r, h);
}

template <int Eta>
void PackEta(uint8_t* out, const Poly& s) {
  const Backend& be = ActiveBackend();
  (Eta == 2 ? be.pack_eta2 : be.pack_eta4)(out, s);
}
template <int Eta>
uint32_t UnpackEta(Poly& s, const uint8_t* in) {
  const Backend& be = ActiveBackend();
  return (Eta == 2 ? be.unpack_eta2 : be.unpack_eta4)(s, in);
}
template <int Gamma1Bits>
void PackZ(uint8_t* out, const Poly& z) {
  const Backend& be = ActiveBackend();
  (Gamma1Bits == 17 ? be.pack_z17 : be.pack_z19)(out, z);
}
template <int Gamma1Bits>
void UnpackZ(Poly& z, const uint8_t* in) {
  const Backend& be = ActiveBackend();
  (Gamma1Bits == 17 ? be.unpack_z17 : be.unpack_z19)(z, in);
}
template <int32_t Gamma2>
void PackW1(uint8_t* out, const Poly& w1) {
  const Backend& be = ActiveBackend();
  (Gamma2 == kGamma2Small ? be.pack_w1_small : be.pack_w1_large)(out, w1);
}
template <int32_t Gamma2>
void DecomposePackW1(uint8_t* out, Poly& r1, Poly& r0, const Poly& r) {
  const Backend& be = ActiveBackend();
  (Gamma2 == kGamma2Small ? be.decompose_pack_w1_small : be.decompose_pack_w1_large)(out, r1, r0,
                                                                                     r);
}
template <int32_t Gamma2>
void UseHintPackW1(uint8_t* out, const Poly& r, const Poly& h) {
  const Backend& be = ActiveBackend();
  (Gamma2 == kGamma2Small ? be.use_hint_pack_w1_small : be.use_hint_pack_w1_large)(out, r, h);
}

// The parameter sets' instantiations (the only ones: gamma2 small/large, eta 2/4, gamma1 2^17/19).
template void Decompose<kGamma2Small>(Poly&, Poly&, const Poly&);
template void Decompose<kGamma2Large>(Poly&, Poly&, const Poly&);
template unsigned MakeHint<kGamma2Small>(Poly&, const Poly&, const Poly&);
template unsigned MakeHint<kGamma2Large>(Poly&, const Poly&, const Poly&);
template void UseHint<kGamma2Small>(Poly&, const Poly&, const Poly&);
template void UseHint<kGamma2Large>(Poly&, const Poly&, const Poly&);
template void PackW1<kGamma2Small>(uint8_t*, const Poly&);
template void PackW1<kGamma2Large>(uint8_t*, const Poly&);
template void DecomposePackW1<kGamma2Small>(uint8_t*, Poly&, Poly&, const Poly&);
template void DecomposePackW1<kGamma2Large>(uint8_t*, Poly&, Poly&, const Poly&);
template void UseHintPackW1<kGamma2Small>(uint8_t*, const Poly&, const Poly&);
template void UseHintPackW1<kGamma2Large>(uint8_t*, const Poly&, const Poly&);
template void PackEta<2>(uint8_t*, const Poly&);
template void PackEta<4>(uint8_t*, const Poly&);
template uint32_t UnpackEta<2>(Poly&, const uint8_t*);
template uint32_t UnpackEta<4>(Poly&, const uint8_t*);
template void PackZ<17>(uint8_t*, const Poly&);
template void PackZ<19>(uint8_t*, const Poly&);
template void UnpackZ<17>(Poly&, const uint8_t*);
template void UnpackZ<19>(Poly&, const uint8_t*);

}  // namespace pqcd::kernels::mldsa
