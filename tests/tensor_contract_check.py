#!/usr/bin/python3
"""tensor_contract at NP ranks:

  * with integer values C equals numpy's einsum of the A and B the app
    wrote, exactly, for the matrix product, the CCSD-like doubles term
    (dense and block sparse) and the triples-like term;
  * C is bitwise the same for static and NXTASK scheduling, every chunk
    size, skip-first, counter owner first or last, other tile sizes and
    block-cyclic distribution (and so for every rank count: einsum is the
    same everywhere);
  * every task is done exactly once (and the recorded schedule,
    task_unit, gives each unit the tasks it counted; static: task k on
    unit k mod units) and the counter ends at
    chunk * (ceil(tasks / chunk) + units), or with skip-first
    chunk * (max(ceil(tasks / chunk), units) + units) (checked here from
    the formula, independently of the app);
  * random values pass the in-app reference within the rounding bound;
  * the multiphase run reports every phase.

    tensor_contract_check.py NP
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("tensor_contract_check_np%d" % NP)
DECK = os.path.join(SOURCE, "inputs", "tensor_contract", "default.yaml")
count = [0]


def run(sets, deck=DECK):
    count[0] += 1
    name = "t%03d" % count[0]
    p, _ = run_app("tensor_contract", deck, NP, list(sets) + ["output.dir=" + OUT, "output.name=" + name],
                   extra=["--quiet"])
    s = summary(p.stdout)
    # without the reference (validation.mode none) C is compared with nothing: not checked
    want = "pass" if any("reference" in ph for ph in s["validation"]["phases"]) else "not checked"
    check(s["validation"]["verdict"] == want, "%s: verdict %s, expected %s" % (sets, s["validation"], want))
    f = h5py.File(os.path.join(OUT, name + ".h5"), "r")
    return f, s


def expected_counter(tasks, units, chunk, skip):
    ok = -(-tasks // chunk)
    return chunk * ((max(ok, units) if skip else ok) + units)


def einsum_check(label, sets):
    f, s = run(sets + ["tensor_contract.output.inputs=true"])
    a, b, c = np.array(f["A"]), np.array(f["B"]), np.array(f["C"])
    spec = "%s,%s->%s" % (f["A"].attrs["indices"], f["B"].attrs["indices"], f["C"].attrs["indices"])
    ref = np.einsum(spec, a, b)
    check(np.array_equal(c, ref), "%s: C differs from einsum %s (max %g)" % (label, spec, np.max(np.abs(c - ref))))
    check(np.any(c != 0), "%s: C is all zero" % label)
    ph = s["validation"]["phases"][0]
    check(ph["every_task_once"], "%s: a task was not done exactly once" % label)
    print("%-34s C == einsum(%s) exactly, %d tasks" % (label, spec, ph["tasks"]))
    return c, s


base = ["tensor_contract.validation.mode=none"]
einsum_check("matmul 40x36x28, tiles 8", base + ["tensor_contract.contraction=matmul",
                                                 "tensor_contract.extents=i=40,j=36,k=28"])
ref_c, _ = einsum_check("ccsd 12, tiles 4", base + ["tensor_contract.extent=12", "tensor_contract.tile=4"])
sparse_c, _ = einsum_check("ccsd 12, tiles 3, 4 irreps", base + ["tensor_contract.extent=12",
                                                                "tensor_contract.tile=3",
                                                                "tensor_contract.symmetry.irreps=4"])
check(np.count_nonzero(sparse_c) < np.count_nonzero(ref_c), "block sparsity left C as dense as without it")
# a budget of one block (3 MiB, a block of 24^4 doubles is 2.65 MB): no
# slot at all, since a pair needs two (with one, B overwrote A: C wrong)
_, one_slot = einsum_check("ccsd 24, one tile, 3 MiB kept", base + ["tensor_contract.extent=24",
                                                                   "tensor_contract.tile=24",
                                                                   "tensor_contract.sort_cache_mb=3"])
check(one_slot["results"]["sorts"]["kept"] == 0, "kept sorts with room for one block: %s" % one_slot["results"]["sorts"])
einsum_check("triples 6, tiles 2, 2 irreps", base + ["tensor_contract.contraction=triples",
                                                     "tensor_contract.extent=6", "tensor_contract.tile=2",
                                                     "tensor_contract.symmetry.irreps=2"])
einsum_check("triples, strided accumulates", base + ["tensor_contract.contraction=triples",
                                                     "tensor_contract.extents=a=5,b=4,c=6,i=3,j=5,k=4,l=7",
                                                     "tensor_contract.tile=3", "tensor_contract.accumulate=strided"])
einsum_check("matmul, strided accumulates", base + ["tensor_contract.contraction=ji = ik * kj",
                                                    "tensor_contract.extents=i=17,j=9,k=5", "tensor_contract.tile=4",
                                                    "tensor_contract.accumulate=strided"])

# bitwise invariance of C over scheduling, chunks, tiles, distribution
variants = [
    ["tensor_contract.scheduling=static"],
    ["tensor_contract.counter.chunk=3"],
    ["tensor_contract.counter.chunk=2", "tensor_contract.counter.skip_first=true"],
    ["tensor_contract.counter.owner=first", "tensor_contract.counter.skip_first=true"],
    ["tensor_contract.tile=5"],
    ["tensor_contract.tiles=a=7,c=2,k=12"],
    ["tensor_contract.distribution=block-cyclic", "tensor_contract.cyclic_block=3"],
    # emulated nodes: gets, accumulates and the counter through MPI on the segment windows
    ["runtime.node_size=1", "tensor_contract.counter.chunk=2"],
    # every operand sorted for every pair (no kept blocks); the same-node
    # accumulates one CPU atomic per element (no hardware transactions)
    ["tensor_contract.sort_cache_mb=0"],
    ["comm.htm=off"],
    # the result added by strided accumulates straight from the matrix layout
    ["tensor_contract.accumulate=strided"],
    ["tensor_contract.accumulate=strided", "runtime.node_size=1", "tensor_contract.tiles=a=5,b=7"],
]
# Above 2 ranks (over-subscribed on a 2-core host) the variants whose work
# is split between the ranks; the tile, sort, transaction and accumulate
# variants are the same local work at any rank count (checked at 1 and 2).
LOCAL = ("tensor_contract.tile=5", "tensor_contract.tiles=a=7,c=2,k=12", "tensor_contract.sort_cache_mb=0",
         "comm.htm=off", "tensor_contract.accumulate=strided")
for v in variants if NP <= 2 else [v for v in variants if not any(x in LOCAL for x in v)]:
    f, s = run(base + ["tensor_contract.extent=12", "tensor_contract.tile=4"] + v)
    c = np.array(f["C"])
    check(np.array_equal(c.view(np.uint64), ref_c.view(np.uint64)), "C differs with %s" % v)
    ph = s["validation"]["phases"][0]
    r = s["results"]
    if r["scheduling"] == "nxtask":
        want = expected_counter(ph["tasks"], NP, r["chunk"], r["skip_first"])
        check(ph["counter_final"] == want, "%s: counter %d, formula %d" % (v, ph["counter_final"], want))
    check(ph["every_task_once"], "%s: tasks not done exactly once" % v)
    # the schedule record: every task on one unit, as many per unit as the
    # unit counted; static: task k on unit k mod units
    sched = np.array(f["task_unit"])
    per_unit = np.array(f["loop"])[:, 6]
    check(len(sched) == ph["tasks"] and np.all((sched >= 0) & (sched < NP)) and
          np.array_equal(np.bincount(sched, minlength=NP), per_unit),
          "%s: task_unit %s against the units' task counts %s" % (v, sched.tolist(), per_unit.tolist()))
    if r["scheduling"] == "static":
        check(np.array_equal(sched, np.arange(len(sched)) % NP), "static: task_unit %s" % sched.tolist())
    print("%-60s C bitwise equal; counter %s" % (" ".join(v), ph.get("counter_final", "-")))

# kept sorted blocks: C bitwise the same with none kept, with a budget of
# 12 blocks that evicts (2 MiB, blocks of 12^4), and with every block kept;
# the summary counts the sorts done and saved (static scheduling: the same
# tasks on every rank in each run, so that the least-recently-used blocks
# kept by 12 slots are a subset of those kept by all)


def kept_sorts():
    kept = {}
    for mb in (0, 2, 128):
        f, s = run(base + ["tensor_contract.extent=24", "tensor_contract.tile=12", "tensor_contract.scheduling=static",
                           "tensor_contract.sort_cache_mb=%d" % mb])
        kept[mb] = (np.array(f["C"]), s["results"]["sorts"])
    for mb in (2, 128):
        check(np.array_equal(kept[mb][0].view(np.uint64), kept[0][0].view(np.uint64)),
              "C differs with tensor_contract.sort_cache_mb=%d" % mb)
    total = kept[0][1]["done"]
    check(kept[0][1]["kept"] == 0, "sorts kept without a budget: %s" % kept[0][1])
    for mb in (2, 128):
        check(kept[mb][1]["done"] + kept[mb][1]["kept"] == total, "sorts done + kept != %d: %s" % (total, kept[mb][1]))
    check(0 < kept[2][1]["kept"] <= kept[128][1]["kept"],
          "kept sorts: 2 MiB %s, 128 MiB %s" % (kept[2][1], kept[128][1]))
    print("kept sorted blocks: C bitwise equal; sorts done/kept %d/0, %d/%d (2 MiB), %d/%d (128 MiB)"
          % (total, kept[2][1]["done"], kept[2][1]["kept"], kept[128][1]["done"], kept[128][1]["kept"]))


if NP <= 2:  # a rank's own cache of sorted blocks: the same at any rank count
    kept_sorts()

# with a progress process (2 units + 1 server): large gets offloaded
if NP == 2:
    count[0] += 1
    name = "t%03d" % count[0]
    p, _ = run_app("tensor_contract", DECK, 3, base + ["tensor_contract.extent=12", "tensor_contract.tile=4",
                                                       "runtime.progress.processes_per_node=1",
                                                       "runtime.progress.threshold=1024",
                                                       "output.dir=" + OUT, "output.name=" + name], extra=["--quiet"])
    with h5py.File(os.path.join(OUT, name + ".h5"), "r") as f:
        check(np.array_equal(np.array(f["C"]).view(np.uint64), ref_c.view(np.uint64)),
              "C differs with a progress process")
    print("with a progress process: C bitwise equal")

# random values against the in-app reference (rounding bound)
f, s = run(["tensor_contract.values=random", "tensor_contract.extent=10", "tensor_contract.tile=3",
            "tensor_contract.validation.mode=reference"])
rf = s["validation"]["phases"][0]["reference"]
check(rf["verdict"] == "pass" and rf["max_abs_difference"] <= rf["largest_bound"], "random: %s" % rf)
print("random values: max |C - reference| %.2e within bound %.2e" % (rf["max_abs_difference"], rf["largest_bound"]))

# multiphase
f, s = run([], deck=os.path.join(SOURCE, "inputs", "tensor_contract", "multiphase.yaml"))
phases = s["validation"]["phases"]
check([p["kind"] for p in phases] == ["comp", "comp", "comm", "comm", "comp", "comp", "comm", "comm"],
      "phase kinds %s" % [p.get("kind") for p in phases])
check(len(np.array(f["phase_seconds"])) == 8 and np.all(np.array(f["phase_seconds"]) > 0), "phase_seconds")
comp = [p["tasks"] for p in phases if p["kind"] == "comp"]
comm = [p["tasks"] for p in phases if p["kind"] == "comm"]
check(min(comm) > max(comp), "comm phases should have more (smaller) tasks than comp phases")
print("multiphase: 8 phases, tasks comp %d / comm %d" % (comp[0], comm[0]))
print("PASS")
