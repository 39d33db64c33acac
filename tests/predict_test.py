"""./locus machine and ./locus predict: machine files checked, the
compute-roofline limit, the what-if directions, the counts' models,
errors.

- An ideal machine (no latency, infinite bandwidths and rates) gives heat3d
  the kernels' roofline exactly: 16 bytes per cell and step over the
  memory bandwidth per rank (the node's shared by its ranks, at most one
  core's; the core's cache's when the rank's footprint fits it), nothing
  for the halo or the reduction.
- On a finite machine (this file's numbers: a plausible cluster), at 64
  nodes (outside the counted range, which the output says): halving the
  network latency or doubling its bandwidth does not slow the timed loop
  and speeds up the halo; doubling the cores per node raises the figure of
  merit, by at most 2x; an ideal network leaves the compute alone.
- heat3d's counts modelled from its decomposition (each rank's block and
  faces on and off its node, checked by hand) and fitted on 1, 2 and 4
  ranks give the busiest rank's counts of 8 ranks exactly (--check-counts).
- tensor_contract's counts modelled from its task structure: the features
  of a 2 x 2-tile contraction on 2 units by hand; fitted on 1, 2 and 4
  ranks, the busiest rank's counts of 8 ranks exactly from the schedule
  the run recorded (NXTASK) or from the static schedule known in advance,
  and the mean rank's flops and fetches exactly without a schedule.
- Bad machine files (every problem at once, with file:line and key), bad
  options and a deck without an app: exit 2 and one clear error.
"""
import copy
import json
import math
import os
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SANITIZER_BUILD, SOURCE, check, scratch  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE, "tools"))
from machine import all_keys, is_time  # noqa: E402

PY = sys.executable
PREDICT = os.path.join(SOURCE, "tools", "predict.py")
MACHINE = os.path.join(SOURCE, "tools", "machine.py")

# a plausible cluster node (orders of magnitude of a current CPU node)
FINITE = {"cores_per_node": 2, "core_gflops": 20.0,
          "memory.bandwidth_Bps_core": 1.2e10, "memory.bandwidth_Bps_node": 2.0e10,
          "memory.cache_bytes_core": 4096, "memory.cache_bandwidth_Bps_core": 5e10}
for scope, lat, bw, fao, atom in (("node", 3e-7, 8e9, 5e-8, 5e7), ("network", 2e-6, 1e10, 3e-6, 5e6)):
    FINITE.update({"%s.message.latency_s" % scope: lat, "%s.message.bandwidth_Bps" % scope: bw,
                   "%s.message.rate_per_s" % scope: 1e8})
    for op in ("get", "put", "accumulate"):
        FINITE.update({"%s.%s.latency_s" % (scope, op): lat, "%s.%s.bandwidth_Bps" % (scope, op): bw})
    FINITE.update({"%s.atomic_rate_per_s" % scope: atom, "%s.fetch_and_op_s" % scope: fao,
                   "%s.counter_rate_per_s" % scope: 1.0 / fao})


def ideal(values, scopes=("node", "network")):
    """The same machine with no latency and infinite rates in SCOPES."""
    out = dict(values)
    for k in out:
        if k.split(".")[0] in scopes:
            out[k] = 0.0 if is_time(k) else math.inf
    return out


def write_machine(path, values):
    tree = {"name": os.path.basename(path)}
    for key, v in values.items():
        cur = tree
        parts = key.split(".")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = v
    with open(path, "w") as f:
        yaml.safe_dump(tree, f)
    return path


def predict(args, work, expect=0):
    p = subprocess.run([PY, PREDICT] + args + ["--work", work], capture_output=True, text=True, timeout=600)
    check(p.returncode == expect, "predict %s: exit %d (want %d)\n%s%s" % (
        " ".join(args), p.returncode, expect, p.stdout, p.stderr))
    return p


LAST = {}  # the last result()'s stderr


def result(args, work, d, name):
    out = os.path.join(d, name + ".json")
    p = predict(args + ["--json", out], work)
    LAST["stderr"] = p.stderr
    with open(out) as f:
        return json.load(f), p.stdout


