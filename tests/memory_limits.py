#!/usr/bin/python3
"""Under an address-space limit (ulimit -v 4 GiB, as batch systems set)
(and under a control group's memory limit) every app refuses what does not
fit before it allocates: within seconds,
exit 1, one error line naming the key and the limit, nothing left in the
output directory or in /dev/shm, no hang (issue 32: heat3d printed an
MPI_Win_allocate_shared error stack on one rank and hung on two, poisson5pt
ended in std::bad_alloc after 18 s, spmv's and tensor_contract's thread
counts crashed or hung). A run that fits still runs under the limit.

    memory_limits.py NP
"""
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import (MPIEXEC, SANITIZER_BUILD, SOURCE, app_path, check, full_coverage, scratch,  # noqa: E402
                           shm_orphans)
import subprocess  # noqa: E402

NP = int(sys.argv[1])
if SANITIZER_BUILD:
    print("SKIP: AddressSanitizer reserves terabytes of address space at start, which an address-space limit "
          "(ulimit -v) forbids: every run would die before main")
    sys.exit(77)
OUT = scratch("memory_limits_np%d" % NP)
LIMIT = 4 * 1024 ** 3  # bytes: ulimit -v 4194304
BAD = ("Traceback", "Assertion", "MPI_Abort", "BAD TERMINATION", "backtrace", "terminate called", "bad_alloc",
       "Segmentation", "libgomp", "Out of memory", "MPIR_", "Fatal error")


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def shm_files():
    try:
        return set(n for n in os.listdir("/dev/shm") if n.startswith("mpich"))
    except OSError:
        return set()


def run(app, deck, sets, label, env=None):
    od = os.path.join(OUT, label)
    cmd = [MPIEXEC, "-n", str(NP), app_path(app), deck, "--quiet", "--set", "output.dir=" + od]
    for s in sets:
        cmd += ["--set", s]
    before = shm_files()
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, preexec_fn=limited,
                           start_new_session=True, env=env)
    except subprocess.TimeoutExpired:
        subprocess.run(["pkill", "-KILL", "-f", od], capture_output=True)
        check(False, "%s: no end within 60 s under ulimit -v" % label)
    dt = time.monotonic() - t0
    left = [os.path.join(r, f) for r, _, fs in os.walk(od) for f in fs] if os.path.isdir(od) else []
    new_shm = shm_orphans(shm_files() - before)
    return p, dt, left, new_shm


def refused(app, deck, sets, label, needles, env=None):
    p, dt, left, shm = run(app, deck, sets, label, env)
    err = p.stderr
    check(p.returncode == 1, "%s: exit %d (expected 1)\n%s" % (label, p.returncode, err[-3000:]))
    for n in needles:
        check(n in err, "%s: expected %r in:\n%s" % (label, n, err[-3000:]))
    lines = [x for x in err.splitlines() if x.startswith(app + ": error:")]
    check(len(lines) == 1, "%s: %d error lines:\n%s" % (label, len(lines), err[-3000:]))
    for b in BAD:
        check(b not in err, "%s: %r in stderr:\n%s" % (label, b, err[-3000:]))
    check(dt < 20, "%s: took %.1f s (a check before allocating takes seconds)" % (label, dt))
    check(not left, "%s: left %s" % (label, left))
    check(not shm, "%s: left in /dev/shm: %s" % (label, shm))
    print("%-22s refused in %4.1f s: %s" % (label, dt, lines[0][:150]))


DECK = {a: os.path.join(SOURCE, "inputs", a, "default.yaml") for a in ("heat3d", "poisson5pt", "spmv",
                                                                      "tensor_contract")}
AS = "address-space limit (RLIMIT_AS, ulimit -v) of 4.0 GiB"
refused("heat3d", DECK["heat3d"], ["heat3d.grid.nx=700", "heat3d.grid.ny=700", "heat3d.grid.nz=700"],
        "heat3d_700", ["--set heat3d.grid.nx=700: heat3d.grid.nx: a 700x700x700 grid: needs", AS])
refused("heat3d", DECK["heat3d"], ["heat3d.grid.nx=10000", "heat3d.grid.ny=10000", "heat3d.grid.nz=10000"],
        "heat3d_10000", ["heat3d.grid.nx: a 10000x10000x10000 grid: needs"])
