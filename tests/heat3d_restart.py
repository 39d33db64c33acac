"""heat3d checkpoint/restart: a run restarted from a checkpoint finishes
bitwise identical to an uninterrupted run, on the same and on another rank
count; a checkpoint from another grid is refused with a clear error."""
import os
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

DECK = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
BASE = ["heat3d.grid.nx=12", "heat3d.grid.ny=10", "heat3d.grid.nz=9",
        "heat3d.time.tolerance=0", "heat3d.validation.mode=none", "output.xdmf=false"]


def load(path):
    with h5py.File(path, "r") as f:
        return f["temperature"][...], f["residual"][...]


def main():
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    other = 1 if ranks != 1 else 2
    out = scratch("heat3d_restart_np%d" % ranks)
    full = os.path.join(out, "full")
    run_app("heat3d", DECK, ranks, BASE + ["heat3d.time.max_steps=40", "output.dir=" + full], extra=["-q"])

    # Interrupted at step 25 with checkpoints every 10 steps: the last is step 20.
    part = os.path.join(out, "part")
    ckpt = os.path.join(part, "heat3d.restart.h5")
    run_app("heat3d", DECK, ranks, BASE + ["heat3d.time.max_steps=25", "checkpoint.every=10",
                                           "output.dir=" + part], extra=["-q"])
    with h5py.File(ckpt, "r") as f:
        check(int(f.attrs["step"]) == 20, "checkpoint at step 20, got %s" % f.attrs["step"])
        check(len(f["residual"]) == 20, "checkpoint holds 20 residuals")

    t_full, r_full = load(os.path.join(full, "heat3d.h5"))
    for n in (ranks, other):
        resumed = os.path.join(out, "resumed_np%d" % n)
        p, _ = run_app("heat3d", DECK, n, BASE + ["heat3d.time.max_steps=40", "checkpoint.restart=" + ckpt,
                                                  "output.dir=" + resumed], extra=["-q"])
        s = summary(p.stdout)
        check(s["results"]["restart_step"] == 20, "restart_step 20")
        check(s["results"]["steps"] == 40, "steps 40 after restart")
        t, r = load(os.path.join(resumed, "heat3d.h5"))
        check(np.array_equal(t, t_full), "restart on %d ranks: field differs from the uninterrupted run "
              "(max %g)" % (n, np.max(np.abs(t - t_full))))
        check(np.array_equal(r, r_full), "restart on %d ranks: residual history differs" % n)
        # The same verdict from the user-facing tool.
        tool = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "compare"),
                               os.path.join(full, "heat3d.h5"), os.path.join(resumed, "heat3d.h5")],
                              capture_output=True, text=True, timeout=60)
        check(tool.returncode == 0 and "identical (bitwise)" in tool.stdout, "compare: " + tool.stdout)
        print("restart from step 20 on %d rank(s): bitwise identical to the uninterrupted run" % n)
    tool = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "compare"),
                           os.path.join(full, "heat3d.h5"), os.path.join(part, "heat3d.h5")],
                          capture_output=True, text=True, timeout=60)
    check(tool.returncode == 1 and "DIFFER" in tool.stdout, "compare must see step 25 != step 40: " + tool.stdout)

    # A checkpoint of another grid is refused on every rank, cleanly.
    bad = os.path.join(out, "bad")
    p, _ = run_app("heat3d", DECK, ranks, BASE + ["heat3d.grid.nx=14", "checkpoint.restart=" + ckpt,
                                                  "output.dir=" + bad], extra=["-q"], expect_ok=False)
    check(p.returncode != 0, "restart with another grid must fail")
    check("written with dt" in p.stderr or "but the run's grid is" in p.stderr, "clear message: " + p.stderr)
    check(not os.path.exists(os.path.join(bad, "heat3d.h5")), "no output after a refused restart")
    p, _ = run_app("heat3d", DECK, ranks, BASE + ["checkpoint.restart=" + os.path.join(out, "nope.h5"),
                                                  "output.dir=" + bad], extra=["-q"], expect_ok=False)
    check(p.returncode != 0 and "nope.h5: no such file" in p.stderr, "missing restart file: " + p.stderr)


main()
