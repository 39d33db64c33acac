"""Every app's figure of merit and verdict (tiny runs):

* results.figure_of_merit has name, value, unit, seconds and divides_by;
  value is the app's work over `seconds`, the whole timed solve of the
  slowest rank (so never above the compute-only rate beside it, which
  divides the same work by the compute time alone);
* the same figure in the JSON summary and as root attributes of the HDF5
  output (figure_of_merit_name/value/unit/seconds/divides_by);
* the verdict is `not checked` when nothing was compared (validation mode
  none, spmv without the symmetry test), `pass` when something was;
* tensor_contract counts its contiguous (sorted) accumulates too."""
import json
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1]) if len(sys.argv) > 1 else 2
OUT = scratch("figure_of_merit_np%d" % NP)


def deck(app, name="default.yaml"):
    return os.path.join(SOURCE, "inputs", app, name)


def run(app, name, sets, d=None):
    p, _ = run_app(app, d or deck(app), NP, ["output.dir=" + OUT, "output.name=" + name] + sets)
    return summary(p.stdout)


def fom_of(s, unit, work, label):
    f = s["results"]["figure_of_merit"]
    for k in ("name", "value", "unit", "seconds", "divides_by"):
        check(k in f, "%s: figure_of_merit without %s: %s" % (label, k, f))
    check(f["unit"] == unit, "%s: unit %s, expected %s" % (label, f["unit"], unit))
    check("whole" in f["divides_by"], "%s: divides_by does not say the whole timed solve: %s" % (label, f["divides_by"]))
    check(f["seconds"] > 0 and f["value"] > 0, "%s: %s" % (label, f))
    want = work / f["seconds"]
    check(abs(f["value"] - want) <= 1e-5 * want, "%s: value %s, work / seconds = %s" % (label, f["value"], want))
    # the whole loop takes at least as long as the slowest rank's compute timer
    total = s["timers_seconds"]["total"]["max"]
    check(f["seconds"] <= total * 1.001, "%s: %s s is more than the total %s s" % (label, f["seconds"], total))
    return f


# Datasets of counts and indices: stored as 64-bit integers.
INTEGER = {"row_partition", "residual_iterations", "phase_tasks", "task_unit", "C_block_table", "async_on"}


def h5_fom(name, f, label):
    with h5py.File(os.path.join(OUT, name + ".h5"), "r") as h:
        a = h.attrs
        got = {k: a["figure_of_merit_" + k] for k in ("name", "value", "unit", "seconds", "divides_by")}
        for d in h:
            ds = h[d]
            check("units" in ds.attrs, "%s: dataset %s has no units attribute" % (label, d))
            check(any(k in ds.attrs for k in ("meaning", "columns")),
                  "%s: dataset %s says nothing of its content: %s" % (label, d, list(ds.attrs)))
            want = "int64" if d in INTEGER else ("float32", "float64")
            check(str(ds.dtype) in want, "%s: dataset %s is %s, expected %s" % (label, d, ds.dtype, want))
    got = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in got.items()}
    check(got["unit"] == f["unit"] and got["name"] == f["name"] and abs(float(got["value"]) - f["value"]) <= 1e-9 *
          f["value"], "%s: HDF5 attributes %s, summary %s" % (label, got, f))


# heat3d: Mcell updates over the whole time loop; mode none is not checked.
s = run("heat3d", "h_none", ["heat3d.grid.nx=16", "heat3d.grid.ny=16", "heat3d.grid.nz=16",
                             "heat3d.time.max_steps=30", "heat3d.time.tolerance=0", "heat3d.validation.mode=none"])
f = fom_of(s, "Mcell_updates/s", 16 ** 3 * s["results"]["steps"] / 1e6, "heat3d")
check(s["results"]["compute_only_mcell_updates_per_s"] >= f["value"], "heat3d: compute-only rate below the FOM")
check(s["validation"]["verdict"] == "not checked", "heat3d mode none: %s" % s["validation"])
h5_fom("h_none", f, "heat3d")
p, _ = run_app("heat3d", deck("heat3d"), NP, ["output.dir=" + OUT, "output.name=h_json", "heat3d.grid.nx=12",
                                              "heat3d.grid.ny=12", "heat3d.grid.nz=12", "heat3d.time.max_steps=5",
                                              "heat3d.time.tolerance=0", "heat3d.validation.mode=none"],
               extra=["--summary", "json"])
j = json.loads(p.stdout[p.stdout.index("{"):])["locus_summary"]
check(j["results"]["figure_of_merit"]["unit"] == "Mcell_updates/s", "JSON summary: %s" % j["results"])
# the machine descriptor and where the run came from
m = s["machine"]
for k in ("os", "kernel", "sockets", "numa_nodes", "launch_line", "environment"):
    check(k in m and str(m[k]), "machine descriptor without %s: %s" % (k, m))
