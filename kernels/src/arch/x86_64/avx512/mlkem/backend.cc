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
constinit const Backend kAvx512{
    .ntt = &avx512::PolyNtt,
    .invntt_times_r = &avx512::PolyInvNttTimesR,
    .mulcache_compute = &avx512::PolyMulCacheCompute,
    .basemul_acc = &avx512::PolyBasemulAcc,
    .to_mont = &avx512::PolyToMont,
    .add = &avx512::PolyAdd,
    .sub = &avx512::PolySub,
    .reduce_canonical = &avx512::PolyReduceCanonical,
    .encode12 = &avx512::PolyEncode12,
    .decode12 = &avx512::PolyDecode12,
    .decode_ek = &avx512::DecodeEncapsKeyPoly,
    .compress_encode = &avx512::PolyCompressEncode,
    .decode_decompress = &avx512::PolyDecodeDecompress,
    .from_message = &avx512::PolyFromMessage,
    .to_message = &avx512::PolyToMessage,
    .add_compress_encode = &avx512::PolyAddCompressEncode,
    .sub_to_message = &avx512::PolySubToMessage,
    .ct_diff_mask = &avx512::CtDiffMask,
    .ct_select32 = &avx2::CtSelect32,
    .reject_uniform = &avx2::RejectUniform,
    .cbd = &avx512::Cbd,
};

}  // namespace pqcd::kernels::mlkem
