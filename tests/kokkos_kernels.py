#!/usr/bin/python3
"""Every app's Kokkos kernels against its plain reference kernels at NP
ranks, and the Kokkos runtime as users drive it:

  * heat3d (both halo paths: exchange, then the fused step and residual;
    locus-nb's overlap: inner cells while faces travel, then the shell;
    also rows of several of the row kernel's 64-cell chunks, the last
    partial),
    poisson5pt (red-black split and natural, SOR, Jacobi, float32; rows
    and 2D blocks), spmv (vector, task and rma modes, CG; the AVX2
    refinement against the portable kernel with every feature hidden) and
    tensor_contract (the sort kinds of the CCSD-like and triples terms)
    each check their first step against the reference kernel bitwise and
    say so in the summary (`kernels.check`); a mismatch would end the run
    with an error, so a passing run is the check;
  * --kokkos-* options reach Kokkos::initialize and are shown in the
    machine descriptor, KOKKOS_NUM_THREADS is honoured and named, an option
    Kokkos does not know fails with one message on the first rank;
  * Kokkos::Profiling sees locus's regions (halo, compute, reduce, io) and
    the apps' kernels, balanced (a tiny connector loaded with
    KOKKOS_PROFILE_LIBRARY / KOKKOS_TOOLS_LIBS).

At 4 ranks (over-subscribed on 2 cores) the rank-independent parts (the
poisson5pt row chunks, spmv's AVX2 refinement against the portable
kernel and the --kokkos-* options) are left to 1 and 2 ranks.

    kokkos_kernels.py NP CONNECTOR.so
"""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
CONNECTOR = sys.argv[2]
OUT = scratch("kokkos_kernels_np%d" % NP)
count = [0]


def deck(app):
    return os.path.join(SOURCE, "inputs", app, "default.yaml")


def run(app, sets, extra=(), env=None, expect_ok=True):
    count[0] += 1
    name = "k%03d" % count[0]
    p, _ = run_app(app, deck(app), NP, list(sets) + ["output.dir=" + OUT, "output.name=" + name],
                   extra=["--quiet"] + list(extra), env=env, expect_ok=expect_ok)
    return p


def kernels_checked(app, sets, extra=(), env=None):
    p = run(app, sets, extra, env)
    s = summary(p.stdout)
    k = s["results"]["kernels"]
    check("bitwise" in k["check"], "%s %s: kernels not checked: %s" % (app, sets, k))
    check(k["space"] in ("Serial", "OpenMP", "Threads", "OpenMPTarget", "HPX"), "%s: space %s" % (app, k))
    print("%-16s %-70s %s: %s" % (app, " ".join(sets)[:70], k["space"], k["check"][:60]))
    return s


H = ["heat3d.grid.nx=20", "heat3d.grid.ny=18", "heat3d.grid.nz=17", "heat3d.time.max_steps=4", "heat3d.validation.mode=none"]
heat3d_summaries = [kernels_checked("heat3d", H + ["comm.halo=" + halo]) for halo in ["p2p", "locus-nb"]]
# rows longer than the row kernel's chunk of 64 cells (prefetched chunk by
# chunk): 150 cells, 75 where the ranks split x, the last chunk partial
for halo in ["p2p", "locus-nb"]:
    kernels_checked("heat3d", ["heat3d.grid.nx=150", "heat3d.grid.ny=7", "heat3d.grid.nz=6", "heat3d.time.max_steps=2",
                               "heat3d.validation.mode=none", "comm.halo=" + halo])

