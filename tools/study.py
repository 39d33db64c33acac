#!/usr/bin/python3
"""locus study: weak and strong scaling studies from a YAML study file.

    ./locus study STUDY.yaml [--results DIR] [--retry-failed] [--dry-run] [--plots-only]
                             [--scheduler local|slurm] [--launcher CMD] [--site FILE]

Runs every combination of ranks (or nodes x ranks per node) and swept keys
`repeats` times, keeps each run's effective deck and summary, gathers
results.csv and results.h5, and draws the plots and report.md under
results/<study>/ (see docs/user-guide.md). An interrupted study resumes:
runs already finished (keyed by a hash of their effective config, ranks and
repeat) are not run again. With --scheduler slurm the runs go to Slurm as
one batch script per run size (results/<study>/slurm/), which are followed
until they end (Ctrl-C leaves them running; the same command follows them
again) and collected exactly as a local study's; --dry-run only writes the
scripts.
"""
import argparse
import csv
import glob
import itertools
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locuslib import (ROOT, Located, UserError, app_binary, app_error, app_keys, build_dir, closest,  # noqa: E402
                      build_mpi_library, config_hash, dig, effective_config, find_file, launcher_argv,
                      launcher_template, ensure_space, parse_summary, run_app, site_config, verify_file,
                      write_file, yaml_value)

STUDY_KEYS = {
    "name": "study name (default: the file stem); results go to results/<name>/",
    "app": "the app to run (heat3d, poisson5pt, spmv, tensor_contract)",
    "deck": "base deck, relative to the study file or the repository",
    "scaling": "strong (fixed problem) or weak (fixed size per rank)",
    "ranks": "list of rank counts (all ranks on one node); or give nodes and ranks_per_node",
    "nodes": "list of node counts (an axis next to ranks_per_node; ranks = nodes x ranks_per_node). "
             "Run here, more than one node is emulated with runtime.node_size; through Slurm, real nodes",
    "ranks_per_node": "ranks per node: a number or a list (with nodes)",
    "repeats": "runs per point (median and spread are reported); default 3",
    "set": "overrides for every run: {key: value}",
    "sweep": "swept keys: {key: [values]}",
    "baseline": "ratios are taken against this variant: {swept key: value}; swept keys it leaves out "
                "keep each variant's own value (e.g. {comm.halo: rma} compares per node size)",
    "weak_size": "weak: the problem per rank (heat3d: [nx, ny, nz] per rank; poisson5pt: [n]; spmv: [nx, ny, nz], "
                 "nz grows; tensor_contract: [extent] on one rank, every extent grows as ranks^(1/indices) so the "
                 "flops per rank stay)",
    "metric": "the time the plots and tables use (slowest rank): timed_loop (default), the loop the figure of "
              "merit divides by (its seconds; its timer is results.figure_of_merit.timer); or a timer's name, "
              "e.g. total (the whole run, set-up and output included)",
    "timeout": "seconds per run before it counts as failed; default 900",
    "mpi": "MPI libraries as an axis: [mpich, openmpi]; each runs with its own build (build/, build-openmpi/: "
           "./locus build --mpi openmpi first) and may be named in baseline",
}


# The study's default time: the loop the figure of merit divides by.
TIMED_LOOP = "timed_loop"


def run_time(metric, summary):
    """(seconds, None) of a run's summary by the study's metric (the slowest
    rank's), or (None, why not)."""
    if metric == TIMED_LOOP:
        t = dig(summary, "results.figure_of_merit.seconds")
        why = "no figure of merit in the summary (its timed loop is the study's time; a refinement study has " \
              "none: give the study metric: total)"
    else:
        t = dig(summary, "timers_seconds.%s.max" % metric)
        why = "no timer '%s' in the summary" % metric
    if isinstance(t, bool) or not isinstance(t, (int, float, str)):
        return None, why
    try:
        return float(t), None
    except ValueError:
        return None, why


def validity_short(summary):
    """A run's validity for a table: "VALID", or the reasons in brief
    ("too short (0.0132 s < 1 s)", "not checked", "verdict FAIL")."""
    v = (summary or {}).get("validity")
    if not isinstance(v, dict) or "rating" not in v:
        return "not rated"
    if v["rating"] == "VALID":
        return "VALID"
    why = []
    t, least = v.get("timed_seconds"), v.get("min_timed_seconds")
    if t is None:
        why.append("no timed loop")
    elif least is not None and float(t) < float(least):
        why.append("too short (%.3g s < %g s)" % (float(t), float(least)))
    verdict = dig(summary, "validation.verdict")
    if verdict == "FAIL":
        why.append("verdict FAIL")
    elif verdict != "pass":
        why.append("not checked")
    return ", ".join(why) or "INVALID"


# ---------------------------------------------------------------- weak scaling rules per app

