// The Keccak table of the neon backend (keccak/backend.h; listed in arch/backends.h).
#include "keccak/backend.h"

#include "arch/aarch64/neon/keccak/keccak_neon.h"

namespace pqcd::kernels::keccak {

extern const Backend kNeon;
constinit const Backend kNeon{
    .lanes = 4,
    .f1600x4 = &KeccakF1600x4Neon,
    .f1600x4x1 = &KeccakF1600x4x1Neon,
    .f1600x8 = &KeccakF1600x8Neon,
};

}  // namespace pqcd::kernels::keccak
