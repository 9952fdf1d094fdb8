// The ML-KEM table of the avx2 backend (mlkem/backend.h; listed in arch/backends.h, where the
// avx512 backend builds on it): every hook is an AVX2 kernel (avx2::kKernels, poly_avx2.h).
#include "mlkem/backend.h"
#include "arch/x86_64/avx2/mlkem/poly_avx2.h"

namespace pqcd::kernels::mlkem {

extern const Backend kAvx2;
constinit const Backend kAvx2 = avx2::WithKernels(Backend{});

}  // namespace pqcd::kernels::mlkem
