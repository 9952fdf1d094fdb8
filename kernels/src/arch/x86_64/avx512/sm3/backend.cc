// The SM3 table of the avx512 backend (sm3/backend.h; listed in arch/backends.h).
#include "sm3/backend.h"
#include "arch/x86_64/avx512/sm3/sm3_avx512.h"

namespace pqcd::kernels::sm3 {

extern const Backend kAvx512;
constinit const Backend kAvx512{
    .lanes = 16,
    .compress_lanes = &Sm3CompressX16Avx512,
};

}  // namespace pqcd::kernels::sm3
