#!/usr/bin/env python3
"""Checks that every pqcd flag that deploy/ names exists in `pqcd --help` (issue 45).

What counts as a flag given to pqcd:
- Kubernetes manifests: the command and args of a container that runs pqcd (command[0] is pqcd,
  or no command and an image named pqcd, whose entrypoint is pqcd), the PQCD_* names of such a
  container's env, and a `pqcd` invocation in any command list (probes, hooks, `sh -c` scripts).
- The systemd unit: ExecStart= when it runs pqcd, and PQCD_* names (Environment=, comments).
- pqcd.env: every PQCD_* variable (commented out or not), and the flags in PQCD_ARGS.
- The Dockerfile: ENV's PQCD_* names, ENTRYPOINT/CMD when the entrypoint is pqcd, and `pqcd`
  invocations in RUN.
- Text: comments of every file, the READMEs, YAML string values (alert descriptions ...) and the
  dashboard's strings. A shell command (a Markdown code block, an inline code span or a comment
  line that starts with a program) gives its flags to its program: they count only where that
  program is pqcd. In prose, a bare `--flag` belongs to the program named last before it in the
  same sentence (`pqc health --target`, "a kubelet with --cpu-manager-policy"), or to pqcd when
  the sentence names none. PQCD_* names in text are pqcd's environment variables.
A PQCD_FOO_BAR variable stands for the flag --foo-bar. --foo-bar / PQCD_FOO_BAR (the README's
placeholder) and PQCD_ARGS (the unit's extra command line) are not flags.

Usage: check_pqcd_flags.py --repo ROOT --pqcd PATH   (or --help-file FILE: `pqcd --help` output)
       check_pqcd_flags.py --self-test               (the attribution rules on fixed examples)
Fails (exit 1) with one line per unknown flag: FILE:LINE: --flag (how it was given).
"""

import argparse
import glob
import json
import os
import re
import shlex
import subprocess
import sys

import yaml

# Names in deploy/ that look like pqcd flags or variables and are not.
NOT_FLAGS = {
    "--foo-bar": "the README's placeholder for any flag",
    "PQCD_FOO_BAR": "the README's placeholder for any flag's variable",
    "PQCD_ARGS": "the systemd unit's extra command line (pqcd.env)",
}

# Programs other than pqcd that deploy/ runs or mentions with flags of their own.
OTHER_PROGRAMS = {
    "pqc", "pqc-load", "pqc-bench", "kubectl", "kubelet", "kube-proxy", "kustomize", "helm", "docker",
    "buildx", "promtool", "prometheus", "grafana-server", "systemctl", "systemd-analyze", "journalctl",
    "openssl", "curl", "grpcurl", "install", "useradd", "usermod", "groupadd", "cmake", "ninja",
    "ctest", "apt-get", "dpkg", "ldd", "strip", "xargs", "shred", "sleep", "sh", "bash", "psql",
    "pg_dump", "make", "git", "npm", "qemu-aarch64",
}
# Words that may precede the program of a shell command.
SHELL_PREFIXES = {"while", "until", "if", "then", "do", "else", "elif", "!", "time", "exec", "env",
                  "sudo", "nohup", "command", "{", "("}
SEPARATORS = {";", "&&", "||", "|", "&", ";;", "(", ")", "|&"}

