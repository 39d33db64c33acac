#!/usr/bin/python3
"""Matrix Market fuzz test: COUNT malformed variants of valid files (cut,
lines dropped, doubled or swapped, tokens replaced by garbage, numbers
pushed out of range, banners and size lines damaged, bytes flipped), all
read by the parallel reader at NP ranks in one job (tests/
spmv_mm_fuzz.cpp). Passes when nothing crashes or hangs and every rejected
file ends with one "PATH:LINE: what" error, the same on every rank; at
least half of the variants must be rejected (else the mutations are too
mild to test anything).

    spmv_fuzz.py NP COUNT
"""
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import BUILD, MPIEXEC, SOURCE, check, scratch  # noqa: E402

NP, COUNT = int(sys.argv[1]), int(sys.argv[2])
OUT = scratch("spmv_fuzz_np%d" % NP)
rnd = random.Random(20261123)

seeds = [open(os.path.join(SOURCE, "inputs", "spmv", "matrices", n)).read()
         for n in ("bcsstk_like.mtx", "convdiff.mtx")]
seeds.append("%%MatrixMarket matrix array real general\n3 3\n" + "".join("%d.5\n" % i for i in range(9)))
seeds.append("%%MatrixMarket matrix coordinate pattern symmetric\n% pattern\n5 5 7\n1 1\n2 1\n3 2\n4 4\n5 3\n"
             "5 5\n3 3\n")
seeds.append("%%MatrixMarket matrix coordinate integer skew-symmetric\n4 4 3\n2 1 3\n3 1 -2\n4 2 7\n")
GARBAGE = ["abc", "1e999", "-1", "0", "nan", "inf", "99999999999999999999", "1.5", "", "  ", "%", "1 2 3 4",
           "0x10", "--1", "\t", "1e", "+", "1,5", "\x00", "é", "-0", "1e-999"]


def small(seed):
    lines = seed.splitlines()
    head = [l for l in lines if l.startswith("%")][:2]
    body = [l for l in lines if not l.startswith("%")]
    if len(body) > 60:
        # re-announce a short prefix so the variant is valid before mutation
        size = body[0].split()
        entries = body[1:41]
        if len(size) == 3:
            size[2] = str(len(entries))
        body = [" ".join(size)] + entries
    return "\n".join(head + body) + "\n"


def mutate(text):
    lines = text.splitlines(True)
    kind = rnd.randrange(10)
    if kind == 0:  # cut anywhere
        return text[:rnd.randrange(len(text))]
    if kind == 1 and len(lines) > 2:  # drop a line
        del lines[rnd.randrange(len(lines))]
    elif kind == 2:  # double a line
        i = rnd.randrange(len(lines))
        lines.insert(i, lines[i])
    elif kind == 3 and len(lines) > 1:  # swap two lines
        i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind in (4, 5):  # replace a token
        i = rnd.randrange(len(lines))
        toks = lines[i].split()
        if toks:
            toks[rnd.randrange(len(toks))] = rnd.choice(GARBAGE)
            lines[i] = " ".join(toks) + "\n"
    elif kind == 6:  # size line numbers off
        for i, l in enumerate(lines):
            if not l.startswith("%"):
                toks = l.split()
                k = rnd.randrange(len(toks))
                toks[k] = str(int(toks[k]) + rnd.choice([-2, -1, 1, 7, 10 ** 12])) if toks[k].isdigit() else "x"
                lines[i] = " ".join(toks) + "\n"
                break
    elif kind == 7:  # damage the banner
        words = lines[0].split()
        words[rnd.randrange(len(words))] = rnd.choice(["matrix", "hermitian", "complex", "MATRIX", "x", ""])
        lines[0] = " ".join(words) + "\n"
    elif kind == 8:  # flip bytes
        b = bytearray("".join(lines).encode())
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        return b
    else:  # an index out of range
        i = rnd.randrange(1, len(lines))
        toks = lines[i].split()
        if len(toks) >= 2 and not lines[i].startswith("%"):
            toks[rnd.randrange(2)] = str(rnd.choice([0, -3, 10 ** 6, 2 ** 63]))
            lines[i] = " ".join(toks) + "\n"
    return "".join(lines)


paths = []
for k in range(COUNT):
    text = mutate(small(rnd.choice(seeds)))
    path = os.path.join(OUT, "f%04d.mtx" % k)
    with open(path, "wb") as f:
        f.write(text if isinstance(text, (bytes, bytearray)) else text.encode("utf-8", "surrogateescape"))
    paths.append(path)
listing = os.path.join(OUT, "files.txt")
with open(listing, "w") as f:
    f.write("\n".join(paths) + "\n")

exe = os.path.join(BUILD, "tests", "spmv_mm_fuzz")
# its --help: the usage on stdout, exit 0; a list it cannot open: exit 2
h = subprocess.run([MPIEXEC, "-n", "1", exe, "--help"], capture_output=True, text=True, timeout=60)
check(h.returncode == 0 and h.stdout.startswith("usage: ") and "LIST" in h.stdout,
      "spmv_mm_fuzz --help: exit %d\n%s%s" % (h.returncode, h.stdout, h.stderr))
h = subprocess.run([MPIEXEC, "-n", "1", exe, os.path.join(OUT, "no-such-list")], capture_output=True, text=True,
                   timeout=60)
check(h.returncode == 2 and "cannot open" in h.stderr, "spmv_mm_fuzz on a missing list: exit %d\n%s"
      % (h.returncode, h.stderr))
try:
    p = subprocess.run([MPIEXEC, "-n", str(NP), exe, listing], capture_output=True, text=True, timeout=600)
except subprocess.TimeoutExpired:
    check(False, "the fuzz job hung (600 s)")
print(p.stdout.strip())
check(p.returncode == 0, "fuzz harness exit %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr[-3000:]))
words = p.stdout.split()
files, loaded, rejected = int(words[1]), int(words[3]), int(words[5])
check(files == COUNT and loaded + rejected == COUNT, "counts do not add up: " + p.stdout)
check(rejected >= COUNT // 2, "only %d of %d variants rejected: mutations too mild" % (rejected, COUNT))
# no output of any kind next to the inputs
extra = [n for n in os.listdir(OUT) if not (n.endswith(".mtx") or n == "files.txt")]
check(not extra, "files appeared: %s" % extra)
print("PASS")
