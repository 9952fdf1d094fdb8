// The ML-DSA table of the neon backend (mldsa/backend.h; listed in arch/backends.h): all 45
// hooks (poly_neon.cc: arithmetic, split_low9, rounding, the fused rounding + packing passes;
// pack_neon.cc: every bit packing; sample_neon.cc: reject_uniform, reject_eta2/4, SampleInBall's
// steps and expansion).
#include "mldsa/backend.h"

#include "arch/aarch64/neon/mldsa/mldsa_neon.h"

namespace pqcd::kernels::mldsa {

extern const Backend kNeon;
constinit const Backend kNeon = neon::WithKernels(Backend{});

}  // namespace pqcd::kernels::mldsa
