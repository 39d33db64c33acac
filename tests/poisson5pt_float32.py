"""float32 solves go as far as float32 allows and say so: a tolerance float32
cannot reach ends (stalled, or at max_iterations) with a warning and a
non-zero exit, never a hang; the solution then carries the discretisation
accuracy of the float64 one; a reachable tolerance converges."""
import math
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

DECK = os.path.join(SOURCE, "inputs", "poisson5pt", "default.yaml")
BASE = ["poisson5pt.grid.n=63", "output.xdmf=false"]
F32 = ["poisson5pt.solver.precision=float32"]


def main():
    ranks = int(sys.argv[1])
    out = scratch("poisson5pt_float32_np%d" % ranks)

    def run(name, sets, ok):
        p, secs = run_app("poisson5pt", DECK, ranks, BASE + sets + ["output.dir=" + os.path.join(out, name)],
                          extra=["-q"], expect_ok=ok, timeout=120)
        check((p.returncode == 0) == ok, "%s: exit %d\n%s" % (name, p.returncode, p.stderr))
        return summary(p.stdout), p.stderr

    ref, _ = run("float64", [], True)
    e64 = ref["results"]["max_error"]

    # 1e-8 is far below float32's floor on this grid: the run stalls.
    s, err = run("stall", F32 + ["poisson5pt.solver.tolerance=1e-8"], False)
    r = s["results"]
    check(r["stalled"] and not r["converged"] and s["validation"]["verdict"] == "FAIL", "stall reported: %s" % r)
    check(err.count("poisson5pt: warning: not converged") == 1 and "the residual stalled" in err and
          "float32" in err, "one clear warning: %s" % err)
    check(r["iterations"] < 100000, "stopped at the stall, after %d iterations" % r["iterations"])
    check(1e-6 < r["relative_residual"] < 1e-2, "float32 floor %g" % r["relative_residual"])
    # ... at the float32 accuracy limit: within eps32 * cond(A) of the float64
    # solution (cond(A) = cot^2(pi h / 2) for the 5-point Laplacian), so the
    # error against the exact solution is still the discretisation error.
    def solution(name):
        with h5py.File(os.path.join(out, name, "default.h5"), "r") as f:
            return f["solution"][...].astype(np.float64)
    h = 1.0 / 64
    limit = np.finfo(np.float32).eps / math.tan(math.pi * h / 2) ** 2
    gap = np.max(np.abs(solution("stall") - solution("float64")))
    check(gap <= limit, "float32 vs float64: %g, float32 limit %g" % (gap, limit))
    check(abs(r["max_error"] - e64) <= 0.15 * e64, "float32 error %g vs float64 %g" % (r["max_error"], e64))

    # Without stall detection: exactly max_iterations, then the same verdict.
    s, err = run("maxit", F32 + ["poisson5pt.solver.tolerance=1e-8", "poisson5pt.solver.stall_checks=0",
                                 "poisson5pt.solver.max_iterations=3001"], False)
    r = s["results"]
    check(r["iterations"] == 3001 and not r["converged"] and not r["stalled"], "max_iterations: %s" % r)
    check(err.count("poisson5pt: warning: not converged") == 1 and "after 3001 iterations" in err, err)

    # A tolerance float32 can reach converges like float64 does.
    s, _ = run("reachable", F32 + ["poisson5pt.solver.tolerance=1e-3"], True)
    r = s["results"]
    check(r["converged"] and r["relative_residual"] <= 1e-3 and r["precision"] == "float32", "converged: %s" % r)
    print("float32 vs float64 solution: %.2e (limit %.2e)" % (gap, limit))


main()
