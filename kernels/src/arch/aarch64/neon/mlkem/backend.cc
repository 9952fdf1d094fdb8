// The ML-KEM table of the neon backend (mlkem/backend.h; listed in arch/backends.h): every hook
// is a NEON kernel (neon::kKernels, poly_neon.h: all of them).
#include "mlkem/backend.h"

#include "arch/aarch64/neon/mlkem/poly_neon.h"

namespace pqcd::kernels::mlkem {

extern const Backend kNeon;
constinit const Backend kNeon = neon::WithKernels(Backend{});

}  // namespace pqcd::kernels::mlkem
