#!/usr/bin/python3
"""locus model: fitted scaling models of a study's timers and counted requirements.

    ./locus model STUDY_DIR [--holdout K] [--timer-stat max|avg|min] [--size per-rank|global]
                            [--params auto|p|pn|n] [--terms 1|2] [--negative auto|on|off]
                            [--metrics REGEX] [--keep-oversubscribed] [--max-error PCT]
                            [--no-plots] [--extrap]

STUDY_DIR is the results directory of `./locus study` (the one holding
results.csv and study.json, e.g. results/heat3d_weak), or a directory with
exactly one results/<name>/results.csv under it. For every variant of the
study and every metric -- each timer (timer_<phase>_max: the slowest rank,
as the study's plots; --timer-stat), every counted requirement (count_*
columns) and the figure of merit -- it fits a model in Extra-P's
performance-model normal form (PMNF),

    f(p) = c0 + c1 * p^i * log2(p)^j,

by Extra-P's own procedure (its Basic single-parameter modeller: least
squares for each exponent pair of its default search space, the hypothesis
chosen by leave-one-out cross-validated SMAPE, terms contributing less than
0.05 % rejected, the constant model kept unless beaten). When the study
varies the problem per rank independently of the ranks (a swept size), the
model has two parameters, p and n (points per rank; --size global: the
global points), built as Extra-P's multi-parameter modeller builds them:
one single-parameter model along each parameter, then their product, sum
and mixed combinations, the best by SMAPE.

--params n fits one model per rank count with the size n as its only
parameter: on a host with few cores, where only the runs up to one rank
per core time the machine, a size sweep at those rank counts still has
held-out points (the largest sizes).

Repeats are aggregated per point by their median. The largest K rank
counts (--holdout, default 1; the largest K sizes with --params n) are
left out of the fit and predicted: the relative error of each prediction
is printed, with the worst of all, and the SMAPE over the held-out points.
Time models leave out over-subscribed runs (ranks sharing cores), counts
keep them (--keep-oversubscribed keeps them for times too). A strong
scaling study also searches negative exponents (p^(-i): the work per rank
shrinks; --negative).

Writes STUDY_DIR/model/: models.md, models.json (every model with its
exponents and coefficients, SMAPE, held-out errors), measurements.jsonl
(every measurement in Extra-P's JSON Lines input format), extrap/*.jsonl
(the fitted points' medians, one file per variant, for `extrap --json`)
and <metric>.png (measured repeats, medians, the model, held-out points).
--extrap also runs Extra-P (.venv/bin/extrap, installed by ./locus setup)
on those files and prints its models beside these.

Exit status: 0, 1 when --max-error is exceeded, 2 when the study cannot be
fitted (too few rank counts, no results) or an option is wrong.
"""
import argparse
import csv
import glob
import json
import math
import os
import re
import statistics
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locuslib import UserError, write_file  # noqa: E402

# Extra-P's default single-parameter search space (exponent i as
# numerator/denominator, log exponent j): SingleParameterModeler.
# create_default_building_blocks in extrap/modelers/single_parameter/basic.py
# (github extra-p/extrap, version 4.2.5). p^(4/5) is Extra-P's too.
SEARCH_SPACE = [(0, 1, 1), (0, 1, 2), (1, 4, 0), (1, 3, 0), (1, 4, 1), (1, 3, 1), (1, 4, 2), (1, 3, 2), (1, 2, 0),
                (1, 2, 1), (1, 2, 2), (2, 3, 0), (3, 4, 0), (2, 3, 1), (3, 4, 1), (4, 5, 0), (2, 3, 2), (3, 4, 2),
                (1, 1, 0), (1, 1, 1), (1, 1, 2), (5, 4, 0), (5, 4, 1), (4, 3, 0), (4, 3, 1), (3, 2, 0), (3, 2, 1),
                (3, 2, 2), (5, 3, 0), (7, 4, 0), (2, 1, 0), (2, 1, 1), (2, 1, 2), (9, 4, 0), (7, 3, 0), (5, 2, 0),
                (5, 2, 1), (5, 2, 2), (8, 3, 0), (11, 4, 0), (3, 1, 0), (3, 1, 1)]
# For strong scaling: p^(-i) for every polynomial exponent of the space
# (Extra-P's allow_negative_exponents offers p^(-i) log2(p)^(-j) instead,
# which p = 1 rules out).
NEGATIVE_SPACE = sorted({(-a, b, 0) for a, b, _ in SEARCH_SPACE if a})
# Extra-P's minimum term contribution (AbstractSingleParameterModeler.
# minimum_term_contribution) and its threshold for a constant coefficient
# that is numerically zero (clean_constant_coefficient's epsilon).
EPSILON = 0.0005
# A two-term model must beat the best one-term model's cross-validated
# SMAPE by this factor (Extra-P's refining modeller's acceptance threshold).
ACCEPT = 1.5
MIN_POINTS = 3
# Extra-P warns below 5 points per parameter.
EXTRAP_POINTS = 5


# ---------------------------------------------------------------- terms and models

