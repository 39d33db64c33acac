#!/usr/bin/python3
"""Edge inputs end cleanly, for every app: a non-zero exit within seconds,
one message naming the input, no traceback or MPI abort, no process left,
no file under the final name and no .tmp or .lock left behind.

Classes: decks that are not regular files (FIFO, directory, device) or
too large, trailing YAML documents, old-Mac line ends, NUL bytes;
multi-document and multi-line --set values; output names and directories
that cannot be files; a directory where the output or its .xmf.tmp would
go; a second run on the same output while the first runs (refused by the
lock); SIGTERM to a rank and SIGINT to the launcher (the unfinished output
removed); a checkpoint on the output file; a FIFO as restart file;
thousands of unknown keys (messages capped); heat3d with max_steps 0;
kill -9 of a unit and of a progress process and SIGTERM to one rank, for
every app (nothing left in the output directory, no process left).

    hardening.py NP
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import MPIEXEC, SOURCE, app_path, check, full_coverage, run_app, scratch  # noqa: E402

NP = int(sys.argv[1])
# a run killed half way may have left its tmpfs mounts behind
for _stale in ("full_fs", "ro_fs"):
    subprocess.run(["umount", os.path.abspath(os.path.join("scratch", "hardening_np%d" % NP, _stale))],
                   capture_output=True)
OUT = scratch("hardening_np%d" % NP)
APPS = {
    "heat3d": os.path.join(SOURCE, "inputs", "heat3d", "default.yaml"),
    "poisson5pt": os.path.join(SOURCE, "inputs", "poisson5pt", "default.yaml"),
    "spmv": os.path.join(SOURCE, "inputs", "spmv", "default.yaml"),
    "tensor_contract": os.path.join(SOURCE, "inputs", "tensor_contract", "default.yaml"),
}
# Where over-subscribed launches are slow (locus_testlib.full_coverage: the
# sanitizer build), above 2 ranks the input classes that do not depend on
# the rank count (deck files, output names, restart files, file systems:
# read and refused on every rank alike, checked at 1 and 2 ranks) run for
# heat3d only, the restart files and file systems not at all; signals and
# kills run for every app.
FULL = full_coverage(NP)
BAD = ("Traceback", "Assertion", "MPI_Abort", "BAD TERMINATION", "backtrace", "terminate called")


def leftovers(d):
    if not os.path.isdir(d):
        return []
    return [n for n in os.listdir(d) if n.endswith((".tmp", ".lock")) or n.endswith(".h5")]


def expect(app, label, deck, sets, needle, outdir=None, status=1):
    outdir = outdir or os.path.join(OUT, app + "_" + label)
    t0 = time.monotonic()
    p, _ = run_app(app, deck, NP, list(sets) + ["output.dir=" + outdir], extra=["--quiet"], expect_ok=False,
                   timeout=60)
    dt = time.monotonic() - t0
    err = p.stderr
    check(p.returncode == status, "%s %s: exit %d (expected %d)\n%s" % (app, label, p.returncode, status, err))
    check(needle in err, "%s %s: expected %r in:\n%s" % (app, label, needle, err[-2000:]))
    check(err.count("error:") == 1, "%s %s: %d error lines:\n%s" % (app, label, err.count("error:"), err[-2000:]))
    for b in BAD:
        check(b not in err, "%s %s: %s in stderr" % (app, label, b))
    check(dt < 30, "%s %s: took %.0f s" % (app, label, dt))
    return outdir


fifo = os.path.join(OUT, "fifo.yaml")
os.mkfifo(fifo)
big = os.path.join(OUT, "big.yaml")
with open(big, "wb") as f:
    f.truncate(17 << 20)
two = os.path.join(OUT, "two.yaml")
cr = os.path.join(OUT, "cr.yaml")
nul = os.path.join(OUT, "nul.yaml")
tab = os.path.join(OUT, "tab.yaml")
deep = os.path.join(OUT, "deep.yaml")
with open(deep, "w") as f:
    f.write("# it's a deck\nname: " + "[" * 1000 + "]" * 1000 + "\n")
many = os.path.join(OUT, "many.yaml")
with open(many, "w") as f:
    f.write("".join("unknown_key_%d: 1\n" % i for i in range(3000)))

for app, deck in APPS.items() if FULL else [("heat3d", APPS["heat3d"])]:
    with open(two, "w") as f:
        f.write(open(deck).read() + "\n---\n%s: {}\n" % app)
    with open(cr, "w", newline="") as f:
        f.write("# a deck\r%s:\r  x: 1\r" % app)
    with open(nul, "wb") as f:
        f.write(b"name: a\x00b\n")
    with open(tab, "w") as f:
        f.write("%s:\n\tx: 1\n" % app)
    for label, d, needle in (("fifo", fifo, "not a regular file"), ("directory", OUT, "is a directory, not a deck"),
                             ("device", "/dev/zero", "not a regular file"), ("big", big, "a deck may have at most"),
                             ("two_docs", two, "a second YAML document"), ("cr", cr, "old Mac line ends"),
                             ("nul", nul, "a NUL byte"), ("tab", tab, "tab.yaml:2:1: a tab in the indentation"),
                             ("deep", deep, "deep.yaml:2: brackets nested 1000 deep")):
        expect(app, label, d, [], needle)
    for label, sets, needle in (
            ("set_docs", ["name=a\n---\nb"], "a value is one line of text"),
            ("set_docs2", ["name=a --- b"], None),
            ("empty_name", ["output.name="], "output.name"),
            ("slash_name", ["output.name=a/b"], "a file stem, not a path"),
            ("long_name", ["output.name=" + "x" * 300], "file names have at most 255"),
            ("empty_dir", ["output.dir=''"], "use . for the working directory"),
            ("node_size", ["runtime.node_size=4294967297"], "runtime.node_size: must be an integer in")):
        if needle is None:
            continue
        if label == "empty_dir":
            p, _ = run_app(app, deck, NP, ["output.dir="], extra=["--quiet"], expect_ok=False, timeout=60)
            check(p.returncode == 1 and ("output.dir" in p.stderr), "%s empty dir: %s" % (app, p.stderr))
            p, _ = run_app(app, deck, NP, ["output.dir=''"], extra=["--quiet"], expect_ok=False, timeout=60)
            check(p.returncode == 1 and needle in p.stderr, "%s empty dir '': %s" % (app, p.stderr))
            continue
        expect(app, label, deck, sets, needle)
    r = expect(app, "many_keys", many, [], "more problems in")
    # a directory where the output goes
    od = os.path.join(OUT, app + "_dir_out")
    os.makedirs(os.path.join(od, "x.h5"))
    expect(app, "h5_is_dir", deck, ["output.name=x"], "x.h5 is a directory", outdir=od)
    check(leftovers(od) == ["x.h5"], "%s: leftovers %s" % (app, leftovers(od)))
    print("%-16s bad decks, values, names and directories: clean errors" % app)

# heat3d: max_steps 0 completes; .xmf.tmp directory; checkpoint on the output; FIFO restart
h = APPS["heat3d"]
od = os.path.join(OUT, "steps0")
p, _ = run_app("heat3d", h, NP, ["heat3d.time.max_steps=0", "output.dir=" + od], extra=["--quiet"], expect_ok=False)
check("locus_summary" in p.stdout and "steps: 0" in p.stdout, "max_steps 0: no summary\n" + p.stderr)
check(not [n for n in os.listdir(od) if n.endswith((".tmp", ".lock"))], "max_steps 0: leftovers")
od = os.path.join(OUT, "xmf_dir")
os.makedirs(os.path.join(od, "heat3d.xmf.tmp"))
expect("heat3d", "xmf_tmp_dir", h, ["heat3d.time.max_steps=3", "heat3d.grid.nx=8", "heat3d.grid.ny=8",
                                    "heat3d.grid.nz=8"], "heat3d.xmf.tmp is a directory", outdir=od)
od = os.path.join(OUT, "ckpt")
expect("heat3d", "checkpoint_on_output", h, ["checkpoint.file=" + os.path.join(od, "heat3d.h5"),
                                              "checkpoint.every=1"], "is the run's output file", outdir=od)
check(leftovers(od) == [], "checkpoint: leftovers %s" % leftovers(od))
rf = os.path.join(OUT, "restart_fifo.h5")
os.mkfifo(rf)
expect("heat3d", "restart_fifo", h, ["checkpoint.restart=" + rf], "not a regular file")
pdeck = os.path.join(OUT, "procs.yaml")
with open(pdeck, "w") as f:
    f.write("heat3d:\n  procs: [%d, 1, 1]\n" % (NP + 1))
expect("heat3d", "procs_line", pdeck, [], "procs.yaml:2:10: heat3d.procs: process grid [%d, 1, 1] needs" % (NP + 1))
nulr = os.path.join(OUT, "restart_nul.yaml")
with open(nulr, "w") as f:
    f.write('checkpoint:\n  restart: "ab\\0cd.h5"\n')
expect("heat3d", "restart_nul", nulr, [], 'restart_nul.yaml:2:12: checkpoint.restart: contains a NUL byte ("ab\\0cd.h5")')
expect("heat3d", "restart_missing", h, ["checkpoint.restart=missing.h5"],
       "--set checkpoint.restart=missing.h5: checkpoint.restart: missing.h5: no such file")
# the largest staging area the schema allows runs; one byte more is refused
small_run = ["heat3d.grid.nx=8", "heat3d.grid.ny=8", "heat3d.grid.nz=8", "heat3d.time.max_steps=5",
             "heat3d.validation.mode=none"]
expect("heat3d", "staging_range", h, ["runtime.progress.staging=%d" % ((1 << 30) + 1)],
       "runtime.progress.staging: must be an integer in [4096, 1073741824]")
if NP >= 2:
    od = os.path.join(OUT, "staging_max")
    p, dt = run_app("heat3d", h, NP, small_run + ["runtime.progress.staging=%d" % (1 << 30),
                                                 "runtime.progress.processes_per_node=1", "output.dir=" + od],
                    extra=["--quiet"], timeout=60)
    check("verdict" in p.stdout and dt < 30, "staging at the maximum: %.0f s\n%s" % (dt, p.stderr))
print("heat3d           max_steps 0, .xmf.tmp directory, checkpoint on output, restart NUL/missing/FIFO, "
      "staging range, procs: clean")

# restart files are validated before use
import h5py  # noqa: E402
sys.path.insert(0, os.path.join(SOURCE, "tools"))
from locuslib import checksum_record  # noqa: E402
import numpy as np  # noqa: E402
small = ["heat3d.grid.nx=8", "heat3d.grid.ny=8", "heat3d.grid.nz=8"]
od = os.path.join(OUT, "ckpt_src")
ck = os.path.join(OUT, "good.restart.h5")
if FULL:
    run_app("heat3d", h, NP, small + ["heat3d.time.max_steps=6", "heat3d.time.tolerance=0", "checkpoint.every=3",
                                      "checkpoint.file=" + ck, "output.dir=" + od], extra=["--quiet"], expect_ok=False)
    check(os.path.exists(ck), "no checkpoint written")


def damaged(label, edit, needle):
    import shutil
    bad = os.path.join(OUT, "restart_%s.h5" % label)
    shutil.copy(ck, bad)
    with h5py.File(bad, "r+") as f:
        edit(f)
        # a consistent file with a bad value (not a damaged one, which the
        # attribute checksums refuse first: run_integrity.py): record the
        # edited attributes' checksums as a writer would
        f.attrs["attribute_checksums"] = checksum_record(f)
    expect("heat3d", "restart_" + label, h, small + ["heat3d.time.max_steps=100", "checkpoint.restart=" + bad],
           needle)


def set_attr(name, value):
    def edit(f):
        del f.attrs[name]
        f.attrs[name] = value
    return edit


def nan_field(f):
    t = np.array(f["temperature"])
    t[1, 2, 3] = np.nan
    f["temperature"][...] = t


def float32_field(f):
    t = np.array(f["temperature"]).astype(np.float32)
    del f["temperature"]
    f["temperature"] = t


def long_residual(f):
    del f["residual"]
    f["residual"] = np.ones(50)


if FULL:
    damaged("nan", nan_field, "temperature holds NaN or infinite values")
    damaged("step_negative", set_attr("step", np.int64(-5)), "step -5 is outside [0, 100]")
    damaged("step_huge", set_attr("step", np.int64(10 ** 18)), "is outside [0, 100]")
    damaged("step_text", set_attr("step", "six"), "attribute step is not a single integer")
    damaged("dt_text", set_attr("dt", "x"), "attribute dt is not a single floating-point number")
    damaged("float32", float32_field, "temperature is float32, expected float64")
    damaged("residual", long_residual, "residual has 50 elements, more than the 6 it may have")
    print("heat3d           damaged restart files (NaN, step range, types, lengths): clean errors")

# full and read-only file systems (small tmpfs mounts; needs root: the CI
# machine's setup runs as root, elsewhere this part says SKIP)
def mount(path, opts):
    os.makedirs(path, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path], capture_output=True).returncode == 0


full, ro = os.path.join(OUT, "full_fs"), os.path.join(OUT, "ro_fs")
# heat3d's default deck runs to its steady state before it writes (67 s at 1
# rank in the sanitizer build): a smaller grid reaches the write sooner.
# Every output is still larger than the 256 KiB file system's free space.
QUICK = {"heat3d": ["heat3d.grid.nx=24", "heat3d.grid.ny=24", "heat3d.grid.nz=24"]}
if not FULL:
    print("full/read-only file systems: checked at 1 and 2 ranks")
elif mount(full, "size=256k") and mount(ro, "ro,size=64k"):
    try:
        for app, deck in APPS.items():
            quick = ["output.overwrite=true"] + QUICK.get(app, [])
            expect(app, "disk_full", deck, quick, "the file system has", outdir=full)
            check(os.listdir(full) == [], "%s disk full: leftovers %s" % (app, os.listdir(full)))
            expect(app, "read_only", deck, quick, "Read-only file system", outdir=ro)
        print("every app      full and read-only output file systems: clean errors, nothing left")
    finally:
        subprocess.run(["umount", full])
        subprocess.run(["umount", ro])
else:
    subprocess.run(["umount", full], capture_output=True)
    print("SKIP: full/read-only file systems (mount -t tmpfs not permitted here)")

def pids_of(marker):
    found = {}
    for pid in subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split():
        try:
            env = open("/proc/%s/environ" % pid, "rb").read().split(b"\0")
        except OSError:
            continue
        for e in env:
            # MPICH's Hydra sets PMI_RANK, Open MPI OMPI_COMM_WORLD_RANK
            for var in (b"PMI_RANK=", b"OMPI_COMM_WORLD_RANK="):
                if e.startswith(var):
                    found[int(e[len(var):])] = int(pid)
    return found


def wait_gone(marker, seconds):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        left = [p for p in subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
                if int(p) != os.getpid()]
        if not left:
            return []
        time.sleep(0.2)
    return left


# a second run on the same output is refused while the first runs; SIGTERM
# to a rank and SIGINT to the launcher remove the unfinished output
long_run = ["heat3d.grid.nx=96", "heat3d.grid.ny=96", "heat3d.grid.nz=96", "heat3d.time.tolerance=0",
            "heat3d.time.max_steps=100000"]
for how in ("second_run", "sigterm_rank", "sigint_launcher"):
    od = os.path.join(OUT, "live_" + how)
    cmd = [MPIEXEC, "-n", str(NP), app_path("heat3d"), h, "--quiet", "--set", "output.dir=" + od]
    for s_ in long_run:
        cmd += ["--set", s_]
    a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    t0 = time.monotonic()
    while not os.path.exists(os.path.join(od, "heat3d.h5.tmp")) and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    time.sleep(0.3)  # into the time steps
    check(os.path.exists(os.path.join(od, "heat3d.h5.tmp")), "%s: the first run has no .tmp" % how)
    if how == "second_run":
        expect("heat3d", "second_run", h, [], "another run is writing", outdir=od)
        a.send_signal(signal.SIGINT)
    elif how == "sigterm_rank":
        # rank 0 alone: it removes the output and says so; Hydra then ends
        # the others (signalling all ranks at once races rank 0's message
        # against Hydra's teardown after another rank's exit)
        r0 = pids_of(od).get(0)
        check(r0 is not None, "%s: rank 0 not found" % how)
        if r0 is not None:
            os.kill(r0, signal.SIGTERM)
    else:
        a.send_signal(signal.SIGINT)
    try:
        out, err = a.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(a.pid, signal.SIGKILL)
        check(False, "%s: the run did not end within 30 s" % how)
    # The ranks exit 128 + signal with one message from rank 0; what the
    # launcher returns and whether it still forwards rank 0's stderr when
    # it is signalled itself is Hydra's business (it sometimes returns 0).
    if how == "sigterm_rank" and NP <= 2:
        check(a.returncode != 0, "%s: exit 0 after a signal" % how)
        check("the unfinished output was removed" in err, "%s: no message:\n%s" % (how, err))
    for b in BAD:
        check(b not in err, "%s: %s in stderr" % (how, b))
    # rank 0's output reaper is in a session of its own (so that a launcher's
    # kill cannot reach it) and ends just after the rank: allow it a moment
    left = wait_gone(od, 10)
    check(not left, "%s: processes left: %s" % (how, left))
    check(leftovers(od) == [], "%s: leftovers %s" % (how, leftovers(od)))
    print("heat3d           %-16s exit %d, nothing left" % (how, a.returncode))

# Every app under kill -9 of a unit and (with a progress process) of the
# progress process, SIGTERM to one rank and SIGINT to the launcher: the job ends within seconds with
# a non-zero status, no process is left and nothing stays in the output
# directory (a killed run cannot clean up: rank 0's output watcher does).
LONG = {
    "heat3d": long_run,
    "poisson5pt": ["poisson5pt.grid.n=2047", "poisson5pt.solver.tolerance=0",
                   "poisson5pt.solver.max_iterations=1000000"],
    "spmv": ["spmv.repetitions=100000000"],
    "tensor_contract": ["tensor_contract.extent=80", "tensor_contract.tile=8", "tensor_contract.validation.mode=none"],
}


scenarios = [("kill9_unit", 0, signal.SIGKILL), ("sigterm_unit", 0, signal.SIGTERM),
             ("sigint_launcher", None, signal.SIGINT)]
if NP >= 2:
    scenarios.append(("kill9_server", NP - 1, signal.SIGKILL))
for app, deck in APPS.items():
    for how, victim, sig in scenarios:
        od = os.path.join(OUT, "fault_%s_%s" % (app, how))
        sets = LONG[app] + ["output.dir=" + od]
        if NP >= 2:
            sets.append("runtime.progress.processes_per_node=%d" % (1 if how == "kill9_server" else 0))
        cmd = [MPIEXEC, "-n", str(NP), app_path(app), deck, "--quiet"]
        for s_ in sets:
            cmd += ["--set", s_]
        a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        t0 = time.monotonic()
        tmp = os.path.join(od, app if app in ("heat3d", "spmv", "tensor_contract") else "default")
        while not os.path.exists(tmp + ".h5.tmp") and time.monotonic() - t0 < 30:
            time.sleep(0.1)
        time.sleep(0.5)
        ranks = pids_of(od)
        if victim is None:
            a.send_signal(sig)  # the launcher (Ctrl-C)
        else:
            check(victim in ranks, "%s %s: rank %d not found (%s)" % (app, how, victim, ranks))
            os.kill(ranks[victim], sig)
        t1 = time.monotonic()
        try:
            out, err = a.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(a.pid, signal.SIGKILL)
            check(False, "%s %s: the job did not end within 30 s of the signal" % (app, how))
        dt = time.monotonic() - t1
        if victim is not None:  # Hydra's own status when it is signalled varies (see above)
            check(a.returncode != 0, "%s %s: exit 0 after a killed rank" % (app, how))
        for b in ("Traceback", "Assertion", "backtrace", "terminate called"):
            check(b not in err, "%s %s: %s in stderr:\n%s" % (app, how, b, err[-2000:]))
        left = wait_gone(od, 10)
        check(not left, "%s %s: processes left: %s" % (app, how, left))
        check(leftovers(od) == [], "%s %s: left in the output directory: %s" % (app, how, leftovers(od)))
        print("%-16s %-13s exit %d, ended %.1f s after the signal, nothing left" % (app, how, a.returncode, dt))
print("PASS")
