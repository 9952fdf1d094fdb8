// Test-only hooks of SecretBytes: an observation point for zeroization, and a switch that makes
// mlock fail (sanitizer runtimes turn mlock into a no-op, so RLIMIT_MEMLOCK alone cannot be used
// to test the refusal of unlocked keys there).
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

// While set, every new SecretBytes behaves as if mlock had failed (locked() is false). Returns the
// previous setting. Thread-safe. Production code never sets it.
bool SetMlockFailureForTesting(bool fail);

}  // namespace pqcd::server::testing
