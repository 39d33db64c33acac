#!/usr/bin/python3
"""comm.remote (rma, message, auto) gives bitwise identical results, and
the route the summary reports is the one taken:

  * heat3d, strategies locus and locus-nb, on emulated nodes of 1 and 2
    ranks: temperature identical to p2p on real nodes; with message every
    pair of unit 0 with another node goes by message, with rma none; the
    same on the staging path (comm.staging: always) on nodes of 1; faces
    of several rows direct (comm.remote_faces: direct, the default: MPI
    datatypes between the fields) and packed, with the summary saying which;
  * at 4 ranks also with progress processes (nodes of 2: a unit and its
    server) and with redirection on (comm.async: on);
  * poisson5pt (in-place Gauss-Seidel: the notified halo with its done
    flags) and spmv's rma mode on emulated nodes of 1: identical to p2p /
    to the vector mode;
  * the message route with persistent requests (comm.remote_requests:
    persistent; MPI_Send_init/MPI_Recv_init once per field, MPI_Startall
    per exchange), immediate ones and eager sends (MPI_Irecv, then a
    blocking MPI_Send; plans of at most 4096 B per pair, larger ones
    immediate): identical, and the summary counts the plans that post
    each way;
  * a calibration file that cannot be read, is malformed (a time not
    positive, persistent_us and eager_us included), a FIFO or a directory is a clear
    error naming the key and the file, on every rank, without a hang.

    remote_routes.py NP
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("remote_routes_np%d" % NP)
HEAT = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
POISSON = os.path.join(SOURCE, "inputs", "poisson5pt", "default.yaml")
SPMV = os.path.join(SOURCE, "inputs", "spmv", "default.yaml")
HEAT_BASE = ["heat3d.grid.nx=11", "heat3d.grid.ny=9", "heat3d.grid.nz=10", "heat3d.time.max_steps=15",
             "heat3d.time.tolerance=0", "heat3d.validation.mode=none", "output.xdmf=false"]
ROUTES = ["rma", "message", "auto"]


def dataset(path, name):
    with h5py.File(path, "r") as f:
        return f[name][...]


def check_routes(label, s, route, remote_pairs):
    """The summary's remote block: mode recorded; with other nodes around,
    message sends unit 0's pairs by message, rma by RMA."""
    r = s["remote"]
    check(r["mode"] == route, "%s: summary says comm.remote %s" % (label, r["mode"]))
    m, q = r["message_pairs_unit0"], r["rma_pairs_unit0"]
    if not remote_pairs:
        check(m == 0 and q == 0, "%s: no other node, yet %d message and %d rma pairs" % (label, m, q))
    elif route == "message":
        check(m > 0 and q == 0, "%s: message chose %d message and %d rma pairs" % (label, m, q))
    elif route == "rma":
        check(m == 0 and q > 0, "%s: rma chose %d message and %d rma pairs" % (label, m, q))
    else:
        check(m + q > 0, "%s: auto decided no pair" % label)


KINDS = ("persistent", "immediate", "eager")
EAGER_MAX_BYTES = 4096  # locus::kEagerMaxBytes


def check_requests(label, s, sets):
    """comm.remote_requests forced: unit 0's message plans all post that way
    (eager: those of at most EAGER_MAX_BYTES per pair; larger ones
    immediate)."""
    r = s["remote"]
    for kind in KINDS:
        if "comm.remote_requests=" + kind not in sets:
            continue
        plans = {k: r[k + "_plans_unit0"] for k in KINDS}
        fallback = kind == "eager" and r["message_max_bytes"] > EAGER_MAX_BYTES
        ok = r["requests"] == kind and plans[kind] + (plans["immediate"] if fallback else 0) > 0
        ok = ok and all(n == 0 for k, n in plans.items() if k != kind and not (fallback and k == "immediate"))
        check(ok, "%s: summary says %s" % (label, r))


