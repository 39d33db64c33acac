#!/usr/bin/python3
"""locus bench: the benchmark matrix behind `./locus bench NAME|all`.

Which benchmark runs with which ranks, placements (real nodes, emulated
nodes, progress processes), deck keys and environment variables, and
where a run is over-subscribed: one function per benchmark. The driver
(`./locus bench`) checks the arguments (`--check`), builds, then runs
this with LOCUS_BUILD_DIR and LOCUS_MPI set. Status lines go to stderr,
the benchmarks' tables to stdout.
"""
import difflib
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locuslib import ROOT, UserError, build_cache, build_dir, fail, launcher_argv  # noqa: E402
from bench_legend import goals_help, legend  # noqa: E402

PYTHON = "/usr/bin/python3"

HELP = """usage: ./locus bench NAME [-n RANKS] [--quick] [--set key=value]... [--launcher CMD] [--ppn P] [--bind core|none]

Runs a benchmark that prints the MPI baseline and locus side by side, in
one run, with their ratio; tables on stdout, CSV in output/bench/.
  latency   OSU-style put/get/accumulate/fetch_and_op, 1 B - 4 MiB, unit 0 ->
            last unit: MPI_Win_create/allocate/create_dynamic vs locus with
            locality off and on. Runs twice: same node, then emulated
            inter-node for MPI and locus alike (MPICH's MPIR_CVAR_NOLOCAL=1:
            every process its own node; other MPIs: runtime.node_size=1,
            locus only, marked). The columns of a size are timed in
            interleaved repeats (medians). Default 2 ranks.
  exchange  the floor of a neighbour exchange: one face (8 B - 8 KiB) each
            way per step between unit 0 and the last unit, by MPI two-sided
            (the baseline), by each MPI-3 RMA protocol (announce + get, put
            + flush + accumulated or put flag, tagged accumulate) and by
            locus (put_notify/wait_notify, notify + get as the halo
            does, and a transfer plan with comm.remote message and auto).
            Same node, emulated nodes, and (MPICH) MPIR_CVAR_NOLOCAL=1.
            Between nodes it also writes the comm.remote calibration
            (output/bench/<name>-remote-<mpi>.yaml). Default 2 ranks.
  halo      heat3d halo exchange per step: p2p, rma, locus, locus-nb,
            locus-barrier on one grid (inputs/bench/halo.yaml), each first
            checked to fill every ghost with its neighbour's value; then
            heat3d's step against the memory roofline (STREAM, same run) on
            the same grid (bench.roofline_n: N^3 per rank instead; judged
            only with fields out of the last-level cache). Runs on real
            nodes, then on emulated nodes of one rank. Default: one rank per
            core.
  poisson   the DART-MPI paper's Poisson runs: poisson5pt halo time and time per
            iteration for p2p, rma, locus, locus-nb on the paper's 64x64 and
            1024x1024 grids (float32, Gauss-Seidel, rows), the whole solve to
            convergence on 64x64 (the paper's measure), and the sweep's
            fraction of the memory-bandwidth roofline (the best of four
            stream kernels with the same traffic, same run: the plain loop
            and the loop with software prefetch; the fraction of the plain,
            STREAM-like loop too) and of its compute ceiling (the
            sweep on blocks that fit in cache), for the default sweep
            (split layout, AVX2, prefetch), the split layout without AVX2
            and prefetch, and the row-major stride-2 sweep (natural).
            Runs on 2 ranks (real nodes, then
            emulated nodes of one rank), then on 4 ranks, over-subscribed on
            a 2-core machine and marked so (real nodes, then nodes of 2;
            left out with --quick). -n sets the first rank count.
  overlap   SMB host overhead and application availability of a non-blocking
            get, 1 KiB - 4 MiB, unit 0 from unit 1: MPI_Rget, locus direct,
            locus + progress processes (idle sleep and yield), locus +
            progress thread, MPI_Rget with MPICH async progress
            (MPIR_CVAR_ASYNC_PROGRESS=1, MPICH builds); same node, then emulated
            inter-node; then 5 alternating runs of the blocking 8-byte get
            alone without and with progress processes (its goal is judged
            on their medians). Ends with combined tables, the goals and
            the APSM paper's Table 2 row for the build's MPI library (and
            for the other library's last run, when there is one: results
            in output/bench/ for MPICH, output/bench-openmpi/ for
            --mpi openmpi) (tools/bench_table.py). -n is ignored (the
            ranks are part of each variant).
  heat3d-async  heat3d locus-nb time per step with and without progress
            processes: same number of units, and same number of ranks
            (tools/bench_heat3d_async.py; --set overrides heat3d keys).
  spmv      spmv modes (vector = two-sided baseline, overlap, task, thread,
            rma; the progress thread of the deck runs only for the thread
            mode and variant, paused for the others) on HPCG's 27-point
            operator and a random banded matrix:
            time per product, GFLOP/s, GB/s by the traffic model against the
            memory bandwidth measured in the same run (STREAM triad and a
            read-only kernel), the local product alone, task mode's overlap
            efficiency; then APSM's ghost-cell benchmark (1 MiB ring halo +
            L2 triad) without and with the progress thread. Real nodes,
            emulated nodes of one rank, and the ghost cells with progress
            processes (4 processes: over-subscribed on 2 cores, marked).
            Then locus against the peer users run: PETSc's MatMult and
            unpreconditioned KSPCG in their own MPI job (bench/petsc_hpcg27,
            PETSc's MPI, no locus in the process) alternating with the
            spmv app 5 times on HPCG's operator at 48^3 (vector, overlap,
            rma), medians: time per product and CG time per iteration,
            the ratios and their goals (tools/bench_spmv_peer.py). Built
            only where PETSc is found: otherwise it says how to get it
            (./locus setup --peers) and goes on. Default 2 ranks.
  tensor    tensor_contract: DGEMM efficiency per tile size (8-32, CCSD-like
            term) against OpenBLAS on one large matrix and the task loop's
            overhead (counter, gets, sorts, accumulates); NXTASK fetch-and-add
            latency (counter on the first / last unit, and while its owner
            computes without MPI); NXTASK vs static on a block-sparse
            problem. 2 ranks on real nodes, then emulated nodes of one rank
            (without, then with the progress thread), then the strong scaling of NXTASK vs static on 1, 2 and 4 ranks
            (4: over-subscribed, marked; left out with --quick).
  gups      HPCC RandomAccess: the raw limit (CPU atomics on one MPI
            shared-memory table), MPI_Accumulate(BXOR), HPCC's buckets
            with less MPI in the loop (a tuned floor), locus
            atomic_update (handle-free: inline CPU atomics on one node,
            else MPI on the segment window), locus
            with a handle per update, locus aggregated (comm.atomics:
            aggregate) and locus get+put; every variant verified (exact
            expected table and HPCC's replay; atomics: exact; locus
            get+put, not atomic: HPCC's rule, at most 1 % of the table
            wrong, said under the table; exit 1 on failure). Real
            nodes, then emulated nodes of one rank. Then locus against
            the peer users run: HPCC 1.5.0's MPIRandomAccess loop in its
            own MPI job (bench/hpcc_ra, no locus in the process),
            alternating with bench/gups 5 times on the same table, medians
            and the goals judged against it (tools/bench_gups_peer.py).
            Default 2 ranks.
  ig        index-gather (Bale's ig): raw shared-memory loads, MPI_Get per
            word, MPI_Alltoallv, locus get_nbi, locus aggregated; every word
            checked. Real nodes, then emulated nodes of one rank. Default
            2 ranks.
  multiphase  adaptive target-side redirection (comm.async, Casper's Table
            4): tensor_contract's 8-phase COMP/COMM sequence with no
            progress processes (OrigMPI), redirection always on with 1 and
            2 ghosts per node, off, user (on in COMP phases), auto and the
            progress thread; per-phase medians of interleaved repeats, what
            each variant did per phase, the goals' ratios
            (tools/bench_multiphase.py; --set overrides deck keys). Then
            NXTASK under load: fetch-and-add latency while the counter's
            owner computes without MPI, redirection off and on. All on
            emulated nodes; over-subscribed on 2 cores (marked).
  calibrate the redirection thresholds of this machine (Casper's offline
            step): get, put, accumulate and fetch-and-op, contiguous and
            strided, blocking and non-blocking, all-to-all and all-to-one-
            node; each unit alternates computing without MPI and a burst of
            operations, redirection off and on; the CRs where both take the
            same time become low/high in output/bench/thresholds.yaml (for
            comm.adapt.thresholds). 4 ranks: 2 units + 2 ghosts on emulated
            nodes of 2 (over-subscribed on 2 cores, marked). Not in "all".
  all       all of the above except calibrate
--quick: smaller sizes and fewer repeats, the over-subscribed extra runs
of poisson and tensor left out (durations below): the same tables,
columns and goals; the report says "quick: true", and the goals that only
the full sizes judge honestly (memory rooflines) read "not judged
(quick)". --set still wins over the quick sizes.
Each part starts with a status line, and the command ends with the time it
took. Decks: inputs/bench/NAME.yaml; --set overrides their keys. Tables
and CSV go to output/bench/ in the repository, wherever it is started from.
"""

