// The SIMD backends of this build's architecture: one row per backend, naming the table it gives
// each algorithm family. This is the only place that ties an ISA to backend code.
//
// A family's table (keccak/backend.h, sm3/backend.h, mlkem/backend.h, mldsa/backend.h) is a struct
// of hooks whose defaults are the portable kernels; a backend table sets only the hooks it
// implements. An empty entry in a row means "this family runs its portable code on that backend".
// Each family picks its column at compile time (TablesByIsa below, in <family>/backend.cc), so a
// library references only its own family's tables.
//
// The code and the tables of a backend live in arch/<architecture>/<isa>/<family>/ (the tables in
// backend.cc there, compiled with the backend's flags); kernels/CMakeLists.txt builds that folder
// only for its architecture (PQCD_ARCH_ISAS). To add a backend: its folder, its tables declared
// and listed in a row below, and its Isa value (pqcd/kernels/isa.h, isa.cc); see docs/backends.md.
#pragma once

#include <array>
#include <cstddef>

#include "keccak/backend.h"
#include "mldsa/backend.h"
#include "mlkem/backend.h"
#include "pqcd/kernels/isa.h"
#include "slhdsa/backend.h"
#include "sm3/backend.h"

namespace pqcd::kernels {

#if defined(__x86_64__)
// arch/x86_64/avx2/<family>/backend.cc
namespace keccak {
extern const Backend kAvx2;
}
namespace sm3 {
extern const Backend kAvx2;
}
namespace mlkem {
extern const Backend kAvx2;
}
namespace mldsa {
extern const Backend kAvx2;
}
namespace slhdsa {
extern const Backend kAvx2;
}
// arch/x86_64/avx512/<family>/backend.cc
namespace keccak {
extern const Backend kAvx512;
}
namespace sm3 {
extern const Backend kAvx512;
}
namespace mlkem {
extern const Backend kAvx512;
}
namespace mldsa {
extern const Backend kAvx512;
}
namespace slhdsa {
extern const Backend kAvx512;
}
#endif

#if defined(__aarch64__)
// arch/aarch64/neon/<family>/backend.cc
namespace keccak {
// The NEON row's Keccak: kNeonSha3's hooks while UseNeonSha3Keccak(true), else the portable ones.
extern const Backend kNeonAuto;
// The plain-ASIMD two-states-per-vector permutation: in no row (tested, counted).
extern const Backend kNeon;
// Set by isa.cc: on when the CPU reports HWCAP_SHA3, before the NEON self-check (which then checks
// these kernels; off again if they fail it), and again when a test masks the feature. Off until
// detection has run (kNeonAuto then runs the scalar code).
void UseNeonSha3Keccak(bool on);
bool NeonSha3KeccakInUse();
}  // namespace keccak
// arch/aarch64/neon_sha3/keccak/backend.cc (built with -march=armv8.2-a+sha3): Keccak with EOR3,
// RAX1, XAR and BCAX, two states per vector. Only for CPUs with HWCAP_SHA3; reached through
// kNeonAuto (no Isa of its own) and by the differential tests.
namespace keccak {
extern const Backend kNeonSha3;
}
namespace mlkem {
extern const Backend kNeon;
}
namespace mldsa {
extern const Backend kNeon;
}
#endif

// One family's entry in a row: the backend's table, or (default) none, meaning portable. A flag
// rather than a null test on the address: GCC does not fold `&extern_table != nullptr` in a
// constant expression under -fsanitize=undefined.
template <class Table>
struct Column {
  const Table* table = nullptr;
  bool provided = false;
};
template <class Table>
constexpr Column<Table> Use(const Table& table) {
  return {&table, true};
}

struct ArchBackend {
  Isa isa;
  Column<keccak::Backend> keccak;
  Column<sm3::Backend> sm3;
  Column<mlkem::Backend> mlkem;
  Column<mldsa::Backend> mldsa;
  Column<slhdsa::Backend> slhdsa;  // SHA-256 lanes for the SHA2 sets
};

inline constexpr ArchBackend kArchBackends[] = {
    {Isa::kPortable, {}, {}, {}, {}, {}},
#if defined(__x86_64__)
    // AVX2 + BMI1/BMI2 (+ OS-enabled YMM state).
    {Isa::kAvx2, Use(keccak::kAvx2), Use(sm3::kAvx2), Use(mlkem::kAvx2), Use(mldsa::kAvx2),
     Use(slhdsa::kAvx2)},
    // AVX-512 F/BW/VL/DQ: its own Keccak (x8 in ZMM, x4 with VL rotates), SM3 (x16), SLH-DSA's
    // SHA-256 (x16), and ML-KEM and ML-DSA tables whose hooks are AVX-512 kernels where those
    // were measured faster, the AVX2 kernels elsewhere (avx512/<family>/backend.cc).
    {Isa::kAvx512, Use(keccak::kAvx512), Use(sm3::kAvx512), Use(mlkem::kAvx512),
     Use(mldsa::kAvx512), Use(slhdsa::kAvx512)},
#endif
#if defined(__aarch64__)
    // ASIMD (NEON): ML-KEM all 21 hooks; ML-DSA all 45 hooks; SM3 portable.
    // Keccak: keccak::kNeonAuto, i.e. the SHA-3-extension kernels
    // (EOR3/RAX1/XAR/BCAX, two states per vector: keccak::kNeonSha3) on CPUs with HWCAP_SHA3, else
    // the scalar permutation (isa.cc sets which). Chosen from instruction counts under qemu
    // (bench/RESULTS.md, "NEON under qemu"): four states take 4,059 instructions with SHA-3
    // against 15,387 scalar, one state 2,137 against 3,690, and whole ML-KEM-768 operations 3.1x
    // fewer than portable (1.4x with the scalar Keccak). Cycles need real cores: the SHA-3
    // instructions' throughput differs between cores, so the single-state path in particular is
    // to be timed there before it is trusted to win everywhere. The plain-ASIMD x2 permutation
    // (keccak::kNeon) stays out of the row: 1.5x the scalar instructions (a rotate is SHL + SRI).
    {Isa::kNeon, Use(keccak::kNeonAuto), {}, Use(mlkem::kNeon), Use(mldsa::kNeon), {}},
#endif
};

// One family's tables indexed by Isa: the row's table where a row names one, else `portable`.
// Evaluated at compile time (the result initializes a constinit array in <family>/backend.cc).
template <class Table>
consteval std::array<const Table*, kIsaCount> TablesByIsa(Column<Table> ArchBackend::*column,
                                                          const Table* portable) {
  std::array<const Table*, kIsaCount> tables{};
  for (const Table*& t : tables) t = portable;
  for (const ArchBackend& row : kArchBackends) {
    if (static_cast<size_t>(row.isa) >= kIsaCount) throw "Isa out of range: update kIsaCount";
    if ((row.*column).provided) tables[static_cast<size_t>(row.isa)] = (row.*column).table;
  }
  return tables;
}

}  // namespace pqcd::kernels
