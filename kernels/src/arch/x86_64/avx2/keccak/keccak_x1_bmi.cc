// The single-state Keccak-f[1600] permutation built with this object library's flags (AVX2 CPUs,
// which all have BMI1 and BMI2): ~b & c compiles to andn and rotations to rorx.
#include <cstdint>
#include <cstring>

#include "arch/x86_64/avx2/keccak/keccak_avx2.h"
#include "keccak/constants.h"

namespace pqcd::kernels {

#define PQCD_KECCAK_F1600_NAME KeccakF1600Bmi
#include "keccak/keccak_f1600_body.inc"
#undef PQCD_KECCAK_F1600_NAME

}  // namespace pqcd::kernels
