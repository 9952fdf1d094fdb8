#!/usr/bin/env bash
# Sets up a Debian 12 machine (apt-get installs what is missing), builds pqcd and runs every test:
#   0. clang-format --dry-run --Werror over the C++ sources git knows (fails on any unformatted file)
#   1. the AddressSanitizer + UndefinedBehaviorSanitizer build (RelWithDebInfo), clang-tidy over the
#      C++ files changed since PQCD_TIDY_BASE (tests/tidy_changed.sh), then every ctest test
#      (unit, vector, integration, end-to-end, interop, deploy) except the constant-time check;
#      any ASan, UBSan or LeakSanitizer report fails the run (tests/lsan.supp silences leaks that
#      are entirely inside third-party libraries, never ours)
#   2. a plain Release build of the kernels only, for the valgrind constant-time check (label ct),
#      which cannot run under ASan, and the SLH-DSA vectors in full (ASan runs a sample)
#   2b. a clang MemorySanitizer build of the kernels for the AVX-512 backend's constant-time check
#       (label ct_msan), which valgrind cannot execute
#   3. a ThreadSanitizer build of the engine tests
#   3b. the aarch64 cross build of the kernels and the engine, their tests run under qemu
#       (tests/cross/run_aarch64.sh: what differs on ARM; PQCD_CROSS_FULL=1 adds the daemon)
#   4. the libFuzzer target (clang, ASan+UBSan) for 60 s from its seed corpus
# Each stage's time is printed at the end (also when a stage fails).
# Every build is configured with -DPQCD_WERROR=ON: a compiler warning fails the run.
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
# Each stage's time, printed together when the run ends (passed or not): stage NAME ends the
# stage in progress and starts NAME.
stage_names=()
stage_secs=()
stage_name=""
stage_start=$start
stage() {
  local now
  now=$(date +%s)
  if [[ -n $stage_name ]]; then
    stage_names+=("$stage_name")
    stage_secs+=($((now - stage_start)))
  fi
  stage_name=$1
  stage_start=$now
  [[ -n $1 ]] && echo "== $1 ($((now - start)) s so far)"
  return 0
}
stage_summary() {
  local rc=$? i
  stage ""
  echo "== stage times ($( ((rc == 0)) && echo passed || echo "FAILED, exit $rc"))"
  for i in "${!stage_names[@]}"; do
    printf '%6d s  %s\n' "${stage_secs[$i]}" "${stage_names[$i]}"
  done
  printf '%6d s  total (after the installs)\n' $(($(date +%s) - start))
}
trap stage_summary EXIT
stage "clang-format check"
# The tracked C++ sources, plus new ones not yet committed (untracked but not ignored).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  cxx_sources=()
  while IFS= read -r f; do
    [[ -f $f ]] && cxx_sources+=("$f")
  done < <(git ls-files --cached --others --exclude-standard -- '*.cc' '*.h' | sort -u)
  if ((${#cxx_sources[@]} > 0)) &&
    ! format_out=$(clang-format --dry-run --Werror "${cxx_sources[@]}" 2>&1); then
    unformatted=$(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$format_out" | sort -u)
    if [[ -z $unformatted ]]; then
      echo "$format_out" >&2
      echo "tests/run.sh: clang-format failed (see above)" >&2
    else
      echo "tests/run.sh: these files are not formatted as .clang-format says:" >&2
      sed 's/^/  /' <<<"$unformatted" >&2
      echo "Fix: clang-format -i $(tr '\n' ' ' <<<"$unformatted")" >&2
    fi
    exit 1
  fi
else
  echo "not a git checkout: clang-format check skipped"
fi

stage "ASan+UBSan build"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPQCD_SANITIZE=address \
  -DPQCD_WERROR=ON >/dev/null
cmake --build build-asan -j "$jobs"
stage "clang-tidy on the changed C++ files"
tests/tidy_changed.sh build-asan
stage "ASan+UBSan tests"
# Every process a test starts (the pqcd daemon, pqc, pqc-load) inherits these: the first report
# aborts that process with a non-zero status, which fails its test. UBSan is also built with
# -fno-sanitize-recover. LeakSanitizer runs at each process's exit.
(
  export ASAN_OPTIONS=detect_leaks=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0
  # No reruns: a test that fails once fails the run, so a flaky test shows instead of hiding
  # behind a second try (tests wait for conditions with generous deadlines, never for a fixed
  # time; docs/DEVELOPING.md).
  ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 900 -LE '^ct$' \
    -E '^(server_test_memory_under_overload|adversarial_.*)$'
  # The resident-set tests (the memory test, and the attacks of tests/adversarial, which bound
  # the daemon's RSS while attacked) need freed memory to be reusable; ASan's quarantine (256 MiB
  # of freed blocks held back to catch use-after-free) grows RSS for minutes instead. Without the
  # quarantine they still run under ASan, UBSan and LeakSanitizer.
  ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=0:thread_local_quarantine_size_kb=0 \
    ctest --test-dir build-asan --output-on-failure --timeout 900 \
    -R '^(server_test_memory_under_overload|adversarial_.*)$'
)

stage "Release build of the kernels + the constant-time check (valgrind)"
cmake -S . -B build-ct -G Ninja -DCMAKE_BUILD_TYPE=Release -DPQCD_BUILD_SERVER=OFF \
  -DPQCD_BUILD_BENCH=OFF -DPQCD_WERROR=ON >/dev/null
ct_targets=$(ctest --test-dir build-ct -N -L '^ct$' 2>/dev/null | awk '/Test +#/ {print $3}')
if [[ -n $ct_targets ]]; then
  cmake --build build-ct -j "$jobs" --target ct_check
  ctest --test-dir build-ct -L '^ct$' --output-on-failure -j "$jobs" --timeout 900
  # The SLH-DSA vectors in full (every sigGen case: ~1 s per 's'-set signature), which the
  # sanitizer and qemu runs only sample (tests/kernels/test_slhdsa_acvp.cc). About 4 min.
  stage "SLH-DSA ACVP vectors in full, Release"
  cmake --build build-ct -j "$jobs" --target test_slhdsa_acvp
  ctest --test-dir build-ct -R '^test_slhdsa_acvp$' --output-on-failure --timeout 1200
else
  # scripts/install-deps.sh installs valgrind: a missing check is a broken setup, not a pass.
  echo "tests/run.sh: the constant-time check is not registered (valgrind/memcheck.h missing)" >&2
  exit 1
fi

# The AVX-512 backend's constant-time check: valgrind cannot execute AVX-512, so ct_check runs in a
# clang MemorySanitizer build of the kernels (tests/ct/CMakeLists.txt). About 1 min; a CPU without
# AVX-512 skips it (reported by ctest as skipped).
stage "MemorySanitizer build: the AVX-512 constant-time check"
CC=clang CXX=clang++ cmake -S . -B build-ct-msan -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPQCD_SANITIZE=memory -DPQCD_BUILD_SERVER=OFF -DPQCD_BUILD_BENCH=OFF -DPQCD_WERROR=ON >/dev/null
cmake --build build-ct-msan -j "$jobs" --target ct_check
ctest --test-dir build-ct-msan -L '^ct_msan$' --output-on-failure -j "$jobs" --timeout 900

if [[ -d engine ]]; then
  stage "ThreadSanitizer build and the engine tests"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPQCD_SANITIZE=thread \
    -DPQCD_BUILD_SERVER=OFF -DPQCD_BUILD_BENCH=OFF -DPQCD_WERROR=ON >/dev/null
  tsan_targets=$(ctest --test-dir build-tsan -N -L engine 2>/dev/null | awk '/Test +#/ {print $3}')
  # shellcheck disable=SC2086
  cmake --build build-tsan -j "$jobs" --target $tsan_targets
  PQCD_STRESS_SCALE=${PQCD_STRESS_SCALE:-0.1} TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build-tsan -L engine --output-on-failure -j "$jobs" --timeout 900
fi
stage "aarch64 cross build + kernel and engine tests under qemu"
# What differs on ARM, built once with g++-aarch64-linux-gnu: the kernels (the NEON backend, the
# ISA choice) and the engine, their tests run under qemu-aarch64 with PQCD_TEST_QUICK=1 and
# PQCD_STRESS_SCALE=0.02. The daemon and client are portable C++ tested by the stages above (and
# qemu-user would run them on the host's memory model anyway); PQCD_CROSS_FULL=1 builds and
# tests them under qemu too (about 8 more minutes). The script prints each phase's time.
tests/cross/run_aarch64.sh build-aarch64
stage "libFuzzer targets, ASan+UBSan, ${PQCD_FUZZ_SECONDS:-60} s"
fuzz_rc=0
tests/fuzz/run_fuzz.sh build-fuzz "${PQCD_FUZZ_SECONDS:-60}" || fuzz_rc=$?
if ((fuzz_rc == 77)); then
  echo "fuzzing skipped (clang or its libFuzzer runtime is missing)"
elif ((fuzz_rc != 0)); then
  exit "$fuzz_rc"
fi
echo "== all tests passed in $(($(date +%s) - start)) s"
