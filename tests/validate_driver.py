"""./locus validate fails (exit 1, a FAIL row) on a deliberately wrong
reference, and reports broken case files clearly (exit 2)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, scratch  # noqa: E402

TOOL = os.path.join(SOURCE, "tools", "validate.py")


def validate(*args):
    return subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True, timeout=300)


def main():
    out = scratch("validate_driver")
    wrong = os.path.join(out, "wrong.yaml")
    with open(wrong, "w") as f:
        f.write("""app: poisson5pt
deck: inputs/poisson5pt/default.yaml
ranks: 1
set: {poisson5pt.grid.n: 15}
source: "deliberately wrong: the iteration count is 500, not 400"
checks:
  - figure: results.iterations
    reference: 400
    tolerance: 0
  - h5: solution
    reference_file: validation/reference/poisson5pt_manufactured_n31.h5
    tolerance: 1.0e-12
""")
    # failed cases are kept under the scratch tree, not the repository's output/validate/
    p = validate(wrong, "--failed-dir", os.path.join(out, "failed_default"))
    check(p.returncode == 1, "a wrong reference must fail: %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    rows = [l for l in p.stdout.splitlines() if l.startswith("wrong")]
    check(len(rows) == 2 and all(r.rstrip().endswith("FAIL") for r in rows), "two FAIL rows:\n" + p.stdout)
    check("results.iterations" in rows[0] and "500" in rows[0] and "400" in rows[0], rows[0])
    check("shape (15, 15), reference (31, 31)" in rows[1], rows[1])
    check("1 case, 1 failed: wrong" in p.stdout, p.stdout)
    # the failed case's output and logs are kept; -n changes the rank count
    kept = os.path.join(out, "failed")
    p = validate(wrong, "--failed-dir", kept, "-n", "1")
    check(p.returncode == 1 and "(poisson5pt, 1 rank)" in p.stderr, p.stderr)
    for f in ("case.h5", "run.cmd", "run.stdout", "run.stderr"):
        check(os.path.exists(os.path.join(kept, "wrong", f)), "failed case: %s not kept in %s" % (f, kept))
    check(" -n 1 " in open(os.path.join(kept, "wrong", "run.cmd")).read(), "-n 1 not used")

    for text, expect in (("app: poisson5pt\ndeck: nowhere.yaml\nsource: x\nchecks: []\n", "deck: nowhere.yaml not found"),
                         ("app: poisson5pt\ndeck: inputs/poisson5pt/default.yaml\nsource: x\nchecks:\n"
                          "  - figure: results.iterations\n    referense: 1\n    tolerance: 0\n",
                          "referense: unknown key (did you mean 'reference'?)"),
                         ("app: poisson5pt\ndeck: inputs/poisson5pt/default.yaml\nchecks: []\n", "missing case key 'source'")):
        bad = os.path.join(out, "bad.yaml")
        with open(bad, "w") as f:
            f.write(text)
        p = validate(bad)
        check(p.returncode == 2 and expect in p.stderr and "Traceback" not in p.stderr,
              "expected '%s' (exit 2), got %d: %s" % (expect, p.returncode, p.stderr))
    p = validate("poisson5pt_ordre")
    check(p.returncode == 2 and "did you mean 'poisson5pt_order'" in p.stderr, p.stderr)
    print("validate: wrong references fail, broken cases are reported")


main()
