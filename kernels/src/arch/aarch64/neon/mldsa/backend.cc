// The ML-DSA table of the neon backend (mldsa/backend.h; listed in arch/backends.h): all 45
// hooks (poly_neon.cc: arithmetic, split_low9, rounding, the fused rounding + packing passes;
// pack_neon.cc: every bit packing; sample_neon.cc: reject_uniform, reject_eta2/4, SampleInBall's
// steps and expansion).
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
    .split_low9 = &neon::SplitLow9,
    .split_low9_add_norm = &neon::SplitLow9AddNorm,
    .power2round = &neon::Power2Round,
    .decompose_small = &neon::DecomposeSmall,
    .decompose_large = &neon::DecomposeLarge,
    .make_hint_small = &neon::MakeHintSmall,
    .make_hint_large = &neon::MakeHintLarge,
    .use_hint_small = &neon::UseHintSmall,
    .use_hint_large = &neon::UseHintLarge,
    .exceeds_norm = &neon::ExceedsNorm,
    .pack_t1 = &neon::PackT1,
    .unpack_t1 = &neon::UnpackT1,
    .unpack_t1_shifted = &neon::UnpackT1Shifted,
    .power2round_pack_t1 = &neon::Power2RoundPackT1,
    .pack_eta2 = &neon::PackEta2,
    .pack_eta4 = &neon::PackEta4,
    .unpack_eta2 = &neon::UnpackEta2,
    .unpack_eta4 = &neon::UnpackEta4,
    .pack_t0 = &neon::PackT0,
    .unpack_t0 = &neon::UnpackT0,
    .pack_z17 = &neon::PackZ17,
    .pack_z19 = &neon::PackZ19,
    .unpack_z17 = &neon::UnpackZ17,
    .unpack_z19 = &neon::UnpackZ19,
    .pack_w1_small = &neon::PackW1Small,
    .pack_w1_large = &neon::PackW1Large,
    .decompose_pack_w1_small = &neon::DecomposePackW1Small,
    .decompose_pack_w1_large = &neon::DecomposePackW1Large,
    .use_hint_pack_w1_small = &neon::UseHintPackW1Small,
    .use_hint_pack_w1_large = &neon::UseHintPackW1Large,
    .reject_uniform = &neon::RejectUniform,
    .reject_eta2 = &neon::RejectEta2,
    .reject_eta4 = &neon::RejectEta4,
    .sample_in_ball_steps = &neon::SampleInBallSteps,
    .sample_in_ball_expand = &neon::SampleInBallExpand,
};

}  // namespace pqcd::kernels::mldsa