def idle_yield(stderr):
    """Counting runs of more ranks than cores preload tools/idle_yield.cpp's
    library (locuslib.idle_yield_env), and say so; others do not."""
    import locuslib
    cores = len(os.sched_getaffinity(0))
    # the sanitizer build has no such library
    lib = os.path.join(locuslib.build_dir(), "tools", locuslib.IDLE_YIELD_LIB)
    built = not SANITIZER_BUILD
    check(os.path.exists(lib) == built, "%s exists: %s" % (lib, os.path.exists(lib)))
    said = [x for x in stderr.splitlines() if x.startswith("locus predict: counting run")]
    for line in said:
        ranks = int(line.split(",")[1].split()[0])
        check(("over-subscribed: MPICH's waits yield" in line) == (built and ranks > cores),
              "%d ranks on %d cores: %s" % (ranks, cores, line))
    check(len(said) >= 4, "the counting runs are announced: %s" % stderr)
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    if not built:
        check(locuslib.idle_yield_env(cores + 1, base) == (base, False), "no library: no preload")
        return
    env, on = locuslib.idle_yield_env(cores + 1, base)
    check(on and env["LD_PRELOAD"] == lib, "over-subscribed: LD_PRELOAD %s" % env.get("LD_PRELOAD"))
    env, on = locuslib.idle_yield_env(cores + 1, dict(base, LD_PRELOAD="/x/other.so:" + lib))
    check(on and env["LD_PRELOAD"] == lib + ":/x/other.so", "a user's preload kept: %s" % env["LD_PRELOAD"])
    env, on = locuslib.idle_yield_env(cores, base)
    check(not on and "LD_PRELOAD" not in env, "one rank per core: no preload")
    os.environ["LOCUS_LAUNCHER"] = "srun"
    try:
        env, on = locuslib.idle_yield_env(cores + 1, base)
    finally:
        del os.environ["LOCUS_LAUNCHER"]
    check(not on and "LD_PRELOAD" not in env, "a launcher of Slurm or a site: no preload")


