#!/usr/bin/python3
"""Redirection changes routes, never results: heat3d, poisson5pt and
tensor_contract (integer values, multiphase) give bitwise identical output
with comm.async off, on (all operations and atomics only), user and auto, with one progress process per node
on emulated nodes (every halo and task crosses a node and, while on, goes
through the target's ghost). Also: LOCUS_ASYNC overrides the deck, the
summary and the HDF5 file record the decisions, and the user mode switches
per phase as the deck says.

    async_invariance.py NP      (NP = 4: two emulated nodes of a unit and a ghost;
                                 NP = 2: one node, unit + ghost; 3: two units + ghost)
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("async_invariance_np%d" % NP)
NODE = ["runtime.node_size=2"] if NP == 4 else []
SERVED = NODE + ["runtime.progress.processes_per_node=1", "comm.adapt.interval=0"]
CASES = {
    "heat3d": ("default", ["heat3d.grid.nx=13", "heat3d.grid.ny=11", "heat3d.grid.nz=9", "heat3d.time.max_steps=20",
                          "heat3d.time.tolerance=0", "heat3d.validation.mode=none", "output.xdmf=false"],
               ["temperature", "residual"]),
    "poisson5pt": ("default", ["poisson5pt.grid.n=31", "poisson5pt.solver.tolerance=0",
                                  "poisson5pt.solver.max_iterations=60", "output.xdmf=false"],
                   ["solution", "residual"]),
    "tensor_contract": ("multiphase", ["tensor_contract.comp.extent=16", "tensor_contract.comp.tile=8",
                                       "tensor_contract.comm.extent=12", "tensor_contract.comm.tile=3",
                                       "tensor_contract.values=integer", "tensor_contract.output.inputs=false"],
                        ["C"]),
}


def datasets(path, names):
    with h5py.File(path, "r") as f:
        return {n: f[n][...] for n in names}, (f["async_on"][...] if "async_on" in f else None)


for app, (deck_name, sets, names) in CASES.items():
    deck = os.path.join(SOURCE, "inputs", app, deck_name + ".yaml")
    ref = None
    for label in ("off", "on", "on-atomics", "user", "auto"):
        mode = label.split("-")[0]
        ops = ["comm.async_ops=atomics"] if label.endswith("-atomics") else []
        d = os.path.join(OUT, app + "_" + label)
        p, _ = run_app(app, deck, NP, sets + SERVED + ops + ["comm.async=" + mode, "output.dir=" + d], extra=["-q"])
        s = summary(p.stdout)
        h5 = [n for n in os.listdir(d) if n.endswith(".h5")][0]
        data, on = datasets(os.path.join(d, h5), names)
        if mode == "off":
            check("async" not in s, "%s off: an async section in the summary" % app)
            ref = data
        else:
            said = {True: "on", False: "off"}.get(s["async"]["mode"], s["async"]["mode"])  # YAML 1.1 reads on as true
            check(said == mode, "%s %s: summary says %s" % (app, mode, said))
            for n in names:
                check(np.array_equal(ref[n], data[n]),
                      "%s: %s differs between async off and %s (max diff %g)" %
                      (app, n, mode, float(np.max(np.abs(ref[n] - data[n])))))
        if app == "tensor_contract" and mode != "off":
            kinds = [ph.get("kind") for ph in s["validation"]["phases"]]
            redirected = [ph.get("redirection") for ph in s["validation"]["phases"]]
            check(len(s["async"]["decisions"]) == len(kinds), "one decision per phase")
            check(on is not None and len(on) == len(kinds), "async_on dataset: one value per phase")
            if mode == "user":
                want = [k == "comp" for k in kinds]
                check(redirected == want, "user: phases ran %s, expected %s" % (redirected, want))
            if mode == "on":
                check(all(r is True for r in redirected), "on: phases ran %s" % redirected)
            # validation.mode none: the task and counter checks passed, C is compared with nothing
            check(s["validation"]["verdict"] == "not checked",
                  "%s %s: verdict %s" % (app, mode, s["validation"]["verdict"]))
    print("%-16s off / on (all, atomics) / user / auto: bitwise identical %s" % (app, ", ".join(names)))

# LOCUS_ASYNC overrides the deck; a bad value and redirection without
# progress processes are clean errors.
env = dict(os.environ, LOCUS_ASYNC="user")
deck = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
small = CASES["heat3d"][1]
p, _ = run_app("heat3d", deck, NP, small + SERVED + ["output.dir=" + os.path.join(OUT, "env")], extra=["-q"], env=env)
check(summary(p.stdout)["async"]["mode"] == "user", "LOCUS_ASYNC=user not applied")
env["LOCUS_ASYNC"] = "sometimes"
p, _ = run_app("heat3d", deck, NP, small + SERVED, extra=["-q"], env=env, expect_ok=False)
check(p.returncode == 1 and "LOCUS_ASYNC=sometimes: must be one of off, on, user, auto" in p.stderr, p.stderr)
p, _ = run_app("heat3d", deck, NP, small + ["comm.async=on"], extra=["-q"], expect_ok=False)
check(p.returncode == 1 and "comm.async: redirection needs progress processes" in p.stderr, p.stderr)
p, _ = run_app("heat3d", deck, NP, small + SERVED + ["comm.async=auto", "comm.adapt.low=0.7"], extra=["-q"],
               expect_ok=False)
check(p.returncode == 1 and "must be below high" in p.stderr, p.stderr)
# auto reads a thresholds file (the one shipped for this machine); a bad one is a clean error
import yaml  # noqa: E402
shipped = os.path.join(SOURCE, "inputs", "async", "thresholds-2core-emulated.yaml")
th = yaml.safe_load(open(shipped))
p, _ = run_app("heat3d", deck, NP, small + SERVED + ["comm.async=auto", "comm.adapt.thresholds=" + shipped,
                                                     "output.dir=" + os.path.join(OUT, "thresholds")], extra=["-q"])
a = summary(p.stdout)["async"]
check(abs(a["low"] - th["low"]) < 1e-9 and abs(a["high"] - th["high"]) < 1e-9 and a["thresholds"] == shipped,
      "thresholds file not applied: %s" % a)
bad = os.path.join(OUT, "bad_thresholds.yaml")
with open(bad, "w") as f:
    f.write("low: 0.5\n")
p, _ = run_app("heat3d", deck, NP, small + SERVED + ["comm.async=auto", "comm.adapt.thresholds=" + bad], extra=["-q"],
               expect_ok=False)
check(p.returncode == 1 and "comm.adapt.thresholds: " + bad + ": needs numbers low and high" in p.stderr, p.stderr)
print("LOCUS_ASYNC override, thresholds files and bad settings: clean")
print("PASS")
