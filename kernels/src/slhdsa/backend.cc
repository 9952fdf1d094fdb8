// The SLH-DSA table of each ISA (arch/backends.h) and the active one.
#include "slhdsa/backend.h"

#include <array>

#include "arch/backends.h"
#include "slhdsa/sha2.h"

namespace pqcd::kernels::slhdsa {

void portable::Sha256Lanes1(uint32_t* v, const uint8_t* const* blocks) {
  Sha256CompressPortable(v, blocks[0]);
}
void portable::Sha512Lanes1(uint64_t* v, const uint8_t* const* blocks) {
  Sha512Compress(v, blocks[0]);
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