class Term:
    """prod over factors of x_k^i * log2(x_k)^j; factors are (parameter
    index, exponent i as a Fraction, log exponent j)."""

    def __init__(self, factors):
        self.factors = tuple(sorted((k, Fraction(i), int(j)) for k, i, j in factors if i != 0 or j != 0))

    def evaluate(self, X):
        X = np.asarray(X, dtype=float).reshape(-1, np.shape(X)[-1])
        v = np.ones(X.shape[1])
        with np.errstate(all="ignore"):
            for k, i, j in self.factors:
                if i:
                    v = v * X[k] ** float(i)
                if j:
                    v = v * np.log2(X[k]) ** j
        return v

    def times(self, other):
        return Term(self.factors + other.factors)

    def text(self, names):
        parts = []
        for k, i, j in self.factors:
            if i:
                parts.append(names[k] if i == 1 else "%s^%s" % (names[k], i if i.denominator == 1 and i > 0
                                                                    else "(%s)" % i))
            if j:
                parts.append("log2(%s)" % names[k] if j == 1 else "log2(%s)^%d" % (names[k], j))
        return " * ".join(parts)

    def to_json(self, names):
        return [{"parameter": names[k], "exponent": str(i), "log2_exponent": j} for k, i, j in self.factors]


def number(c):
    return "%.4g" % c


class Model:
    """c0 + sum of coefficient * term, in the parameters NAMES."""

    def __init__(self, names, constant, terms=()):
        self.names, self.constant, self.terms = list(names), float(constant), [(float(c), t) for c, t in terms]

    def evaluate(self, X):
        X = np.asarray(X, dtype=float).reshape(len(self.names), -1)
        v = np.full(X.shape[1], self.constant)
        for c, t in self.terms:
            v = v + c * t.evaluate(X)
        return v

    def text(self):
        parts = [number(self.constant)] if self.constant != 0 or not self.terms else []
        for c, t in self.terms:
            body = "%s * %s" % (number(abs(c)), t.text(self.names))
            parts.append((("- " if c < 0 else "+ ") if parts else ("-" if c < 0 else "")) + body)
        return " ".join(parts)

    def shape(self):
        """The model's terms without coefficients (what Extra-P must match)."""
        return sorted(t.text(self.names) for c, t in self.terms)

    def to_json(self):
        return {"parameters": self.names, "constant": self.constant,
                "terms": [{"coefficient": c, "factors": t.to_json(self.names)} for c, t in self.terms],
                "text": self.text()}


# ---------------------------------------------------------------- fitting (Extra-P's procedure)

def smape(pred, y):
    """Symmetric mean absolute percentage error (Extra-P's SMAPE: points
    where both are 0 left out)."""
    pred, y = np.asarray(pred, float), np.asarray(y, float)
    s = np.abs(pred) + np.abs(y)
    m = s != 0
    return float(np.mean(2 * np.abs(pred[m] - y[m]) / s[m]) * 100) if m.any() else 0.0


def solve(cols, y):
    """Least squares of y on [1, cols...] (columns scaled first: p^3 and n
    reach 1e15); a constant below rounding (1e-12 of the largest value) is 0."""
    A = np.column_stack([np.ones(len(y))] + [np.asarray(c, float) for c in cols])
    scale = np.abs(A).max(axis=0)
    scale[scale == 0] = 1
    c = np.linalg.lstsq(A / scale, y, rcond=None)[0] / scale
    if len(y) and abs(c[0]) <= 1e-12 * float(np.max(np.abs(y))):
        c[0] = 0.0
    return c


def clean_constant(c, y):
    """Extra-P's clean_constant_coefficient: a constant that is tiny beside
    the smallest value is zero."""
    lo = float(np.min(y))
    if (abs(c[0]) < EPSILON) if lo == 0 else (abs(c[0] / lo) < EPSILON):
        c = c.copy()
        c[0] = 0.0
    return c


def loo_smape(cols, y):
    """Leave-one-out cross-validated SMAPE of y = c0 + sum c_k cols_k, as
    Extra-P's find_best_hypothesis computes it."""
    n, total = len(y), 0.0
    for k in range(n):
        keep = np.arange(n) != k
        c = clean_constant(solve([col[keep] for col in cols], y[keep]), y[keep])
        pred = c[0] + sum(ci * col[k] for ci, col in zip(c[1:], cols))
        s = abs(pred) + abs(y[k])
        if s:
            total += 2 * abs(pred - y[k]) / s
    return total / n * 100


def contributions_ok(c, cols, y):
    """Every term contributes at least EPSILON of some value (Extra-P's
    calc_term_contribution) and has a non-zero coefficient."""
    nz = y != 0
    for ci, col in zip(c[1:], cols):
        if ci == 0:
            return False
        with np.errstate(all="ignore"):
            share = np.abs(ci * col[nz] / y[nz])
        if share.size and np.nanmax(share) < EPSILON:
            return False
    return True


def candidates(x, k, negative):
    """The single-parameter terms in parameter k that values x allow:
    Extra-P drops log terms when a value is below 1."""
    space = SEARCH_SPACE + (NEGATIVE_SPACE if negative else [])
    lo = float(np.min(x))
    return [Term([(k, Fraction(a, b), j)]) for a, b, j in space if not (j and lo < 1) and not (a < 0 and lo <= 0)]


def fit_single(X, y, k, names, negative=False, terms=1):
    """The best model of y in parameter k (rows of X are the parameters):
    (Model, cross-validated SMAPE in %)."""
    y = np.asarray(y, float)
    const = float(np.mean(y))
    best, best_s = Model(names, const), smape(np.full(len(y), const), y)
    if np.all(y == y[0]):
        return best, 0.0
    for t in candidates(X[k], k, negative):
        col = t.evaluate(X)
        if not np.all(np.isfinite(col)):
            continue
        c = solve([col], y)
        if not np.all(np.isfinite(c)) or not contributions_ok(c, [col], y):
            continue
        s = loo_smape([col], y)
        if s < best_s:
            best, best_s = Model(names, c[0], [(c[1], t)]), s
    if terms == 2 and len(y) >= 5:
        best, best_s = fit_pairs(X, y, k, names, negative, best, best_s)
    return best, best_s


