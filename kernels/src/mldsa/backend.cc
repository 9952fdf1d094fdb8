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

void Ntt(Poly& a) {
  ActiveBackend().ntt(a);
}
void InvNttToMont(Poly& a) {
  ActiveBackend().invntt_to_mont(a);
}
void PointwiseMontgomery(Poly& c, const Poly& a, const Poly& b) {
  ActiveBackend().pointwise_montgomery(c, a, b);
}
void PointwiseAccMontgomery(Poly& c, const Poly* a, const Poly* b, int n) {
  ActiveBackend().pointwise_acc_montgomery(c, a, b, n);
}
void PointwiseAccSubMontgomery(Poly& c, const Poly* a, const Poly* b, int n, const Poly& x,
                               const Poly& y) {
  ActiveBackend().pointwise_acc_sub_montgomery(c, a, b, n, x, y);
}
void Reduce32(Poly& a) {
  ActiveBackend().reduce32(a);
}
void CAddQ(Poly& a) {
  ActiveBackend().caddq(a);
}
void Add(Poly& c, const Poly& a, const Poly& b) {
  ActiveBackend().add(c, a, b);
}
void Sub(Poly& c, const Poly& a, const Poly& b) {
  ActiveBackend().sub(c, a, b);
}
void ShiftLeftD(Poly& a) {
  ActiveBackend().shift_left_d(a);
}
void SplitLow9(Poly& lo, Poly& hi, const Poly& v) {
  ActiveBackend().split_low9(lo, hi, v);
}
uint32_t SplitLow9AddNorm(Poly& lo, Poly& hi, const Poly& v, const Poly& y, int32_t bound) {
  return ActiveBackend().split_low9_add_norm(lo, hi, v, y, bound);
}
void Power2Round(Poly& t1, Poly& t0, const Poly& t) {
  ActiveBackend().power2round(t1, t0, t);
}

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
uint32_t ExceedsNorm(const Poly& a, int32_t bound) {
  return ActiveBackend().exceeds_norm(a, bound);
}

void PackT1(uint8_t out[320], const Poly& t1) {
  ActiveBackend().pack_t1(out, t1);
}
void UnpackT1(Poly& t1, const uint8_t in[320]) {
  ActiveBackend().unpack_t1(t1, in);
}
void UnpackT1Shifted(Poly& t, const uint8_t in[320]) {
  ActiveBackend().unpack_t1_shifted(t, in);
}
void Power2RoundPackT1(uint8_t t1_out[320], Poly& t0, const Poly& r, const Poly& s) {
  ActiveBackend().power2round_pack_t1(t1_out, t0, r, s);
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
void PackT0(uint8_t out[416], const Poly& t0) {
  ActiveBackend().pack_t0(out, t0);
}
void UnpackT0(Poly& t0, const uint8_t in[416]) {
  ActiveBackend().unpack_t0(t0, in);
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
