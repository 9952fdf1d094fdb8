#!/usr/bin/env bash
# Instructions per kernel hook under qemu-aarch64, portable beside NEON: qemu cannot time anything,
# so this is the speed proxy of the aarch64 backend until it runs on real cores. Each figure is
# (instructions at N calls - instructions at 0 calls) / N, counted by a small TCG plugin
# (insn_count.c: Debian's qemu-user has plugin support but ships no plugins).
#
#   bench/qemu/count_insns.sh [BUILD_DIR]   BUILD_DIR: a finished aarch64 cross build of the
#                                           kernels (default build-aarch64: tests/cross/run_aarch64.sh)
# Needs: gcc, aarch64-linux-gnu-g++, qemu-aarch64, the arm64 absl and OpenSSL (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-aarch64}
n=${N:-1000}  # calls per count (whole operations: N/10)
for lib in libpqcd_mldsa.a libpqcd_mlkem.a libpqcd_kernels_core.a; do
  [[ -f $build/kernels/$lib ]] || { echo "count_insns.sh: $build/kernels/$lib missing (build first)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gcc -shared -fPIC -O2 -Wall -o "$out/libinsn_count.so" bench/qemu/insn_count.c
aarch64-linux-gnu-g++ -std=c++20 -O2 -Wall -Wextra -Ikernels/include -Ikernels/src \
  bench/qemu/hook_driver.cc "$build"/kernels/libpqcd_mldsa.a "$build"/kernels/libpqcd_mlkem.a \
  "$build"/kernels/libpqcd_kernels_core.a -labsl_statusor -labsl_status -labsl_strings \
  -labsl_cord -labsl_str_format_internal -lcrypto -o "$out/hook_driver"
count() {  # isa op calls -> instructions
  PQCD_ISA=$1 qemu-aarch64 -L /usr/aarch64-linux-gnu -plugin "$out/libinsn_count.so" -d plugin \
    "$out/hook_driver" "$1" "$2" "$3" 2>&1 >/dev/null | sed -n 's/^insns: //p'
}
printf '| hook | portable | neon | portable / neon |\n|---|---:|---:|---:|\n'
for op in keccak_x4 mlkem_ntt mlkem_invntt mlkem_basemul3 mlkem_cbd2 mlkem_compress10 \
  mldsa_ntt mldsa_invntt mldsa_pwacc4 mldsa_decompose mlkem768_keygen mlkem768_encaps \
  mlkem768_decaps mldsa65_sign mldsa65_verify; do
  k=$n
  [[ $op == *_keygen || $op == *_encaps || $op == *_decaps || $op == *_sign || $op == *_verify ]] &&
    k=$((n / 10))
  p=$((($(count portable $op "$k") - $(count portable $op 0)) / k))
  v=$((($(count neon $op "$k") - $(count neon $op 0)) / k))
  printf '| %s | %d | %d | %s |\n' "$op" "$p" "$v" "$(awk -v a="$p" -v b="$v" 'BEGIN{printf "%.2f", a/b}')"
done
