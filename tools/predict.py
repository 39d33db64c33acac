#!/usr/bin/python3
"""locus predict: what a deck would do on N nodes of a machine described by a
machine file, from its counted requirements and the machine's costs.

    ./locus predict DECK --machine M.yaml --nodes N [--ranks-per-node R]
                    [--scaling weak|strong] [--steps K] [--what-if KEY=FACTOR]...
                    [--set key=value]... [--count-ranks 1,2,4,8] [--validate]
                    [--check-counts 16,32] [--json FILE]

How (docs/co-design.md, "Predictions"):
1. Counting runs. The deck runs here at a few small rank counts (default
   1, 2, 4, 8 and, for weak-scaled spmv, 3, the first count whose busiest
   rank has every neighbour a rank has at scale; tensor_contract 3, an odd
   count) with a few loop iterations
   (--count-steps), emulated nodes of min(R, 2) ranks, and every count of
   every phase is read from their summaries (docs/outputs.md, "The
   counted requirements"). Counts do not
   depend on time, so over-subscription does not change them; a run of
   more ranks than cores, started here by mpiexec, preloads
   tools/idle_yield.cpp's library so that MPICH's waits yield the core
   (27 ranks on 2 cores would otherwise spin out a time slice per wait). The
   runs are kept in output/predict/ (--work) and reused.
2. Requirement models. For every phase and kind, the busiest rank's count
   per loop iteration: for heat3d and poisson5pt from their decomposition
   (every rank's count linear in its block's points and its faces' points
   and number, on and off its node, fitted on every rank of the counting
   runs: GridRequirement); for tensor_contract from its task structure
   (every rank's count linear in the features of the tasks it ran, fitted
   on the schedules the counting runs recorded; at the target a static
   schedule's busiest rank, or NXTASK's mean rank: TaskRequirement,
   tools/task_model.py); for spmv (and tensor_contract's multiphase runs,
   progress processes or aggregated atomics) in PMNF over the rank count p
   (./locus model's fitter: c0 + c * p^i * log2(p)^j), spmv weak-scaled
   constant from its interior count on. Each is fitted on all
   counting runs but the largest and checked on it (the held-out error
   printed), then refitted on all. A target inside the counted range uses
   the count itself. --check-counts P,... counts the deck at those rank
   counts too and prints every model's error there (tensor_contract under
   NXTASK: the busiest rank from the run's recorded schedule, and the mean
   rank without one).
3. Machine costs. Per phase of the busiest rank: the kernels' roofline
   max(flops / core rate, memory bytes / bandwidth per rank: its core's
   cache's when its footprint fits there, else its share of the node's
   STREAM bandwidth), messages and
   one-sided calls in LogGP's form (per loop iteration one latency, then
   bytes over bandwidth or messages over the message rate, whichever is
   longer) on the node and between nodes, atomic updates at their rate,
   fetch-and-ops at their latency or, for a shared counter, at the rate its
   owner serves all ranks (NXTASK's contention), collectives by recursive
   doubling (one latency per round). The terms are added (no overlap) and the largest is
   named.
Then the figure of merit at N nodes: the app's work over the predicted time
of its timed loop.

--what-if network.message.latency_s=0.5 multiplies one machine number (any
key of the machine file; repeatable). --validate runs the deck itself at
N x R ranks here (N emulated nodes of R ranks) and prints the prediction's
error per phase and for the figure of merit.

Exit status: 0; 2 for bad input (deck, machine file, option); 1 when a
counting or validation run fails.
"""
import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model as pmnf  # noqa: E402
from locuslib import (ROOT, UserError, app_error, deck_sections, dig, effective_config, idle_yield_env,  # noqa: E402
                      parse_summary, run_app, tool_exit, write_file)
from machine import all_keys, load_machine  # noqa: E402
import task_model  # noqa: E402

KINDS = ["bytes_on_node", "bytes_off_node", "messages", "rma_ops", "atomic_updates", "atomic_fetches",
         "flops", "memory_bytes", "collectives"]

# Per app: the keys that make the loop a fixed number of iterations K (the
# counting runs' K and the target's), the summary result that says how
# many ran, the phases of the timed loop (the figure of merit's), the
# deck keys off in counting runs, and the rank count whose busiest rank has
# every neighbour (weak scaling of a stencil; None: no fixed neighbours).
APPS = {
    "heat3d": {"loop": ("heat3d.time.max_steps", "heat3d.time.tolerance"), "done": "steps",
               "phases": ["compute", "halo", "reduce"], "interior": 27,
               "quiet": {"heat3d.validation.mode": "none", "output.write_field": "false"}},
    "poisson5pt": {"loop": ("poisson5pt.solver.max_iterations", "poisson5pt.solver.tolerance"),
                   "done": "iterations", "phases": ["compute", "halo", "residual"], "interior": 9,
                   "quiet": {"poisson5pt.validation.mode": "none", "output.write_field": "false"}},
    "spmv": {"loop": ("spmv.repetitions", None), "done": None, "phases": ["products", "cg"], "interior": 3,
             "quiet": {"output.write_field": "false", "spmv.validation.mode": "none"}},
    "tensor_contract": {"loop": None, "done": None, "phases": ["contract"], "interior": None,
                        "quiet": {"output.write_field": "false", "tensor_contract.validation.mode": "none"}},
}
CART = ("heat3d", "poisson5pt")  # Cartesian stencils: counts modelled from their decomposition
DEFAULT_COUNT_RANKS = "1,2,4,8"


# ---------------------------------------------------------------- the deck

def deck_app(deck):
    """The app a deck is for: its first top-level key that names an app."""
    for k in deck_sections(deck):
        if k in APPS:
            return k
    raise UserError("%s: no top-level section naming an app (%s)" % (deck, ", ".join(APPS)))


def per_rank_size(app, config):
    """The deck's problem on one rank, as the study's weak_size."""
    g = lambda k: dig(config, k)  # noqa: E731
    if app == "heat3d":
        return [int(g("heat3d.grid.nx")), int(g("heat3d.grid.ny")), int(g("heat3d.grid.nz"))]
    if app == "poisson5pt":
        return [int(g("poisson5pt.grid.n"))]
    if app == "spmv":
        return [int(g("spmv.matrix.nx")), int(g("spmv.matrix.ny")), int(g("spmv.matrix.nz"))]
    return [int(g("tensor_contract.extent"))]


