// The ML-DSA table of the neon backend (mldsa/backend.h; listed in arch/backends.h): the NTT,
// the pointwise products, the coefficient-wise arithmetic and the rounding hooks (power2round,
// decompose, make_hint, use_hint, exceeds_norm); every other hook stays portable.
#include "mldsa/backend.h"

#include "arch/aarch64/neon/mldsa/mldsa_neon.h"

namespace pqcd::kernels::mldsa {

extern const Backend kNeon;
constinit const Backend kNeon{
    .ntt = &neon::Ntt,
    .invntt_to_mont = &neon::InvNttToMont,
    .pointwise_montgomery = &neon::PointwiseMontgomery,
    .pointwise_acc_montgomery = &neon::PointwiseAccMontgomery,
    .pointwise_acc_sub_montgomery = &neon::PointwiseAccSubMontgomery,
    .reduce32 = &neon::Reduce32,
    .caddq = &neon::CAddQ,
    .add = &neon::Add,
    .sub = &neon::Sub,
    .shift_left_d = &neon::ShiftLeftD,
    .power2round = &neon::Power2Round,
    .decompose_small = &neon::DecomposeSmall,
    .decompose_large = &neon::DecomposeLarge,
    .make_hint_small = &neon::MakeHintSmall,
    .make_hint_large = &neon::MakeHintLarge,
    .use_hint_small = &neon::UseHintSmall,
    .use_hint_large = &neon::UseHintLarge,
    .exceeds_norm = &neon::ExceedsNorm,
};

}  // namespace pqcd::kernels::mldsa
