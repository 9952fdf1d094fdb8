// The ML-DSA table of the avx512 backend (mldsa/backend.h; listed in arch/backends.h). A hook
// is an AVX-512 kernel (avx512:: here) where one exists and was measured faster than the AVX2
// kernel on an AVX-512 core (an Intel Xeon; bench/RESULTS.md, "AVX-512 kernels (issue 26)"); the
// AVX2 kernels, which every AVX-512 CPU can run, remain the fallback for a hook without one. At
// present every hook has one (pack_z17 too, which the avx2 table leaves portable).
#include "mldsa/backend.h"
#include "arch/x86_64/avx512/mldsa/mldsa_avx512.h"

namespace pqcd::kernels::mldsa {

extern const Backend kAvx512;
constinit const Backend kAvx512{
    .ntt = &avx512::Ntt,
    .invntt_to_mont = &avx512::InvNttToMont,
    .pointwise_montgomery = &avx512::PointwiseMontgomery,
    .pointwise_acc_montgomery = &avx512::PointwiseAccMontgomery,
    .pointwise_acc_sub_montgomery = &avx512::PointwiseAccSubMontgomery,
    .reduce32 = &avx512::Reduce32,
    .caddq = &avx512::CAddQ,
    .add = &avx512::Add,
    .sub = &avx512::Sub,
    .shift_left_d = &avx512::ShiftLeftD,
    .split_low9 = &avx512::SplitLow9,
    .split_low9_add_norm = &avx512::SplitLow9AddNorm,
    .power2round = &avx512::Power2Round,
    .decompose_small = &avx512::DecomposeSmall,
    .decompose_large = &avx512::DecomposeLarge,
    .make_hint_small = &avx512::MakeHintSmall,
    .make_hint_large = &avx512::MakeHintLarge,
    .use_hint_small = &avx512::UseHintSmall,
    .use_hint_large = &avx512::UseHintLarge,
    .exceeds_norm = &avx512::ExceedsNorm,
    .pack_t1 = &avx512::PackT1,
    .unpack_t1 = &avx512::UnpackT1,
    .unpack_t1_shifted = &avx512::UnpackT1Shifted,
    .power2round_pack_t1 = &avx512::Power2RoundPackT1,
    .pack_eta2 = &avx512::PackEta2,
    .pack_eta4 = &avx512::PackEta4,
    .unpack_eta2 = &avx512::UnpackEta2,
    .unpack_eta4 = &avx512::UnpackEta4,
    .pack_t0 = &avx512::PackT0,
    .unpack_t0 = &avx512::UnpackT0,
    .pack_z17 = &avx512::PackZ17,
    .pack_z19 = &avx512::PackZ19,
    .unpack_z17 = &avx512::UnpackZ17,
    .unpack_z19 = &avx512::UnpackZ19,
    .pack_w1_small = &avx512::PackW1Small,
    .pack_w1_large = &avx512::PackW1Large,
    .decompose_pack_w1_small = &avx512::DecomposePackW1Small,
    .decompose_pack_w1_large = &avx512::DecomposePackW1Large,
    .use_hint_pack_w1_small = &avx512::UseHintPackW1Small,
    .use_hint_pack_w1_large = &avx512::UseHintPackW1Large,
    .reject_uniform = &avx512::RejectUniform,
    .reject_eta2 = &avx512::RejectEta2,
    .reject_eta4 = &avx512::RejectEta4,
    .sample_in_ball_steps = &avx512::SampleInBallSteps,
    .sample_in_ball_expand = &avx512::SampleInBallExpand,
};

}  // namespace pqcd::kernels::mldsa
