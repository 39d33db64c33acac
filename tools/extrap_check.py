"""Extra-P beside `./locus model`: runs Extra-P's command line on the
fitted points (model/extrap/*.jsonl, Extra-P's JSON Lines input) and
compares its models with locus's own.

Extra-P (PyPI package extrap) lives in the project's virtual environment
.venv/ (./locus setup creates it when PyPI is reachable); LOCUS_EXTRAP
names another extrap executable. It runs headless:

    extrap --json --disable-progress --print FORMAT FILE

The files hold one value per point, the median of its repeats (Extra-P
4.2.5's command line ignores --median for one-parameter files: see
extrap_files in model.py). (--modeler basic with negative polynomial exponents added for a strong
scaling study). Used by tools/model.py --extrap; not a command of its own.
"""
import os
import re
import subprocess
from fractions import Fraction

import numpy as np

from locuslib import ROOT
from model import Model, Term, coordinates, pct, NEGATIVE_SPACE

FORMAT = "{callpath}\t{metric}\t{model}\t{model:python}\t{smape}"
TIMEOUT = 600


def extrap_path():
    """(the extrap executable, None) or (None, why there is none)."""
    path = os.environ.get("LOCUS_EXTRAP") or os.path.join(ROOT, ".venv", "bin", "extrap")
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path, None
    return None, ("%s not found: ./locus setup installs Extra-P (pip install extrap) in .venv/ when PyPI is "
                  "reachable" % path)


def version(path):
    try:
        p = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    return p.stdout.strip(), None


def command(path, jsonl, two, negative):
    """Extra-P's command line for one file of fitted points."""
    cmd = [path, "--json", "--disable-progress", "--print", FORMAT, jsonl]
    if negative and not two:
        # Extra-P's Basic modeller with locus's negative exponents added
        # (--options takes every word after it: last)
        expos = ",".join(repr(float(Fraction(a, b))) for a, b, _ in NEGATIVE_SPACE)
        cmd += ["--modeler", "basic", "--options", "poly_exponents=" + expos, "retain_default_exponents=True"]
    return cmd


def run_file(path, jsonl, two, negative):
    """{(callpath, metric): (model text, python expression, SMAPE)} that
    Extra-P finds for a JSON Lines file, or raises RuntimeError."""
    cmd = command(path, jsonl, two, negative)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                           env=dict(os.environ, QT_QPA_PLATFORM="offscreen", MPLBACKEND="Agg"))
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError("%s: %s" % (" ".join(cmd[:2]), e))
    if p.returncode != 0:
        tail = [l for l in p.stderr.strip().splitlines() if l.strip()][-1:] or ["exit %d" % p.returncode]
        raise RuntimeError("extrap on %s failed: %s" % (os.path.basename(jsonl), tail[0]))
    found = {}
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if len(f) == 5:
            try:
                found[(f[0], f[1])] = (f[2], f[3], float(f[4]))
            except ValueError:
                continue
    return found


FACTOR = re.compile(r"^(log2\()?([pn])\)?\^\(([^)]+)\)$")


def shape(text, names):
    """The terms of an Extra-P model string (its default format: 'c0 + c1 *
    p^(1) * log2(p)^(1) + ...') as locus writes them, without coefficients."""
    terms = []
    for part in text.split(" + "):
        if " * " not in part:
            continue  # the constant (Extra-P leaves out a zero one)
        factors = {}
        for f in part.split(" * ")[1:]:
            m = FACTOR.match(f.strip())
            if not m:
                return None
            k = names.index(m.group(2))
            e = Fraction(m.group(3)).limit_denominator(12)
            i, j = factors.get(k, (0, 0))
            factors[k] = (i, e) if m.group(1) else (e, j)
        terms.append(Term([(k, i, int(j)) for k, (i, j) in factors.items()]).text(names))
    return sorted(terms)


def evaluate(expr, names, X):
    """Extra-P's python-format model at the points X (rows: parameters)."""
    env = {"log2": np.log2, "__builtins__": {}}
    env.update({n: np.asarray(X[i], float) for i, n in enumerate(names)})
    with np.errstate(all="ignore"):
        return np.broadcast_to(np.asarray(eval(expr, env), float), X.shape[1:])  # noqa: S307 (Extra-P's own output)


