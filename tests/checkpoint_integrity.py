#!/usr/bin/python3
"""Files that check themselves (issue 32):

  * field datasets in outputs and checkpoints are chunked with HDF5's
    Fletcher32 checksum (heat3d's temperature, poisson5pt's u);
  * a restart file with flipped bytes inside its temperature data is
    refused, on every rank, with one error naming the key, the file and
    the dataset (before: 40 of 150 such files ran silently); the intact
    file still restarts;
  * a checkpoint killed (kill -9) while it holds its .lock leaves neither
    the .lock nor the .tmp behind: the output watcher starts as soon as the
    lock is taken (LOCUS_TEST_HOLD_LOCK_MS makes every output hold its lock
    that long before HDF5 creates the file: the kill lands there).

    checkpoint_integrity.py NP
"""
import os
import shutil
import signal
import subprocess
import sys
import time

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import MPIEXEC, SOURCE, app_path, check, full_coverage, run_app, scratch  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("checkpoint_integrity_np%d" % NP)
DECK = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
SMALL = ["heat3d.grid.nx=20", "heat3d.grid.ny=16", "heat3d.grid.nz=12", "heat3d.time.tolerance=0",
         "heat3d.validation.mode=none"]

ck = os.path.join(OUT, "good.restart.h5")
run_app("heat3d", DECK, NP, SMALL + ["heat3d.time.max_steps=6", "checkpoint.every=3", "checkpoint.file=" + ck,
                                     "output.dir=" + os.path.join(OUT, "src")], extra=["--quiet"])
for path, name in ((ck, "temperature"), (os.path.join(OUT, "src", "heat3d.h5"), "temperature")):
    with h5py.File(path, "r") as f:
        d = f[name]
        check(d.fletcher32 and d.chunks is not None, "%s:%s: chunks %s, fletcher32 %s" % (path, name, d.chunks,
                                                                                        d.fletcher32))
od = os.path.join(OUT, "poisson")
fields = ["(not at 4 ranks)"]
if full_coverage(NP):  # else heat3d alone (over-subscribed launches are slow)
    run_app("poisson5pt", os.path.join(SOURCE, "inputs", "poisson5pt", "default.yaml"), NP,
            ["poisson5pt.grid.n=31", "output.dir=" + od], extra=["--quiet"])
    with h5py.File(os.path.join(od, "default.h5"), "r") as f:
        fields = [k for k in f if getattr(f[k], "ndim", 0) == 2 and f[k].shape[0] == 31]
        check(fields and all(f[k].fletcher32 for k in fields), "poisson5pt fields without checksums: %s" % fields)
print("heat3d, poisson5pt fields are chunked with Fletcher32 (%s)" % ", ".join(fields))

# where the temperature's chunks lie in the file
with h5py.File(ck, "r") as f:
    did = f["temperature"].id
    chunks = [did.get_chunk_info(i) for i in range(did.get_num_chunks())]
check(chunks, "no chunks")


def expect_refused(label, bad, needle):
    od = os.path.join(OUT, "run_" + label)
    p, dt = run_app("heat3d", DECK, NP, SMALL + ["heat3d.time.max_steps=12", "checkpoint.restart=" + bad,
                                                 "output.dir=" + od], extra=["--quiet"], expect_ok=False, timeout=60)
    err = p.stderr
    check(p.returncode == 1, "%s: exit %d (expected 1)\n%s" % (label, p.returncode, err[-2000:]))
    check(needle in err, "%s: expected %r in:\n%s" % (label, needle, err[-2000:]))
    lines = [x for x in err.splitlines() if x.startswith("heat3d: error:")]
    check(len(lines) == 1, "%s: %d error lines:\n%s" % (label, len(lines), err[-2000:]))
    for b in ("Traceback", "MPI_Abort", "BAD TERMINATION", "backtrace", "terminate called", "HDF5-DIAG"):
        check(b not in err, "%s: %s in stderr" % (label, b))
    left = os.listdir(od) if os.path.isdir(od) else []
    check(not left, "%s: left %s" % (label, left))
    return lines[0]


# flip one byte at several places in the data of the first, a middle and
# the last chunk (one damaged file each)
# (two files where over-subscribed launches are slow, full_coverage)
cases = []
for ci in sorted({0, len(chunks) // 2, len(chunks) - 1}):
    info = chunks[ci]
    for frac in (0.0, 0.5, 0.99) if full_coverage(NP) else (0.5,):
        cases.append((ci, info.byte_offset + int(frac * (info.size - 5))))
if not full_coverage(NP):
    cases = [cases[0], cases[-1]]
for n, (ci, at) in enumerate(cases):
    bad = os.path.join(OUT, "flip%d.restart.h5" % n)
    shutil.copy(ck, bad)
    with open(bad, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x10]))
    line = expect_refused("flip%d" % n, bad,
                          "--set checkpoint.restart=%s: checkpoint.restart: %s: reading dataset temperature failed "
                          "(its Fletcher32 checksum does not match: the file is damaged)" % (bad, bad))
print("%d restart files with a flipped data byte (chunks %s): refused: %s" %
      (len(cases), sorted({c for c, _ in cases}), line[:140]))
run_app("heat3d", DECK, NP, SMALL + ["heat3d.time.max_steps=12", "checkpoint.restart=" + ck,
                                     "output.dir=" + os.path.join(OUT, "run_good")], extra=["--quiet"])
print("the intact checkpoint restarts")

# kill -9 while a checkpoint holds its lock: nothing left (1 and 2 ranks:
# only rank 0 takes the lock)
if NP > 2:
    print("PASS")
    sys.exit(0)
od = os.path.join(OUT, "killed")
ckk = os.path.join(od, "heat3d.restart.h5")
cmd = [MPIEXEC, "-n", str(NP), app_path("heat3d"), DECK, "--quiet"]
for s in SMALL + ["heat3d.time.max_steps=1000000", "checkpoint.every=2", "output.dir=" + od]:
    cmd += ["--set", s]
env = dict(os.environ, LOCUS_TEST_HOLD_LOCK_MS="3000")
a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
t0 = time.monotonic()
while not os.path.exists(ckk + ".lock") and time.monotonic() - t0 < 30:
    time.sleep(0.05)
check(os.path.exists(ckk + ".lock"), "the checkpoint's lock never appeared")
time.sleep(0.5)  # inside the hold: the lock is taken, HDF5 has not created the file
os.killpg(a.pid, signal.SIGKILL)
a.communicate(timeout=30)
t1 = time.monotonic()
left = []
while time.monotonic() - t1 < 10:
    left = [n for n in os.listdir(od) if n.endswith((".lock", ".tmp"))]
    if not left:
        break
    time.sleep(0.1)
check(not left, "kill -9 during a checkpoint left %s" % left)
print("kill -9 while a checkpoint holds its lock: nothing left (%.1f s)" % (time.monotonic() - t1))
print("PASS")
