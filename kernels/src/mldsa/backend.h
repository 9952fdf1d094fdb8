// The ML-DSA backend table: every polynomial and sampling kernel a SIMD backend may replace
// (internal to pqcd_mldsa and its tests). The hooks, their signatures and their contracts are
// listed once, in mldsa/hooks.def; this header generates from that list the Hook enum, the portable
// kernels' declarations and the table type (kernels/src/hook_list.h says what else is generated).
//
// Each hook works on whole polynomials (an NTT, a pointwise product accumulated over a vector, a
// fused rounding + packing pass, one rejection-sampling call per XOF chunk), so one indirect call
// per hook costs nothing measurable. Every hook has the portable kernel as its default member
// initializer: a backend table sets only the hooks it has kernels for (its kKernels) and keeps the
// portable code, or another backend's, for the rest. A replacement must return exactly the
// portable result (same representatives, same bytes), which tests/kernels/test_mldsa_avx2.cc
// checks on edge and random inputs. The table in use follows the active ISA (ActiveBackend());
// arch/backends.h lists which backend supplies which table. The algorithm code calls the poly.h /
// sample.h functions, which forward to the active table (mldsa/backend.cc).
//
// Common to every hook:
//  * Poly is 256 int32 coefficients, 64-byte aligned (by its type); byte buffers have no alignment
//    requirement. Output polynomials may alias inputs only where a hook says so.
//  * q = 8380417; "standard" is [0, q). Montgomery factor 2^32.
//  * "small" / "large" name the two gamma2 values: small = (q-1)/88 (ML-DSA-44), large = (q-1)/32
//    (ML-DSA-65/87). Eta is 2 or 4, gamma1 = 2^17 or 2^19.
//  * Constant time in coefficient and byte values (no data-dependent branch, index or division),
//    except reject_uniform (public XOF output) and what reject_eta2/4 declassify (CtPublic: only
//    the accept pattern).
//
// Declarations and constants only: included by baseline and ISA-flagged translation units alike.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hook_list.h"
#include "mldsa/poly.h"

namespace pqcd::kernels {
enum class Isa : uint8_t;  // pqcd/kernels/isa.h
}  // namespace pqcd::kernels

namespace pqcd::kernels::mldsa {

// SampleInBall's slot list (sample.h).
inline constexpr int kBallSlots = 64;

// One enumerator per hook (for HookSet: which hooks a backend has kernels for).
enum class Hook : uint8_t {
#define PQCD_HOOK PQCD_HOOK_ENUMERATOR
#include "mldsa/hooks.def"
  kCount
};

// The portable kernels (mldsa/poly.cc, mldsa/sample.cc), the reference of every backend:
// portable::Ntt, ...
namespace portable {
#define PQCD_HOOK PQCD_HOOK_DECLARATION
#include "mldsa/hooks.def"
}  // namespace portable

// One function pointer per hook of mldsa/hooks.def (each contract is there), the portable kernel
// by default: Backend{} is the portable table. A backend's table is built by its WithKernels
// (mldsa/isa_kernels.inc).
struct Backend {
#define PQCD_HOOK PQCD_HOOK_MEMBER
#include "mldsa/hooks.def"
};

// The portable table (every hook at its default).
extern const Backend kPortable;

// The table of the active ISA (ActiveIsa()); the algorithm code reaches it through poly.h and
// sample.h.
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

}  // namespace pqcd::kernels::mldsa
