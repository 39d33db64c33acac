#!/usr/bin/python3
"""tensor_contract with the portable tile product (tensor_contract.gemm:
portable, the Kokkos kernel a device build runs) at NP ranks:

  * integer values (every product and sum exact): C equals numpy's einsum
    of the A and B the app wrote, exactly, and is bitwise the C of CBLAS
    DGEMM, for the matrix product with tile products that are not
    multiples of the kernel's 16 x 16 tiles, the CCSD-like doubles term
    (block sparse too) and the triples-like term with strided accumulates;
  * random values (in [-1, 1)): the in-app reference check passes (within
    its rounding bound), and C is within 2 K eps K of the CBLAS run's C,
    K the contracted length (each element's sum of |a b| is at most K; the
    two summation orders differ, so not bitwise);
  * the summary names the product that ran.

    tensor_contract_gemm.py NP
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("tensor_contract_gemm_np%d" % NP)
DECK = os.path.join(SOURCE, "inputs", "tensor_contract", "default.yaml")
count = [0]


def run(sets, gemm):
    count[0] += 1
    name = "g%03d" % count[0]
    p, _ = run_app("tensor_contract", DECK, NP, list(sets) + ["tensor_contract.gemm=" + gemm,
                                                             "output.dir=" + OUT, "output.name=" + name],
                   extra=["--quiet"])
    s = summary(p.stdout)
    got = s["results"]["kernels"]["gemm"]
    check(got == gemm, "%s: the summary says gemm %s, asked for %s" % (sets, got, gemm))
    with h5py.File(os.path.join(OUT, name + ".h5"), "r") as f:
        data = {k: np.array(f[k]) for k in ("A", "B", "C") if k in f}
        spec = ("%s,%s->%s" % (f["A"].attrs["indices"], f["B"].attrs["indices"], f["C"].attrs["indices"])
                if "A" in f else None)
    return data, spec, s


base = ["tensor_contract.validation.mode=none", "tensor_contract.output.inputs=true"]
cases = [
    ("matmul 45x37x29, tiles 20 (products 20x20x20 ... 5x17x9)",
     ["tensor_contract.contraction=matmul", "tensor_contract.extents=i=45,j=37,k=29", "tensor_contract.tile=20"]),
    ("matmul 33x18x50, one tile (one 33x18x50 product)",
     ["tensor_contract.contraction=matmul", "tensor_contract.extents=i=33,j=18,k=50", "tensor_contract.tile=50"]),
    ("ccsd 12, tiles 5", ["tensor_contract.extent=12", "tensor_contract.tile=5"]),
    ("ccsd 12, tiles 3, 4 irreps", ["tensor_contract.extent=12", "tensor_contract.tile=3",
                                    "tensor_contract.symmetry.irreps=4"]),
    ("triples, strided accumulates", ["tensor_contract.contraction=triples",
                                      "tensor_contract.extents=a=5,b=4,c=6,i=3,j=5,k=4,l=7",
                                      "tensor_contract.tile=3", "tensor_contract.accumulate=strided"]),
]
for label, sets in cases:
    port, spec, _ = run(base + sets, "portable")
    blas, _, _ = run(base + sets, "blas")
    ref = np.einsum(spec, port["A"], port["B"])
    c = port["C"]
    check(np.any(c != 0), "%s: C is all zero" % label)
    check(np.array_equal(c, ref), "%s: C differs from einsum %s (max %g)" % (label, spec, np.max(np.abs(c - ref))))
    check(np.array_equal(c.view(np.uint64), blas["C"].view(np.uint64)), "%s: C differs from the BLAS run's" % label)
    print("%-56s portable: C == einsum(%s) == BLAS's, exactly" % (label, spec))

# random values: the in-app reference, and the BLAS run within a tight tolerance
rand = ["tensor_contract.values=random", "tensor_contract.validation.mode=reference"]
for label, K, sets in [("ccsd 20, tiles 7, random", 20 * 20, ["tensor_contract.extent=20", "tensor_contract.tile=7"]),
                       ("matmul 70x41x53, tiles 19, random, strided", 53,
                        ["tensor_contract.contraction=matmul", "tensor_contract.extents=i=70,j=41,k=53",
                         "tensor_contract.tile=19", "tensor_contract.accumulate=strided"])]:
    port, _, s = run(rand + sets, "portable")
    blas, _, _ = run(rand + sets, "blas")
    rf = s["validation"]["phases"][0]["reference"]
    check(rf["verdict"] == "pass" and rf["max_abs_difference"] <= rf["largest_bound"], "%s: %s" % (label, rf))
    diff = float(np.max(np.abs(port["C"] - blas["C"])))
    tol = 2.0 * K * np.finfo(float).eps * K
    check(diff <= tol, "%s: |C portable - C blas| %g above %g" % (label, diff, tol))
    print("%-56s portable: reference pass (max diff %.2e, bound %.2e); |C - C blas| %.2e <= %.2e"
          % (label, rf["max_abs_difference"], rf["largest_bound"], diff, tol))
print("PASS")
