#!/usr/bin/python3
"""The legend of `./locus bench`: what each goal compares and the limit it
names, and how to read the ratio columns. One table, printed after each
benchmark's run and listed by `./locus bench --help`; tests/bench_legend.py
checks that every goal the benchmarks judge has its entry here.

A goal's name is a pattern where a benchmark builds it (MODE_ for spmv's
matrix, N for tensor's tile size)."""
import re

# (benchmark, goal name pattern, what it compares: the limit or peer it names)
GOALS = [
    ("latency", "get_8B_goal_le_1.5x_memcpy", "same-node 8 B blocking get: locus (locality on) at most 1.5x a "
     "memcpy of 8 B (the limit of a load/store path)"),
    ("latency", "put_8B_goal_le_1.5x_memcpy", "same-node 8 B blocking put: at most 1.5x a memcpy of 8 B"),
    ("latency", "fetch_and_op_goal_le_2x_cpu_atomic", "same-node 8 B fetch_and_op: at most 2x a CPU atomic "
     "fetch-and-add on shared memory"),
    ("latency", "bandwidth_goal_90pct", "same-node get/put of 1 MiB and more: at least 90 % of memcpy's "
     "bandwidth, the worst size counts"),
    ("latency", "goal_8B_within_1.1x", "between nodes, 8 B get/put: locus within 1.1x of plain MPI RMA on an "
     "MPI_Win_create window"),
    ("latency", "goal_64KiB_up_within_1.2x", "between nodes, 64 KiB and up: locus within 1.2x of plain MPI "
     "RMA (median over the sizes)"),
    ("latency", "get_8B_goal_20x", "same-node 8 B get: locus at least 20x faster than MPI_Get + flush on an "
     "MPI_Win_allocate window (the MPI-3 way)"),
    ("latency", "get_8B_goal_within_10pct", "8 B get with locality off (locus's MPI path): at most 10 % over "
     "MPI_Get + flush on a dynamic window, the call it makes"),
    ("exchange", "goal_auto_within_1.05x_of_best_at_every_size", "comm.remote: auto picks, per size, a route "
     "within 1.05x of the best of message and RMA measured in the same run"),
    ("halo", "goal_2x_over_rma", "same node: the locus halo at least 2x faster than the rma strategy (MPI "
     "RMA on the fields' windows)"),
    ("halo", "goal_at_least_p2p", "same node: the locus halo no slower than MPI two-sided (Isend/Irecv)"),
    ("halo", "goal_le_0.2x_p2p", "same node: the locus halo at most 0.2x the time of MPI two-sided (5x faster)"),
    ("halo", "goal_le_p2p", "between nodes: the locus halo no slower than MPI two-sided"),
    ("halo", "goal_kernel_ge_0.8_triad_roofline", "heat3d's kernel reaches at least 0.8 of the memory roofline "
     "(STREAM triad bandwidth measured in the same run, 16 B per cell update), on the halo's grid or "
     "bench.roofline_n^3 per rank; not judged when the fields fit in the last-level cache"),
    ("poisson", "goal_halo_1.35x_over_rma_small_grid", "64x64 grid: the locus halo at least 1.35x faster than "
     "plain MPI RMA (the DART-MPI paper's gain)"),
    ("poisson", "goal_solve_locus_le_p2p", "the whole solve to convergence: locus no slower than MPI two-sided"),
    ("poisson", "goal_sweep_80pct_of_roofline", "the Gauss-Seidel sweep reaches at least 80 % of a stream "
     "kernel with its traffic, measured in the same run"),
    ("gups", "goal_locus_ge_half_raw", "one node: the best locus variant (named) at least half the raw limit "
     "(CPU atomics on one shared table, no library)"),
    ("gups", "goal_locus_ge_3x_hpcc", "one node: the best locus variant at least 3x the hpcc column (HPCC's "
     "buckets, a tuned MPI floor); HPCC 1.5.0's own loop is judged after, in its own job"),
    ("gups", "goal_aggregated_ge_1_5x_hpcc", "between nodes: the better aggregated variant (comm.atomics: "
     "aggregate) at least 1.5x the hpcc column"),
    ("ig", "goal_locus_ge_half_raw", "one node: locus get_nbi at least half the raw limit (plain loads from "
     "shared memory)"),
    ("ig", "goal_aggregated_ge_alltoallv", "between nodes: the better aggregated variant at least as fast as "
     "MPI_Alltoallv of the same indices and words"),
    ("spmv", "MODE_task_overlap_efficiency_ge_0.9", "emulated nodes: task mode hides at least 90 % of the "
     "exchange behind the local product"),
    ("spmv", "MODE_local_stream_fraction_ge_0.8", "the local product reaches at least 0.8 of the memory "
     "roofline (STREAM triad and read kernels, same run)"),
    ("spmv", "MODE_rma_no_slower_than_overlap_same_node", "same node: rma mode no slower than overlap mode "
     "(two-sided)"),
    ("spmv", "MODE_rma_le_vector_between_nodes", "between nodes: rma mode no slower than vector mode (the "
     "two-sided baseline)"),
    ("spmv", "ghost_progress_thread_hides_ge_80pct", "APSM's ghost-cell benchmark: the progress thread hides "
     "at least 80 % of the halo behind the L2 triad"),
    ("tensor", "tile_N_sort_ge_80pct_of_memcpy", "the block sort at least 80 % of memcpy's bandwidth"),
    ("tensor", "tile_N_ge_80pct_of_large_dgemm", "tiles of 32 and up: DGEMM per tile at least 80 % of "
     "OpenBLAS on one large matrix"),
    ("tensor", "tile_N_overhead_le_10pct_2_ranks", "the task loop's overhead (counter, gets, sorts, "
     "accumulates) at most 10 % of its time on 2 ranks"),
    ("tensor", "nxtask_beats_static_block_sparse", "NXTASK's dynamic tasks faster than a static "
     "distribution on a block-sparse problem"),
]

