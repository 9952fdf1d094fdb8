// AVX2 ML-DSA polynomial kernels (poly_avx2.cc, pack_avx2.cc, sample_avx2.cc here, built with the
// avx2 flags only).
//
// One kernel per hook in kKernels below (all but pack_z17), named and declared as the hook list
// says (mldsa/hooks.def, through mldsa/isa_kernels.inc: avx2::Ntt, ...). They are reached only
// through the avx2 ML-DSA table (backend.cc here), which the avx512 table builds on. Every kernel
// meets the contract of its hook and returns byte-identical results (same Montgomery
// representatives, same coefficient order); tests/kernels/test_mldsa_avx2.cc checks it. The
// 64-slot list of SampleInBall's kernels lives in 2 + 2 registers of 32 int8 lanes; every step is
// compares and blends. Declarations and constants only (WithKernels is consteval).
//
// Internal header of pqcd_mldsa; not part of the public API.
#pragma once

#include "mldsa/backend.h"

namespace pqcd::kernels::mldsa::avx2 {

// The hooks with a kernel here: all but pack_z17 (no AVX2 version; the portable kernel stays).
inline constexpr HookSet<Hook> kKernels = HookSet<Hook>::All().Without(Hook::pack_z17);
#include "mldsa/isa_kernels.inc"

}  // namespace pqcd::kernels::mldsa::avx2
