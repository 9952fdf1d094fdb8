// The ML-KEM table of the avx512 backend (mlkem/backend.h; listed in arch/backends.h). A hook is
// an AVX-512 kernel (avx512:: here) where one exists and was measured faster than the AVX2 kernel
// on an AVX-512 core (bench/RESULTS.md, "AVX-512 kernels (issue 26)"); the rest are the AVX2
// kernels, which every AVX-512 CPU can run.
#include "mlkem/backend.h"
#include "arch/x86_64/avx2/mlkem/poly_avx2.h"

namespace pqcd::kernels::mlkem {

extern const Backend kAvx512;
constinit const Backend kAvx512{
    .ntt = &avx2::PolyNtt,
    .invntt_times_r = &avx2::PolyInvNttTimesR,
    .mulcache_compute = &avx2::PolyMulCacheCompute,
    .basemul_acc = &avx2::PolyBasemulAcc,
    .to_mont = &avx2::PolyToMont,
    .add = &avx2::PolyAdd,
    .sub = &avx2::PolySub,
    .reduce_canonical = &avx2::PolyReduceCanonical,
    .encode12 = &avx2::PolyEncode12,
    .decode12 = &avx2::PolyDecode12,
    .decode_ek = &avx2::DecodeEncapsKeyPoly,
    .compress_encode = &avx2::PolyCompressEncode,
    .decode_decompress = &avx2::PolyDecodeDecompress,
    .from_message = &avx2::PolyFromMessage,
    .to_message = &avx2::PolyToMessage,
    .add_compress_encode = &avx2::PolyAddCompressEncode,
    .sub_to_message = &avx2::PolySubToMessage,
    .ct_diff_mask = &avx2::CtDiffMask,
    .ct_select32 = &avx2::CtSelect32,
    .reject_uniform = &avx2::RejectUniform,
    .cbd = &avx2::Cbd,
};

}  // namespace pqcd::kernels::mlkem
