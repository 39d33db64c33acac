#!/usr/bin/env python3
"""`./locus bench heat3d-async`: heat3d's overlapped locus-nb (begin face
gets, interior, wait, boundary shell) with and without progress processes,
in one run, two honest comparisons:

  same units:  2 application units alone (2 ranks) against 2 units plus
               progress processes (3 ranks on a real node; 4 on emulated
               nodes of unit + server) -- on 2 cores the servers take CPU
               time from the units;
  same ranks:  2 ranks as 2 units against 2 ranks as 1 unit + 1 server.

Time per step = the slowest unit's total / steps, median of the repeats;
halo = the units' average time in begin/end. Options: --set key=value for
the heat3d deck (e.g. heat3d.grid.nx=96), --repeats N, --steps N."""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import locuslib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECK = os.path.join(ROOT, "inputs", "heat3d", "default.yaml")


def measure(ranks, sets, repeats, out):
    per_step, halo = [], []
    for r in range(repeats):
        all_sets = sets + [("output.dir", out), ("output.write_field", "false"), ("output.xdmf", "false")]
        rc, stdout, stderr, _ = locuslib.run_app("heat3d", DECK, ranks, all_sets, timeout=600)
        if rc != 0:
            sys.exit("bench heat3d-async: run failed (exit %d):\n%s" % (rc, stderr[-2000:]))
        s = locuslib.parse_summary(stdout)
        steps = s["results"]["steps"]
        per_step.append(float(s["timers_seconds"]["total"]["max"]) / steps * 1e3)
        halo.append(float(s["timers_seconds"]["halo"]["avg"]) / steps * 1e3)
        units = s["ranks"]
        servers = s["progress"]["processes"]
    return statistics.median(per_step), statistics.median(halo), units, servers


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    base = [("heat3d.grid.nx", 128), ("heat3d.grid.ny", 128), ("heat3d.grid.nz", 128),
            ("heat3d.time.max_steps", a.steps), ("heat3d.time.tolerance", 0),
            ("heat3d.validation.mode", "none"), ("comm.halo", "locus-nb")]
    for kv in a.set:
        if "=" not in kv:
            sys.exit("bench heat3d-async: --set needs key=value (got '%s')" % kv)
        k, v = kv.split("=", 1)
        base = [(bk, bv) for bk, bv in base if bk != k] + [(k, v)]
    out = os.path.join(ROOT, "output", "bench", "heat3d_async")
    k1 = [("runtime.progress.processes_per_node", 1)]
    cases = [
        ("same units, real node", "2 units", 2, [], "2 units + 1 server", 3, k1),
        ("same units, emulated nodes", "2 units (node size 1)", 2, [("runtime.node_size", 1)],
         "2 units + 2 servers (node size 2)", 4, k1 + [("runtime.node_size", 2)]),
        ("same ranks (2), real node", "2 units", 2, [], "1 unit + 1 server", 2, k1),
    ]
    rows = []
    print("heat3d-async: locus-nb, grid %sx%sx%s, %d steps, median of %d (ms per step; halo = begin+end)"
          % (dict(base)["heat3d.grid.nx"], dict(base)["heat3d.grid.ny"], dict(base)["heat3d.grid.nz"],
             int(dict(base)["heat3d.time.max_steps"]), a.repeats))
    print("| comparison | without servers | ms/step | halo ms | with servers | ms/step | halo ms | ratio |")
    print("|---|---|---:|---:|---|---:|---:|---:|")
    for name, la, ra, sa, lb, rb, sb in cases:
        ta, ha, _, _ = measure(ra, base + sa, a.repeats, out)
        tb, hb, units, servers = measure(rb, base + sb, a.repeats, out)
        over = " (over-subscribed: %d ranks on %d cores)" % (rb, os.cpu_count()) if rb > (os.cpu_count() or 2) else ""
        print("| %s | %s | %.3f | %.3f | %s, servers %s%s | %.3f | %.3f | %.2fx |"
              % (name, la, ta, ha, lb, servers, over, tb, hb, ta / tb))
        rows.append((name, la, ta, ha, lb, tb, hb))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "..", "heat3d_async.csv"), "w") as f:
        f.write("comparison,without,ms_per_step,halo_ms,with,ms_per_step_servers,halo_ms_servers\n")
        for r in rows:
            f.write('"%s","%s",%.4f,%.4f,"%s",%.4f,%.4f\n' % r)
    print("ratio > 1: faster with progress processes. CSV: output/bench/heat3d_async.csv")


main()