def heat3d():
    p, _ = run_app("heat3d", HEAT, NP, HEAT_BASE + ["comm.halo=p2p", "output.dir=" + os.path.join(OUT, "ref")],
                   extra=["-q"])
    ref = dataset(os.path.join(OUT, "ref", "heat3d.h5"), "temperature")
    check(np.ptp(ref) > 1.0, "field evolved")
    cases = []
    for node in (1, 2):
        if node > NP:
            continue
        for halo in ("locus", "locus-nb"):
            for route in ROUTES:
                cases.append(("%s node%d %s" % (halo, node, route), NP,
                              ["comm.halo=" + halo, "runtime.node_size=%d" % node, "comm.remote=" + route],
                              route, NP > node))
    if NP > 1:
        # staged faces (the memory-space path) at 2 ranks: above, over-subscribed, the rest
        for halo in ("locus", "locus-nb") if NP == 2 else ():
            for route in ROUTES:
                cases.append(("%s staged node1 %s" % (halo, route), NP,
                              ["comm.halo=" + halo, "comm.staging=always", "runtime.node_size=1",
                               "comm.remote=" + route], route, True))
        # faces of several rows packed instead of sent as datatypes (the
        # default, direct, runs in the cases above: this grid's rows are 88 B)
        for halo in ("locus", "locus-nb"):
            cases.append(("%s node1 message packed" % halo, NP,
                          ["comm.halo=" + halo, "runtime.node_size=1", "comm.remote=message",
                           "comm.remote_faces=packed"], "message", True))
            # persistent and immediate requests, direct and packed faces
            # (at 2 ranks: 4 over-subscribe the 2 cores)
            for req in KINDS if NP == 2 else ():
                for faces in ("direct", "packed"):
                    cases.append(("%s node1 message %s %s" % (halo, req, faces), NP,
                                  ["comm.halo=" + halo, "runtime.node_size=1", "comm.remote=message",
                                   "comm.remote_faces=" + faces, "comm.remote_requests=" + req], "message", True))
    if NP == 4:
        for route in ("rma", "message"):
            # ranks 1 and 3 serve: units 0 and 1 sit on different nodes
            prog = ["runtime.node_size=2", "runtime.progress.processes_per_node=1", "comm.remote=" + route,
                    "runtime.progress.threshold=256"]
            cases.append(("locus-nb progress " + route, 4, ["comm.halo=locus-nb"] + prog, route, True))
            cases.append(("locus async on " + route, 4, ["comm.halo=locus", "comm.async=on"] + prog, route, True))
    for label, ranks, sets, route, remote in cases:
        d = os.path.join(OUT, label.replace(" ", "_"))
        p, _ = run_app("heat3d", HEAT, ranks, HEAT_BASE + sets + ["output.dir=" + d], extra=["-q"])
        s = summary(p.stdout)
        check_routes(label, s, route, remote)
        check_requests(label, s, sets)
        faces = "packed" if "comm.remote_faces=packed" in sets else "direct"
        check(s["remote"]["faces"] == faces, "%s: summary says faces %s" % (label, s["remote"]["faces"]))
        t = dataset(os.path.join(d, "heat3d.h5"), "temperature")
        diff = np.count_nonzero(t != ref)
        check(diff == 0, "%s: %d cells differ from p2p" % (label, diff))
        print("heat3d %-28s identical to p2p; pairs of unit 0: %d message, %d rma" %
              (label, s["remote"]["message_pairs_unit0"], s["remote"]["rma_pairs_unit0"]))


def poisson5pt():
    base = ["poisson5pt.grid.n=21", "poisson5pt.solver.tolerance=0", "poisson5pt.solver.max_iterations=30",
            "output.xdmf=false"]
    run_app("poisson5pt", POISSON, NP, base + ["comm.halo=p2p", "output.dir=" + os.path.join(OUT, "pref")],
            extra=["-q"])
    ref = dataset(os.path.join(OUT, "pref", "default.h5"), "solution")
    for halo in ("locus", "locus-nb"):
        for route in ROUTES + ["message persistent", "message eager"]:
            label = "%s node1 %s" % (halo, route)
            d = os.path.join(OUT, "poisson_" + label.replace(" ", "_"))
            sets = ["comm.remote=" + route.split()[0]] + ["comm.remote_requests=" + w for w in route.split()[1:]]
            p, _ = run_app("poisson5pt", POISSON, NP, base + ["comm.halo=" + halo, "runtime.node_size=1",
                                                               "output.dir=" + d] + sets, extra=["-q"])
            check_routes("poisson5pt " + label, summary(p.stdout), route.split()[0], NP > 1)
            if NP > 1:
                check_requests("poisson5pt " + label, summary(p.stdout), sets)
            diff = np.count_nonzero(dataset(os.path.join(d, "default.h5"), "solution") != ref)
            check(diff == 0, "poisson5pt %s: %d points differ from p2p" % (label, diff))
            print("poisson5pt %-24s identical to p2p" % label)