check(os.path.isabs(s["deck_path"]) and s["deck_path"].endswith("inputs/heat3d/default.yaml") and
      os.path.isdir(s["working_directory"]), "deck_path / working_directory: %s %s" % (
          s.get("deck_path"), s.get("working_directory")))
p, _ = run_app("heat3d", deck("heat3d"), NP, ["output.dir=" + OUT, "output.name=h_json", "heat3d.grid.nx=8",
                                              "heat3d.grid.ny=8", "heat3d.grid.nz=8", "heat3d.time.max_steps=2",
                                              "heat3d.time.tolerance=0", "heat3d.validation.mode=none",
                                              "output.overwrite=true"],
               env=dict(os.environ, OMP_PROC_BIND="false", LOCUS_LAUNCH_LINE="mpiexec -n 2 heat3d x"))
m = summary(p.stdout)["machine"]
check("OMP_PROC_BIND=false" in m["environment"] and m["launch_line"] == "mpiexec -n 2 heat3d x",
      "environment / launch line: %s" % m)
# a preloaded library (the suite's MPI idle yield, cmake/LocusTesting.cmake) is recorded
preload = os.environ.get("LD_PRELOAD")
if preload:
    check("LD_PRELOAD=" + preload in m["environment"].split(), "LD_PRELOAD not recorded: %s" % m["environment"])
else:
    check("LD_PRELOAD" not in m["environment"], "LD_PRELOAD recorded without one: %s" % m["environment"])
# replacing an output is said (shipped decks set output.overwrite: true)
check("note: this run replaces" in p.stderr and "h_json.h5" in p.stderr, "replacement not announced: %r" % p.stderr)

# poisson5pt: Mpoint updates over the whole iteration loop; the default
# deck (mode none, manufactured) converges and is compared with its known
# discrete error: pass.
s = run("poisson5pt", "p_none", ["poisson5pt.grid.n=31"])
f = fom_of(s, "Mpoint_updates/s", 31 * 31 * s["results"]["iterations"] / 1e6, "poisson5pt")
check(s["results"]["compute_only_mpoint_updates_per_s"] >= f["value"], "poisson5pt: compute-only rate below the FOM")
check(s["validation"]["verdict"] == "pass" and s["validation"]["converged"]
      and s["validation"]["predicted_max_error"] > 0, "poisson5pt mode none: %s" % s["validation"])
h5_fom("p_none", f, "poisson5pt")

# spmv: GFLOP/s of the whole product loop; without the symmetry test
# nothing is checked, with it the verdict is pass.
small = ["spmv.matrix.nx=8", "spmv.matrix.ny=8", "spmv.matrix.nz=8", "spmv.repetitions=5"]
s = run("spmv", "s_off", small + ["spmv.validation.symmetry=off"])
nnz = s["results"]["matrix"]["nonzeros"]
f = fom_of(s, "GFLOP/s", 2.0 * nnz * 5 / 1e9, "spmv")
check(s["validation"]["verdict"] == "not checked", "spmv without the symmetry test: %s" % s["validation"])
h5_fom("s_off", f, "spmv")
s = run("spmv", "s_on", small + ["spmv.validation.symmetry=on"])
check(s["validation"]["verdict"] == "pass", "spmv with the symmetry test: %s" % s["validation"])

# tensor_contract: GFLOP/s of the task loops; accumulates counted for the
# sorted (contiguous) path; mode none is not checked.
s = run("tensor_contract", "t_ref", ["tensor_contract.extent=8", "tensor_contract.tile=4"])
f = fom_of(s, "GFLOP/s", s["results"]["gflop"], "tensor_contract")
check(s["results"]["compute_only_gflop_per_s"] >= f["value"], "tensor_contract: compute-only rate below the FOM")
ph = s["validation"]["phases"][0]
check(ph["accumulates"] == ph["tasks"] and ph["tasks"] > 0, "tensor_contract sorted accumulates: %s" % ph)
check(s["validation"]["verdict"] == "pass", "tensor_contract reference: %s" % s["validation"])
h5_fom("t_ref", f, "tensor_contract")
s = run("tensor_contract", "t_none", ["tensor_contract.extent=8", "tensor_contract.tile=4",
                                      "tensor_contract.validation.mode=none"])
check(s["validation"]["verdict"] == "not checked", "tensor_contract mode none: %s" % s["validation"])
print("figure of merit: heat3d, poisson5pt, spmv, tensor_contract (summary, JSON, HDF5); verdicts pass / not checked")
