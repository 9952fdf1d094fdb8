// The Keccak table of the SHA-3 extension (keccak/backend.h), declared in arch/backends.h. It is
// not a row of its own (there is no Isa for it): the NEON row's table (arch/aarch64/neon/keccak/
// backend.cc) forwards to these hooks while isa.cc reports HWCAP_SHA3, and the differential tests
// call it directly.
#include "keccak/backend.h"

#include "arch/aarch64/neon_sha3/keccak/keccak_sha3.h"

namespace pqcd::kernels::keccak {

extern const Backend kNeonSha3;
constinit const Backend kNeonSha3{
    .lanes = 4,
    .f1600 = &KeccakF1600x1Sha3,
    .f1600x4 = &KeccakF1600x4Sha3,
    .f1600x4x1 = &KeccakF1600x4x1Sha3,
    .f1600x8 = &KeccakF1600x8Sha3,
};

}  // namespace pqcd::kernels::keccak
