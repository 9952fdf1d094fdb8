#!/usr/bin/env bash
# Sets up a Debian 12 machine (apt-get installs what is missing), builds pqcd once and runs every test:
#   1. the Release build: unit, vector, integration and end-to-end tests (ctest)
#   2. a ThreadSanitizer build of the engine tests
#   3. the libFuzzer target (clang, ASan+UBSan) for 60 s from its seed corpus
# Environment: PQCD_VECTORS_DIR (default tests/vectors, in this repository), JOBS (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${JOBS:-$(nproc)}

scripts/install-deps.sh

export PQCD_VECTORS_DIR=${PQCD_VECTORS_DIR:-$root/tests/vectors}
if [[ ! -d $PQCD_VECTORS_DIR ]]; then
  echo "tests/run.sh: official vectors not found at $PQCD_VECTORS_DIR (set PQCD_VECTORS_DIR)" >&2
  exit 1
fi

start=$(date +%s)
echo "== Release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
echo "== Release tests ($(($(date +%s) - start)) s so far)"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 600

if [[ -d engine ]]; then
  echo "== ThreadSanitizer build of the engine tests ($(($(date +%s) - start)) s so far)"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPQCD_SANITIZE=thread \
    -DPQCD_BUILD_SERVER=OFF -DPQCD_BUILD_BENCH=OFF >/dev/null
  tsan_targets=$(ctest --test-dir build-tsan -N -L engine 2>/dev/null | awk '/Test +#/ {print $3}')
  # shellcheck disable=SC2086
  cmake --build build-tsan -j "$jobs" --target $tsan_targets
  PQCD_STRESS_SCALE=${PQCD_STRESS_SCALE:-0.1} TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build-tsan -L engine --output-on-failure -j "$jobs" --timeout 900
fi
echo "== libFuzzer target, ASan+UBSan, 60 s ($(($(date +%s) - start)) s so far)"
fuzz_rc=0
tests/fuzz/run_fuzz.sh build-fuzz "${PQCD_FUZZ_SECONDS:-60}" || fuzz_rc=$?
if ((fuzz_rc == 77)); then
  echo "fuzzing skipped (clang or its libFuzzer runtime is missing)"
elif ((fuzz_rc != 0)); then
  exit "$fuzz_rc"
fi
echo "== all tests passed in $(($(date +%s) - start)) s"
