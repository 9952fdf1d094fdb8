// The KEM operations computed in the calling process by pqcd's kernels, through the algorithm
// registry: the whole transport of pqcd-provider-inproc.so (the benchmark's reference), and the
// optional local fallback of pqcd-provider.so (`pqcd_fallback = local`) when the daemon cannot
// be reached. The private key is the daemon's expanded form, so either side may decapsulate
// what the other generated.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "pqcd/client/types.h"

namespace pqcd::provider::local {

absl::StatusOr<client::KeyPair> KeyGen(client::Algorithm algorithm);
absl::StatusOr<client::EncapsResult> Encaps(client::Algorithm algorithm,
                                            const std::string& public_key);
absl::StatusOr<client::DecapsResult> Decaps(client::Algorithm algorithm,
                                            const std::string& private_key,
                                            const std::string& ciphertext);

}  // namespace pqcd::provider::local
