"""All halo strategies give bitwise identical heat3d fields, with real and
with emulated nodes (node size 1: every neighbour remote; 2: mixed), and
with comm.locality off."""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

DECK = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
BASE = ["heat3d.grid.nx=11", "heat3d.grid.ny=9", "heat3d.grid.nz=10", "heat3d.time.max_steps=20",
        "heat3d.time.tolerance=0", "heat3d.validation.mode=none", "output.xdmf=false"]
STRATEGIES = ["p2p", "rma", "locus", "locus-nb", "locus-barrier"]


def field(path):
    with h5py.File(path, "r") as f:
        return f["temperature"][...]


def main():
    ranks = int(sys.argv[1])
    procs = sys.argv[2] if len(sys.argv) > 2 else "auto"
    out = scratch("heat3d_strategies_np%d" % ranks)
    ref = None
    for node_size in (0, 1, 2):
        if node_size > ranks:
            continue
        for halo in STRATEGIES + ["locus-nolocality"]:
            sets = BASE + ["heat3d.procs=" + procs, "runtime.node_size=%d" % node_size]
            if halo == "locus-nolocality":
                sets += ["comm.halo=locus", "comm.locality=false"]
            else:
                sets += ["comm.halo=" + halo]
            d = os.path.join(out, "%s_node%d" % (halo, node_size))
            p, _ = run_app("heat3d", DECK, ranks, sets + ["output.dir=" + d], extra=["-q"])
            s = summary(p.stdout)
            check(s["node_map"]["emulated_node_size"] == node_size, "node size recorded")
            if node_size:
                check(len(set(s["node_map"]["node_of_unit"])) == (ranks + node_size - 1) // node_size,
                      "emulated node map %s" % s["node_map"])
            t = field(os.path.join(d, "heat3d.h5"))
            if ref is None:
                ref = t
                check(np.ptp(t) > 1.0, "field evolved")
            diff = np.count_nonzero(t != ref)
            check(diff == 0, "%s with node size %d: %d cells differ from p2p" % (halo, node_size, diff))
            print("%-17s node size %d: bitwise identical to p2p on real nodes" % (halo, node_size))


main()