RATIO_COLUMNS = [
    ("X/this", "X's time over this row's time: above 1, this row is faster"),
    ("x/X, X/x", "the ratio of this row's time to X's (x: this row), as the header writes it"),
    ("/X", "this row's rate over X's rate: above 1, this row is faster (rates: higher is better)"),
    ("of_X, of X", "this row's figure as a fraction of X's (X the limit: memcpy, roofline, a cached run)"),
]


def pattern(name):
    """The regular expression of a goal name pattern (MODE_, N)."""
    rx = re.escape(name).replace("MODE_", r"[A-Za-z0-9]+_").replace("tile_N_", r"tile_[0-9]+_")
    return re.compile(rx + r"(_\(real node\))?$")


def explain(goal):
    """(benchmark, text) of a goal name as a benchmark prints it, or None."""
    for bench, name, text in GOALS:
        if pattern(name).match(goal):
            return bench, text
    return None


def legend(bench):
    """The legend lines printed after a benchmark's run."""
    lines = ["legend (%s):" % bench]
    goals = [(n, t) for b, n, t in GOALS if b == bench]
    if goals:
        lines.append("  goals (met/missed; judged only where the run is not over-subscribed; 'not judged "
                     "(quick)' where only the full sizes judge honestly):")
        lines += ["    %s: %s" % (n, t) for n, t in goals]
    lines.append("  ratio columns:")
    lines += ["    %s: %s" % (c, t) for c, t in RATIO_COLUMNS]
    return lines


def goals_help():
    """The goals for `./locus bench --help`, by benchmark."""
    lines = ["Goals (a benchmark prints 'met' or 'missed' for each, or 'not judged (why)', and its legend after "
             "the run):"]
    last = None
    for bench, name, text in GOALS:
        if bench != last:
            lines.append("  %s" % bench)
            last = bench
        lines.append("    %s: %s" % (name, text))
    lines.append("  (MODE_: spmv's matrix, hpcg27 or banded; N: tensor's tile size)")
    return "\n".join(lines)
