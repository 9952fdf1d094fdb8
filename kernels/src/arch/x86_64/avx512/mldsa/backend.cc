// The ML-DSA table of the avx512 backend (mldsa/backend.h; listed in arch/backends.h). A hook is
// an AVX-512 kernel (avx512:: here) where one exists and was measured faster than the AVX2 kernel
// on an AVX-512 core (bench/RESULTS.md, "AVX-512 kernels (issue 26)"); the rest are the AVX2
// kernels, which every AVX-512 CPU can run.
#include "mldsa/backend.h"
#include "arch/x86_64/avx2/mldsa/mldsa_avx2.h"

namespace pqcd::kernels::mldsa {

extern const Backend kAvx512;
constinit const Backend kAvx512{
    .ntt = &avx2::Ntt,
    .invntt_to_mont = &avx2::InvNttToMont,
    .pointwise_montgomery = &avx2::PointwiseMontgomery,
    .pointwise_acc_montgomery = &avx2::PointwiseAccMontgomery,
    .pointwise_acc_sub_montgomery = &avx2::PointwiseAccSubMontgomery,
    .reduce32 = &avx2::Reduce32,
    .caddq = &avx2::CAddQ,
    .add = &avx2::Add,
    .sub = &avx2::Sub,
    .shift_left_d = &avx2::ShiftLeftD,
    .split_low9 = &avx2::SplitLow9,
    .split_low9_add_norm = &avx2::SplitLow9AddNorm,
    .power2round = &avx2::Power2Round,
    .decompose_small = &avx2::DecomposeSmall,
    .decompose_large = &avx2::DecomposeLarge,
    .make_hint_small = &avx2::MakeHintSmall,
    .make_hint_large = &avx2::MakeHintLarge,
    .use_hint_small = &avx2::UseHintSmall,
    .use_hint_large = &avx2::UseHintLarge,
    .exceeds_norm = &avx2::ExceedsNorm,
    .pack_t1 = &avx2::PackT1,
    .unpack_t1 = &avx2::UnpackT1,
    .unpack_t1_shifted = &avx2::UnpackT1Shifted,
    .power2round_pack_t1 = &avx2::Power2RoundPackT1,
    .pack_eta2 = &avx2::PackEta2,
    .pack_eta4 = &avx2::PackEta4,
    .unpack_eta2 = &avx2::UnpackEta2,
    .unpack_eta4 = &avx2::UnpackEta4,
    .pack_t0 = &avx2::PackT0,
    .unpack_t0 = &avx2::UnpackT0,
    .pack_z19 = &avx2::PackZ19,
    .unpack_z17 = &avx2::UnpackZ17,
    .unpack_z19 = &avx2::UnpackZ19,
    .pack_w1_small = &avx2::PackW1Small,
    .pack_w1_large = &avx2::PackW1Large,
    .decompose_pack_w1_small = &avx2::DecomposePackW1Small,
    .decompose_pack_w1_large = &avx2::DecomposePackW1Large,
    .use_hint_pack_w1_small = &avx2::UseHintPackW1Small,
    .use_hint_pack_w1_large = &avx2::UseHintPackW1Large,
    .reject_uniform = &avx2::RejectUniform,
    .reject_eta2 = &avx2::RejectEta2,
    .reject_eta4 = &avx2::RejectEta4,
    .sample_in_ball_steps = &avx2::SampleInBallSteps,
    .sample_in_ball_expand = &avx2::SampleInBallExpand,
};

}  // namespace pqcd::kernels::mldsa
