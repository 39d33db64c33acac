#!/usr/bin/python3
"""spmv correctness at NP ranks:

  * y = A x against a serial scipy reference (max relative difference
    <= 1e-14) on the shipped Matrix Market files and on the generators
    (their matrices exported by the app itself and read back with scipy);
  * y bitwise identical in every mode (vector, overlap, task, thread, rma)
    and with 1 and 2 threads, also on emulated nodes (rma then moves the
    halo by MPI) and, at 2 ranks, with a progress process (at 4 ranks,
    over-subscribed, three of the five matrices and one thread);
  * HPCG's symmetry test passes on symmetric input, and is not run on
    unsymmetric input; its formula in the summary is the one --help states.

    spmv_check.py NP
"""
import os
import subprocess
import sys

import h5py
import numpy as np
import scipy.io

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, app_path, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("spmv_check_np%d" % NP)
DECK = os.path.join(SOURCE, "inputs", "spmv", "default.yaml")
MATRICES = os.path.join(SOURCE, "inputs", "spmv", "matrices")
MODES = ["vector", "overlap", "task", "thread", "rma"]
# spmv --help, its lines joined (a key's help may wrap)
HELP = " ".join(subprocess.run([app_path("spmv"), "--help"], stdout=subprocess.PIPE, text=True,
                               check=True).stdout.split())


def run(name, sets, ranks=NP, env=None):
    sets = list(sets) + ["output.dir=" + OUT, "output.name=" + name, "spmv.repetitions=3"]
    p, _ = run_app("spmv", DECK, ranks, sets, extra=["--quiet"], env=env)
    with h5py.File(os.path.join(OUT, name + ".h5"), "r") as f:
        return np.array(f["x"]), np.array(f["y"]), summary(p.stdout)


def mode_sets(mode):
    s = ["spmv.mode=" + mode]
    if mode == "thread":
        s.append("runtime.progress.thread=true")
    return s


def reference(mtx, x):
    a = scipy.io.mmread(mtx).tocsr()
    return a @ x


def compare(label, y, ref):
    scale = np.max(np.abs(ref))
    diff = np.max(np.abs(y - ref)) / (scale if scale > 0 else 1.0)
    check(diff <= 1e-14, "%s: max relative difference %.3e from scipy > 1e-14" % (label, diff))
    print("%-40s vs scipy: %.2e" % (label, diff))


cases = [
    ("bcsstk", ["spmv.matrix.source=file", "spmv.matrix.file=" + os.path.join(MATRICES, "bcsstk_like.mtx")], None),
    ("convdiff", ["spmv.matrix.source=file", "spmv.matrix.file=" + os.path.join(MATRICES, "convdiff.mtx")], None),
    ("hpcg27", ["spmv.matrix.generator=hpcg27", "spmv.matrix.nx=9", "spmv.matrix.ny=7", "spmv.matrix.nz=6"],
     "export"),
    ("banded", ["spmv.matrix.generator=banded", "spmv.matrix.rows=3000", "spmv.matrix.bandwidth=400",
                "spmv.matrix.per_row=15", "spmv.matrix.seed=3", "spmv.partition=rows"], "export"),
    ("laplace2d", ["spmv.matrix.generator=laplace2d", "spmv.matrix.nx=31", "spmv.matrix.ny=17"], "export"),
]

# at 4 ranks (over-subscribed on 2 cores) one file, one 3D and one banded
# generator: the 2D generator and the second file add no partition the
# others lack there
for name, sets, how in (cases if NP < 4 else [c for c in cases if c[0] in ("convdiff", "hpcg27", "banded")]):
    mtx = None
    if how == "export":
        mtx = os.path.join(OUT, name + ".mtx")
        sets = sets + ["spmv.matrix.export=" + mtx]
    else:
        mtx = [s.split("=", 1)[1] for s in sets if s.startswith("spmv.matrix.file=")][0]
    ys = {}
    for mode in MODES:
        x, y, summ = run("%s_%s" % (name, mode), sets + mode_sets(mode))
        ys[mode] = y
        sym = summ["validation"]["symmetry"]
        if name in ("bcsstk", "hpcg27", "laplace2d"):
            check(isinstance(sym, dict) and sym["verdict"] == "pass", "%s: symmetry test %s" % (name, sym))
            # the summary states the formula --help states (one text)
            check(sym["formula"] in HELP, "%s: the summary's symmetry formula %r is not the one --help states"
                  % (name, sym["formula"]))
        else:
            check(not isinstance(sym, dict), "%s: the symmetry test ran on unsymmetric input" % name)
        # without the symmetry test (unsymmetric input) nothing is checked
        want = "pass" if isinstance(sym, dict) else "not checked"
        check(summ["validation"]["verdict"] == want, "%s %s: verdict %s, expected %s" % (
            name, mode, summ["validation"]["verdict"], want))
    compare("%s (np %d)" % (name, NP), ys["vector"], reference(mtx, x))
    for mode in MODES[1:]:
        check(np.array_equal(ys[mode].view(np.uint64), ys["vector"].view(np.uint64)),
              "%s: y in mode %s differs from vector mode (bitwise)" % (name, mode))
    # two threads (not at 4 ranks: 12 threads on a 2-core machine), emulated nodes
    if NP < 4:
        for mode in ("task", "overlap"):
            _, y2, _ = run(name + "_t2_" + mode, sets + ["spmv.mode=" + mode, "spmv.threads=2"])
            check(np.array_equal(y2.view(np.uint64), ys["vector"].view(np.uint64)),
                  "%s: 2 threads (mode %s) differ" % (name, mode))
    for mode in ("rma", "overlap"):
        _, ye, _ = run(name + "_node1_" + mode, sets + ["spmv.mode=" + mode, "runtime.node_size=1"])
        check(np.array_equal(ye.view(np.uint64), ys["vector"].view(np.uint64)),
              "%s: mode %s on emulated nodes differs" % (name, mode))
    print("%-40s bitwise equal in %s, 2 threads, emulated nodes" % (name, ", ".join(MODES)))

if NP == 2:
    # one-sided with a progress process (3 ranks: 2 units + 1 server per node of 3)
    name, sets, _ = cases[3]
    _, yv, _ = run("pp_vector", sets + ["spmv.mode=vector"])
    _, yp, s = run("pp_rma", sets + ["spmv.mode=rma", "runtime.progress.processes_per_node=1"], ranks=3)
    check(np.array_equal(yp.view(np.uint64), yv.view(np.uint64)), "rma with a progress process differs")
    print("banded, rma with a progress process: bitwise equal")
print("PASS")
