// The NEON ML-DSA kernels (poly_neon.cc, pack_neon.cc, sample_neon.cc; built with the neon flags).
// One kernel per hook, all 45, named and declared as the hook list says (mldsa/hooks.def, through
// mldsa/isa_kernels.inc: neon::Ntt, ...). Each meets the contract of its hook and returns exactly
// the portable result; they are reached only through the neon ML-DSA table (backend.cc here).
// Declarations and constants only (WithKernels is consteval).
#pragma once

#include "mldsa/backend.h"

namespace pqcd::kernels::mldsa::neon {

// The hooks with a kernel here: all of them.
inline constexpr HookSet<Hook> kKernels = HookSet<Hook>::All();
#include "mldsa/isa_kernels.inc"

}  // namespace pqcd::kernels::mldsa::neon