FLAG_RE = re.compile(r"^[\[(`\"'{]*(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
ENV_RE = re.compile(r"(?<![\w$-])(PQCD_[A-Z0-9]+(?:_[A-Z0-9]+)*)")
ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PUNCT = "()[]{},.:;!?\"'`*<>"

PQCD = "pqcd"


def flag_of_env(name):
    return "--" + name[len("PQCD_"):].lower().replace("_", "-")


def program_of(word):
    """'pqcd', another program's name, or None for a word that names no program."""
    w = word.strip(PUNCT)
    if w.endswith("'s"):
        w = w[:-2]
    if not w:
        return None
    base = w.rsplit("/", 1)[-1]
    if w == PQCD or (base == PQCD and re.search(r"(^|/)(bin|server)/pqcd$", w)):
        return PQCD
    if w == "pqc" or base == "pqc" and "/" in w:
        return "pqc"
    for cand in (w.lower(), base.lower() if "/" in w else None):
        if cand and cand != "pqc" and cand in OTHER_PROGRAMS:
            return cand
    return None


def flag_in(token):
    m = FLAG_RE.match(token)
    return m.group(1) if m else None


class Found:
    """The flags (--name) and variables (PQCD_NAME) given to pqcd, each with where and how."""

    def __init__(self):
        self.items = []  # (file, line, name, how)

    def add(self, where, name, how):
        if name not in NOT_FLAGS:
            self.items.append((where[0], where[1], name, how))

    flag = env = add


# ---- shell commands and prose ------------------------------------------------------------------

def shell_tokens(text):
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        return list(lex)
    except ValueError:  # unbalanced quotes: split on blanks
        return text.split()


def scan_command(text, where, found, how):
    """Shell text: the flags of each simple command whose program is pqcd. Returns the program of
    the last simple command (None if there is none)."""
    last = None
    toks = shell_tokens(text)
    i = 0
    while i < len(toks):
        while i < len(toks) and (toks[i] in SEPARATORS or toks[i] in SHELL_PREFIXES
                                 or ASSIGN_RE.match(toks[i])):
            i += 1
        if i >= len(toks):
            break
        prog = program_of(toks[i]) or toks[i]
        last = prog
        i += 1
        while i < len(toks) and toks[i] not in SEPARATORS:
            f = flag_in(toks[i])
            if f and prog == PQCD:
                found.flag(where, f, how)
            i += 1
    return last


def starts_with_program(text):
    toks = text.split()
    i = 0
    while i < len(toks) and (ASSIGN_RE.match(toks[i]) or toks[i] in SHELL_PREFIXES):
        i += 1
    if i >= len(toks):
        return False
    w = toks[i]
    return program_of(w) is not None and w == w.strip(PUNCT) and not w.endswith("'s")


SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)[.;!?](?=\s|$)")


def sentences(text):
    out, start = [], 0
    # Never split inside an inline code span.
    spans = [(m.start(), m.end()) for m in re.finditer(r"`[^`]*`", text)]
    for m in SENTENCE_END.finditer(text):
        if any(a <= m.start() < b for a, b in spans):
            continue
        out.append(text[start:m.end()])
        start = m.end()
    out.append(text[start:])
    return [s for s in out if s.strip()]


def scan_prose(text, where, found, how):
    """Prose: bare flags go to the program named last before them in the sentence, else pqcd."""
    for env in ENV_RE.findall(text):
        found.env(where, env, how)
    for sentence in sentences(text):
        current = None
        for m in re.finditer(r"`([^`]*)`|([^\s`]+)", sentence):
            span, word = m.group(1), m.group(2)
            if span is not None:
                first = span.split()[0] if span.split() else ""
                if flag_in(first) and first.startswith("--"):
                    if (current or PQCD) == PQCD:
                        found.flag(where, flag_in(first), how + ", in `" + span + "`")
                elif starts_with_program(span):
                    current = scan_command(span, where, found, how + ", in `" + span + "`") or current
                continue
            prog = program_of(word)
            if prog:
                current = prog
                continue
            f = flag_in(word)
            if f and word.lstrip(PUNCT).startswith("--") and (current or PQCD) == PQCD:
                found.flag(where, f, how)


def scan_comment_block(lines, path, found):
    """Comment lines (text after '#', with line numbers): a line that starts with a program after at
    least two blanks is a command; the other lines are prose, in paragraphs."""
    para, para_line = [], None

    def flush():
        nonlocal para, para_line
        if para:
            scan_prose(" ".join(para), (path, para_line), found, "comment")
        para, para_line = [], None

    for n, text in lines:
        body = text.strip()
        if not body:
            flush()
            continue
        if (text.startswith("  ") or text.startswith("\t")) and starts_with_program(body):
            flush()
            for env in ENV_RE.findall(body):
                found.env((path, n), env, "comment")
            scan_command(body, (path, n), found, "command in a comment")
            continue
        if body.startswith("- ") or re.match(r"^\d+\.\s", body):
            flush()
        if not para:
            para_line = n
        para.append(body)
    flush()


def comments_of(path):
    """Full-line '#' comments of a configuration file: lists of (line, text after '#')."""
    blocks, cur = [], []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            s = raw.rstrip("\n").lstrip()
            if s.startswith("#"):
                cur.append((n, s[1:]))
            elif cur:
                blocks.append(cur)
                cur = []
    if cur:
        blocks.append(cur)
    return blocks


# ---- files --------------------------------------------------------------------------------------

