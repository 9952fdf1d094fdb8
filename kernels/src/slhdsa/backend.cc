// The SLH-DSA table of each ISA (arch/backends.h) and the active one.
#include "slhdsa/backend.h"

#include <array>
#include <cstring>

#include "arch/backends.h"
#include "slhdsa/sha2.h"

namespace pqcd::kernels::slhdsa {

void portable::Sha256Lanes1(uint32_t* v, const uint8_t* const* blocks) {
  Sha256CompressPortable(v, blocks[0]);
}
void portable::Sha512Lanes1(uint64_t* v, const uint8_t* const* blocks) {
  Sha512Compress(v, blocks[0]);
}

namespace {
// The block ADRSc || n message bytes (left zero) || padding of a one-block F or PRF.
void LayOut(uint8_t blk[64], const uint8_t* adrsc, size_t n) {
  std::memcpy(blk, adrsc, kAdrscBytes);
  std::memset(blk + kAdrscBytes, 0, n);
  PadAfterChain(blk, 64, 64, kAdrscBytes + n);
}
}  // namespace

void portable::Sha256Chains(const Sha256ChainsArgs& a) {
  void (*compress)(uint32_t*, const uint8_t*) =
      a.compress != nullptr ? a.compress : &Sha256CompressPortable;
  const size_t n = a.n;
  uint8_t blk[64];
  uint32_t h[8];
  for (size_t i = 0; i < a.count; ++i) {
    uint8_t* value = a.values[i];
    if (a.prf_adrsc != nullptr) {
      LayOutPrfBlock(blk, a, i);
      std::memcpy(h, a.chain, sizeof(h));
      compress(h, blk);
      for (size_t w = 0; w < n / 4; ++w) StoreBe32(value + 4 * w, h[w]);
    }
    // The address is written once per chain; each step changes its hash address and message.
    LayOut(blk, a.adrsc + i * kAdrscBytes, n);
    for (uint32_t t = 0; t < a.steps[i]; ++t) {  // chain lengths are public
      StoreBe32(blk + kAdrscBytes - 4, a.start[i] + t);
      std::memcpy(blk + kAdrscBytes, value, n);
      std::memcpy(h, a.chain, sizeof(h));
      compress(h, blk);
      for (size_t w = 0; w < n / 4; ++w) StoreBe32(value + 4 * w, h[w]);
    }
  }
  SecureZero(blk, sizeof(blk));  // SK.seed and secret chain values
  SecureZero(h, sizeof(h));
}

void portable::Sha512H(const Sha512HArgs& a) {
  const size_t n = a.n;
  uint8_t blk[128];
  uint64_t h[8];
  for (size_t i = 0; i < a.count; ++i) {
    std::memcpy(blk, a.adrsc + i * kAdrscBytes, kAdrscBytes);
    std::memcpy(blk + kAdrscBytes, a.in[i], 2 * n);
    PadAfterChain(blk, 128, 128, kAdrscBytes + 2 * n);
    std::memcpy(h, a.chain, sizeof(h));
    Sha512Compress(h, blk);
    for (size_t w = 0; w < n / 8; ++w) StoreBe64(a.out[i] + 8 * w, h[w]);
  }
  SecureZero(blk, sizeof(blk));
  SecureZero(h, sizeof(h));
}

constinit const Backend kPortable{};

namespace {
constinit const std::array<const Backend*, kIsaCount> kByIsa =
    TablesByIsa(&ArchBackend::slhdsa, &kPortable);
}  // namespace

const Backend& BackendFor(Isa isa) {
  return *kByIsa[static_cast<size_t>(isa)];
}

const Backend& ActiveBackend() {
  return *kByIsa[static_cast<size_t>(ActiveIsa())];
}

}  // namespace pqcd::kernels::slhdsa
