"""A weak study records its problem: results.csv and results.h5 hold
global_size, global_points and points_per_rank per run (integers stay
integers in results.h5), the figure of merit and its unit; --dry-run prints
the global size; report.md's Regenerate line works from another directory;
tensor_contract is studyable; compare-studies accepts the same study,
refuses two studies of different sizes naming the difference (and compares
them with --allow-differences, saying so); a study with a run missing
reports itself incomplete."""
import csv
import os
import re
import shlex
import shutil
import subprocess
import sys

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, scratch  # noqa: E402

TOOLS = os.path.join(SOURCE, "tools")
STUDY = """app: poisson5pt
deck: inputs/poisson5pt/default.yaml
scaling: weak
ranks: [1, 2]
repeats: 1
weak_size: [%d]
set:
  poisson5pt.solver.tolerance: 1.0e-4
  output.write_field: false
"""


def tool(name, *args, cwd=None):
    return subprocess.run([sys.executable, os.path.join(TOOLS, name)] + list(args), capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def main():
    out = scratch("study_sizes")
    res = {}
    for n in (15, 19):
        path = os.path.join(out, "weak%d.yaml" % n)
        with open(path, "w") as f:
            f.write(STUDY % n)
        p = tool("study.py", path, "--dry-run", cwd=out)
        check(p.returncode == 0 and "global 15x15, 225 points per rank" in p.stdout if n == 15 else True,
              "dry run names the global size: %s %s" % (p.stdout, p.stderr))
        res[n] = os.path.join(out, "results", "weak%d" % n)
        p = tool("study.py", path, cwd=out)
        check(p.returncode == 0, "study weak%d: %s %s" % (n, p.stdout[-800:], p.stderr[-800:]))
    with open(os.path.join(res[15], "results.csv")) as f:
        rows = {r["ranks"]: r for r in csv.DictReader(f)}
    # N = n sqrt(ranks): 15 on 1 rank, 21 on 2
    check(rows["1"]["global_size"] == "15x15" and rows["2"]["global_size"] == "21x21", "global sizes: %s" %
          [(r["ranks"], r["global_size"]) for r in rows.values()])
    check(rows["2"]["global_points"] == "441" and rows["2"]["points_per_rank"] == "220.5", "points: %s" % rows["2"])
    check(float(rows["1"]["figure_of_merit"]) > 0 and rows["1"]["figure_of_merit_unit"] == "Mpoint_updates/s",
          "figure of merit column: %s" % rows["1"])
    # the manufactured solve is checked against its known discrete error
    check(rows["1"]["verdict"] == "pass", "verdict column: %s" % rows["1"]["verdict"])
    with h5py.File(os.path.join(res[15], "results.h5"), "r") as h:
        for c in ("ranks", "repeat", "global_points"):
            check(h[c].dtype.kind == "i", "results.h5 %s is %s, not an integer" % (c, h[c].dtype))
        check(h["figure_of_merit"].dtype.kind == "f", "figure_of_merit is %s" % h["figure_of_merit"].dtype)
    report = open(os.path.join(res[15], "report.md")).read()
    check("figure_of_merit.png" in report and "Figure of merit: point updates per second" in report,
          "report: figure of merit")
    # the table: points per rank as the ranks hold them (441 on 2: 220-221), the weak figure of merit
    # per rank too, and runs this short rated INVALID, too short to time (the validity column)
    check("| 220–221 |" in report and "| 225 |" in report and " per rank |" in report and
          "| INVALID: too short (" in report, "report table:\n" + report[:2500])
    m = re.search(r"Regenerate \(from any directory\): `([^`]+)`", report)
    check(m is not None and "--results" in m.group(1), "Regenerate line: %s" % (m.group(1) if m else report[:400]))
    # it works from elsewhere (only redraws: every run is done)
    p = subprocess.run(shlex.split(m.group(1)) + ["--plots-only"], capture_output=True, text=True, timeout=300,
                       cwd="/", env=dict(os.environ))
    check(p.returncode == 0 and "results: %s/report.md" % res[15] in p.stdout,
          "Regenerate from /: %s %s" % (p.stdout[-500:], p.stderr[-500:]))

    # a study with a run missing (interrupted): --plots-only says incomplete and lists it
    part = os.path.join(out, "results", "weak15_part")
    shutil.rmtree(part, ignore_errors=True)
    shutil.copytree(res[15], part)
    two = [d for d in os.listdir(os.path.join(part, "runs")) if "-np2-" in d]
    check(len(two) == 1, "one 2-rank run: %s" % two)
    shutil.rmtree(os.path.join(part, "runs", two[0]))
    p = tool("study.py", os.path.join(out, "weak15.yaml"), "--results", part, "--plots-only", cwd=out)
    rep = open(os.path.join(part, "report.md")).read()
    check(p.returncode == 0 and "incomplete: 1 not run yet" in p.stdout and "# Study weak15 (incomplete)" in rep
          and "**Incomplete: 1 of 2 planned runs have not run.**" in rep and "| run | 2 | 1 of 1 |" in rep,
          "incomplete study: %s %s\n%s" % (p.stdout[-400:], p.stderr[-400:], rep[:1200]))

    # compare-studies: the same study passes; different sizes are refused
    p = tool("compare_studies.py", res[15], res[15], "--out", os.path.join(out, "cmp_same"))
    check(p.returncode == 0 and "warning" not in p.stderr, "same study: %s %s" % (p.stdout, p.stderr))
    p = tool("compare_studies.py", res[15], res[19], "--out", os.path.join(out, "cmp_diff"))
    check(p.returncode == 2 and "not the same study" in p.stderr and "weak_size" in p.stderr and
          "global size at 1 rank: weak15 15x15, weak19 19x19" in p.stderr, "different sizes: %s" % p.stderr)
    p = tool("compare_studies.py", res[15], res[19], "--out", os.path.join(out, "cmp_diff"), "--allow-differences")
    check(p.returncode == 0 and "warning: A and B differ: global size" in p.stderr, "allowed: %s" % p.stderr)
    check("## Differences between A and B" in open(os.path.join(out, "cmp_diff", "report.md")).read(),
          "the report heads with the differences")

    # tensor_contract is studyable (weak: extent grows as ranks^(1/6) for ccsd)
    path = os.path.join(out, "tensor.yaml")
    with open(path, "w") as f:
        f.write("app: tensor_contract\ndeck: inputs/tensor_contract/default.yaml\nscaling: weak\nranks: [1, 64]\n"
                "repeats: 1\nweak_size: [8]\nset: {tensor_contract.tile: 4}\n")
    p = tool("study.py", path, "--dry-run", cwd=out)
    check(p.returncode == 0 and "global ccsd extent 8 tile 4 (C 8x8x8x8)" in p.stdout and
          "global ccsd extent 16 tile 4 (C 16x16x16x16)" in p.stdout, "tensor study: %s %s" % (p.stdout, p.stderr))
    print("study sizes: CSV/HDF5 size and figure-of-merit columns, integer dtypes, Regenerate from /, "
          "compare-studies same/refused/allowed, tensor_contract studyable")


main()