def target_loop(app, config, steps):
    """K, the target's loop iterations, and a note when the deck stops on a
    tolerance (the prediction then assumes the iteration limit)."""
    spec = APPS[app]["loop"]
    if spec is None:
        return 1, None
    key, tol = spec
    if app == "spmv" and str(dig(config, "spmv.solver")) == "cg":
        key, tol = "spmv.cg.max_iterations", "spmv.cg.tolerance"
    k = steps if steps else int(dig(config, key))
    note = None
    if not steps and tol and float(dig(config, tol) or 0) > 0:
        note = ("the deck stops at %s = %s: the prediction assumes all %s = %d iterations run (--steps K "
                "to say how many)" % (tol, dig(config, tol), key, k))
    return k, note


def loop_sets(app, config, k):
    spec = APPS[app]["loop"]
    if spec is None:
        return []
    key, tol = spec
    if app == "spmv" and str(dig(config, "spmv.solver")) == "cg":
        key, tol = "spmv.cg.max_iterations", "spmv.cg.tolerance"
    out = [(key, str(k))]
    if tol:
        out.append((tol, "0"))
    return out


def problem_sets(app, config, user_sets, scaling, size, ranks):
    """The deck keys of the problem at RANKS ranks (weak: SIZE per rank)."""
    if scaling == "strong":
        return []
    import study
    base = effective_config(app, config["__deck"], user_sets) if app == "tensor_contract" else {}
    return list(study.WEAK_RULES[app](size, ranks, base))


# ---------------------------------------------------------------- counting runs

def counting_run(app, deck, ranks, node_size, sets, timeout, cache, datasets=("requirements",)):
    """The summary of one counting run (kept in output/predict/<hash>.json).
    A kept run is used when its summary reads and its HDF5 output opens
    with DATASETS in it; else (cut short, or a build that did not write
    them) it runs again."""
    path = counting_path(app, deck, ranks, node_size, sets, cache)
    kept = kept_run(path, datasets)
    if kept is not None:
        return kept
    # its own output file and status (never another run's: tests and
    # studies may run the same deck at the same time)
    all_sets = list(sets) + [("runtime.node_size", str(node_size)), ("output.dir", os.path.join(cache, "runs")),
                             ("output.name", os.path.basename(path)[:-5]), ("output.overwrite", "true")]
    # counts do not depend on time: over-subscribed, MPICH's waits yield
    env, yielding = idle_yield_env(ranks)
    print("locus predict: counting run, %d rank(s)%s, nodes of %d: %s" % (
        ranks, " (over-subscribed: MPICH's waits yield, tools/idle_yield.cpp)" if yielding else "", node_size,
        " ".join("%s=%s" % kv for kv in sets)), file=sys.stderr, flush=True)
    rc, out, err, _ = run_app(app, deck, ranks, all_sets, timeout, env=env)
    s = parse_summary(out)
    if rc != 0 or s is None:
        raise RuntimeError("counting run on %d rank(s) failed: %s" % (ranks, app_error(err, rc)))
    os.makedirs(cache, exist_ok=True)
    write_file(path, json.dumps(s))
    return s


def kept_run(path, datasets):
    """The summary kept at PATH, or None when it or its HDF5 output (with
    DATASETS) cannot be read."""
    import h5py
    try:
        with open(path) as f:
            summary = json.load(f)
        with h5py.File(run_h5(path), "r") as f:
            return summary if all(d in f for d in datasets) else None
    except (OSError, ValueError):
        return None


def counting_path(app, deck, ranks, node_size, sets, cache):
    """Where counting_run keeps the run of these arguments."""
    key = json.dumps([app, os.path.abspath(deck), open(deck).read(), ranks, node_size, sorted(sets)])
    return os.path.join(cache, "%s-%s.json" % (app, hashlib.sha1(key.encode()).hexdigest()[:16]))


def run_h5(summary_path):
    """The HDF5 output of the counting run kept as SUMMARY_PATH."""
    d, name = os.path.split(summary_path)
    return os.path.join(d, "runs", name[:-5] + ".h5")


def rank_counts(summary_path):
    """{"PHASE.KIND": per-rank counts} from a counting run's HDF5 output
    (the dataset `requirements`, one row per rank)."""
    import h5py
    with h5py.File(run_h5(summary_path), "r") as f:
        d = f["requirements"]
        cols = d.attrs["columns"]
        cols = (cols.decode() if isinstance(cols, bytes) else str(cols)).split(",")
        rows = np.array(d, dtype=float)
    return {c: rows[:, i] for i, c in enumerate(cols)}


def counts_of(summary, app):
    """{phase: {kind: busiest rank's count}} and {phase: {kind: sum}}."""
    req = summary.get("requirements") or {}
    mx, sm = {}, {}
    for phase, kinds in (req.get("phases") or {}).items():
        for k, v in (kinds or {}).items():
            mx.setdefault(phase, {})[k] = float(v.get("max", 0))
            sm.setdefault(phase, {})[k] = float(v.get("sum", 0))
    return mx, sm


def fom_work(summary):
    """(work, unit numerator, fom unit, name) of a run's figure of merit:
    value x seconds (e.g. Mcell_updates)."""
    f = dig(summary, "results.figure_of_merit") or {}
    if f.get("value") is None or not f.get("seconds"):
        return None
    return float(f["value"]) * float(f["seconds"]), f.get("unit", ""), f.get("name", "")


# ---------------------------------------------------------------- requirement models

class Requirement:
    """The busiest rank's count of one phase and kind per loop iteration,
    at any rank count: the count itself inside the counted range, else a
    model."""

    def __init__(self, ps, ys, saturate_from=None):
        self.ps, self.ys = list(ps), list(ys)
        self.saturate_from = saturate_from
        self.model, self.heldout_error, self.how = None, None, ""
        self._fit()

    def _fit(self):
        ps, ys = np.array(self.ps, float), np.array(self.ys, float)
        if np.all(ys == ys[0]):
            self.how = "constant"
            return
        if self.saturate_from and self.saturate_from in self.ps:
            self.how = "constant from p = %d (every neighbour present)" % self.saturate_from
            return
        if len(ps) >= 3:
            fit, _ = pmnf.fit_single(ps[:-1].reshape(1, -1), ys[:-1], 0, ["p"], negative=True)
            pred = float(fit.evaluate(np.array([[ps[-1]]]))[0])
            self.heldout_error = (pred - ys[-1]) / ys[-1] if ys[-1] else (0.0 if pred == 0 else float("inf"))
        self.model, _ = pmnf.fit_single(ps.reshape(1, -1), ys, 0, ["p"], negative=True)
        self.how = "PMNF " + self.model.text()

    def at(self, p, node_size=None):
        """The count at P ranks (a model in p: the node size does not
        enter)."""
        if p in self.ps:
            return self.ys[self.ps.index(p)]
        if self.model is None:
            if self.saturate_from and p > self.saturate_from:
                return self.ys[self.ps.index(self.saturate_from)]
            return self.ys[-1]
        return max(0.0, float(self.model.evaluate(np.array([[p]]))[0]))


