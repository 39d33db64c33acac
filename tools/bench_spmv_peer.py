#!/usr/bin/python3
"""`./locus bench spmv`, last part: locus's spmv against the peer users run.

PETSc's MatMult and unpreconditioned KSPCG (bench/petsc_hpcg27: its own MPI
job, PETSc's MPI, no locus in the process) and the spmv app
(build/apps/spmv/spmv) alternate, ROUNDS times each, on the same problem:
HPCG's 27-point operator on an NX^3 grid, rows split equally in rank order
(spmv.partition: rows), x = 1 (spmv.x: ones), the same ranks. Medians of
the rounds, and their ratios:
  per product:    the slowest rank's loop of REPS back-to-back products /
                  REPS, for PETSc's MatMult and for each locus mode (the
                  app's figure of merit: its whole timed product loop);
                  PETSc's median of single products between barriers is
                  shown beside it;
  CG per iteration: b = A 1, x0 = 0, no preconditioner, until the
                  recursively updated ||r|| / ||b|| <= TOL (the app's test;
                  PETSc's KSPCG with the natural norm, which without a
                  preconditioner is that 2-norm): the slowest rank's solve
                  / iterations; both iteration counts are printed.
Goals, judged with the best locus mode (named): locus per product <= PETSc
MatMult; locus CG per iteration <= PETSc KSPCG. Not judged when the ranks
over-subscribe the cores. Every PETSc run checks its product against the
analytic value first (every row), every app run its own validation.

Where bench/petsc_hpcg27 is not built (no PETSc, or not the compiler of
its MPI), this says so and how to get it, and exits 0.

Options: --ranks N (2), --rounds N (5), --nx N (48), --reps N (50),
--modes LIST (vector,overlap,rma), --cg-tolerance T (1e-10), --set
key=value for the app (spmv.*, comm.*, ...), --out DIR
(output/bench/spmv_peer)."""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locuslib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECK = os.path.join(ROOT, "inputs", "spmv", "default.yaml")
SETUP = "./locus setup --peers (Debian: apt-get install -y petsc-dev), then ./locus build"


def cache(build, key):
    return locuslib.build_cache(key, build)


def peer_exe(build):
    return os.path.join(build, "bench", "petsc_hpcg27")


def peer_missing(build):
    """Why the build has no PETSc peer, or '' when it has one."""
    status = cache(build, "LOCUS_PETSC_PEER_STATUS")
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        return "no build in %s" % build
    if status != "built":
        return "bench/petsc_hpcg27 is not built: %s" % (status or "this build was configured before the peer existed")
    if not os.access(peer_exe(build), os.X_OK):
        return "bench/petsc_hpcg27 is configured but not built yet (%s)" % peer_exe(build)
    return ""


