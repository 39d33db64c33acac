#!/usr/bin/python3
"""smpi_platform: a SimGrid platform (XML) and host file for SMPI from a
machine file (YAML), for a given number of ranks.

    tools/smpi_platform.py MACHINE.yaml -n RANKS [-o DIR]

The machine file describes one node and its network (docs/co-design.md, "A
simulated machine"). Read here:

    cores_per_node             ranks of one node (one rank per core)
    core_gflops                sustained double-precision GFLOP/s of one core
    network.latency_s          one-way latency between two nodes (s)
    network.bandwidth_Bps      bandwidth of a node's link (B/s)
    memory.bandwidth_Bps_node  memory bandwidth of a node (B/s): messages
                               between ranks of one node
    memory.latency_s           optional: latency of a message within a node
                               (default 0)
    network.backbone_Bps       optional: a shared backbone of this bandwidth
                               (default none: a full crossbar, every pair of
                               nodes at its links' bandwidth)

`network.message.latency_s` and `network.message.bandwidth_Bps` (the
prediction's names for the costs of two-sided messages) are taken where
`network.latency_s` / `network.bandwidth_Bps` are absent, and
`node.message.latency_s` where `memory.latency_s` is. Other keys are left
to the tools that read them.

The platform is a SimGrid <cluster>: ceil(RANKS / cores_per_node) hosts,
each a node of cores_per_node cores at core_gflops, each with a private
full-duplex link (half the latency: a message between nodes crosses two such
links; the bandwidth) to the crossbar (or the backbone), and
a loopback link (memory bandwidth) for messages within the node. The host
file places cores_per_node consecutive ranks on each node. Written to DIR
(default output/simulate/<machine>-<RANKS>): platform.xml and hostfile.

Exit status 0; 2 for a bad machine file or option (one line naming the
file, line and key).
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locuslib import ROOT, Located, UserError, dig, write_file  # noqa: E402

# (dotted key, alternative key or None, required, what it must be)
KEYS = [
    ("cores_per_node", None, True, "a positive integer"),
    ("core_gflops", None, True, "a positive number (GFLOP/s of one core)"),
    ("network.latency_s", "network.message.latency_s", True, "a number >= 0 (seconds)"),
    ("network.bandwidth_Bps", "network.message.bandwidth_Bps", True, "a positive number (bytes/s)"),
    ("memory.bandwidth_Bps_node", None, True, "a positive number (bytes/s)"),
    ("memory.latency_s", "node.message.latency_s", False, "a number >= 0 (seconds)"),
    ("network.backbone_Bps", None, False, "a positive number (bytes/s)"),
]


class MachineSpec:
    """The numbers of a machine file the platform needs, checked: a missing
    or bad value is one UserError naming file:line and key."""

    def __init__(self, path):
        if not os.path.isfile(path):
            raise UserError("%s: no such machine file" % path)
        doc = Located(path)
        if not isinstance(doc.data, dict):
            raise UserError("%s: a machine file is a mapping (cores_per_node, core_gflops, network, memory, ...)"
                            % path)
        self.path = path
        self._other_keys(doc)
        self.name = str(doc.data.get("name") or os.path.splitext(os.path.basename(path))[0])
        self.values = {}
        for key, alt, required, what in KEYS:
            used, value = key, dig(doc.data, key)
            if value is None and alt:
                used, value = alt, dig(doc.data, alt)
            if value is None:
                if required:
                    raise UserError("%s: missing key '%s' (%s)" % (path, key, what))
                continue
            self.values[key] = self._number(doc, used, value, what)

    @staticmethod
    def _other_keys(doc):
        """machine.py's check of the keys other than the numbers, against
        the keys this platform or ./locus predict reads (a key neither
        reads is a typo): its first problem, naming its line."""
        from machine import all_keys, other_key_problems
        known = {k for k, _, _ in all_keys()} | {k for k, _, _, _ in KEYS} | {a for _, a, _, _ in KEYS if a}
        problems = other_key_problems(doc.data, known, doc)
        if problems:
            raise UserError(problems[0])

    @staticmethod
    def _number(doc, key, value, what):
        where = doc.where(key.replace(".", "/"))
        if isinstance(value, str):
            # PyYAML reads 12.5e9 (no sign in the exponent) as text
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError("%s: %s: must be %s (got %r)" % (where, key, what, value))
        v = float(value)
        if math.isnan(v) or math.isinf(v):
            raise UserError("%s: %s: must be %s and finite: a simulation needs a real cost (got %r)"
                            % (where, key, what, value))
        if key == "cores_per_node" and (not isinstance(value, int) or value < 1):
            raise UserError("%s: %s: must be %s (got %r)" % (where, key, what, value))
        if "latency" in key and v < 0:
            raise UserError("%s: %s: must be %s (got %r)" % (where, key, what, value))
        if "latency" not in key and v <= 0:
            raise UserError("%s: %s: must be %s (got %r)" % (where, key, what, value))
        return v

    def get(self, key, default=None):
        return self.values.get(key, default)


def nodes_for(spec, ranks):
    return (ranks + int(spec.get("cores_per_node")) - 1) // int(spec.get("cores_per_node"))


def platform_xml(spec, ranks):
    """The SimGrid platform (text) of RANKS ranks on this machine."""
    cores = int(spec.get("cores_per_node"))
    nodes = nodes_for(spec, ranks)
    attrs = [
        ("id", "locus"), ("prefix", "node-"), ("suffix", ""), ("radical", "0-%d" % (nodes - 1)),
        ("speed", "%.6gf" % (spec.get("core_gflops") * 1e9)), ("core", str(cores)),
        # a message between two nodes crosses two links (its node's and the
        # other's): each carries half the one-way latency
        ("bw", "%.6gBps" % spec.get("network.bandwidth_Bps")), ("lat", "%.6gs" % (spec.get("network.latency_s") / 2)),
        ("sharing_policy", "SPLITDUPLEX"),
        ("loopback_bw", "%.6gBps" % spec.get("memory.bandwidth_Bps_node")),
        ("loopback_lat", "%.6gs" % spec.get("memory.latency_s", 0.0)),
    ]
    if spec.get("network.backbone_Bps"):
        attrs += [("bb_bw", "%.6gBps" % spec.get("network.backbone_Bps")), ("bb_lat", "0s"),
                  ("bb_sharing_policy", "SHARED")]
    cluster = "  <cluster " + "\n           ".join('%s="%s"' % kv for kv in attrs) + "/>\n"
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            "<!-- %s: %d ranks on %d node(s) of %d cores; generated by tools/smpi_platform.py from %s -->\n"
            '<platform version="4.1">\n%s</platform>\n'
            % (spec.name, ranks, nodes, cores, os.path.basename(spec.path), cluster))


def hostfile(spec, ranks):
    """SMPI's host file: cores_per_node consecutive ranks per node."""
    cores = int(spec.get("cores_per_node"))
    return "".join("node-%d:%d\n" % (n, min(cores, ranks - n * cores)) for n in range(nodes_for(spec, ranks)))


