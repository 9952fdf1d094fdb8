// The Keccak table of the avx2 backend (keccak/backend.h; listed in arch/backends.h).
#include "keccak/backend.h"
#include "arch/x86_64/avx2/keccak/keccak_avx2.h"

namespace pqcd::kernels::keccak {

extern const Backend kAvx2;
constinit const Backend kAvx2{
    .lanes = 4,
    .f1600 = &KeccakF1600Bmi,
    .f1600x4 = &KeccakF1600x4Avx2,
    .f1600x4x1 = &KeccakF1600x4x1Avx2,
    .f1600x8 = &KeccakF1600x8ViaX4Avx2,
    .extract_lanes4 = &KeccakExtractLanes4Avx2,
};

}  // namespace pqcd::kernels::keccak