def loo_predictions(A, y):
    """Leave-one-out predictions of ordinary least squares (the hat matrix:
    residual / (1 - leverage)); None when a point has leverage 1."""
    scale = np.abs(A).max(axis=0)
    scale[scale == 0] = 1
    Q, _ = np.linalg.qr(A / scale)
    h = np.sum(Q * Q, axis=1)
    if np.any(h > 1 - 1e-9):
        return None
    fit = Q @ (Q.T @ y)
    return y - (y - fit) / (1 - h)


def fit_pairs(X, y, k, names, negative, best, best_s):
    """Two-term hypotheses c0 + c1 t1 + c2 t2 (an extension: Extra-P's
    Basic modeller has one term): both coefficients positive, both terms
    contributing, and a cross-validated SMAPE ACCEPT times better than the
    best one-term model."""
    cand = candidates(X[k], k, negative)
    cols = [t.evaluate(X) for t in cand]
    threshold, found = best_s / ACCEPT, None
    for a in range(len(cand)):
        for b in range(a + 1, len(cand)):
            if not (np.all(np.isfinite(cols[a])) and np.all(np.isfinite(cols[b]))):
                continue
            c = solve([cols[a], cols[b]], y)
            if c[1] <= 0 or c[2] <= 0 or not contributions_ok(c, [cols[a], cols[b]], y):
                continue
            pred = loo_predictions(np.column_stack([np.ones(len(y)), cols[a], cols[b]]), y)
            if pred is None:
                continue
            s = smape(pred, y)
            if s < threshold:
                threshold, found = s, Model(names, c[0], [(c[1], cand[a]), (c[2], cand[b])])
    return (found, threshold) if found else (best, best_s)


def line_points(X, y, k):
    """Extra-P's point selection for parameter k (find_best_measurement_points):
    the lines along k with the other parameter fixed that have the most
    points, averaged over those lines at each value of k."""
    lines = {}
    for i in range(X.shape[1]):
        lines.setdefault(X[1 - k][i], {})[X[k][i]] = y[i]
    longest = max(len(v) for v in lines.values())
    chosen = [v for v in lines.values() if len(v) == longest]
    xs = sorted(chosen[0])
    ys = [float(np.mean([v[x] for v in chosen if x in v])) for x in xs]
    L = np.ones((2, len(xs)))
    L[k] = xs
    return L, np.array(ys)


def fit_two(X, y, names, negative=(False, False)):
    """Extra-P's multi-parameter modeller for (p, n): a single-parameter
    model along each, then c0 + c1 tp tn, c0 + c1 tp + c2 tn, c0 + c1 tp +
    c2 tp tn and c0 + c1 tn + c2 tp tn, the best by SMAPE. (Model, SMAPE)."""
    y = np.asarray(y, float)
    single = []
    for k in (0, 1):
        L, ly = line_points(X, y, k)
        m, _ = fit_single(L, ly, k, names, negative[k])
        single.append(m)
    found = [(m, m.terms[0][1]) for m in single if m.terms]
    const = float(np.mean(y))
    if not found:
        return Model(names, const), smape(np.full(len(y), const), y)
    if len(found) == 1:
        m, t = found[0]
        c = solve([t.evaluate(X)], y)
        options = [m, Model(names, c[0], [(c[1], t)])]
        return min(((o, smape(o.evaluate(X), y)) for o in options), key=lambda o: o[1])
    tp, tn = found[0][1], found[1][1]
    prod = tp.times(tn)
    hyps = [[prod], [tp, tn], [tp, prod], [tn, prod]]
    best, best_s = None, None
    for i, h in enumerate(hyps):
        cols = [t.evaluate(X) for t in h]
        c = solve(cols, y)
        m = Model(names, c[0], zip(c[1:], h))
        s = smape(m.evaluate(X), y)
        if i == 0 or (contributions_ok(c, cols, y) and s < best_s):
            best, best_s = m, s
    return best, best_s


# ---------------------------------------------------------------- the study

def locate(path):
    """(results.csv, its directory, study.json's content or {}) of a study's
    results directory, a directory holding one results/<name>/, or the CSV."""
    if os.path.isfile(path):
        csv_path = path
    elif os.path.isfile(os.path.join(path, "results.csv")):
        csv_path = os.path.join(path, "results.csv")
    elif os.path.isdir(path):
        found = sorted(glob.glob(os.path.join(path, "results", "*", "results.csv")))
        if len(found) != 1:
            raise UserError("%s: %s" % (path, "no results.csv (give the results directory of ./locus study, e.g. "
                                        "results/heat3d_weak)" if not found else "holds %d studies (%s): name one"
                                        % (len(found), ", ".join(os.path.dirname(f) for f in found))))
        csv_path = found[0]
    else:
        raise UserError("%s: no such directory (give the results directory of ./locus study)" % path)
    results = os.path.dirname(os.path.abspath(csv_path))
    study = {}
    try:
        with open(os.path.join(results, "study.json")) as f:
            study = json.load(f)
    except (OSError, ValueError):
        pass
    return csv_path, results, study if isinstance(study, dict) else {}


