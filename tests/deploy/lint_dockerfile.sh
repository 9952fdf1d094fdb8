#!/usr/bin/env bash
# Lints deploy/docker/Dockerfile with dockerfile-utils (the Dockerfile parser/validator of the VS Code
# Docker extension), installed from npm at a pinned version into a git-ignored folder on first use.
# Any diagnostic, warning or error, fails. Exit 77 (ctest: skipped) when npm is missing or the
# package cannot be installed (no registry).
# Usage: lint_dockerfile.sh DOCKERFILE NPM_PREFIX_DIR
set -euo pipefail
dockerfile=$1
prefix=$2
version=0.16.3

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "SKIP: npm/node not installed: the Dockerfile is not linted"
  exit 77
fi
bin=$prefix/node_modules/.bin/dockerfile-utils
if [[ ! -x $bin ]] || ! grep -q "\"version\": \"$version\"" "$prefix/node_modules/dockerfile-utils/package.json"; then
  mkdir -p "$prefix"
  echo "installing dockerfile-utils@$version into $prefix"
  if ! timeout 180 npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund \
      --loglevel=error "dockerfile-utils@$version" >"$prefix/npm-install.log" 2>&1; then
    cat "$prefix/npm-install.log"
    echo "SKIP: could not install dockerfile-utils@$version from npm"
    exit 77
  fi
fi
out=$(node "$bin" lint --json "$dockerfile")
if [[ $out != "[]" ]]; then
  node "$bin" lint "$dockerfile"
  echo "FAIL: dockerfile-utils@$version reports problems in $dockerfile"
  exit 1
fi
echo "OK: dockerfile-utils@$version: no problems in $dockerfile"
