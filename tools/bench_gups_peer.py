#!/usr/bin/env python3
"""`./locus bench gups`, last part: locus against the peer users run.

HPCC 1.5.0's MPIRandomAccess update loop (bench/hpcc_ra: its own MPI job,
MPI_Init without threads, no locus in the process) and the locus GUPS
benchmark (bench/gups) alternate, ROUNDS times each, on the same table
(bench.log2_local) and stream; the medians and their ratios are printed,
with the issue's goals:
  one node:        the better of locus (atomic_update, handle-free) and
                   locus-scatter (update_nbi) >= 3x HPCC;
  emulated nodes:  the better aggregated variant (locus-aggregated,
                   locus-scatter) >= 1.5x HPCC.
Every variant is atomic and verified exactly by bench/gups.
bench/gups's own `hpcc` column (HPCC's buckets with less MPI in the loop,
inside the locus process) is shown beside it: it runs 2.5-3x faster than
HPCC's own loop on a 2-core host, a stronger floor than the peer.

Options: --ranks N (2), --rounds N (5), --set key=value for bench/gups
(bench.log2_local, comm.*, ...), --out DIR (output/bench/gups_peer)."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import locuslib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECK = os.path.join(ROOT, "inputs", "bench", "gups.yaml")
PLACES = (("same node", [], ["locus", "locus-scatter"], "locus >= 3x HPCC", 3.0),
          ("emulated nodes", ["runtime.node_size=1"], ["locus-aggregated", "locus-scatter"],
           "aggregated >= 1.5x HPCC", 1.5))


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("bench gups (peer): %s failed (exit %d):\n%s%s" % (what, p.returncode, p.stdout[-1500:],
                                                                    p.stderr[-1500:]))
    return p.stdout


def peer_gups(ranks, log2_local):
    exe = os.path.join(locuslib.build_dir(), "bench", "hpcc_ra")
    out = run(locuslib.launcher_argv(ranks) + [exe, "--log2-local", str(log2_local), "--repeats", "3"],
              "HPCC's loop (bench/hpcc_ra)")
    m = re.search(r"^gups: ([0-9.eE+-]+)", out, re.M)
    if not m or "verification: PASS" not in out:
        sys.exit("bench gups (peer): bench/hpcc_ra printed no verified rate:\n" + out)
    return float(m.group(1))


def locus_gups(ranks, sets, variants, out_dir):
    exe = os.path.join(locuslib.build_dir(), "bench", "gups")
    args = [exe, DECK, "--set", "bench.variants=" + ",".join(["hpcc"] + variants), "--set", "bench.repeats=1",
            "--set", "output.dir=" + out_dir, "--set", "output.name=gups_peer"]
    for s in sets:
        args += ["--set", s]
    run(locuslib.launcher_argv(ranks) + args, "bench/gups")
    with open(os.path.join(out_dir, "gups_peer.json")) as f:
        doc = json.load(f)["locus_bench"]
    if doc.get("verification") != "PASS":
        sys.exit("bench gups (peer): bench/gups failed its verification")
    return {row["variant"]: float(row["gups"]) for row in doc["rows"]}


def log2_local(sets):
    for s in reversed(sets):
        if s.startswith("bench.log2_local="):
            return int(s.split("=", 1)[1])
    with open(DECK) as f:
        m = re.search(r"^\s*log2_local:\s*([0-9]+)", f.read(), re.M)
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "output", "bench", "gups_peer"))
    a = ap.parse_args()
    for s in a.set:
        if "=" not in s:
            sys.exit("bench gups (peer): --set needs key=value (got '%s')" % s)
    if a.ranks < 1 or a.rounds < 1:
        sys.exit("bench gups (peer): --ranks and --rounds must be at least 1")
    os.makedirs(a.out, exist_ok=True)
    n = log2_local(a.set)
    print("# locus GUPS against HPCC 1.5.0's MPIRandomAccess loop in its own MPI job (bench/hpcc_ra), "
          "%d ranks, table 2^%d words per rank; %d alternating rounds, medians; hpcc (in bench): bench/gups's "
          "tuned bucketed baseline" % (a.ranks, n, a.rounds))
    print("%-15s %12s %12s %-17s %10s %10s %14s  %s" % ("placement", "HPCC-1.5.0", "hpcc(bench)", "locus variant",
                                                        "GUPS", "/HPCC", "/hpcc(bench)", "goal"))
    goals = []
    for place, sets, variants, goal, need in PLACES:
        peer, mine = [], {}
        for _ in range(a.rounds):
            peer.append(peer_gups(a.ranks, n))
            for k, v in locus_gups(a.ranks, sets + a.set, variants, a.out).items():
                mine.setdefault(k, []).append(v)
        p = statistics.median(peer)
        med = {k: statistics.median(v) for k, v in mine.items()}
        best = max(variants, key=lambda v: med[v])
        for v in variants:
            ok = med[v] / p >= need
            judged = "%s: %s" % (goal, "met" if ok else "missed") if v == best else ""
            print("%-15s %12.6f %12.6f %-17s %10.6f %10.2f %14.2f  %s" % (place, p, med["hpcc"], v, med[v],
                                                                          med[v] / p, med[v] / med["hpcc"], judged))
        goals.append("%s, %s: %s (%.2fx)" % (place, goal, "met" if med[best] / p >= need else "missed",
                                            med[best] / p))
    print("goals (against HPCC's own loop):")
    for g in goals:
        print("  " + g)


if __name__ == "__main__":
    main()
