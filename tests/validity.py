"""Every app's timed loop, its timers and its validity rating (tiny runs):

* results.figure_of_merit names its timer, and its seconds are that
  timer's slowest rank (timers_seconds.TIMER.max, printed to 6 digits);
  the loop's repeats (steps, iterations, products, phases) are counted;
* every timer but total says which it runs within; the loop's timer and
  the other phases of the run (setup, check, io, ...) run within total;
* validity: a loop shorter than validity.min_timed_seconds (default 1 s)
  is INVALID and says so; with the minimum lowered to 0 the same run is
  VALID; a run whose result is not checked is INVALID whatever its
  length, and so is a refinement study (no timed loop); the rating is in
  the HDF5 root attributes too;
* bad values of validity.min_timed_seconds are refused naming the deck
  file, line and key (or the --set)."""
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1]) if len(sys.argv) > 1 else 2
OUT = scratch("validity_np%d" % NP)

# (app, tiny settings whose verdict is pass, the loop's timer, its repeats in
# the summary, what one repeat is)
APPS = [
    ("heat3d", ["heat3d.grid.nx=12", "heat3d.grid.ny=12", "heat3d.grid.nz=12", "heat3d.time.max_steps=20",
                "heat3d.time.tolerance=0", "heat3d.validation.mode=sine"],
     "solve", lambda s: s["results"]["steps"], "step"),
    ("poisson5pt", ["poisson5pt.grid.n=31"], "solve", lambda s: s["results"]["iterations"], "iteration"),
    ("spmv", ["spmv.matrix.nx=8", "spmv.matrix.ny=8", "spmv.matrix.nz=8", "spmv.repetitions=7",
              "spmv.validation.symmetry=on"], "products", lambda s: 7, "product"),
    ("tensor_contract", ["tensor_contract.extent=8", "tensor_contract.tile=4"], "contract",
     lambda s: s["results"]["phases"], "phase"),
]


def deck(app):
    return os.path.join(SOURCE, "inputs", app, "default.yaml")


def run(app, name, sets, expect_ok=True):
    p, _ = run_app(app, deck(app), NP, ["output.dir=" + OUT, "output.name=" + name, "output.xdmf=false"] + sets,
                   expect_ok=expect_ok)
    return summary(p.stdout)


def six(x):
    return float("%.6g" % float(x))


def h5_validity(name):
    with h5py.File(os.path.join(OUT, name + ".h5"), "r") as h:
        a = h.attrs
        got = [a["validity"], a["validity_reason"]]
        least = float(a["validity_min_timed_seconds"])
    return [v.decode() if isinstance(v, bytes) else v for v in got] + [least]


def timers(app, s, timer, repeats, each):
    t = s["timers_seconds"]
    f = s["results"]["figure_of_merit"]
    check(f["timer"] == timer, "%s: figure of merit's timer %s, expected %s" % (app, f.get("timer"), timer))
    check(six(f["seconds"]) == float(t[timer]["max"]),
          "%s: figure of merit %s s, timer %s max %s" % (app, f["seconds"], timer, t[timer]["max"]))
    check("within" not in t["total"], "%s: total runs within nothing: %s" % (app, t["total"]))
    for name, v in t.items():
        # (a timer that never ran, such as heat3d's checkpoint here, has no time and no within)
        check(name == "total" or "within" in v or float(v["max"]) == 0,
              "%s: timer %s says nothing of where it ran: %s" % (app, name, v))
    check(t[timer]["within"] == "total", "%s: the loop's timer runs within %s" % (app, t[timer]["within"]))
    for phase in ("setup", "check", "io"):
        check(t[phase]["within"] == "total", "%s: %s runs within %s" % (app, phase, t[phase]["within"]))
    r = f["repeats"]
    check(r["count"] == repeats and r["each"] == each, "%s: repeats %s, expected %d %s" % (app, r, repeats, each))
    check(0 < r["seconds_min"] <= r["seconds_mean"] * (1 + 1e-9) and r["seconds_mean"] <= r["seconds_max"] * (1 + 1e-9),
          "%s: repeat times %s" % (app, r))


