#!/usr/bin/env bash
# promtool: the scrape config and the rule files are valid, and the rules' unit tests pass.
# Usage: check_prometheus.sh REPO_ROOT   (exit 77 = skipped: promtool not installed)
set -euo pipefail
dir=$1/deploy/prometheus
if ! command -v promtool >/dev/null 2>&1; then
  echo "SKIP: promtool not installed (Debian package prometheus)"
  exit 77
fi
promtool --version 2>&1 | head -1
promtool check config "$dir/prometheus.yml"
promtool check rules "$dir"/pqcd-rules.yml "$dir"/pqcd-alerts.yml
shopt -s nullglob
tests=("$dir"/tests/*.test.yml)
((${#tests[@]} > 0)) || { echo "FAIL: no rule unit tests in $dir/tests"; exit 1; }
promtool test rules "${tests[@]}"
