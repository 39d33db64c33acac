#!/usr/bin/python3
"""A terminated run never exits 0 (issue 53).

MPICH's Hydra returns 0 for about a quarter of the runs it terminated
(SIGTERM or SIGINT to mpiexec, `timeout`). Rank 0 records the outcome in
<output.dir>/<output.name>.status and `./locus run` reports it:

  * SIGTERM to mpiexec during a run, REPEAT times: `./locus run` exits
    non-zero every time, and the status file says "terminated by signal 15";
  * the launcher's own status is printed for comparison (how often Hydra
    said 0);
  * a completed run: status 0 and "completed"; a run that fails (a bad
    key) leaves no status file.

    run_outcome.py [REPEAT]
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import BUILD, SOURCE, check, run_app, scratch  # noqa: E402

REPEAT = int(sys.argv[1]) if len(sys.argv) > 1 else 5
OUT = scratch("run_outcome")
LOCUS = os.path.join(SOURCE, "locus")
ENV = dict(os.environ, LOCUS_BUILD_DIR=BUILD)


def mpiexec_of(marker):
    """The pid of the mpiexec process whose command line holds MARKER."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]).startswith(b"mpiexec") and any(marker.encode() in a for a in argv):
            return int(pid)
    return None


def status_of(d):
    try:
        with open(os.path.join(d, "heat3d.status")) as f:
            return f.read()
    except OSError:
        return ""


launcher_zero = recorded = 0
for i in range(REPEAT):
    od = os.path.join(OUT, "term%d" % i)
    p = subprocess.Popen([LOCUS, "run", "-n", "2", "--quiet", "--set", "output.dir=" + od,
                          "--set", "heat3d.time.max_steps=100000000", "--set", "heat3d.time.tolerance=0",
                          "--set", "heat3d.grid.nx=32", "--set", "heat3d.grid.ny=32", "--set", "heat3d.grid.nz=32"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    t0 = time.monotonic()
    while "running" not in status_of(od) and time.monotonic() - t0 < 30 and p.poll() is None:
        time.sleep(0.05)
    check("running" in status_of(od), "run %d: no 'running' status within 30 s" % i)
    time.sleep(0.2 + 0.1 * i)  # land at different points of the time loop
    mp = mpiexec_of(od)
    check(mp is not None, "run %d: no mpiexec process found" % i)
    os.kill(mp, signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, "run %d: ./locus run did not end within 60 s of the SIGTERM" % i)
    st = status_of(od)
    check(p.returncode != 0, "run %d: ./locus run exited 0 after SIGTERM to mpiexec\nstatus: %s\n%s"
          % (i, st, err[-1500:]))
    # rank 0 recorded the signal, or was killed outright (SIGKILL from the
    # launcher after another rank ended): then its status still says running
    check("terminated by signal 15" in st or "outcome: running" in st, "run %d: status file says %r" % (i, st))
    recorded += "terminated by signal 15" in st
    check("the run was terminated by signal 15" in err or "the run did not complete" in err or p.returncode == 143,
          "run %d: exit %d without the reason:\n%s" % (i, p.returncode, err[-1500:]))
    check(not [n for n in os.listdir(od) if n.endswith((".tmp", ".lock"))], "run %d: leftovers %s"
          % (i, os.listdir(od)))
    if "the launcher returned 0)" in err:
        launcher_zero += 1  # the driver had to correct the launcher's 0
print("SIGTERM to mpiexec, %d runs: ./locus run non-zero every time (status 'terminated by signal 15' in %d, "
      "'running' (rank 0 killed outright) in the others; the driver corrected a launcher status 0 in %d)"
      % (REPEAT, recorded, launcher_zero))

# completed: 0 and "completed"; a deck error: non-zero and no status file
od = os.path.join(OUT, "done")
p = subprocess.run([LOCUS, "run", "-n", "1", "--quiet", "--set", "output.dir=" + od, "--set", "heat3d.grid.nx=12",
                    "--set", "heat3d.grid.ny=12", "--set", "heat3d.grid.nz=12"],
                   capture_output=True, text=True, env=ENV, timeout=120)
check(p.returncode == 0 and "outcome: completed\nexit_status: 0" in status_of(od),
      "completed run: exit %d, status %r\n%s" % (p.returncode, status_of(od), p.stderr[-1500:]))
# the same run again, refused (its output exists): the completed run's
# status file stays as it was
before = status_of(od)
p = subprocess.run(p.args + ["--set", "output.overwrite=false"], capture_output=True, text=True, env=ENV, timeout=120)
check(p.returncode != 0 and "exists" in p.stderr and status_of(od) == before,
      "a refused run: exit %d, the other run's status %r became %r\n%s" % (
          p.returncode, before, status_of(od), p.stderr[-1500:]))
# the app alone (no driver to clear the way), a FIFO where its status goes:
# it is not read (that would block), the run replaces it with its status
od = os.path.join(OUT, "fifo")
os.makedirs(od, exist_ok=True)
if os.path.lexists(os.path.join(od, "heat3d.status")):
    os.unlink(os.path.join(od, "heat3d.status"))
os.mkfifo(os.path.join(od, "heat3d.status"))
run_app("heat3d", os.path.join(SOURCE, "inputs", "heat3d", "default.yaml"), 1,
        ["output.dir=" + od, "heat3d.grid.nx=12", "heat3d.grid.ny=12", "heat3d.grid.nz=12"], extra=["--quiet"],
        timeout=60)
check("outcome: completed\nexit_status: 0" in status_of(od), "a FIFO as the status file: %r" % status_of(od))
od = os.path.join(OUT, "bad")
p = subprocess.run([LOCUS, "run", "-n", "1", "--quiet", "--set", "output.dir=" + od, "--set", "heat3d.procs=[3,1,1]",
                    "--set", "heat3d.grid.nx=12"], capture_output=True, text=True, env=ENV, timeout=120)
check(p.returncode != 0 and not os.path.exists(od), "failed run: exit %d, left %s\n%s"
      % (p.returncode, os.listdir(od) if os.path.isdir(od) else "nothing", p.stderr[-1500:]))
print("completed run: 0 and 'completed'; a failed run: non-zero, no status file")
