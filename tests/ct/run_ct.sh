#!/usr/bin/env bash
# Runs ct_check under valgrind memcheck for one backend; any memcheck error fails the test, and so
# does a missing valgrind (PQCD_CT_ALLOW_SKIP=1 skips instead).
# usage: run_ct.sh CT_CHECK_BINARY [portable|avx2] [--control=NAME]
set -euo pipefail
bin=$1
isa=${2:-portable}
shift $(($# < 2 ? $# : 2))
if ! command -v valgrind >/dev/null 2>&1; then
  # A skipped constant-time check must not read as a pass: fail, unless the caller opted out.
  if [[ ${PQCD_CT_ALLOW_SKIP:-0} == 1 ]]; then
    echo "SKIPPED: valgrind is not installed (PQCD_CT_ALLOW_SKIP=1)"
    exit 0
  fi
  echo "FAILED: valgrind is not installed, the constant-time test cannot run" \
    "(apt-get install valgrind, or PQCD_CT_ALLOW_SKIP=1 to skip it knowingly)" >&2
  exit 1
fi
exec valgrind --quiet --error-exitcode=99 --exit-on-first-error=no --track-origins=yes \
  --num-callers=30 "$bin" "$isa" "$@"
