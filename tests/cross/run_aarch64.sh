#!/usr/bin/env bash
# Cross-builds the whole daemon for aarch64 with Debian's g++-aarch64-linux-gnu against the :arm64
# gRPC, Protobuf, Abseil, OpenSSL, hwloc, libnuma, spdlog and prometheus-cpp libraries
# (cmake/toolchains/aarch64-linux-gnu.cmake), in one build folder, and runs its tests under qemu's
# user-mode emulator through ctest (CMAKE_CROSSCOMPILING_EMULATOR). This proves that the daemon,
# not just the kernels, builds and passes on a non-x86 target, with the NEON backend selected.
#
# Built: pqcd, pqc, pqc-load (checked to be AArch64 ELF files; `pqcd --version` and `pqc --help`
# run under qemu as a smoke test), pqc-quickstart, and the test programs of the labels below.
# The other bench programs are not built.
# Run under qemu, by label (the tests start their own pqcd, pqc and pqc-load through the emulator:
# cmake/PqcdTestPrograms.cmake):
#   kernels   tests/kernels, with PQCD_TEST_QUICK=1 (below)
#   engine    tests/engine, with PQCD_STRESS_SCALE=0.02 (the queue stress: 8 producers x 20 000
#             jobs instead of x 1 000 000, as the ThreadSanitizer run of tests/run.sh scales it)
#   server    tests/server (unit tests, key store, the daemon end to end, TLS and identities, the
#             memory bound under overload) and tests/adversarial (its label is adversarial;server)
#   client    tests/client: the client library, pqc, pqc-load and the C++ quickstart against pqcd
# Not run here (x86 only, tests/run.sh runs them): interop (Node.js and Python clients: the same
# wire protocol, nothing architecture-specific), deploy (static checks of deploy/ files), encoding
# (pure-C++ DER/PEM codec, covered on x86), bench, and the constant-time check (valgrind, not built
# in a cross build). The PostgreSQL key store is configured off (-DPQCD_WITH_POSTGRES=OFF): libpq-dev
# is not Multi-Arch, so no arm64 libpq can be installed beside the host's.
# No test is retried: a test that fails once fails the run, as in the ASan stage of tests/run.sh.
# Tests that start daemons wait for conditions with deadlines generous enough for qemu.
#
# Timing, measured from a clean build folder without ccache on 2 cores that were also running two
# other builds (load 4-5): 17 min to build 211 steps, about 14 min of CPU time, so about 7-8 min on
# 2 idle cores; kernel tests 55 s, engine 3 s, server and client 2.5 min. Each phase prints its
# time.
#
# Usage: tests/cross/run_aarch64.sh [BUILD_DIR]   (default build-aarch64, relative to the repo)
# Needs: scripts/install-deps.sh (g++-aarch64-linux-gnu, qemu-user, the :arm64 libraries and the
#        unpacked prometheus-cpp-dev:arm64 in /opt/pqcd-cross/arm64).
# Environment:
#   JOBS               parallel compile and test jobs (default: nproc)
#   PQCD_VECTORS_DIR   the official vectors (default tests/vectors)
#   PQCD_TEST_QUICK    1 by default here: the longest tests take fewer iterations or skip their
#                      longest case under emulation (tests/common/test_support.h, Iterations()):
#                      the 10 000-test accumulated ML-KEM-768 run and 9/10 of the SampleInBall
#                      cases. PQCD_TEST_QUICK=0 runs everything in full (about 1 min more).
#   PQCD_STRESS_SCALE  0.02 by default here (the engine's stress sizes, see above)
#   PQCD_CROSS_CMAKE_ARGS  extra configure arguments (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
build=${1:-build-aarch64}
jobs=${JOBS:-$(nproc)}

for tool in aarch64-linux-gnu-g++ qemu-aarch64 cmake ninja readelf; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "run_aarch64.sh: $tool not found (run scripts/install-deps.sh)" >&2
    exit 1
  fi
done
export PQCD_VECTORS_DIR=${PQCD_VECTORS_DIR:-$root/tests/vectors}
export PQCD_TEST_QUICK=${PQCD_TEST_QUICK:-1}
export PQCD_STRESS_SCALE=${PQCD_STRESS_SCALE:-0.02}

start=$(date +%s)
phase_start=$start
phase_done() {
  local now
  now=$(date +%s)
  echo "aarch64: $1 in $((now - phase_start)) s ($((now - start)) s so far)"
  phase_start=$now
}

# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DPQCD_BUILD_ENGINE=ON -DPQCD_BUILD_SERVER=ON -DPQCD_BUILD_BENCH=ON -DPQCD_WITH_POSTGRES=OFF \
  -DPQCD_WERROR=ON ${PQCD_CROSS_CMAKE_ARGS:-} >/dev/null
if ! grep -qs 'set(CMAKE_SYSTEM_PROCESSOR "aarch64")' "$build"/CMakeFiles/*/CMakeSystem.cmake; then
  echo "run_aarch64.sh: $build is not an aarch64 cross build (stale build folder?)" >&2
  exit 1
fi
phase_done "configured"

labels='^(kernels|engine|server|client)$'
tests=$(ctest --test-dir "$build" -N -L "$labels" | awk '/Test +#/ {print $3}')
for label in kernels engine server client; do
  count=$(ctest --test-dir "$build" -N -L "^$label\$" | awk '/Test +#/ {n++} END {print n + 0}')
  if ((count == 0)); then
    echo "run_aarch64.sh: no $label tests registered in $build" >&2
    exit 1
  fi
done
# Tests are named after their program, except the ones that run a script (the quickstart example,
# whose programs are listed among the extra targets).
all_targets=$(ninja -C "$build" -t targets all | sed -n 's/^\([^:]*\): .*/\1/p' | sort -u)
targets="pqcd pqc pqc-load pqc-quickstart"
for t in $tests; do
  if grep -qxF "$t" <<<"$all_targets"; then targets+=" $t"; fi
done
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $targets
phase_done "built pqcd, pqc, pqc-load and $(wc -w <<<"$tests") test programs"

for program in server/pqcd client/pqc bench/pqc-load tests/test_isa; do
  if ! readelf -h "$build/$program" | grep -q 'Machine: *AArch64'; then
    echo "run_aarch64.sh: $build/$program is not an aarch64 binary" >&2
    exit 1
  fi
done
# The generated emulator wrappers (cmake/PqcdTestPrograms.cmake): what the tests start.
"$build/tests/emulated/pqcd" --version
"$build/tests/emulated/pqc" --help >/dev/null
"$build/tests/emulated/pqc-load" --help >/dev/null
phase_done "smoke test: pqcd --version, pqc --help, pqc-load --help under qemu"

ctest --test-dir "$build" -L '^kernels$' --output-on-failure -j "$jobs" --timeout 900
phase_done "kernel tests under qemu passed (PQCD_TEST_QUICK=$PQCD_TEST_QUICK)"
ctest --test-dir "$build" -L '^engine$' --output-on-failure -j "$jobs" --timeout 600
phase_done "engine tests under qemu passed (PQCD_STRESS_SCALE=$PQCD_STRESS_SCALE)"
ctest --test-dir "$build" -L '^(server|client)$' --output-on-failure -j "$jobs" --timeout 600
phase_done "server and client tests under qemu passed"