refused("heat3d", DECK["heat3d"], ["heat3d.grid.nx=250", "heat3d.grid.ny=250", "heat3d.grid.nz=250",
                                   "heat3d.validation.mode=order"],
        "heat3d_order", ["(order study: the finest grid is 4x as fine): needs", AS])
# the case on one rank (8191^2 fits in 4 GiB per process on two);
# on more ranks a study whose finest grid does not fit on any
n, finest = (63, 8191) if NP == 1 else (127, 16383)
refused("poisson5pt", os.path.join(SOURCE, "validation", "poisson5pt", "iterations_sor.yaml"),
        ["poisson5pt.validation.levels=8", "poisson5pt.grid.n=%d" % n], "poisson5pt_levels8",
        ["poisson5pt.validation.levels: a %dx%d grid (the finest of poisson5pt.validation.levels): needs" %
         (finest, finest)])
refused("poisson5pt", DECK["poisson5pt"], ["poisson5pt.grid.n=30000"], "poisson5pt_n30000",
        ["poisson5pt.grid.n: a 30000x30000 grid: needs"])
refused("spmv", DECK["spmv"], ["spmv.threads=1024"], "spmv_threads", ["spmv.threads: 1024 threads per rank"])
refused("spmv", DECK["spmv"], ["spmv.matrix.generator=laplace3d", "spmv.solver=cg", "spmv.validation.mode=iterations",
                               "spmv.validation.levels=6", "spmv.matrix.nx=32", "spmv.matrix.ny=32",
                               "spmv.matrix.nz=32"],
        "spmv_levels6", ["spmv.validation.levels: the finest refined grid of laplace3d: needs"])
refused("tensor_contract", DECK["tensor_contract"], ["tensor_contract.blas_threads=64"], "tensor_blas_threads",
        ["tensor_contract.blas_threads: 64 threads per rank"])

# a batch job's control group (cgroup v1 or v2, as the host has): a fake
# hierarchy with a 1 GiB limit at its root, found through LOCUS_CGROUP_ROOT
cg = os.path.join(OUT, "cgroup")
for d, files in ((cg, {"memory.max": "1073741824", "memory.current": "0"}),
                 (os.path.join(cg, "memory"), {"memory.limit_in_bytes": "1073741824", "memory.usage_in_bytes": "0"})):
    os.makedirs(d, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text + "\n")
refused("heat3d", DECK["heat3d"], ["heat3d.grid.nx=400", "heat3d.grid.ny=400", "heat3d.grid.nz=400"],
        "heat3d_cgroup", ["heat3d.grid.nx: a 400x400x400 grid: needs", "left under its control group's memory limit "
                          "of 1.0 GiB"], env=dict(os.environ, LOCUS_CGROUP_ROOT=cg))
# with comm.staging: always the fields are private allocations, and the
# check counts them so (not as shared memory)
refused("heat3d", DECK["heat3d"], ["heat3d.grid.nx=400", "heat3d.grid.ny=400", "heat3d.grid.nz=400",
                                   "comm.staging=always"],
        "heat3d_cgroup_staged", ["a 400x400x400 grid: needs 1.0 GiB of memory (0.", "GiB shared, 1.0 GiB private), "
                                 "but the node has"], env=dict(os.environ, LOCUS_CGROUP_ROOT=cg))

# what fits runs under the same limit (at 4 ranks where over-subscribed
# launches are slow, locus_testlib.full_coverage: tensor_contract alone)
FITS = (("heat3d", ["heat3d.grid.nx=16", "heat3d.grid.ny=16", "heat3d.grid.nz=16"]),
        ("poisson5pt", ["poisson5pt.grid.n=31"]),
        ("spmv", ["spmv.matrix.nx=8", "spmv.matrix.ny=8", "spmv.matrix.nz=8"]),
        ("tensor_contract", ["tensor_contract.extent=8", "tensor_contract.tile=4"]))
for app, sets in FITS if full_coverage(NP) else FITS[3:]:
    p, dt, left, shm = run(app, DECK[app], sets, app + "_fits")
    check(p.returncode == 0 and ("verdict: pass" in p.stdout or "verdict: not checked" in p.stdout),
          "%s under ulimit -v: exit %d\n%s\n%s" % (app, p.returncode, p.stdout[-1500:], p.stderr[-3000:]))
    print("%-22s runs under ulimit -v 4 GiB (%.1f s)" % (app + "_fits", dt))
print("PASS")
