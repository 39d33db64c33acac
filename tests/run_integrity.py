#!/usr/bin/python3
"""Integrity of every output (issue 53), at NP ranks:

  * full disk: on a 1 MiB tmpfs every app's output and heat3d's checkpoint
    end with the one clean message ("needs X MiB more ... nothing was
    written"), exit status 1, no MPI_Abort, nothing left in the directory;
    spmv's second vector on a nearly full one too (the first fits);
  * a checkpointing run (checkpoint.every=1, output.overwrite: false)
    prints no "replaces" note for its own checkpoints; a second run prints
    it once, for the earlier run's file;
  * (NP 2 only, with the flips) every dataset and every attribute of a
    checkpoint: one flipped byte is refused on restart, naming it; the
    intact file restarts, and tools/compare says "verified" of it.

Exits 77 (CTest SKIP_RETURN_CODE) with the reason when a tmpfs cannot be
mounted here.

    run_integrity.py NP [--flips]
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch  # noqa: E402

NP = int(sys.argv[1])
FLIPS = "--flips" in sys.argv
OUT = scratch("run_integrity_np%d" % NP)
DECK = {a: os.path.join(SOURCE, "inputs", a, "default.yaml") for a in ("heat3d", "poisson5pt", "spmv",
                                                                         "tensor_contract")}
BAD = ("Traceback", "MPI_Abort", "BAD TERMINATION", "terminate called", "HDF5-DIAG", "error on rank")


def clean_error(label, p, needles):
    err = p.stderr
    check(p.returncode == 1, "%s: exit %d (expected 1)\n%s" % (label, p.returncode, err[-2000:]))
    for n in needles:
        check(n in err, "%s: expected %r in:\n%s" % (label, n, err[-2000:]))
    lines = [x for x in err.splitlines() if ": error:" in x]
    check(len(lines) == 1, "%s: %d error lines:\n%s" % (label, len(lines), err[-2000:]))
    for b in BAD:
        check(b not in err, "%s: %r in stderr:\n%s" % (label, b, err[-2000:]))


# ---------------------------------------------------------------- full disk
mnt = os.path.join(OUT, "tmpfs")
os.makedirs(mnt)
m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], capture_output=True, text=True)
if m.returncode != 0:
    print("SKIP: cannot mount a 1 MiB tmpfs here (%s)" % (m.stderr.strip() or "mount failed"))
    sys.exit(77)
try:
    # every output larger than the file system (2-3 MiB)
    FULL = {
        "heat3d": ["heat3d.grid.nx=64", "heat3d.grid.ny=64", "heat3d.grid.nz=64", "heat3d.time.max_steps=5"],
        "poisson5pt": ["poisson5pt.grid.n=512", "poisson5pt.solver.max_iterations=4",
                       "poisson5pt.solver.tolerance=0"],
        "spmv": ["spmv.matrix.generator=laplace3d", "spmv.matrix.nx=60", "spmv.matrix.ny=60", "spmv.matrix.nz=60"],
        "tensor_contract": ["tensor_contract.extent=24"],
    }
    cases = [(app, "output", sets + ["output.dir=" + mnt, "output.overwrite=true"], "output: writing ")
             for app, sets in FULL.items()]
    # heat3d's checkpoint (the first write of the run), beside the output
    cases.append(("heat3d", "checkpoint", FULL["heat3d"] + ["output.dir=" + mnt, "checkpoint.every=1",
                                                            "checkpoint.file=" + os.path.join(mnt, "ck.h5")],
                  "output: writing temperature to %s.tmp" % os.path.join(mnt, "ck.h5")))
    # nearly full: spmv's y fits (0.2 MiB + 0.25 MiB margin), x no longer
    cases.append(("spmv", "nearly_full", ["spmv.matrix.generator=laplace3d", "spmv.matrix.nx=30",
                                          "spmv.matrix.ny=30", "spmv.matrix.nz=30", "output.dir=" + mnt,
                                          "output.overwrite=true"], "output: writing x to "))
    for app, label, sets, needle in cases:
        if label == "nearly_full":
            with open(os.path.join(mnt, "filler"), "wb") as f:
                f.write(b"\0" * (1024 * 1024 - 640 * 1024))
        p, _ = run_app(app, DECK[app], NP, sets, extra=["--quiet"], expect_ok=False, timeout=90)
        clean_error("%s %s on a full disk" % (app, label), p,
                    [needle, "MiB more, the file system has", "; nothing was written under "])
        left = sorted(set(os.listdir(mnt)) - {"filler"})
        check(not left, "%s %s on a full disk: left %s" % (app, label, left))
    print("full disk at %d rank(s): every app's output, heat3d's checkpoint, spmv nearly full: one clean error, "
          "exit 1, nothing left" % NP)
finally:
    subprocess.run(["umount", mnt], capture_output=True)

# ---------------------------------------------------------------- no "replaces" note for own checkpoints
SMALL = ["heat3d.grid.nx=12", "heat3d.grid.ny=10", "heat3d.grid.nz=8", "heat3d.time.tolerance=0",
         "heat3d.validation.mode=none", "heat3d.time.max_steps=6", "checkpoint.every=1", "output.overwrite=false"]
od = os.path.join(OUT, "notes")
p, _ = run_app("heat3d", DECK["heat3d"], NP, SMALL + ["output.dir=" + od, "output.name=a"], extra=["--quiet"])
check("replaces" not in p.stderr, "a checkpointing run printed a 'replaces' note:\n%s" % p.stderr[-2000:])
# a second run (another output name) replaces the first run's checkpoint: said once
ck = os.path.join(od, "a.restart.h5")
p, _ = run_app("heat3d", DECK["heat3d"], NP, SMALL + ["output.dir=" + od, "output.name=b", "checkpoint.file=" + ck],
               extra=["--quiet"])
check(p.stderr.count("note: this run replaces") == 1 and ck in p.stderr,
      "the earlier run's checkpoint: %d notes\n%s" % (p.stderr.count("replaces"), p.stderr[-2000:]))
print("checkpoint.every=1: no 'replaces' note for a run's own checkpoints; one for an earlier run's file")

if not FLIPS:
    sys.exit(0)

# ---------------------------------------------------------------- flipped bytes in a checkpoint
sys.path.insert(0, os.path.join(SOURCE, "tools"))
from locuslib import attribute_bytes  # noqa: E402

with h5py.File(ck, "r") as f:
    attrs = sorted(n for n in f.attrs if n != "attribute_checksums")
    datasets = sorted(n for n in f if isinstance(f[n], h5py.Dataset))
    chunks = {n: f[n].id.get_chunk_info(0) for n in datasets}
check(set(datasets) == {"temperature", "residual"}, "checkpoint datasets: %s" % datasets)
check({"step", "dt", "validation_mode", "config"} <= set(attrs), "checkpoint attributes: %s" % attrs)
RESTART = ["heat3d.grid.nx=12", "heat3d.grid.ny=10", "heat3d.grid.nz=8", "heat3d.time.tolerance=0",
           "heat3d.validation.mode=none", "heat3d.time.max_steps=8"]


def restart(label, path, ok=False):
    od = os.path.join(OUT, "restart_" + label)
    p, _ = run_app("heat3d", DECK["heat3d"], NP, RESTART + ["checkpoint.restart=" + path, "output.dir=" + od],
                   extra=["--quiet"], expect_ok=ok, timeout=60)
    return p, od


def flipped_attribute(f, name):
    """The attribute's value with one byte flipped (type and shape kept)."""
    v = f.attrs[name]
    raw = bytearray(attribute_bytes(v))
    raw[len(raw) // 2] ^= 0x01
    if isinstance(v, str):
        return raw.decode("utf-8", errors="replace")
    a = np.asarray(v)
    back = np.frombuffer(bytes(raw), dtype="<f8" if a.dtype.kind == "f" else "<i8")
    return back.astype(a.dtype).reshape(a.shape) if a.shape else back.astype(a.dtype)[0]


refused = []
for kind, name in [("dataset", d) for d in datasets] + [("attribute", a) for a in attrs]:
    bad = os.path.join(OUT, "flip_%s_%s.h5" % (kind, name))
    shutil.copy(ck, bad)
    if kind == "dataset":
        info = chunks[name]
        with open(bad, "r+b") as fb:  # one byte inside the data of its first chunk
            fb.seek(info.byte_offset + info.size // 2)
            b = fb.read(1)
            fb.seek(info.byte_offset + info.size // 2)
            fb.write(bytes([b[0] ^ 0x10]))
        needle = "reading dataset %s failed (its Fletcher32 checksum does not match" % name
    else:
        with h5py.File(bad, "r+") as f:
            f.attrs.modify(name, flipped_attribute(f, name))
        needle = "attribute %s does not match its checksum (the file is damaged)" % name
    p, od = restart("%s_%s" % (kind, name), bad)
    clean_error("restart with a flipped byte in %s %s" % (kind, name), p, [needle, "checkpoint.restart"])
    left = os.listdir(od) if os.path.isdir(od) else []
    check(not left, "%s %s: left %s" % (kind, name, left))
    refused.append(name)
# the record itself
bad = os.path.join(OUT, "flip_record.h5")
shutil.copy(ck, bad)
with h5py.File(bad, "r+") as f:
    f.attrs.modify("attribute_checksums", flipped_attribute(f, "attribute_checksums"))
p, _ = restart("record", bad)
clean_error("restart with a flipped byte in attribute_checksums", p, ["attribute_checksums does not match"])
# intact: restarts, and compare verifies it
p, _ = restart("intact", ck, ok=True)
c = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "compare"), ck, ck], capture_output=True, text=True)
check(c.returncode == 0 and c.stdout.startswith("verified:"), "compare: %d\n%s%s" % (c.returncode, c.stdout, c.stderr))
c = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "compare"),
                    os.path.join(OUT, "flip_dataset_residual.h5"), ck], capture_output=True, text=True)
check(c.returncode == 2 and "dataset residual" in c.stderr, "compare of a damaged file: %d\n%s%s"
      % (c.returncode, c.stdout, c.stderr))
print("checkpoint: one flipped byte in each of %d datasets and %d attributes (and the record) refused by name; "
      "the intact file restarts; tools/compare verifies it" % (len(datasets), len(attrs)))
