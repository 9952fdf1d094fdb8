#!/usr/bin/env bash
# clang-tidy over the C++ source files (.cc) that changed since PQCD_TIDY_BASE (default HEAD~1: the
# last commit, so CI checks what was just submitted) plus any uncommitted change, with the
# compile commands of BUILD_DIR (a configured, built tree: the generated protobuf headers must
# exist). Any finding fails. The checks are bug patterns with few false positives (use after move,
# dangling views, infinite loops, memset misuse, moves that copy, copies that
# could be references, ignored results that must not be ignored); the list is here, not in a
# .clang-tidy file, so that editors' own settings are not changed by it.
# Usage: tests/tidy_changed.sh BUILD_DIR     Environment: PQCD_TIDY_BASE, JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tests/tidy_changed.sh BUILD_DIR}
base=${PQCD_TIDY_BASE:-HEAD~1}
jobs=${JOBS:-$(nproc)}
checks='-*,bugprone-use-after-move,bugprone-dangling-handle,bugprone-infinite-loop,'
checks+='bugprone-string-constructor,bugprone-suspicious-memset-usage,'
checks+='bugprone-undefined-memory-manipulation,bugprone-move-forwarding-reference,'
checks+='bugprone-unused-return-value,performance-move-const-arg,'
checks+='performance-unnecessary-copy-initialization'

if ! command -v clang-tidy >/dev/null 2>&1; then
  echo "tidy_changed.sh: clang-tidy not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if [[ ! -f $build/compile_commands.json ]]; then
  echo "tidy_changed.sh: $build/compile_commands.json missing (configure and build $build first)" >&2
  exit 1
fi
if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  echo "tidy_changed.sh: base $base is not a commit here (a shallow clone?); nothing checked"
  exit 0
fi
# Changed since the base (committed or not) and still present; only files the build compiles.
mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- '*.cc' |
  while IFS= read -r f; do
    if [[ -f $f ]] && grep -qF "\"$(pwd)/$f\"" "$build/compile_commands.json"; then echo "$f"; fi
  done)
if ((${#files[@]} == 0)); then
  echo "tidy_changed.sh: no compiled C++ file changed since $base"
  exit 0
fi
echo "tidy_changed.sh: ${#files[@]} file(s) changed since $base: ${files[*]}"
# -Wno-unknown-warning-option: the compile commands are gcc's, and clang does not know all of its
# warning flags.
printf '%s\n' "${files[@]}" |
  xargs -P "$jobs" -n 1 clang-tidy -p "$build" --quiet --checks="$checks" --warnings-as-errors='*' \
    --extra-arg=-Wno-unknown-warning-option
echo "tidy_changed.sh: clean"