# heat3d's stores (heat3d.kernel.streaming_stores): streaming (checked on
# step 1 beside the cached kernel), cached, and auto (steps 2-9 time both,
# then the faster stays) give bitwise the same field, on both halo paths.
import h5py  # noqa: E402
import numpy as np  # noqa: E402
H8 = H[:3] + ["heat3d.time.max_steps=12", "heat3d.time.tolerance=0", "heat3d.validation.mode=none"]
for halo in ["p2p", "locus-nb"]:
    fields = {}
    for stores, expect in (("on", "streaming (heat3d"), ("off", "cached (heat3d"), ("auto", "(auto, this rank: 2 steps each timed")):
        s = kernels_checked("heat3d", H8 + ["comm.halo=" + halo, "heat3d.kernel.streaming_stores=" + stores])
        got = s["results"]["kernels"]["stores"]
        # without the host refinement (no AVX2, hidden, or a device space) every
        # setting runs the portable kernel with cached stores, and says why
        check(expect in got or got.startswith("cached (streaming stores need AVX2")
              or got == "cached (streaming stores hidden by LOCUS_CPU_HIDE)",
              "heat3d %s stores %s: summary says %r" % (halo, stores, got))
        with h5py.File(s["output"], "r") as f:
            fields[stores] = f["temperature"][...]
    for stores in ("off", "auto"):
        diff = np.count_nonzero(fields[stores].view(np.uint8) != fields["on"].view(np.uint8))
        check(diff == 0, "heat3d %s: stores %s differ from streaming in %d bytes" % (halo, stores, diff))
    print("heat3d %-9s streaming, cached and auto stores: bitwise the same field" % halo)

P = ["poisson5pt.grid.n=61", "poisson5pt.solver.max_iterations=6", "poisson5pt.solver.tolerance=0"]
for sets in (["poisson5pt.solver.layout=split"], ["poisson5pt.solver.layout=natural"],
             ["poisson5pt.solver.method=sor"], ["poisson5pt.solver.method=jacobi"],
             ["poisson5pt.solver.precision=float32"], ["poisson5pt.decomposition=blocks"]):
    kernels_checked("poisson5pt", P + sets)

# The red-black pass in row chunks (one per thread; forced here, so that a
# one-thread Kokkos runs the chunk seams too): the solution after several
# iterations is bitwise the one of one chunk.
for sets in (["poisson5pt.solver.layout=split"], ["poisson5pt.solver.layout=natural"],
             ["poisson5pt.solver.method=sor"], ["poisson5pt.decomposition=blocks"]) if NP <= 2 else ():
    sols = []
    for chunks in (None, "3", "7"):
        env = dict(os.environ)
        if chunks:
            env["LOCUS_ROW_CHUNKS"] = chunks
        s = kernels_checked("poisson5pt", P + sets, env=env)
        with h5py.File(s["output"], "r") as f:
            sols.append(np.array(f["solution"]))
    for other in sols[1:]:
        check(np.array_equal(sols[0].view(np.uint64), other.view(np.uint64)),
              "poisson5pt %s: row chunks change the solution" % sets)
if NP <= 2:
    print("poisson5pt: 3 and 7 row chunks bitwise equal to one")

S = ["spmv.matrix.generator=hpcg27", "spmv.matrix.nx=12", "spmv.matrix.ny=10", "spmv.matrix.nz=9"]
for mode in ["vector", "task", "rma"]:
    kernels_checked("spmv", S + ["spmv.mode=" + mode])
kernels_checked("spmv", S + ["spmv.solver=cg"])
# spmv's local product: the host's AVX2 refinement where the CPU has AVX2,
# the portable kernel with every feature hidden; y bitwise the same (rows
# of 27 entries and the banded generator's rows of odd lengths, so whole
# quads, tails and an odd last row of a rank). Rank-independent: 1 and 2
# ranks.
for gen in (S, ["spmv.matrix.generator=banded", "spmv.matrix.rows=301", "spmv.matrix.bandwidth=9",
                "spmv.matrix.per_row=7"]) if NP <= 2 else ():
    ys = []
    for hide in (None, "all"):
        env = dict(os.environ, LOCUS_CPU_HIDE=hide) if hide else None
        s = kernels_checked("spmv", gen, env=env)
        has_avx2 = "avx2" in str(s["machine"]["cpu_features"]).split()
        want = "AVX2 vectors" if has_avx2 else "portable"
        got = s["results"]["kernels"]["local"]
        check(got.startswith(want), "spmv %s (hidden: %s): local kernel %r, expected %s" % (gen[0], hide, got, want))
        with h5py.File(s["output"], "r") as f:
            ys.append(np.array(f["y"]))
    check(np.array_equal(ys[0].view(np.uint64), ys[1].view(np.uint64)),
          "spmv %s: the AVX2 refinement's y differs from the portable kernel's" % gen[0])
    print("spmv %-28s local kernels (default, all hidden): bitwise the same y" % gen[0])

