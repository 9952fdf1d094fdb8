// The ML-DSA table of the avx2 backend (mldsa/backend.h; listed in arch/backends.h, where the
// avx512 backend builds on it): the AVX2 kernels (avx2::kKernels, mldsa_avx2.h); pack_z17 keeps the
// portable kernel (no AVX2 version).
#include "mldsa/backend.h"
#include "arch/x86_64/avx2/mldsa/mldsa_avx2.h"

namespace pqcd::kernels::mldsa {

extern const Backend kAvx2;
constinit const Backend kAvx2 = avx2::WithKernels(Backend{});

}  // namespace pqcd::kernels::mldsa