def main():
    check(set(FINITE) == {k for k, _, _ in all_keys()}, "the test's machine lists every machine key")
    d = scratch("predict")
    work = os.path.join(d, "work")
    heat = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
    n, steps = 16, 10
    hset = ["--set", "heat3d.grid.nx=%d" % n, "--set", "heat3d.grid.ny=%d" % n, "--set", "heat3d.grid.nz=%d" % n]

    # 1. the compute roofline of an ideal machine (2 nodes x 2 ranks, weak)
    m_ideal = write_machine(os.path.join(d, "ideal.yaml"), ideal(FINITE))
    r, out = result([heat, "--machine", m_ideal, "--nodes", "2", "--steps", str(steps), "--count-ranks", "1,2"] +
                    hset, work, d, "ideal")
    bw = min(FINITE["memory.bandwidth_Bps_core"], FINITE["memory.bandwidth_Bps_node"] / 2)
    want = max(16.0 * n ** 3 * steps / bw, 11.0 * n ** 3 * steps / (FINITE["core_gflops"] * 1e9))
    got = r["loop_seconds"]
    check(abs(got - want) <= 1e-9 * want, "ideal machine: loop %.6g s, the roofline %.6g s" % (got, want))
    check(r["phases"]["compute"]["dominant"].startswith("kernel (memory"), "ideal: memory-bound kernel")
    for ph in ("halo", "reduce"):
        check(r["phases"].get(ph, {"seconds": 0})["seconds"] == 0, "ideal machine: %s takes no time" % ph)
    check("inside the counted range" in out, "4 ranks are counted: said so\n" + out)
    check(not r["in_cache"] and r["footprint_bytes"] > 4096, "16^3 per rank does not fit 4 KiB of cache")
    # the same with a cache the footprint fits: the cache's bandwidth
    big = dict(ideal(FINITE), **{"memory.cache_bytes_core": 1 << 30})
    rc, _ = result([heat, "--machine", write_machine(os.path.join(d, "cache.yaml"), big), "--nodes", "2", "--steps",
                    str(steps), "--count-ranks", "1,2"] + hset, work, d, "cache")
    want_c = max(16.0 * n ** 3 * steps / FINITE["memory.cache_bandwidth_Bps_core"],
                 11.0 * n ** 3 * steps / (FINITE["core_gflops"] * 1e9))
    check(rc["in_cache"] and abs(rc["loop_seconds"] - want_c) <= 1e-9 * want_c,
          "in cache: loop %.6g s, the cache roofline %.6g s" % (rc["loop_seconds"], want_c))
    fom = r["figure_of_merit"]["value"]
    want_fom = 4 * n ** 3 * steps / 1e6 / want
    # the work comes from a counting run's figure of merit, which the app rounds to 6 digits
    check(abs(fom - want_fom) <= 1e-5 * want_fom, "figure of merit %.8g, work / roofline %.8g" % (fom, want_fom))

    # 2. what-if on a finite machine at 64 nodes
    pois = os.path.join(SOURCE, "inputs", "poisson5pt", "default.yaml")
    pset = ["--set", "poisson5pt.grid.n=32", "--steps", "50", "--count-ranks", "1,2,4", "--nodes", "64"]
    m_fin = write_machine(os.path.join(d, "finite.yaml"), FINITE)
    base, out = result([pois, "--machine", m_fin] + pset, work, d, "base")
    check("beyond the largest counted run" in out, "64 nodes are outside the counted range: said so\n" + out)
    check(base["phases"]["halo"]["seconds"] > 0 and base["outside_by"] > 1, "finite machine: a halo time")
    for change, name in (("network.message.latency_s=0.5", "latency"), ("network.message.bandwidth_Bps=2",
                                                                         "bandwidth")):
        w, _ = result([pois, "--machine", m_fin, "--what-if", change] + pset, work, d, name)
        check(w["loop_seconds"] <= base["loop_seconds"], "%s: the loop is not slower" % change)
        check(w["phases"]["halo"]["seconds"] < base["phases"]["halo"]["seconds"],
              "%s: the halo is faster (%g vs %g)" % (change, w["phases"]["halo"]["seconds"],
                                                     base["phases"]["halo"]["seconds"]))
    w, _ = result([pois, "--machine", m_fin, "--what-if", "cores_per_node=2"] + pset, work, d, "cores")
    ratio = w["figure_of_merit"]["value"] / base["figure_of_merit"]["value"]
    check(w["ranks"] == 2 * base["ranks"] and 1.0 < ratio <= 2.0 + 1e-9,
          "cores x2: figure of merit x%.3f (more than 1, at most 2)" % ratio)
    net = write_machine(os.path.join(d, "ideal_net.yaml"), ideal(FINITE, ("network", "node")))
    w, _ = result([pois, "--machine", net] + pset, work, d, "ideal_net")
    comp = w["phases"]["compute"]["seconds"]
    check(abs(comp - base["phases"]["compute"]["seconds"]) <= 1e-12 * comp, "an ideal network: same compute")
    check(w["phases"]["halo"]["seconds"] == 0, "an ideal network: no halo time")

    # 3. counts from the decomposition: every rank's features by hand, and
    # models fitted on 1, 2 and 4 ranks give the counts of 8 ranks exactly
    sys.path.insert(0, os.path.join(SOURCE, "tools"))
    from predict import rank_features
    # 2 x 2 ranks of 2 x 2 points, emulated nodes of 2 (ranks 0,1 and 2,3):
    # every rank has a face of 2 points on its node (x) and one off it (y)
    f = rank_features([4, 4, 1], [2, 2, 1], 2)
    check(f.tolist() == [[1, 4, 2, 1, 2, 1]] * 4, "features, nodes of 2: %s" % f.tolist())
    f = rank_features([4, 4, 1], [2, 2, 1], 0)
    check(f.tolist() == [[1, 4, 4, 2, 0, 0]] * 4, "features, one node: %s" % f.tolist())
    # uneven blocks (3 and 2 points in x), nodes of 1: the face is 1 point
    f = rank_features([5, 1, 1], [2, 1, 1], 1)
    check(f.tolist() == [[1, 3, 0, 0, 1, 1], [1, 2, 0, 0, 1, 1]], "features, uneven: %s" % f.tolist())
    h8 = ["--set", "heat3d.grid.nx=8", "--set", "heat3d.grid.ny=8", "--set", "heat3d.grid.nz=8"]
    cc, out = result([heat, "--machine", m_fin, "--nodes", "4", "--count-ranks", "1,2,4", "--check-counts", "8"] +
                     h8, work, d, "counts")
    rows = cc["count_check"]
    kinds = {x["kind"] for x in rows}
    check({"bytes_on_node", "bytes_off_node", "messages", "flops"} <= kinds, "counts checked: %s" % kinds)
    for x in rows:
        check(x["counted"] > 0 and abs(x["error"]) <= 1e-9,
              "8 ranks, %s.%s: model %s, counted %s" % (x["phase"], x["kind"], x["modelled"], x["counted"]))
    check("worst |error| 0.00 %" in out, "the check's verdict line:\n" + out)
    idle_yield(LAST["stderr"])

    tasks(m_fin, work, d)

    # 4. errors: every problem of a machine file at once, options, decks
    bad = copy.deepcopy(FINITE)
    bad["cores_per_node"] = "two"
    bad["network.get.latency_s"] = -1.0
    del bad["node.fetch_and_op_s"]
    path = write_machine(os.path.join(d, "bad.yaml"), bad)
    with open(path, "a") as f:
        f.write("core_gflop: 3.0\n")
    p = subprocess.run([PY, MACHINE, "--check", path], capture_output=True, text=True)
    check(p.returncode == 2 and "Traceback" not in p.stderr, "bad machine file: exit 2\n" + p.stderr)
    for text in ("cores_per_node: 'two' is not a number", "network.get.latency_s: -1.0 must be",
                 "node.fetch_and_op_s: missing", "core_gflop: unknown key (did you mean core_gflops?)",
                 path + ":"):
        check(text in p.stderr, "bad machine file names '%s'\n%s" % (text, p.stderr))
    p = predict([heat, "--machine", path, "--nodes", "2"], work, 2)
    check("cores_per_node" in p.stderr, "predict with a bad machine file says why\n" + p.stderr)
    # a key given twice (YAML would keep the last), a name that is a list
    good = write_machine(os.path.join(d, "twice.yaml"), FINITE)
    with open(good) as f:
        text = f.read()
    for name, extra, want in (("twice", "core_gflops: 3.0\n", "core_gflops: given twice (first on line"),
                              ("listname", "name: [a, b]\n", "name: ['a', 'b'] is not a text")):
        path = os.path.join(d, name + ".yaml")
        with open(path, "w") as f:
            f.write("".join(x for x in text.splitlines(True) if not x.startswith("name:")))
            f.write(extra)
        p = subprocess.run([PY, MACHINE, "--check", path], capture_output=True, text=True)
        check(p.returncode == 2 and want in p.stderr and "Traceback" not in p.stderr,
              "%s: exit %d, want '%s'\n%s" % (name, p.returncode, want, p.stderr))
    for args, text in (([heat, "--machine", m_fin, "--nodes", "0"], "--nodes"),
                       ([heat, "--machine", m_fin, "--nodes", "2", "--what-if", "network.latency=2"], "--what-if"),
                       ([heat, "--machine", m_fin, "--nodes", "2", "--what-if", "core_gflops=-1"], "> 0"),
                       ([os.path.join(d, "ideal.yaml"), "--machine", m_fin, "--nodes", "2"], "no top-level"),
                       ([heat, "--machine", os.path.join(d, "none.yaml"), "--nodes", "2"], "cannot read"),
                       ([heat, "--machine", m_fin, "--nodes", "2", "--check-counts", "16,x"], "--check-counts")):
        p = predict(args, work, 2)
        check(text in p.stderr and "Traceback" not in p.stderr and p.stderr.count("\n") <= 3,
              "%s: one clear error with '%s'\n%s" % (" ".join(args[1:]), text, p.stderr))
    print("predict: roofline limit, what-if directions, counts from the decomposition, errors: ok")


