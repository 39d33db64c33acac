"""The progress line: shown on a terminal (emulated with script(1)) every
LOCUS_PROGRESS_INTERVAL seconds,
absent with --quiet and when stderr is not a terminal."""
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, app_path, check, scratch  # noqa: E402

DECK = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")


def command(out, quiet, launcher):
    # Long enough for several refreshes at LOCUS_PROGRESS_INTERVAL (0.1 s,
    # set by main): 1.6 G cell updates (8000 steps of 64^3 took 0.96 s on 2
    # ranks with the host in its fast state).
    sets = ["heat3d.grid.nx=64", "heat3d.grid.ny=64", "heat3d.grid.nz=64", "heat3d.time.tolerance=0",
            "heat3d.time.max_steps=6000", "heat3d.validation.mode=none", "output.dir=" + out,
            "output.write_field=false"]
    if launcher == "locus":  # through the driver and mpiexec, as users run it
        cmd = [os.path.join(SOURCE, "locus"), "run", DECK, "-n", "2"]
    else:  # the binary alone (a singleton MPI run)
        cmd = [app_path("heat3d"), DECK]
    for s in sets:
        cmd += ["--set", s]
    return cmd + (["--quiet"] if quiet else [])


def on_terminal(cmd):
    # Bytes, not text: universal newlines would turn the line's \r into \n.
    p = subprocess.run(["script", "-qec", shlex.join(cmd), "/dev/null"], capture_output=True, timeout=300)
    p.stdout = p.stdout.decode(errors="replace")
    return p


def main():
    out = scratch("heat3d_progress")
    os.environ["LOCUS_PROGRESS_INTERVAL"] = "0.1"
    for launcher in ("binary", "locus"):
        p = on_terminal(command(out, False, launcher))
        check(p.returncode == 0, "run on a terminal failed: " + p.stdout[-2000:])
        check("\r  step " in p.stdout and "residual" in p.stdout and "eta" in p.stdout,
              "progress line on a terminal (%s): %r" % (launcher, p.stdout[:300]))
        check(p.stdout.count("\r  step ") >= 2, "LOCUS_PROGRESS_INTERVAL=0.1: one refresh only in %r" % p.stdout[:300])
        p = on_terminal(command(out, True, launcher))
        check(p.returncode == 0 and "\r  step " not in p.stdout, "--quiet shows no progress line")
    p = subprocess.run(command(out, False, "locus"), capture_output=True, timeout=300)
    p.stderr = p.stderr.decode(errors="replace")
    check(p.returncode == 0 and "\r" not in p.stderr and "step " not in p.stderr,
          "no progress line when stderr is not a terminal: %r" % p.stderr[:300])
    print("progress line shown only on a terminal, hidden by --quiet")


main()
