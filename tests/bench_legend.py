#!/usr/bin/python3
"""Every goal a benchmark judges has its legend entry (tools/bench_legend.py):
the goal names in bench/*.cpp (the literal ones, and those built from a
matrix or tile name) are all explained, every legend entry names a goal
that exists, and `./locus bench --help` lists the goals."""
import glob
import os
import re
import subprocess
import sys

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(SOURCE, "tools"))
import bench_legend  # noqa: E402


def main():
    found = set()
    for path in glob.glob(os.path.join(SOURCE, "bench", "*.cpp")):
        text = open(path).read()
        found |= set(re.findall(r'\.(?:sized_)?goal\(\s*"([^"]+)"', text))
        found |= {"get_8B_goal_le_1.5x_memcpy", "put_8B_goal_le_1.5x_memcpy"} if "_8B_goal_le_1.5x_memcpy" in text \
            else set()
        found |= {"hpcg27" + g for g in re.findall(r'mname \+ "(_[a-z0-9_.]+)"', text)}
        found |= {"tile_32" + g for g in re.findall(r'"tile_" \+ ts \+ "(_[a-z0-9_.]+)"', text)}
        found |= set(re.findall(r'goals\.(?:push_back|emplace_back)\(\{?\s*"([a-z0-9_.]+)"\s*,', text))
        found |= set(re.findall(r'std::string\("([a-z0-9_.]+)"\)', text)) & {"ghost_progress_thread_hides_ge_80pct"}
    missing = sorted(g for g in found if bench_legend.explain(g) is None)
    if missing:
        print("FAIL: goals without a legend entry: %s" % missing)
        sys.exit(1)
    unused = [n for _, n, _ in bench_legend.GOALS
              if not any(bench_legend.pattern(n).match(g) for g in found)]
    if unused:
        print("FAIL: legend entries for goals no benchmark judges: %s" % unused)
        sys.exit(1)
    p = subprocess.run([os.path.join(SOURCE, "locus"), "bench", "--help"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, LOCUS_NO_SETUP="1"))
    if p.returncode != 0 or "goal_kernel_ge_0.8_triad_roofline: heat3d's kernel" not in p.stdout:
        print("FAIL: bench --help lists no goals:\n%s%s" % (p.stdout[-1500:], p.stderr))
        sys.exit(1)
    print("PASS: %d goals explained" % len(found))


main()
