#!/usr/bin/python3
"""Issue 32's defects stay fixed (spmv and tensor_contract; every case is
a run of a second or less):

  * keys whose values overflow: tensor_contract.counter.chunk (2^62, 2^63-1:
    the counter passed 2^63), cyclic_block; spmv's banded bandwidth (the
    message printed 2 * bandwidth + 1 overflowed);
  * thread counts above the node's cores (spmv.threads, blas_threads);
  * HPCG's symmetry test on tiny symmetric matrices (1x1 failed);
  * Matrix Market header lines longer than 4096 bytes (they were cut);
  * signed numbers: "+-1.0" was read as -1.0;
  * spmv.matrix.export writes NAME.tmp and renames it; on a full (small
    tmpfs) file system it leaves nothing and says why (root only: mount).

Refusals: exit 1, one error line naming the key (with its deck line or
--set) or the file and line, on every rank count, nothing left behind.

    reliability.py NP
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, full_coverage, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
# a run killed half way may have left its tmpfs mount behind
subprocess.run(["umount", os.path.abspath(os.path.join("scratch", "reliability_np%d" % NP, "small_fs"))],
               capture_output=True)
OUT = scratch("reliability_np%d" % NP)
DECKS = {a: os.path.join(SOURCE, "inputs", a, "default.yaml") for a in ("spmv", "tensor_contract")}
SMALL = {"spmv": ["spmv.matrix.nx=6", "spmv.matrix.ny=5", "spmv.matrix.nz=4", "spmv.repetitions=2"],
         "tensor_contract": ["tensor_contract.extent=8", "tensor_contract.tile=4"]}
BAD = ("Traceback", "Assertion", "MPI_Abort", "BAD TERMINATION", "backtrace", "terminate called", "Segmentation")


def leftovers(d):
    found = []
    for root, _, files in os.walk(d):
        found += [os.path.join(root, f) for f in files]
    return found


def refused(app, label, sets, needles, absent=()):
    od = os.path.join(OUT, app + "_" + label)
    p, dt = run_app(app, DECKS[app], NP, SMALL[app] + sets + ["output.dir=" + od], extra=["--quiet"],
                    expect_ok=False, timeout=60)
    err = p.stderr
    check(p.returncode == 1, "%s %s: exit %d (expected 1)\n%s" % (app, label, p.returncode, err[-2000:]))
    for n in needles:
        check(n in err, "%s %s: expected %r in:\n%s" % (app, label, n, err[-2000:]))
    for n in absent:
        check(n not in err, "%s %s: %r in:\n%s" % (app, label, n, err[-2000:]))
    lines = [x for x in err.splitlines() if x.startswith(app + ": error:")]
    check(len(lines) == 1, "%s %s: %d error lines:\n%s" % (app, label, len(lines), err[-2000:]))
    for b in BAD:
        check(b not in err, "%s %s: %s in stderr" % (app, label, b))
    check(not leftovers(od), "%s %s: left %s" % (app, label, leftovers(od)))
    print("%-16s %-22s refused in %.1f s: %s" % (app, label, dt, lines[0][:110]))


def ran(app, label, sets, ranks=NP, verdicts=("pass",)):
    od = os.path.join(OUT, app + "_" + label)
    p, dt = run_app(app, DECKS[app], ranks, SMALL[app] + sets + ["output.dir=" + od], extra=["--quiet"],
                    expect_ok=False, timeout=120)
    check(p.returncode == 0 and "locus_summary:" in p.stdout,
          "%s %s: exit %d\n%s\n%s" % (app, label, p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    s = summary(p.stdout)
    check(s["validation"]["verdict"] in verdicts, "%s %s: verdict %s" % (app, label, s["validation"]))
    return s


# 1. the task counter: chunk bounded so that it cannot overflow
for v in (2 ** 62, 2 ** 63 - 1, 2 ** 30 + 1):
    refused("tensor_contract", "chunk_%d" % v, ["tensor_contract.counter.chunk=%d" % v],
            ["--set tensor_contract.counter.chunk=%d: tensor_contract.counter.chunk: must be an integer in "
             "[1, 1073741824]" % v])
refused("tensor_contract", "cyclic_block", ["tensor_contract.distribution=block-cyclic",
                                            "tensor_contract.cyclic_block=%d" % (2 ** 32 + 1)],
        ["tensor_contract.cyclic_block: must be an integer in [1, 1073741824]"])
# the largest chunk runs and every task is done once
for skip in ("false", "true"):
    s = ran("tensor_contract", "chunk_max_skip_" + skip,
            ["tensor_contract.counter.chunk=%d" % 2 ** 30, "tensor_contract.counter.skip_first=" + skip])
print("tensor_contract  counter.chunk 2^30 (skip_first false/true): verdict pass")

# 7. the banded bandwidth: the message names the row count, no overflow
refused("spmv", "bandwidth_huge", ["spmv.matrix.generator=banded", "spmv.matrix.rows=50",
                                   "spmv.matrix.bandwidth=9223372036854775807"],
        ["spmv.matrix.bandwidth: must be below the row count 50 (got 9223372036854775807)"],
        absent=["-1)"])

# 2. threads above the cores
ncores = os.cpu_count() or 1
refused("spmv", "threads", ["spmv.threads=1024"],
        ["--set spmv.threads=1024: spmv.threads: 1024 threads per rank, but this node has %d core" % ncores])
refused("tensor_contract", "blas_threads", ["tensor_contract.blas_threads=64"],
        ["tensor_contract.blas_threads: 64 threads per rank, but this node has %d core" % ncores])

# 4. HPCG's symmetry test on tiny symmetric matrices (at most NP rows on
# NP ranks would leave ranks empty: spmv refuses fewer rows than ranks)
tiny = [("laplace3d_1", ["spmv.matrix.generator=laplace3d", "spmv.matrix.nx=1", "spmv.matrix.ny=1",
                         "spmv.matrix.nz=1"], 1),
        ("laplace2d_1", ["spmv.matrix.generator=laplace2d", "spmv.matrix.nx=1", "spmv.matrix.ny=1"], 1),
        ("hpcg27_1", ["spmv.matrix.generator=hpcg27", "spmv.matrix.nx=1", "spmv.matrix.ny=1",
                      "spmv.matrix.nz=1"], 1),
        ("laplace2d_2x1", ["spmv.matrix.generator=laplace2d", "spmv.matrix.nx=2", "spmv.matrix.ny=1"], 2),
        ("laplace3d_2x2x1", ["spmv.matrix.generator=laplace3d", "spmv.matrix.nx=2", "spmv.matrix.ny=2",
                             "spmv.matrix.nz=1"], 4),
        ("hpcg27_2x2x2", ["spmv.matrix.generator=hpcg27", "spmv.matrix.nx=2", "spmv.matrix.ny=2",
                          "spmv.matrix.nz=2"], 8)]
for label, sets, rows in tiny if full_coverage(NP) else [tiny[0], tiny[-1]]:
    for mode in (("vector", "rma") if NP == 1 else ("rma",)):
        s = ran("spmv", "sym_%s_%s" % (label, mode), sets + ["spmv.mode=" + mode], ranks=min(NP, rows))
        sym = s["validation"]["symmetry"]
        check(isinstance(sym, dict) and sym["verdict"] == "pass" and sym["departure_scaled"] <= 1.0,
              "%s: symmetry %s" % (label, sym))
print("spmv             symmetry test passes on 1x1, 2x1, 2x2x1, 2x2x2 (vector, rma)")
# ... and still catches an unsymmetric matrix
B = "%%MatrixMarket matrix coordinate real general\n"
unsym = os.path.join(OUT, "unsym.mtx")
with open(unsym, "w") as f:
    f.write(B + "2 2 3\n1 1 4\n1 2 1\n2 2 4\n")
od = os.path.join(OUT, "spmv_unsym")
p, _ = run_app("spmv", DECKS["spmv"], min(NP, 2), ["spmv.matrix.source=file", "spmv.matrix.file=" + unsym,
                                                    "spmv.validation.symmetry=on", "output.dir=" + od],
               extra=["--quiet"], expect_ok=False)
s = summary(p.stdout)
check(s["validation"]["symmetry"]["verdict"] == "FAIL" and p.returncode != 0,
      "an unsymmetric 2x2 matrix passed the symmetry test: %s" % s["validation"]["symmetry"])
print("spmv             an unsymmetric 2x2 matrix still fails the symmetry test")


# 5, 6. Matrix Market header lines past 4096 bytes; signed numbers
def mm_file(name, text):
    path = os.path.join(OUT, name + ".mtx")
    with open(path, "w") as f:
        f.write(text)
    return path


# the reader's verdicts do not depend on the rank count: at 4 ranks (over-
# subscribed, slow launches) a few of the cases suffice
FEW = ("size_junk", "size_blanks", "banner_junk", "plus_minus", "ok_plus", "int_plus_minus")


def mm_refused(name, text, line, needle):
    if NP > 2 and name not in FEW:
        return
    path = mm_file(name, text)
    refused("spmv", "mm_" + name, ["spmv.matrix.source=file", "spmv.matrix.file=" + path],
            ["%s:%d: " % (path, line), needle])


def mm_ran(name, text, rows, expect_values=None):
    if NP > 2 and name not in FEW:
        return
    path = mm_file(name, text)
    s = ran("spmv", "mm_" + name, ["spmv.matrix.source=file", "spmv.matrix.file=" + path, "spmv.x=ones",
                                   "spmv.validation.symmetry=off"], ranks=min(NP, rows),
            verdicts=("not checked",))  # symmetry test off: nothing compared
    check(s["results"]["matrix"]["rows"] == rows, "%s: %s" % (name, s["results"]["matrix"]))
    return s


BLANKS = " " * 5000
mm_refused("size_junk", B + "2 2 2" + BLANKS + "junk\n1 1 1\n2 2 1\n", 2, "size line must be")
mm_ran("size_blanks", B + "2 2" + BLANKS + "2\n1 1 1\n2 2 1\n", 2)
mm_refused("banner_junk", B.rstrip("\n") + BLANKS + "junk\n2 2 2\n1 1 1\n2 2 1\n", 1, "banner must be")
mm_ran("banner_blanks", "%%MatrixMarket" + BLANKS + "matrix coordinate real" + BLANKS + "general\n2 2 2\n1 1 1\n2 2 1\n",
       2)
mm_ran("comment_long", B + "%" + "c" * 100000 + "\n2 2 2\n1 1 1\n2 2 1\n", 2)
mm_refused("size_overlong", B + "2 2 " + "2" * 70000 + "\n1 1 1\n", 2, "size line longer than 65536 bytes")
for name, v in (("plus_minus", "+-1.0"), ("minus_plus", "-+1.0"), ("plus_plus", "++1.0"), ("minus_minus", "--1.0"),
                ("plus_only", "+"), ("plus_inf", "+-inf")):
    mm_refused(name, B + "2 2 2\n1 1 1\n2 2 %s\n" % v, 4, "'%s' is not a number" % v)
mm_refused("int_plus_minus", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 1\n2 2 +-1\n", 4,
           "'+-1' is not an integer")
mm_refused("index_plus_minus", B + "2 2 2\n1 1 1\n+-2 2 1\n", 4, "must be integers")
for name, v in (("plus", "+1.0"), ("minus", "-1.0"), ("plus_dot", "+.5"), ("exp_sign", "-.5e+1"), ("plus_exp", "+1E-3")):
    mm_ran("ok_" + name, B + "2 2 2\n+1 1 1\n2 +2 %s\n" % v, 2)
print("spmv             header lines of 5000 blanks, signed forms: as the format says")

# 3. the export: atomic, and on a full file system nothing is left
exp = os.path.join(OUT, "export", "m.mtx")
os.makedirs(os.path.dirname(exp))
ran("spmv", "export_ok", ["spmv.matrix.export=" + exp])
check(os.path.exists(exp) and not os.path.exists(exp + ".tmp"), "export: %s" % os.listdir(os.path.dirname(exp)))
with open(exp) as f:
    head = f.read(200)
check(head.startswith("%%MatrixMarket matrix coordinate real general"), "export: bad header %r" % head[:60])
# a device or directory is refused, never replaced by the rename
for target in ("/dev/null", OUT):
    refused("spmv", "export_not_file_%d" % len(target), ["spmv.matrix.export=" + target],
            ["spmv.matrix.export: %s exists and is not a regular file" % target])
check(os.path.exists("/dev/null") and not os.path.isfile("/dev/null"), "/dev/null was replaced")
if os.geteuid() == 0:
    fs = os.path.join(OUT, "small_fs")
    os.makedirs(fs)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", fs], capture_output=True, text=True)
    if m.returncode == 0:
        try:
            target = os.path.join(fs, "big.mtx")
            refused("spmv", "export_full", ["spmv.matrix.nx=16", "spmv.matrix.ny=16", "spmv.matrix.nz=16",
                                            "spmv.matrix.export=" + target],
                    ["spmv.matrix.export: writing %s.tmp: needs " % target,
                     "; nothing was written under %s" % target])
            check(os.listdir(fs) == [], "export on a full file system left %s" % os.listdir(fs))
        finally:
            subprocess.run(["umount", fs], capture_output=True)
    else:
        print("export_full: skipped (cannot mount a tmpfs: %s)" % m.stderr.strip())
else:
    print("export_full: skipped (needs root to mount a small tmpfs)")
print("PASS")
