#!/usr/bin/python3
"""./locus compare-studies on two made-up studies of different apps (a weak
heat3d and a strong poisson5pt): refused without --allow-differences,
compared with it (variants matched in order, a figure-of-merit table,
"1 rank" not "1 ranks", no "older study" for a strong study's missing
weak_size, the over-subscribed points shaded in both plots)."""
import csv
import json
import os
import subprocess
import sys
import tempfile

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
COLUMNS = ["run_id", "ranks", "global_size", "oversubscribed", "repeat", "variant", "status", "figure_of_merit",
           "figure_of_merit_unit", "timer_total_min", "timer_total_avg", "timer_total_max"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def study(root, name, meta, rows):
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, "study.json"), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(d, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow(dict(zip(COLUMNS, r)))
    return d


def main():
    with tempfile.TemporaryDirectory() as root:
        rows_a, rows_b = [], []
        for ranks, over in ((1, 0), (2, 0), (4, 1)):
            for rep in range(2):
                t = 1.0 + 0.01 * rep
                rows_a.append(["a%d%d" % (ranks, rep), ranks, "%dx32x32" % (32 * ranks), over, rep, "locus", "ok",
                               100.0 * ranks, "Mcell_updates/s", t, t, t])
                rows_b.append(["b%d%d" % (ranks, rep), ranks, "511x511", over, rep, "run", "ok", 50.0 * ranks,
                               "Mpoint_updates/s", 2 * t / ranks, 2 * t / ranks, 2 * t / ranks])
        a = study(root, "heat3d-weak", {"app": "heat3d", "scaling": "weak", "metric": "total",
                                        "weak_size": [32], "variants": ["locus"]}, rows_a)
        b = study(root, "poisson-strong", {"app": "poisson5pt", "scaling": "strong", "metric": "total",
                                           "variants": ["run"]}, rows_b)
        out = os.path.join(root, "cmp")
        run = [sys.executable, os.path.join(TOOLS, "compare_studies.py"), a, b, "--out", out]
        p = subprocess.run(run, capture_output=True, text=True, timeout=120)
        if p.returncode != 2 or "app: heat3d-weak \"heat3d\", poisson-strong \"poisson5pt\"" not in p.stderr:
            fail("different apps without --allow-differences: %d %s" % (p.returncode, p.stderr))
        if "1 ranks" in p.stderr or "global size at 1 rank:" not in p.stderr:
            fail("'1 rank': %s" % p.stderr)
        p = subprocess.run(run + ["--allow-differences"], capture_output=True, text=True, timeout=120)
        if p.returncode != 0 or "3 points compared" not in p.stdout:
            fail("--allow-differences: %d %s %s" % (p.returncode, p.stdout, p.stderr))
        report = open(os.path.join(out, "report.md")).read()
        for want in ("variants matched in order (no name in common): heat3d-weak locus = poisson-strong run",
                     "## Figure of merit (Mcell_updates/s / Mpoint_updates/s", "| locus | 4 | 400 | 200 | 2.00 |"):
            if want not in report:
                fail("report lacks %r:\n%s" % (want, report))
        if "older" in report or "1 ranks" in report:
            fail("report says 'older' or '1 ranks':\n%s" % report)
        for name in ("time.svg", "ratio.svg"):
            if "over-subscribed (heat3d-weak and poisson-strong)" not in open(os.path.join(out, name)).read():
                fail("%s does not shade the over-subscribed points" % name)
    print("PASS")


main()