class GridRequirement:
    """The busiest rank's count of one phase and kind per loop iteration of
    a Cartesian stencil app (heat3d, poisson5pt), from its decomposition:
    every rank's count is modelled as c0 + c1 * its block's points + c2 *
    the points of its faces whose neighbour is on its node + c3 * those
    faces + c4 * the points of its faces whose neighbour is on another node
    + c5 * those faces, fitted by least squares on every rank of every
    counting run (the fewest terms that fit exactly, the kind's own unit
    first: BYTES, CALLS); at another rank count (or node size) every rank's
    features come from that decomposition, and the largest modelled count
    is the busiest rank's. Halo bytes, messages and one-sided calls follow
    the faces, kernels the block, collectives the constant."""

    def __init__(self, kind, ps, features, counts, target_features, nodes):
        self.kind = kind
        # features[p]: (ranks x 6) array; counts[p]: per-rank counts per iteration
        self.ps = list(ps)
        self.ys = [float(np.max(counts[p])) if len(counts[p]) else 0.0 for p in self.ps]
        self.target_features, self.nodes = target_features, nodes
        self.how = "decomposition (block and face points, faces on and off the node)"
        self.heldout_error = None
        if len(self.ps) >= 3:
            coef = self._solve(self.ps[:-1], features, counts)
            last = self.ps[-1]
            pred = float(np.max(features[last] @ coef))
            want = self.ys[-1]
            self.heldout_error = (pred - want) / want if want else (0.0 if abs(pred) < 1e-9 else float("inf"))
        self.coef = self._solve(self.ps, features, counts)

    # Feature sets tried in order, the first that fits every rank exactly
    # taken (else the closest): a constant and the block (kernels,
    # collectives), then face points for bytes or faces for calls
    # (messages, one-sided calls, atomics), then the other, then both. The
    # kind's own unit decides where features move together in the counting
    # runs (one face size off the node, say) but not beyond.
    BYTES = ([0, 1], [0, 1, 2, 4], [0, 1, 3, 5], [0, 1, 2, 3, 4, 5])
    CALLS = ([0, 1], [0, 1, 3, 5], [0, 1, 2, 4], [0, 1, 2, 3, 4, 5])

    def _solve(self, ps, features, counts):
        x = np.vstack([features[p] for p in ps])
        y = np.concatenate([counts[p] for p in ps])
        scale = max(1.0, float(np.max(np.abs(y))))
        best = None
        for cols in self.BYTES if self.kind.startswith("bytes") else self.CALLS:
            c, *_ = np.linalg.lstsq(x[:, cols], y, rcond=None)
            coef = np.zeros(x.shape[1])
            coef[cols] = c
            worst = float(np.max(np.abs(x @ coef - y))) / scale
            if worst <= 1e-9:
                return coef
            if best is None or worst < best[0]:
                best = (worst, coef)
        return best[1]

    def at(self, p, node_size=None):
        if p in self.ps and node_size in (None, self.nodes[p]):  # counted so: the count itself
            return self.ys[self.ps.index(p)]
        return max(0.0, float(np.max(self.target_features(p, node_size) @ self.coef)))

    def node_share(self, p, node_size):
        """How many busiest ranks' worth of this count a node's ranks have
        together (the busiest node's sum over its busiest rank's count):
        the ranks that share a node's link between nodes."""
        per_rank = np.maximum(self.target_features(p, node_size) @ self.coef, 0.0)
        if not per_rank.size or per_rank.max() <= 0:
            return float(node_size or p)
        node = np.arange(per_rank.size) // (node_size or per_rank.size)
        return float(np.bincount(node, weights=per_rank).max() / per_rank.max())


class TaskRequirement:
    """The busiest rank's count of one kind of tensor_contract's task loop
    (per run), from its task structure (tools/task_model.py): every rank's
    count is linear in the features of the tasks it ran (tasks, pairs,
    flops, bytes, operand and accumulate transfers by where they go),
    fitted by least squares on every rank of the counting runs with the
    schedules they recorded. At another rank count the plan is rebuilt
    there: a static schedule gives every rank's count and the largest is the
    busiest's; NXTASK's schedule is not known in advance, so the mean rank's
    expected count is given (its busiest rank depends on the run's timing)."""

    def __init__(self, kind, ps, feats, counts, target_plan, nodes):
        self.kind, self.ps, self.nodes = kind, list(ps), nodes
        self.ys = [float(np.max(counts[p])) if len(counts[p]) else 0.0 for p in self.ps]
        self.target_plan = target_plan
        self.heldout_error = None
        if len(self.ps) >= 3:
            coef, _ = self._fit(self.ps[:-1], feats, counts)
            last = self.ps[-1]
            pred = float(np.max(feats[last] @ coef))
            want = self.ys[-1]
            self.heldout_error = (pred - want) / want if want else (0.0 if abs(pred) < 1e-9 else float("inf"))
        self.coef, exact = self._fit(self.ps, feats, counts)
        used = [task_model.COLUMNS[i] for i in np.nonzero(self.coef)[0]]
        self.how = "task structure (%s)%s" % (", ".join(used) or "none", "" if exact else ", least squares")

    def _fit(self, ps, feats, counts):
        return task_model.fit(self.kind, np.vstack([feats[p] for p in ps]),
                              np.concatenate([counts[p] for p in ps]))

    def busiest(self, plan, schedule=None):
        """The largest count of PLAN's units under SCHEDULE (the task_unit
        array; None: the static schedule)."""
        f = plan.static_features() if schedule is None else plan.features(schedule)
        return max(0.0, float(np.max(f @ self.coef)))

    def mean(self, plan):
        return max(0.0, float(plan.expected_mean() @ self.coef))

    def counted(self, p, node_size=None):
        """Whether a counting run had P ranks on nodes of NODE_SIZE."""
        return p in self.ps and node_size in (None, self.nodes[p])

    def at(self, p, node_size=None):
        if self.counted(p, node_size):  # the count itself
            return self.ys[self.ps.index(p)]
        plan = self.target_plan(p, node_size)
        return self.busiest(plan) if plan.static else self.mean(plan)


class TaskFetchTotal:
    """All ranks' fetches of tensor_contract's task loop (NXTASK's counter
    contention): the counted sum where counted (SUMS, a Requirement), else
    the task model's mean rank times the ranks."""

    def __init__(self, sums, req):
        self.sums, self.req = sums, req

    def at(self, p, node_size=None):
        if self.req.counted(p, node_size):
            return self.sums.at(p)
        return self.req.mean(self.req.target_plan(p, node_size)) * p


