#!/usr/bin/env bash
# deploy/systemd/pqcd.service:
# - PrivateUsers= stays off: in a private user namespace every local caller's SO_PEERCRED uid reads as
#   the overflow uid 65534, so all Unix-socket callers would share one identity and one set of held
#   keys (issue 45). Checked on the text here, and on systemd's own reading of the unit below.
# - every file:// page of Documentation= is installed by an `install` line of the unit's header, from
#   a file that exists in the repository;
# - systemd-analyze: the unit verifies (with ExecStart pointed at an existing binary, since pqcd is
#   not installed here) and its exposure score stays low.
# Usage: check_systemd.sh REPO_ROOT   (exit 77 = skipped: systemd-analyze not installed; the text
# checks have run by then)
set -euo pipefail
repo=$1
unit=$repo/deploy/systemd/pqcd.service
fail=0

# 1. PrivateUsers=: every assignment must be off (systemd's spellings of false, or empty = default).
while IFS= read -r line; do
  value=${line#*=}
  value=${value//[[:space:]]/}
  case ${value,,} in
    '' | no | false | off | 0) ;;
    *)
      echo "FAIL: $unit: '$line': PrivateUsers must stay off: peer credentials on the Unix socket are" \
        "the identity, and in a private user namespace every caller's uid becomes 65534 (one shared identity)"
      fail=1
      ;;
  esac
done < <(grep -E '^[[:space:]]*PrivateUsers[[:space:]]*=' "$unit" || true)
((fail == 0)) && echo "OK: PrivateUsers is off"

# 2. Documentation=: each file:///PATH is a destination of an `install` line in the header comment,
# and that line's source file exists in the repository.
docs=$(sed -n 's/^[[:space:]]*Documentation[[:space:]]*=[[:space:]]*//p' "$unit")
for uri in $docs; do
  [[ $uri == file://* ]] || continue
  path=${uri#file://}
  path_re=${path//./[.]}
  src=$(sed -n -E "s|^#[[:space:]]+install[[:space:]].*[[:space:]]([^[:space:]]+)[[:space:]]+${path_re}[[:space:]]*$|\\1|p" "$unit" | head -1)
  if [[ -z $src ]]; then
    echo "FAIL: $unit: Documentation= names $path, but no '# install ... SRC $path' line of the header installs it"
    fail=1
  elif [[ ! -f $repo/$src ]]; then
    echo "FAIL: $unit: Documentation= page $path is installed from $src, which is not in the repository"
    fail=1
  else
    echo "OK: Documentation= $path is installed from $src"
  fi
done
((fail == 0)) || exit 1

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
# PrivateUsers= as systemd reads the unit (drop-in syntax, line continuations and all), where
# systemd-analyze can say it as JSON (systemd 250+).
if json=$(systemd-analyze security --offline=yes --json=short ./pqcd.service 2>/dev/null); then
  set_flag=$(printf '%s' "$json" | grep -o '"set":[a-z]*,"name":"PrivateUsers="' | head -1 || true)
  case $set_flag in
    '"set":false,'*) echo "OK: systemd reads PrivateUsers= as off" ;;
    '') echo "note: systemd-analyze security did not report PrivateUsers=" ;;
    *)
      echo "FAIL: systemd reads PrivateUsers= in $unit as on: every Unix-socket caller would be unix:uid:65534"
      exit 1
      ;;
  esac
fi