# In the order `all` runs them; calibrate runs only on its own.
ALL = ("latency", "exchange", "halo", "overlap", "gups", "ig", "spmv", "tensor", "multiphase", "heat3d-async",
       "poisson")
NAMES = ("latency", "exchange", "halo", "poisson", "overlap", "heat3d-async", "gups", "ig", "spmv", "tensor",
         "multiphase", "calibrate", "all")


def say(msg):
    print("locus: " + msg, file=sys.stderr, flush=True)


# Wall-clock time of each benchmark on the 2-core machine of docs/results.md
# (MPICH, default ranks), rounded up: full runs in minutes, --quick runs in
# seconds. The full runs were timed once each while other jobs kept the
# machine busy (load average about 10 on 2 cores: an idle machine is
# faster), except latency, gups and overlap (idle); the --quick runs on the
# idle Intel Xeon host (2026-11-28: `./locus bench all --quick` took 2 min
# 4 s there, before spmv's PETSc part). spmv includes its PETSc part where
# the peer is built (its part: 20 s idle, full; with --quick spmv took 23 s
# idle). None: not timed.
DURATIONS = {
    "latency": (7, 5), "exchange": (3, 5), "halo": (2, 5), "poisson": (None, 5), "overlap": (5, 15),
    "heat3d-async": (1, 10), "gups": (10, 10), "ig": (1, 5), "spmv": (4, 25), "tensor": (None, 30),
    "multiphase": (None, 40), "calibrate": (None, 30),
}