def num(v):
    """A CSV cell as a finite float, else None."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def read_rows(csv_path):
    """(columns, the finished runs' rows, the number of rows)."""
    try:
        with open(csv_path, newline="") as f:
            reader = csv.DictReader(f)
            columns, rows = list(reader.fieldnames or []), list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise UserError("%s: cannot read (%s)" % (csv_path, e))
    if "ranks" not in columns:
        raise UserError("%s: no ranks column (not the results.csv of ./locus study)" % csv_path)
    ok = [r for r in rows if r.get("status", "ok") == "ok" and (num(r.get("ranks")) or 0) >= 1]
    return columns, ok, len(rows)


TIMER = re.compile(r"^timer_(.+)_(min|avg|max)$")


def metric_columns(columns, stat, pattern):
    """(column, kind) of every metric modelled: timer_<phase>_<stat> (time)
    and count_* (count), those matching PATTERN; figure_of_merit (rate)
    when PATTERN names it."""
    out = []
    for c in columns:
        m = TIMER.match(c)
        if m and m.group(2) == stat:
            out.append((c, "time"))
        elif c.startswith("count_"):
            out.append((c, "count"))
        elif c == "figure_of_merit" and pattern:
            out.append((c, "rate"))  # a rate (work over time): only asked for by name
    return [m for m in out if not pattern or re.search(pattern, m[0])]


SIZE_COLUMNS = {"per-rank": "points_per_rank", "global": "global_points"}


def size_keys(sweep, rows, size_col):
    """The swept keys that change the problem: at some rank count, their
    values give different sizes (a size sweep)."""
    keys = []
    for k in sweep:
        by = {}
        for r in rows:
            by.setdefault(r["ranks"], {}).setdefault(r.get(k, ""), set()).add(r.get(size_col, ""))
        if any(len({frozenset(s) for s in vals.values()}) > 1 for vals in by.values()):
            keys.append(k)
    return keys


def varies_with_size(rows, size_col):
    """The problem size takes more than one value at some rank count."""
    by = {}
    for r in rows:
        by.setdefault(r["ranks"], set()).add(num(r.get(size_col)))
    return any(len(v) > 1 for v in by.values())


def make_groups(rows, study, columns, size_col, params):
    """[(label, rows, parameters)]: one group per variant (the swept keys
    that do not change the size; the ranks per node when they vary) with
    the model's parameters: ("p", "n") when the size is the second parameter
    (--params pn, or auto when it varies at a fixed rank count), else ("p",)
    and one group per size too (--params p); --params n: one group per rank
    count, the size the only parameter ("n",)."""
    sweep = [k for k in (study.get("sweep") or {}) if k in columns]
    keep = [k for k in sweep if k not in size_keys(sweep, rows, size_col)]
    ppn = "ranks_per_node" in columns and len({r.get("ranks_per_node") for r in rows}) > 1
    groups = {}
    for r in rows:
        if sweep:
            label = ", ".join("%s=%s" % (k.split(".")[-1], r.get(k, "")) for k in keep)
        else:
            label = r.get("variant") or ""
        if ppn:
            label += (", " if label else "") + "ppn=%s" % r.get("ranks_per_node")
        groups.setdefault(label or "run", []).append(r)
    out = []
    for label, grows in groups.items():
        sized = varies_with_size(grows, size_col)
        if params in ("pn", "n") and not sized:
            raise UserError("--params %s: in variant %s the problem (%s) follows from the ranks alone; %s needs several "
                            "sizes at one rank count (sweep a size key)" % (
                                params, label, size_col, "a two-parameter model" if params == "pn" else "a model in n"))
        if params == "n":
            by = {}
            for r in grows:
                by.setdefault(int(num(r["ranks"])), []).append(r)
            out += [("%s, p=%d" % (label, p), rs, ("n",)) for p, rs in sorted(by.items())]
            continue
        two = params == "pn" or (params == "auto" and sized)
        if two or not sized:
            out.append((label, grows, ("p", "n") if two else ("p",)))
            continue
        by = {}
        for r in grows:
            by.setdefault(r.get(size_col), []).append(r)
        out += [("%s, n=%.10g" % (label, num(n) or 0), rs, ("p",))
                for n, rs in sorted(by.items(), key=lambda kv: num(kv[0]) or 0)]
    return out


def collect(rows, metric, kind, size_col, axes, keep_over):
    """{(p, n or None): [values of every repeat]} of METRIC (n when "n" is
    one of the AXES); time and rate metrics leave over-subscribed runs out
    unless KEEP_OVER."""
    two = "n" in axes
    pts = {}
    for r in rows:
        if kind != "count" and not keep_over and r.get("oversubscribed") in ("1", "True", "true"):
            continue
        v = num(r.get(metric))
        n = num(r.get(size_col)) if two else None
        if v is None or (two and n is None):
            continue
        pts.setdefault((int(num(r["ranks"])), n), []).append(v)
    return pts


# ---------------------------------------------------------------- fitting a study

def axis_value(key, axis):
    """A point's (p, n) key along one parameter."""
    return key[0] if axis == "p" else key[1]


def coordinates(keys, axes):
    """The points' (p, n) keys as rows, one per parameter of AXES."""
    return np.array([[axis_value(k, a) for k in keys] for a in axes], float)


AXIS_NAMES = {"p": ("rank count", "rank counts"), "n": ("size", "sizes")}


def too_few(fit, axes):
    """Why the fitted points cannot give a model, or None."""
    ps = sorted({axis_value(k, axes[0]) for k in fit})
    if len(ps) < MIN_POINTS:
        return "%d %s to fit (%s), a model needs %d" % (len(ps), AXIS_NAMES[axes[0]][len(ps) != 1],
                                                         ", ".join("%.10g" % v for v in ps) or "none", MIN_POINTS)
    if len(axes) == 2:
        for k, name in ((0, "rank counts at one size"), (1, "sizes at one rank count")):
            lines = {}
            for key in fit:
                lines.setdefault(key[1 - k], set()).add(key[k])
            if max(len(v) for v in lines.values()) < MIN_POINTS:
                return "fewer than %d %s (two-parameter model in p and n; --size global for a strong " \
                       "scaling size sweep, or --params p)" % (MIN_POINTS, name)
    return None


def fit_series(label, metric, kind, points, held, axes, negative, terms):
    """The model of one metric of one variant: a dict (see models.json), or
    (None, why) when its points cannot be fitted. HELD: the values of the
    first parameter held out."""
    two = len(axes) == 2
    fit = {k: v for k, v in points.items() if axis_value(k, axes[0]) not in held}
    why = too_few(fit, axes)
    if why:
        return None, why
    keys = sorted(fit)
    X, y = coordinates(keys, axes), np.array([statistics.median(fit[k]) for k in keys])
    if two:
        model, loo = fit_two(X, y, ["p", "n"], (negative, False))
    else:
        model, loo = fit_single(X, y, 0, list(axes), negative, terms)
    res = {"variant": label, "metric": metric, "kind": kind, "model": model, "smape": smape(model.evaluate(X), y),
           "smape_cross_validated": None if two else loo, "parameters": model.names,
           "fitted": [{"p": k[0], "n": k[1], "median": float(m), "values": fit[k]} for k, m in zip(keys, y)],
           "held_out": []}
    for k in sorted(points):
        if axis_value(k, axes[0]) not in held:
            continue
        meas = statistics.median(points[k])
        pred = float(model.evaluate(coordinates([k], axes))[0])
        rel = (pred - meas) / meas if meas != 0 else (0.0 if pred == 0 else None)
        res["held_out"].append({"p": k[0], "n": k[1], "measured": meas, "predicted": pred, "relative_error": rel,
                                "values": points[k]})
    errs = [h for h in res["held_out"] if h["relative_error"] is not None]
    res["worst"] = max(errs, key=lambda h: abs(h["relative_error"])) if errs else None
    res["smape_held_out"] = smape(np.array([h["predicted"] for h in res["held_out"]]),
                                  np.array([h["measured"] for h in res["held_out"]])) if res["held_out"] else None
    return res, None


def fit_study(args, results, study, rows, metrics):
    """Every model of the study: (fitted series, notes on what was not fitted)."""
    size_col = SIZE_COLUMNS[args.size]
    negative = args.negative == "on" or (args.negative == "auto" and study.get("scaling") == "strong")
    out, notes = [], []
    for label, grows, axes in make_groups(rows, study, set(rows[0]), size_col, args.params):
        # the values of the first parameter: rank counts, or sizes (--params n)
        ps = sorted({int(num(r["ranks"])) if axes[0] == "p" else num(r.get(size_col)) for r in grows})
        held = set(ps[max(0, len(ps) - args.holdout):]) if args.holdout else set()
        one, many = AXIS_NAMES[axes[0]]
        if len(ps) - len(held) < MIN_POINTS:
            notes.append("variant %s has %d %s (%s)%s; a model needs %d distinct %s to fit "
                         "(a study with more %s%s)"
                         % (label, len(ps), one if len(ps) == 1 else many, ", ".join("%.10g" % v for v in ps),
                            "; --holdout %d leaves %d" % (args.holdout, len(ps) - len(held)) if held else "",
                            MIN_POINTS, many, many, ", or a smaller --holdout" if held else ""))
            continue
        for metric, kind in metrics:
            pts = collect(grows, metric, kind, size_col, axes, args.keep_oversubscribed)
            if not pts:
                continue
            # negative exponents are for p in strong scaling, never for n
            res, why = fit_series(label, metric, kind, pts, held, axes,
                                  negative and kind != "rate" and axes[0] == "p", args.terms)
            if res:
                res["held"] = sorted(held)
                out.append(res)
            else:
                over = kind != "count" and not args.keep_oversubscribed and any(
                    r.get("oversubscribed") in ("1", "True", "true") for r in grows)
                notes.append("variant %s, %s: %s%s" % (label, metric, why, " (over-subscribed runs are left out of "
                                                       "time models: --keep-oversubscribed)" if over else ""))
    if not out:
        raise UserError("%s: nothing to fit: %s" % (results, notes[0] if notes else "no numeric timer_*, count_* "
                                                    "or figure_of_merit values"))
    return out, notes


# ---------------------------------------------------------------- reporting

def pct(rel):
    return "n/a" if rel is None else "%+.1f %%" % (100 * rel)


def spans(values, stepped=False):
    """1, 2, 3, 4, 8 as '1-4, 8': runs of three or more consecutive integers
    as ranges; STEPPED: runs of any constant step (1000, 2000, 3000 as
    '1000-3000 step 1000')."""
    out, run = [], []
    for v in sorted(values) + [None]:
        step = run[1] - run[0] if len(run) >= 2 else (v - run[-1] if run and v is not None and stepped else 1)
        if run and (v is None or v != run[-1] + step):
            if len(run) < 3:
                out += ["%.10g" % x for x in run]
            else:
                out.append("%.10g-%.10g" % (run[0], run[-1]) + (" step %.10g" % step if step != 1 else ""))
            run = []
        if v is not None:
            run.append(v)
    return ", ".join(out)


def where(h):
    return "p=%d" % h["p"] + ("" if h.get("n") is None else ", n=%.10g" % h["n"])


def worst_of(series):
    """(series, held-out point) with the largest relative error, or None."""
    found = [(s, s["worst"]) for s in series if s["worst"]]
    return max(found, key=lambda f: abs(f[1]["relative_error"])) if found else None


def summary_lines(args, results, study, series, ntotal, nrows):
    """The printed report: a head, one table per variant, the worst error."""
    variants = list(dict.fromkeys(s["variant"] for s in series))
    axis = series[0]["parameters"][0]  # p, or n with --params n
    held = sorted({p for s in series for p in s["held"]})
    fitted = sorted({f[axis] for s in series for f in s["fitted"]})
    head = ["locus model: %s (%s%s): %d run%s of %d finished, %d variant%s" % (
        results, study.get("app", "study"), ", %s scaling" % study["scaling"] if study.get("scaling") else "",
        nrows, "" if nrows == 1 else "s", ntotal, len(variants), "" if len(variants) == 1 else "s"),
        "Extra-P's PMNF, medians of the repeats, fitted on %s = %s; held out: %s; times: timer_*_%s" % (
        axis, spans(fitted, axis == "n"), "%s = %s" % (axis, spans(held, axis == "n")) if held else
        "none (--holdout 0)",
        args.timer_stat)]
    out = head
    width = max(len(s["metric"]) for s in series)
    for v in variants:
        mine = [s for s in series if s["variant"] == v]
        out += ["", "variant %s (%s)" % (v, ", ".join(mine[0]["parameters"])),
                "  %-*s  %7s  %-18s  %8s  %s" % (width, "metric", "SMAPE", "held out (worst)", "its SMAPE",
                                                 "model")]
        for s in mine:
            w = s["worst"]
            ho = "%s %s" % (pct(w["relative_error"]), where(w)) if w else ("-" if not s["held_out"] else "n/a")
            hs = "-" if s["smape_held_out"] is None else "%6.1f %%" % s["smape_held_out"]
            out.append("  %-*s  %5.1f %%  %-18s  %8s  %s" % (width, s["metric"], s["smape"], ho, hs,
                                                             s["model"].text()))
    w = worst_of(series)
    out += ["", "worst held-out relative error: %s" % ("%.1f %% (%s, variant %s, %s)" % (
        100 * abs(w[1]["relative_error"]), w[0]["metric"], w[0]["variant"], where(w[1])) if w else "none (no "
        "held-out points)")]
    return out


def series_json(s):
    d = {k: v for k, v in s.items() if k not in ("model", "worst")}
    d["model"] = s["model"].to_json()
    d["worst_relative_error"] = None if not s["worst"] else s["worst"]["relative_error"]
    return d


def models_json(args, results, study, series, notes, extrap=None):
    w = worst_of(series)
    doc = {"generated_by": "locus model", "study": results, "app": study.get("app"), "scaling": study.get("scaling"),
           "timer_stat": args.timer_stat, "size": SIZE_COLUMNS[args.size], "holdout": args.holdout,
           "aggregate": "median", "form": "Extra-P PMNF: c0 + sum c_k * prod p^i * log2(p)^j",
           "worst_relative_error": None if not w else w[1]["relative_error"],
           "models": [series_json(s) for s in series], "not_fitted": notes}
    if extrap is not None:
        doc["extrap"] = extrap
    return json.dumps(doc, indent=1)


def models_md(args, results, study, series, notes, lines, extrap_lines=()):
    out = ["# Fitted models: %s" % (study.get("name") or os.path.basename(results)), "",
           "Written by `./locus model %s`. Models in Extra-P's performance-model normal form, fitted on the "
           "medians of the repeats by Extra-P's procedure (docs/co-design.md, Fitted models); held out and "
           "predicted: the largest %d %s." % (" ".join([results] + args.argv), args.holdout,
                                              AXIS_NAMES[series[0]["parameters"][0]][args.holdout != 1]), "", "```"]
    out += lines + ["```", ""]
    out += ["## Held-out points", "", "| variant | metric | point | measured | predicted | error |",
            "| --- | --- | --- | --- | --- | --- |"]
    for s in series:
        for h in s["held_out"]:
            out.append("| %s | %s | %s | %.6g | %.6g | %s |" % (s["variant"], s["metric"], where(h), h["measured"],
                                                               h["predicted"], pct(h["relative_error"])))
    if notes:
        out += ["", "## Not fitted", ""] + ["- " + n for n in notes]
    out += ["", "## Extra-P", "", "The fitted points of each variant (the medians of their repeats) are in "
            "`extrap/*.jsonl`; Extra-P models them with `extrap --json FILE` (`./locus model --extrap` runs it and "
            "compares). `measurements.jsonl` holds every repeat."]
    if extrap_lines:
        out += ["", "```"] + list(extrap_lines) + ["```"]
    return "\n".join(out) + "\n"


def plain(v):
    return int(v) if v is not None and float(v).is_integer() else v


def jsonl_line(p, n, metric, callpath, value, names):
    # Extra-P's JSON Lines input: one object a line, "params" (the same names
    # on every line), "metric", "callpath" and "value"; repeated lines at one
    # point are repetitions. Checked against read_jsonlines_file in
    # extrap/fileio/file_reader/jsonlines_file_reader.py (github
    # extra-p/extrap, version 4.2.5).
    params = {a: plain(p if a == "p" else n) for a in names}
    return json.dumps({"params": params, "metric": metric, "callpath": callpath, "value": value})


def measurements_jsonl(groups, metrics, size_col):
    """Every measurement of every modelled metric (all finished runs, all
    repeats, held-out and over-subscribed ones too)."""
    names = ("p", "n") if any("n" in axes for _, _, axes in groups) else ("p",)
    lines = []
    for label, rows, _ in groups:
        for metric, _ in metrics:
            for r in rows:
                v = num(r.get(metric))
                if v is not None:
                    lines.append(jsonl_line(num(r["ranks"]), num(r.get(size_col)), metric, label, v, names))
    return "\n".join(lines) + "\n"


def slug(text):
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_") or "run"


def extrap_files(series):
    """{file name: JSON Lines text} of the fitted points, one file per
    variant and set of fitted points (Extra-P wants every metric of a file
    measured at every point of it); each series gets its 'extrap_file'.
    One line per point: its median, the value locus fits (Extra-P 4.2.5's
    command line models the mean of repeats whatever --median or --measure
    say when a file has one parameter: ModelGenerator._choose_modeler sets
    the measure only for multi-parameter modellers)."""
    files, seen = {}, {}
    for s in series:
        pts = tuple((f["p"], f["n"]) for f in s["fitted"])
        key = (s["variant"], pts)
        if key not in seen:
            base = slug(s["variant"])
            name = base + ".jsonl"
            i = 2
            while name in files:
                name, i = "%s-%d.jsonl" % (base, i), i + 1
            seen[key] = name
            files[name] = []
        s["extrap_file"] = "extrap/" + seen[key]
        for f in s["fitted"]:
            files[seen[key]].append(jsonl_line(f["p"], f["n"], s["metric"], s["variant"], f["median"],
                                               s["parameters"]))
    return {k: "\n".join(v) + "\n" for k, v in files.items()}


# ---------------------------------------------------------------- plots

STYLES = ("-", "--", ":", "-.")


def plot_series(ax, s, colour):
    """One variant's repeats, medians, held-out points and model curve (one
    curve per size, up to four, for a two-parameter model). The x axis is
    the model's first parameter (p, or n with --params n)."""
    two = len(s["parameters"]) == 2
    x = s["parameters"][0]
    ns = sorted({f["n"] for f in s["fitted"] + s["held_out"]}, key=lambda n: n or 0) if two else [None]
    ns = [ns[int(i)] for i in np.unique(np.linspace(0, len(ns) - 1, min(len(ns), len(STYLES))).round())]
    allp = [f[x] for f in s["fitted"] + s["held_out"]]
    grid = np.geomspace(min(allp), max(allp), 200)
    for j, n in enumerate(ns):
        fit = [f for f in s["fitted"] if not two or f["n"] == n]
        held = [h for h in s["held_out"] if not two or h["n"] == n]
        ax.scatter([f[x] for f in fit for _ in f["values"]], [v for f in fit for v in f["values"]], s=9,
                   color=colour, alpha=0.35, linewidths=0)
        ax.plot([f[x] for f in fit], [f["median"] for f in fit], "o", color=colour, ms=5,
                label="%s: measured (median)" % s["variant"] if j == 0 else None)
        if held:
            ax.scatter([h[x] for h in held for _ in h["values"]], [v for h in held for v in h["values"]], s=14,
                       marker="x", color=colour, alpha=0.6)
            ax.plot([h[x] for h in held], [h["measured"] for h in held], "D", mfc="none", mec=colour, ms=9, mew=1.5,
                    label="%s: held out" % s["variant"] if j == 0 else None)
        X = np.vstack([grid] + ([np.full(len(grid), n)] if two else []))
        name = s["model"].text() + ("" if not two else " (%s: n = %s)" % (
            " ".join(STYLES[:len(ns)]), ", ".join("%.10g" % v for v in ns)))
        ax.plot(grid, s["model"].evaluate(X), STYLES[j], color=colour, lw=1.3,
                label="%s: %s" % (s["variant"], name) if j == 0 else None)


def plot_metric(path, metric, mine):
    import io
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, s in enumerate(mine):
        plot_series(ax, s, colours[i % len(colours)])
    values = [v for s in mine for f in s["fitted"] + s["held_out"] for v in f["values"]]
    ax.set_xscale("log", base=2)
    if values and min(values) > 0:
        ax.set_yscale("log")
    ax.set_xlabel("ranks p" if mine[0]["parameters"][0] == "p" else "problem size n")
    ax.set_ylabel(metric + (" (s)" if mine[0]["kind"] == "time" else ""))
    ax.set_title("%s: model (line), fitted medians (o), repeats (dots), held out (diamond, x)" % metric, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    write_file(path, buf.getvalue())


# ---------------------------------------------------------------- main

def parse_args(argv):
    doc = __doc__.split("\n\n")
    ap = argparse.ArgumentParser(prog="./locus model", description=doc[0] + "\n\n" + doc[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(doc[2:]))
    ap.add_argument("study_dir", metavar="STUDY_DIR", help="results directory of ./locus study (results.csv)")
    ap.add_argument("--holdout", type=int, default=1, metavar="K",
                    help="rank counts held out of the fit and predicted: the largest K (default 1; 0: none); "
                         "with --params n, sizes")
    ap.add_argument("--timer-stat", choices=("max", "avg", "min"), default="max",
                    help="which timer column over the ranks (default max: the slowest rank, as the study's plots)")
    ap.add_argument("--size", choices=sorted(SIZE_COLUMNS), default="per-rank",
                    help="the problem parameter n: points per rank (default) or global points")
    ap.add_argument("--params", choices=("auto", "p", "pn", "n"), default="auto",
                    help="auto (default): p, and n too when the size varies at a fixed rank count; p: one model "
                         "per size; pn: two parameters; n: one model per rank count in the size alone (--holdout "
                         "then holds out the largest sizes)")
    ap.add_argument("--terms", type=int, choices=(1, 2), default=1,
                    help="terms beyond the constant: 1 (Extra-P's default) or 2 (needs 5 points)")
    ap.add_argument("--negative", choices=("auto", "on", "off"), default="auto",
                    help="negative exponents p^(-i) too (auto: for a strong scaling study)")
    ap.add_argument("--metrics", metavar="REGEX", help="only the metrics (column names) matching REGEX")
    ap.add_argument("--keep-oversubscribed", action="store_true",
                    help="fit times of over-subscribed runs too (left out by default; counts always kept)")
    ap.add_argument("--max-error", type=float, metavar="PCT",
                    help="exit 1 when a held-out prediction is off by more than PCT %%")
    ap.add_argument("--out", metavar="DIR", help="output directory (default STUDY_DIR/model)")
    ap.add_argument("--no-plots", action="store_true", help="no PNG files")
    ap.add_argument("--extrap", action="store_true",
                    help="also run Extra-P (.venv/bin/extrap, or $LOCUS_EXTRAP) and print its models beside these")
    args = ap.parse_args(argv)
    if args.holdout < 0:
        raise UserError("--holdout: a number of rank counts, 0 or more (got %d)" % args.holdout)
    if args.metrics:
        try:
            re.compile(args.metrics)
        except re.error as e:
            raise UserError("--metrics: not a regular expression: %s (%s)" % (args.metrics, e))
    args.argv = [a for a in argv if a != args.study_dir]
    return args


def write_data(args, out, series, groups, metrics):
    """extrap/*.jsonl, measurements.jsonl and the plots: (extrap files, plots)."""
    os.makedirs(os.path.join(out, "extrap"), exist_ok=True)
    files = extrap_files(series)
    for name, text in files.items():
        write_file(os.path.join(out, "extrap", name), text)
    write_file(os.path.join(out, "measurements.jsonl"), measurements_jsonl(groups, metrics, SIZE_COLUMNS[args.size]))
    plots = 0
    if not args.no_plots:
        for metric in dict.fromkeys(s["metric"] for s in series):
            plot_metric(os.path.join(out, slug(metric) + ".png"), metric, [s for s in series if s["metric"] == metric])
            plots += 1
    return files, plots


def run(argv):
    args = parse_args(argv)
    csv_path, results, study = locate(args.study_dir)
    columns, rows, ntotal = read_rows(csv_path)
    if not rows:
        raise UserError("%s: no finished run in results.csv (%d row%s, none with status ok)"
                        % (results, ntotal, "" if ntotal == 1 else "s"))
    metrics = metric_columns(columns, args.timer_stat, args.metrics)
    if not metrics:
        raise UserError("%s: no column to model (timer_*_%s, count_*, figure_of_merit%s)"
                        % (results, args.timer_stat, " matching " + args.metrics if args.metrics else ""))
    series, notes = fit_study(args, results, study, rows, metrics)
    lines = summary_lines(args, results, study, series, ntotal, len(rows))
    print("\n".join(lines), flush=True)
    for n in notes:
        print("locus model: note: not fitted: %s" % n, file=sys.stderr)
    out = os.path.abspath(args.out or os.path.join(results, "model"))
    groups = make_groups(rows, study, set(rows[0]), SIZE_COLUMNS[args.size], args.params)
    files, plots = write_data(args, out, series, groups, metrics)
    extrap = ([], None)
    if args.extrap:
        import extrap_check
        extrap = extrap_check.compare(series, out, args.negative == "on" or (
            args.negative == "auto" and study.get("scaling") == "strong"))
        print("\n".join([""] + extrap[0]), flush=True)
    write_file(os.path.join(out, "models.json"), models_json(args, results, study, series, notes, extrap[1]))
    write_file(os.path.join(out, "models.md"), models_md(args, results, study, series, notes, lines, extrap[0]))
    print("wrote %s/: models.md, models.json, measurements.jsonl, extrap/ (%d file%s)%s" % (
        out, len(files), "" if len(files) == 1 else "s", ", %d plot%s" % (plots, "" if plots == 1 else "s")
        if plots else ""))
    w = worst_of(series)
    if args.max_error is not None and w and abs(w[1]["relative_error"]) * 100 > args.max_error:
        print("locus model: worst held-out error %.1f %% > --max-error %g %%"
              % (100 * abs(w[1]["relative_error"]), args.max_error), file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except UserError as e:
        print("locus model: error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
