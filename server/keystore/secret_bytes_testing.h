// Test-only observation point for SecretBytes zeroization.
//
// The hook runs when a SecretBytes releases its buffer, after the bytes were wiped and before the
// memory is unlocked and unmapped, so a test can check that the buffer is all zero without reading
// freed memory. Production code never sets it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pqcd::server::testing {

using SecretBytesReleaseHook = void (*)(const uint8_t* data, size_t size);

// Installs (or, with nullptr, removes) the hook; returns the previous one. Thread-safe.
SecretBytesReleaseHook SetSecretBytesReleaseHook(SecretBytesReleaseHook hook);

}  // namespace pqcd::server::testing