# --quick: deck keys for a benchmark's own runs (bench/NAME) and options for
# its Python driver (tools/bench_*.py), smaller sizes and fewer repeats;
# the user's --set options come after them and win.
QUICK = {
    "latency": (["bench.max_size=1048576", "bench.iterations=100", "bench.warmup=10", "bench.repeats=3",
                 "bench.volume_mib=8"], []),
    "exchange": (["bench.steps=100", "bench.repeats=3"], []),
    "halo": (["bench.exchanges=50", "bench.repeats=3", "bench.roofline_steps=3", "bench.roofline_repeats=3"], []),
    "poisson": (["bench.small_iterations=200", "bench.large_iterations=10", "bench.repeats=3", "bench.solve_tolerance=1e-2",
                 "bench.roofline_n=1024", "bench.roofline_iterations=3", "bench.roofline_repeats=3"], []),
    "overlap": (["bench.max_size=1048576", "bench.repeats=3", "bench.trials=1", "bench.time_per_point=0.002"], []),
    "heat3d-async": ([], ["--repeats", "1", "--steps", "50"]),
    "gups": (["bench.repeats=1", "bench.log2_local=16"], ["--rounds", "1", "--set", "bench.log2_local=16"]),
    "ig": (["bench.repeats=1", "bench.log2_requests=16"], []),
    "spmv": (["bench.products=5", "bench.repeats=2", "bench.settle_ms=20", "bench.ghost_iterations=10"],
             ["--rounds", "1", "--nx", "32", "--reps", "20"]),
    "tensor": (["bench.repeats=1", "bench.fetches=200", "bench.busy_seconds=0.05", "bench.tiles=16,24,32"], []),
    "multiphase": ([], ["--repeats", "1", "--set", "tensor_contract.comm.extent=12", "--set",
                        "tensor_contract.comp.extent=24", "--set", "tensor_contract.comp.tile=12"]),
    "calibrate": (["bench.iterations=10", "bench.compute_us=0,30,300,3000"], []),
}
# How many alternating runs overlap's blocking get takes (full, quick).
OVERLAP_ALTERNATIONS = (5, 1)


