// The ML-KEM backend table: every polynomial kernel a SIMD backend may replace (internal to
// pqcd_mlkem and its tests). The hooks, their signatures and their contracts are listed once, in
// mlkem/hooks.def; this header generates from that list the Hook enum, the portable kernels'
// declarations and the table type (kernels/src/hook_list.h says what else is generated).
//
// Each hook works on whole polynomials (an NTT, a basemul-accumulate over a vector, the rejection
// sampling of one matrix entry), so one indirect call per hook costs nothing measurable. Every
// hook has the portable kernel as its default member initializer: a backend table sets only the
// hooks it has kernels for (its kKernels) and keeps the portable code, or another backend's, for
// the rest. A replacement must return exactly the portable result (same representatives, same
// bytes), which tests/kernels/test_mlkem_avx2.cc checks on edge and random inputs; the table in
// use follows the active ISA (ActiveBackend()), and arch/backends.h lists which backend supplies
// which table. The algorithm code calls the poly.h functions, which forward to the active table
// (mlkem/backend.cc).
//
// Common to every hook:
//  * Poly and PolyMulCache are 64-byte aligned (by their type); byte buffers have no alignment
//    requirement. Arguments do not alias unless a hook says so.
//  * Coefficients are int16 representatives mod q = 3329; "canonical" is [0, q). R = 2^16.
//    NTT-domain order as in poly.h (FIPS 203 §4.3).
//  * Constant time in coefficient and byte values (no data-dependent branch, index or division),
//    except decode_ek (public encapsulation key) and reject_uniform (public XOF output), which may
//    branch on their data.
//
// Declarations and constants only: included by baseline and ISA-flagged translation units alike.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hook_list.h"
#include "mlkem/poly.h"

namespace pqcd::kernels {
enum class Isa : uint8_t;  // pqcd/kernels/isa.h
}  // namespace pqcd::kernels

namespace pqcd::kernels::mlkem {

// One enumerator per hook (for HookSet: which hooks a backend has kernels for).
enum class Hook : uint8_t {
#define PQCD_HOOK PQCD_HOOK_ENUMERATOR
#include "mlkem/hooks.def"
  kCount
};

// The portable kernels (mlkem/poly.cc), the reference of every backend: portable::PolyNtt, ...
namespace portable {
#define PQCD_HOOK PQCD_HOOK_DECLARATION
#include "mlkem/hooks.def"
}  // namespace portable

// One function pointer per hook of mlkem/hooks.def (each contract is there), the portable kernel
// by default: Backend{} is the portable table. A backend's table is built by its WithKernels
// (mlkem/isa_kernels.inc).
struct Backend {
#define PQCD_HOOK PQCD_HOOK_MEMBER
#include "mlkem/hooks.def"
};

// The portable table (every hook at its default).
extern const Backend kPortable;

// The table of the active ISA (ActiveIsa()); the algorithm code reaches it through poly.h.
const Backend& ActiveBackend();
// The table a given ISA uses (the portable one where this build has none); for the differential
// tests.
const Backend& BackendFor(Isa isa);

// True when every hook `be` sets to something other than the portable kernel returns exactly the
// portable result on fixed inputs inside its contract (backend_check.cc).
bool TableMatchesPortable(const Backend& be);
// TableMatchesPortable(BackendFor(isa)): the start-up check isa_selftest.cc runs, for a CPU that
// supports `isa`, before that backend is first selected (through a weak reference, so that
// programs without this family do not link it).
bool SelfCheck(Isa isa);

}  // namespace pqcd::kernels::mlkem