def peer_argv(build, ranks):
    """The launch line of the peer: PETSc's MPI's launcher, not the
    project's; Open MPI's as root needs --allow-run-as-root, more ranks
    than cores --oversubscribe. No binding (as MPICH's mpiexec)."""
    run = cache(build, "LOCUS_PETSC_PEER_MPIEXEC")
    argv = [run, "-n", str(ranks)]
    try:
        version = subprocess.run([run, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    if "Open MPI" in version or "OpenRTE" in version:
        argv += ["--bind-to", "none"]
        if os.geteuid() == 0:
            argv.append("--allow-run-as-root")
        if ranks > (os.cpu_count() or 1):
            argv.append("--oversubscribe")
    return argv + [peer_exe(build)]


def fields(line):
    """{'name': 'value'} of a 'key: name=value ...' line."""
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def run_peer(build, ranks, nx, reps, tol):
    cmd = peer_argv(build, ranks) + ["--nx", str(nx), "--reps", str(reps), "--cg-tolerance", repr(tol)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout
    if p.returncode != 0:
        sys.exit("bench spmv (PETSc peer): %s failed (exit %d):\n%s%s" % (" ".join(cmd), p.returncode, out[-1500:],
                                                                            p.stderr[-1500:]))
    lines = {m.group(1): m.group(2) for m in re.finditer(r"^([a-z_]+): (.*)$", out, re.M)}
    if not lines.get("check", "").endswith("PASS") or not lines.get("cg_check", "").endswith("PASS"):
        sys.exit("bench spmv (PETSc peer): its self-check failed:\n" + out)
    head = out.splitlines()[0] if out.startswith("#") else ""
    return {"matmult": fields(lines["matmult"]), "cg": fields(lines["cg"]), "problem": fields(lines["problem"]),
            "head": head.lstrip("# ").split(":")[0]}


def run_locus(ranks, nx, reps, mode, cg, tol, sets, out):
    keys = [("spmv.matrix.generator", "hpcg27"), ("spmv.matrix.nx", nx), ("spmv.matrix.ny", nx),
            ("spmv.matrix.nz", nx), ("spmv.partition", "rows"), ("spmv.x", "ones"), ("spmv.mode", mode),
            ("spmv.repetitions", reps), ("spmv.solver", "cg" if cg else "none"), ("spmv.cg.tolerance", tol),
            ("output.dir", out), ("output.name", "spmv_peer"), ("output.write_field", "false")]
    if mode == "thread":
        keys.append(("runtime.progress.thread", "true"))
    for s in sets:
        k, v = s.split("=", 1)
        keys = [(a, b) for a, b in keys if a != k] + [(k, v)]
    rc, stdout, stderr, _ = locuslib.run_app("spmv", DECK, ranks, keys, timeout=900)
    if rc != 0:
        sys.exit("bench spmv (PETSc peer): the spmv app (%s%s) failed (exit %d):\n%s" % (
            mode, ", cg" if cg else "", rc, stderr[-2000:]))
    s = locuslib.parse_summary(stdout)
    r = s["results"]
    if cg:
        return float(r["cg"]["seconds"]) / int(r["cg"]["iterations"]), int(r["cg"]["iterations"])
    fom = r["figure_of_merit"]
    return float(fom["seconds"]) / int(r["product"]["products"]), int(r["matrix"]["nonzeros"])


def median(v):
    return statistics.median(v)


def verdict(ratio, judged):
    if not judged:
        return "not judged (over-subscribed)"
    return "met" if ratio <= 1.0 else "missed"


def legend():
    return ["legend (spmv against PETSc):",
            "  goals (met/missed; not judged where the ranks over-subscribe the cores):",
            "    product_le_petsc_matmult: the best locus mode's time per product at most PETSc's MatMult "
            "(both: the slowest rank's loop of back-to-back products / products)",
            "    cg_iteration_le_petsc_kspcg: the best locus mode's CG time per iteration at most PETSc's "
            "KSPCG (no preconditioner, same b, x0 and stopping test)",
            "  ratio columns:",
            "    locus/PETSc: locus's time over PETSc's: at most 1, locus is as fast or faster",
            "    PETSc-single: PETSc's median of single products between barriers (slowest rank), for reference",
            "    iterations: PETSc's / locus's CG iterations (the same stopping test: they agree within one, or "
            "the CG goal is not judged)"]


def report(a, build, modes, peer, locus, nnz):
    """The tables and goals: the rounds' medians of the peer's runs and of
    locus's (per mode: product times, CG times per iteration, CG iterations)."""
    prod, cg, its = locus
    over = a.ranks > (os.cpu_count() or 1)
    pp = peer[0]["problem"]
    if int(pp["nnz"]) != nnz:
        sys.exit("bench spmv (PETSc peer): not the same matrix: PETSc %s nonzeros, locus %d" % (pp["nnz"], nnz))
    p_loop = median([float(r["matmult"]["loop_s"]) for r in peer])
    p_single = median([float(r["matmult"]["median_s"]) for r in peer])
    p_cg = median([float(r["cg"]["per_iteration_s"]) for r in peer])
    p_its = int(peer[0]["cg"]["iterations"])
    launch = " ".join([os.path.basename(peer_argv(build, a.ranks)[0])] + peer_argv(build, a.ranks)[1:-1])
    print("# locus spmv against %s (bench/petsc_hpcg27: its own MPI job, %s) on HPCG's 27-point operator, %d^3 "
          "grid (%s rows, %d nonzeros), %d ranks, rows split equally, x = 1; %d alternating rounds, medians%s"
          % (peer[0]["head"], launch, a.nx, pp["rows"], nnz, a.ranks, a.rounds,
             "; OVER-SUBSCRIBED: %d ranks on %d cores" % (a.ranks, os.cpu_count()) if over else ""))
    print("# per product: the slowest rank's loop of %d back-to-back products / %d" % (a.reps, a.reps))
    print("%-11s %12s %14s %-10s %12s %12s  %s" % ("part", "PETSc ms", "PETSc-single", "locus mode", "locus ms",
                                                   "locus/PETSc", "goal"))
    best = min(modes, key=lambda m: median(prod[m]))
    for m in modes:
        r = median(prod[m]) / p_loop
        judged = "product_le_petsc_matmult: %s" % verdict(r, not over) if m == best else ""
        print("%-11s %12.4f %14.4f %-10s %12.4f %12.3f  %s" % ("product", p_loop * 1e3, p_single * 1e3, m,
                                                             median(prod[m]) * 1e3, r, judged))
    print("# CG per iteration: b = A 1, x0 = 0, no preconditioner, until ||r||/||b|| <= %g; PETSc %d iterations"
          % (a.cg_tolerance, p_its))
    print("%-11s %12s %14s %-10s %12s %12s  %s" % ("part", "PETSc ms", "iterations", "locus mode", "locus ms",
                                                   "locus/PETSc", "goal"))
    best_cg = min(modes, key=lambda m: median(cg[m]))
    # the same iteration: the counts of the same stopping test agree within one
    same = {m: max(abs(k - p_its) for k in its[m]) <= 1 for m in modes}
    for m in modes:
        r = median(cg[m]) / p_cg
        judged = ""
        if m == best_cg:
            judged = "cg_iteration_le_petsc_kspcg: %s" % (
                verdict(r, not over) if same[m] else "not judged (iteration counts differ)")
        print("%-11s %12.4f %14s %-10s %12.4f %12.3f  %s" % ("cg", p_cg * 1e3, "%d / %d" % (p_its, its[m][0]), m,
                                                           median(cg[m]) * 1e3, r, judged))
    print("goals (against PETSc %s, %s):" % (pp.get("petsc", ""), "same matrix: %d nonzeros" % nnz))
    r = median(prod[best]) / p_loop
    print("  product_le_petsc_matmult (best mode %s): %s (%.3fx)" % (best, verdict(r, not over), r))
    r = median(cg[best_cg]) / p_cg
    print("  cg_iteration_le_petsc_kspcg (best mode %s): %s (%.3fx)" % (
        best_cg, verdict(r, not over) if same[best_cg] else "not judged (iteration counts differ)", r))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--nx", type=int, default=48)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--modes", default="vector,overlap,rma")
    ap.add_argument("--cg-tolerance", type=float, default=1e-10)
    ap.add_argument("--out", default=os.path.join(ROOT, "output", "bench", "spmv_peer"))
    a = ap.parse_args()
    for s in a.set:
        if "=" not in s:
            sys.exit("bench spmv (PETSc peer): --set needs key=value (got '%s')" % s)
    modes = [m for m in a.modes.split(",") if m]
    if a.ranks < 1 or a.rounds < 1 or a.nx < 2 or a.reps < 1 or not modes or not 0 < a.cg_tolerance < 1:
        sys.exit("bench spmv (PETSc peer): --ranks, --rounds, --reps at least 1, --nx at least 2, --modes not "
                 "empty, 0 < --cg-tolerance < 1")
    # the app's keys only: bench.* are the spmv benchmark's, output.* this part's own (--out)
    sets = [s for s in a.set if not s.startswith(("bench.", "output."))]
    build = locuslib.build_dir()
    why = peer_missing(build)
    if why:
        print("# spmv against PETSc: not run: %s. To get it: %s" % (why, SETUP))
        return 0
    os.makedirs(a.out, exist_ok=True)
    peer, prod, cg, its = [], {m: [] for m in modes}, {m: [] for m in modes}, {m: [] for m in modes}
    nnz = None
    for _ in range(a.rounds):
        peer.append(run_peer(build, a.ranks, a.nx, a.reps, a.cg_tolerance))
        for m in modes:
            t, nnz = run_locus(a.ranks, a.nx, a.reps, m, False, a.cg_tolerance, sets, a.out)
            prod[m].append(t)
            t, k = run_locus(a.ranks, a.nx, a.reps, m, True, a.cg_tolerance, sets, a.out)
            cg[m].append(t)
            its[m].append(k)
    report(a, build, modes, peer, (prod, cg, its), nnz)
    print("\n".join(legend()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
