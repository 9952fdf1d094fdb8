// The AVX-512 ML-DSA polynomial kernels (poly_avx512.cc here; built with the avx512 flags:
// F/BW/VL/DQ, 16 int32 lanes per ZMM register).
//
// One kernel per hook in kKernels below, named and declared as the hook list says
// (mldsa/hooks.def, through mldsa/isa_kernels.inc: avx512::Ntt, ...). They are reached only through
// the avx512 ML-DSA table (backend.cc here), which has a kernel of this file only where it was
// measured faster than the AVX2 one. Every kernel meets the contract of its hook and returns
// byte-identical results (same Montgomery representatives, same coefficient order);
// tests/kernels/test_mldsa_avx2.cc checks it for the avx512 table. Declarations and constants only
// (WithKernels is consteval): nothing inline is shared between baseline and AVX-512 code.
//
// Internal header of pqcd_mldsa; not part of the public API.
#pragma once

#include "mldsa/backend.h"

namespace pqcd::kernels::mldsa::avx512 {

// The hooks with an AVX-512 kernel: all of them (pack_z17 too, which the avx2 table leaves
// portable).
inline constexpr HookSet<Hook> kKernels = HookSet<Hook>::All();
#include "mldsa/isa_kernels.inc"

}  // namespace pqcd::kernels::mldsa::avx512