def durations_help():
    """The durations for `./locus bench --help`."""
    lines = ["Durations on a 2-core machine (MPICH, default ranks; rounded up; --quick on an idle Intel Xeon; full "
             "runs while other jobs kept the machine busy, so an idle machine is faster, except latency, gups and "
             "overlap, timed idle). Under load (other jobs on the cores) MPI's busy waiting makes every part "
             "several times slower:"]
    for name in NAMES[:-1]:
        full, quick = DURATIONS[name]
        lines.append("  %-13s %s; --quick about %3d s" % (
            name, "about %2d min" % full if full else "not timed  ", quick))
    quick = sum(DURATIONS[n][1] for n in ALL)
    lines.append("  %-13s the sum of its parts; --quick about %d s (%d min)" % ("all", quick, -(-quick // 60)))
    return "\n".join(lines)


class Invocation:
    """`./locus bench NAME [-n RANKS] [--quick] [--set key=value]...`, checked."""

    def __init__(self, argv):
        if not argv:
            print(HELP, file=sys.stderr)
            raise UserError("bench: which benchmark? (%s)" % ", ".join(NAMES))
        self.name, rest = argv[0], argv[1:]
        self.ranks = None  # -n: None = each benchmark's default
        self.quick = False
        self.user = []  # --set options, passed to every run as given
        self.args = []  # a part's runs: its quick keys (--quick), then the user's
        self.tool_args = []  # a part's Python driver: its quick options, then the user's --set
        self.quick_sets = []  # a part's quick keys as --set options
        while rest:
            a = rest.pop(0)
            if a == "--quick":
                self.quick = True
            elif a in ("-n", "--ranks"):
                if not rest:
                    raise UserError("bench: %s needs a number" % a)
                self.ranks = rest.pop(0)
            elif a in ("--set", "-s"):
                if not rest:
                    raise UserError("bench: %s needs key=value" % a)
                self.user += ["--set", rest.pop(0)]
            elif a.startswith("--set="):
                self.user.append(a)
            else:
                raise UserError("bench: unknown argument %s (see ./locus bench --help)" % a)
        if self.ranks is not None and not re.fullmatch(r"[1-9][0-9]*", self.ranks):
            raise UserError("bench: -n needs a positive number (got '%s')" % self.ranks)
        if self.name not in NAMES:
            close = difflib.get_close_matches(self.name, NAMES, n=1)
            raise UserError("bench: unknown benchmark '%s'%s (%s)" % (
                self.name, "; did you mean '%s'?" % close[0] if close else "", ", ".join(NAMES)))

    def part(self, name):
        """The arguments of part `name`'s runs (args) and of its Python
        driver (tool_args)."""
        sets, options = QUICK[name] if self.quick else ([], [])
        self.quick_sets = [x for kv in sets + (["bench.quick=true"] if self.quick else []) for x in ("--set", kv)]
        self.args = self.quick_sets + self.user
        self.tool_args = options + self.user

    def around(self, middle):
        """A run's arguments with a part's own --set options `middle`: after
        the quick keys (they win over them), before the user's (who wins)."""
        return self.quick_sets + middle + self.user

    def n(self, default):
        """The rank count: -n, else the benchmark's default."""
        return int(self.ranks) if self.ranks is not None else default


class Runner:
    """Starts a benchmark's ranks with the launcher; a failed run ends the
    matrix with its exit code (as `set -e` did in the bash driver)."""

    def __init__(self, inv):
        self.inv = inv
        self.build = build_dir()
        self.mpich = build_cache("LOCUS_HAVE_MPICH") == "1"
        self.flavour = os.environ.get("LOCUS_MPI", "mpich")

    def exe(self, name):
        return os.path.join(self.build, "bench", name)

    def deck(self, name):
        return os.path.join(ROOT, "inputs", "bench", name + ".yaml")

    def run(self, n, cmd, env=None, keep=None):
        """cmd on n ranks; env: extra environment variables; keep: a regular
        expression, only the lines of stdout it matches are shown (as
        `| grep` did: a run that prints none of them fails)."""
        self.call(launcher_argv(n) + cmd, env, keep)

    def tool(self, script):
        """A Python benchmark driver in tools/ with the user's --set options."""
        self.call([PYTHON, os.path.join(ROOT, "tools", script)] + self.inv.tool_args)

    def call(self, argv, env=None, keep=None):
        full = dict(os.environ, LOCUS_BUILD_DIR=self.build, **(env or {}))
        if keep is None:
            rc = subprocess.run(argv, env=full).returncode
        else:
            p = subprocess.run(argv, env=full, stdout=subprocess.PIPE, text=True)
            lines = [line for line in p.stdout.splitlines() if re.search(keep, line)]
            for line in lines:
                print(line, flush=True)
            rc = p.returncode or (0 if lines else 1)
        if rc != 0:
            sys.exit(rc)


def latency(r):
    n, exe, deck, args = r.inv.n(2), r.exe("latency"), r.deck("latency"), r.inv.args
    say("latency, same node (%d ranks)" % n)
    r.run(n, [exe, deck] + args)
    if r.mpich:
        # MPICH: every process on a node of its own for MPI itself, so the raw
        # MPI windows and locus both take the network path
        say("latency, emulated inter-node for MPI and locus (MPIR_CVAR_NOLOCAL=1)")
        r.run(n, [exe, deck] + args, env={"MPIR_CVAR_NOLOCAL": "1"})
    else:
        say("latency, emulated inter-node for locus only (runtime.node_size=1; MPI windows use shared memory)")
        r.run(n, [exe, deck, "--set", "runtime.node_size=1"] + args)


def exchange(r):
    n, exe, deck, args = r.inv.n(2), r.exe("exchange"), r.deck("exchange"), r.inv.args
    say("exchange, same node (%d ranks)" % n)
    r.run(n, [exe, deck] + args)
    say("exchange, emulated nodes of one rank for locus (runtime.node_size=1)")
    r.run(n, [exe, deck, "--set", "runtime.node_size=1"] + args)
    if r.mpich:
        say("exchange, emulated nodes for MPI too (MPIR_CVAR_NOLOCAL=1, runtime.node_size=1)")
        r.run(n, [exe, deck, "--set", "runtime.node_size=1", "--set", "output.name=exchange_nolocal"] + args,
              env={"MPIR_CVAR_NOLOCAL": "1"})


def halo(r):
    n, exe, deck, args = r.inv.n(len(os.sched_getaffinity(0))), r.exe("halo"), r.deck("halo"), r.inv.args
    say("halo, real nodes (%d ranks)" % n)
    r.run(n, [exe, deck] + args)
    say("halo, emulated nodes of one rank (runtime.node_size=1)")
    r.run(n, [exe, deck, "--set", "runtime.node_size=1"] + args)


def overlap_dirs(r):
    """The results directory of this MPI library's runs, and the other
    library's overlap.csv: the two libraries' runs stay side by side for
    the Table 2 rows printed at the end. A user's own output.dir wins."""
    outdir, other = os.path.join(ROOT, "output", "bench"), os.path.join(ROOT, "output", "bench-openmpi")
    if r.flavour != "mpich":
        outdir, other = os.path.join(ROOT, "output", "bench-" + r.flavour), os.path.join(ROOT, "output", "bench")
    for a in r.inv.args:
        if a.startswith("output.dir=") or a.startswith("--set=output.dir="):
            outdir = a.split("output.dir=", 1)[1]
    return outdir, os.path.join(other, "overlap.csv")


def overlap_placement(r, place, oargs):
    """Every variant on one placement: same node (a real node) or inter
    (emulated nodes of one unit, or of unit + progress process)."""
    exe, deck = r.exe("overlap"), r.deck("overlap")
    ns1 = ["--set", "runtime.node_size=1"] if place == "inter" else []
    ns2 = ["--set", "runtime.node_size=2"] if place == "inter" else []
    np_pp = 4 if place == "inter" else 3
    pp = ["--set", "runtime.progress.processes_per_node=1"]
    say("overlap (%s node): MPI_Rget, locus direct, progress processes (sleep, yield), progress thread, "
        "MPICH async" % place)
    r.run(2, [exe, deck, "--set", "bench.variant=mpi"] + ns1 + oargs)
    r.run(2, [exe, deck] + ns1 + oargs)
    r.run(np_pp, [exe, deck] + pp + ns2 + ["--set", "bench.label=locus + progress proc (sleep)"] + oargs)
    r.run(np_pp, [exe, deck] + pp + ns2 + ["--set", "runtime.progress.idle=yield", "--set",
                                           "bench.label=locus + progress proc (yield)"] + oargs)
    r.run(2, [exe, deck, "--set", "runtime.progress.thread=true"] + ns1 + oargs)
    if r.mpich:
        r.run(2, [exe, deck, "--set", "bench.variant=mpi"] + ns1 + oargs, env={"MPIR_CVAR_ASYNC_PROGRESS": "1"})
    else:
        say("overlap (%s node): no MPICH async progress variant with this MPI library (left out)" % place)


def overlap(r):
    outdir, other = overlap_dirs(r)
    exe, deck = r.exe("overlap"), r.deck("overlap")
    oargs = ["--set", "output.dir=" + outdir] + r.inv.args
    for f in ("overlap.csv", "overlap_small.csv"):
        if os.path.exists(os.path.join(outdir, f)):
            os.remove(os.path.join(outdir, f))
    for place in ("same", "inter"):
        overlap_placement(r, place, oargs)
    # The small-operation goal compares two separate jobs: alternate
    # latency-only runs without and with (sleeping) servers, medians judged.
    say("overlap: blocking 8 B get, inter-node, 5 alternating runs without / with progress processes")
    for _ in range(OVERLAP_ALTERNATIONS[1 if r.inv.quick else 0]):
        r.run(2, [exe, deck, "--set", "bench.smb=false", "--set", "runtime.node_size=1"] + oargs, keep="blocking")
        r.run(4, [exe, deck, "--set", "bench.smb=false", "--set", "runtime.progress.processes_per_node=1",
                  "--set", "runtime.node_size=2", "--set", "bench.label=locus + progress proc (sleep)"] + oargs,
              keep="blocking")
    say("overlap: combined tables (%s)" % os.path.join(outdir, "overlap.csv"))
    others = []
    if os.path.isfile(other):
        others = [other]
        say("overlap: Table 2 also from the other MPI library's last run (%s)" % other)
    r.call([PYTHON, os.path.join(ROOT, "tools", "bench_table.py"), os.path.join(outdir, "overlap.csv")] + others)


def real_then_node1(r, name):
    """A benchmark on real nodes, then on emulated nodes of one rank (its
    results as NAME_node1). Default 2 ranks."""
    n, exe, deck, args = r.inv.n(2), r.exe(name), r.deck(name), r.inv.args
    say("%s, %d ranks, real nodes" % (name, n))
    r.run(n, [exe, deck] + args)
    say("%s, %d ranks, emulated nodes of one rank (runtime.node_size=1)" % (name, n))
    r.run(n, [exe, deck, "--set", "runtime.node_size=1", "--set", "output.name=%s_node1" % name] + args)


def gups(r):
    real_then_node1(r, "gups")
    n = r.inv.n(2)
    say("gups against HPCC 1.5.0's own loop in its own MPI job (bench/hpcc_ra), %d ranks, alternating" % n)
    r.call([PYTHON, os.path.join(ROOT, "tools", "bench_gups_peer.py"), "--ranks", str(n)] + r.inv.tool_args)


def ig(r):
    real_then_node1(r, "ig")


def remove_csv(name):
    path = os.path.join(ROOT, "output", "bench", name + ".csv")
    if os.path.exists(path):
        os.remove(path)


def spmv(r):
    n, exe, deck, args = r.inv.n(2), r.exe("spmv"), r.deck("spmv"), r.inv.args
    remove_csv("spmv")
    say("spmv, %d ranks, real nodes" % n)
    r.run(n, [exe, deck] + args)
    say("spmv, %d ranks, emulated nodes of one rank (runtime.node_size=1)" % n)
    r.run(n, [exe, deck, "--set", "runtime.node_size=1"] + args)
    say("spmv ghost cells with progress processes: %d units + %d servers, emulated nodes of 2" % (n, n))
    r.run(2 * n, [exe, deck, "--set", "bench.spmv=false", "--set", "runtime.node_size=2",
                  "--set", "runtime.progress.processes_per_node=1", "--set", "runtime.progress.thread=false",
                  "--set", "bench.label=emulated nodes + progress processes"] + args)
    say("spmv against PETSc's MatMult and KSPCG in their own MPI job (bench/petsc_hpcg27), %d ranks, alternating" % n)
    r.call([PYTHON, os.path.join(ROOT, "tools", "bench_spmv_peer.py"), "--ranks", str(n)] + r.inv.tool_args)


def tensor(r):
    n, exe, deck, args = r.inv.n(2), r.exe("tensor"), r.deck("tensor"), r.inv.args
    remove_csv("tensor")
    say("tensor, %d ranks, real nodes" % n)
    r.run(n, [exe, deck] + args)
    say("tensor, %d ranks, emulated nodes of one rank (runtime.node_size=1)" % n)
    r.run(n, [exe, deck, "--set", "runtime.node_size=1"] + args)
    say("tensor, %d ranks, emulated nodes, with the progress thread (target-side progress for the counter)" % n)
    r.run(n, [exe, deck, "--set", "runtime.node_size=1", "--set", "runtime.progress.thread=true",
              "--set", "bench.parts=nxtask,balance", "--set", "bench.label=emulated nodes + progress thread"] + args)
    if r.inv.quick:
        say("tensor strong scaling on 4 ranks (over-subscribed, no goal judged): left out with --quick")
    for ranks in (1, 2) if r.inv.quick else (1, 2, 4):
        say("tensor strong scaling, NXTASK vs static, %d rank(s)" % ranks)
        r.run(ranks, [exe, deck, "--set", "bench.parts=balance"] + args, keep=r"OVER|nxtask .* ms")


def calibrate(r):
    os.makedirs(os.path.join(ROOT, "output", "bench"), exist_ok=True)
    say("calibrate: redirection thresholds (2 units + 2 ghosts, emulated nodes of 2)")
    r.run(r.inv.n(4), [r.exe("calibrate"), r.deck("calibrate"),
                       "--set", "bench.thresholds=" + os.path.join(ROOT, "output", "bench", "thresholds.yaml")]
          + r.inv.args)


def multiphase(r):
    say("multiphase: comm.async variants on tensor_contract's 8 phases (emulated nodes; over-subscribed)")
    r.tool("bench_multiphase.py")
    for v in ("off", "on"):
        say("NXTASK under load, redirection %s: counter owner computes without MPI (2 units + 2 ghosts, "
            "emulated nodes of 2)" % v)
        quick = ["--set", "bench.quick=true", "--set", "bench.fetches=200"] if r.inv.quick else []
        r.run(4, [r.exe("tensor"), r.deck("tensor"), "--set", "bench.parts=nxtask", "--set", "bench.busy_seconds=0.01",
                  "--set", "runtime.node_size=2", "--set", "runtime.progress.processes_per_node=1",
                  "--set", "comm.async=" + v, "--set", "bench.label=emulated nodes + ghosts, redirection " + v]
              + quick, keep="counter on|OVER")


def heat3d_async(r):
    say("heat3d-async: locus-nb with and without progress processes")
    r.tool("bench_heat3d_async.py")


def poisson(r):
    n, exe, deck, args = r.inv.n(2), r.exe("poisson"), r.deck("poisson"), r.inv.args
    say("poisson, %d ranks, real nodes" % n)
    r.run(n, [exe, deck] + args)
    say("poisson, %d ranks, emulated nodes of one rank (runtime.node_size=1)" % n)
    r.run(n, [exe, deck] + r.inv.around(["--set", "runtime.node_size=1", "--set", "bench.roofline_n=0"]))
    if r.inv.ranks is None and r.inv.quick:
        say("poisson, 4 ranks (over-subscribed, no goal judged): left out with --quick")
    elif r.inv.ranks is None:
        # Over-subscribed on 2 cores: every synchronisation pays for scheduling,
        # so fewer iterations; the table header says OVER-SUBSCRIBED.
        few = ["--set", "bench.small_iterations=200", "--set", "bench.large_iterations=20",
               "--set", "bench.roofline_n=0"]
        say("poisson, 4 ranks, real nodes")
        r.run(4, [exe, deck] + r.inv.around(few))
        say("poisson, 4 ranks, emulated nodes of two ranks (runtime.node_size=2)")
        r.run(4, [exe, deck] + r.inv.around(["--set", "runtime.node_size=2"] + few))


PARTS = {"latency": latency, "exchange": exchange, "halo": halo, "overlap": overlap, "gups": gups, "ig": ig,
         "spmv": spmv, "tensor": tensor, "multiphase": multiphase, "heat3d-async": heat3d_async,
         "poisson": poisson, "calibrate": calibrate}


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(HELP)
        print(durations_help())
        print()
        print(goals_help())
        return 0
    check_only = bool(argv) and argv[0] == "--check"
    try:
        inv = Invocation(argv[1:] if check_only else argv)
    except UserError as e:
        fail(str(e), 1)
    if check_only:
        return 0
    os.environ["LOCUS_TTY"] = "0"
    # decks and CSV paths are the repository's, wherever bench is started
    os.chdir(ROOT)
    t0 = time.monotonic()
    r = Runner(inv)
    for name in ALL if inv.name == "all" else (inv.name,):
        inv.part(name)
        PARTS[name](r)
        print("\n".join(legend(name)), flush=True)
    took = int(time.monotonic() - t0)
    say("bench %s%s: took %d min %d s" % (inv.name, " --quick" if inv.quick else "", took // 60, took % 60))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
