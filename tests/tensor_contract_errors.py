#!/usr/bin/python3
"""tensor_contract: bad decks end every rank with one clear error naming
the deck key, exit 1, no traceback or MPI abort, no output file.

    tensor_contract_errors.py NP
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch  # noqa: E402

NP = int(sys.argv[1])
OUT = scratch("tensor_contract_errors_np%d" % NP)
DECK = os.path.join(SOURCE, "inputs", "tensor_contract", "default.yaml")

CASES = [
    ("no_equals", ["tensor_contract.contraction=abij acik cbkj"], "tensor_contract.contraction: expected 'C = A * B'"),
    ("repeated", ["tensor_contract.contraction=aa = ak * ka"], "index 'a' appears twice in aa"),
    ("dangling", ["tensor_contract.contraction=ij = ikx * kj"], "index 'x' of A is neither in C nor in B"),
    ("missing_c", ["tensor_contract.contraction=ijz = ik * kj"], "index 'z' of C is in neither A nor B"),
    ("hadamard", ["tensor_contract.contraction=ij = ij * ij"], "Hadamard products are not supported"),
    ("digit", ["tensor_contract.contraction=i1 = ik * k1"], "indices are letters a-z"),
    ("extents_syntax", ["tensor_contract.extents=a:4"], "tensor_contract.extents: expected index=value pairs"),
    ("extents_value", ["tensor_contract.extents=a=0"], "the value must be a positive integer"),
    ("extents_index", ["tensor_contract.extents=z=4"], "index 'z' is not in the contraction"),
    ("tiles_index", ["tensor_contract.tiles=q=2"], "tensor_contract.tiles: index 'q' is not in the contraction"),
    ("phase_word", ["tensor_contract.phases=comp compute"], "'compute' is not a phase (comp or comm)"),
    ("too_many_blocks", ["tensor_contract.extent=1000", "tensor_contract.tile=1"], "tile blocks; at most 2^26"),
    ("memory", ["tensor_contract.extent=20000", "tensor_contract.tile=2000", "tensor_contract.validation.mode=none"],
     "private), but the node has"),
    ("reference_size", ["tensor_contract.extent=100", "tensor_contract.tile=50"],
     "reference needs the dense tensors within validation.max_elements"),
    # a size error names the per-index key when its entry makes the size
    ("tiles_blocks", ["tensor_contract.tiles=a=1,b=1", "tensor_contract.extent=4000"],
     "--set tensor_contract.tiles=a=1,b=1: tensor_contract.tiles: A has"),
    ("extents_memory", ["tensor_contract.extents=a=200000,b=200000,i=20000", "tensor_contract.tile=2000",
                        "tensor_contract.validation.mode=none"],
     "tensor_contract.extents=a=200000,b=200000,i=20000: tensor_contract.extents: tensors of"),
    ("irreps", ["tensor_contract.symmetry.irreps=3"], "tensor_contract.symmetry.irreps: must be one of"),
    ("chunk", ["tensor_contract.counter.chunk=0"], "tensor_contract.counter.chunk"),
]
for name, sets, needle in CASES:
    out = os.path.join(OUT, name)
    p, _ = run_app("tensor_contract", DECK, NP, sets + ["output.dir=" + out], extra=["--quiet"],
                   expect_ok=False, timeout=60)
    err = p.stderr
    check(p.returncode == 1, "%s: exit %d (expected 1)\n%s" % (name, p.returncode, err))
    check(needle in err, "%s: expected %r in:\n%s" % (name, needle, err))
    check(err.count("error:") == 1, "%s: %d error lines" % (name, err.count("error:")))
    for bad in ("Traceback", "Assertion", "MPI_Abort", "BAD TERMINATION", "backtrace"):
        check(bad not in err, "%s: %s in stderr" % (name, bad))
    left = os.listdir(out) if os.path.exists(out) else []
    check(not left, "%s: output left: %s" % (name, left))
    print("%-16s %s" % (name, err.strip().splitlines()[-1][:140]))
print("PASS")
