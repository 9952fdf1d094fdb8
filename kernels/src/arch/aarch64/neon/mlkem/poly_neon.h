// The NEON ML-KEM kernels (poly_neon.cc, reject_neon.cc; built with the neon flags): one per hook,
// all 21, named and declared as the hook list says (mlkem/hooks.def, through
// mlkem/isa_kernels.inc: neon::PolyNtt, ...). Each meets the contract of its hook and returns
// exactly the portable result; they are reached only through the neon ML-KEM table (backend.cc
// here). Declarations and constants only (WithKernels is consteval).
#pragma once

#include "mlkem/backend.h"

namespace pqcd::kernels::mlkem::neon {

// The hooks with a kernel here: all of them.
inline constexpr HookSet<Hook> kKernels = HookSet<Hook>::All();
#include "mlkem/isa_kernels.inc"

}  // namespace pqcd::kernels::mlkem::neon
