// The ML-KEM table of the avx512 backend (mlkem/backend.h; listed in arch/backends.h). A hook is
// an AVX-512 kernel (avx512::, poly_avx512.cc here) where one exists and was measured faster than
// the AVX2 kernel on this project's AVX-512 VM (it reported an Intel Xeon when measured); the rest
// are the AVX2 kernels, which every AVX-512 CPU can run: ct_select32 (32 bytes, nothing to gain)
// and reject_uniform (vpcompressd plus vpmovdw was 10% slower than the AVX2 table-driven
// compaction, and ZMM candidates with that compaction no faster; vpcompressw needs VBMI2, which
// this backend does not assume).
#include "mlkem/backend.h"
#include "arch/x86_64/avx2/mlkem/poly_avx2.h"
#include "arch/x86_64/avx512/mlkem/poly_avx512.h"

namespace pqcd::kernels::mlkem {

extern const Backend kAvx512;
// The AVX-512 kernels (avx512::kKernels, poly_avx512.h) over the AVX2 table.
constinit const Backend kAvx512 = avx512::WithKernels(avx2::WithKernels(Backend{}));

}  // namespace pqcd::kernels::mlkem
