// The in-process transport of pqcd-provider-inproc.so, a reference for bench/tls_handshake.py
// only: the same provider (provider.cc) with its KEM calls computed in the calling process by
// pqcd's kernels through the algorithm registry, instead of by a pqcd daemon. It measures what
// the daemon path costs over the same arithmetic done in place; it is not installed and not for
// deployment (no key isolation from the TLS process, which is what pqcd is for).
#include "local_kem.h"
#include "transport.h"

namespace pqcd::provider {

class DirectLanes {};  // no lanes in process

Transport::Transport(TransportConfig config) : config_(std::move(config)) {
  config_.address = "in-process";
}

Transport::~Transport() = default;

absl::StatusOr<client::KeyPair> Transport::KeyGen(client::Algorithm algorithm) {
  return local::KeyGen(algorithm);
}

absl::StatusOr<client::EncapsResult> Transport::Encaps(client::Algorithm algorithm,
                                                       const std::string& public_key) {
  return local::Encaps(algorithm, public_key);
}

absl::StatusOr<client::DecapsResult> Transport::Decaps(client::Algorithm algorithm,
                                                       const std::string& private_key,
                                                       const std::string& ciphertext) {
  return local::Decaps(algorithm, private_key, ciphertext);
}

}  // namespace pqcd::provider