def cart_layout(app, config, sets, ranks):
    """(global points [x, y, z], process grid [px, py, pz]) of heat3d or
    poisson5pt at RANKS ranks with the deck keys SETS over CONFIG."""
    import yaml
    import study
    val = dict(sets)
    get = lambda k: yaml.safe_load(str(val[k])) if k in val else dig(config, k)  # noqa: E731
    if app == "heat3d":
        g = [int(get("heat3d.grid.n" + a)) for a in "xyz"]
        procs = get("heat3d.procs")
        dims = list(procs) if isinstance(procs, list) and procs[0] else study.process_grid(ranks, 3)
        return g, [int(d) for d in dims]
    n = int(get("poisson5pt.grid.n"))
    if str(get("poisson5pt.decomposition")) == "rows":
        return [n, n, 1], [1, ranks, 1]
    procs = get("poisson5pt.procs")
    dims = list(procs) if isinstance(procs, list) and procs[0] else study.process_grid(ranks, 2)
    return [n, n, 1], [int(d) for d in dims]


def block_counts(n, p):
    """Points of each of P blocks of N points (locus::block_span)."""
    base, rem = divmod(n, p)
    return np.array([base + (1 if c < rem else 0) for c in range(p)])


def rank_features(glob, dims, node_size):
    """(ranks x 6): 1, block points, on-node face points, on-node faces,
    off-node face points, off-node faces; rank = (cz * py + cy) * px + cx
    (x fastest, as CartDecomp), emulated nodes of NODE_SIZE consecutive
    ranks (0: one node)."""
    px, py, pz = dims
    ranks = px * py * pz
    r = np.arange(ranks)
    c = [r % px, (r // px) % py, r // (px * py)]
    sizes = [block_counts(glob[d], dims[d])[c[d]] for d in range(3)]
    out = np.zeros((ranks, 6))
    out[:, 0] = 1.0
    out[:, 1] = sizes[0] * sizes[1] * sizes[2]
    stride = [1, px, px * py]
    node = r // node_size if node_size else np.zeros(ranks, dtype=int)
    for d in range(3):
        if dims[d] < 2:
            continue
        face = out[:, 1] / sizes[d]
        for step in (-1, 1):
            has = (c[d] + step >= 0) & (c[d] + step < dims[d])
            other = np.where(has, r + step * stride[d], r)
            same = has & ((other // node_size if node_size else np.zeros(ranks, dtype=int)) == node)
            far = has & ~same
            out[:, 2] += np.where(same, face, 0.0)
            out[:, 3] += same
            out[:, 4] += np.where(far, face, 0.0)
            out[:, 5] += far
    return out


# ---------------------------------------------------------------- the machine model

def link_time(m, scope, op, n, nbytes, rounds, ranks_sharing=1):
    """LogGP-style time of n operations carrying nbytes in `rounds`
    rounds (operations of one round overlap): a latency per round, then the
    bytes over the bandwidth (shared by the ranks of a node between nodes)
    or the operations over the rate, whichever is longer."""
    if n <= 0 and nbytes <= 0:
        return 0.0
    lat = m.get("%s.%s.latency_s" % (scope, op))
    bw = m.get("%s.%s.bandwidth_Bps" % (scope, op)) / ranks_sharing
    rate = m.get("%s.message.rate_per_s" % scope) if op == "message" else float("inf")
    return min(rounds, n) * lat + max(nbytes / bw, n / rate)


def rank_bandwidth(m, rpn, footprint):
    """A rank's memory bandwidth: its core's cache's when its footprint
    fits that cache, else its share of the node's (at most a core's)."""
    if footprint and footprint <= m.get("memory.cache_bytes_core"):
        return m.get("memory.cache_bandwidth_Bps_core")
    return min(m.get("memory.bandwidth_Bps_core"), m.get("memory.bandwidth_Bps_node") / rpn)


def phase_time(m, c, ranks, rpn, iters, fetch_total, footprint=None, sharing=None):
    """{term: seconds} of one phase of the busiest rank with counts c;
    SHARING: how many such ranks share the node's link between nodes
    (default: all R of the node)."""
    sharing = sharing or rpn
    F = m.get("core_gflops") * 1e9
    bw = rank_bandwidth(m, rpn, footprint)
    t = {}
    flops, mem = c.get("flops", 0.0), c.get("memory_bytes", 0.0)
    t["flops"] = flops / F
    t["memory"] = mem / bw
    on, off = c.get("bytes_on_node", 0.0), c.get("bytes_off_node", 0.0)
    frac_off = off / (on + off) if on + off else (1.0 - min(rpn, ranks) / ranks if ranks > 1 else 0.0)
    msgs, rma = c.get("messages", 0.0), c.get("rma_ops", 0.0)
    ops = msgs + rma
    share = lambda n: (n * (1 - frac_off), n * frac_off)  # noqa: E731
    m_on, m_off = share(msgs)
    r_on, r_off = share(rma)
    # bytes by route: messages and one-sided calls in proportion to their
    # counts; bytes of no call (locus's copies on a node) at the node's get
    b_msg = (on + off) * (msgs / ops) if ops else 0.0
    b_rma = (on + off) * (rma / ops) if ops else 0.0
    t["node messages"] = link_time(m, "node", "message", m_on, b_msg * (1 - frac_off), iters)
    t["network messages"] = link_time(m, "network", "message", m_off, b_msg * frac_off, iters, sharing)
    t["node one-sided"] = link_time(m, "node", "put", r_on, b_rma * (1 - frac_off), iters)
    t["network one-sided"] = link_time(m, "network", "put", r_off, b_rma * frac_off, iters, sharing)
    if not ops:
        t["node copies"] = link_time(m, "node", "get", 0, on, 0)
        t["network messages"] = link_time(m, "network", "message", 0, off, 0, sharing)
    upd = c.get("atomic_updates", 0.0)
    a_on, a_off = share(upd)
    t["atomics"] = a_on / m.get("node.atomic_rate_per_s") + a_off / m.get("network.atomic_rate_per_s")
    fetch = c.get("atomic_fetches", 0.0)
    if fetch:
        remote = 1.0 - min(rpn, ranks) / ranks
        lat = fetch * ((1 - remote) * m.get("node.fetch_and_op_s") + remote * m.get("network.fetch_and_op_s"))
        serve = fetch_total / (m.get("network.counter_rate_per_s") if ranks > rpn else m.get(
            "node.counter_rate_per_s"))
        t["fetch-and-op latency"] = lat
        t["counter contention"] = max(0.0, serve - lat)
    coll = c.get("collectives", 0.0)
    if coll and ranks > 1:
        nodes = math.ceil(ranks / rpn)
        depth_net = math.ceil(math.log2(nodes)) if nodes > 1 else 0
        depth_node = math.ceil(math.log2(min(rpn, ranks)))
        # recursive doubling (MPICH's small allreduce, SMPI's rdb): one
        # latency per round, log2 R rounds in the node and log2 N between
        t["collectives"] = coll * (depth_net * m.get("network.message.latency_s") +
                                   depth_node * m.get("node.message.latency_s"))
    return {k: v for k, v in t.items() if v > 0}


def total_of(terms):
    """A phase's time: the kernel's roofline (flops or memory, the longer)
    plus every other term."""
    kern = max(terms.get("flops", 0.0), terms.get("memory", 0.0))
    return kern + sum(v for k, v in terms.items() if k not in ("flops", "memory"))


def dominant(terms):
    if not terms:
        return "nothing counted"
    kern = {k: v for k, v in terms.items() if k not in ("flops", "memory")}
    kern["kernel (%s-bound)" % ("flop" if terms.get("flops", 0) > terms.get("memory", 0) else "memory")] = max(
        terms.get("flops", 0.0), terms.get("memory", 0.0))
    return max(kern, key=kern.get)


# ---------------------------------------------------------------- driver

def parse_args(argv):
    ap = argparse.ArgumentParser(prog="./locus predict", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("deck", help="the app's deck (YAML)")
    ap.add_argument("--machine", required=True, help="machine file (YAML; ./locus machine writes this host's)")
    ap.add_argument("--nodes", type=int, required=True, help="nodes of the target")
    ap.add_argument("--ranks-per-node", type=int, help="ranks per node (default: the machine's cores_per_node)")
    ap.add_argument("--scaling", choices=["weak", "strong"], default="weak",
                    help="weak (default): the deck's problem on every rank; strong: the deck's problem on all")
    ap.add_argument("--steps", type=int, help="loop iterations of the target (default: the deck's limit)")
    ap.add_argument("--count-steps", type=int, default=3, help="loop iterations of a counting run (default 3)")
    ap.add_argument("--count-ranks", default=DEFAULT_COUNT_RANKS,
                    help="rank counts of the counting runs (default 1,2,4,8, and the target when it is no "
                    "larger; for a larger target weak-scaled spmv and tensor_contract also count at 3)")
    ap.add_argument("--what-if", action="append", default=[], metavar="KEY=FACTOR",
                    help="multiply a machine number, e.g. network.message.latency_s=0.5 (repeatable)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="deck override (repeatable)")
    ap.add_argument("--validate", action="store_true", help="also run the deck at N x R ranks here and compare")
    ap.add_argument("--check-counts", metavar="P[,P...]",
                    help="also count the deck here at these rank counts (emulated nodes of min(R, 2)) and compare "
                         "every requirement model's count with the counted one (e.g. 16,32)")
    ap.add_argument("--json", help="write the prediction as JSON to this file")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per run (default 900)")
    ap.add_argument("--work", default=os.path.join(ROOT, "output", "predict"),
                    help="where counting runs are kept and reused (default output/predict)")
    a = ap.parse_args(argv)
    if a.nodes < 1:
        raise UserError("--nodes: a positive number of nodes (got %d)" % a.nodes)
    if a.ranks_per_node is not None and a.ranks_per_node < 1:
        raise UserError("--ranks-per-node: a positive number (got %d)" % a.ranks_per_node)
    if a.steps is not None and a.steps < 1:
        raise UserError("--steps: a positive number (got %d)" % a.steps)
    if a.count_steps < 1:
        raise UserError("--count-steps: a positive number (got %d)" % a.count_steps)
    try:
        a.count_list = sorted({int(x) for x in a.count_ranks.split(",") if x.strip()})
    except ValueError:
        raise UserError("--count-ranks: a list of positive integers, e.g. 1,2,4,8 (got '%s')" % a.count_ranks)
    if not a.count_list or a.count_list[0] < 1:
        raise UserError("--count-ranks: a list of positive integers, e.g. 1,2,4,8 (got '%s')" % a.count_ranks)
    a.check_list = []
    if a.check_counts is not None:
        try:
            a.check_list = sorted({int(x) for x in a.check_counts.split(",") if x.strip()})
        except ValueError:
            a.check_list = []
        if not a.check_list or a.check_list[0] < 1:
            raise UserError("--check-counts: a list of positive rank counts, e.g. 16,32 (got '%s')" % a.check_counts)
    keys = {k for k, _, _ in all_keys()}
    a.changes = []
    for w in a.what_if:
        k, eq, v = w.partition("=")
        if not eq or k not in keys:
            raise UserError("--what-if %s: KEY=FACTOR with a machine key (%s)" % (w, ", ".join(sorted(keys))))
        try:
            f = float(v)
        except ValueError:
            f = -1.0
        if not f > 0:
            raise UserError("--what-if %s: the factor must be a number > 0" % w)
        a.changes.append((k, f))
    a.sets = []
    for s in a.set:
        k, eq, v = s.partition("=")
        if not eq or not k:
            raise UserError("--set %s: key=value" % s)
        a.sets.append((k, v))
    return a


def count_plan(app, a, target):
    """The counting runs' rank counts: the list given, and the target when
    it is as small as 8 ranks or the list's largest; else, for spmv's
    weak-scaled stencil, its interior count (heat3d's and poisson5pt's
    counts follow their decomposition: GridRequirement); for
    tensor_contract with the default list, 3."""
    ps = set(a.count_list)
    if target <= max(max(ps), 8):
        ps.add(target)
    elif a.scaling == "weak" and APPS[app]["interior"] and app not in CART:
        ps.add(APPS[app]["interior"])
    elif app == "tensor_contract" and a.count_ranks == DEFAULT_COUNT_RANKS:
        # an odd count: its last emulated node has one rank, so that the
        # task model's fit on all but the largest run sees ranks of more
        # than one mix of gets and accumulates (at 4 ranks every rank of a
        # static schedule has the same mix)
        ps.add(3)
    return sorted(ps)


def periodic_scale(app, config, phase, k_count, k_target):
    """For a phase that runs every few iterations (poisson5pt's residual:
    at the start, every check_every iterations and after the last), the
    factor from its count per counted iteration to its count per target
    iteration; 1 for every other phase."""
    if app != "poisson5pt" or phase != "residual":
        return 1.0
    every = int(dig(config, "poisson5pt.solver.check_every") or 1)
    checks = lambda k: 1 + k // every + (1 if k % every else 0)  # noqa: E731
    return (checks(k_target) / k_target) / (checks(k_count) / k_count)


def count_sets(app, a, config, size, k_count, p):
    """The deck keys of a counting run at P ranks."""
    sets = list(a.sets) + [(k, v) for k, v in APPS[app]["quiet"].items()] + loop_sets(app, config, k_count)
    return sets + problem_sets(app, config, a.sets, a.scaling, size, p)


def grid_models(app, a, config, size, k_count, runs, run_sets, run_nodes, per, phases):
    """{(phase, kind): GridRequirement} from the counting runs' per-rank
    counts (their HDF5 outputs)."""
    ps = sorted(runs)
    feats, counts = {}, {}
    for p in ps:
        feats[p] = rank_features(*cart_layout(app, config, run_sets[p], p), run_nodes[p])
        path = counting_path(app, a.deck, p, run_nodes[p], run_sets[p], a.work)
        k = iterations_run(app, runs[p], k_count)
        counts[p] = {c: v / k for c, v in rank_counts(path).items()}

    def target(p, node_size):
        return rank_features(*cart_layout(app, config, count_sets(app, a, config, size, k_count, p), p),
                             node_size)
    out = {}
    for ph in phases:
        for kd in KINDS:
            col = "%s.%s" % (ph, kd)
            if any(col in counts[p] and np.any(counts[p][col]) for p in ps):
                out[(ph, kd)] = GridRequirement(kd, ps, feats, {p: counts[p].get(col, np.zeros(p)) for p in ps}, target,
                                                run_nodes)
    return out


def scheduled_run(app, a, p, node, sets):
    """(summary, schedule) of tensor_contract's counting run at P ranks:
    the unit that ran each task (HDF5 task_unit; a kept run of a build that
    did not record it runs again)."""
    import h5py
    s = counting_run(app, a.deck, p, node, sets, a.timeout, a.work, ("requirements", "task_unit"))
    with h5py.File(run_h5(counting_path(app, a.deck, p, node, sets, a.work)), "r") as f:
        return s, np.array(f["task_unit"], dtype=np.int64)


def task_models(app, a, config, size, k_count, runs, run_sets, run_nodes):
    """{("contract", kind): TaskRequirement} from the counting runs'
    per-rank counts and schedules (their HDF5 outputs)."""
    ps = sorted(runs)
    feats, counts = {}, {}
    for p in ps:
        path = counting_path(app, a.deck, p, run_nodes[p], run_sets[p], a.work)
        runs[p], sched = scheduled_run(app, a, p, run_nodes[p], run_sets[p])
        plan = task_model.TaskPlan(config, run_sets[p], p, run_nodes[p])
        feats[p] = plan.features(sched)
        k = iterations_run(app, runs[p], k_count)
        counts[p] = {c: v / k for c, v in rank_counts(path).items()}

    plans = {}

    def target(p, node_size):  # one plan per target, shared by the kinds
        key = (p, node_size if node_size is not None else min(p, 2))
        if key not in plans:
            plans[key] = task_model.TaskPlan(config, count_sets(app, a, config, size, k_count, p), p, key[1])
        return plans[key]
    out = {}
    for kd in KINDS:
        col = "contract.%s" % kd
        if any(col in counts[p] and np.any(counts[p][col]) for p in ps):
            out[("contract", kd)] = TaskRequirement(kd, ps, feats, {p: counts[p].get(col, np.zeros(p)) for p in ps},
                                                    target, run_nodes)
    return out


def iterations_run(app, summary, k_count):
    """The loop iterations a counting run did (its summary's, else the
    K it was given)."""
    done = dig(summary, "results.%s" % APPS[app]["done"]) if APPS[app]["done"] else None
    return float(done) if done else float(k_count)


def per_iteration(app, runs, k_count):
    """{p: ({phase: {kind: busiest rank's count}}, {phase: {kind: sum}})}
    per loop iteration of every counting run (tensor_contract: the whole
    run)."""
    per = {}
    for p, s in runs.items():
        mx, sm = counts_of(s, app)
        k = iterations_run(app, s, k_count)
        per[p] = ({ph: {kd: v / k for kd, v in kinds.items()} for ph, kinds in mx.items()},
                  {ph: {kd: v / k for kd, v in kinds.items()} for ph, kinds in sm.items()})
    return per


def requirement_models(app, a, config, size, k_count, runs, run_sets, run_nodes, per, phases, inter):
    """({(phase, kind): model of the busiest rank's count}, {phase: model
    of the sum of its fetches}): from the decomposition (heat3d,
    poisson5pt), the task structure (tensor_contract, unless
    task_model.applies says why not), else PMNF in p."""
    ps = sorted(per)
    if app in CART:
        structural = grid_models(app, a, config, size, k_count, runs, run_sets, run_nodes, per, phases)
    elif app == "tensor_contract" and task_model.applies(config) is None:
        structural = task_models(app, a, config, size, k_count, runs, run_sets, run_nodes)
    else:
        structural = {}
    reqs, fetch_sum = {}, {}
    for ph in phases:
        for kd in KINDS:
            ys = [per[p][0].get(ph, {}).get(kd, 0.0) for p in ps]
            if (ph, kd) in structural:
                reqs[(ph, kd)] = structural[(ph, kd)]
            elif any(ys):
                reqs[(ph, kd)] = Requirement(ps, ys, inter)
        ys = [per[p][1].get(ph, {}).get("atomic_fetches", 0.0) for p in ps]
        if any(ys):
            fetch_sum[ph] = Requirement(ps, ys, None)
            if isinstance(reqs.get((ph, "atomic_fetches")), TaskRequirement):
                fetch_sum[ph] = TaskFetchTotal(fetch_sum[ph], reqs[(ph, "atomic_fetches")])
    return reqs, fetch_sum


def predict(a):
    m = load_machine(a.machine).with_changes(a.changes)
    if not os.path.isfile(a.deck):
        raise UserError("%s: no such deck" % a.deck)
    app = deck_app(a.deck)
    rpn = a.ranks_per_node or int(m.get("cores_per_node"))
    ranks = a.nodes * rpn
    config = effective_config(app, a.deck, a.sets)
    config["__deck"] = a.deck
    size = per_rank_size(app, config)
    k_target, loop_note = target_loop(app, config, a.steps)
    k_count = min(a.count_steps, k_target)
    plan = count_plan(app, a, ranks)
    runs, run_sets, run_nodes = {}, {}, {}
    for p in plan:
        run_sets[p] = count_sets(app, a, config, size, k_count, p)
        run_nodes[p] = min(rpn, 2, p) if p != ranks else min(rpn, p)
        runs[p] = counting_run(app, a.deck, p, run_nodes[p], run_sets[p], a.timeout, a.work)
    per = per_iteration(app, runs, k_count)
    ps = sorted(per)
    inter = APPS[app]["interior"] if a.scaling == "weak" else None
    phases = [ph for ph in APPS[app]["phases"] if any(ph in per[p][0] or ph in runs[p].get("timers_seconds", {})
                                                       for p in ps)]
    reqs, fetch_sum = requirement_models(app, a, config, size, k_count, runs, run_sets, run_nodes, per, phases,
                                         inter)
    # the busiest rank's footprint (weak: the largest counting run's; strong:
    # the largest run's, an upper bound for more ranks)
    footprint = float(dig(runs[max(ps)], "requirements.footprint_bytes.max") or 0) or None
    out_phases = {}
    loop_time = 0.0
    for ph in phases:
        per_run = k_target * periodic_scale(app, config, ph, k_count, k_target)
        c = {kd: r.at(ranks, min(rpn, ranks)) * per_run for (p2, kd), r in reqs.items() if p2 == ph}
        ft = fetch_sum[ph].at(ranks, min(rpn, ranks)) * k_target if ph in fetch_sum else 0.0
        off_model = reqs.get((ph, "bytes_off_node"))
        sharing = off_model.node_share(ranks, min(rpn, ranks)) if isinstance(off_model, GridRequirement) else None
        terms = phase_time(m, c, ranks, rpn, k_target, ft, footprint, sharing)
        t = total_of(terms)
        loop_time += t
        out_phases[ph] = {"seconds": t, "dominant": dominant(terms), "terms": terms, "counts": c}
    # the figure of merit: work per rank per iteration from the largest run
    big = max(ps)
    w = fom_work(runs[big])
    fom = None
    if w:
        work_iter = w[0] / (float(dig(runs[big], "results.%s" % APPS[app]["done"]) or k_count)
                            if APPS[app]["done"] else float(k_count) if APPS[app]["loop"] else 1.0)
        work = work_iter * k_target * (ranks / big if a.scaling == "weak" else 1.0)
        fom = {"value": work / loop_time if loop_time > 0 else float("inf"), "unit": w[1], "name": w[2],
               "work": work}
    models = [{"phase": ph, "kind": kd, "how": r.how, "points": dict(zip(r.ps, r.ys)),
               "heldout_error": r.heldout_error} for (ph, kd), r in sorted(reqs.items())]
    errs = [abs(x["heldout_error"]) for x in models if x["heldout_error"] is not None]
    return {"app": app, "deck": os.path.abspath(a.deck), "machine": os.path.abspath(a.machine),
            "machine_name": m.name, "what_if": dict(a.changes), "nodes": a.nodes, "ranks_per_node": rpn,
            "ranks": ranks, "scaling": a.scaling, "per_rank_size": size if a.scaling == "weak" else None,
            "loop_iterations": k_target, "loop_note": loop_note, "counting_ranks": ps,
            "counting_steps": k_count, "outside_by": ranks / max(ps) if ranks > max(ps) else None,
            "phases": out_phases, "loop_seconds": loop_time, "figure_of_merit": fom,
            "dominant": max(out_phases, key=lambda ph: out_phases[ph]["seconds"]) if out_phases else None,
            "models": models, "worst_heldout_error": max(errs) if errs else None,
            "schedule_note": schedule_note(reqs, ranks, rpn),
            "_reqs": reqs, "_count": (config, size, k_count, rpn),
            "footprint_bytes": footprint, "in_cache": bool(footprint and footprint <= m.get("memory.cache_bytes_core")),
            "bandwidth_Bps_per_rank": rank_bandwidth(m, rpn, footprint)}


def schedule_note(reqs, ranks, rpn):
    """What the counts of a dynamically scheduled task loop stand for."""
    for r in reqs.values():
        if isinstance(r, TaskRequirement) and not r.counted(ranks, min(rpn, ranks)):
            if not r.target_plan(ranks, min(rpn, ranks)).static:
                return ("NXTASK hands tasks out as ranks ask, so no schedule is known in advance: the counts are "
                        "the mean rank's expected counts (a run's busiest rank does more, by what its timing "
                        "gave it)")
            return None
    return None


def fmt_s(x):
    return "%.4g s" % x


def report(r):
    lines = ["locus predict: %s on %d node(s) x %d rank(s) = %d ranks of '%s'%s" % (
        r["app"], r["nodes"], r["ranks_per_node"], r["ranks"], r["machine_name"],
        " (what-if: %s)" % ", ".join("%s x%g" % kv for kv in r["what_if"].items()) if r["what_if"] else "")]
    lines.append("  inputs: deck %s; machine %s; %s scaling%s; %d loop iteration(s)" % (
        r["deck"], r["machine"], r["scaling"],
        " (per rank: %s)" % "x".join(map(str, r["per_rank_size"])) if r["per_rank_size"] else "",
        r["loop_iterations"]))
    lines.append("  requirement models: counted on %s rank(s), %d iteration(s) each; %s" % (
        ", ".join(map(str, r["counting_ranks"])), r["counting_steps"],
        "target %.3gx beyond the largest counted run" % r["outside_by"] if r["outside_by"] else
        "target inside the counted range (counts used as counted)"))
    if r["worst_heldout_error"] is not None and r["outside_by"]:
        lines.append("  held-out error of the requirement models (largest counting run): worst %.2f %%" % (
            100 * r["worst_heldout_error"]))
    lines.append("  memory: busiest rank's footprint %s, %s: %.3g GB/s per rank" % (
        "%.3g MB" % (r["footprint_bytes"] / 1e6) if r["footprint_bytes"] else "not counted",
        "fits its core's cache" if r["in_cache"] else "out of cache", r["bandwidth_Bps_per_rank"] / 1e9))
    for note in (r["loop_note"], r["schedule_note"]):
        if note:
            lines.append("  note: " + note)
    lines.append("  %-10s %12s  %-28s %s" % ("phase", "time", "dominant term", "terms"))
    for ph, v in r["phases"].items():
        terms = ", ".join("%s %.3g" % kv for kv in sorted(v["terms"].items(), key=lambda kv: -kv[1])[:4])
        lines.append("  %-10s %12s  %-28s %s" % (ph, fmt_s(v["seconds"]), v["dominant"], terms))
    lines.append("  timed loop: %s (largest phase: %s)" % (fmt_s(r["loop_seconds"]), r["dominant"]))
    f = r["figure_of_merit"]
    if f:
        lines.append("  figure of merit: %.4g %s (%s)" % (f["value"], f["unit"], f["name"]))
    for mdl in r["models"] if r["outside_by"] else ():
        if mdl["heldout_error"] is not None or not mdl["how"].startswith("constant"):
            e = "" if mdl["heldout_error"] is None else "  held-out %+.2f %%" % (100 * mdl["heldout_error"])
            lines.append("  model %s.%s: %s%s" % (mdl["phase"], mdl["kind"], mdl["how"], e))
    return "\n".join(lines)


def validate(a, r):
    """Runs the deck at the target here and compares (emulated nodes of R)."""
    app = r["app"]
    config, size, _, _ = r["_count"]
    sets = count_sets(app, a, config, size, r["loop_iterations"], r["ranks"])
    sets += [("runtime.node_size", str(r["ranks_per_node"])), ("output.dir", os.path.join(a.work, "runs")),
             ("output.name", "validate-%s-%d" % (app, os.getpid())), ("output.overwrite", "true")]
    rc, out, err, _ = run_app(app, a.deck, r["ranks"], sets, a.timeout)
    s = parse_summary(out)
    if rc != 0 or s is None:
        raise RuntimeError("validation run failed: %s" % app_error(err, rc))
    meas = {ph: float(v["max"]) for ph, v in (s.get("timers_seconds") or {}).items()}
    rows = []
    for ph, v in r["phases"].items():
        if ph in meas:
            rows.append((ph, v["seconds"], meas[ph]))
    f = dig(s, "results.figure_of_merit") or {}
    loop_meas = float(f.get("seconds") or sum(x[2] for x in rows))
    rows.append(("timed loop", r["loop_seconds"], loop_meas))
    if r["figure_of_merit"] and f.get("value"):
        rows.append(("figure of merit", r["figure_of_merit"]["value"], float(f["value"])))
    return rows


def check_counts(a, r):
    """Counts the deck at each rank count of --check-counts and compares
    the requirement models' busiest-rank counts per iteration with them.
    tensor_contract's task models are checked twice: the busiest rank
    given the schedule the run recorded (the requirement model itself), and
    the mean rank without one (what a prediction of an NXTASK run can say in
    advance); rows carry the measure."""
    app, reqs = r["app"], r["_reqs"]
    config, size, k_count, rpn = r["_count"]
    rows = []
    tasks = any(isinstance(req, TaskRequirement) for req in reqs.values())

    def row(p, node, ph, kd, got, want, measure):
        err = (got - want) / want if want else (0.0 if abs(got) < 1e-9 else float("inf"))
        rows.append({"ranks": p, "node_size": node, "phase": ph, "kind": kd, "modelled": got, "counted": want,
                     "error": err, "measure": measure})
    for p in a.check_list:
        node = min(rpn, 2, p)
        sets = count_sets(app, a, config, size, k_count, p)
        if tasks:
            s, sched = scheduled_run(app, a, p, node, sets)
        else:
            s = counting_run(app, a.deck, p, node, sets, a.timeout, a.work)
        mx, sm = counts_of(s, app)
        k = iterations_run(app, s, k_count)
        plan = None
        for (ph, kd), req in sorted(reqs.items()):
            want = mx.get(ph, {}).get(kd, 0.0) / k
            if isinstance(req, TaskRequirement):
                plan = plan or req.target_plan(p, node)
                if plan.static:  # known in advance: task k on unit k mod p
                    row(p, node, ph, kd, req.busiest(plan), want, "busiest")
                    continue
                row(p, node, ph, kd, req.busiest(plan, sched), want, "busiest, its schedule")
                row(p, node, ph, kd, req.mean(plan), sm.get(ph, {}).get(kd, 0.0) / k / p, "mean, no schedule")
                continue
            row(p, node, ph, kd, req.at(p, node), want, "busiest")
    return rows


MEASURES = {"busiest": "the busiest rank",
            "busiest, its schedule": "the busiest rank, from the schedule the run recorded",
            "mean, no schedule": "the mean rank (the sum over the ranks / p), expected without a schedule: what "
                                 "a prediction says in advance of NXTASK"}


def print_count_check(a, r, rows):
    print("  counted requirements against the models (fitted on %s rank(s); per iteration):" %
          ",".join(map(str, r["counting_ranks"])))
    for measure, what in MEASURES.items():
        mine = [x for x in rows if x["measure"] == measure]
        if not mine:
            continue
        print("   %s:" % what)
        print("    %-6s %-24s %14s %14s %9s" % ("ranks", "phase.kind", "model", "counted", "error"))
        for x in mine:
            print("    %-6d %-24s %14.6g %14.6g %+8.2f %%" % (x["ranks"], "%s.%s" % (x["phase"], x["kind"]),
                                                          x["modelled"], x["counted"], 100 * x["error"]))
        worst = max((abs(x["error"]) for x in mine), default=0.0)
        print("    worst |error| %.2f %% (goal <= 2 %%: %s)" % (100 * worst, "met" if worst <= 0.02 else "missed"))
    busy = {(x["ranks"], x["kind"]): x["counted"] for x in rows if x["measure"] == "busiest, its schedule"}
    excess = [busy[(x["ranks"], x["kind"])] / x["counted"] - 1 for x in rows
              if x["measure"] == "mean, no schedule" and x["counted"] and (x["ranks"], x["kind"]) in busy]
    if excess:
        print("   NXTASK's imbalance in these runs: the busiest rank %.1f-%.1f %% above the mean, by kind "
              "(it changes from run to run: the schedule follows timing)" % (100 * min(excess), 100 * max(excess)))


def main(argv=None):
    def body():
        a = parse_args(sys.argv[1:] if argv is None else argv)
        r = predict(a)
        print(report(r))
        if a.check_list:
            r["count_check"] = check_counts(a, r)
            print_count_check(a, r, r["count_check"])
        if a.validate:
            rows = validate(a, r)
            r["validation"] = [{"what": w, "predicted": p, "measured": x,
                                "error": (p - x) / x if x else None} for w, p, x in rows]
            print("  validation (the deck run here: %d rank(s), emulated nodes of %d):" % (
                r["ranks"], r["ranks_per_node"]))
            for w, p, x in rows:
                print("    %-16s predicted %-12.4g measured %-12.4g error %+.1f %%" % (
                    w, p, x, 100 * (p - x) / x if x else float("nan")))
        r.pop("_reqs")
        r.pop("_count")
        if a.json:
            write_file(a.json, json.dumps(r, indent=1, default=float) + "\n")
        return 0
    return tool_exit(body)

if __name__ == "__main__":
    sys.exit(main())
