// Start-up self-test (in the spirit of FIPS 140-3 pre-operational self-tests): known-answer tests
// of every algorithm, run through the engine on the selected backend before the daemon serves.
//   - SHA-3, SHAKE, SHA-2, SM3: the digest of "abc" (published values).
//   - ML-KEM-512/768/1024 and ML-DSA-44/65/87: KeyGen from a fixed seed (the first ACVP keyGen case
//     of each parameter set), compared through SHA3-256(public key || private key) with the
//     expected value; then Encaps/Decaps agreement and implicit rejection of a tampered ciphertext,
//     and a deterministic Sign that Verify accepts and rejects for a changed message.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace pqcd::engine {
class Engine;
}

namespace pqcd::server {

// OK, or the first failure (naming the algorithm and the test).
absl::Status RunSelfTest(engine::Engine& engine, int* tests_run = nullptr);

}  // namespace pqcd::server
