#!/usr/bin/env bash
# systemd-analyze: the unit verifies (with ExecStart pointed at an existing binary, since pqcd is not
# installed here) and its exposure score stays low. Usage: check_systemd.sh REPO_ROOT
# (exit 77 = skipped: systemd-analyze not installed)
set -euo pipefail
unit=$1/deploy/systemd/pqcd.service
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze not installed"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's#^ExecStart=/usr/local/bin/pqcd#ExecStart=/bin/true#' "$unit" >"$tmp/pqcd.service"
cd "$tmp"
out=$(systemd-analyze verify ./pqcd.service 2>&1) || { echo "$out"; echo "FAIL: systemd-analyze verify"; exit 1; }
if [[ -n $out ]]; then
  echo "$out"
  echo "FAIL: systemd-analyze verify printed warnings"
  exit 1
fi
echo "OK: systemd-analyze verify pqcd.service"
# Exposure: 0 (best) .. 10 (worst); the threshold is on the 0..100 scale.
if systemd-analyze security --help 2>&1 | grep -q -- '--threshold'; then
  systemd-analyze security --offline=yes --threshold=20 ./pqcd.service | tail -1
  echo "OK: exposure at most 2.0"
fi