def scan_markdown(path, rel, found):
    with open(path) as f:
        lines = f.read().split("\n")
    para, para_line, in_fence, in_code, prev_blank = [], None, False, False, True

    def flush():
        nonlocal para, para_line
        if para:
            scan_prose(" ".join(para), (rel, para_line), found, "README text")
        para, para_line = [], None

    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            in_fence = not in_fence
            continue
        indented = len(line) - len(line.lstrip(" ")) >= 4 and stripped
        if in_fence or (indented and (prev_blank or in_code)):
            flush()
            in_code = True
            for env in ENV_RE.findall(line):
                found.env((rel, n), env, "README code")
            scan_command(stripped, (rel, n), found, "README code")
            prev_blank = False
            continue
        if not stripped:
            flush()
            in_code = False
            prev_blank = True
            continue
        in_code = False
        prev_blank = False
        if re.match(r"^(#+\s|[-*]\s|\d+\.\s|\|)", stripped):
            flush()
        if not para:
            para_line = n
        para.append(stripped)
    flush()


def line_of(path, needle, cache={}):
    if path not in cache:
        with open(path) as f:
            cache[path] = f.read().split("\n")
    for n, line in enumerate(cache[path], 1):
        if needle in line:
            return n
    return 0


def scan_argv(argv, where, found, how):
    """A command list (exec form): pqcd's flags, or the pqcd invocations of an `sh -c` script."""
    if not argv:
        return
    prog = program_of(str(argv[0]))
    if prog == PQCD:
        for a in argv[1:]:
            f = flag_in(str(a))
            if f and str(a).startswith("--"):
                found.flag(where, f, how)
    elif os.path.basename(str(argv[0])) in ("sh", "bash") and len(argv) >= 3 and argv[1] == "-c":
        scan_command(str(argv[2]), where, found, how + " (shell script)")


def is_pqcd_image(image):
    name = str(image).split("@")[0].rsplit("/", 1)[-1].split(":")[0]
    return name == PQCD


def scan_yaml_node(node, path, rel, found):
    if isinstance(node, dict):
        if "image" in node and "name" in node and isinstance(node.get("image"), str):
            scan_container(node, path, rel, found)
            rest = {k: v for k, v in node.items() if k not in ("command", "args", "env")}
            for v in rest.values():
                scan_yaml_node(v, path, rel, found)
            return
        for k, v in node.items():
            if k == "command" and isinstance(v, list):
                scan_argv(v, (rel, line_of(path, str(v[0]))), found, "command")
            else:
                scan_yaml_node(v, path, rel, found)
    elif isinstance(node, list):
        for v in node:
            scan_yaml_node(v, path, rel, found)
    elif isinstance(node, str) and ("--" in node or "PQCD_" in node):
        first = node.strip().split("\n")[0][:30]
        scan_prose(node, (rel, line_of(path, first)), found, "YAML text")


def scan_container(c, path, rel, found):
    name = c.get("name")
    command = [str(x) for x in (c.get("command") or [])]
    args = [str(x) for x in (c.get("args") or [])]
    runs_pqcd = (program_of(command[0]) == PQCD) if command else is_pqcd_image(c["image"])
    how = f"container {name}"
    if runs_pqcd:
        for a in (command[1:] if command else []) + args:
            f = flag_in(a)
            if f and a.startswith("--"):
                found.flag((rel, line_of(path, "- " + a) or line_of(path, a)), f, how + " args")
        for e in c.get("env") or []:
            n = str(e.get("name", ""))
            if n.startswith("PQCD_"):
                found.env((rel, line_of(path, "name: " + n)), n, how + " env")
    else:
        scan_argv(command + args, (rel, line_of(path, command[0] if command else c["image"])), found,
                  how + " command")


def scan_yaml(path, rel, found):
    with open(path) as f:
        docs = list(yaml.safe_load_all(f))
    for d in docs:
        scan_yaml_node(d, path, rel, found)
    for block in comments_of(path):
        scan_comment_block(block, rel, found)


def scan_unit(path, rel, found):
    with open(path) as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        m = re.match(r"^\s*ExecStart\s*=\s*(.*)$", line)
        if m:
            argv = shell_tokens(m.group(1))
            if argv:
                argv[0] = argv[0].lstrip("-@+!:")
            scan_argv(argv, (rel, n), found, "ExecStart=")
        m = re.match(r"^\s*Environment\s*=\s*(.*)$", line)
        if m:
            for env in ENV_RE.findall(m.group(1)):
                found.env((rel, n), env, "Environment=")
    for block in comments_of(path):
        scan_comment_block(block, rel, found)


