#!/usr/bin/env python3
"""`./locus bench multiphase`: adaptive target-side redirection (Casper's
Table 4) on tensor_contract's 8-phase sequence, every variant in one run,
interleaved repeats, medians per phase.

Two application units on two emulated nodes (runtime.node_size) in every
variant, so every get and accumulate crosses a node:

  orig      no progress processes (the OrigMPI baseline): 2 ranks
  on-1      redirection always on, 1 ghost per node: 4 ranks
  on-2      redirection always on, 2 ghosts per node: 6 ranks
  off-1     1 ghost per node, redirection off (the ghost idles): 4 ranks
  user      on in COMP phases, off in COMM phases: 4 ranks
  auto      by the measured communication ratio (interval 0: at every
            phase point; low/high from the deck or --set): 4 ranks
  thread    no ghosts, a progress thread per unit: 2 ranks

On a 2-core machine every variant with ghosts is over-subscribed (4 or 6
processes on 2 cores): the ghosts take CPU time from the units they serve,
which real nodes with spare cores would not. The table says so.

Options: --repeats N (default 3), --set key=value (tensor_contract deck keys).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import locuslib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECK = os.path.join(ROOT, "inputs", "bench", "multiphase.yaml")

VARIANTS = [
    ("orig", 2, [("runtime.node_size", 1)]),
    ("on-1", 4, [("runtime.node_size", 2), ("runtime.progress.processes_per_node", 1), ("comm.async", "on")]),
    ("on-2", 6, [("runtime.node_size", 3), ("runtime.progress.processes_per_node", 2), ("comm.async", "on")]),
    ("off-1", 4, [("runtime.node_size", 2), ("runtime.progress.processes_per_node", 1), ("comm.async", "off")]),
    ("user", 4, [("runtime.node_size", 2), ("runtime.progress.processes_per_node", 1), ("comm.async", "user"),
                 ("comm.async_phases", "comp")]),
    ("auto", 4, [("runtime.node_size", 2), ("runtime.progress.processes_per_node", 1), ("comm.async", "auto"),
                 ("comm.adapt.interval", 0)]),
    ("thread", 2, [("runtime.node_size", 1), ("runtime.progress.thread", "true")]),
]
# Casper's Table 4 (the paper's 8-phase run): which setting the adaptive
# version picked per phase.
PAPER = "paper (Table 4): COMP phases on, COMM phases off; adaptive within a few % of the best static choice"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], dest="sets", metavar="KEY=VALUE")
    a = ap.parse_args()
    extra = []
    for s in a.sets:
        if "=" not in s:
            sys.exit("bench multiphase: --set needs key=value (got %r)" % s)
        extra.append(tuple(s.split("=", 1)))
    out = os.path.join(ROOT, "output", "bench", "multiphase")
    phases = {v[0]: [] for v in VARIANTS}
    totals = {v[0]: [] for v in VARIANTS}
    onoff = {}
    kinds = []
    for r in range(a.repeats):
        for name, ranks, sets in VARIANTS:  # interleaved: drift hits every variant alike
            rc, stdout, stderr, _ = locuslib.run_app(
                "tensor_contract", DECK, ranks, sets + extra + [("output.dir", os.path.join(out, name))], timeout=900)
            if rc != 0:
                sys.exit("bench multiphase: %s failed (exit %d):\n%s" % (name, rc, stderr[-2000:]))
            s = locuslib.parse_summary(stdout)
            ph = s["validation"]["phases"]
            kinds = [p.get("kind", "") for p in ph]
            phases[name].append([float(p["seconds"]) for p in ph])
            totals[name].append(sum(float(p["seconds"]) for p in ph))
            onoff[name] = ["on" if p.get("redirection") is True else "off" if p.get("redirection") is False else "-"
                           for p in ph]
    med = {n: [statistics.median(col) for col in zip(*phases[n])] for n in phases}
    tot = {n: statistics.median(totals[n]) for n in totals}
    print("# multiphase: tensor_contract, %d phases (%s), 2 units on 2 emulated nodes; medians of %d interleaved "
          "repeats; seconds per phase" % (len(kinds), " ".join(kinds), a.repeats))
    print("# OVER-SUBSCRIBED: 2 cores; on-1/off-1/user/auto run 4 processes, on-2 six (ghosts share the units' cores)")
    head = "%-7s" % "variant" + "".join("%10s" % ("%d:%s" % (i + 1, k)) for i, k in enumerate(kinds)) + "%10s" % "total"
    print(head)
    for name, _, _ in VARIANTS:
        print("%-7s" % name + "".join("%10.3f" % x for x in med[name]) + "%10.3f" % tot[name])
        if name in ("user", "auto", "on-1", "on-2"):
            print("%-7s" % "" + "".join("%10s" % x for x in onoff[name]))
    best_static = min(tot["on-1"], tot["off-1"])
    comp = [i for i, k in enumerate(kinds) if k == "comp"]
    comm = [i for i, k in enumerate(kinds) if k == "comm"]
    on_comp = sum(med["on-1"][i] for i in comp)
    off_comp = sum(med["off-1"][i] for i in comp)
    on_comm = sum(med["on-1"][i] for i in comm)
    off_comm = sum(med["off-1"][i] for i in comm)
    print()
    print("COMP phases: on-1 %.3f s vs off-1 %.3f s (on/off %.2f)" % (on_comp, off_comp, on_comp / off_comp))
    print("COMM phases: on-1 %.3f s vs off-1 %.3f s (on/off %.2f)" % (on_comm, off_comm, on_comm / off_comm))
    user_best, auto_user = tot["user"] / best_static, tot["auto"] / tot["user"]
    print("user total / best static (min of on-1, off-1): %.2f  (goal <= 0.90: %s)"
          % (user_best, "met" if user_best <= 0.90 else "missed"))
    print("auto total / user total: %.2f  (goal <= 1.15: %s)" % (auto_user, "met" if auto_user <= 1.15 else "missed"))
    print("orig (no ghosts) total %.3f s; thread total %.3f s" % (tot["orig"], tot["thread"]))
    print(PAPER)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "multiphase.csv"), "w") as f:
        f.write("variant,phase,kind,seconds,redirection\n")
        for name in med:
            for i, x in enumerate(med[name]):
                f.write("%s,%d,%s,%.6f,%s\n" % (name, i + 1, kinds[i], x, onoff.get(name, ["-"] * len(kinds))[i]))
    print("\nlocus_bench:\n  benchmark: multiphase\n  csv: %s" % os.path.join(out, "multiphase.csv"))


main()
