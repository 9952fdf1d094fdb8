#!/usr/bin/env bash
# Installs the Debian 12 packages that pqcd needs to build, run and test. Idempotent: it only calls
# apt-get when something is missing. Usage: scripts/install-deps.sh [--runtime-only]
set -euo pipefail

build_pkgs=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang libclang-rt-14-dev clang-format valgrind
  libssl-dev libabsl-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libhwloc-dev hwloc libnuma-dev
  prometheus-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
test_pkgs=(prometheus yamllint python3 python3-grpcio python3-protobuf python3-yaml openssl procps curl)

pkgs=("${build_pkgs[@]}")
if [[ ${1:-} != "--runtime-only" ]]; then
  pkgs+=("${test_pkgs[@]}")
  # Node.js (interop tests): the machine may already carry its own Node.js + npm; use Debian's only
  # when there is none.
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
