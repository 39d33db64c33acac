#!/usr/bin/python3
"""Both spellings of Kokkos's thread option work with the Kokkos the build
found (--kokkos-num-threads from Kokkos 3.7, --kokkos-threads before): the
app passes Kokkos the spelling it takes, and a build whose host backend has
no threads (Serial) says once that the threads asked for are not used."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402


def main():
    out = scratch("kokkos_threads")
    deck = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
    sets = ["heat3d.grid.nx=16", "heat3d.grid.ny=16", "heat3d.grid.nz=16", "heat3d.time.max_steps=20",
            "heat3d.validation.mode=none", "output.dir=" + out, "output.overwrite=true"]
    spellings = set()
    for opt in ("--kokkos-num-threads=2", "--kokkos-threads=2"):
        p, _ = run_app("heat3d", deck, 1, sets, [opt, "--quiet"])
        machine = summary(p.stdout)["machine"]
        args, space = str(machine["kokkos_args"]), str(machine["kokkos_execution_space"])
        check(args.endswith("threads=2"), "%s: kokkos_args %r" % (opt, args))
        spellings.add(args.split("=")[0])
        warned = p.stderr.count("asks for threads, but this Kokkos has no threaded host backend")
        threaded = space in ("OpenMP", "Threads")
        check(warned == (0 if threaded else 1), "%s on %s: %d warnings\n%s" % (opt, space, warned, p.stderr))
    check(len(spellings) == 1, "both spellings reach Kokkos as one: %s" % spellings)
    print("PASS: both spellings, passed as %s; backend %s" % (spellings.pop(), space))


main()
