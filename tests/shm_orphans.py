#!/usr/bin/python3
"""A job killed (kill -9) inside MPI_Win_allocate_shared leaves nothing in
/dev/shm (issue 32, item 9): MPICH backs a shared window by a file
/dev/shm/mpich_shar_tmpXXXXXX that it unlinks only once every process of
the node has mapped it, so a kill in between left it behind (sparse, as
large as the window). Rank 0's output watcher, which outlives the job,
removes such files that one of the run's processes held while the run
lived and that no process has open or mapped any more -- and no other
file: a decoy backing file of another "job" (this script's, abandoned,
created while the run lives) must survive the run's death.

The test starts heat3d on a grid whose fields take about 1 GiB of shared
memory, waits for MPICH's backing file to appear, kills the whole job and
expects the file gone within seconds (and the output directory empty),
and the decoy still there.

    shm_orphans.py NP
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import MPIEXEC, SOURCE, app_path, check, scratch, shm_in_use  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("shm_orphans_np%d" % NP)
N = 400  # two fields of 400^3 doubles: 1 GiB of (sparse) shared memory


def job_alive(pgid):
    """Some process of the killed job (process group PGID) still exists:
    killed ranks keep their mappings until the kernel has torn them down, so
    the file counts as in use until then."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):  # a zombie maps nothing
                return True
        except (OSError, IndexError, ValueError):
            continue
    return False


def size_of(name):
    """Size of /dev/shm/NAME, 0 once MPICH has unlinked it (it may go
    between listing the directory and asking for the size)."""
    try:
        return os.stat("/dev/shm/" + name).st_size
    except OSError:
        return 0


def backing_files():
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith("mpich_") and "shar_tmp" in n}
    except OSError:
        return set()


caught = 0
for attempt in range(3):
    before = backing_files()
    od = os.path.join(OUT, "run%d" % attempt)
    cmd = [MPIEXEC, "-n", str(NP), app_path("heat3d"), os.path.join(SOURCE, "inputs", "heat3d", "default.yaml"),
           "--quiet"]
    for s in ("heat3d.grid.nx=%d" % N, "heat3d.grid.ny=%d" % N, "heat3d.grid.nz=%d" % N, "output.dir=" + od):
        cmd += ["--set", s]
    a = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    seen = set()
    while time.monotonic() - t0 < 30 and a.poll() is None:
        seen = {f for f in backing_files() - before if size_of(f) > 10 ** 8}
        if seen:
            break
        time.sleep(0.001)
    # another job's abandoned backing file, created while the run lives
    decoy = "/dev/shm/mpich_shar_tmplocustest%d" % os.getpid()
    with open(decoy, "wb") as f:
        f.write(b"x" * 4096)
    os.killpg(a.pid, signal.SIGKILL)
    a.wait()
    if not seen:
        os.unlink(decoy)
        continue  # MPICH unlinked it before this poll saw it: try again
    caught += 1
    t1 = time.monotonic()
    while time.monotonic() - t1 < 10 and job_alive(a.pid):  # a dying rank still maps it
        time.sleep(0.05)
    # wait until the files are gone (the watcher retries while a dying rank,
    # which may sit in another process group, still maps them); only then
    # judge: a file still there and mapped by nobody is an orphan
    while time.monotonic() - t1 < 10 and seen & backing_files():
        time.sleep(0.1)
    left = {f for f in seen & backing_files() if not shm_in_use(f)}  # (a live one is another job's)
    for f in left:  # do not leave gigabytes behind, even when failing
        try:
            os.unlink("/dev/shm/" + f)
        except OSError:
            pass
    check(not left, "kill -9 inside MPI_Win_allocate_shared left %s in /dev/shm" % sorted(left))
    time.sleep(1.0)  # the watcher retries for a while: give it time to (wrongly) take the decoy
    decoy_kept = os.path.exists(decoy)
    if decoy_kept:
        os.unlink(decoy)
    check(decoy_kept, "the watcher removed %s, a file no process of the run held" % decoy)
    # only the run's status file stays, and it says the run was killed
    status = os.path.join(od, "heat3d.status")

    def leftovers():
        return [f for f in os.listdir(od) if f != "heat3d.status"] if os.path.isdir(od) else []
    while time.monotonic() - t1 < 10 and (leftovers() or (os.path.exists(status) and
                                                          "killed" not in open(status).read())):
        time.sleep(0.1)
    check(not leftovers(), "left in the output directory: %s" % leftovers())
    if os.path.exists(status):
        text = open(status).read()
        check(text.startswith("outcome: killed"), "status of a killed run: %r" % text)
    print("killed while %s existed: removed %.1f s after the kill" % (sorted(seen), time.monotonic() - t1))
    break
check(caught > 0, "never caught MPICH's backing file in 3 runs (nothing tested)")
print("PASS")