def tasks(m_fin, work, d):
    """tensor_contract's task model: features by hand, then the counts of 8
    ranks from models fitted on 1, 2 and 4."""
    import numpy as np
    from task_model import COL, TaskPlan
    # C_ij = sum_k A_ki B_kj, 4 x 4 in tiles of 2: C blocks (i, j) = (0,0),
    # (0,1), (1,0), (1,1) are tasks 0-3; A's block (k, i) and B's (k, j) are
    # owned by unit i and unit j (round-robin over 2 units); nodes of one
    # unit. Static: unit 0 runs tasks 0 and 2 (i = 0 and 1, j = 0). Task
    # (0,0) reads its two A and two B blocks in place; task (1,0) fetches A's
    # two blocks (k, 1) from unit 1 (4 elements each) and reads B's in place.
    # A sorts into (i, k): the fetched blocks every time (8 elements), the
    # two kept ones once (8); B and C are in matrix layout already. On two
    # nodes every atomic call goes through MPI (comm.atomics mpi).
    cfg = {"tensor_contract": {"contraction": "ij = ki * kj", "extent": 4, "tile": 2, "extents": "", "tiles": "",
                               "symmetry": {"irreps": "1"}, "distribution": "round-robin", "cyclic_block": 4,
                               "scheduling": "static", "counter": {"chunk": 1, "skip_first": False, "owner": "last"},
                               "accumulate": "sorted", "sort_cache_mb": 128},
           "comm": {"locality": True}}
    plan = TaskPlan(cfg, [], 2, 1)
    f = plan.features(plan.static_schedule())
    want = {"tasks": 2, "pairs": 4, "flops": 4 * 2 * 8, "product_bytes": 4 * 8 * (4 + 4 + 8), "gets_off": 2,
            "get_elements_off": 8, "gets_on": 0, "sorted_elements": 16, "acc_own": 2, "acc_elements_own": 8,
            "acc_off": 0, "marks_own": 2, "acc_mpi": 2, "marks_mpi": 2, "fetches": 0}
    got = {k: f[0, COL[k]] for k in want}
    check(got == {k: float(v) for k, v in want.items()}, "task features of unit 0 by hand: %s" % got)
    check(np.array_equal(f[0], f[1]), "units 0 and 1 mirror each other: %s / %s" % (f[0].tolist(), f[1].tolist()))
    # NXTASK: the schedule the run recorded; the counter on the last unit,
    # one fetch per task and the closing one
    cfg["tensor_contract"]["scheduling"] = "nxtask"
    plan = TaskPlan(cfg, [], 2, 1)
    f = plan.features(np.array([1, 1, 1, 0]))
    check(f[0, COL["fetches"]] == 2 and f[1, COL["fetches"]] == 4 and f[0, COL["fetches_mpi"]] == 2
          and f[1, COL["fetches_mpi"]] == 4, "NXTASK fetches by hand: %s" % f[:, COL["fetches"]].tolist())
    mean = plan.expected_mean()
    check(mean[COL["tasks"]] == 2 and mean[COL["flops"]] == 64 and mean[COL["fetches"]] == 3,
          "the mean unit without a schedule: %s" % mean.tolist())
    # A sort cache that keeps some blocks, not all: tiles of 200 (blocks of
    # 40,000 elements, 320,000 B), 1 MiB: 3 slots for the 18 blocks of A and
    # B. Only A sorts. A task (i, j) reads A's blocks (k, i), k = 0..2, so
    # the tasks of one i sort those three once between them and the next i
    # evicts them: 3 i x 3 blocks sorted on one unit (the 9 tasks) and on
    # each of two (static: unit 0 runs (0,0) (0,2) (1,1) (2,0) (2,2), unit 1
    # (0,1) (1,0) (1,2) (2,1)), against 27 (every use) if every use sorted.
    cfg["tensor_contract"].update({"extent": 600, "tile": 200, "sort_cache_mb": 1, "scheduling": "static"})
    for units in (1, 2):
        plan = TaskPlan(cfg, [], units, 0)
        got = plan.features(plan.static_schedule())[:, COL["sorted_elements"]]
        check(plan.slots.tolist() == [3] * units and got.tolist() == [9 * 40000.0] * units,
              "a partly holding sort cache, %d unit(s): slots %s, sorted %s" % (units, plan.slots, got.tolist()))
    # 2 units; tasks 0-2 (i = 0) on unit 1: 3 sorted; 3-8 (i = 1, 2) on unit 0: 6
    got = plan.features(np.array([1, 1, 1, 0, 0, 0, 0, 0, 0]))[:, COL["sorted_elements"]]
    check(got.tolist() == [6 * 40000.0, 3 * 40000.0], "a partly holding cache, a schedule: %s" % got.tolist())

    deck = os.path.join(SOURCE, "inputs", "tensor_contract", "default.yaml")
    small = ["--set", "tensor_contract.extent=12", "--set", "tensor_contract.tile=4", "--nodes", "4",
             "--count-ranks", "1,2,4", "--check-counts", "8"]
    # static_cache: extent 24 in tiles of 8 (blocks of 32 KiB) with a 1 MiB
    # sort cache: 32 slots for 162 blocks on one rank, about 40 on a node of
    # two, so every counting run and the 8 ranks keep some blocks, not all
    partial = ["--set", "tensor_contract.sort_cache_mb=1", "--set", "tensor_contract.extent=24", "--set",
               "tensor_contract.tile=8", "--scaling", "strong", "--nodes", "4", "--count-ranks", "1,2,3,4",
               "--check-counts", "8"]
    for sched, args in (("nxtask", small), ("static", small), ("static_cache", partial)):
        cc, out = result([deck, "--machine", m_fin, "--set",
                          "tensor_contract.scheduling=" + sched.split("_")[0]] + args, work, d, "tasks_" + sched)
        rows = cc["count_check"]
        exact = [x for x in rows if x["measure"] != "mean, no schedule"]
        check({x["kind"] for x in exact} >= {"flops", "memory_bytes", "rma_ops", "bytes_off_node", "atomic_updates"},
              "%s: kinds checked %s" % (sched, sorted({x["kind"] for x in exact})))
        for x in exact:
            check(x["counted"] > 0 and abs(x["error"]) <= 1e-9, "%s, 8 ranks, %s (%s): model %s, counted %s\n%s" % (
                sched, x["kind"], x["measure"], x["modelled"], x["counted"], out))
        for x in rows:
            if x["measure"] == "mean, no schedule" and x["kind"] in ("flops", "atomic_fetches", "atomic_updates"):
                check(abs(x["error"]) <= 1e-9, "nxtask, the mean rank's %s: model %s, counted %s" % (
                    x["kind"], x["modelled"], x["counted"]))
        check(any("task structure" in m["how"] for m in cc["models"]), "%s: task models\n%s" % (sched, out))
        check((sched == "nxtask") == any(x["measure"] == "mean, no schedule" for x in rows),
              "%s: the mean rank checked for NXTASK only" % sched)
    # kept counting runs cut short (their HDF5 outputs truncated) run again
    import glob
    h5 = sorted(glob.glob(os.path.join(work, "runs", "tensor_contract-*.h5")))
    check(h5, "kept tensor_contract counting runs under %s" % work)
    for path in h5:
        with open(path, "r+b") as f:
            f.truncate(100)
    cc, _ = result([deck, "--machine", m_fin, "--set", "tensor_contract.scheduling=static"] + small, work, d,
                   "tasks_truncated")
    check("counting run" in LAST["stderr"] and "Traceback" not in LAST["stderr"],
          "a truncated kept run runs again:\n" + LAST["stderr"])
    check(all(abs(x["error"]) <= 1e-9 for x in cc["count_check"]), "after the rerun: %s" % cc["count_check"])
    print("predict: tensor_contract's task model, by hand and at 8 ranks: ok")


if __name__ == "__main__":
    main()
