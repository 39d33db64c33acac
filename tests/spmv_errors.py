#!/usr/bin/python3
"""spmv: every malformed Matrix Market file and bad deck ends every rank
with one clear error naming the file and line (or the deck key), exit
status 1, no traceback or MPI abort, and no output file.

    spmv_errors.py NP
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("spmv_errors_np%d" % NP)
DECK = os.path.join(SOURCE, "inputs", "spmv", "default.yaml")
B = "%%MatrixMarket matrix coordinate real general\n"

many = "".join("%d %d %d.5\n" % (i % 300 + 1, (i * 7) % 300 + 1, i % 9) for i in range(3000))
bad_late = many.splitlines(True)
bad_late[2500] = "17 4 1.0x\n"
CASES = [
    # name, content, expected line, expected text
    ("not_mm", "hello world\n1 1 1\n", 1, "not a Matrix Market file"),
    ("empty", "", 1, "empty file"),
    ("banner", "%%MatrixMarket matrx coordinate real general\n3 3 1\n1 1 1\n", 1, "banner must be"),
    ("complex", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1, "complex matrices"),
    ("format", "%%MatrixMarket matrix sparse real general\n1 1 1\n1 1 1\n", 1, "is not coordinate or array"),
    ("no_size", B + "% only a comment\n", 3, "missing size line"),
    ("size_words", B + "3 3\n1 1 1\n", 2, "size line must be"),
    ("size_text", B + "three 3 1\n1 1 1\n", 2, "size line must be"),
    ("rectangular", B + "3 4 1\n1 1 1\n", 2, "needs a square matrix"),
    ("fewer", B + "3 3 3\n1 1 1\n2 2 2\n", 4, "the file ends after 2 of the 3 entries"),
    ("more", B + "3 3 1\n1 1 1\n2 2 2\n", 4, "more entries than the 1 announced"),
    ("range", B + "3 3 2\n1 1 1\n4 1 1.0\n", 4, "out of range 1..3"),
    ("zero_index", B + "3 3 1\n0 1 1.0\n", 3, "out of range"),
    ("not_number", B + "3 3 1\n1 1 abc\n", 3, "is not a number"),
    ("nan", B + "3 3 1\n1 1 nan\n", 3, "not finite"),
    ("inf", B + "3 3 1\n1 1 -inf\n", 3, "not finite"),
    ("overflow", B + "3 3 1\n1 1 1e999\n", 3, "not finite"),
    ("truncated", B + "3 3 2\n1 1 1.0\n2 2", 4, "expected 'ROW COLUMN VALUE'"),
    ("extra", B + "3 3 1\n1 1 1.0 7\n", 3, "unexpected '7'"),
    ("index_text", B + "3 3 1\n1 x 1.0\n", 3, "must be integers"),
    ("integer", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n", 3, "not an integer"),
    ("upper", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1\n1 2 1\n", 4, "above the diagonal"),
    ("skew_diag", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n", 3, "on the diagonal"),
    ("array_short", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 5, "ends after 3 of the 4"),
    ("array_sym", "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n", 1, "array matrices"),
    ("huge_claim", B + "3 3 999999999999999\n1 1 1\n", 3, "the file ends after 1 of the 999999999999999"),
    ("late_error", B + "300 300 3000\n" + "".join(bad_late), 2503, "'1.0x' is not a number"),
]

for name, text, line, what in CASES:
    path = os.path.join(OUT, name + ".mtx")
    with open(path, "w") as f:
        f.write(text)

def expect_error(name, sets, needle, also=None):
    out = os.path.join(OUT, "out_" + name)
    p, _ = run_app("spmv", DECK, NP, sets + ["output.dir=" + out], extra=["--quiet"], expect_ok=False, timeout=60)
    err = p.stderr
    check(p.returncode == 1, "%s: exit status %d (expected 1)\n%s" % (name, p.returncode, err))
    check(needle in err, "%s: expected %r in the error, got:\n%s" % (name, needle, err))
    check(err.count(needle) == 1, "%s: the error is printed %d times" % (name, err.count(needle)))
    check(also is None or also in err, "%s: expected %r in the error, got:\n%s" % (name, also, err))
    for bad in ("Traceback", "Assertion", "MPI_Abort", "backtrace", "BAD TERMINATION"):
        check(bad not in err, "%s: %s in stderr:\n%s" % (name, bad, err))
    left = os.listdir(out) if os.path.exists(out) else []
    check(not left, "%s: output left in %s: %s" % (name, out, left))
    print("%-14s %s" % (name, err.strip().splitlines()[-1][:150]))

for name, text, line, what in CASES:
    path = os.path.join(OUT, name + ".mtx")
    expect_error(name, ["spmv.matrix.source=file", "spmv.matrix.file=" + path], "%s:%d: " % (path, line), what)

# a size error names the generator's size key the user gave
expect_error("rows_ny", ["spmv.matrix.generator=laplace3d", "spmv.matrix.ny=4000000000000000000"],
             "--set spmv.matrix.ny=4000000000000000000: spmv.matrix.ny: the grid has")
expect_error("rows_banded", ["spmv.matrix.generator=banded", "spmv.matrix.rows=9223372036854775807"],
             "--set spmv.matrix.rows=9223372036854775807: spmv.matrix.rows: the matrix has")
expect_error("memory_nz", ["spmv.matrix.generator=laplace3d", "spmv.matrix.nz=400000000"],
             "--set spmv.matrix.nz=400000000: spmv.matrix.nz: the laplace3d generator's matrix: needs")

# the same NaN is accepted when asked for
p, _ = run_app("spmv", DECK, NP, ["spmv.matrix.source=file", "spmv.matrix.file=" + os.path.join(OUT, "nan.mtx"),
                                  "spmv.matrix.allow_nonfinite=true", "output.dir=" + os.path.join(OUT, "nan_ok"),
                                  "spmv.validation.symmetry=off"], extra=["--quiet"], expect_ok=False)
check(p.returncode in (0, 1) and "locus_summary" in p.stdout, "allow_nonfinite: the run did not complete")

# not regular files: a directory, a FIFO (must not block), a missing file
fifo = os.path.join(OUT, "fifo.mtx")
os.mkfifo(fifo)
for name, path, needle in (("directory", OUT, "not a regular file"), ("fifo", fifo, "not a regular file")):
    expect_error(name, ["spmv.matrix.source=file", "spmv.matrix.file=" + path], path + ": " + needle)
# a missing file: the key, and every place looked in
missing = os.path.join(OUT, "nope.mtx")
expect_error("missing", ["spmv.matrix.source=file", "spmv.matrix.file=" + missing],
             "spmv.matrix.file: Matrix Market file not found; looked for " + missing)
expect_error("missing-relative", ["spmv.matrix.source=file", "spmv.matrix.file=nope.mtx"],
             "(beside the deck), ")

# deck errors the schema cannot see
expect_error("no_file", ["spmv.matrix.source=file"], "spmv.matrix.file (default): source file needs a Matrix Market path")
expect_error("file_unused", ["spmv.matrix.file=x.mtx"], "only read with spmv.matrix.source: file")
expect_error("band", ["spmv.matrix.generator=banded", "spmv.matrix.bandwidth=3", "spmv.matrix.per_row=9"],
             "9 nonzeros per row do not fit in a band of +-3")
expect_error("band_rows", ["spmv.matrix.generator=banded", "spmv.matrix.rows=10", "spmv.matrix.bandwidth=10", "spmv.matrix.per_row=3"],
             "spmv.matrix.bandwidth: must be below the row count 10")
expect_error("thread", ["spmv.mode=thread"], "set runtime.progress.thread: true")
expect_error("iterations", ["spmv.validation.mode=iterations", "spmv.solver=cg", "spmv.matrix.generator=banded",
                            "spmv.matrix.bandwidth=10", "spmv.matrix.per_row=5", "spmv.matrix.rows=100"],
             "iterations refines a Laplacian generator grid")
expect_error("iterations_cg", ["spmv.validation.mode=iterations"], "iterations runs CG; set spmv.solver: cg")
expect_error("grid_overflow", ["spmv.matrix.nx=4000000", "spmv.matrix.ny=4000000", "spmv.matrix.nz=4000000"],
             "more than 64-bit indices hold")
expect_error("grid_memory", ["spmv.matrix.nx=100000", "spmv.matrix.ny=100000", "spmv.matrix.nz=1000"],
             "private), but the node has", "spmv.matrix.nx: the hpcg27 generator's matrix: needs")
expect_error("mode", ["spmv.mode=fast"], "--set spmv.mode=fast")
print("PASS")
