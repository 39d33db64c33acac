#!/usr/bin/python3
"""Compare the datasets of two locus HDF5 outputs.

    tools/h5compare.py A.h5 B.h5 [--dataset temperature] [--rtol 0] [--atol 0]

With the default tolerances the comparison is bitwise (decomposition
invariance, restart checks). Prints one line per dataset and exits 1 when
any differs, 2 on unreadable input.
"""
import argparse
import sys

import h5py
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--dataset", action="append",
                    help="dataset to compare (repeatable; default: every dataset in A except timers)")
    ap.add_argument("--rtol", type=float, default=0.0, help="relative tolerance (default 0: bitwise)")
    ap.add_argument("--atol", type=float, default=0.0, help="absolute tolerance (default 0: bitwise)")
    args = ap.parse_args()
    try:
        fa, fb = h5py.File(args.a, "r"), h5py.File(args.b, "r")
    except OSError as e:
        print("h5compare: cannot open: %s" % e, file=sys.stderr)
        return 2
    names = args.dataset or [n for n in fa if isinstance(fa[n], h5py.Dataset) and n != "timers"]
    differ = False
    for n in names:
        if n not in fa or n not in fb:
            print("%-14s missing in %s" % (n, args.a if n not in fa else args.b))
            differ = True
            continue
        x, y = fa[n][...], fb[n][...]
        if x.shape != y.shape:
            print("%-14s shapes differ: %s vs %s" % (n, x.shape, y.shape))
            differ = True
            continue
        if args.rtol == 0 and args.atol == 0:
            bad = int(np.count_nonzero(x != y))
        else:
            bad = int(np.count_nonzero(~np.isclose(x, y, rtol=args.rtol, atol=args.atol)))
        worst = float(np.max(np.abs(x - y))) if x.size else 0.0
        print("%-14s %s  (%d of %d values differ, max |a-b| = %.3g)"
              % (n, "identical" if bad == 0 else "DIFFER", bad, x.size, worst))
        differ = differ or bad > 0
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
