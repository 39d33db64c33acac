#!/usr/bin/python3
"""Generated decks and --set values for every app, from a fixed seed.

Each case starts from a small valid deck of one app (the shipped default
with its sizes cut down) and applies one to three mutations drawn from the
app's own schema (--print-schema): a key set to a boundary, out-of-range,
wrongly typed, huge, empty, NUL-bearing or structured value; an unknown or
misspelled key; a --set argument of any of these forms; or a text-level
edit of the deck (a deleted or inserted character, a truncation, a tab, a
bracket, a BOM). Every case must end within 30 s in one of two ways:

  * a run: a locus_summary on stdout (exit 0, or non-zero with verdict FAIL);
    whatever the deck, a run's own bookkeeping holds: tensor_contract did
    every task once and its NXTASK counter ends where it must (a chunk near
    2^63 overflowed it), and spmv's symmetry test passes on a generated
    symmetric matrix of any size (it failed on 1x1);
  * a refusal: exit 1, exactly one "APP: error:" line on stderr.

Never: a traceback, an MPI abort, a signal, a hang, a second error line, a
.tmp or .lock left behind, or an .h5 under the final name after a refusal.

    deck_fuzz.py NP CASES [SEED]      (a quarter of CASES above 2 ranks)
"""
import os
import random
import shutil
import subprocess
import sys
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import MPIEXEC, SOURCE, app_path, check, scratch  # noqa: E402

NP, CASES = int(sys.argv[1]), int(sys.argv[2])
if NP > 2:
    CASES //= 4  # over-subscribed on 2 cores: every launch costs more
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 20261123
rng = random.Random(SEED * 10 + NP)
OUT = scratch("deck_fuzz_np%d" % NP)
BAD = ("Traceback", "Assertion", "MPI_Abort", "BAD TERMINATION", "backtrace", "terminate called",
       "Segmentation", "core dumped", "std::")

# A small valid deck per app: the default with its sizes cut down.
SMALL = {
    "heat3d": {"heat3d.grid.nx": 8, "heat3d.grid.ny": 6, "heat3d.grid.nz": 5, "heat3d.time.max_steps": 30},
    "poisson5pt": {"poisson5pt.grid.n": 15, "poisson5pt.solver.max_iterations": 400},
    "spmv": {"spmv.matrix.nx": 6, "spmv.matrix.ny": 5, "spmv.matrix.nz": 4, "spmv.repetitions": 2,
             "spmv.cg.max_iterations": 50},
    "tensor_contract": {"tensor_contract.extent": 8, "tensor_contract.tile": 4},
}
# Keys that set how long a valid run takes: only small or invalid values.
WORK = ("max_steps", "max_iterations", "repetitions", "levels", "checkpoint.every", "linger_us", "max_sleep_us",
        "thread_interval_us", "order_time", "time.dt", "tolerance", "validation.mode", "phases", "contraction",
        "extents", "tiles", "bandwidth", "per_row", "tensor_contract.extent", "tensor_contract.comp.extent",
        "tensor_contract.comm.extent", "spmv.solver", "max_elements", "stall_checks", "check_every", "k0")
# Keys naming files: only values that stay inside the scratch directory.
PATHS = ("output.dir", "checkpoint.file", "checkpoint.restart", "spmv.matrix.file", "spmv.matrix.export")


def nest(flat):
    deck = {}
    for k, v in flat.items():
        node = deck
        parts = k.split(".")
        for p in parts[:-1]:
            if not isinstance(node.get(p), dict):
                node[p] = {}  # a key below a scalar: the scalar goes
            node = node[p]
        node[parts[-1]] = v
    return deck


def schema(app):
    p = subprocess.run([app_path(app), "--print-schema"], capture_output=True, text=True, timeout=30)
    return yaml.safe_load(p.stdout)["keys"]


