// The ML-DSA table of the avx512 backend (mldsa/backend.h; listed in arch/backends.h). A hook
// is an AVX-512 kernel (avx512:: here) where one exists and was measured faster than the AVX2
// kernel on an AVX-512 core (an Intel Xeon; bench/RESULTS.md, "AVX-512 kernels (issue 26)"); the
// AVX2 kernels, which every AVX-512 CPU can run, remain the fallback for a hook without one. At
// present every hook has one (pack_z17 too, which the avx2 table leaves portable).
#include "mldsa/backend.h"
#include "arch/x86_64/avx2/mldsa/mldsa_avx2.h"
#include "arch/x86_64/avx512/mldsa/mldsa_avx512.h"

namespace pqcd::kernels::mldsa {

extern const Backend kAvx512;
// The AVX-512 kernels (avx512::kKernels, mldsa_avx512.h) over the AVX2 table.
constinit const Backend kAvx512 = avx512::WithKernels(avx2::WithKernels(Backend{}));

}  // namespace pqcd::kernels::mldsa
