#!/usr/bin/python3
"""Writes the small Matrix Market files shipped in inputs/spmv/matrices/.

    tools/spmv_matrices.py [DIR]

Deterministic (fixed seeds), so the files can be regenerated and compared.
Each one exercises parts of the format a reader must get right:
  bcsstk_like.mtx  coordinate real symmetric: a 2D Laplacian with a random
                   symmetric perturbation, lower triangle only, unsorted
                   entries, comment and blank lines, one explicit zero
  convdiff.mtx     coordinate real general: an unsymmetric convection-
                   diffusion operator with duplicate entries (to be summed)
"""
import os
import random
import sys


def laplace_sym(n1):
    rnd = random.Random(5)
    n = n1 * n1
    lower = {}
    for y in range(n1):
        for x in range(n1):
            i = x + n1 * y
            lower[(i, i)] = 4.0 + rnd.randint(0, 8) / 8.0
            if x > 0:
                lower[(i, i - 1)] = -1.0 - rnd.randint(0, 4) / 16.0
            if y > 0:
                lower[(i, i - n1)] = -1.0
    lower[(n - 1, 0)] = 0.0  # an explicit zero, kept
    items = list(lower.items())
    rnd.shuffle(items)
    lines = ["%%MatrixMarket matrix coordinate real symmetric",
             "% locus spmv test matrix: 2D Laplacian, perturbed, lower triangle, unsorted",
             "%", "%d %d %d" % (n, n, len(items))]
    for k, ((i, j), v) in enumerate(items):
        if k == len(items) // 2:
            lines.append("")
            lines.append("% a comment and a blank line among the entries")
        lines.append("%d %d %r" % (i + 1, j + 1, v))
    return "\n".join(lines) + "\n"


def convdiff(n1):
    rnd = random.Random(9)
    n = n1 * n1
    entries = []
    for y in range(n1):
        for x in range(n1):
            i = x + n1 * y
            entries.append((i, i, 4.0))
            for dx, dy, v in ((-1, 0, -1.25), (1, 0, -0.75), (0, -1, -1.125), (0, 1, -0.875)):
                xx, yy = x + dx, y + dy
                if 0 <= xx < n1 and 0 <= yy < n1:
                    entries.append((i, xx + n1 * yy, v))
    # duplicates: split some values in two entries
    extra = []
    for k in range(0, len(entries), 7):
        i, j, v = entries[k]
        entries[k] = (i, j, v / 2)
        extra.append((i, j, v / 2))
    entries += extra
    rnd.shuffle(entries)
    lines = ["%%MatrixMarket matrix coordinate real general",
             "% locus spmv test matrix: convection-diffusion, duplicates summed",
             "%d %d %d" % (n, n, len(entries))]
    lines += ["%d %d %r" % (i + 1, j + 1, v) for i, j, v in entries]
    return "\n".join(lines) + "\n"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                              "..", "inputs", "spmv", "matrices")
    os.makedirs(out, exist_ok=True)
    for name, text in (("bcsstk_like.mtx", laplace_sym(30)), ("convdiff.mtx", convdiff(40))):
        with open(os.path.join(out, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
