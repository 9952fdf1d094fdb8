#!/usr/bin/env bash
# Runs ct_check under valgrind memcheck for one backend; any memcheck error fails the test.
# usage: run_ct.sh CT_CHECK_BINARY [portable|avx2]
set -euo pipefail
bin=$1
isa=${2:-portable}
if ! command -v valgrind >/dev/null 2>&1; then
  echo "SKIPPED: valgrind is not installed, the constant-time test cannot run (apt-get install valgrind)"
  exit 0
fi
exec valgrind --quiet --error-exitcode=99 --exit-on-first-error=no --track-origins=yes \
  --num-callers=30 "$bin" "$isa"