def flatten(d, prefix=""):
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict):
            out.update(flatten(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


HUGE = [2 ** 31, 2 ** 32 + 1, 2 ** 40, 2 ** 62, 2 ** 63 - 1, 2 ** 63, 10 ** 30, "9" * 40]
ODD = [-1, 0, -(2 ** 63), 1.5, "1e3", "0x10", "1_000", "abc", "", "~", "yes", "nan", ".inf", "-.inf", "1e308",
       [1, 2, 3], [0, 1, 1], {"a": 1}, "a\x00b", "é", "x" * 5000, "[", "{", "'", "- x", "a: b", True]
SMALLV = [0, 1, 2, 3]


def value_for(key, spec):
    typ = spec["type"] if spec else ""
    if any(key.endswith(w) or w in key for w in PATHS):
        return rng.choice(["", "a\x00b", "/nonexistent/dir/x", "x" * 300, "sub/dir", ".", "/proc/self", "/dev/zero",
                           "missing.h5", "missing.mtx", "sub/" + "y" * 260])
    if any(w in key for w in WORK):
        return rng.choice(ODD + SMALLV + [2 ** 63, "9" * 40])
    pool = ODD + HUGE + SMALLV
    if spec and "choices" in spec:
        pool = pool + list(spec["choices"]) * 3 + [str(spec["choices"][0]).upper(), str(spec["choices"][0]) + "x"]
    if "list" in typ:
        pool = pool + [[1, 1, 1], [2, 1, 1], [1, 2 ** 31, 1], [0, 0, 0], "auto", [NP, 1, 1], [NP + 1, 1, 1]]
    return rng.choice(pool)


def set_text(v):
    if isinstance(v, (list, dict)):
        return yaml.safe_dump(v, default_flow_style=True).strip()
    if v is True:
        return "true"
    return str(v)


def text_edit(text):
    kind = rng.randrange(8)
    i = rng.randrange(max(1, len(text)))
    if kind == 0:
        return text[:i] + text[i + 1:]
    if kind == 1:
        return text[:i] + rng.choice(":[]{}-\t\"'#&*!|>%@`,?\\") + text[i:]
    if kind == 2:
        return text[:i]
    if kind == 3:
        lines = text.split("\n")
        j = rng.randrange(len(lines))
        lines[j] = " " * rng.choice([1, 3, 7]) + lines[j]
        return "\n".join(lines)
    if kind == 4:
        return "\ufeff" + text
    if kind == 5:
        lines = text.split("\n")
        j = rng.randrange(len(lines))
        return "\n".join(lines + [lines[j]])  # a duplicated line (duplicate key)
    if kind == 6:
        return text + rng.choice(["\n---\n", "\n...\n", "\n%YAML 1.2\n", "\nkey: [\n", "\n&a x: *a\n"])
    return text.replace(":", rng.choice(["=", " :", ":\t"]), 1)


def invariants(doc, app):
    """What no deck may break in a run's summary ("" or what broke)."""
    problems = []

    def walk(node):
        if isinstance(node, dict):
            if "every_task_once" in node and node["every_task_once"] is not True:
                problems.append("a task was not done exactly once: %s" % node.get("task_errors"))
            if "counter_final" in node and node["counter_final"] != node.get("counter_expected"):
                problems.append("NXTASK counter %s, expected %s" % (node["counter_final"], node.get("counter_expected")))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(doc.get("results"))
    if app == "spmv":
        sym = (doc.get("validation") or {}).get("symmetry")
        matrix = (doc.get("results") or {}).get("matrix") or {}
        if isinstance(sym, dict) and matrix.get("format") == "generator" and "banded" not in str(matrix.get("source")):
            if sym.get("verdict") != "pass":
                problems.append("the symmetry test failed on a generated symmetric matrix: %s" % sym)
    return "; ".join(problems)


def leftovers(d):
    if not os.path.isdir(d):
        return []
    found = []
    for root, _, files in os.walk(d):
        found += [os.path.join(root, f) for f in files if f.endswith((".tmp", ".lock"))]
    return found


def final_outputs(d):
    found = []
    for root, _, files in os.walk(d):
        found += [f for f in files if f.endswith(".h5")]
    return found


APPS = list(SMALL)
SCHEMAS = {a: schema(a) for a in APPS}
stats = {"run": 0, "refused": 0}
t_start = time.monotonic()
for case in range(CASES):
    app = APPS[case % len(APPS)]
    keys = {k["path"]: k for k in SCHEMAS[app]}
    base = os.path.join(SOURCE, "inputs", app, "default.yaml")
    flat = flatten(yaml.safe_load(open(base)))
    flat.update(SMALL[app])
    cdir = os.path.join(OUT, "c%04d" % case)
    os.makedirs(cdir)
    # relative to the run's directory (cdir): a text edit of the deck can
    # change this path, never move it out of the scratch tree (an absolute
    # path's "build" edited into "buld" once wrote into the source tree)
    flat["output.dir"] = "out"
    flat["output.overwrite"] = False
    sets, what = [], []
    text_edits = 0
    for _ in range(rng.choice([1, 1, 2, 3])):
        kind = rng.randrange(10)
        key = rng.choice(list(keys))
        if kind < 4:
            flat[key] = value_for(key, keys[key])
            what.append("deck %s=%r" % (key, flat[key]))
        elif kind < 7:
            v = set_text(value_for(key, keys[key])).replace("\x00", "")  # argv cannot hold a NUL
            sets.append(key + "=" + v)
            what.append("--set %s=%r" % (key, v[:40]))
        elif kind == 7:
            bad = rng.choice([key + "x", key.replace(".", "..", 1), "unknown.key", key.upper(), key + ".sub",
                              key.split(".")[-1]])
            if rng.random() < 0.5:
                flat[bad] = 1
                what.append("deck unknown %s" % bad)
            else:
                sets.append(bad + "=1")
                what.append("--set unknown %s" % bad)
        elif kind == 8:
            sets.append(rng.choice(["=", "key", "==1", key + "==1", key, key + "=", "." + key + "=1",
                                    key + "=a\nb", key + "=1 # c"]))
            what.append("--set form %r" % sets[-1])
        else:
            text_edits += 1
    deck_text = yaml.safe_dump(nest(flat), default_flow_style=False, allow_unicode=True)
    for _ in range(text_edits):
        deck_text = text_edit(deck_text)
        what.append("text edit")
    deck = os.path.join(cdir, "deck.yaml")
    with open(deck, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(deck_text)
    cmd = [MPIEXEC, "-n", str(NP), app_path(app), deck, "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=30, cwd=cdir)
    except subprocess.TimeoutExpired:
        subprocess.run(["pkill", "-KILL", "-f", deck], capture_output=True)
        check(False, "case %d (%s: %s): no end within 30 s" % (case, app, "; ".join(what)))
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    label = "case %d (%s: %s)" % (case, app, "; ".join(what))
    for b in BAD:
        check(b not in err, "%s: %r in stderr:\n%s" % (label, b, err[-3000:]))
    check(p.returncode >= 0 and p.returncode < 128, "%s: exit %d (a signal)\n%s" % (label, p.returncode, err[-2000:]))
    check(not leftovers(cdir), "%s: left %s" % (label, leftovers(cdir)))
    if "locus_summary:" in out:
        check(p.returncode == 0 or "verdict: FAIL" in out,
              "%s: exit %d with a summary that does not fail\n%s" % (label, p.returncode, err[-2000:]))
        try:
            doc = yaml.safe_load(out[out.index("locus_summary:"):])["locus_summary"]
        except Exception as e:  # noqa: BLE001
            doc = None
            check(False, "%s: the summary is not YAML (%s)" % (label, e))
        broken = invariants(doc, app)
        check(not broken, "%s: %s" % (label, broken))
        stats["run"] += 1
    else:
        check(p.returncode == 1, "%s: exit %d without a summary\n%s" % (label, p.returncode, err[-2000:]))
        n = sum(1 for line in err.splitlines() if line.startswith(app + ": error:"))
        check(n == 1, "%s: %d error lines:\n%s" % (label, n, err[-3000:]))
        check(not final_outputs(cdir), "%s: refused but wrote %s" % (label, final_outputs(cdir)))
        stats["refused"] += 1
    shutil.rmtree(cdir, ignore_errors=True)
print("%d cases at %d rank(s), seed %d: %d ran, %d refused cleanly; %.0f s" %
      (CASES, NP, SEED, stats["run"], stats["refused"], time.monotonic() - t_start))
print("PASS")
