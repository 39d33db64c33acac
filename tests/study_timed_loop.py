"""The study's default time is the figure of merit's time, for every app.

A tiny strong-scaling study of each app (1 and 2 ranks, one repeat): in
results.csv every run's `time_seconds` (the study's time, what its time,
speedup, efficiency and ratio plots and the report's table use) is its
`figure_of_merit_seconds` exactly, which is the slowest rank of the timer
the figure of merit names (`timer_<timer>_max`, printed to 6 digits), and
not `total`, which holds set-up and output too. The report says what the
time is and rates every point's validity; the breakdown is drawn. With
`metric: total` the study's time is total's slowest rank instead."""
import csv
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import check, scratch  # noqa: E402

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "study.py")

APPS = {
    "heat3d": {"heat3d.grid.nx": 12, "heat3d.grid.ny": 12, "heat3d.grid.nz": 12, "heat3d.time.max_steps": 10,
               "heat3d.time.tolerance": 0, "heat3d.validation.mode": "none"},
    "poisson5pt": {"poisson5pt.grid.n": 31},
    "spmv": {"spmv.matrix.nx": 8, "spmv.matrix.ny": 8, "spmv.matrix.nz": 8, "spmv.repetitions": 5},
    "tensor_contract": {"tensor_contract.extent": 8, "tensor_contract.tile": 4},
}
TIMER = {"heat3d": "solve", "poisson5pt": "solve", "spmv": "products", "tensor_contract": "contract"}


def study(out, app, sets, metric=None):
    path = os.path.join(out, "%s%s.yaml" % (app, "_" + metric if metric else ""))
    with open(path, "w") as f:
        f.write("app: %s\ndeck: inputs/%s/default.yaml\nscaling: strong\nranks: [1, 2]\nrepeats: 1\n" % (app, app))
        if metric:
            f.write("metric: %s\n" % metric)
        f.write("set:\n" + "".join("  %s: %s\n" % kv for kv in sets.items()) + "  output.write_field: false\n")
    p = subprocess.run([sys.executable, TOOL, path], capture_output=True, text=True, timeout=600, cwd=out)
    check(p.returncode == 0, "%s study: exit %d\n%s\n%s" % (app, p.returncode, p.stdout, p.stderr))
    res = os.path.join(out, "results", os.path.splitext(os.path.basename(path))[0])
    with open(os.path.join(res, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == 2 and all(r["status"] == "ok" for r in rows), "%s: %s" % (app, rows))
    return res, rows


def main():
    out = scratch("study_timed_loop")
    for app, sets in APPS.items():
        res, rows = study(out, app, sets)
        timer = TIMER[app]
        for r in rows:
            check(r["time_seconds"] == r["figure_of_merit_seconds"] and float(r["time_seconds"]) > 0,
                  "%s, %s ranks: the study's time %s, the figure of merit's %s" % (
                      app, r["ranks"], r["time_seconds"], r["figure_of_merit_seconds"]))
            check(r["figure_of_merit_timer"] == timer, "%s: timer %s" % (app, r["figure_of_merit_timer"]))
            check(float("%.6g" % float(r["time_seconds"])) == float(r["timer_%s_max" % timer]),
                  "%s: %s s against timer %s's max %s" % (app, r["time_seconds"], timer, r["timer_%s_max" % timer]))
            check(float(r["time_seconds"]) < float(r["timer_total_max"]),
                  "%s: the loop %s s is not below total %s s" % (app, r["time_seconds"], r["timer_total_max"]))
            check(r["validity"] in ("VALID", "INVALID") and r["validity_reason"], "%s: validity %s" % (app, r))
        report = open(os.path.join(res, "report.md")).read()
        check("time: the slowest rank's timed loop (%s), the one the figure of merit divides by" % timer in report,
              "%s: the report does not say what its time is:\n%s" % (app, report[:800]))
        check("| validity |" in report and "too short (" in report, "%s: no validity column:\n%s" % (app, report))
        for name in ("time", "speedup", "breakdown", "figure_of_merit"):
            check(os.path.getsize(os.path.join(res, name + ".png")) > 1000, "%s: %s.png" % (app, name))
        print("%s: the study's time is the %s loop's (= figure_of_merit.seconds) at 1 and 2 ranks" % (app, timer))
    res, rows = study(out, "spmv", APPS["spmv"], metric="total")
    check(all(r["time_seconds"] == r["timer_total_max"] for r in rows), "metric total: %s" % rows)
    check("time: the slowest rank's timer `total`" in open(os.path.join(res, "report.md")).read(), "metric total: report")
    print("metric: total times the whole run")


main()