def spmv():
    def run(name, sets):
        sets = list(sets) + ["output.dir=" + OUT, "output.name=" + name, "spmv.repetitions=3",
                             "runtime.node_size=1"]
        p, _ = run_app("spmv", SPMV, NP, sets, extra=["--quiet"])
        return dataset(os.path.join(OUT, name + ".h5"), "y"), summary(p.stdout)
    ref, _ = run("spmv_vector", ["spmv.mode=vector"])
    for route in ROUTES + ["message persistent", "message eager"]:
        sets = ["comm.remote=" + route.split()[0]] + ["comm.remote_requests=" + w for w in route.split()[1:]]
        y, s = run("spmv_rma_" + route.replace(" ", "_"), ["spmv.mode=rma"] + sets)
        check_routes("spmv rma " + route, s, route.split()[0], NP > 1)
        if NP > 1:
            check_requests("spmv rma " + route, s, sets)
        check(np.array_equal(y, ref), "spmv rma with comm.remote %s: y differs from the vector mode" % route)
        print("spmv rma %-7s identical to vector" % route)


def bad_calibration():
    bad = os.path.join(OUT, "bad.yaml")
    with open(bad, "w") as f:
        f.write("points:\n  - {bytes: 8, message_us: 1.0, rma_us: 2.0}\n  - {bytes: 4, message_us: x, rma_us: 2}\n")
    negative = os.path.join(OUT, "negative.yaml")
    with open(negative, "w") as f:
        f.write("points:\n  - {bytes: 8, message_us: 1.0, rma_us: 2.0, persistent_us: -1}\n")
    eager_zero = os.path.join(OUT, "eager_zero.yaml")
    with open(eager_zero, "w") as f:
        f.write("points:\n  - {bytes: 8, message_us: 1.0, rma_us: 2.0}\n  - {bytes: 64, message_us: 1.0, rma_us: 2.0, "
                "eager_us: 0}\n")
    fifo = os.path.join(OUT, "calibration.fifo")  # opening it would block: refused before
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    for path, words in ((bad, ["points[1]", "line 3"]), (negative, ["points[0]", "line 2", "must be positive"]),
                        (eager_zero, ["points[1]", "line 3", "must be positive"]),
                        (os.path.join(OUT, "missing.yaml"), ["cannot read"]),
                        (fifo, ["not a regular file (a FIFO"]), (OUT, ["not a regular file (a directory)"])):
        p, _ = run_app("heat3d", HEAT, NP, HEAT_BASE + ["comm.remote=auto", "comm.remote_calibration=" + path,
                                                          "output.dir=" + os.path.join(OUT, "bad")],
                       extra=["-q"], expect_ok=False)
        check(p.returncode != 0, "a bad calibration file was accepted: %s" % path)
        lines = [ln for ln in p.stderr.splitlines() if "comm.remote_calibration" in ln]
        check(len(lines) >= 1 and all(w in lines[0] for w in words) and path in lines[0],
              "the error names the key, the file and %s: %s" % (words, p.stderr.strip()[-400:]))
        check(not os.path.exists(os.path.join(OUT, "bad", "heat3d.h5")), "no output written")
        print("bad calibration %s: %s" % (os.path.basename(path), lines[0].strip()[:160]))


heat3d()
poisson5pt()
spmv()
bad_calibration()
print("PASS")
