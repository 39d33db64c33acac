"""Bad input ends every rank quickly with one clear file:line message, a
non-zero exit and no output file."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch, shm_orphans  # noqa: E402

BAD = """heat3d:
  grid:
    nx: -3
  time: {dt: fast}
comm:
  hallo: p2p
"""


def main():
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    out = scratch("heat3d_errors_np%d" % ranks)
    deck = os.path.join(out, "bad.yaml")
    with open(deck, "w") as f:
        f.write(BAD + "output:\n  dir: %s\n" % os.path.join(out, "o"))
    p, secs = run_app("heat3d", deck, ranks, extra=["-q"], expect_ok=False, timeout=60)
    check(p.returncode != 0, "a broken deck must exit non-zero")
    check(secs < 30, "took %.1f s" % secs)
    for line in ("bad.yaml:3:9: heat3d.grid.nx: must be a positive integer (got -3)",
                 "bad.yaml:4:14: heat3d.time.dt: must be a positive number (got fast)",
                 "bad.yaml:6:3: comm.hallo: unknown key (did you mean 'halo'?)"):
        check(p.stderr.count(line) == 1, "expected once: %s\n--- stderr\n%s" % (line, p.stderr))
    check("Traceback" not in p.stderr and "terminate called" not in p.stderr, "no crash output")
    check(not os.path.exists(os.path.join(out, "o")), "no output directory or file for a broken deck")

    # Overrides, missing decks and bad options fail the same way.
    p, _ = run_app("heat3d", deck, ranks, sets=["heat3d.grid.nx=4", "heat3d.time.dt=1e-3", "comm.hallo=x",
                                                 "heat3d.grid.nz=0"], expect_ok=False)
    check(p.returncode != 0 and p.stderr.count(
        "--set heat3d.grid.nz=0: heat3d.grid.nz: must be a positive integer (got 0)") == 1, p.stderr)
    # A grid no node can hold: refused before anything is mapped, with what
    # it needs and what the node has, on every rank, with and without a
    # progress process, and nothing left in /dev/shm or the output directory.
    big = ["heat3d.grid.nx=10000", "heat3d.grid.ny=10000", "heat3d.grid.nz=10000",
           "output.dir=" + os.path.join(out, "big")]
    for extra in ([], ["runtime.progress.processes_per_node=1"]):
        n = ranks + (1 if extra else 0)
        shm_before = set(os.listdir("/dev/shm"))
        p, secs = run_app("heat3d", os.path.join(SOURCE, "inputs", "heat3d", "default.yaml"), n,
                          sets=big + extra, extra=["-q"], expect_ok=False, timeout=60)
        check(p.returncode == 1 and secs < 30, "too large a grid: exit %d after %.1f s" % (p.returncode, secs))
        check(p.stderr.count("GiB of shared memory, but the node has") == 1,
              "too large a grid: one message naming the need\n" + p.stderr)
        bigdir = os.path.join(out, "big")
        check(not os.path.isdir(bigdir) or not os.listdir(bigdir), "too large a grid: no output file")
        left = shm_orphans(set(os.listdir("/dev/shm")) - shm_before)
        check(not left, "too large a grid: files left in /dev/shm: %s" % sorted(left))
    p, _ = run_app("heat3d", os.path.join(out, "missing.yaml"), ranks, expect_ok=False)
    check(p.returncode != 0 and p.stderr.count("missing.yaml: cannot open deck") == 1, p.stderr)
    p, _ = run_app("heat3d", deck, ranks, extra=["--frobnicate"], expect_ok=False)
    check(p.returncode == 2 and p.stderr.count("unknown option --frobnicate") == 1, p.stderr)
    # A process grid that does not match the rank count.
    good = os.path.join(out, "good.yaml")
    with open(good, "w") as f:
        f.write("heat3d:\n  procs: [3, 3, 3]\noutput:\n  dir: %s\n" % os.path.join(out, "g"))
    p, _ = run_app("heat3d", good, ranks, expect_ok=False)
    check(p.returncode != 0 and p.stderr.count("needs 27 ranks, but the run has %d" % ranks) == 1, p.stderr)
    check(not os.path.exists(os.path.join(out, "g", "heat3d.h5")) and
          not os.path.exists(os.path.join(out, "g", "heat3d.h5.tmp")), "no output after a collective error")
    # Progress processes that would leave a node without application units.
    pp = os.path.join(out, "progress.yaml")
    with open(pp, "w") as f:
        f.write("runtime:\n  node_size: 1\n  progress:\n    processes_per_node: 1\noutput:\n  dir: %s\n"
                % os.path.join(out, "p"))
    p, _ = run_app("heat3d", pp, ranks, expect_ok=False, timeout=60)
    check(p.returncode != 0 and p.stderr.count(
        "progress.yaml:4:25: runtime.progress.processes_per_node: 1 would leave no application unit on node 0") == 1,
        p.stderr)
    check(not os.path.exists(os.path.join(out, "p", "heat3d.h5")), "no output after the progress error")
    # comm.aggregate.applier: progress without what it needs.
    ag = os.path.join(out, "applier.yaml")
    with open(ag, "w") as f:
        f.write("comm:\n  atomics: aggregate\n  aggregate:\n    applier: progress\noutput:\n  dir: %s\n"
                % os.path.join(out, "a"))
    p, _ = run_app("heat3d", ag, ranks, expect_ok=False, timeout=60)
    check(p.returncode == 1 and p.stderr.count(
        "applier.yaml:4:14: comm.aggregate.applier: progress needs progress processes "
        "(runtime.progress.processes_per_node >= 1)") == 1, p.stderr)
    p, _ = run_app("heat3d", ag, ranks + 1, sets=["runtime.progress.processes_per_node=1",
                                                   "comm.aggregate.transport=put"], expect_ok=False, timeout=60)
    check(p.returncode == 1 and p.stderr.count(
        "applier.yaml:4:14: comm.aggregate.applier: progress needs comm.aggregate.transport: message (got put)")
        == 1, p.stderr)
    check(not os.path.exists(os.path.join(out, "a", "heat3d.h5")), "no output after the applier errors")
    # A check on several keys names the key the user gave: the grid's
    # largest dimension, comm.adapt.high when it is the one set; a grid
    # whose size overflows 64 bits is refused at the deck, with its key.
    default = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
    o = ["output.dir=" + os.path.join(out, "keys")]
    for key, value, expect in (
            ("heat3d.grid.ny", "4294967296", "heat3d.grid.ny: a 64x4294967296x64 grid: needs "),
            ("heat3d.grid.nz", "9223372036854775807", "heat3d.grid.nz: a 64x64x9223372036854775807 grid: needs "),
            ("comm.adapt.high", "0", "comm.adapt.high: low (0.300000) must be below high (0.000000)")):
        p, secs = run_app("heat3d", default, ranks, sets=["%s=%s" % (key, value)] + o, extra=["-q"],
                          expect_ok=False, timeout=60)
        line = "--set %s=%s: %s" % (key, value, expect)
        check(p.returncode == 1 and p.stderr.count(line) == 1 and "allocate" not in p.stderr,
              "expected once: %s\n--- stderr\n%s" % (line, p.stderr))
    print("all error cases end cleanly on %d rank(s)" % ranks)


main()
