// The AVX-512 ML-KEM kernels (poly_avx512.cc; built with the avx512 flags: F/BW/VL/DQ, 32 int16
// lanes per ZMM register), named and declared as the hook list says (mlkem/hooks.def, through
// mlkem/isa_kernels.inc: avx512::PolyNtt, ...), for the hooks in kKernels below. Each meets the
// contract of its hook and returns bit-identical results (same reductions in the same order as the
// portable kernels), which tests/kernels/test_mlkem_avx2.cc checks for the avx512 table too.
// Reached only through the avx512 ML-KEM table (backend.cc here). Declarations and constants only
// (WithKernels is consteval): nothing inline is shared between baseline and AVX-512 code.
#pragma once

#include "mlkem/backend.h"

namespace pqcd::kernels::mlkem::avx512 {

// The hooks with an AVX-512 kernel: those measured faster than the AVX2 kernel (backend.cc here
// says why the other two are not).
inline constexpr HookSet<Hook> kKernels =
    HookSet<Hook>::All().Without(Hook::ct_select32, Hook::reject_uniform);
#include "mlkem/isa_kernels.inc"

}  // namespace pqcd::kernels::mlkem::avx512