kernels_checked("tensor_contract", [])
kernels_checked("tensor_contract", ["tensor_contract.contraction=triples", "tensor_contract.extent=6",
                                    "tensor_contract.tile=3"])

# --kokkos-* options: accepted, passed on, shown. Kokkos 3.7 renamed
# --kokkos-threads to --kokkos-num-threads (the old name deprecated; Kokkos
# 4.6.99 no longer takes it, Debian's 3.4.1 takes only the old one): the
# option is spelt as the build's Kokkos takes it.


def kokkos_options():
    kokkos_version = tuple(int(x) for x in heat3d_summaries[0]["machine"]["kokkos"].split("."))
    opt = "--kokkos-num-threads=1" if kokkos_version >= (3, 7, 0) else "--kokkos-threads=1"
    s = summary(run("heat3d", H, extra=[opt]).stdout)
    m = s["machine"]
    check(opt in str(m["kokkos_args"]), "machine descriptor does not show %s: %s" % (opt, m))
    check(m["kokkos_threads_per_rank_from"] == "command line", "threads source: %s" % m)
    for key in ("kokkos_execution_space", "kokkos_memory_space", "kokkos_concurrency"):
        check(key in m, "machine descriptor has no %s" % key)
    env = dict(os.environ, KOKKOS_NUM_THREADS="1")
    env.pop("OMP_NUM_THREADS", None)
    s = summary(run("heat3d", H, env=env).stdout)
    check(s["machine"]["kokkos_threads_per_rank_from"] == "KOKKOS_NUM_THREADS", "env: %s" % s["machine"])
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    env.pop("KOKKOS_NUM_THREADS", None)
    s = summary(run("heat3d", H, env=env).stdout)
    check(s["machine"]["kokkos_threads_per_rank_from"].startswith("cpus / ranks per node"),
          "default: %s" % s["machine"])
    p = run("heat3d", H, extra=["--kokkos-no-such-option=3"], expect_ok=False)
    check(p.returncode == 2, "unknown Kokkos option: exit %d" % p.returncode)
    errors = [ln for ln in p.stderr.splitlines() if "error" in ln]
    check(len(errors) == 1 and "--kokkos-no-such-option" in errors[0], "want one error line:\n" + p.stderr)
    print("kokkos options: accepted and shown, KOKKOS_NUM_THREADS honoured, unknown option one error")


if NP <= 2:
    kokkos_options()

# Profiling regions, seen by a tools connector.
base = os.path.join(OUT, "regions")
env = dict(os.environ, KOKKOS_PROFILE_LIBRARY=CONNECTOR, KOKKOS_TOOLS_LIBS=CONNECTOR, LOCUS_KOKKOS_REGIONS=base)
run("heat3d", H, env=env)
files = glob.glob(base + ".*")
check(len(files) == NP, "connector files: %s" % files)
for f in files:
    seen = open(f).read().splitlines()
    for want in ("region locus::halo", "region locus::compute", "region locus::reduce", "region locus::io",
                 "kernel heat3d::step"):
        check(want in seen, "%s: %s not seen by the connector: %s" % (f, want, seen))
    check("open_at_end 0" in seen, "%s: regions not balanced: %s" % (f, seen))
print("profiling: regions halo, compute, reduce, io and heat3d::step seen on every rank")
print("PASS")