def compare_one(s, found):
    """The comparison of one of locus's models with Extra-P's (a dict)."""
    key = (s["variant"], s["metric"])
    if key not in found:
        return {"variant": s["variant"], "metric": s["metric"], "extrap_model": None}
    text, expr, sm = found[key]
    names = s["parameters"]
    two = len(names) == 2
    held = s["held_out"]
    errs = []
    if held:
        X = coordinates([(h["p"], h["n"]) for h in held], names)
        pred = evaluate(expr, names, X)
        errs = [(float(v) - h["measured"]) / h["measured"] if h["measured"] else None for v, h in zip(pred, held)]
    pts = [(f["p"], f["n"]) for f in s["fitted"]] + [(h["p"], h["n"]) for h in held]
    X = coordinates(pts, names)
    mine, other = s["model"].evaluate(X), evaluate(expr, names, X)
    with np.errstate(all="ignore"):
        # relative to each value, and to 1e-9 of the largest (a zero count)
        rel = np.abs(other - mine) / np.maximum(np.abs(mine), 1e-9 * np.max(np.abs(mine)) or 1e-300)
    agree = float(np.max(np.where(mine == other, 0.0, rel)))
    ours = Model(names, 0, [(1.0, t) for _, t in s["model"].terms]).shape()
    theirs = shape(text, names)
    known = [e for e in errs if e is not None]
    return {"variant": s["variant"], "metric": s["metric"], "extrap_model": text, "extrap_smape": sm,
            "same_terms": theirs == ours, "max_relative_difference": agree, "extrap_terms": theirs, "locus_terms": ours,
            "extrap_held_out_errors": errs, "extrap_worst": max(known, key=abs) if known else None,
            "file": s["extrap_file"]}


def compare(series, out, negative):
    """(printed lines, JSON) of Extra-P's models of every fitted series
    beside locus's; Extra-P missing or failing is said, not an error."""
    path, why = extrap_path()
    if path:
        ver, why = version(path)
    if not path or not ver:
        return (["Extra-P: not run: %s; the models above are locus's own fit (numpy)" % why],
                {"available": False, "reason": why})
    files = sorted({s["extrap_file"] for s in series})
    found, errors = {}, []
    for f in files:
        mine = [s for s in series if s["extrap_file"] == f]
        two = any(len(s["parameters"]) == 2 for s in mine)
        # negative exponents are p's (strong scaling), never a size's
        by_p = all(s["parameters"][0] == "p" for s in mine)
        try:
            found.update(run_file(path, os.path.join(out, f), two, negative and by_p))
        except RuntimeError as e:
            errors.append(str(e))
    rows = [compare_one(s, found) for s in series]
    same = sum(1 for r in rows if r.get("same_terms"))
    lines = ["%s (%s --json FILE, FILE: %s): the same terms in %d of %d models"
             % (ver, os.path.relpath(path, ROOT) if path.startswith(ROOT) else path,
                ", ".join("model/" + f for f in files), same, len(rows))]
    width = max(len(r["metric"]) for r in rows)
    for r in rows:
        if not r["extrap_model"]:
            lines.append("  %s, %-*s  Extra-P: no model" % (r["variant"], width, r["metric"]))
            continue
        lines.append("  %s, %-*s  %-9s Extra-P: %s  (SMAPE %.1f %%%s; differs from locus's by %.2g %% at most)" % (
            r["variant"], width, r["metric"], "same" if r["same_terms"] else "DIFFERENT", r["extrap_model"],
            r["extrap_smape"], ", held out %s" % pct(r["extrap_worst"]) if r["extrap_worst"] is not None else "",
            100 * r["max_relative_difference"]))
    lines += ["  Extra-P failed: %s" % e for e in errors]
    return lines, {"available": True, "version": ver, "command": command(path, "FILE", False, negative)[1:],
                   "models": rows, "errors": errors, "same_terms": same}