def write_platform(spec, ranks, out_dir):
    """platform.xml and hostfile in OUT_DIR; returns their paths."""
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise UserError("%s: cannot create (%s)" % (out_dir, e.strerror))
    xml, hosts = os.path.join(out_dir, "platform.xml"), os.path.join(out_dir, "hostfile")
    write_file(xml, platform_xml(spec, ranks))
    write_file(hosts, hostfile(spec, ranks))
    return xml, hosts


def main(argv=None):
    ap = argparse.ArgumentParser(prog="smpi_platform.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("machine", help="machine file (YAML), e.g. inputs/machines/example.yaml")
    ap.add_argument("-n", "--ranks", type=int, required=True, help="simulated ranks")
    ap.add_argument("-o", "--out", help="directory (default output/simulate/<machine>-<ranks>)")
    a = ap.parse_args(argv)
    try:
        if a.ranks < 1:
            raise UserError("-n: needs a positive number of ranks (got %d)" % a.ranks)
        spec = MachineSpec(a.machine)
        out = a.out or os.path.join(ROOT, "output", "simulate", "%s-%d" % (spec.name, a.ranks))
        xml, hosts = write_platform(spec, a.ranks, out)
    except UserError as e:
        print("smpi_platform: error: %s" % e, file=sys.stderr)
        return 2
    print("%s\n%s" % (xml, hosts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
