// The SM3 table of the avx2 backend (sm3/backend.h; listed in arch/backends.h).
#include "sm3/backend.h"
#include "arch/x86_64/avx2/sm3/sm3_avx2.h"

namespace pqcd::kernels::sm3 {

extern const Backend kAvx2;
constinit const Backend kAvx2{
    .lanes = 8,
    .compress_lanes = &Sm3CompressX8Avx2,
};

}  // namespace pqcd::kernels::sm3
