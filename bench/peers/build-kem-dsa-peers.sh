#!/usr/bin/env bash
# Builds the ML-KEM / ML-DSA peers of kem-dsa-peers (and the liboqs that slhdsa-peers takes) from
# their public sources, the way ../shared/PEERS.md says, into OUT_DIR. Nothing of them is
# committed; point CMake at the builds:
#
#   bench/peers/build-kem-dsa-peers.sh OUT
#   cmake -B build -DPQCD_LIBOQS_DIR=OUT/liboqs-build -DPQCD_MLKEM_NATIVE_DIR=OUT/mlkem-native-build
#
#   liboqs (bundles mlkem-native and mldsa-native): ML-KEM, ML-DSA and the twelve pure SLH-DSA
#     sets, OQS_DIST_BUILD=OFF, OQS_OPT_TARGET=auto (-march=native), OpenSSL on; `ninja oqs`.
#   mlkem-native: its own `make lib OPT=1 AUTO=1` (libmlkem.a, the three levels, default namespace
#     PQCP_MLKEM_NATIVE_MLKEM<level>_), checked to contain the x86_64 AVX2 backend.
#
# Sources are cloned into OUT/liboqs-src and OUT/mlkem-native-src (kept if present) at the commits
# of the published figures. Overrides: LIBOQS_GIT, MLKEM_NATIVE_GIT (clone URLs or paths),
# LIBOQS_COMMIT, MLKEM_NATIVE_COMMIT, JOBS (parallel jobs, default: all cores).
set -euo pipefail

if [[ $# -ne 1 || $1 == --help || $1 == -h ]]; then
  echo "usage: $0 OUT_DIR" >&2
  echo "  builds OUT_DIR/liboqs-build (include/, lib/liboqs.a) and" >&2
  echo "  OUT_DIR/mlkem-native-build (libmlkem.a) from the public sources" >&2
  [[ $# -eq 1 && ($1 == --help || $1 == -h) ]] && exit 0
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
liboqs_git=${LIBOQS_GIT:-https://github.com/open-quantum-safe/liboqs.git}
liboqs_commit=${LIBOQS_COMMIT:-8979276ad1eb008215aa78a3c56b3649f604bbb1}
mlkem_native_git=${MLKEM_NATIVE_GIT:-https://github.com/pq-code-package/mlkem-native.git}
mlkem_native_commit=${MLKEM_NATIVE_COMMIT:-d1b2fe782888bdb761a50336012923180be7f502}
jobs=${JOBS:-$(nproc)}

checkout() {  # URL COMMIT DIR
  if [[ ! -d $3/.git ]]; then
    git clone --quiet "$1" "$3"
  fi
  git -C "$3" fetch --quiet origin "$2" 2>/dev/null || true
  git -C "$3" checkout --quiet --detach "$2"
  echo "$3 at $(git -C "$3" rev-parse HEAD)"
}

checkout "$liboqs_git" "$liboqs_commit" "$out/liboqs-src"
checkout "$mlkem_native_git" "$mlkem_native_commit" "$out/mlkem-native-src"

algs="KEM_ml_kem_512;KEM_ml_kem_768;KEM_ml_kem_1024;SIG_ml_dsa_44;SIG_ml_dsa_65;SIG_ml_dsa_87"
for hash in sha2 shake; do
  for set in 128s 128f 192s 192f 256s 256f; do
    algs+=";SIG_slh_dsa_pure_${hash}_$set"
  done
done
cmake -S "$out/liboqs-src" -B "$out/liboqs-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DOQS_MINIMAL_BUILD="$algs" -DOQS_DIST_BUILD=OFF -DOQS_OPT_TARGET=auto -DOQS_USE_OPENSSL=ON
ninja -C "$out/liboqs-build" -j "$jobs" oqs

make -C "$out/mlkem-native-src" -j "$jobs" lib OPT=1 AUTO=1 BUILD_DIR="$out/mlkem-native-build"

# kem-dsa-peers calls mldsa-native's internal (seeded, deterministic) entry points of liboqs's
# x86_64 build, and times mlkem-native's AVX2 backend: both must be there.
oqs_symbols=$(nm "$out/liboqs-build/lib/liboqs.a" 2>/dev/null)
for level in 44 65 87; do
  for fn in keypair_internal signature_internal; do
    grep -q " T PQCP_MLDSA_NATIVE_MLDSA${level}_X86_64_$fn\$" <<<"$oqs_symbols" || {
      echo "$0: liboqs.a lacks PQCP_MLDSA_NATIVE_MLDSA${level}_X86_64_$fn (no x86_64 ML-DSA?)" >&2
      exit 1
    }
  done
done
mlkem_symbols=$(nm "$out/mlkem-native-build/libmlkem.a" 2>/dev/null)
avx2=$(grep -c " T .*_avx2_asm\$" <<<"$mlkem_symbols" || true)
if [[ $avx2 -eq 0 ]]; then
  echo "$0: libmlkem.a has no *_avx2_asm symbols: the x86_64 AVX2 backend is not linked" >&2
  exit 1
fi
echo "libmlkem.a: $avx2 AVX2 assembly entry points"
echo "wrote $out/liboqs-build (include/, lib/liboqs.a) and $out/mlkem-native-build/libmlkem.a"
