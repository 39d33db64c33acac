"""Bad machine files for ./locus simulate and tools/smpi_platform.py: each
is one line on stderr naming the file (and line) and the key, exit 2, no
traceback; a good one gives the cluster of ceil(ranks / cores_per_node)
nodes with the file's numbers."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, scratch  # noqa: E402

work = scratch("smpi_machine_errors")
tool = os.path.join(SOURCE, "tools", "smpi_platform.py")
GOOD = """name: t
cores_per_node: 4
core_gflops: 2.0
memory:
  bandwidth_Bps_node: 1.0e+10
network:
  latency_s: 2.0e-6
  bandwidth_Bps: 1.0e+9
"""


def platform(text, ranks=10, name="m.yaml"):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path, subprocess.run([sys.executable, tool, path, "-n", str(ranks), "-o", os.path.join(work, "out")],
                                capture_output=True, text=True, timeout=60)


CASES = [
    (GOOD.replace("cores_per_node: 4\n", ""), ["m.yaml", "cores_per_node", "missing"]),
    (GOOD.replace("cores_per_node: 4", "cores_per_node: 2.5"), ["m.yaml:2", "cores_per_node"]),
    (GOOD.replace("core_gflops: 2.0", "core_gflops: fast"), ["m.yaml:3", "core_gflops"]),
    (GOOD.replace("latency_s: 2.0e-6", "latency_s: -1.0"), ["m.yaml:7", "network.latency_s"]),
    (GOOD.replace("bandwidth_Bps: 1.0e+9", "bandwidth_Bps: .inf"), ["m.yaml:8", "network.bandwidth_Bps", "finite"]),
    (GOOD.replace("  bandwidth_Bps_node: 1.0e+10\n", "  bandwidth_Bps_core: 1.0e+10\n"),
     ["m.yaml", "memory.bandwidth_Bps_node", "missing"]),
    ("cores_per_node: [4\n", ["m.yaml:", "YAML"]),
    (GOOD + "bogus_key: 1\n", ["m.yaml:9", "bogus_key: unknown key"]),
    (GOOD.replace("name: t", "name: [a, b]"), ["m.yaml:1", "name: ['a', 'b'] is not a text"]),
    (GOOD.replace("  latency_s: 2.0e-6", "  latncy_s: 2.0e-6"), ["m.yaml:7", "network.latncy_s: unknown key",
                                                              "did you mean network.latency_s"]),
    (GOOD.replace("core_gflops: 2.0", "core_gflops: 2.0\ncore_gflops: 3.0"), ["m.yaml:4", "core_gflops: given twice"]),
    ("- 1\n- 2\n", ["m.yaml", "mapping"]),
]
for text, words in CASES:
    path, p = platform(text)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2, "exit %d for %r (want 2):\n%s" % (p.returncode, text, p.stderr))
    check(len(lines) == 1 and "Traceback" not in p.stderr, "not one line for %r:\n%s" % (text, p.stderr))
    for w in words:
        check(w in lines[0], "%r not in the error for %r: %s" % (w, text, lines[0]))
path, p = platform(GOOD, name="none.yaml")
check(p.returncode == 0, "a good machine file failed: %s" % p.stderr)
xml = open(os.path.join(work, "out", "platform.xml")).read()
for w in ('radical="0-2"', 'core="4"', 'speed="2e+09f"', 'bw="1e+09Bps"', 'lat="1e-06s"', 'loopback_bw="1e+10Bps"'):
    check(w in xml, "%s not in the platform:\n%s" % (w, xml))
hosts = open(os.path.join(work, "out", "hostfile")).read()
check(hosts == "node-0:4\nnode-1:4\nnode-2:2\n", "host file: %r" % hosts)
# ./locus simulate checks its machine file before building anything
p = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "simulate.py"),
                    os.path.join(SOURCE, "inputs", "simulate", "heat3d.yaml"), "--machine",
                    os.path.join(work, "nope.yaml"), "-n", "4", "--check"], capture_output=True, text=True, timeout=60)
check(p.returncode == 2 and "nope.yaml: no such machine file" in p.stderr, "simulate --check: %s" % p.stderr)
print("PASS")
