"""heat3d decomposition invariance: the final field and the residual history
are bitwise identical on 1, 2 and 4 ranks and on different process grids
(uneven grid, so the blocks have remainders)."""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch  # noqa: E402

DECK = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
BASE = ["heat3d.grid.nx=13", "heat3d.grid.ny=11", "heat3d.grid.nz=9",
        "heat3d.time.max_steps=25", "heat3d.time.tolerance=0",
        "heat3d.validation.mode=none", "output.xdmf=false"]
# (ranks, process grid) pairs; the first is the reference.
CASES = [(1, "auto"), (2, "auto"), (2, "[2,1,1]"), (2, "[1,2,1]"),
         (4, "auto"), (4, "[2,2,1]"), (4, "[1,1,4]"), (4, "[4,1,1]")]
if len(sys.argv) > 1:
    CASES = [c for c in CASES if str(c[0]) in sys.argv[1:] or c[0] == 1]


def field(path):
    with h5py.File(path, "r") as f:
        return f["temperature"][...], f["residual"][...]


def main():
    out = scratch("heat3d_invariance")
    ref = None
    for ranks, procs in CASES:
        d = os.path.join(out, "np%d_%s" % (ranks, procs.strip("[]").replace(",", "x")))
        run_app("heat3d", DECK, ranks, BASE + ["heat3d.procs=" + procs, "output.dir=" + d], extra=["--quiet"])
        t, r = field(os.path.join(d, "heat3d.h5"))
        check(t.shape == (9, 11, 13), "field shape %s" % (t.shape,))
        check(len(r) == 25, "25 residuals, got %d" % len(r))
        if ref is None:
            ref = (t, r)
            # A non-trivial field: the boundary heat has spread inwards.
            check(np.ptp(t) > 1.0, "field did not evolve")
            continue
        diff = np.count_nonzero(t != ref[0])
        check(diff == 0, "np%d procs %s: %d cells differ from np1 (max %g)"
              % (ranks, procs, diff, np.max(np.abs(t - ref[0]))))
        check(np.array_equal(r, ref[1]), "np%d procs %s: residual history differs" % (ranks, procs))
        print("np%d procs %-8s bitwise identical to np1" % (ranks, procs))


main()
