#!/usr/bin/python3
"""locus validate: run validation cases and compare their figures with
references.

    ./locus validate [CASE...]        (default: every validation/cases/*.yaml)

A case names a deck (plus overrides and a rank count), the figures to
check — from the run's YAML summary or its HDF5 output — their reference
values and tolerances, and where each reference comes from (an analytic
formula, a published table, or a reference file under validation/reference/).
Prints one table row per figure and exits 1 when any check fails, 2 on a
broken case file.
"""
import argparse
import glob
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locuslib import (ROOT, Located, UserError, app_error, closest, dig, find_file, parse_summary, run_app,  # noqa: E402
                      yaml_value)

CASE_KEYS = {"name", "app", "deck", "ranks", "set", "source", "checks", "timeout"}
CHECK_KEYS = {"figure", "h5", "statistic", "reference", "reference_file", "tolerance", "rel_tolerance", "source"}
STATISTICS = ("max_abs_diff", "max", "min", "mean", "max_abs")


class Case:
    def __init__(self, path):
        doc = Located(path)
        d = doc.data
        self.path = path
        if not isinstance(d, dict):
            raise UserError("%s: a case file is a mapping of: %s" % (path, ", ".join(sorted(CASE_KEYS))))
        for k in d:
            if k not in CASE_KEYS:
                hint = closest(str(k), sorted(CASE_KEYS))
                raise UserError("%s: %s: unknown case key%s" % (doc.where(k), k, " (did you mean '%s'?)" % hint
                                                                 if hint else ""))
        for k in ("app", "deck", "checks", "source"):
            if k not in d:
                raise UserError("%s: missing case key '%s'" % (path, k))
        base = os.path.dirname(os.path.abspath(path))
        self.name = str(d.get("name") or os.path.splitext(os.path.basename(path))[0])
        self.app = str(d["app"])
        self.deck = find_file(str(d["deck"]), base)
        if not self.deck:
            raise UserError("%s: deck: %s not found" % (doc.where("deck"), d["deck"]))
        self.ranks = d.get("ranks", 2)
        self.sets = [(k, yaml_value(v)) for k, v in (d.get("set") or {}).items()]
        self.source = str(d["source"])
        self.timeout = d.get("timeout", 600)
        if not isinstance(d["checks"], list) or not d["checks"]:
            raise UserError("%s: checks: must be a non-empty list" % doc.where("checks"))
        self.checks = []
        for i, c in enumerate(d["checks"]):
            where = doc.where("checks")
            if not isinstance(c, dict):
                raise UserError("%s: checks[%d]: must be a mapping" % (where, i))
            for k in c:
                if k not in CHECK_KEYS:
                    hint = closest(str(k), sorted(CHECK_KEYS))
                    raise UserError("%s: checks[%d]: %s: unknown key%s" % (
                        where, i, k, " (did you mean '%s'?)" % hint if hint else ""))
            if ("figure" in c) == ("h5" in c):
                raise UserError("%s: checks[%d]: give either figure (a summary path) or h5 (a dataset)" % (where, i))
            if "tolerance" not in c and "rel_tolerance" not in c:
                raise UserError("%s: checks[%d]: needs tolerance (absolute) or rel_tolerance" % (where, i))
            stat = c.get("statistic", "max_abs_diff" if "reference_file" in c else "max")
            if "h5" in c and stat not in STATISTICS:
                raise UserError("%s: checks[%d]: statistic must be one of %s" % (where, i, ", ".join(STATISTICS)))
            if "h5" in c and stat == "max_abs_diff":
                ref = find_file(str(c.get("reference_file", "")), base) if c.get("reference_file") else None
                if not ref:
                    raise UserError("%s: checks[%d]: max_abs_diff needs an existing reference_file" % (where, i))
                c = dict(c, reference_file=ref, reference=0.0)
            elif "reference" not in c:
                raise UserError("%s: checks[%d]: needs a reference value" % (where, i))
            self.checks.append(dict(c, statistic=stat))


def measure(check, summary, h5_path):
    """The measured figure of one check, or raises UserError."""
    if "figure" in check:
        v = dig(summary, check["figure"])
        if v is None:
            raise UserError("the summary has no %s" % check["figure"])
        return float(v)
    import h5py
    import numpy as np
    with h5py.File(h5_path, "r") as f:
        name = check["h5"]
        if name not in f:
            raise UserError("%s has no dataset %s" % (h5_path, name))
        x = f[name][...].astype(np.float64)
    stat = check["statistic"]
    if stat == "max_abs_diff":
        with h5py.File(check["reference_file"], "r") as f:
            y = f[check["h5"]][...].astype(np.float64)
        if x.shape != y.shape:
            raise UserError("%s: shape %s, reference %s" % (check["h5"], x.shape, y.shape))
        return float(np.max(np.abs(x - y))) if x.size else 0.0
    return float({"max": np.max, "min": np.min, "mean": np.mean, "max_abs": lambda a: np.max(np.abs(a))}[stat](x))