def scan_env_file(path, rel, found):
    with open(path) as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        m = re.match(r"^\s*#?\s*(PQCD_[A-Z0-9_]+)=(.*)$", line)
        if not m:
            continue
        if m.group(1) == "PQCD_ARGS":
            for tok in shell_tokens(m.group(2)):
                f = flag_in(tok)
                if f and tok.startswith("--"):
                    found.flag((rel, n), f, "PQCD_ARGS")
        else:
            found.env((rel, n), m.group(1), "variable")
    # The comments, without the commented-out variables (read above).
    for block in comments_of(path):
        scan_comment_block([(n, t) for n, t in block if not re.match(r"^\s*PQCD_[A-Z0-9_]+=", t)], rel,
                           found)


def scan_dockerfile(path, rel, found):
    logical, buf, start = [], "", 0
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
    entrypoint_pqcd = False
    for n, line in logical:
        instr, _, rest = line.strip().partition(" ")
        instr = instr.upper()
        rest = rest.strip()
        if instr == "ENV":
            for name in re.findall(r"(?:^|\s)(PQCD_[A-Z0-9_]+)[=\s]", rest + " "):
                found.env((rel, n), name, "ENV")
        elif instr in ("ENTRYPOINT", "CMD"):
            argv = json.loads(rest) if rest.startswith("[") else shell_tokens(rest)
            if instr == "ENTRYPOINT":
                entrypoint_pqcd = bool(argv) and program_of(argv[0]) == PQCD
                scan_argv(argv, (rel, n), found, "ENTRYPOINT")
            elif entrypoint_pqcd:
                scan_argv(["pqcd"] + argv, (rel, n), found, "CMD (pqcd's arguments)")
            else:
                scan_argv(argv, (rel, n), found, "CMD")
        elif instr == "RUN":
            scan_command(rest, (rel, n), found, "RUN")
    for block in comments_of(path):
        scan_comment_block(block, rel, found)


def scan_json_strings(path, rel, found):
    with open(path) as f:
        data = json.load(f)

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and ("--" in v or "PQCD_" in v):
            scan_prose(v, (rel, line_of(path, v[:40].replace('"', '\\"'))), found, "dashboard text")

    walk(data)


def scan_deploy(repo):
    found = Found()
    deploy = os.path.join(repo, "deploy")
    kinds = {}
    for path in sorted(glob.glob(os.path.join(deploy, "**", "*"), recursive=True)
                       + glob.glob(os.path.join(deploy, ".*"))):
        if not os.path.isfile(path):
            continue
        rel = os.path.relpath(path, repo)
        base = os.path.basename(path)
        before = len(found.items)
        if base.endswith(".md"):
            scan_markdown(path, rel, found)
        elif base.endswith((".yaml", ".yml")):
            scan_yaml(path, rel, found)
        elif base.endswith(".service"):
            scan_unit(path, rel, found)
        elif base.endswith(".env"):
            scan_env_file(path, rel, found)
        elif base == "Dockerfile":
            scan_dockerfile(path, rel, found)
        elif base.endswith(".json"):
            scan_json_strings(path, rel, found)
        else:  # .hcl, .dockerignore, .yamllint: comments only
            for block in comments_of(path):
                scan_comment_block(block, rel, found)
        kinds[rel] = len(found.items) - before
    return found, kinds


# ---- pqcd --help ----------------------------------------------------------------------------------

def known_flags(help_text):
    flags, envs = set(), set()
    for line in help_text.split("\n"):
        m = re.match(r"^\s{0,12}(?:-[A-Za-z]\s*,\s*)?(--[a-z][a-z0-9-]*)", line)
        if m:
            flags.add(m.group(1))
        envs.update(re.findall(r"Env:\s*(PQCD_[A-Z0-9_]+)", line))
    return flags, envs


# ---- self-test --------------------------------------------------------------------------------------

