#!/usr/bin/env bash
# Instructions per kernel hook under qemu-aarch64, portable beside NEON: qemu cannot time anything,
# so this is the speed proxy of the aarch64 backend until it runs on real cores. Each figure is
# (instructions at N calls - instructions at 0 calls) / N, counted by a small TCG plugin
# (insn_count.c: Debian's qemu-user has plugin support but ships no plugins).
#
#   bench/qemu/count_insns.sh [BUILD_DIR]   BUILD_DIR: a finished aarch64 cross build of the
#                                           kernels (default build-aarch64: tests/cross/run_aarch64.sh)
#   N=1000 (default): calls per count of a hook; whole operations take N/10.
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
# isa op calls [cpu] -> instructions; cpu: qemu's -cpu (default max, which has SHA3; cortex-a72 has
# ASIMD without SHA3, so the NEON row runs the scalar Keccak there).
count() {
  PQCD_ISA=${1%%_*} qemu-aarch64 -cpu "${4:-max}" -L /usr/aarch64-linux-gnu \
    -plugin "$out/libinsn_count.so" -d plugin "$out/hook_driver" "$1" "$2" "$3" 2>&1 >/dev/null |
    sed -n 's/^insns: //p'
}
per_call() {  # isa op calls [cpu] -> (count at calls - count at 0) / calls
  echo $((($(count "$1" "$2" "$3" "${4:-}") - $(count "$1" "$2" 0 "${4:-}")) / $3))
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
echo "Through the tables of the rows (neon: the NEON row; its Keccak is the SHA-3 one on -cpu max"
echo "and the scalar one on -cpu cortex-a72):"
echo
printf '| hook | portable | neon, no SHA3 (cortex-a72) | neon + SHA3 (max) | portable / neon | portable / neon + SHA3 |\n'
printf '|---|---:|---:|---:|---:|---:|\n'
for op in keccak_x1 keccak_x4 mlkem_ntt mlkem_invntt mlkem_basemul3 mlkem_cbd2 mlkem_compress10 \
  mlkem_reject mldsa_ntt mldsa_invntt mldsa_pwacc4 mldsa_decompose mlkem768_keygen mlkem768_encaps \
  mlkem768_decaps mldsa65_sign mldsa65_verify; do
  k=$n
  [[ $op == *_keygen || $op == *_encaps || $op == *_decaps || $op == *_sign || $op == *_verify ]] &&
    k=$((n / 10))
  p=$(per_call portable $op "$k")
  a=$(per_call neon $op "$k" cortex-a72)
  v=$(per_call neon $op "$k")
  printf '| %s | %d | %d | %d | %s | %s |\n' "$op" "$p" "$a" "$v" "$(ratio "$p" "$a")" "$(ratio "$p" "$v")"
done
echo
echo "The Keccak tables themselves (-cpu max): portable, the plain-NEON x2 one (keccak::kNeon, in no"
echo "row) and the SHA-3 one (keccak::kNeonSha3):"
echo
printf '| hook | portable | neon x2 | neon sha3 | portable / neon x2 | portable / neon sha3 |\n'
printf '|---|---:|---:|---:|---:|---:|\n'
for op in keccak_x1 keccak_x4; do
  p=$(per_call portable $op "$n")
  x=$(per_call neon_x2 $op "$n")
  s=$(per_call neon_sha3 $op "$n")
  printf '| %s | %d | %d | %d | %s | %s |\n' "$op" "$p" "$x" "$s" "$(ratio "$p" "$x")" "$(ratio "$p" "$s")"
done
