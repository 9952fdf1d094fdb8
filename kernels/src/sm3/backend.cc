// The SM3 table of each ISA (arch/backends.h) and the active one.
#include "sm3/backend.h"

#include <array>

#include "arch/backends.h"

namespace pqcd::kernels::sm3 {

constinit const Backend kPortable{};

namespace {
constinit const std::array<const Backend*, kIsaCount> kByIsa =
    TablesByIsa(&ArchBackend::sm3, &kPortable);
}  // namespace

const Backend& BackendFor(Isa isa) {
  return *kByIsa[static_cast<size_t>(isa)];
}

const Backend& ActiveBackend() {
  return *kByIsa[static_cast<size_t>(ActiveIsa())];
}

}  // namespace pqcd::kernels::sm3
