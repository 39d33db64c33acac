"""poisson5pt output and setups: the HDF5 file holds the global solution,
its error against the exact solution, the residual history, timers and the
summary; XDMF describes the 2D grid; the paper and boundary setups match
their analytic values."""
import math
import os
import sys

import h5py
import numpy as np
import yaml

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

DECK = os.path.join(SOURCE, "inputs", "poisson5pt", "default.yaml")


def torsion_centre(terms=200):
    """u(1/2, 1/2) for -Laplace(u) = 1 on the unit square, u = 0 on the edges
    (double sine series over odd m, n)."""
    total = 0.0
    for m in range(1, terms, 2):
        for n in range(1, terms, 2):
            sign = (-1) ** ((m - 1) // 2 + (n - 1) // 2)
            total += sign * 16.0 / (math.pi ** 4 * m * n * (m * m + n * n))
    return total


def main():
    ranks = int(sys.argv[1])
    out = scratch("poisson5pt_output_np%d" % ranks)
    n = 31
    d = os.path.join(out, "man")
    p, _ = run_app("poisson5pt", DECK, ranks, ["poisson5pt.grid.n=%d" % n, "output.dir=" + d,
                                               "poisson5pt.decomposition=blocks"], extra=["-q"])
    s = summary(p.stdout)
    r = s["results"]
    path = os.path.join(d, "default.h5")
    check(s["output"] == path and os.path.exists(path), "output path in summary")
    h = 1.0 / (n + 1)
    with h5py.File(path, "r") as f:
        u = f["solution"][...]
        e = f["error"][...]
        res = f["residual"][...]
        its = f["residual_iterations"][...]
        check(u.shape == (n, n) and u.dtype == np.float64, "solution %s %s" % (u.shape, u.dtype))
        x = np.arange(1, n + 1) * h
        exact = np.outer(np.sin(math.pi * x), np.sin(math.pi * x))  # (y, x)
        check(np.max(np.abs(e - (u - exact))) < 1e-14, "error = solution - exact")
        check(abs(np.max(np.abs(e)) - r["max_error"]) < 1e-15, "max_error matches the dataset")
        # Discretisation error of the 5-point stencil: about (pi h)^2 / 12.
        check(0.5 < r["max_error"] / ((math.pi * h) ** 2 / 12) < 1.5, "max error %g" % r["max_error"])
        check(res[0] == 1.0 and res[-1] <= 1e-8 and res[-1] == r["relative_residual"], "residual history")
        check(its[-1] == r["iterations"] and len(its) == len(res), "residual iterations")
        check(f["timers"].shape == (ranks, 8), "timers per rank")
        check(f["timers"].attrs["columns"] == "total,setup,solve,compute,halo,residual,check,io", "timer columns")
        summ = yaml.safe_load(f.attrs["summary"])["locus_summary"]
        check(summ["results"]["iterations"] == r["iterations"], "summary attribute")
        check("poisson5pt" in yaml.safe_load(f.attrs["config"]), "effective config stored")
    xmf = open(os.path.join(d, "default.xmf")).read()
    check('TopologyType="2DCoRectMesh" Dimensions="%d %d"' % (n, n) in xmf and 'Precision="8"' in xmf and
          "default.h5:/solution" in xmf and "default.h5:/error" in xmf, "XDMF (solution and error): " + xmf)
    check(r["time_per_iteration"] > 0 and r["figure_of_merit"]["value"] > 0 and
          r["compute_only_mpoint_updates_per_s"] > 0, "performance figures")

    # float32 output is float32 on disk.
    d = os.path.join(out, "f32")
    run_app("poisson5pt", DECK, ranks, ["poisson5pt.grid.n=%d" % n, "output.dir=" + d,
                                        "poisson5pt.solver.precision=float32", "poisson5pt.solver.tolerance=1e-4"],
            extra=["-q"])
    with h5py.File(os.path.join(d, "default.h5"), "r") as f:
        check(f["solution"].dtype == np.float32 and f["error"].dtype == np.float32, "float32 datasets")
    check('Precision="4"' in open(os.path.join(d, "default.xmf")).read(), "XDMF precision 4")

    # The paper's setup: constant source, zero edges. No exact field, so no
    # error dataset; the centre value against the series solution.
    d = os.path.join(out, "paper")
    n = 63
    p, _ = run_app("poisson5pt", DECK, ranks, ["poisson5pt.grid.n=%d" % n, "output.dir=" + d,
                                               "poisson5pt.setup=paper", "poisson5pt.paper.source=2.0",
                                               "poisson5pt.solver.tolerance=1e-10"], extra=["-q"])
    s = summary(p.stdout)
    ref = 2.0 * torsion_centre()
    check(abs(s["results"]["centre"] - ref) < 2e-4 * ref, "paper centre %r vs %r" % (s["results"]["centre"], ref))
    check("max_error" not in s["results"], "no exact solution for the paper setup")
    with h5py.File(os.path.join(d, "default.h5"), "r") as f:
        check("error" not in f and np.allclose(f["solution"][...], f["solution"][...].T, rtol=0, atol=1e-12),
              "paper solution symmetric, no error dataset")

    # boundary: f = 0; top edge 1, others 0 -> u(1/2, 1/2) = 1/4 by symmetry
    # (the four rotations add up to u = 1). Equal edges -> a constant field.
    d = os.path.join(out, "edges")
    p, _ = run_app("poisson5pt", DECK, ranks, ["poisson5pt.grid.n=%d" % n, "output.dir=" + d,
                                               "poisson5pt.setup=boundary", "poisson5pt.solver.method=sor",
                                               "poisson5pt.solver.tolerance=1e-13"], extra=["-q"])
    c = summary(p.stdout)["results"]["centre"]
    check(abs(c - 0.25) < 1e-10, "boundary centre %r" % c)
    d = os.path.join(out, "const")
    p, _ = run_app("poisson5pt", DECK, ranks, ["poisson5pt.grid.n=%d" % n, "output.dir=" + d,
                                               "poisson5pt.setup=boundary", "poisson5pt.solver.method=sor",
                                               "poisson5pt.solver.tolerance=1e-12"] +
                   ["poisson5pt.boundary.%s=3.5" % e for e in ("left", "right", "bottom", "top")], extra=["-q"])
    r = summary(p.stdout)["results"]
    check(abs(r["min"] - 3.5) < 1e-9 and abs(r["max"] - 3.5) < 1e-9, "constant edges: %s" % r)
    print("poisson5pt output and setups OK on %d rank(s)" % ranks)


main()
