"""Progress processes under faults: an app that finishes, fails on one unit
(the runtime aborts the job), fails on every unit together (clean exit 1,
the servers are told to stop) or calls MPI_Abort with an offloaded get in
flight, or the core raises a collective error (a mismatched allocate).
Each run must end within the time limit with the expected status,
and no process of it may be left behind."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import BUILD, MPIEXEC, check, fail, scratch  # noqa: E402

EXE = os.path.join(BUILD, "core", "tests", "progress_fault")
# mode -> (exit status, text expected in the output)
MODES = {"none": (0, "none done on"),
         "local": (None, "deliberate local failure on unit 0"),
         "collective": (1, "progress_fault: error: deliberate collective failure"),
         "abort": (None, "MPI_Abort"),
         "core": (1, "allocate: mismatched collective call")}


def leftovers(marker):
    p = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return [line for line in p.stdout.split() if line and int(line) != os.getpid()]


def main():
    ranks = int(sys.argv[1])
    node_size = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    out = scratch("progress_faults_np%d_node%d" % (ranks, node_size))
    for mode, (status, text) in MODES.items():
        deck = os.path.join(out, "fault_%s.yaml" % mode)
        with open(deck, "w") as f:
            f.write("progress_fault:\n  mode: %s\nruntime:\n  node_size: %d\n  progress:\n"
                    "    processes_per_node: 1\n    idle: sleep\n" % (mode, node_size))
        t0 = time.monotonic()
        try:
            p = subprocess.run([MPIEXEC, "-n", str(ranks), EXE, deck], capture_output=True, text=True,
                               timeout=60)
        except subprocess.TimeoutExpired:
            fail("%s: hung (no exit within 60 s)" % mode)
        dt = time.monotonic() - t0
        check(dt < 20, "%s: took %.1f s to end (every error must end the job within seconds)" % (mode, dt))
        both = p.stdout + p.stderr
        if status is None:
            check(p.returncode != 0, "%s: exit status 0 after a failure" % mode)
        else:
            check(p.returncode == status, "%s: exit %d, expected %d\n%s" % (mode, p.returncode, status, both))
        if status is None and text not in both:
            # After an abort, mpiexec may kill the job before the aborting
            # rank's stderr has been forwarded (seen once under load): the
            # exit status, the time and the leftover check still apply.
            print("%s: note: the abort message was not forwarded (exit %d)" % (mode, p.returncode))
        else:
            check(text in both, "%s: expected '%s' in the output (exit %d):\n%s" % (mode, text, p.returncode, both))
        if mode == "collective":
            check(both.count("deliberate collective failure") == 1, "collective error printed once:\n" + both)
        left = leftovers(deck)
        if left:
            time.sleep(2)
            left = leftovers(deck)
        check(not left, "%s: processes left behind: %s" % (mode, left))
        print("%-10s exit %d in %.1f s, no process left" % (mode, p.returncode, dt))


main()