def self_test():
    """The attribution rules on examples: (text kind, text, flags expected for pqcd)."""
    cases = [
        ("prose", "pqcd listens on it with `--listen=none`; the app dials it.", ["--listen"]),
        ("prose", "Kubelet probes run `pqc health --target unix:///run/pqcd/pqcd.sock`.", []),
        ("prose", "so a kubelet with --cpu-manager-policy=static gives exclusive cores", []),
        # No program named before them: pqcd's (so a README names the program first).
        ("prose", "Without `--push` (e.g. `--set x`) `docker buildx bake` keeps it local.",
         ["--push", "--set"]),
        ("prose", "`docker buildx bake` without `--push` keeps the result local.", []),
        ("prose", "the pod passes `--allow-shared-kek-file` (pqcd's own)", ["--allow-shared-kek-file"]),
        ("prose", "Kubelet makes them readable (fsGroup, pqcd's own), so pass `--allow-shared-kek-file`.",
         ["--allow-shared-kek-file"]),
        ("prose", "`PQCD_KEY_STORE=... pqcd --import-data-dir /d --kek-file /k` with it stopped",
         ["PQCD_KEY_STORE", "--import-data-dir", "--kek-file"]),
        ("prose", "Every pqcd flag `--foo-bar` can be set as `PQCD_FOO_BAR` (`pqcd --help`).", ["--help"]),
        ("command", "kubectl -n x scale statefulset/pqcd-keys --replicas=0", []),
        ("command", "while /usr/local/bin/pqc health --target \"$T\"; do sleep 10; done", []),
        ("command", "install -m 0755 build/server/pqcd /usr/local/bin/ && /usr/local/bin/pqcd --workers 2",
         ["--workers"]),
        ("command", "--cpu-manager-policy=static --topology-manager-scope=pod", []),
        ("command", "useradd --system --shell /usr/sbin/nologin pqcd; usermod -aG pqcd c", []),
    ]
    bad = 0
    for kind, text, want in cases:
        found = Found()
        if kind == "prose":
            scan_prose(text, ("t", 1), found, "t")
        else:
            scan_command(text, ("t", 1), found, "t")
        got = sorted(name for _, _, name, _ in found.items)
        if got != sorted(want):
            print(f"self-test FAIL: {text!r}: got {got}, want {sorted(want)}")
            bad += 1
    print(f"self-test: {len(cases) - bad} of {len(cases)} examples attributed as expected")
    return bad == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo")
    ap.add_argument("--pqcd", help="the pqcd binary (its --help lists the flags)")
    ap.add_argument("--help-file", help="`pqcd --help` output saved in a file, instead of --pqcd")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every flag checked")
    args = ap.parse_args()

    ok = self_test()
    if args.self_test:
        return 0 if ok else 1
    if not args.repo or not (args.pqcd or args.help_file):
        ap.error("--repo and --pqcd (or --help-file) are needed")

    if args.help_file:
        with open(args.help_file) as f:
            help_text = f.read()
        source = args.help_file
    else:
        p = subprocess.run([args.pqcd, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        help_text = p.stdout
        source = f"{args.pqcd} --help"
        if p.returncode != 0:
            print(help_text)
            print(f"FAIL: {source} exited {p.returncode}")
            return 1
    flags, envs = known_flags(help_text)
    if len(flags) < 10:
        print(help_text)
        print(f"FAIL: found only {len(flags)} flags in {source}: is its format understood?")
        return 1

    found, per_file = scan_deploy(args.repo)
    unknown = []
    for path, line, name, how in found.items:
        if name.startswith("PQCD_"):
            flag = flag_of_env(name)
            known = flag in flags and (not envs or name in envs)
            label = f"{name} (the flag {flag})"
        else:
            known = name in flags
            label = name
        if args.verbose:
            print(f"{path}:{line}: {label} [{how}] {'ok' if known else 'UNKNOWN'}")
        if not known:
            unknown.append(f"FAIL: {path}:{line}: {label} is not a pqcd flag ({source}); given as {how}")

    # The scan must see flags where deploy/ gives pqcd its flags, or it has stopped understanding them.
    expect = ["deploy/systemd/pqcd.env", "deploy/systemd/pqcd.service", "deploy/docker/Dockerfile",
              "deploy/README.md", "deploy/k8s/README.md", "deploy/k8s/sidecar/deployment.yaml",
              "deploy/k8s/held-keys/statefulset.yaml"]
    blind = [p for p in expect if os.path.exists(os.path.join(args.repo, p)) and not per_file.get(p)]
    for p in blind:
        unknown.append(f"FAIL: {p}: no pqcd flag found in it; the checker no longer understands it")

    for u in unknown:
        print(u)
    n_files = sum(1 for v in per_file.values() if v)
    print(f"{len(found.items)} pqcd flags and variables named in {n_files} files of deploy/, "
          f"{len(flags)} flags in {source}: {len(unknown)} problems")
    return 1 if unknown or not ok else 0


if __name__ == "__main__":
    sys.exit(main())
