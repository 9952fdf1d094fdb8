#!/usr/bin/env bash
# Installs the Debian 12 packages that pqcd needs to build, run and test. Idempotent: it only calls
# apt-get when something is missing. Usage: scripts/install-deps.sh [--runtime-only]
set -euo pipefail

build_pkgs=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang libclang-rt-14-dev clang-format clang-tidy valgrind
  libssl-dev libabsl-dev libpq-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libhwloc-dev hwloc libnuma-dev
  prometheus-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
test_pkgs=(postgresql prometheus yamllint python3 python3-grpcio python3-protobuf python3-yaml openssl procps curl
           nginx-light chromium)  # nginx-light, chromium: the provider's end-to-end tests (tests/provider)

pkgs=("${build_pkgs[@]}")
if [[ ${1:-} != "--runtime-only" ]]; then
  pkgs+=("${test_pkgs[@]}")
  # Node.js (interop tests): the machine may already carry its own Node.js + npm; use Debian's only
  # when there is none.
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
fi

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive

missing=()
for p in "${pkgs[@]}"; do
  installed "$p" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The aarch64 cross build of the daemon (pqcd, pqc, pqc-load) and its tests, run under qemu
# (tests/cross/): the cross compiler, qemu's user-mode emulator and the arm64 builds of the
# libraries they link (multiarch). The host's protoc and grpc_cpp_plugin (amd64, installed above)
# generate the code. Not needed to build or run pqcd itself; only on x86-64 (amd64) hosts.
host_arch=$(dpkg --print-architecture)
if [[ ${1:-} != "--runtime-only" && $host_arch == amd64 ]]; then
  cross_tools=(g++-aarch64-linux-gnu qemu-user)
  # Multi-Arch: same libraries: dpkg wants the arm64 and amd64 copies at one version, so the arm64
  # one is asked for at the installed amd64 version when the archive still has it (no upgrade of
  # the host's libraries as a side effect).
  # (The runtime library of each -dev package is listed beside it: it is Multi-Arch: same too.)
  cross_libs=(
    libabsl-dev libabsl20220623 libssl-dev libssl3 libgtest-dev
    libgrpc++-dev libgrpc++1.51 libgrpc-dev libgrpc29 libprotobuf-dev libprotobuf32
    libprotobuf-lite32 libhwloc-dev libhwloc15 libnuma-dev libnuma1 libspdlog-dev libspdlog1.10
    libfmt-dev libfmt9 libbenchmark-dev libbenchmark1debian
    # prometheus-cpp: the runtime libraries, and what its CMake package asks for (find_dependency:
    # civetweb, CURL, ZLIB); prometheus-cpp-dev itself is unpacked below.
    libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libprometheus-cpp-push1.0
    libcivetweb-dev libcivetweb1 libcurl4-openssl-dev libcurl4 zlib1g-dev zlib1g
  )
  cross_missing=()
  for p in "${cross_tools[@]}"; do
    installed "$p" || cross_missing+=("$p")
  done
  for p in "${cross_libs[@]}"; do
    installed "$p:arm64" || cross_missing+=("$p:arm64")
  done
  if ((${#cross_missing[@]} > 0)); then
    echo "install-deps: installing ${cross_missing[*]} (aarch64 cross build)"
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
      $SUDO dpkg --add-architecture arm64
    fi
    $SUDO apt-get update -qq
    want=()
    for p in "${cross_missing[@]}"; do
      if [[ $p == *:arm64 ]]; then
        host_version=$(dpkg-query -W -f='${Version}' "${p%:arm64}:$host_arch" 2>/dev/null || true)
        if [[ -n $host_version ]] &&
          apt-cache madison "$p" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' |
          grep -qxF "$host_version"; then
          p="$p=$host_version"
        fi
      fi
      want+=("$p")
    done
    $SUDO apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
  fi

  # prometheus-cpp-dev:arm64 cannot be installed beside prometheus-cpp-dev:amd64: it depends on the
  # civetweb program package, which is not Multi-Arch, so apt would replace civetweb:amd64 and
  # remove the host's prometheus-cpp-dev. Its headers, CMake package and .so links are unpacked
  # (dpkg-deb -x, not installed: dpkg does not know them) with the three runtime libraries the
  # CMake package names by path, at the version of the arm64 runtime libraries installed above,
  # into $cross_extra, where cmake/toolchains/aarch64-linux-gnu.cmake looks for them.
  cross_extra=/opt/pqcd-cross/arm64
  prom_version=$(dpkg-query -W -f='${Version}' libprometheus-cpp-core1.0:arm64)
  if [[ $(cat "$cross_extra/.prometheus-cpp-version" 2>/dev/null) != "$prom_version" ]]; then
    echo "install-deps: unpacking prometheus-cpp-dev:arm64 $prom_version into $cross_extra"
    debs=$(mktemp -d)
    # As root, apt-get download fetches as the user _apt: let it write there.
    if [[ $(id -u) -eq 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$debs"; fi
    (cd "$debs" && apt-get download -qq prometheus-cpp-dev:arm64="$prom_version" \
      libprometheus-cpp-core1.0:arm64="$prom_version" \
      libprometheus-cpp-pull1.0:arm64="$prom_version" \
      libprometheus-cpp-push1.0:arm64="$prom_version")
    $SUDO rm -rf "$cross_extra"
    $SUDO mkdir -p "$cross_extra"
    for deb in "$debs"/*.deb; do
      $SUDO dpkg-deb -x "$deb" "$cross_extra"
    done
    echo "$prom_version" | $SUDO tee "$cross_extra/.prometheus-cpp-version" >/dev/null
    rm -rf "$debs"
  fi
fi