def process_grid(ranks, ndims):
    """The process grid [px, py, pz] heat3d and poisson5pt choose for
    `ranks` ranks when procs is auto: asked of the build's process_grid
    (locus::auto_process_grid, MPI_Dims_create), so the rule and the apps
    share one factorisation."""
    exe = os.path.join(build_dir(), "core", "process_grid")
    if not os.path.exists(exe):
        raise UserError("no built %s (run ./locus build)" % exe)
    p = subprocess.run([exe, str(ranks), str(ndims)], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise UserError("%s %d %d: %s" % (exe, ranks, ndims, p.stderr.strip() or "exit %d" % p.returncode))
    return [int(x) for x in p.stdout.split()]


def weak_heat3d(size, ranks, base=None):
    if len(size) != 3:
        raise UserError("heat3d: weak_size is [nx, ny, nz] per rank")
    procs = process_grid(ranks, 3)  # as heat3d: most blocks on z
    out = [("heat3d.procs", yaml_value(procs))]
    for i, axis in enumerate("xyz"):
        out.append(("heat3d.grid.n" + axis, str(size[i] * procs[i])))
    return out


def weak_poisson5pt(size, ranks, base=None):
    if len(size) != 1:
        raise UserError("poisson5pt: weak_size is [n]: n x n points per rank")
    # N^2 / ranks = n^2 points per rank (rounded): N = n sqrt(ranks).
    return [("poisson5pt.grid.n", str(int(round(size[0] * math.sqrt(ranks)))))]


def weak_spmv(size, ranks, base=None):
    if len(size) != 3:
        raise UserError("spmv: weak_size is [nx, ny, nz] per rank (stencil generators)")
    # rows are split in blocks of the last dimension: nz grows with the ranks
    return [("spmv.matrix.nx", str(size[0])), ("spmv.matrix.ny", str(size[1])),
            ("spmv.matrix.nz", str(size[2] * ranks))]


CONTRACTIONS = {"matmul": "ij = ik * kj", "ccsd": "abij = acik * cbkj", "triples": "abcijk = abil * lcjk"}


def contraction_indices(config):
    """(all indices, C's indices) of tensor_contract's contraction."""
    text = str(dig(config, "tensor_contract.contraction") or "ccsd")
    text = CONTRACTIONS.get(text, text)
    c = text.split("=")[0]
    return sorted(set(ch for ch in text if ch.isalpha())), [ch for ch in c if ch.isalpha()]


def weak_tensor_contract(size, ranks, base=None):
    if len(size) != 1:
        raise UserError("tensor_contract: weak_size is [extent]: every index's extent on one rank")
    # flops grow as extent^indices: extent = e * ranks^(1/indices) keeps the
    # flops per rank (rounded to whole elements)
    indices = len(contraction_indices(base or {})[0]) or 1
    return [("tensor_contract.extent", str(int(round(size[0] * ranks ** (1.0 / indices)))))]


# A new app joins studies by adding its rule here (and a deck), and its size
# to sizes_of.
WEAK_RULES = {"heat3d": weak_heat3d, "poisson5pt": weak_poisson5pt, "spmv": weak_spmv,
              "tensor_contract": weak_tensor_contract}


def sizes_of(app, config, ranks, summary=None):
    """The problem of one run: {'global_size': text, 'global_points': grid
    points, matrix rows or C elements, 'points_per_rank': that over the
    ranks}. From the effective config (and the summary, for a matrix file)."""
    g = lambda k: dig(config, k)  # noqa: E731
    text, points = "?", None
    if app == "heat3d":
        n = [int(g("heat3d.grid.n" + a) or 0) for a in "xyz"]
        text, points = "x".join(map(str, n)), n[0] * n[1] * n[2]
    elif app == "poisson5pt":
        n = int(g("poisson5pt.grid.n") or 0)
        text, points = "%dx%d" % (n, n), n * n
    elif app == "spmv":
        kind = g("spmv.matrix.generator")
        rows = dig(summary or {}, "results.matrix.rows")
        if g("spmv.matrix.source") == "file":
            text = "file %s" % os.path.basename(str(g("spmv.matrix.file")))
        elif kind == "banded":
            text, rows = "banded n=%s" % g("spmv.matrix.n"), rows or int(g("spmv.matrix.n") or 0)
        else:
            dims = [int(g("spmv.matrix.n" + a) or 0) for a in ("xy" if kind == "laplace2d" else "xyz")]
            text = "%s %s" % (kind, "x".join(map(str, dims)))
            rows = rows or math.prod(dims)
        points = int(rows) if rows is not None else None
        if points is not None:
            text += " (%d rows)" % points
    elif app == "tensor_contract":
        idx, c = contraction_indices(config)
        ext = {ch: int(g("tensor_contract.extent") or 0) for ch in idx}
        for part in str(g("tensor_contract.extents") or "").split(","):
            if "=" in part:
                k, v = part.split("=", 1)
                if k.strip() in ext and v.strip().isdigit():
                    ext[k.strip()] = int(v)
        points = math.prod(ext[ch] for ch in c) if c else None
        text = "%s extent %s tile %s (C %s)" % (g("tensor_contract.contraction"), g("tensor_contract.extent"),
                                               g("tensor_contract.tile"), "x".join(str(ext[ch]) for ch in c))
    out = {"global_size": text, "global_points": points}
    out["points_per_rank"] = round(points / ranks, 1) if points else None
    return out


# ---------------------------------------------------------------- the study file

class Study:
    """A study file, checked: every error names the file, line and key."""

    def __init__(self, path):
        doc = Located(path)
        self.path = path
        d = doc.data
        if not isinstance(d, dict):
            raise UserError("%s: a study file is a mapping of: %s" % (path, ", ".join(STUDY_KEYS)))
        # Every problem of the file at once, as a deck's are: each part is
        # read on its own; the parts that need the app (keys, baseline, weak
        # sizes) are read only when the app and deck were read.
        errors = []

        def part(fn, *args):
            try:
                fn(*args)
                return True
            except UserError as e:
                errors.extend(getattr(e, "problems", [str(e)]))
                return False

        part(doc.check_keys, d, STUDY_KEYS, "study")
        missing = [k for k in ("app", "deck") if k not in d]
        errors += ["%s: missing study key '%s' (%s)" % (path, k, STUDY_KEYS[k]) for k in missing]
        app_ok = not missing and part(self._read_app, doc, d)
        self.scaling = str(d.get("scaling", "strong"))
        if self.scaling not in ("strong", "weak"):
            errors.append("%s: scaling: must be strong or weak (got %s)" % (doc.where("scaling"), self.scaling))
        if ("ranks" in d) == ("nodes" in d):
            errors.append("%s: give either ranks (one node) or nodes with ranks_per_node" % path)
            points_ok = False
        else:
            points_ok = part(self._read_points, doc, d)
        self.repeats = d.get("repeats", 3)
        if not isinstance(self.repeats, int) or isinstance(self.repeats, bool) or self.repeats < 1:
            errors.append("%s: repeats: must be a positive integer (got %s)" % (doc.where("repeats"), self.repeats))
        self.timeout = d.get("timeout", 900)
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not self.timeout > 0:
            errors.append("%s: timeout: must be a positive number of seconds (got %s)" % (
                doc.where("timeout"), self.timeout))
        self.metric = str(d.get("metric", TIMED_LOOP))
        self.metric_where = doc.where("metric")
        if not self.metric.strip() or "." in self.metric:
            errors.append("%s: metric: %s or a timer's name such as total (got '%s')" % (
                doc.where("metric"), TIMED_LOOP, self.metric))
        if app_ok and part(self._read_keys, doc, d):
            part(self._read_mpi, doc, d)
            part(self._read_baseline, doc, d)
            if points_ok:
                part(self._read_weak_size, doc, d)
        if errors:
            raise UserError("\n".join(errors) if len(errors) == 1 else
                            "%d problems in the study file:\n  %s" % (len(errors), "\n  ".join(errors)))

    def _read_app(self, doc, d):
        """name, app and deck."""
        path = self.path
        self.name = str(d.get("name") or os.path.splitext(os.path.basename(path))[0])
        self.app = str(d["app"])
        if self.app not in WEAK_RULES:
            raise UserError("%s: app: unknown app '%s' (known: %s)" % (doc.where("app"), self.app,
                                                                   ", ".join(WEAK_RULES)))
        self.deck = find_file(str(d["deck"]), os.path.dirname(os.path.abspath(path)))
        if not self.deck:
            raise UserError("%s: deck: %s not found (relative to the study file or the repository)" %
                            (doc.where("deck"), d["deck"]))

    def _read_points(self, doc, d):
        """The (ranks, nodes, ranks per node) of every point: ranks on one
        node, or nodes x ranks_per_node."""
        def int_list(key, v):
            if isinstance(v, int) and not isinstance(v, bool):
                v = [v]
            if not isinstance(v, list) or not v or not all(isinstance(r, int) and not isinstance(r, bool) and r > 0
                                                           for r in v):
                raise UserError("%s: %s: must be a non-empty list of positive integers (got %s)" %
                                (doc.where(key), key, v))
            return sorted(set(v))

        self.by_node = "nodes" in d
        if self.by_node:
            if "ranks_per_node" not in d:
                raise UserError("%s: nodes needs ranks_per_node (%s)" % (doc.where("nodes"), STUDY_KEYS["ranks_per_node"]))
            nodes = int_list("nodes", d["nodes"])
            ppns = int_list("ranks_per_node", d["ranks_per_node"])
            self.points = sorted((n * p, n, p) for n in nodes for p in ppns)
        else:
            if "ranks_per_node" in d:
                raise UserError("%s: ranks_per_node goes with nodes, not ranks" % doc.where("ranks_per_node"))
            self.points = [(r, 1, r) for r in int_list("ranks", d["ranks"])]
        self.ranks = sorted(set(p[0] for p in self.points))
        if len(self.ranks) != len(self.points):
            raise UserError("%s: two points with the same rank count (nodes x ranks_per_node): the plots are "
                            "over ranks; sweep one of nodes and ranks_per_node" % doc.where("nodes"))

    def _read_keys(self, doc, d):
        """set (fixed deck keys) and sweep (keys with lists of values)."""
        keys = {k["path"]: k for k in app_keys(self.app)}
        errors = []  # every bad key of both sections at once

        def check_key(section, key):
            if key not in keys:
                hint = closest(key, list(keys))
                errors.append("%s: %s: %s is not a %s deck key%s" % (
                    doc.where(section + "/" + key), section, key, self.app,
                    " (did you mean '%s'?)" % hint if hint else ""))

        fixed = d.get("set") or {}
        if not isinstance(fixed, dict):
            raise UserError("%s: set: must be a mapping {key: value}" % doc.where("set"))
        for k in fixed:
            check_key("set", k)
        self.fixed = [(k, yaml_value(v)) for k, v in fixed.items()]
        sweep = d.get("sweep") or {}
        if not isinstance(sweep, dict):
            raise UserError("%s: sweep: must be a mapping {key: [values]}" % doc.where("sweep"))
        for k, v in sweep.items():
            check_key("sweep", k)
            if not isinstance(v, list) or not v:
                errors.append("%s: sweep: %s: must be a non-empty list of values (got %s)" %
                              (doc.where("sweep/" + k), k, v))
        if errors:
            e = UserError("\n".join(errors))
            e.problems = errors
            raise e
        self.sweep = {k: list(v) for k, v in sweep.items()}

    def _read_mpi(self, doc, d):
        """mpi: MPI libraries as the first swept axis, each with its build."""
        mpis = d.get("mpi")
        if mpis is None:
            return
        if isinstance(mpis, str):
            mpis = [mpis]
        if not isinstance(mpis, list) or not mpis or any(m not in MPI_BUILDS for m in mpis) or \
                len(set(mpis)) != len(mpis):
            raise UserError("%s: mpi: a list of MPI libraries out of %s (got %s)" % (
                doc.where("mpi"), ", ".join(MPI_BUILDS), mpis))
        for m in mpis:
            exe = os.path.join(build_of(m), "apps", self.app, self.app)
            if not os.path.exists(exe):
                raise UserError("%s: mpi: no %s build of %s (%s): run ./locus build --mpi %s" % (
                    doc.where("mpi"), m, self.app, exe, m))
        # the library is the first swept "key" (not a deck key: sets_for leaves it out)
        self.sweep = dict([("mpi", list(mpis))] + list(self.sweep.items()))

    def _read_baseline(self, doc, d):
        """baseline: one swept value per key, the variant others are compared with."""
        self.baseline = d.get("baseline")
        if self.baseline is None:
            return
        if not isinstance(self.baseline, dict) or not self.baseline:
            raise UserError("%s: baseline: must be a mapping {swept key: value}" % doc.where("baseline"))
        for k, v in self.baseline.items():
            if k not in self.sweep or v not in self.sweep[k]:
                raise UserError("%s: baseline: %s=%s is not one of the swept values" %
                                (doc.where("baseline/" + k), k, v))

    def _read_weak_size(self, doc, d):
        """weak_size: the problem per rank of a weak-scaling study."""
        self.weak_size = d.get("weak_size")
        if self.scaling != "weak":
            return
        if not isinstance(self.weak_size, list) or not all(isinstance(x, int) and x > 0 for x in self.weak_size):
            raise UserError("%s: weak scaling needs weak_size: a list of positive integers (%s)" %
                            (doc.where("weak_size") if self.weak_size is not None else self.path,
                             STUDY_KEYS["weak_size"]))
        WEAK_RULES[self.app](self.weak_size, 1, self.base_config())  # checks the length

    def base_config(self):
        """The effective config of the deck with the study's set (for weak
        rules that depend on it)."""
        if not hasattr(self, "_base"):
            self._base = effective_config(self.app, self.deck, self.fixed) if self.app == "tensor_contract" else {}
        return self._base

    def variants(self):
        """Every combination of swept values, as a tuple of (key, value)."""
        keys = list(self.sweep)
        return [tuple((k, hashable(v)) for k, v in zip(keys, combo))
                for combo in itertools.product(*(self.sweep[k] for k in keys))]

    def sets_for(self, variant, ranks, nodes=1, ppn=None, emulate=False):
        sets = list(self.fixed)
        if self.scaling == "weak":
            sets += WEAK_RULES[self.app](self.weak_size, ranks, self.base_config())
        sets += [(k, yaml_value(v)) for k, v in variant if k != "mpi"]
        if emulate and nodes > 1:
            sets.append(("runtime.node_size", str(ppn)))
        return sets


# The build of each MPI library (./locus build [--mpi openmpi]); the
# library of the build the driver chose is that build.
MPI_BUILDS = {"mpich": "build", "openmpi": "build-openmpi"}


def build_of(mpi):
    if build_mpi_library() == mpi:
        return build_dir()
    return os.path.join(ROOT, MPI_BUILDS[mpi])


class using_build:
    """Runs a block with the build of a variant's MPI library (the `mpi`
    axis); without one, the build the driver chose."""

    def __init__(self, variant):
        self.mpi = dict(variant).get("mpi")
        self.build = build_of(self.mpi) if self.mpi else None

    def __enter__(self):
        self.saved = os.environ.get("LOCUS_BUILD_DIR")
        if self.mpi:
            os.environ["LOCUS_BUILD_DIR"] = self.build
        return self

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("LOCUS_BUILD_DIR", None)
        else:
            os.environ["LOCUS_BUILD_DIR"] = self.saved
        return False


def hashable(v):
    """Swept values as they are compared and shown: lists as their deck text."""
    return yaml_value(v) if isinstance(v, (list, dict)) else v


def baseline_of(study, variant):
    """The variant a variant is compared with, or None without a baseline."""
    if not study.baseline:
        return None
    own = dict(variant)
    return tuple((k, hashable(study.baseline[k]) if k in study.baseline else own[k]) for k in study.sweep)


def label(variant):
    return ", ".join("%s=%s" % (k.split(".")[-1], v) for k, v in variant) or "run"


# ---------------------------------------------------------------- running

def plan_runs(study, scheduler):
    """Every run of the study, in the order they run: dicts with the
    variant, ranks, nodes, ranks per node, repeat, deck overrides, effective
    config and run id."""
    # Repeats outermost and variants innermost: machine noise hits every
    # variant alike, as in the benchmarks.
    plan = []
    configs = {}
    points = [(r, n, p, rep) for rep in range(study.repeats) for (r, n, p) in study.points]
    total = len(points) * len(study.variants())
    for rank_count, nodes, ppn, rep in points:
        for variant in study.variants():
            sets = study.sets_for(variant, rank_count, nodes, ppn, emulate=(scheduler == "local"))
            mpi = dict(variant).get("mpi")
            key = (tuple(sets), mpi)
            if key not in configs:
                try:
                    with using_build(variant):
                        configs[key] = effective_config(study.app, study.deck, sets)
                except UserError as e:
                    raise UserError("%s: variant %s at %d ranks: %s" % (study.path, label(variant), rank_count, e))
            config = configs[key]
            run_id = "%s-np%d%s-r%d" % (config_hash(config, "mpi=" + mpi if mpi else ""), rank_count,
                                        "-N%d" % nodes if study.by_node else "", rep)
            # Ranks per node go to the launcher only where the nodes are real
            # (Slurm); a local study emulates them (runtime.node_size) on
            # this host, where a per-node mapping would refuse the job.
            launch_ppn = ppn if study.by_node and scheduler != "local" else None
            plan.append({"variant": variant, "ranks": rank_count, "nodes": nodes, "ppn": ppn, "repeat": rep,
                         "launch_ppn": launch_ppn, "sets": sets, "config": config, "id": run_id,
                         "size": sizes_of(study.app, config, rank_count),
                         "tag": "[%d/%d] %s, %d rank%s%s, repeat %d" % (
                             len(plan) + 1, total, label(variant), rank_count, "" if rank_count == 1 else "s",
                             " on %d nodes" % nodes if study.by_node else "", rep + 1)})
    return plan


def load_record(results, item):
    path = os.path.join(results, "runs", item["id"], "run.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def execute(study, results, item):
    """Runs one planned run with the launcher (here, or inside a Slurm
    job), keeping its deck, logs, summary and record under runs/<id>/."""
    rdir = os.path.join(results, "runs", item["id"])
    os.makedirs(rdir, exist_ok=True)
    write_file(os.path.join(rdir, "deck.yaml"), yaml.safe_dump(item["config"], sort_keys=False))
    out_sets = item["sets"] + [("output.dir", os.path.join(rdir, "out")), ("output.overwrite", "true"),
                               ("name", "%s-%s" % (study.name, item["id"]))]
    with using_build(item["variant"]):
        rc, out, err, secs = run_app(study.app, study.deck, item["ranks"], out_sets, study.timeout,
                                     log_prefix=os.path.join(rdir, "run"), ppn=item["launch_ppn"])
    if rc in (130, 143, -2, -15):
        # interrupted (Ctrl-C reaches the ranks too) or terminated: not a
        # result; no record, so that resuming runs it again
        raise KeyboardInterrupt
    summary = parse_summary(out)
    status, error = "ok", ""
    if rc != 0 or summary is None:
        status = "failed"
        error = app_error(err, rc)
        if summary is not None and dig(summary, "validation.verdict") == "FAIL":
            error = "verdict FAIL: " + error
    seconds, why = run_time(study.metric, summary) if status == "ok" else (0.0, "")
    if seconds is None:
        # the study file names a timer the app does not have: found at the
        # first run, before any record says "ok"
        raise UserError("%s: metric: %s; the timers of %s: %s (or %s, the default)" % (
            study.metric_where, why, study.app, ", ".join(summary.get("timers_seconds") or {}), TIMED_LOOP))
    if summary is not None:
        write_file(os.path.join(rdir, "summary.yaml"), yaml.safe_dump(summary, sort_keys=False))
    # The run's HDF5 outputs against their checksums (every attribute's
    # CRC-32, every dataset's Fletcher32): a damaged output is no result.
    outputs = sorted(glob.glob(os.path.join(rdir, "out", "*.h5")))
    damaged = [p for o in outputs for p in verify_file(o)] if status == "ok" else []
    if damaged:
        status, error = "failed", "output damaged: " + "; ".join(damaged)
    rec = {"id": item["id"], "ranks": item["ranks"], "nodes": item["nodes"], "ppn": item["ppn"],
           "repeat": item["repeat"], "variant": [[k, v] for k, v in item["variant"]],
           "status": status, "error": error, "seconds": round(secs, 3), "exit": rc,
           "outputs_verified": len(outputs) if status == "ok" else 0,
           "cores": os.cpu_count() or 1, "host": os.uname().nodename,
           "job": os.environ.get("SLURM_JOB_ID", "")}
    write_file(os.path.join(rdir, "run.json"), json.dumps(rec, indent=1))
    print("%s: %s in %.1f s%s" % (item["tag"], status, secs, (" (" + error + ")") if error else ""), flush=True)
    return rec


def complete(results, item, rec):
    """A record as the tables and plots use it."""
    rec = dict(rec)
    rec["variant"] = tuple((k, hashable(v)) for k, v in rec["variant"])
    rec.setdefault("nodes", item["nodes"])
    rec.setdefault("ppn", item["ppn"])
    rec["oversubscribed"] = rec["ppn"] > rec.get("cores", os.cpu_count() or 1)
    summ_path = os.path.join(results, "runs", item["id"], "summary.yaml")
    rec["summary"] = None
    if os.path.exists(summ_path):
        with open(summ_path) as f:
            rec["summary"] = yaml.safe_load(f)
    rec["config"] = item["config"]
    return rec


def pending(plan, results, retry_failed):
    out = []
    for item in plan:
        rec = load_record(results, item)
        if rec is None or (rec["status"] != "ok" and retry_failed):
            out.append(item)
    return out


def run_all(study, results, retry_failed, dry_run, plots_only=False):
    plan = plan_runs(study, "local")
    todo = set(i["id"] for i in pending(plan, results, retry_failed))
    records = []
    for item in plan:
        if item["id"] not in todo:
            rec = load_record(results, item)
            print("%s: done before (%s), skipped" % (item["tag"], rec["status"]), flush=True)
        elif dry_run:
            sz = item["size"]
            print("%s: would run %s (global %s, %s per rank)" % (
                item["tag"], item["id"], sz["global_size"],
                "%g points" % sz["points_per_rank"] if sz["points_per_rank"] is not None else "?"), flush=True)
            continue
        elif plots_only:
            print("%s: not run yet, left out" % item["tag"], flush=True)
            continue
        else:
            rec = execute(study, results, item)
        records.append(complete(results, item, rec))
    return records


# ---------------------------------------------------------------- Slurm

SLURM_POLL = float(os.environ.get("LOCUS_SLURM_POLL", "3"))


def slurm_dir(results):
    return os.path.join(results, "slurm")


def load_jobs(results):
    path = os.path.join(slurm_dir(results), "jobs.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def save_jobs(results, jobs):
    path = os.path.join(slurm_dir(results), "jobs.json")
    write_file(path, json.dumps(jobs, indent=1))


def slurm_cmd(cmd):
    """Runs a Slurm command; its own error as a UserError."""
    import shutil
    import subprocess
    if not shutil.which(cmd[0]):
        raise UserError("%s not found: --scheduler slurm needs Slurm's commands on PATH" % cmd[0])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise UserError("%s failed: %s" % (" ".join(cmd), (p.stderr or p.stdout).strip()))
    return p.stdout


def batch_script(study, results, group, items, site, launcher):
    """One batch script for the runs of one size (nodes, ranks per node)."""
    ranks, nodes, ppn, mpi = group
    sl = site.get("slurm") or {}
    name = "locus-%s-np%d%s%s" % (study.name, ranks, "-N%d" % nodes if study.by_node else "",
                                  "-" + mpi if mpi else "")
    # without a site time limit: every run's timeout, plus five minutes
    minutes = max(5, int(math.ceil(len(items) * study.timeout / 60.0)) + 5)
    lines = ["#!/bin/bash",
             "# written by ./locus study --scheduler slurm (%s); runs %d run%s of study %s" % (
                 os.path.relpath(os.path.abspath(study.path), ROOT), len(items), "" if len(items) == 1 else "s",
                 study.name),
             "#SBATCH --job-name=%s" % name,
             "#SBATCH --nodes=%d" % nodes,
             "#SBATCH --ntasks=%d" % ranks,
             "#SBATCH --ntasks-per-node=%d" % ppn,
             "#SBATCH --time=%s" % (sl["time"] if "time" in sl else "%d" % minutes),
             "#SBATCH --output=%s/%s-%%j.out" % (slurm_dir(results), name)]
    for k in ("account", "partition", "qos", "constraint"):
        if k in sl:
            lines.append("#SBATCH --%s=%s" % (k, sl[k]))
    for extra in sl.get("sbatch", []):
        lines.append("#SBATCH " + extra)
    lines.append("set -e")
    for m in sl.get("modules", []):
        lines.append("module load %s" % m)
    lines += list(sl.get("setup", []))
    import shlex
    lines += ["export LOCUS_BUILD_DIR=%s" % shlex.quote(build_of(mpi) if mpi else build_dir()),
              "export LOCUS_LAUNCHER=%s" % shlex.quote(launcher),
              "export LOCUS_TTY=0",
              "exec %s %s %s --results %s --scheduler local --execute %s" % (
                  shlex.quote(sys.executable), shlex.quote(os.path.abspath(__file__)),
                  shlex.quote(os.path.abspath(study.path)), shlex.quote(results),
                  " ".join(i["id"] for i in items)), ""]
    path = os.path.join(slurm_dir(results), "%s.sbatch" % name)
    write_file(path, "\n".join(lines))
    return path


def job_states(ids):
    """{job id: state} of the jobs Slurm still lists (queued or running)."""
    if not ids:
        return {}
    out = slurm_cmd(["squeue", "-h", "-o", "%i %T", "-j", ",".join(ids)])
    states = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1]
    return states


def job_end(job):
    """(state, exit code) of an ended job while Slurm remembers it."""
    import subprocess
    p = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True)
    state = exit_code = ""
    for tok in p.stdout.split():
        if tok.startswith("JobState="):
            state = tok.split("=", 1)[1]
        elif tok.startswith("ExitCode="):
            exit_code = tok.split("=", 1)[1]
    return state or "gone", exit_code


def run_slurm(study, results, retry_failed, dry_run, site):
    """Writes one batch script per run size, submits them with sbatch,
    follows the jobs, then collects the runs as a local study does. Jobs of
    an interrupted study are followed again, not resubmitted."""
    plan = plan_runs(study, "slurm")
    todo = pending(plan, results, retry_failed)
    todo_ids = set(i["id"] for i in todo)
    for item in plan:
        if item["id"] not in todo_ids:
            print("%s: done before (%s), skipped" % (item["tag"], load_record(results, item)["status"]), flush=True)
    launcher = os.environ.get("LOCUS_LAUNCHER") or site.get("launcher") or "srun"
    if "srun" not in launcher.split()[0] and "{n}" not in launcher:
        print("note: launcher '%s' inside Slurm jobs (srun is the usual one)" % launcher, flush=True)
    os.makedirs(slurm_dir(results), exist_ok=True)
    jobs = {} if dry_run else load_jobs(results)
    live = job_states(list(jobs)) if jobs else {}
    waiting = set()
    for job, runs in jobs.items():
        if job in live:
            waiting.update(runs["runs"])
    groups = {}
    for item in todo:
        if item["id"] in waiting:
            continue
        groups.setdefault((item["ranks"], item["nodes"], item["ppn"], dict(item["variant"]).get("mpi") or ""),
                          []).append(item)
    for group, items in sorted(groups.items()):
        script = batch_script(study, results, group, items, site, launcher)
        if dry_run:
            print("wrote %s (%d run%s; not submitted)" % (script, len(items), "" if len(items) == 1 else "s"))
            continue
        out = slurm_cmd(["sbatch", "--parsable", script]).strip()
        job = out.split(";")[0]
        jobs[job] = {"runs": [i["id"] for i in items], "script": script}
        save_jobs(results, jobs)
        print("submitted job %s: %s (%d run%s)" % (job, os.path.basename(script), len(items),
                                                  "" if len(items) == 1 else "s"), flush=True)
    if dry_run:
        return None
    # follow
    ours = [j for j, r in jobs.items() if any(i["id"] in r["runs"] for i in todo)]
    last = {}
    try:
        while True:
            states = job_states(ours)
            for j in ours:
                st = states.get(j, "ENDED")
                if last.get(j) != st:
                    print("job %s: %s" % (j, st.lower()), flush=True)
                    last[j] = st
            if not states:
                break
            time.sleep(SLURM_POLL)
    except KeyboardInterrupt:
        print("\ninterrupted: the jobs (%s) stay in Slurm; run the same command again to follow and collect them"
              % ", ".join(ours), file=sys.stderr)
        raise
    ended = {j: job_end(j) for j in ours}
    records = []
    for item in plan:
        rec = load_record(results, item)
        if rec is None:
            job = next((j for j in ours if item["id"] in jobs[j]["runs"]), None)
            state, code = ended.get(job, ("not submitted", ""))
            rec = {"id": item["id"], "ranks": item["ranks"], "nodes": item["nodes"], "ppn": item["ppn"],
                   "repeat": item["repeat"], "variant": [[k, v] for k, v in item["variant"]], "status": "failed",
                   "error": "job %s ended (%s%s) before this run finished; run the study again to resubmit it" % (
                       job, state.lower(), ", exit " + code if code else ""), "seconds": 0, "exit": -1}
            print("%s: %s" % (item["tag"], rec["error"]), flush=True)
        records.append(complete(results, item, rec))
    return records


def measure_machine(study, results, ranks, ppn=None, name="machine.yaml"):
    """The machine descriptor and STREAM triad bandwidth (`APP --machine`
    with the launcher on `ranks` ranks, all measuring at once), kept as
    results/<name>; None when it cannot be measured (said, not fatal)."""
    import subprocess
    cmd = launcher_argv(ranks, launcher_template(ppn=ppn) if ppn else None) + [app_binary(study.app), "--machine"]
    # the study started these ranks: the descriptor's launch_line says how
    env = dict(os.environ, LOCUS_LAUNCH_LINE=" ".join(shlex.quote(c) for c in cmd))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        print("note: no machine descriptor (%s)" % e, file=sys.stderr)
        return None
    try:
        m = yaml.safe_load(p.stdout[p.stdout.find("locus_machine:"):])["locus_machine"] if p.returncode == 0 else None
    except (yaml.YAMLError, TypeError, KeyError):
        m = None
    if not m:
        print("note: no machine descriptor (%s)" % app_error(p.stderr, p.returncode), file=sys.stderr)
        return None
    path = os.path.join(results, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_file(path, yaml.safe_dump(m, sort_keys=False))
    return m


def load_machine(results):
    """The study's machine descriptor: machine.yaml (a local study), else
    the first a Slurm job measured (slurm/machine-JOB.yaml)."""
    paths = [os.path.join(results, "machine.yaml")] + sorted(glob.glob(os.path.join(results, "slurm", "machine-*.yaml")))
    for p in paths:
        if os.path.exists(p):
            with open(p) as f:
                return yaml.safe_load(f), os.path.relpath(p, results)
    return None, None


def execute_ids(study, results, ids):
    """Inside a batch job: runs the given runs of the study (--execute)."""
    plan = {i["id"]: i for i in plan_runs(study, "slurm")}
    job = os.environ.get("SLURM_JOB_ID", "local")
    first = plan[ids[0]] if ids and ids[0] in plan else None
    if first:
        with using_build(first["variant"]):
            measure_machine(study, results, first["ranks"], first["launch_ppn"],
                            os.path.join("slurm", "machine-%s.yaml" % job))
    missing = [i for i in ids if i not in plan]
    if missing:
        raise UserError("--execute: no run %s in this study (did the study file change since the "
                        "scripts were written?)" % ", ".join(missing))
    failed = 0
    for i in ids:
        rec = execute(study, results, plan[i])
        failed += rec["status"] != "ok"
    return 1 if failed else 0


# ---------------------------------------------------------------- gathering

def flatten_results(tree, prefix="results_"):
    out = {}
    for k, v in (tree or {}).items():
        if k == "figure_of_merit":
            continue  # its own columns
        if isinstance(v, bool):
            out[prefix + k] = int(v)
        elif isinstance(v, (int, float)):
            out[prefix + k] = v
        elif isinstance(v, str):
            out[prefix + k] = v
    return out


def requirement_columns(req):
    """The counted requirements of a run's summary (docs/outputs.md,
    "requirements") as columns: count_<phase>_<kind>, each kind's sum over
    the ranks in each phase (0 where nothing was counted), count_all_<kind>
    over every phase, and count_footprint_bytes_max, the largest rank's
    memory footprint. No columns for a summary without them (an older build)."""
    if not isinstance(req, dict):
        return {}
    kinds = req.get("kinds") or []

    def sums(counts):
        counts = counts or {}
        return {k: (counts.get(k) or {}).get("sum", 0) for k in kinds}

    out = {}
    for phase, counts in (req.get("phases") or {}).items():
        for k, v in sums(counts).items():
            out["count_%s_%s" % (phase, k)] = v
    for k, v in sums(req.get("all_phases")).items():
        out["count_all_%s" % k] = v
    out["count_footprint_bytes_max"] = (req.get("footprint_bytes") or {}).get("max")
    return out


def rows_of(study, records):
    rows, timer_names = [], []
    for rec in records:
        row = {"run_id": rec["id"], "ranks": rec["ranks"]}
        if study.by_node:
            row["nodes"] = rec["nodes"]
            row["ranks_per_node"] = rec["ppn"]
        # the problem: global and per rank (weak scaling changes it per point)
        row.update(sizes_of(study.app, rec.get("config") or {}, rec["ranks"], rec["summary"]))
        row.update({"oversubscribed": int(rec["oversubscribed"]), "repeat": rec["repeat"],
                    "variant": label(rec["variant"])})
        for k, v in rec["variant"]:
            row[k] = v
        row["status"] = rec["status"]
        row["error"] = rec["error"]
        row["outputs_verified"] = rec.get("outputs_verified", "")  # HDF5 files checked against their checksums
        s = rec["summary"] or {}
        row["verdict"] = dig(s, "validation.verdict") or ""
        # the app's figure of merit (the whole timed solve), then the rest
        fom = dig(s, "results.figure_of_merit") or {}
        row["figure_of_merit"] = fom.get("value")
        row["figure_of_merit_unit"] = fom.get("unit", "")
        row["figure_of_merit_name"] = fom.get("name", "")
        row["figure_of_merit_seconds"] = fom.get("seconds")
        row["figure_of_merit_timer"] = fom.get("timer", "")
        # the study's time of this run (its metric, slowest rank)
        row["time_seconds"] = run_time(study.metric, s)[0] if rec["status"] == "ok" else None
        v = s.get("validity") if isinstance(s.get("validity"), dict) else {}
        row["validity"] = v.get("rating", "")
        row["validity_reason"] = v.get("reason", "")
        for name, t in (s.get("timers_seconds") or {}).items():
            if name not in timer_names:
                timer_names.append(name)
            for stat in ("min", "avg", "max"):
                row["timer_%s_%s" % (name, stat)] = t.get(stat)
        row.update(flatten_results(s.get("results")))
        row.update(requirement_columns(s.get("requirements")))
        rows.append(row)
    columns = []
    for r in rows:
        for k in r:
            if k not in columns:
                columns.append(k)
    return rows, columns, timer_names


def write_tables(results, rows, columns):
    import io
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=columns)
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c, "") for c in columns})
    write_file(os.path.join(results, "results.csv"), buf.getvalue())
    tmp = os.path.join(results, "results.h5.tmp")
    # the space first: the table's values (at most its CSV size in binary,
    # strings padded) and HDF5's metadata
    ensure_space(tmp, 2 * len(buf.getvalue()) + 64 * len(columns) * max(1, len(rows)) + 256 * 1024)
    try:
        write_h5_table(tmp, rows, columns)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise UserError("writing %s failed (%s); nothing was written under %s"
                        % (tmp, e, os.path.join(results, "results.h5")))
    os.replace(tmp, os.path.join(results, "results.h5"))


