#!/usr/bin/python3
"""comm.staging: always moves halo faces and spmv's x entries the way a
device memory space needs (pack kernel into a buffer in the app's memory
space, copy into a host segment, transfer and notify, copy back, unpack),
and gives bitwise the output of the direct transfers (comm.staging: auto,
which on a host build never stages):

  * heat3d, every halo strategy (p2p, rma, locus-barrier, locus, locus-nb;
    locus-nb runs the overlapped split-phase step), on real nodes and on
    emulated nodes (2 ranks: real nodes, and node size 1: every neighbour
    remote; 4 ranks: node size 2, same-node and remote neighbours, and
    locus-nb with a progress process per node taking the packed faces'
    gets), against the direct p2p field;
  * poisson5pt (halos by put into the neighbours' ghosts, in-place
    Gauss-Seidel) with every strategy, against the direct run;
  * spmv, every mode (vector, overlap, task, thread, rma), CG on HPCG's
    27-point operator: solution, product and residual history against the
    direct run (every mode gives bitwise the same y).

A kokkos-tools connector built by the tests (kokkos_regions.cpp) names the
kernels every run launched: a staged run with neighbours launched the
staging pack kernels, a direct run never did.

    staging.py NP CONNECTOR
"""
import glob
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
CONNECTOR = sys.argv[2]
OUT = scratch("staging_np%d" % NP)
STRATEGIES = ["p2p", "rma", "locus-barrier", "locus", "locus-nb"]
MODES = ["vector", "overlap", "task", "thread", "rma"]


def run(app, deck, sets, name, want_summary=False):
    """Runs the app with the connector; returns (output file, kernels seen on any rank[, summary])."""
    d = os.path.join(OUT, name)
    base = os.path.join(d, "kernels")
    os.makedirs(d)
    env = dict(os.environ, KOKKOS_PROFILE_LIBRARY=CONNECTOR, KOKKOS_TOOLS_LIBS=CONNECTOR, LOCUS_KOKKOS_REGIONS=base)
    p, _ = run_app(app, os.path.join(SOURCE, "inputs", app, deck), NP,
                   list(sets) + ["output.dir=" + d, "output.name=out", "output.xdmf=false"], extra=["-q"], env=env)
    files = glob.glob(base + ".*")
    check(len(files) == NP, "%s: connector files %s" % (name, files))
    seen = set()
    for f in files:
        seen |= {ln[len("kernel "):] for ln in open(f).read().splitlines() if ln.startswith("kernel ")}
    if want_summary:
        return os.path.join(d, "out.h5"), seen, summary(p.stdout)
    return os.path.join(d, "out.h5"), seen


def datasets(path, names):
    with h5py.File(path, "r") as f:
        return {n: f[n][...] for n in names}


def same(label, a, b):
    for n in a:
        check(a[n].shape == b[n].shape and a[n].dtype == b[n].dtype, "%s: %s shape/type differ" % (label, n))
        diff = np.count_nonzero(a[n].view(np.uint8) != b[n].view(np.uint8))
        check(diff == 0, "%s: %s differs from the direct run in %d bytes" % (label, n, diff))


def staged_kernels(label, seen, want, staged, neighbours):
    """`want`: the staging kernels; launched exactly when staged (and there are faces to move)."""
    hit = sorted(k for k in seen if k in want)
    if staged and neighbours:
        check(hit == sorted(want), "%s: staging kernels %s not all launched (seen %s)" % (label, want, sorted(seen)))
    if not staged:
        check(not hit, "%s: a direct run launched staging kernels %s" % (label, hit))


