// The Keccak table of the avx512 backend (keccak/backend.h; listed in arch/backends.h). The single
// state and the squeeze transpose are the AVX2 kernels (every AVX-512 CPU has AVX2 and BMI). The
// single-state ZMM permutation (KeccakF1600x1Avx512) is not in the table: timed on an AVX-512
// Xeon it took 1.05x the scalar BMI code's time per permutation and 1.05-1.07x on 64 KiB of
// SHA3-256 and SHAKE128 (bench/RESULTS.md, "Single-state Keccak, AVX-512VL (issue 26)"; pqc-bench's
// *Kernel rows compare the two), and in f1600x4x1 it gained nothing either.
#include "keccak/backend.h"
#include "arch/x86_64/avx2/keccak/keccak_avx2.h"
#include "arch/x86_64/avx512/keccak/keccak_avx512.h"

namespace pqcd::kernels::keccak {

extern const Backend kAvx512;
constinit const Backend kAvx512{
    .lanes = 8,
    .f1600 = &KeccakF1600Bmi,
    .f1600x4 = &KeccakF1600x4Avx512,
    .f1600x4x1 = &KeccakF1600x4x1Avx512,
    .f1600x8 = &KeccakF1600x8Avx512,
    .extract_lanes4 = &KeccakExtractLanes4Avx2,
};

}  // namespace pqcd::kernels::keccak
