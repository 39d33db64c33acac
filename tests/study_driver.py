"""./locus study on a tiny study: runs, CSV/HDF5 rows, plots, report, resume
without re-running, a failing run recorded as failed, clear study-file errors."""
import csv
import glob
import json
import os
import signal
import subprocess
import sys
import time

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, scratch  # noqa: E402

TOOL = os.path.join(SOURCE, "tools", "study.py")
STUDY = """app: heat3d
deck: inputs/heat3d/default.yaml
scaling: strong
ranks: [1, 2]
repeats: 1
set:
  heat3d.grid.nx: 12
  heat3d.grid.ny: 10
  heat3d.grid.nz: 8
  heat3d.time.max_steps: 5
  heat3d.time.tolerance: 0
  heat3d.validation.mode: none
  output.write_field: false
sweep:
  comm.halo: [p2p, locus]
  heat3d.procs: [auto, [2, 1, 1]]   # [2, 1, 1] cannot run on 1 rank: recorded as failed
baseline: {comm.halo: p2p}
"""


def study(path, *extra):
    return subprocess.run([sys.executable, TOOL, path] + list(extra), capture_output=True, text=True,
                          timeout=600, cwd=os.path.dirname(path))


def main():
    out = scratch("study_driver")
    path = os.path.join(out, "tiny.yaml")
    with open(path, "w") as f:
        f.write(STUDY)
    p = study(path)
    check(p.returncode == 1, "a study with a failed run exits 1: %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    res = os.path.join(out, "results", "tiny")
    with open(os.path.join(res, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == 8, "8 runs (2 halos x 2 grids x 2 rank counts): %d" % len(rows))
    failed = [r for r in rows if r["status"] == "failed"]
    check(len(failed) == 2 and all(r["ranks"] == "1" and r["heat3d.procs"] == "[2, 1, 1]" for r in failed),
          "the two 1-rank [2, 1, 1] runs failed: %s" % [(r["ranks"], r["heat3d.procs"]) for r in failed])
    check(all("needs 2 ranks, but the run has 1" in r["error"] for r in failed), "error recorded: %s" % failed[0])
    ok = [r for r in rows if r["status"] == "ok"]
    check(all(float(r["timer_total_max"]) > 0 and float(r["timer_halo_avg"]) >= 0 and r["results_steps"] == "5"
              for r in ok), "timers and results in every ok row")
    check({r["oversubscribed"] for r in ok} == {"0"}, "1 and 2 ranks are not over-subscribed")
    # the counted requirements (sums over the ranks): 11 flops per cell and step
    check(all(r["count_compute_flops"] == str(11 * 12 * 10 * 8 * 5) and int(r["count_footprint_bytes_max"]) > 0
              and r["count_halo_bytes_off_node"] == "0" for r in ok), "count_ columns in every ok row")
    check(all(int(r["count_halo_bytes_on_node"]) > 0 for r in ok if r["ranks"] == "2"), "2 ranks move faces")
    with h5py.File(os.path.join(res, "results.h5"), "r") as h:
        check(len(h["run_id"]) == 8 and h["timer_total_max"].shape == (8,), "results.h5 has one row per run")
    for name in ("time", "speedup", "breakdown", "ratio"):
        for ext in ("png", "svg"):
            f = os.path.join(res, "%s.%s" % (name, ext))
            check(os.path.exists(f) and os.path.getsize(f) > 1000, "plot %s written" % f)
    report = open(os.path.join(res, "report.md")).read()
    check("## Failed runs" in report and "needs 2 ranks" in report and "![time](time.png)" in report, report)
    # every ok run's HDF5 output verified against its checksums
    check("Outputs: 6 HDF5 files of 6 successful runs verified" in report, "outputs verified line:\n" + report)
    check(all(r.get("outputs_verified") == "1" for r in ok), "outputs_verified per ok row: %s"
          % [r.get("outputs_verified") for r in ok])
    run_dirs = [d for d in os.listdir(os.path.join(res, "runs"))]
    check(len(run_dirs) == 8, "a directory per run")
    one = os.path.join(res, "runs", sorted(run_dirs)[0])
    check(os.path.exists(os.path.join(one, "deck.yaml")) and os.path.exists(os.path.join(one, "run.json")),
          "each run keeps its effective deck")
    stamps = {d: os.path.getmtime(os.path.join(res, "runs", d, "run.json")) for d in run_dirs}

    # Resume: nothing runs again.
    p = study(path)
    check(p.stdout.count("done before") == 8 and " in " not in p.stdout.replace("done before", ""),
          "resume skips finished runs:\n" + p.stdout)
    check(all(os.path.getmtime(os.path.join(res, "runs", d, "run.json")) == t for d, t in stamps.items()),
          "no run rewritten")
    with open(os.path.join(res, "runs", sorted(run_dirs)[0], "run.json")) as f:
        check(json.load(f)["id"] == sorted(run_dirs)[0], "run ids are the directory names")

    # Study-file errors: one clear line naming the file and line, exit 2.
    for text, expect in (
            (STUDY.replace("repeats: 1", "repeat: 1"), "tiny_bad.yaml:5: repeat: unknown study key (did you mean 'repeats'?)"),
            (STUDY.replace("comm.halo: [p2p, locus]", "comm.halo: []"), "tiny_bad.yaml:15: sweep: comm.halo: must be a non-empty list"),
            (STUDY.replace("comm.halo: [p2p, locus]", "comm.hallo: [p2p]"), "tiny_bad.yaml:15: sweep: comm.hallo is not a heat3d deck key (did you mean 'comm.halo'?)"),
            (STUDY.replace("ranks: [1, 2]", "ranks: []"), "tiny_bad.yaml:4: ranks: must be a non-empty list"),
            (STUDY.replace("baseline: {comm.halo: p2p}", "baseline: {comm.halo: rma}"), "tiny_bad.yaml:17: baseline: comm.halo=rma is not one of the swept values"),
            (STUDY.replace("scaling: strong", "scaling: weak"), "weak scaling needs weak_size"),
            (STUDY + "timeout: -3\n", "tiny_bad.yaml:18: timeout: must be a positive number of seconds (got -3)"),
            (STUDY.replace("repeats: 1", "repeats: 1\nrepeats: 2"), "tiny_bad.yaml:6: repeats: given twice (first on line 5)"),
            # a timer the app does not have: found by the first run, before any record
            (STUDY + "metric: bogus\n", "tiny_bad.yaml:18: metric: no timer 'bogus' in the summary; the timers of heat3d: total,"),
            # several problems: all of them at once, each with its line
            (STUDY.replace("repeats: 1", "repeats: 0").replace("comm.halo: [p2p, locus]", "comm.hallo: [p2p]")
             .replace("scaling: strong", "scaling: sideways"),
             "3 problems in the study file:\n  %s:3: scaling: must be strong or weak (got sideways)\n"
             "  %s:5: repeats: must be a positive integer (got 0)\n  %s:15: sweep: comm.hallo is not a heat3d "
             "deck key" % ((os.path.join(out, "tiny_bad.yaml"),) * 3))):
        bad = os.path.join(out, "tiny_bad.yaml")
        with open(bad, "w") as f:
            f.write(text)
        p = study(bad)
        check(p.returncode == 2 and expect in p.stderr and "Traceback" not in p.stderr,
              "expected '%s' (exit 2), got %d:\n%s" % (expect, p.returncode, p.stderr))
    # MPI libraries and nodes as axes: the build's own library (the other
    # one only when it is built), nodes x ranks per node emulated here
    lib = "openmpi" if "openmpi" in os.environ.get("LOCUS_MPIEXEC", "") else "mpich"
    axes = os.path.join(out, "axes.yaml")
    with open(axes, "w") as f:
        f.write("""app: heat3d
deck: inputs/heat3d/default.yaml
nodes: [1, 2]
ranks_per_node: 1
repeats: 1
mpi: [%s]
set:
  heat3d.grid.nx: 12
  heat3d.grid.ny: 10
  heat3d.grid.nz: 8
  heat3d.time.max_steps: 5
  heat3d.time.tolerance: 0
  heat3d.validation.mode: none
  output.write_field: false
sweep:
  comm.halo: [locus]
""" % lib)
    p = study(axes, "--results", os.path.join(out, "axes"))
    check(p.returncode == 0, "nodes/mpi axes study: %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    with open(os.path.join(out, "axes", "results.csv")) as f:
        rows = list(csv.DictReader(f))
    check(sorted((r["nodes"], r["ranks_per_node"], r["ranks"], r["variant"]) for r in rows) ==
          [("1", "1", "1", "mpi=%s, halo=locus" % lib), ("2", "1", "2", "mpi=%s, halo=locus" % lib)],
          "axes rows: %s" % [(r["nodes"], r["ranks_per_node"], r["ranks"], r["variant"]) for r in rows])
    two = [r for r in rows if r["nodes"] == "2"][0]
    check(two["run_id"].endswith("-np2-N2-r0"), "run id of 2 nodes: %s" % two["run_id"])
    with open(os.path.join(out, "axes", "runs", two["run_id"], "deck.yaml")) as f:
        check("node_size: 1" in f.read(), "2 nodes of 1 rank run on emulated nodes here")
    rep = open(os.path.join(out, "axes", "report.md")).read()
    check("## Machine" in rep and "`mpi=%s`" % lib in rep and "STREAM triad" in rep, "axes report:\n" + rep)
    check("| launch_line | " in rep and "not started by ./locus" not in rep and "--machine" in rep,
          "the study started the machine measurement (launch_line):\n" + rep)
    for old_, new_, expect in (
            ("mpi: [%s]" % lib, "mpi: [mpich, lam]", "mpi: a list of MPI libraries out of mpich, openmpi"),
            ("ranks_per_node: 1\n", "", "nodes needs ranks_per_node")):
        bad = os.path.join(out, "axes_bad.yaml")
        with open(bad, "w") as f:
            f.write(open(axes).read().replace(old_, new_))
        p = study(bad)
        check(p.returncode == 2 and expect in p.stderr and "Traceback" not in p.stderr,
              "expected '%s' (exit 2), got %d:\n%s" % (expect, p.returncode, p.stderr))
    # Ctrl-C (SIGINT to the whole process group, as a terminal sends it):
    # one line, exit 130, the interrupted run not recorded; resuming runs it
    longer = os.path.join(out, "longer.yaml")
    with open(longer, "w") as f:
        # runs of hours (32^3, 10^8 steps): the first is surely the one interrupted
        f.write(STUDY.replace("heat3d.time.max_steps: 5", "heat3d.time.max_steps: 100000000")
                .replace("heat3d.grid.nx: 12", "heat3d.grid.nx: 32").replace("heat3d.grid.ny: 10", "heat3d.grid.ny: 32")
                .replace("heat3d.grid.nz: 8", "heat3d.grid.nz: 32")
                .replace("heat3d.procs: [auto, [2, 1, 1]]", "heat3d.procs: [auto]")
                .replace("ranks: [1, 2]", "ranks: [1]"))
    res_int = os.path.join(out, "interrupted")
    a = subprocess.Popen([sys.executable, TOOL, longer, "--results", res_int], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=out)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60 and not glob.glob(os.path.join(res_int, "runs", "*", "run.cmd")):
        time.sleep(0.1)
    time.sleep(0.5)
    os.killpg(a.pid, signal.SIGINT)
    so, se = a.communicate(timeout=60)
    check(a.returncode == 130 and "interrupted" in se and "Traceback" not in se,
          "Ctrl-C: exit %d\n%s\n%s" % (a.returncode, so, se))
    check(not glob.glob(os.path.join(res_int, "runs", "*", "run.json")), "the interrupted run was recorded")
    print("study driver: 8 runs, 2 failed and recorded, plots and report written, resume skipped all; "
          "nodes and MPI library axes; Ctrl-C ends cleanly without recording the interrupted run")


main()