def heat3d():
    base = ["heat3d.grid.nx=11", "heat3d.grid.ny=9", "heat3d.grid.nz=10", "heat3d.time.max_steps=6",
            "heat3d.time.tolerance=0", "heat3d.validation.mode=none"]
    want = {"locus::halo_stage_pack", "locus::halo_stage_unpack"}
    for node_size in [2] if NP == 4 else [0, 1] if NP == 2 else [0]:
        sets = base + ["runtime.node_size=%d" % node_size]
        path, seen, s = run("heat3d", "default.yaml", sets + ["comm.halo=p2p"], "heat3d_direct_node%d" % node_size,
                            want_summary=True)
        staged_kernels("heat3d direct", seen, want, False, NP > 1)
        fields = s["results"]["kernels"]["fields"]
        check(fields.startswith("segments"), "heat3d direct: fields in %r, expected segments" % fields)
        ref = datasets(path, ["temperature"])
        check(np.ptp(ref["temperature"]) > 1.0, "heat3d: the field evolved")
        for halo in STRATEGIES:
            label = "heat3d %s node size %d" % (halo, node_size)
            path, seen, s = run("heat3d", "default.yaml", sets + ["comm.halo=" + halo, "comm.staging=always"],
                                "heat3d_%s_node%d" % (halo, node_size), want_summary=True)
            staged_kernels(label, seen, want, True, NP > 1)
            fields = s["results"]["kernels"]["fields"]
            check(fields.startswith("Kokkos allocations outside segments"),
                  "%s: fields in %r, expected outside segments" % (label, fields))
            same(label, datasets(path, ["temperature"]), ref)
            print("%-34s staged: bitwise the direct p2p field" % label)
    if NP == 4:
        # locus-nb with a progress process per emulated node of 2 (2 units):
        # the packed faces' gets are offloaded to it (comm.remote: rma; under
        # auto the faces between nodes travel as messages, which are not
        # offloaded: remote_routes.py). heat3d's field does not
        # depend on the rank count (heat3d.invariance), so the 4-rank direct
        # field is the reference.
        label = "heat3d locus-nb progress processes"
        path, seen, s = run("heat3d", "default.yaml",
                            sets + ["comm.halo=locus-nb", "comm.staging=always", "comm.remote=rma",
                                    "runtime.progress.processes_per_node=1", "runtime.progress.threshold=64"],
                            "heat3d_locus-nb_progress", want_summary=True)
        staged_kernels(label, seen, want, True, True)
        check(s["progress"]["offloaded_unit0"] > 0, "%s: nothing offloaded: %s" % (label, s["progress"]))
        same(label, datasets(path, ["temperature"]), ref)
        print("%-34s staged, faces offloaded: bitwise the direct p2p field" % label)


def poisson5pt():
    # Every strategy gives bitwise the same solution (poisson5pt.invariance),
    # so one direct run is the reference of all staged ones.
    base = ["poisson5pt.grid.n=21", "poisson5pt.solver.tolerance=0", "poisson5pt.solver.max_iterations=12",
            "poisson5pt.decomposition=blocks" if NP == 4 else "poisson5pt.decomposition=rows",
            "runtime.node_size=%d" % (2 if NP == 4 else 1 if NP == 2 else 0)]
    want = {"locus::halo_stage_pack", "locus::halo_stage_unpack"}
    path, seen, s = run("poisson5pt", "default.yaml", base + ["comm.halo=locus"], "poisson5pt_direct",
                        want_summary=True)
    check(s["results"]["kernels"]["fields"].startswith("segments"), "poisson5pt direct: fields not in segments")
    staged_kernels("poisson5pt direct", seen, want, False, NP > 1)
    ref = datasets(path, ["solution", "residual"])
    for halo in STRATEGIES:
        path, seen, s = run("poisson5pt", "default.yaml", base + ["comm.halo=" + halo, "comm.staging=always"],
                            "poisson5pt_%s" % halo, want_summary=True)
        check(s["results"]["kernels"]["fields"].startswith("Kokkos allocations outside segments"),
              "poisson5pt %s staged: fields not outside segments" % halo)
        staged_kernels("poisson5pt " + halo, seen, want, True, NP > 1)
        same("poisson5pt " + halo, datasets(path, ["solution", "residual"]), ref)
        print("poisson5pt %-23s staged: bitwise the direct solution and residuals" % halo)


def spmv():
    # y is bitwise the same in every mode (spmv.check), so one direct run is
    # the reference of all staged ones.
    base = ["spmv.matrix.source=generator", "spmv.matrix.generator=hpcg27", "spmv.matrix.nx=8",
            "spmv.matrix.ny=8", "spmv.matrix.nz=%d" % (4 * NP), "spmv.solver=cg", "spmv.cg.tolerance=1e-6",
            "runtime.node_size=%d" % (1 if NP > 1 else 0)]
    want = {"spmv::stage_pack"}
    names = ["x", "y", "residual"]
    path, seen = run("spmv", "default.yaml", base + ["spmv.mode=rma"], "spmv_direct")
    staged_kernels("spmv direct", seen, want, False, NP > 1)
    ref = datasets(path, names)
    check(len(ref["residual"]) > 5, "spmv: CG iterated")
    for mode in MODES:
        sets = base + ["spmv.mode=" + mode] + (["runtime.progress.thread=true"] if mode == "thread" else [])
        path, seen = run("spmv", "default.yaml", sets + ["comm.staging=always"], "spmv_" + mode)
        staged_kernels("spmv " + mode, seen, want, True, NP > 1)
        same("spmv " + mode, datasets(path, names), ref)
        print("spmv %-29s staged: bitwise the direct solution, product and residuals" % mode)


heat3d()
poisson5pt()
spmv()
print("PASS")
