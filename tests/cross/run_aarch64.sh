#!/usr/bin/env bash
# Cross-builds pqcd's code for aarch64 with Debian's g++-aarch64-linux-gnu
# (cmake/toolchains/aarch64-linux-gnu.cmake), in one build folder, and runs its tests under qemu's
# user-mode emulator through ctest (CMAKE_CROSSCOMPILING_EMULATOR).
#
# By default (tests/run.sh) only what differs on ARM is built and run: the kernels, whose NEON
# backend and ISA choice exist only there, and the engine (the topology and pinning on an ARM
# host, its queues):
#   kernels   tests/kernels, with PQCD_TEST_QUICK=1 (below)
#   engine    tests/engine, with PQCD_STRESS_SCALE=0.02 (the queue stress: 8 producers x 20 000
#             jobs instead of x 1 000 000, as the ThreadSanitizer run of tests/run.sh scales it)
# The daemon, client, lanes and key store are portable C++ over gRPC, Protobuf and the C++
# atomics: nothing in them is built differently for ARM, and qemu-user runs the emulated threads on
# the host's memory model (x86's stronger ordering), so a weak-ordering bug in the lanes or queues
# would not show here anyway. Building them took most of this stage (about 8 of 11 minutes); they
# are tested on x86 by the other stages of tests/run.sh.
#
# PQCD_CROSS_FULL=1 builds and runs the whole daemon as well, as this stage used to: pqcd, pqc,
# pqc-load (checked to be AArch64 ELF files; `pqcd --version` and `pqc --help` run under qemu as a
# smoke test), pqc-quickstart, and the tests labelled server (unit tests, key store, the daemon end
# to end, TLS and identities, the memory bound under overload, tests/adversarial) and client (the
# client library, pqc, pqc-load and the C++ quickstart against pqcd); the tests start their own
# pqcd, pqc and pqc-load through the emulator (cmake/PqcdTestPrograms.cmake). That needs the :arm64
# gRPC, Protobuf, Abseil, OpenSSL, hwloc, libnuma, spdlog and prometheus-cpp libraries that
# scripts/install-deps.sh installs; the PostgreSQL key store is configured off
# (-DPQCD_WITH_POSTGRES=OFF): libpq-dev is not Multi-Arch, so no arm64 libpq can be installed
# beside the host's.
# Never run here (x86 only, tests/run.sh runs them): interop, deploy, encoding, bench, and the
# constant-time check (valgrind, not built in a cross build).
# No test is retried: a test that fails once fails the run, as in the ASan stage of tests/run.sh.
#
# Timing on 2 idle cores: the default run builds the kernels, the engine and their tests (no gRPC
# code) and runs them (kernel tests about 55 s, engine 3 s); PQCD_CROSS_FULL=1 took about 11 min
# (8 to build 211 steps, 3.5 to test). Each phase prints its time.
#
# Usage: tests/cross/run_aarch64.sh [BUILD_DIR]   (default build-aarch64, relative to the repo)
# Needs: scripts/install-deps.sh (g++-aarch64-linux-gnu, qemu-user, the :arm64 libraries and the
#        unpacked prometheus-cpp-dev:arm64 in /opt/pqcd-cross/arm64).
# Environment:
#   JOBS               parallel compile and test jobs (default: nproc)
#   PQCD_VECTORS_DIR   the official vectors (default tests/vectors)
#   PQCD_CROSS_FULL    1: also the daemon, client and their tests (above); default 0
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

full=${PQCD_CROSS_FULL:-0}
if [[ $full == 1 ]]; then
  server=ON
  labels=(kernels engine server client)
else
  server=OFF
  labels=(kernels engine)
fi
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DPQCD_BUILD_ENGINE=ON -DPQCD_BUILD_SERVER=$server -DPQCD_BUILD_BENCH=$server \
  -DPQCD_WITH_POSTGRES=OFF -DPQCD_WERROR=ON ${PQCD_CROSS_CMAKE_ARGS:-} >/dev/null
if ! grep -qs 'set(CMAKE_SYSTEM_PROCESSOR "aarch64")' "$build"/CMakeFiles/*/CMakeSystem.cmake; then
  echo "run_aarch64.sh: $build is not an aarch64 cross build (stale build folder?)" >&2
  exit 1
fi
phase_done "configured (PQCD_CROSS_FULL=$full: ${labels[*]})"

label_re="^($(IFS='|'; echo "${labels[*]}"))\$"
tests=$(ctest --test-dir "$build" -N -L "$label_re" | awk '/Test +#/ {print $3}')
for label in "${labels[@]}"; do
  count=$(ctest --test-dir "$build" -N -L "^$label\$" | awk '/Test +#/ {n++} END {print n + 0}')
  if ((count == 0)); then
    echo "run_aarch64.sh: no $label tests registered in $build" >&2
    exit 1
  fi
done
# Tests are named after their program, except the ones that run a script (the quickstart example,
# whose programs are listed among the extra targets).
all_targets=$(ninja -C "$build" -t targets all | sed -n 's/^\([^:]*\): .*/\1/p' | sort -u)
targets=""
programs="tests/test_isa"
if [[ $full == 1 ]]; then
  targets="pqcd pqc pqc-load pqc-quickstart"
  programs="server/pqcd client/pqc bench/pqc-load $programs"
fi
for t in $tests; do
  if grep -qxF "$t" <<<"$all_targets"; then targets+=" $t"; fi
done
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $targets
phase_done "built $(wc -w <<<"$targets") programs"

for program in $programs; do
  if ! readelf -h "$build/$program" | grep -q 'Machine: *AArch64'; then
    echo "run_aarch64.sh: $build/$program is not an aarch64 binary" >&2
    exit 1
  fi
done
if [[ $full == 1 ]]; then
  # The generated emulator wrappers (cmake/PqcdTestPrograms.cmake): what the tests start.
  "$build/tests/emulated/pqcd" --version
  "$build/tests/emulated/pqc" --help >/dev/null
  "$build/tests/emulated/pqc-load" --help >/dev/null
  phase_done "smoke test: pqcd --version, pqc --help, pqc-load --help under qemu"
fi

# SLH-DSA has no ARM-specific code (portable Keccak and SHA-2 only): its ACVP file, 3 of the
# stage's minutes under qemu, runs on x86 in every build (in full in the Release one) and here only
# with PQCD_CROSS_FULL=1.
skip=()
[[ $full == 1 ]] || skip=(-E '^test_slhdsa_acvp$')
ctest --test-dir "$build" -L '^kernels$' "${skip[@]}" --output-on-failure -j "$jobs" --timeout 900
phase_done "kernel tests under qemu passed (PQCD_TEST_QUICK=$PQCD_TEST_QUICK)"
ctest --test-dir "$build" -L '^engine$' --output-on-failure -j "$jobs" --timeout 600
phase_done "engine tests under qemu passed (PQCD_STRESS_SCALE=$PQCD_STRESS_SCALE)"
if [[ $full == 1 ]]; then
  ctest --test-dir "$build" -L '^(server|client)$' --output-on-failure -j "$jobs" --timeout 600
  phase_done "server and client tests under qemu passed"
fi