def write_h5_table(tmp, rows, columns):
    import h5py
    import numpy as np
    with h5py.File(tmp, "w") as h:
        h.attrs["columns"] = ",".join(columns)
        for c in columns:
            vals = [r.get(c) for r in rows]
            if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
                # counts (ranks, repeat, nodes, ...) stay integers
                h[c] = np.array(vals, dtype=np.int64)
            elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals if v is not None) and \
                    any(v is not None for v in vals):
                h[c] = np.array([np.nan if v is None else float(v) for v in vals])
            else:
                h[c] = np.array(["" if v is None else str(v) for v in vals], dtype=h5py.string_dtype())


def aggregate(study, records):
    """{(variant, ranks): {'median', 'min', 'max', 'n', 'failed', 'timers', 'validity'}} of the metric."""
    agg = {}
    for rec in records:
        a = agg.setdefault((rec["variant"], rec["ranks"]), {"values": [], "failed": [], "timers": {}, "fom": [],
                                                            "total_max": [], "within": {}, "validity": []})
        if rec["status"] != "ok":
            a["failed"].append(rec)
            continue
        t, why = run_time(study.metric, rec["summary"])
        if t is None:
            a["failed"].append(dict(rec, error=why))
            continue
        a["values"].append(t)
        a["validity"].append(validity_short(rec["summary"]))
        fom = dig(rec["summary"], "results.figure_of_merit.value")
        if isinstance(fom, (int, float)) and not isinstance(fom, bool):
            a["fom"].append(float(fom))
        for name, v in (rec["summary"].get("timers_seconds") or {}).items():
            a["timers"].setdefault(name, []).append(float(v["avg"]))
            if "within" in v:
                a["within"][name] = v["within"] if isinstance(v["within"], list) else [v["within"]]
        total = dig(rec["summary"], "timers_seconds.total.max")
        if total is not None:
            a["total_max"].append(float(total))
    for a in agg.values():
        v = a["values"]
        a["n"] = len(v)
        a["median"] = statistics.median(v) if v else None
        a["min"] = min(v) if v else None
        a["max"] = max(v) if v else None
        a["timer_median"] = {k: statistics.median(x) for k, x in a["timers"].items()}
        a["total_max_median"] = statistics.median(a["total_max"]) if a["total_max"] else None
        f = a["fom"]
        a["fom_median"] = statistics.median(f) if f else None
        a["fom_min"] = min(f) if f else None
        a["fom_max"] = max(f) if f else None
    return agg


