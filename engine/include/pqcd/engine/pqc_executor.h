// KEM/DSA execution for the engine (library pqcd_engine_pqc, which links the ML-KEM and ML-DSA
// kernels). The server sets EngineOptions::pqc_executor = PqcKernelExecutor().
#pragma once

#include "pqcd/engine/engine.h"

namespace pqcd::engine {

KernelExecutor PqcKernelExecutor();

}  // namespace pqcd::engine