for app, sets, timer, repeats, each in APPS:
    # a tiny loop under the default minimum: INVALID, too short
    s = run(app, app + "_short", sets)
    check(s["validation"]["verdict"] == "pass", "%s: tiny run's verdict %s" % (app, s["validation"]))
    timers(app, s, timer, repeats(s), each)
    v = s["validity"]
    check(v["rating"] == "INVALID" and v["min_timed_seconds"] == 1 and
          ("the timed loop (%s) ran" % timer) in v["reason"] and
          "under the 1 s minimum (validity.min_timed_seconds)" in v["reason"], "%s: %s" % (app, v))
    check(v["timed_seconds"] == s["results"]["figure_of_merit"]["seconds"] and v["repeats"] == repeats(s) and
          v["each"] == each and v["spread"] >= 0, "%s: validity %s" % (app, v))
    check(h5_validity(app + "_short") == ["INVALID", v["reason"], 1.0], "%s: HDF5 %s" % (app, h5_validity(app + "_short")))
    # the minimum lowered: the same run is VALID
    s = run(app, app + "_valid", sets + ["validity.min_timed_seconds=0"])
    v = s["validity"]
    check(v["rating"] == "VALID" and "at least the 0 s minimum" in v["reason"] and "verdict is pass" in v["reason"],
          "%s: %s" % (app, v))
    check(h5_validity(app + "_valid")[0] == "VALID", "%s: HDF5 %s" % (app, h5_validity(app + "_valid")))
    print("%s: %s loop of %d %ss, INVALID under 1 s, VALID with the minimum 0" % (app, timer, repeats(s), each))

# nothing checked: INVALID whatever the loop's length
s = run("heat3d", "h_none", ["heat3d.grid.nx=8", "heat3d.grid.ny=8", "heat3d.grid.nz=8", "heat3d.time.max_steps=3",
                             "heat3d.time.tolerance=0", "heat3d.validation.mode=none",
                             "validity.min_timed_seconds=0"])
check(s["validity"]["rating"] == "INVALID" and
      s["validity"]["reason"] == "the result was not checked (verdict: not checked)", "heat3d none: %s" % s["validity"])
# a refinement study times no loop
s = run("poisson5pt", "p_order", ["poisson5pt.grid.n=7", "poisson5pt.validation.mode=order",
                                  "validity.min_timed_seconds=0"])
check("figure_of_merit" not in s["results"] and s["validity"]["rating"] == "INVALID" and
      s["validity"]["reason"].startswith("no timed loop"), "poisson5pt order: %s" % s["validity"])
check(s["timers_seconds"]["compute"]["within"] == "check", "order study's sweeps: %s" % s["timers_seconds"])
# checkpoint writes pause the loop's timer: they are not part of it
s = run("heat3d", "h_ck", ["heat3d.grid.nx=8", "heat3d.grid.ny=8", "heat3d.grid.nz=8", "heat3d.time.max_steps=6",
                           "heat3d.time.tolerance=0", "heat3d.validation.mode=sine", "checkpoint.every=2"])
t = s["timers_seconds"]
check(t["checkpoint"]["within"] == "total" and float(t["checkpoint"]["max"]) > 0 and
      s["validity"]["repeats"] == 6, "heat3d checkpoints: %s %s" % (t["checkpoint"], s["validity"]))

# bad values: refused naming the file, line and key
bad = os.path.join(OUT, "bad.yaml")
for value, why in (("-1", "validity.min_timed_seconds: must be"), ("soon", "validity.min_timed_seconds: must be"),
                   ("2.0e6", "validity.min_timed_seconds: must be")):
    with open(deck("poisson5pt")) as f:
        text = f.read()
    with open(bad, "w") as f:
        f.write("validity:\n  min_timed_seconds: %s\n" % value + text)
    p, _ = run_app("poisson5pt", bad, NP, ["output.dir=" + OUT], expect_ok=False)
    check(p.returncode != 0 and ("bad.yaml:2:22: " + why) in p.stderr and "Traceback" not in p.stderr,
          "min_timed_seconds %s: %d\n%s" % (value, p.returncode, p.stderr))
    print("refused: min_timed_seconds: %s (%s)" % (value, p.stderr.strip().splitlines()[0][:120]))
p, _ = run_app("poisson5pt", deck("poisson5pt"), NP, ["output.dir=" + OUT, "validity.min_timed_seconds=-0.5"],
               expect_ok=False)
check(p.returncode != 0 and "--set validity.min_timed_seconds=-0.5: validity.min_timed_seconds" in p.stderr,
      "--set -0.5: %s" % p.stderr)
print("validity: every app's timed loop rated (INVALID too short / not checked / no loop, VALID); bad minimums refused")
