#!/usr/bin/env python3
"""Checks that every file deploy/docker/Dockerfile copies exists, without a Docker engine.

- COPY from the build context: each source exists in the repository and is not excluded by
  deploy/docker/Dockerfile.dockerignore; every source folder the top-level CMakeLists.txt builds
  (except those the Dockerfile turns off) is copied.
- COPY --from=STAGE: the stage is defined earlier; a copied executable of the build stage's
  CMAKE_RUNTIME_OUTPUT_DIRECTORY must be one of the `cmake --build --target` targets and must exist
  in our build tree (given as --binary NAME=PATH, i.e. $<TARGET_FILE:NAME>); any other file must be
  written by a RUN of that stage.

Usage: check_docker_copies.py --repo ROOT [--binary NAME=PATH ...] [--no-binaries]
"""

import argparse
import fnmatch
import glob
import os
import re
import shlex
import sys

# Folders the top-level CMakeLists.txt adds that the image build switches off.
OFF_IN_IMAGE = {
    "bench": "-DPQCD_BUILD_BENCH=OFF",
    "tests": "-DPQCD_BUILD_TESTS=OFF",
    "provider": "-DPQCD_BUILD_PROVIDER=OFF",
}


def parse(path):
    logical, start, buf = [], 0, ""
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            raw = raw.rstrip("\n")
            if not buf and (not raw.strip() or raw.lstrip().startswith("#")):
                continue
            if not buf:
                start = n
            if raw.endswith("\\"):
                buf += raw[:-1] + " "
                continue
            logical.append((start, buf + raw))
            buf = ""
    stages = []
    for n, line in logical:
        line = line.strip()
        instr, _, rest = line.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            stages.append({"image": m.group(1), "name": m.group(2), "lines": []})
        elif stages:
            stages[-1]["lines"].append((n, instr, rest.strip()))
    return stages


def ignored(rel, patterns):
    """Docker's rule: the last matching pattern wins; a pattern also matches a path's parents."""
    parts = rel.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    result = False
    for pat in patterns:
        neg = pat.startswith("!")
        p = pat[1:] if neg else pat
        p = p.rstrip("/")
        for c in candidates:
            if fnmatch.fnmatchcase(c, p) or (p.startswith("**/") and fnmatch.fnmatchcase(c.split("/")[-1], p[3:])):
                result = not neg
                break
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--dockerfile")
    ap.add_argument("--binary", action="append", default=[], help="NAME=PATH of a built target")
    ap.add_argument("--no-binaries", action="store_true", help="the targets are not part of this build")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    dockerfile = args.dockerfile or os.path.join(repo, "deploy/docker/Dockerfile")
    binaries = dict(b.split("=", 1) for b in args.binary)

    ignore_file = dockerfile + ".dockerignore"
    patterns = []
    if os.path.exists(ignore_file):
        with open(ignore_file) as f:
            patterns = [l.strip() for l in f if l.strip() and not l.startswith("#")]

    errors, checked = [], 0
    stages = parse(dockerfile)
    names = [s["name"] for s in stages]
    copied_dirs = set()
    for si, stage in enumerate(stages):
        for n, instr, rest in stage["lines"]:
            if instr not in ("COPY", "ADD"):
                continue
            if rest.startswith("["):
                errors.append(f"line {n}: JSON-form {instr} is not checked")
                continue
            words = shlex.split(rest)
            flags = [w for w in words if w.startswith("--")]
            paths = [w for w in words if not w.startswith("--")]
            srcs = paths[:-1]
            src_stage = next((f.split("=", 1)[1] for f in flags if f.startswith("--from=")), None)
            for src in srcs:
                checked += 1
                if src_stage is None:
                    rel = src.rstrip("/") or "."
                    hits = glob.glob(os.path.join(repo, rel))
                    if not hits:
                        errors.append(f"line {n}: {src} does not exist in the build context {repo}")
                    elif ignored(rel, patterns):
                        errors.append(f"line {n}: {src} is excluded by {os.path.basename(ignore_file)}")
                    else:
                        copied_dirs.add(rel.split("/")[0])
                        print(f"ok   line {n}: context {src}")
                    continue
                if src_stage not in names[:si]:
                    errors.append(f"line {n}: --from={src_stage} is not an earlier stage")
                    continue
                from_stage = stages[names.index(src_stage)]
                from_runs = " ".join(r for _, i, r in from_stage["lines"] if i == "RUN")
                m_out = re.search(r"-DCMAKE_RUNTIME_OUTPUT_DIRECTORY=(\S+)", from_runs)
                m_tgt = re.search(r"cmake --build \S+ --target ((?:[\w-]+ ?)+)", from_runs)
                if m_out and os.path.dirname(src) == m_out.group(1).rstrip("/"):
                    name = os.path.basename(src)
                    targets = m_tgt.group(1).split() if m_tgt else []
                    if name not in targets:
                        errors.append(f"line {n}: {src}: '{name}' is not built by stage {src_stage} ({targets})")
                    elif args.no_binaries:
                        print(f"ok   line {n}: {src} (target {name}; not part of this build, not checked)")
                    elif name not in binaries:
                        errors.append(f"line {n}: {src}: no CMake target '{name}' in this build")
                    elif not os.access(binaries[name], os.X_OK):
                        errors.append(f"line {n}: {src}: {binaries[name]} was not built")
                    else:
                        print(f"ok   line {n}: {src} <- {binaries[name]}")
                elif src in from_runs:
                    print(f"ok   line {n}: {src} (written by a RUN of stage {src_stage})")
                else:
                    errors.append(f"line {n}: nothing in stage {src_stage} produces {src}")

    # Every folder that the top-level CMakeLists.txt builds must be in the image's source tree.
    with open(os.path.join(repo, "CMakeLists.txt")) as f:
        top = f.read()
    words = set(re.findall(r"[A-Za-z_][\w-]*", re.sub(r"#.*", "", top)))
    for d in sorted(words):
        if os.path.isfile(os.path.join(repo, d, "CMakeLists.txt")):
            if d in OFF_IN_IMAGE:
                with open(dockerfile) as f:
                    if OFF_IN_IMAGE[d] not in f.read():
                        errors.append(f"{d}/ is built by CMakeLists.txt but neither copied nor {OFF_IN_IMAGE[d]}")
            elif d not in copied_dirs:
                errors.append(f"{d}/ is built by CMakeLists.txt but the Dockerfile does not copy it")
            else:
                print(f"ok   {d}/ (a CMake subdirectory) is copied")
    if "CMakeLists.txt" not in copied_dirs:
        errors.append("the top-level CMakeLists.txt is not copied")

    for e in errors:
        print("FAIL " + e)
    print(f"{checked} copy sources checked: {len(errors)} problem(s)")
    return 1 if errors or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
