#!/usr/bin/python3
"""The PETSc peer of spmv (bench/petsc_hpcg27): exit 77 (skipped) where the
build has no driver (PETSc or its MPI's compiler not found at configure).

    petsc_peer.py check NP   its product y = A x checked against the analytic
                             value (every row, x = 1 and x_j = j) at NP
                             ranks, CG for a fixed count and to a tolerance;
                             with one entry assembled wrong (--inject-error)
                             the check must say FAIL and exit 1
    petsc_peer.py errors     bad arguments: exit 2 and one message, from
                             one rank, on 2 ranks

The driver runs with the launcher of PETSc's MPI (the cache's
LOCUS_PETSC_PEER_MPIEXEC), not the project's."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import BUILD, check, fail  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import bench_spmv_peer  # noqa: E402


def run(argv, np):
    cmd = bench_spmv_peer.peer_argv(BUILD, np) + argv
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail("timed out: " + " ".join(cmd))
    return p, cmd


def check_run(np):
    # nx = 5: every row has between 8 and 27 entries, both ranks hold boundary
    # and interior rows; the analytic sum of A 1 is 27 * 125 - 13^3 = 1178
    for cg in (["--cg-iterations", "5"], ["--cg-tolerance", "1e-10"]):
        p, cmd = run(["--nx", "5", "--reps", "3"] + cg, np)
        out = p.stdout
        check(p.returncode == 0, "exit %d: %s\n%s\n%s" % (p.returncode, " ".join(cmd), out, p.stderr))
        check(re.search(r"^problem: nx=5 rows=125 nnz=2197 ranks=%d " % np, out, re.M), "problem line:\n" + out)
        check(re.search(r"^check: sum_A1=1178 expected=1178 rows_wrong=0 .* PASS$", out, re.M),
              "the product is not the operator's:\n" + out)
        m = re.search(r"^matmult: reps=3 median_s=(\S+) min_s=(\S+) loop_s=(\S+) gflops=(\S+)$", out, re.M)
        check(m and 0 < float(m.group(2)) <= float(m.group(1)), "matmult line:\n" + out)
        check(re.search(r"^cg_check: .*PASS$", out, re.M), "CG:\n" + out)
        if cg[0] == "--cg-iterations":
            check(re.search(r"^cg: stop=fixed iterations=5 ", out, re.M), "not 5 CG iterations:\n" + out)
        else:
            m = re.search(r"^cg: stop=tolerance iterations=(\d+) .* max_error=(\S+) reason=CONVERGED_RTOL$", out,
                          re.M)
            check(m and float(m.group(2)) < 1e-8, "CG did not reach x = 1:\n" + out)
    p, cmd = run(["--nx", "5", "--reps", "1", "--cg-iterations", "0", "--inject-error"], np)
    check(p.returncode == 1, "a wrong entry must fail the check (exit 1), got exit %d:\n%s" % (p.returncode, p.stdout))
    check(re.search(r"^check: sum_A1=1177 expected=1178 rows_wrong=1 .* FAIL$", p.stdout, re.M),
          "the check did not see the wrong entry:\n" + p.stdout)
    check("cg:" not in p.stdout, "--cg-iterations 0 still ran CG:\n" + p.stdout)


ERRORS = [
    (["--nx", "1"], "--nx must be an integer from 2 to 1000 (got '1')"),
    (["--reps", "x"], "--reps must be an integer from 1 to 100000 (got 'x')"),
    (["--cg-tolerance", "0"], "--cg-tolerance must be a number between 0 and 1, exclusive (got '0')"),
    (["--cg-iterations", "3", "--cg-tolerance", "1e-6"], "give --cg-iterations or --cg-tolerance, not both"),
    (["--nx"], "--nx needs a value"),
    (["--size", "4"], "unknown argument '--size'"),
    (["--nx", "900"], "--nx 900: 19683000000 nonzeros do not fit this PETSc's indices"),
]


def check_errors():
    for argv, want in ERRORS:
        p, cmd = run(argv, 2)
        check(p.returncode == 2, "%s: exit %d, not 2\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
        check(p.stderr.count("petsc_hpcg27: ") == 1 and "petsc_hpcg27: " + want in p.stderr,
              "%s: expected one message '%s':\n%s" % (" ".join(cmd), want, p.stderr))
        check("Traceback" not in p.stderr and "PETSC ERROR" not in p.stderr, "not a clean error:\n" + p.stderr)
    p, _ = run(["--help"], 2)
    check(p.returncode == 0 and p.stdout.count("usage: petsc_hpcg27") == 1, "--help:\n" + p.stdout)


def main():
    why = bench_spmv_peer.peer_missing(BUILD)
    if why:
        print("SKIP: " + why)
        sys.exit(77)
    if sys.argv[1:2] == ["check"] and len(sys.argv) == 3:
        check_run(int(sys.argv[2]))
    elif sys.argv[1:] == ["errors"]:
        check_errors()
    else:
        fail("usage: petsc_peer.py check NP | errors")
    print("PASS")


if __name__ == "__main__":
    main()