# ---------------------------------------------------------------- plots and report

def variant_colours(variants):
    """One colour per variant, the same in every plot (and in
    compare-studies): matplotlib's tab10 in the order of the study's
    variants."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cmap = plt.get_cmap("tab10")
    return {v: cmap(i % 10) for i, v in enumerate(variants)}


def metric_label(study, records):
    """The study's time in words, for plots and the report: "timed loop
    (solve)" (the figure of merit's timer, from the first run that names
    it) or the timer's name."""
    if study.metric != TIMED_LOOP:
        return study.metric
    for r in records:
        t = dig(r.get("summary") or {}, "results.figure_of_merit.timer")
        if t:
            return "timed loop (%s)" % t
    return "timed loop"


def fom_definition(records):
    """The figure of merit's name, unit and what it divides by (the first
    run that has one), or None."""
    for r in records:
        f = dig(r.get("summary") or {}, "results.figure_of_merit")
        if isinstance(f, dict) and "unit" in f:
            return f
    return None


class Plotter:
    """The study's figures (PNG and SVG in the results directory), one
    method a figure; the names of the figures drawn are in `files`."""

    def __init__(self, study, agg, results, records=()):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
        self.plt, self.ticker = plt, matplotlib.ticker
        self.study, self.agg, self.results = study, agg, results
        self.cores = os.cpu_count() or 1
        self.variants = study.variants()
        self.colour = variant_colours(self.variants)
        self.metric = metric_label(study, records)
        self.files = []

    def save(self, fig, name):
        import io
        for ext in ("png", "svg"):
            buf = io.BytesIO()  # rendered first: the file is written once its size is known
            fig.savefig(buf, format=ext, dpi=110, bbox_inches="tight")
            write_file(os.path.join(self.results, "%s.%s" % (name, ext)), buf.getvalue())
        self.plt.close(fig)
        self.files.append(name)

    def mark_oversubscribed(self, ax):
        ranks, cores = self.study.ranks, self.cores
        if max(ranks) > cores:
            # named in the legend, not written over the data
            ax.axvspan(cores + 0.5 if cores + 0.5 < max(ranks) else cores, max(ranks) * 1.15, color="0.9", zorder=0,
                       label="over-subscribed (ranks > %d cores)" % cores)

    def series(self, variant, f):
        """(ranks, f(aggregate, ranks)) of a variant where it has a median
        and f a value."""
        xs, ys = [], []
        for r in self.study.ranks:
            a = self.agg.get((variant, r))
            if a and a["median"] is not None:
                y = f(a, r)
                if y is not None:
                    xs.append(r)
                    ys.append(y)
        return xs, ys

    def style(self, ax, ylabel, title):
        ax.set_xscale("log", base=2)
        ax.set_xticks(self.study.ranks)
        ax.set_xticklabels([str(r) for r in self.study.ranks])
        ax.set_xlabel("ranks")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)

    def finish(self, ax):
        self.mark_oversubscribed(ax)
        ax.legend(fontsize=8)

    def errorbar(self, ax, v, xs, ys, lo, hi):
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=label(v), color=self.colour[v])

    def ratio_curve(self, ax, v, f, bounds, exact_at=None):
        """A curve of ratios, its error bars from `bounds` (low, high) per
        point; none at `exact_at`, where the ratio is 1 by definition."""
        xs, ys = self.series(v, f)
        _, b = self.series(v, bounds)
        lo = [0.0 if x == exact_at else y - bd[0] for x, y, bd in zip(xs, ys, b)]
        hi = [0.0 if x == exact_at else bd[1] - y for x, y, bd in zip(xs, ys, b)]
        self.errorbar(ax, v, xs, ys, lo, hi)

    def time(self):
        """Time vs ranks, with the spread of the repeats."""
        study, agg = self.study, self.agg
        fig, ax = self.plt.subplots(figsize=(6, 4))
        for v in self.variants:
            xs, ys = self.series(v, lambda a, r: a["median"])
            if xs:
                self.errorbar(ax, v, xs, ys, [ys[i] - agg[(v, x)]["min"] for i, x in enumerate(xs)],
                              [agg[(v, x)]["max"] - ys[i] for i, x in enumerate(xs)])
        self.style(ax, "%s, slowest rank [s]" % self.metric, "%s: %s scaling, median of %d" %
                   (study.name, study.scaling, study.repeats))
        ax.set_yscale("log")
        # Major labels only, and more of them when the range is under a
        # decade (minor labels overlapped the major ones: "0.09" over "0.1").
        ax.yaxis.set_major_locator(self.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(self.ticker.FormatStrFormatter("%.3g"))
        ax.yaxis.set_minor_formatter(self.ticker.NullFormatter())
        self.finish(ax)
        self.save(fig, "time")

    def figure_of_merit(self, records):
        """The app's figure of merit (whole timed solve, communication included)."""
        agg = self.agg
        fom_def = fom_definition(records)
        if not fom_def or not any(a.get("fom_median") is not None for a in agg.values()):
            return
        fig, ax = self.plt.subplots(figsize=(6, 4))
        for v in self.variants:
            xs, ys = self.series(v, lambda a, r: a["fom_median"])
            if xs:
                self.errorbar(ax, v, xs, ys, [ys[i] - agg[(v, x)]["fom_min"] for i, x in enumerate(xs)],
                              [agg[(v, x)]["fom_max"] - ys[i] for i, x in enumerate(xs)])
        self.style(ax, "%s [%s]" % (fom_def["name"], fom_def["unit"]),
                   "figure of merit: over the whole timed solve (communication included)")
        self.finish(ax)
        self.save(fig, "figure_of_merit")

    def speedup(self):
        """Speedup and efficiency (strong) or efficiency (weak), against each
        variant's smallest rank count."""
        study = self.study
        strong = study.scaling == "strong"
        r0 = study.ranks[0]
        fig, axes = self.plt.subplots(1, 2 if strong else 1, figsize=(11 if strong else 6, 4))
        axes = list(axes) if strong else [axes]
        for v in self.variants:
            base = self.agg.get((v, r0))
            if not base or base["median"] is None:
                continue
            t0 = base["median"]
            # error bars: the ratio's range over the repeats' min-max of both times
            spread = lambda f: (lambda a, r: (f(base["min"], a["max"], r), f(base["max"], a["min"], r)))  # noqa: E731
            sp = lambda b, t, r: b / t  # noqa: E731
            eff = (lambda b, t, r: b * r0 / (t * r)) if strong else sp
            for ax, f in [(axes[0], sp)] + ([(axes[1], eff)] if strong else []):
                self.ratio_curve(ax, v, lambda a, r: f(t0, a["median"], r), spread(f), exact_at=r0)
        if strong:
            axes[0].plot(study.ranks, [r / r0 for r in study.ranks], "k--", lw=0.8, label="ideal")
            self.style(axes[0], "speedup vs %d rank%s" % (r0, "" if r0 == 1 else "s"), "strong scaling: speedup")
            self.style(axes[1], "parallel efficiency", "strong scaling: efficiency")
        else:
            self.style(axes[0], "weak efficiency T(%d)/T(p)" % r0, "weak scaling: efficiency")
        for ax in axes:
            self.finish(ax)
        self.save(fig, "speedup" if strong else "efficiency")

    def breakdown(self, timer_names):
        """Stacked breakdown of `total` (rank average, median over repeats):
        the run's phases (the timers within total: setup, the timed loop,
        check, io, ...), each split into the timers within it alone and its
        rest, then "other" (total's time between the phases); the dot is
        total on the slowest rank."""
        study, agg = self.study, self.agg
        bars = [(v, r) for v in self.variants for r in study.ranks
                if agg.get((v, r)) and agg[(v, r)]["median"] is not None]
        within = {}
        for b in bars:
            within.update(agg[b]["within"])
        # the timers that ran (a timer the run never started has no time)
        names = [n for n in timer_names if n != "total" and any(agg[b]["timer_median"].get(n) for b in bars)]
        # summaries without `within` (older builds): every timer a phase
        phases = [n for n in names if within.get(n, ["total"]) == ["total"]]
        if not phases or not bars:
            return
        segments = []  # (label, f(timer medians) -> seconds)
        for ph in phases:
            parts = [n for n in names if within.get(n) == [ph]]
            for c in parts:
                segments.append(("%s: %s" % (ph, c), lambda m, c=c: m.get(c, 0.0)))
            if parts:
                segments.append(("%s: rest" % ph, lambda m, ph=ph, parts=parts:
                                 max(0.0, m.get(ph, 0.0) - sum(m.get(c, 0.0) for c in parts))))
            else:
                segments.append((ph, lambda m, ph=ph: m.get(ph, 0.0)))
        segments.append(("other (between the phases)", lambda m: max(
            0.0, m.get("total", 0.0) - sum(m.get(ph, 0.0) for ph in phases))))
        fig, ax = self.plt.subplots(figsize=(max(6, 0.45 * len(bars) + 2), 4.5))
        bottom = [0.0] * len(bars)
        cmap = self.plt.get_cmap("tab20")
        for i, (name, f) in enumerate(segments):
            vals = [f(agg[b]["timer_median"]) for b in bars]
            last = i == len(segments) - 1
            ax.bar(range(len(bars)), vals, bottom=bottom, label=name, color="0.75" if last else cmap(i % 20))
            bottom = [x + y for x, y in zip(bottom, vals)]
        xs = [i for i, b in enumerate(bars) if agg[b]["total_max_median"] is not None]
        ax.plot(xs, [agg[bars[i]]["total_max_median"] for i in xs], "k.", ms=6, label="total, slowest rank")
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels(["%s\n%d%s" % (label(v), r, "*" if r > self.cores else "") for v, r in bars],
                           fontsize=7, rotation=60, ha="right")
        for tick, (v, r) in zip(ax.get_xticklabels(), bars):
            tick.set_color(self.colour[v])
        ax.set_ylabel("time, rank average [s]")
        ax.set_title("the run's phases: they add up to total's rank average (* over-subscribed)", fontsize=9)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
        ax.grid(True, axis="y", alpha=0.3)
        self.save(fig, "breakdown")

    def ratio(self):
        """Each variant against the baseline."""
        study, agg = self.study, self.agg
        if not study.baseline:
            return
        fig, ax = self.plt.subplots(figsize=(6, 4))
        for v in self.variants:
            base_v = baseline_of(study, v)
            if v == base_v:
                continue
            has = lambda r: agg.get((base_v, r)) and agg[(base_v, r)]["median"]  # noqa: E731
            self.ratio_curve(ax, v, lambda a, r: (agg[(base_v, r)]["median"] / a["median"]) if has(r) else None,
                             lambda a, r: (agg[(base_v, r)]["min"] / a["max"], agg[(base_v, r)]["max"] / a["min"])
                             if has(r) else None)
        ax.axhline(1.0, color="k", lw=0.8)
        what = ", ".join("%s=%s" % (k.split(".")[-1], v) for k, v in study.baseline.items())
        self.style(ax, "baseline time / variant time", "against %s (above 1: faster)" % what)
        self.finish(ax)
        self.save(fig, "ratio")


def plots(study, agg, results, timer_names, records=()):
    """Every figure of the study; the names of those drawn."""
    p = Plotter(study, agg, results, records)
    p.time()
    p.figure_of_merit(records)
    p.speedup()
    p.breakdown(timer_names)
    p.ratio()
    return p.files


def regenerate_command(study, results):
    """The command that redraws this study, from any directory."""
    import shlex
    return "%s study %s --results %s" % (shlex.quote(os.path.join(ROOT, "locus")),
                                         shlex.quote(os.path.abspath(study.path)), shlex.quote(results))


def report_head(study, records, results):
    """The report's opening: what ran, where, how to redraw it."""
    cores = os.cpu_count() or 1
    lines = ["# Study %s" % study.name, "",
             "App `%s`, deck `%s`, %s scaling, ranks %s, %d repeat%s per point; time: the slowest rank's %s "
             "(median, with the min–max spread of the repeats%s). Machine: %d cores; rank counts above that are "
             "over-subscribed (marked *)." % (
                 study.app, os.path.relpath(study.deck, ROOT), study.scaling, study.ranks, study.repeats,
                 "" if study.repeats == 1 else "s",
                 "%s, the one the figure of merit divides by" % metric_label(study, records)
                 if study.metric == TIMED_LOOP else "timer `%s`" % study.metric,
                 "; `metric: total` would time the whole run, set-up and output included"
                 if study.metric == TIMED_LOOP else "", cores), "",
             "Regenerate (from any directory): `%s`" % regenerate_command(study, results), ""]
    ok = [r for r in records if r.get("status") == "ok"]
    checked = sum(r.get("outputs_verified", 0) for r in ok)
    if ok:
        lines += ["Outputs: %d HDF5 file%s of %d successful run%s verified against their checksums "
                  "(every attribute's CRC-32, every dataset's Fletcher32)%s." % (
                      checked, "" if checked == 1 else "s", len(ok), "" if len(ok) == 1 else "s",
                      "" if all("outputs_verified" in r for r in ok)
                      else "; runs recorded before verification are not counted"), ""]
    fom_def = fom_definition(records)
    if fom_def:
        lines += ["Figure of merit: %s [%s], over %s (median of the repeats)." % (
            fom_def["name"], fom_def["unit"], fom_def.get("divides_by", "the whole timed solve")), ""]
    return lines


def per_rank_text(points, ranks):
    """Points per rank as the ranks hold them: "225", or "220-221" when the
    problem does not divide evenly."""
    if not points:
        return "–"
    lo, hi = points // ranks, -(-points // ranks)
    return "%d" % lo if lo == hi else "%d–%d" % (lo, hi)


def report_row(study, agg, v, r, sizes, fom_def):
    """One point's row of the results table."""
    cores = os.cpu_count() or 1
    r0 = study.ranks[0]
    t0 = (agg.get((v, r0)) or {}).get("median")
    a = agg[(v, r)]
    n_all = a["n"] + len(a["failed"])
    strong = study.scaling == "strong"
    if a["median"] is None:
        cells = ["–"] * (4 if strong else 3)
    else:
        sp = t0 / a["median"] if t0 else None
        cells = ["%.4g" % a["median"], "%.3g–%.3g" % (a["min"], a["max"]),
                 "%.2f" % sp if sp is not None else "–"]
        if strong:
            cells.append("%.2f" % (sp * r0 / r) if sp is not None else "–")
    sz = sizes.get((v, r)) or {"global_size": "?", "points_per_rank": None}
    line = "| %s | %d%s | %s | %s | %d/%d | %s |" % (
        label(v), r, "*" if r > cores else "", sz["global_size"], per_rank_text(sz.get("global_points"), r),
        a["n"], n_all, " | ".join(cells))
    if fom_def:
        fom = a.get("fom_median")
        line += " %s |" % ("%.4g" % fom if fom is not None else "–")
        if not strong:
            line += " %s |" % ("%.4g" % (fom / r) if fom is not None else "–")
    if study.baseline:
        b = (agg.get((baseline_of(study, v), r)) or {}).get("median")
        line += " %s |" % ("%.2f" % (b / a["median"]) if b and a["median"] else "–")
    return line + " %s |" % validity_cell(a["validity"])


def validity_cell(ratings):
    """A point's validity: VALID when every run is, else INVALID with
    the reasons (and how many runs, when some are valid)."""
    if not ratings:
        return "–"
    bad = [v for v in ratings if v != "VALID"]
    if not bad:
        return "VALID"
    reasons = sorted(set(bad))
    return "INVALID%s: %s" % ("" if len(bad) == len(ratings) else " (%d of %d)" % (len(bad), len(ratings)),
                              "; ".join(reasons))


def report_table(study, agg, records):
    """The results table: one row per variant and rank count."""
    fom_def = fom_definition(records)
    has_base = bool(study.baseline)
    # the problem of each point (a sweep may change it between variants)
    sizes = {}
    for x in records:
        if (x["variant"], x["ranks"]) not in sizes and x.get("config"):
            sizes[(x["variant"], x["ranks"])] = sizes_of(study.app, x["config"], x["ranks"], x.get("summary"))
    strong = study.scaling == "strong"
    lines = ["| variant | ranks | global size | points per rank | runs ok | median [s] | spread [s] | %s |" % (
                 "speedup | efficiency" if strong else "weak efficiency") +
             (" figure of merit [%s] |" % fom_def["unit"] if fom_def else "") +
             (" per rank |" if fom_def and not strong else "") + (" baseline/this |" if has_base else "") +
             " validity |",
             "|---|---:|---|---:|---:|---:|---:|---:|" + ("---:|" if strong else "") +
             ("---:|" if fom_def else "") + ("---:|" if fom_def and not strong else "") +
             ("---:|" if has_base else "") + "---|"]
    for v in study.variants():
        for r in study.ranks:
            if agg.get((v, r)):
                lines.append(report_row(study, agg, v, r, sizes, fom_def))
    lines += ["", "Validity (each run's summary, docs/outputs.md \"Validity\"): VALID when the timed loop ran at least "
              "`validity.min_timed_seconds` (default 1 s: shorter loops are too short to time well) and the "
              "verdict is pass; otherwise INVALID and why. Give the study a larger problem or more iterations "
              "for figures to rely on."]
    return lines


def report_machine(study, results):
    """The machine the study measured (its descriptor), per MPI library."""
    machine, mpath = load_machine(results)
    lines = ["", "## Machine", ""]
    if not machine:
        return lines + ["No machine descriptor was measured (see the study's output)."]
    lines += ["Measured with `%s --machine` (`%s`)." % (study.app, mpath), "", "| | |", "|---|---|"]
    for k, v in machine.items():
        if k == "app":
            continue
        if isinstance(v, list):
            v = ", ".join(str(x) for x in v)
        name = {"stream_triad_gbs_per_rank": "STREAM triad per rank, all at once [GB/s]",
                "stream_triad_gbs_total": "STREAM triad, node total [GB/s]",
                "ranks": "ranks measuring"}.get(k, k)
        lines.append("| %s | %s |" % (name, str(v).replace("|", "\\|")))
    for m in study.sweep.get("mpi", []):
        p = os.path.join(results, "machine-%s.yaml" % m)
        if os.path.exists(p):
            with open(p) as f:
                mm = yaml.safe_load(f) or {}
            lines.append("| `mpi=%s` | %s; STREAM triad total %s GB/s |" % (
                m, mm.get("mpi_library", "?"), mm.get("stream_triad_gbs_total", "?")))
    return lines


def missing_runs(study, records):
    """(variant, ranks, repeats missing) of every point with fewer finished
    runs than the study plans."""
    done = {}
    for r in records:
        done[(r["variant"], r["ranks"])] = done.get((r["variant"], r["ranks"]), 0) + 1
    return [(v, r, study.repeats - done.get((v, r), 0)) for (r, _, _) in study.points for v in study.variants()
            if done.get((v, r), 0) < study.repeats]


def report_missing(study, missing):
    """The head of an incomplete study's report: what has not run."""
    if not missing:
        return []
    runs = sum(n for _, _, n in missing)
    planned = len(study.points) * len(study.variants()) * study.repeats
    lines = ["**Incomplete: %d of %d planned runs have not run.** The table and plots show only the finished "
             "ones; the same command (without --plots-only) runs the rest." % (runs, planned), "",
             "| variant | ranks | runs missing |", "|---|---:|---:|"]
    lines += ["| %s | %d | %d of %d |" % (label(v), r, n, study.repeats) for v, r, n in missing]
    return lines + [""]


def report(study, agg, records, results, files, rows):
    """results/<study>/report.md: the study, its table, the machine, failed
    runs, the figures."""
    missing = missing_runs(study, records)
    head = report_head(study, records, results)
    if missing:
        head[0] += " (incomplete)"
    lines = head + report_missing(study, missing) + report_table(study, agg, records) + report_machine(study, results)
    failed = [r for r in records if r["status"] != "ok"]
    if failed:
        lines += ["", "## Failed runs (left out of the plots)", "", "| run | variant | ranks | error |",
                  "|---|---|---:|---|"]
        for r in failed:
            lines.append("| `%s` | %s | %d | %s |" % (r["id"], label(r["variant"]), r["ranks"],
                                                      r["error"].replace("|", "\\|")))
    lines += [""]
    for f in files:
        lines += ["![%s](%s.png)" % (f, f), ""]
    lines += ["Tables: `results.csv`, `results.h5` (one row per run: ranks, global size and points per rank, "
              "swept keys, verdict, the study's time `time_seconds`, figure of merit, validity, timers "
              "min/avg/max, results). Each run's effective deck, "
              "summary and logs: `runs/<id>/`.", ""]
    write_file(os.path.join(results, "report.md"), "\n".join(lines))


def per_rank_sets(argv):
    """`study.py --per-rank-sets APP RANKS DECK SIZE [KEY=VALUE...]`: the
    deck keys (key=value, one a line) that give APP a problem of SIZE per
    rank on RANKS ranks, by the weak-scaling rule of a study (./locus run
    --per-rank)."""
    try:
        app, ranks, deck, size = argv[0], int(argv[1]), argv[2], argv[3]
        if app not in WEAK_RULES:
            raise UserError("--per-rank: no per-rank rule for app %s (known: %s)" % (app, ", ".join(WEAK_RULES)))
        try:
            dims = [int(x) for x in size.replace("x", ",").split(",") if x.strip()]
        except ValueError:
            dims = []
        if not dims or any(d <= 0 for d in dims):
            raise UserError("--per-rank: a list of positive integers, e.g. 32,32,32 (got '%s')" % size)
        sets = [tuple(kv.split("=", 1)) for kv in argv[4:] if "=" in kv]
        base = effective_config(app, deck, sets) if app == "tensor_contract" else {}
        for k, v in WEAK_RULES[app](dims, ranks, base):
            print("%s=%s" % (k, v))
        return 0
    except UserError as e:
        print("locus: error: %s" % str(e).replace("weak_size is", "--per-rank is"), file=sys.stderr)
        return 2


EPILOG = ("Study file keys:\n" + "\n".join("  %-10s %s" % kv for kv in STUDY_KEYS.items()) +
          "\n\nOptions of ./locus study itself (taken by the driver, see ./locus help):\n"
          "  --launcher CMD   how ranks start (mpiexec, srun, or a command with {n} and {ppn})\n"
          "  --ppn P, --bind core|none   ranks per node and binding for the launcher\n"
          "  --site FILE      site settings (launcher, ppn, bind, slurm: account, partition, ...)\n"
          "  --mpi mpich|openmpi   the build (and MPI library) of every run; the study key mpi: "
          "[mpich, openmpi] makes the library an axis instead\n\n"
          "results.csv and results.h5 hold per run: ranks, global_size, global_points, "
          "points_per_rank, the swept keys, verdict, time_seconds (the study's time: by "
          "default the timed loop, figure_of_merit_seconds), figure_of_merit (and its unit, "
          "name, seconds and timer), validity and validity_reason, timers and results; "
          "report.md's Regenerate line works from any directory.")


def main():
    if len(sys.argv) >= 6 and sys.argv[1] == "--per-rank-sets":
        return per_rank_sets(sys.argv[2:])
    ap = argparse.ArgumentParser(prog="./locus study", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=EPILOG)
    ap.add_argument("study", help="the study file (YAML)")
    ap.add_argument("--results", help="results directory (default: results/<name>)")
    ap.add_argument("--retry-failed", action="store_true", help="run failed runs again (default: keep them)")
    ap.add_argument("--dry-run", action="store_true", help="check the study and list the runs; run nothing")
    ap.add_argument("--plots-only", action="store_true", help="redraw tables and plots from finished runs")
    ap.add_argument("--scheduler", choices=("local", "slurm"), default="local",
                    help="local: run here, one run after the other (default); slurm: one batch script per "
                         "run size, submitted with sbatch and followed (site file: account, partition, ...)")
    ap.add_argument("--execute", nargs="+", metavar="RUN_ID", help=argparse.SUPPRESS)
    args = ap.parse_args()
    try:
        study = Study(args.study)
        results = os.path.abspath(args.results or os.path.join("results", study.name))
        if args.execute:
            return execute_ids(study, results, args.execute)
        site = site_config()
        print("study %s: %s, %s scaling, %d variant%s x ranks %s x %d repeat%s -> %s%s" % (
            study.name, study.app, study.scaling, len(study.variants()), "" if len(study.variants()) == 1 else "s",
            study.ranks, study.repeats, "" if study.repeats == 1 else "s", results,
            " (through Slurm)" if args.scheduler == "slurm" else ""), flush=True)
        if args.scheduler == "slurm" and not args.plots_only:
            records = run_slurm(study, results, args.retry_failed, args.dry_run, site)
        else:
            if not args.dry_run and not args.plots_only and pending(plan_runs(study, "local"), results,
                                                                    args.retry_failed):
                # the machine as the runs see it: as many ranks at once as
                # the largest point puts on this node
                n = min(max(p[2] for p in study.points), os.cpu_count() or 1)
                measure_machine(study, results, n)
                for m in study.sweep.get("mpi", []):
                    with using_build([("mpi", m)]):
                        measure_machine(study, results, n, name="machine-%s.yaml" % m)
            records = run_all(study, results, args.retry_failed, args.dry_run, args.plots_only)
        if args.dry_run:
            return 0
        if not records:
            raise UserError("no finished runs in %s" % results)
        rows, columns, timer_names = rows_of(study, records)
        write_tables(results, rows, columns)
        write_file(os.path.join(results, "study.json"), json.dumps({"name": study.name, "app": study.app, "scaling": study.scaling, "metric": study.metric,
                       "variants": [label(v) for v in study.variants()], "ranks": study.ranks,
                       "repeats": study.repeats, "study_file": os.path.abspath(study.path),
                       "deck": os.path.abspath(study.deck), "weak_size": study.weak_size,
                       "set": {k: v for k, v in study.fixed},
                       "sweep": {k: [hashable(x) for x in v] for k, v in study.sweep.items()},
                       "points": [{"ranks": r, "nodes": n, "ranks_per_node": p} for r, n, p in study.points],
                       # the problem at every rank count (what compare-studies checks)
                       "sizes": {str(r["ranks"]): {k: r[k] for k in ("global_size", "global_points",
                                                                       "points_per_rank")} for r in rows}},
                                                                   indent=1))
        agg = aggregate(study, records)
        files = plots(study, agg, results, timer_names, records)
        report(study, agg, records, results, files, rows)
        failed = sum(1 for r in records if r["status"] != "ok")
        left = sum(n for _, _, n in missing_runs(study, records))
        print("results: %s/report.md (%d runs, %d failed%s)" % (results, len(records), failed,
                                                                "; incomplete: %d not run yet" % left if left else ""))
        return 1 if failed else 0
    except UserError as e:
        print("locus study: error: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("locus study: interrupted; finished runs are kept: the same command resumes", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
