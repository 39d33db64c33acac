#!/usr/bin/python3
"""With a Kokkos that has the OpenMP backend (registered only then; label
`openmp`): the kernels run threaded, and 2 threads per rank give bitwise
the results of 1 thread for the deterministic kernels:

  * heat3d (fused step and max residual), field and residual history;
  * poisson5pt red-black Gauss-Seidel (chunked sweep with seam rows) and
    Jacobi, solution and residual history;
  * spmv CG (blocked dot products) in modes vector and rma, solution,
    product and residual history; with comm.staging: always too.

Each run's summary must report the OpenMP execution space and the
concurrency asked for (OMP_NUM_THREADS), so a Serial Kokkos cannot pass,
and, exactly when ranks x threads exceed the cores (OMP_WAIT_POLICY
unset), that locus started the ranks with OMP_WAIT_POLICY=passive.

    kokkos_openmp.py NP
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("kokkos_openmp_np%d" % NP)

CASES = [
    ("heat3d", ["heat3d.grid.nx=24", "heat3d.grid.ny=20", "heat3d.grid.nz=22", "heat3d.time.max_steps=15",
                "heat3d.time.tolerance=0", "heat3d.validation.mode=none"], ["temperature", "residual"]),
    ("poisson5pt", ["poisson5pt.grid.n=63", "poisson5pt.solver.tolerance=0", "poisson5pt.solver.max_iterations=30"],
     ["solution", "residual"]),
    ("poisson5pt", ["poisson5pt.grid.n=63", "poisson5pt.solver.method=jacobi", "poisson5pt.solver.tolerance=0",
                    "poisson5pt.solver.max_iterations=30"], ["solution", "residual"]),
]
for mode in ("vector", "rma"):
    for staging in ("auto", "always"):
        CASES.append(("spmv", ["spmv.matrix.source=generator", "spmv.matrix.generator=hpcg27", "spmv.matrix.nx=16",
                               "spmv.matrix.ny=16", "spmv.matrix.nz=16", "spmv.solver=cg", "spmv.cg.tolerance=1e-10",
                               "spmv.mode=" + mode, "comm.staging=" + staging], ["x", "y", "residual"]))


def run(app, sets, names, threads, tag):
    d = os.path.join(OUT, "%s_%d" % (tag, threads))
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false")
    for name in ("KOKKOS_NUM_THREADS", "OMP_WAIT_POLICY", "LOCUS_SET_OMP_WAIT_POLICY"):
        env.pop(name, None)
    # More threads than cores: OpenMP threads spinning at barriers would take
    # the time slices the other rank's threads need, so locus starts each
    # rank again with OMP_WAIT_POLICY=passive (and says so); otherwise not.
    over = NP * threads > (os.cpu_count() or 1)
    p, _ = run_app(app, os.path.join(SOURCE, "inputs", app, "default.yaml"), NP,
                   list(sets) + ["output.dir=" + d, "output.name=out", "output.xdmf=false"], extra=["-q"], env=env)
    s = summary(p.stdout)
    check(s["machine"]["kokkos_execution_space"] == "OpenMP", "%s: execution space %s" %
          (tag, s["machine"]["kokkos_execution_space"]))
    binding = s["machine"]["kokkos_binding"]
    check(("OMP_WAIT_POLICY=passive (set by locus" in binding) == over,
          "%s: %d x %d threads on %d CPUs, binding: %s" % (tag, NP, threads, os.cpu_count() or 1, binding))
    k = s["results"]["kernels"]
    check(int(k["concurrency"]) == threads, "%s: concurrency %s, asked for %d" % (tag, k["concurrency"], threads))
    with h5py.File(os.path.join(d, "out.h5"), "r") as f:
        return {n: f[n][...] for n in names}


for i, (app, sets, names) in enumerate(CASES):
    tag = "%s_%d" % (app, i)
    one = run(app, sets, names, 1, tag)
    two = run(app, sets, names, 2, tag)
    for n in names:
        check(one[n].shape == two[n].shape and one[n].dtype == two[n].dtype, "%s: %s shape/type" % (tag, n))
        diff = np.count_nonzero(one[n].view(np.uint8) != two[n].view(np.uint8))
        check(diff == 0, "%s (%s): %s differs between 1 and 2 threads in %d bytes" % (tag, " ".join(sets), n, diff))
    variant = [x for x in sets if x.split("=")[0] in ("poisson5pt.solver.method", "spmv.mode", "comm.staging")]
    print("%-10s %-45s 2 threads per rank: bitwise 1 thread" % (app, " ".join(variant) or "default"))
print("PASS")
