#!/usr/bin/python3
"""`./locus bench halo --quick` (tools/bench.py, the driver's second step):
both placements run, and the quick run prints the full run's table columns,
its report marked quick, every goal's line (the memory roofline's "not
judged (quick)"), the legend and the time it took, in well under a minute."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, scratch  # noqa: E402


def main():
    out = scratch("bench_quick")
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/python3", os.path.join(SOURCE, "tools", "bench.py"), "halo", "--quick", "-n", "2",
                        "--set", "output.dir=" + out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    secs = time.monotonic() - t0
    check(p.returncode == 0, "bench halo --quick: exit %d\n%s\n%s" % (p.returncode, p.stdout[-3000:],
                                                                     p.stderr[-3000:]))
    text = p.stdout
    # the full run's columns, in both placements' tables
    header = re.compile(r"^strategy\s+us/exchange\s+rma/this\s+p2p/this\s+wrong ghosts$", re.M)
    check(len(header.findall(text)) == 2, "expected the table header twice:\n" + text)
    for s in ("p2p", "rma", "locus", "locus-nb", "locus-barrier"):
        check(len(re.findall(r"^%s\s+[0-9.]+\s" % re.escape(s), text, re.M)) == 2, "no row for %s:\n%s" % (s, text))
    check(text.count("  quick: true  # smaller sizes, fewer repeats") == 2, "the reports are not marked quick:\n"
          + text)
    verdict = r": (met|missed)( \(.*\))?$"
    for goal in ("goal_2x_over_rma", "goal_at_least_p2p", "goal_le_0.2x_p2p", "goal_le_p2p"):
        check(re.search(r"^    %s%s" % (re.escape(goal), verdict), text, re.M), "no verdict for %s:\n%s"
              % (goal, text))
    check(text.count("    goal_kernel_ge_0.8_triad_roofline: not judged (quick)") == 2,
          "the roofline goal must read 'not judged (quick)' in both runs:\n" + text)
    check("legend (halo):" in text and "goal_kernel_ge_0.8_triad_roofline: heat3d's kernel" in text,
          "no legend:\n" + text)
    check(re.search(r"bench halo --quick: took \d+ min \d+ s", p.stderr), "no duration line:\n" + p.stderr)
    check(secs < 60, "a quick run took %.0f s" % secs)
    print("PASS: bench halo --quick in %.1f s, columns, goals and legend printed" % secs)


main()
