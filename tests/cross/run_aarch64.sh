#!/usr/bin/env bash
# Cross-builds the kernels and their tests (tests/kernels) for aarch64 with Debian's
# g++-aarch64-linux-gnu and runs them under qemu's user-mode emulator, through ctest
# (cmake/toolchains/aarch64-linux-gnu.cmake sets CMAKE_CROSSCOMPILING_EMULATOR). This proves that
# everything except the x86 backends builds and passes on a non-x86 target (there, only the
# portable backend exists: kernels/src/arch/backends.h).
#
# Usage: tests/cross/run_aarch64.sh [BUILD_DIR]   (default build-aarch64, relative to the repo)
# Needs: scripts/install-deps.sh (g++-aarch64-linux-gnu, qemu-user, libabsl-dev:arm64,
#        libssl-dev:arm64, libgtest-dev:arm64).
# Environment:
#   JOBS               parallel compile and test jobs (default: nproc)
#   PQCD_VECTORS_DIR   the official vectors (default tests/vectors)
#   PQCD_TEST_QUICK    1 by default here: the longest tests take fewer iterations or skip their
#                      longest case under emulation (tests/common/test_support.h, Iterations()):
#                      the 10 000-test accumulated ML-KEM-768 run and 9/10 of the SampleInBall
#                      cases. PQCD_TEST_QUICK=0 runs everything in full (about 1 min more).
#   PQCD_CROSS_CMAKE_ARGS  extra configure arguments (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
build=${1:-build-aarch64}
jobs=${JOBS:-$(nproc)}

for tool in aarch64-linux-gnu-g++ qemu-aarch64 cmake ninja; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "run_aarch64.sh: $tool not found (run scripts/install-deps.sh)" >&2
    exit 1
  fi
done
export PQCD_VECTORS_DIR=${PQCD_VECTORS_DIR:-$root/tests/vectors}
export PQCD_TEST_QUICK=${PQCD_TEST_QUICK:-1}

t0=$(date +%s)
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DPQCD_BUILD_ENGINE=OFF -DPQCD_BUILD_SERVER=OFF -DPQCD_BUILD_BENCH=OFF -DPQCD_WERROR=ON \
  ${PQCD_CROSS_CMAKE_ARGS:-} >/dev/null
if ! grep -qs 'set(CMAKE_SYSTEM_PROCESSOR "aarch64")' "$build"/CMakeFiles/*/CMakeSystem.cmake; then
  echo "run_aarch64.sh: $build is not an aarch64 cross build (stale build folder?)" >&2
  exit 1
fi
targets=$(ctest --test-dir "$build" -N -L '^kernels$' | awk '/Test +#/ {print $3}')
if [[ -z $targets ]]; then
  echo "run_aarch64.sh: no kernel tests registered in $build" >&2
  exit 1
fi
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $targets
t1=$(date +%s)
echo "aarch64: built $(wc -w <<<"$targets") kernel test programs in $((t1 - t0)) s"
if ! readelf -h "$build/tests/test_isa" | grep -q 'Machine: *AArch64'; then
  echo "run_aarch64.sh: $build/tests/test_isa is not an aarch64 binary" >&2
  exit 1
fi
ctest --test-dir "$build" -L '^kernels$' --output-on-failure -j "$jobs" --timeout 900
echo "aarch64: kernel tests under qemu passed in $(($(date +%s) - t1)) s" \
  "(PQCD_TEST_QUICK=$PQCD_TEST_QUICK)"
