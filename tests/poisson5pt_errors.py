"""Bad poisson5pt input ends every rank quickly with one clear message naming
the deck line and key, a non-zero exit and no output file."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import check, run_app, scratch  # noqa: E402


def deck(out, name, text):
    path = os.path.join(out, name + ".yaml")
    with open(path, "w") as f:
        f.write(text + "output:\n  dir: %s\n" % os.path.join(out, "o_" + name))
    return path


def expect(ranks, out, name, text, lines, sets=()):
    path = deck(out, name, text)
    p, secs = run_app("poisson5pt", path, ranks, sets=sets, extra=["-q"], expect_ok=False, timeout=60)
    check(p.returncode != 0, "%s: must exit non-zero" % name)
    check(secs < 30, "%s took %.1f s" % (name, secs))
    for line in lines:
        check(p.stderr.count(line) == 1, "%s: expected once: %s\n--- stderr\n%s" % (name, line, p.stderr))
    check("Traceback" not in p.stderr and "terminate called" not in p.stderr, "no crash output")
    o = os.path.join(out, "o_" + name)
    check(not os.path.exists(os.path.join(o, "poisson5pt.h5")) and
          not os.path.exists(os.path.join(o, "poisson5pt.h5.tmp")), "%s: no output file" % name)


def main():
    ranks = int(sys.argv[1])
    out = scratch("poisson5pt_errors_np%d" % ranks)
    expect(ranks, out, "schema", """poisson5pt:
  solver:
    method: gauss-seidl
    omega: 2.0
    tolerance: -1e-6
""", ["schema.yaml:3:13: poisson5pt.solver.method: must be one of gauss-seidel, sor, jacobi (got gauss-seidl), "
      "did you mean 'gauss-seidel'?",
      "schema.yaml:4:12: poisson5pt.solver.omega: must be auto or a number in (0, 2) (got 2.0)",
      "schema.yaml:5:16: poisson5pt.solver.tolerance: must be a non-negative number (got -1e-6)"])
    expect(ranks, out, "omega0", "poisson5pt:\n  solver: {method: sor, omega: 0}\n",
           ["omega0.yaml:2:32: poisson5pt.solver.omega: must be auto or a number in (0, 2) (got 0)"])
    expect(ranks, out, "omega_gs", "poisson5pt:\n  solver:\n    omega: 1.5\n",
           ["omega_gs.yaml:3:12: poisson5pt.solver.omega: only used by method sor"])
    if ranks > 1:
        expect(ranks, out, "small", "poisson5pt:\n  grid:\n    n: %d\n" % (ranks - 1),
               ["small.yaml:3:8: poisson5pt.grid.n: N = %d is too small for %d blocks in y" % (ranks - 1, ranks)])
    expect(ranks, out, "grid", "poisson5pt:\n  decomposition: blocks\n  procs: [3, 3, 1]\n",
           ["grid.yaml:3:10: poisson5pt.procs: process grid [3, 3, 1] needs 9 ranks, but the run has %d" % ranks])
    expect(ranks, out, "pz", "poisson5pt:\n  decomposition: blocks\n  procs: [1, 1, 2]\n",
           ["pz.yaml:3:10: poisson5pt.procs: a 2D grid needs pz = 1 (got [1, 1, 2])"])
    expect(ranks, out, "rows", "poisson5pt:\n  procs: [%d, 1, 1]\n" % max(2, ranks),
           ["rows.yaml:2:10: poisson5pt.procs: decomposition rows uses [1, ranks, 1]"])
    expect(ranks, out, "order", "poisson5pt:\n  setup: paper\n  validation: {mode: order}\n",
           ["order.yaml:3:22: poisson5pt.validation.mode: order needs setup: manufactured"])
    expect(ranks, out, "override", "poisson5pt: {}\n", ["--set comm.halo=rmaa: comm.halo: must be one of p2p, rma, "
                                                       "locus, locus-nb, locus-barrier (got rmaa), did you mean 'rma'?"],
           sets=["comm.halo=rmaa"])
    print("all poisson5pt error cases end cleanly on %d rank(s)" % ranks)


main()
