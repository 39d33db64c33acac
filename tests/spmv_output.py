#!/usr/bin/python3
"""spmv output and CG at NP ranks:

  * the HDF5 file has y, x, row_partition, halo and mode_timers with the
    documented shapes, and y = A x (recomputed with scipy from the exported
    matrix); the summary has the product figures and the verdict;
  * CG on the 3D Laplacian with a manufactured solution converges, its
    residual history falls to the tolerance, x matches x_exact, and the
    iteration count is the same in every mode (bitwise the same solve);
  * CG iterations grow like points per dimension (validation mode
    iterations, 2D Laplacian);
  * the partition by nonzeros balances an irregular matrix better than
    equal rows.

    spmv_output.py NP
"""
import os
import sys

import h5py
import numpy as np
import scipy.io

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("spmv_output_np%d" % NP)
DECK = os.path.join(SOURCE, "inputs", "spmv", "default.yaml")


def run(name, sets, deck=DECK):
    p, _ = run_app("spmv", deck, NP, list(sets) + ["output.dir=" + OUT, "output.name=" + name], extra=["--quiet"])
    return os.path.join(OUT, name + ".h5"), summary(p.stdout)


# products
mtx = os.path.join(OUT, "a.mtx")
h5, s = run("products", ["spmv.matrix.generator=laplace3d", "spmv.matrix.nx=10", "spmv.matrix.ny=9",
                         "spmv.matrix.nz=8", "spmv.matrix.export=" + mtx, "spmv.repetitions=4"])
n = 10 * 9 * 8
with h5py.File(h5, "r") as f:
    for name, shape in (("x", (n,)), ("y", (n,)), ("row_partition", (NP + 1,)), ("halo", (NP, 8)),
                        ("mode_timers", (NP, 6))):
        check(name in f and f[name].shape == shape, "%s: missing or shape %s (expected %s)" %
              (name, f[name].shape if name in f else None, shape))
    a = scipy.io.mmread(mtx).tocsr()
    y_ref = a @ np.array(f["x"])
    check(np.max(np.abs(np.array(f["y"]) - y_ref)) <= 1e-14 * np.max(np.abs(y_ref)), "y != A x")
    part = np.array(f["row_partition"])
    check(part[0] == 0 and part[-1] == n and np.all(np.diff(part) >= 0), "row_partition %s" % part)
    halo = np.array(f["halo"])
    check(np.all(halo[:, 5] == np.diff(part)), "halo rows column != partition")
    check(halo[:, 6].sum() == a.nnz, "nonzeros per rank do not add up to %d" % a.nnz)
    if NP == 1:
        check(halo[0, 1] == 0, "one rank has no halo")
    else:
        check(np.all(halo[:, 0] >= 1) and halo[:, 1].sum() > 0, "every rank has a neighbour")
    check(np.all(np.array(f["mode_timers"])[:, 5] == 4), "4 products per rank")
    check("summary" in f.attrs, "no summary attribute")
prod = s["results"]["product"]
for key in ("seconds_per_product", "local_us", "remote_us", "post_us", "wait_us", "gflop_per_s", "model_gb_per_s"):
    check(key in prod and prod[key] >= 0, "results.product.%s missing" % key)
check(s["results"]["matrix"]["nonzeros"] == a.nnz, "summary nonzeros")
check(s["validation"]["verdict"] == "pass", "verdict")
print("products: output layout, y = A x, partition and halo statistics OK")

# CG, every mode: same iterations, same solution
its = {}
sols = {}
for mode in ("vector", "overlap", "task", "rma"):
    h5, s = run("cg_" + mode, ["spmv.solver=cg", "spmv.matrix.generator=laplace3d", "spmv.matrix.nx=12",
                               "spmv.matrix.ny=12", "spmv.matrix.nz=12", "spmv.mode=" + mode])
    cg = s["results"]["cg"]
    check(cg["converged"] and cg["relative_residual"] <= 1e-8, "%s: cg %s" % (mode, cg))
    check(cg["true_relative_residual"] <= 1e-7, "%s: true residual %s" % (mode, cg["true_relative_residual"]))
    with h5py.File(h5, "r") as f:
        r = np.array(f["residual"])
        x, xe = np.array(f["x"]), np.array(f["x_exact"])
    check(len(r) == cg["iterations"] + 1 and r[0] == 1.0 and r[-1] <= 1e-8, "%s: residual history" % mode)
    check(np.max(np.abs(x - xe)) <= 1e-6, "%s: max |x - x*| = %g" % (mode, np.max(np.abs(x - xe))))
    check(abs(cg["max_error"] - np.max(np.abs(x - xe))) <= 1e-15, "%s: summary max_error" % mode)
    its[mode] = cg["iterations"]
    sols[mode] = x
check(len(set(its.values())) == 1, "iterations differ between modes: %s" % its)
for mode in sols:
    check(np.array_equal(sols[mode].view(np.uint64), sols["vector"].view(np.uint64)), "%s: CG x differs" % mode)
print("cg: %d iterations in every mode, bitwise the same solution" % its["vector"])

# iteration growth
h5, s = run("iterations", ["spmv.solver=cg", "spmv.matrix.generator=laplace2d", "spmv.matrix.nx=24",
                           "spmv.matrix.ny=24", "spmv.validation.mode=iterations", "spmv.validation.levels=3"])
study = s["validation"]["study"]
print("iterations:", [lv["iterations"] for lv in study["levels"]], "exponents", study["observed_exponent"])
check(s["validation"]["verdict"] == "pass", "iteration study failed: %s" % study)

# partition by nonzeros vs rows on a matrix with heavy rows at the end
if NP > 1:
    lines = ["%%MatrixMarket matrix coordinate real general"]
    ent = [(i, i, 4.0) for i in range(400)]
    for i in range(300, 400):
        ent += [(i, (i * 13 + k * 7) % 400, -0.01) for k in range(1, 30) if (i * 13 + k * 7) % 400 != i]
    dedup = {}
    for i, j, v in ent:
        dedup[(i, j)] = v
    lines.append("400 400 %d" % len(dedup))
    lines += ["%d %d %r" % (i + 1, j + 1, v) for (i, j), v in dedup.items()]
    heavy = os.path.join(OUT, "heavy.mtx")
    with open(heavy, "w") as f:
        f.write("\n".join(lines) + "\n")
    imb = {}
    for part in ("rows", "nonzeros"):
        _, s = run("part_" + part, ["spmv.matrix.source=file", "spmv.matrix.file=" + heavy,
                                    "spmv.partition=" + part])
        imb[part] = s["results"]["nonzero_imbalance"]
    check(imb["nonzeros"] < imb["rows"] and imb["nonzeros"] < 1.1, "imbalance %s" % imb)
    print("partition: nonzero imbalance rows %.3f, nonzeros %.3f" % (imb["rows"], imb["nonzeros"]))
print("PASS")
