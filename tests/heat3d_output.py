"""heat3d output: the HDF5 file read back with h5py — field against an
independent NumPy forward Euler, residual history, per-rank timers,
effective config and provenance attributes, summary, XDMF — and the
refusal to overwrite an existing output."""
import os
import subprocess
import sys

import h5py
import numpy as np
import yaml

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, app_path, check, run_app, scratch, summary  # noqa: E402

DECK = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
NX, NY, NZ, STEPS = 7, 6, 5, 12
SETS = ["heat3d.grid.nx=%d" % NX, "heat3d.grid.ny=%d" % NY, "heat3d.grid.nz=%d" % NZ,
        "heat3d.time.max_steps=%d" % STEPS, "heat3d.time.tolerance=0", "heat3d.validation.mode=none",
        "heat3d.physics.t_boundary=3.5", "heat3d.physics.t_initial=-1.25", "heat3d.physics.k0=0.7",
        "output.overwrite=false", "name=h5check"]


def reference():
    """Forward Euler, 7-point stencil, in NumPy, array order (z, y, x)."""
    h = [1.0 / (NX + 1), 1.0 / (NY + 1), 1.0 / (NZ + 1)]
    k0 = 0.7
    dt = min(1.0e-3, 0.125 * min(h) ** 2 / k0)
    u = np.full((NZ + 2, NY + 2, NX + 2), 3.5)
    u[1:-1, 1:-1, 1:-1] = -1.25
    res = []
    for _ in range(STEPS):
        c = u[1:-1, 1:-1, 1:-1]
        lap = ((u[1:-1, 1:-1, :-2] - 2 * c + u[1:-1, 1:-1, 2:]) / h[0] ** 2 +
               (u[1:-1, :-2, 1:-1] - 2 * c + u[1:-1, 2:, 1:-1]) / h[1] ** 2 +
               (u[:-2, 1:-1, 1:-1] - 2 * c + u[2:, 1:-1, 1:-1]) / h[2] ** 2)
        new = c + dt * k0 * lap
        res.append(np.max(np.abs(new - c)))
        u[1:-1, 1:-1, 1:-1] = new
    return u[1:-1, 1:-1, 1:-1], np.array(res), dt, h


def main():
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    out = scratch("heat3d_output_np%d" % ranks)
    p, _ = run_app("heat3d", DECK, ranks, SETS + ["output.dir=" + out], extra=["-q"])
    s = summary(p.stdout)
    path = os.path.join(out, "heat3d.h5")
    check(s["output"] == path, "summary output path %s" % s["output"])
    check(not os.path.exists(path + ".tmp"), "no .tmp left behind")
    ref, ref_res, dt, h = reference()
    with h5py.File(path, "r") as f:
        t = f["temperature"][...]
        check(t.shape == (NZ, NY, NX), "temperature shape %s" % (t.shape,))
        err = np.max(np.abs(t - ref))
        check(err < 1e-12, "field differs from the NumPy reference by %g" % err)
        # spacing in the dataset's axis order (z, y, x), as its layout says
        check(np.allclose(f["temperature"].attrs["spacing"], h[::-1], rtol=0, atol=1e-15), "spacing attribute")
        check("spacing (hz, hy, hx)" in f["temperature"].attrs["layout"], "layout names the spacing order")
        r = f["residual"][...]
        check(len(r) == STEPS and np.allclose(r, ref_res, rtol=1e-10, atol=1e-14), "residual history")
        timers = f["timers"][...]
        cols = f["timers"].attrs["columns"].split(",")
        check(timers.shape == (ranks, len(cols)), "timers shape %s" % (timers.shape,))
        for name in ("total", "compute", "halo", "io"):
            check(name in cols, "timer %s recorded" % name)
        check(np.all(timers[:, cols.index("total")] > 0), "every rank has a total time")
        a = f.attrs
        cfg = yaml.safe_load(a["config"])
        check(cfg["heat3d"]["grid"] == {"nx": NX, "ny": NY, "nz": NZ}, "config echo grid")
        check(cfg["heat3d"]["physics"]["k0"] == 0.7, "config echo k0")
        check(cfg["output"]["overwrite"] is False, "config echo overwrite")
        check(cfg["heat3d"]["time"]["dt"] == 1.0e-3, "defaults present in the echo")
        for key in ("locus_version", "git_commit", "mpi_library", "date", "command_line", "node_map", "deck"):
            check(key in a and len(a[key]) > 0, "provenance attribute %s" % key)
        check(int(a["ranks"]) == ranks, "ranks attribute")
        check("MPICH" in a["mpi_library"] or "MPI" in a["mpi_library"], "MPI library string")
        mach = yaml.safe_load(a["machine"]) if "machine" in a else {}
        for key in ("cpu_vendor", "cpu_features", "cpu_caches"):  # what the run-time paths used
            check(key in mach and str(mach[key]), "machine block has %s" % key)
        if a["mpi_library"].startswith("MPICH"):  # the device decides results (ch4:ucx, ch4:ofi, ...)
            check(", device ch" in a["mpi_library"], "MPICH's device in %r" % a["mpi_library"])
        units = sorted(int(u) for line in a["node_map"].strip().splitlines()
                       for u in line.split("units", 1)[1].split("(")[0].split())
        check(units == list(range(ranks)), "node map lists every unit once: %r" % a["node_map"])
        check(int(a["emulated_node_size"]) == 0, "real nodes unless asked")
        check("heat3d.physics.k0=0.7" in a["command_line"], "command line recorded")
        fs = yaml.safe_load(a["summary"])["locus_summary"]
        check(len(fs["node_map"]["node_of_unit"]) == ranks, "summary node map")
        check(fs["results"]["steps"] == STEPS, "summary in file")
        check(fs["name"] == "h5check", "run name")
        check(abs(fs["results"]["min"] - t.min()) == 0 and abs(fs["results"]["max"] - t.max()) == 0,
              "summary min/max match the field")
        check(fs["results"]["centre"] == t[NZ // 2, NY // 2, NX // 2], "centre temperature")
        check(abs(fs["results"]["dt"] - dt) < 1e-18, "effective dt")
    # The printed config equals the echoed one.
    pc = subprocess.run([app_path("heat3d"), DECK, "--print-config"] + sum([["--set", x] for x in SETS], []) +
                        ["--set", "output.dir=" + out], capture_output=True, text=True, timeout=60)
    check(pc.returncode == 0 and yaml.safe_load(pc.stdout) == cfg, "--print-config equals the echo in the file")
    xmf = open(os.path.join(out, "heat3d.xmf")).read()
    check('Dimensions="%d %d %d"' % (NZ, NY, NX) in xmf and "heat3d.h5:/temperature" in xmf, "XDMF content")

    # Second run without overwrite: refused before computing, first file intact.
    before = os.stat(path).st_mtime_ns
    p, _ = run_app("heat3d", DECK, ranks, SETS + ["output.dir=" + out], extra=["-q"], expect_ok=False)
    check(p.returncode != 0, "existing output must be refused")
    check(p.stderr.count("exists; set output.overwrite: true") == 1, "one clear message: " + p.stderr)
    check(os.stat(path).st_mtime_ns == before, "existing output untouched")
    check(not os.path.exists(path + ".tmp"), "no .tmp after refusal")
    print("HDF5 output verified (max |T - numpy| = %.2e)" % err)


main()