def run_case(case, rows, ranks, failed_dir):
    """Runs one case in a scratch directory; a failed case's output, deck
    overrides and logs are kept under failed_dir/<case>/."""
    tmp = tempfile.mkdtemp(prefix="locus-validate-")
    ok = False
    try:
        ok = _run_case(case, rows, ranks, tmp)
    finally:
        if ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            keep = os.path.join(failed_dir, case.name)
            shutil.rmtree(keep, ignore_errors=True)
            os.makedirs(failed_dir, exist_ok=True)
            shutil.move(tmp, keep)
            print("%s: failed; its output and logs are kept in %s" % (case.name, keep), file=sys.stderr)
    return ok


def _run_case(case, rows, ranks, tmp):
    sets = case.sets + [("output.dir", tmp), ("output.name", "case"), ("output.overwrite", "true")]
    rc, out, err, secs = run_app(case.app, case.deck, ranks or case.ranks, sets, case.timeout,
                                 log_prefix=os.path.join(tmp, "run"))
    summary = parse_summary(out)
    ok = True
    if summary is None:
        rows.append((case.name, "(run)", "exit %d" % rc, "-", "-", "FAIL"))
        print("%s: the run failed: %s" % (case.name, app_error(err, rc)), file=sys.stderr)
        return False
    for c in case.checks:
        label = c.get("figure") or "%s:%s" % (c["h5"], c["statistic"])
        ref = float(c["reference"])
        tol = float(c["tolerance"]) if "tolerance" in c else abs(ref) * float(c["rel_tolerance"])
        tol_text = ("%.3g" % tol) if "tolerance" in c else "%.3g (rel %.3g)" % (tol, float(c["rel_tolerance"]))
        try:
            m = measure(c, summary, os.path.join(tmp, "case.h5"))
            passed = abs(m - ref) <= tol
            rows.append((case.name, label, "%.10g" % m, "%.10g" % ref, tol_text, "PASS" if passed else "FAIL"))
        except UserError as e:
            passed = False
            rows.append((case.name, label, "(%s)" % e, "%.10g" % ref, tol_text, "FAIL"))
        ok = ok and passed
    return ok


def find_cases(names):
    cases_dir = os.path.join(ROOT, "validation", "cases")
    if not names:
        paths = sorted(glob.glob(os.path.join(cases_dir, "*.yaml")))
        if not paths:
            raise UserError("no cases in %s" % cases_dir)
        return paths
    out = []
    known = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(cases_dir, "*.yaml")))
    for n in names:
        if os.path.exists(n):
            out.append(n)
        elif os.path.exists(os.path.join(cases_dir, n + ".yaml")):
            out.append(os.path.join(cases_dir, n + ".yaml"))
        else:
            hint = closest(n, known)
            raise UserError("no case '%s'%s (cases: %s)" % (n, " (did you mean '%s'?)" % hint if hint else "",
                                                          ", ".join(known)))
    return out


def main():
    ap = argparse.ArgumentParser(prog="./locus validate", description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="case names (validation/cases/NAME.yaml) or case files")
    ap.add_argument("--list", action="store_true", help="list the cases with their reference sources")
    ap.add_argument("-n", "--ranks", type=int, metavar="RANKS",
                    help="run every case on RANKS ranks instead of its own count (the references are "
                         "rank-count invariant)")
    ap.add_argument("--failed-dir", default=os.path.join(ROOT, "output", "validate"),
                    help="where a failed case's output and logs are kept (default: output/validate/)")
    args = ap.parse_args()
    if args.ranks is not None and args.ranks < 1:
        ap.error("-n: must be a positive number of ranks")
    try:
        cases = [Case(p) for p in find_cases(args.cases)]
    except UserError as e:
        print("locus validate: error: %s" % e, file=sys.stderr)
        return 2
    if args.list:
        for c in cases:
            print("%-28s %s (%d ranks): %s" % (c.name, os.path.relpath(c.deck, ROOT), c.ranks, c.source))
        return 0
    rows, failed = [], []
    for c in cases:
        n = args.ranks or c.ranks
        print("running %s (%s, %d rank%s) ..." % (c.name, c.app, n, "" if n == 1 else "s"),
              file=sys.stderr, flush=True)
        if not run_case(c, rows, args.ranks, os.path.abspath(args.failed_dir)):
            failed.append(c.name)
    head = ("case", "figure", "measured", "reference", "tolerance", "result")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())
    print("\n%d case%s, %d failed%s" % (len(cases), "" if len(cases) == 1 else "s", len(failed),
                                        (": " + ", ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
