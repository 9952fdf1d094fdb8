// The ML-KEM table of the neon backend (mlkem/backend.h; listed in arch/backends.h): every hook
// implemented (all of them).
#include "mlkem/backend.h"

#include "arch/aarch64/neon/mlkem/poly_neon.h"

namespace pqcd::kernels::mlkem {

extern const Backend kNeon;
constinit const Backend kNeon{
    .ntt = &neon::PolyNtt,
    .invntt_times_r = &neon::PolyInvNttTimesR,
    .mulcache_compute = &neon::PolyMulCacheCompute,
    .basemul_acc = &neon::PolyBasemulAcc,
    .to_mont = &neon::PolyToMont,
    .add = &neon::PolyAdd,
    .sub = &neon::PolySub,
    .reduce_canonical = &neon::PolyReduceCanonical,
    .encode12 = &neon::PolyEncode12,
    .decode12 = &neon::PolyDecode12,
    .decode_ek = &neon::DecodeEncapsKeyPoly,
    .compress_encode = &neon::PolyCompressEncode,
    .decode_decompress = &neon::PolyDecodeDecompress,
    .from_message = &neon::PolyFromMessage,
    .to_message = &neon::PolyToMessage,
    .add_compress_encode = &neon::PolyAddCompressEncode,
    .sub_to_message = &neon::PolySubToMessage,
    .ct_diff_mask = &neon::CtDiffMask,
    .ct_select32 = &neon::CtSelect32,
    .reject_uniform = &neon::RejectUniform,
    .cbd = &neon::Cbd,
};

}  // namespace pqcd::kernels::mlkem
