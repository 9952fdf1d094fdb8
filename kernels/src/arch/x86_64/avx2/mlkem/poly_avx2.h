// The AVX2 ML-KEM kernels (poly_avx2.cc; built with the avx2 flags): one per hook, all 21, named
// and declared as the hook list says (mlkem/hooks.def, through mlkem/isa_kernels.inc:
// avx2::PolyNtt,
// ...). Each meets the contract of its hook and returns bit-identical results (same reductions in
// the same order), which tests/kernels/test_mlkem_avx2.cc checks on edge and random inputs. They
// are reached only through the avx2 ML-KEM table (backend.cc here), which the avx512 table builds
// on. Declarations and constants only (WithKernels is consteval): nothing inline is shared between
// baseline and AVX2 code.
#pragma once

#include "mlkem/backend.h"

namespace pqcd::kernels::mlkem::avx2 {

// The hooks with a kernel here: all of them.
inline constexpr HookSet<Hook> kKernels = HookSet<Hook>::All();
#include "mlkem/isa_kernels.inc"

}  // namespace pqcd::kernels::mlkem::avx2
