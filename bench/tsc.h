// Time-stamp-counter brackets for the x86-64 benchmark harnesses (slhdsa-peers, kem-dsa-peers,
// ct-dudect): lfence; rdtsc; lfence before the measured call and rdtscp; lfence after it, so that
// neither earlier nor later instructions overlap the measured ones (../shared/PEERS.md's method).
#pragma once

#include <x86intrin.h>

#include <cstdint>

namespace pqcd::bench {

inline uint64_t TscStart() {
  _mm_lfence();
  const uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

inline uint64_t TscStop() {
  unsigned aux;
  const uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
}

}  // namespace pqcd::bench
