#!/usr/bin/python3
"""locus machine: a machine file (YAML) that describes a node and its network
for `./locus predict`, measured on this host from locus's own benchmarks.

    ./locus machine [-o FILE] [--from-bench] [--name NAME]
    ./locus machine --check FILE

A machine file holds what the prediction needs (docs/co-design.md, "Machine
files"): cores per node and the sustained flop rate of a core; the memory
bandwidth of one core and of a whole node (STREAM triad's real traffic),
a core's cache and its bandwidth; for ranks on one
node and for ranks on different nodes, the message latency, bandwidth and
rate, the one-sided (RMA) costs of get, put and accumulate (a latency and a
bandwidth each: t(s) = latency + s / bandwidth), the rate of atomic updates,
the time of one fetch-and-op, and the rate at which one target serves
fetch-and-ops from many (a shared counter's contention); and, as evidence,
the measured cost of every operation per size.

Measured here (`./locus machine`): STREAM triad from every rank at once
(`heat3d --machine`, 1 rank and one per core; in a core's L2 and out of
cache), the core's DGEMM rate (numpy on the system BLAS), the same-node
and inter-node (emulated nodes) costs per size from `bench latency`
(locus with locality on, 1 B - 4 MiB) and `bench exchange` (two-sided, 8 B -
8 KiB), and the atomic rates from `bench gups`. `--from-bench` reads the
CSV files a former `./locus bench latency|exchange|gups` left in
output/bench/ instead of running them. `--check FILE` checks a machine file
and prints what it holds.

Exit status: 0; 2 for a bad machine file or option; 1 when a benchmark
fails.
"""
import argparse
import csv
import datetime
import math
import os
import re
import subprocess
import sys

import numpy as np
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locuslib import (ROOT, Located, UserError, app_binary, closest, dig, launcher_argv,  # noqa: E402
                      tool_exit, write_file)

# ---------------------------------------------------------------- the format

# Every number of a machine file: dotted key, unit, what it is. Rates,
# bandwidths and flop rates may be .inf (an ideal part); latencies and
# times may be 0. All are required (a prediction that silently assumed a
# number would not say what it rests on).
LINK_KEYS = [
    ("message.latency_s", "s", "an 8 B two-sided message, one way (LogGP's L + 2o)"),
    ("message.bandwidth_Bps", "B/s", "large two-sided messages"),
    ("message.rate_per_s", "1/s", "messages one rank can start per second (1/g)"),
    ("get.latency_s", "s", "an 8 B blocking get (one-sided)"),
    ("get.bandwidth_Bps", "B/s", "large gets"),
    ("put.latency_s", "s", "an 8 B blocking put"),
    ("put.bandwidth_Bps", "B/s", "large puts"),
    ("accumulate.latency_s", "s", "an 8 B blocking accumulate"),
    ("accumulate.bandwidth_Bps", "B/s", "large accumulates"),
    ("atomic_rate_per_s", "1/s", "atomic updates one rank issues per second (GUPS per rank)"),
    ("fetch_and_op_s", "s", "one blocking fetch-and-op"),
    ("counter_rate_per_s", "1/s", "fetch-and-ops one target serves per second from many ranks (a shared counter)"),
]
TOP_KEYS = [
    ("cores_per_node", "", "cores of a node (one rank per core)"),
    ("core_gflops", "GFLOP/s", "sustained double-precision flop rate of one core (DGEMM)"),
    ("memory.bandwidth_Bps_core", "B/s", "memory bandwidth of one core alone (STREAM triad's real traffic)"),
    ("memory.bandwidth_Bps_node", "B/s", "memory bandwidth of every core of a node at once (the same)"),
    ("memory.cache_bytes_core", "B", "a core's own cache (L2): a rank whose footprint fits runs from it"),
    ("memory.cache_bandwidth_Bps_core", "B/s", "STREAM triad of one core on arrays in half of that cache"),
]
SCOPES = ("node", "network")  # ranks of one node; ranks of different nodes
COST_OPS = ("message", "get", "put", "accumulate")


def is_time(key):
    """A time (>= 0 s, finite); every other number is a rate (> 0, .inf
    allowed)."""
    return key.endswith("latency_s") or key.endswith("fetch_and_op_s")


def all_keys():
    """(dotted key, unit, meaning) of every number, in the file's order."""
    out = list(TOP_KEYS)
    for s in SCOPES:
        what = "ranks of one node" if s == "node" else "ranks on different nodes"
        out += [("%s.%s" % (s, k), u, "%s: %s" % (what, m)) for k, u, m in LINK_KEYS]
    return out


def set_key(tree, dotted, value):
    parts = dotted.split(".")
    cur = tree
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value


class Machine:
    """A checked machine file: .get('network.message.latency_s') etc."""

    def __init__(self, data, path="<machine>"):
        self.data, self.path = data, path

    def get(self, key):
        return dig(self.data, key)

    @property
    def name(self):
        return str(self.data.get("name") or os.path.splitext(os.path.basename(self.path))[0])

    def with_changes(self, changes):
        """A copy with `key=factor` multiplications applied (what-if)."""
        import copy
        d = copy.deepcopy(self.data)
        for key, factor in changes:
            v = dig(d, key) * factor
            set_key(d, key, max(1, int(round(v))) if key == "cores_per_node" else v)
        return Machine(d, self.path)


def _where(loc, key):
    return loc.where(key.replace(".", "/")) if loc else "<machine>"


def check_machine(data, loc=None):
    """A Machine from a loaded YAML mapping; UserError listing every problem
    (file:line: key: what is wrong)."""
    path = loc.path if loc else "<machine>"
    if not isinstance(data, dict):
        raise UserError("%s: a machine file is a mapping of keys (docs/co-design.md, \"Machine files\")" % path)
    errors = []
    known = {k for k, _, _ in all_keys()}
    for key, unit, meaning in all_keys():
        v = dig(data, key)
        where = _where(loc, key)
        if v is None:
            errors.append("%s: %s: missing (%s, %s)" % (where if key.replace(".", "/") in (
                loc.lines if loc else {}) else path, key, meaning, unit or "a number"))
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            errors.append("%s: %s: %r is not a number (%s)" % (where, key, v, unit or "a count"))
            continue
        if math.isnan(v):
            errors.append("%s: %s: nan" % (where, key))
        elif key in ("cores_per_node", "memory.cache_bytes_core"):
            if not isinstance(v, int) or v < 1:
                errors.append("%s: %s: %r is not a positive integer" % (where, key, v))
        elif is_time(key):
            if v < 0 or math.isinf(v):
                errors.append("%s: %s: %r must be a finite time >= 0 s" % (where, key, v))
        elif v <= 0:
            errors.append("%s: %s: %r must be > 0 (.inf for an ideal part)" % (where, key, v))
    errors += other_key_problems(data, known, loc)
    costs = data.get("costs")
    if costs is not None:
        errors += check_costs(costs, loc)
    if errors:
        raise UserError("bad machine file (docs/co-design.md, \"Machine files\"):\n  " + "\n  ".join(errors))
    return Machine(data, path)


def other_key_problems(data, known, loc):
    """The problems of a machine file's keys other than its numbers: name
    and description not a text, measured not a mapping, and every key or
    section that is not in KNOWN (dotted keys; a typo would otherwise be
    ignored). Also the SMPI platform's check (tools/smpi_platform.py)."""
    errors = []
    for key in ("name", "description"):
        if key in data and (isinstance(data[key], bool) or not isinstance(data[key], (str, int, float))):
            errors.append("%s: %s: %r is not a text" % (_where(loc, key), key, data[key]))
    if "measured" in data and not isinstance(data["measured"], dict):
        errors.append("%s: measured: a mapping (by, date, cpu, notes)" % _where(loc, "measured"))

    def walk(tree, prefix):
        for k, v in tree.items():
            key = prefix + str(k)
            if key in ("name", "description", "measured", "costs"):
                continue
            if isinstance(v, dict):
                if not any(x.startswith(key + ".") for x in known):
                    errors.append("%s: %s: unknown section" % (_where(loc, key), key))
                else:
                    walk(v, key + ".")
            elif key not in known:
                hint = closest(key, sorted(known))
                errors.append("%s: %s: unknown key%s" % (_where(loc, key), key,
                                                         " (did you mean %s?)" % hint if hint else ""))
    walk(data, "")
    return errors


def check_costs(costs, loc):
    errors = []
    if not isinstance(costs, dict):
        return ["%s: costs: a mapping {node: {op: [[bytes, seconds], ...]}, network: ...}" % _where(loc, "costs")]
    for scope, ops in costs.items():
        key = "costs.%s" % scope
        if scope not in SCOPES or not isinstance(ops, dict):
            errors.append("%s: %s: expected node or network, each a mapping of %s" % (
                _where(loc, key), key, ", ".join(COST_OPS + ("fetch_and_op",))))
            continue
        for op, rows in ops.items():
            k = "%s.%s" % (key, op)
            ok = isinstance(rows, list) and all(
                isinstance(r, list) and len(r) == 2 and all(isinstance(x, (int, float)) and x >= 0 for x in r)
                for r in rows)
            if not ok:
                errors.append("%s: %s: a list of [bytes, seconds] pairs" % (_where(loc, k), k))
    return errors


def load_machine(path):
    """The checked Machine of file PATH (UserError naming file:line: key)."""
    loc = Located(path)
    return check_machine(loc.data, loc)


# ---------------------------------------------------------------- measuring this host

def bench_dir():
    return os.path.join(ROOT, "output", "bench")


def read_csv(name):
    path = os.path.join(bench_dir(), name)
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError:
        raise UserError("%s: missing (run `./locus bench %s` first, or leave out --from-bench)" % (
            path, name.split("_")[0].split(".")[0]))


def fnum(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def fit_link(rows):
    """latency (s) and bandwidth (B/s) of t(s) = latency + s / bandwidth
    from (bytes, seconds) rows: the latency is the smallest size's time, the
    bandwidth the largest sizes' slope (the model the prediction uses)."""
    rows = sorted((b, t) for b, t in rows if t is not None and t > 0)
    if not rows:
        return None, None
    lat = rows[0][1]
    big = [(b, t) for b, t in rows if b >= max(rows[-1][0] / 16, rows[0][0] * 2)] or rows[-1:]
    if len(big) >= 2:
        b, t = np.array([r[0] for r in big], float), np.array([r[1] for r in big], float)
        slope = float(np.polyfit(b, t, 1)[0])
    else:
        slope = (big[-1][1] - lat) / max(big[-1][0] - rows[0][0], 1)
    bw = 1.0 / slope if slope > 0 else float("inf")
    return lat, bw


def latency_costs(placement):
    """{op: [[bytes, seconds]]} of locus with locality on, from bench latency."""
    out = {}
    for r in read_csv("latency_%s.csv" % placement):
        t = fnum(r.get("locus_on_us"))
        if t is None:
            continue
        out.setdefault(r["op"], []).append([int(r["bytes"]), t * 1e-6])
    return out


def exchange_costs(name):
    """[[bytes, seconds]] of one two-sided message (bench exchange's p2p:
    a face each way per step, so one message's time is the step's)."""
    return [[int(r["bytes"]), fnum(r["p2p_us"]) * 1e-6] for r in read_csv(name) if fnum(r.get("p2p_us"))]


def gups_rate(name, variant_prefix):
    """Atomic updates per second per rank: the best variant whose name
    starts with the prefix, over the units."""
    best = None
    for r in read_csv(name):
        if r.get("verdict") != "PASS" or not r["variant"].startswith(variant_prefix):
            continue
        g = fnum(r.get("gups"))
        if g:
            rate = g * 1e9 / int(r["units"])
            best = rate if best is None else max(best, rate)
    return best


def run(cmd, what, env=None):
    print("locus machine: %s: %s" % (what, " ".join(cmd)), file=sys.stderr, flush=True)
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-2000:])
        raise RuntimeError("%s failed (exit %d)" % (what, p.returncode))
    return p.stdout


def core_gflops():
    """One core's DGEMM rate (GFLOP/s): numpy's matmul on the system BLAS
    (OpenBLAS, the library tensor_contract links), one thread, 1024^3."""
    code = ("import time, numpy as np\n"
            "n = 1024; a = np.random.rand(n, n); b = np.random.rand(n, n); a @ b\n"
            "best = min((lambda t0: (a @ b, time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(5))\n"
            "print(2.0 * n ** 3 / best / 1e9)\n")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    print("locus machine: DGEMM rate of one core (numpy on the system BLAS, 1 thread)", file=sys.stderr, flush=True)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError("the DGEMM measurement failed: " + p.stderr.strip()[-300:])
    return float(p.stdout.strip())


def stream_triad(ranks):
    """heat3d --machine on RANKS ranks at once: {key: number} of its STREAM
    figures (stream_triad_gbs_total, stream_triad_in_cache_gbs_per_rank,
    stream_triad_in_cache_bytes)."""
    cmd = launcher_argv(ranks) + [app_binary("heat3d"), "--machine"]
    out = run(cmd, "STREAM triad on %d rank(s)" % ranks)
    got = {}
    for key in ("stream_triad_gbs_total", "stream_triad_in_cache_gbs_per_rank", "stream_triad_in_cache_bytes"):
        m = re.search(r"%s:\s*([0-9.eE+-]+)" % key, out)
        if not m:
            raise RuntimeError("no %s in heat3d --machine's output" % key)
        got[key] = float(m.group(1))
    return got


def link(lat, bw):
    return {"latency_s": lat, "bandwidth_Bps": bw}


def measure(args):
    """The machine file's data measured on this host (docs/co-design.md)."""
    cores = os.cpu_count() or 1
    if not args.from_bench:
        for b in ("latency", "exchange", "gups"):
            run([os.path.join(ROOT, "locus"), "bench", b], "bench %s" % b)
    one = stream_triad(1)
    totn = stream_triad(cores)["stream_triad_gbs_total"] if cores > 1 else one["stream_triad_gbs_total"]
    d = {"name": args.name, "cores_per_node": cores, "core_gflops": round(core_gflops(), 3),
         # triad's real traffic: 32 B an element, the store's read for
         # ownership included (docs/co-design.md, "How far to trust it":
         # the kernels' formulas leave that read out)
         "memory": {"bandwidth_Bps_core": one["stream_triad_gbs_total"] * 1e9 * REAL_TRIAD,
                    "bandwidth_Bps_node": totn * 1e9 * REAL_TRIAD,
                    # the arrays filled half of L2: the cache is twice that
                    "cache_bytes_core": int(2 * one["stream_triad_in_cache_bytes"]),
                    "cache_bandwidth_Bps_core": one["stream_triad_in_cache_gbs_per_rank"] * 1e9}}
    costs = {}
    for scope, placement, ex, gups in (("node", "same-node", "exchange_same-node.csv", "gups.csv"),
                                       ("network", "inter-node", "exchange_inter-node.csv", "gups_node1.csv")):
        lc = latency_costs(placement)
        msg = exchange_costs(ex)
        sec = {}
        lat, bw = fit_link(msg)
        if lat is None:
            raise UserError("%s: no two-sided times (bench exchange)" % ex)
        sec["message"] = dict(link(lat, bw), rate_per_s=1.0 / lat)
        for op in ("get", "put", "accumulate"):
            lat, bw = fit_link([tuple(x) for x in lc.get(op, [])])
            if lat is None:
                raise UserError("latency_%s.csv: no %s times (bench latency)" % (placement, op))
            sec[op] = link(lat, bw)
        fao = [t for b, t in lc.get("fetch_and_op", [])]
        if not fao:
            raise UserError("latency_%s.csv: no fetch_and_op time (bench latency)" % placement)
        sec["fetch_and_op_s"] = min(fao)
        sec["counter_rate_per_s"] = 1.0 / min(fao)
        rate = gups_rate(gups, "locus")
        if rate is None:
            raise UserError("%s: no verified locus variant (bench gups)" % gups)
        sec["atomic_rate_per_s"] = rate
        d[scope] = sec
        costs[scope] = dict({op: rows for op, rows in lc.items()}, message=msg)
    d["costs"] = costs
    d["measured"] = {"by": "./locus machine" + (" --from-bench" if args.from_bench else ""),
                     "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "cpu": cpu_name(), "notes": MEASURE_NOTES}
    return d


# STREAM counts 24 B per triad element; a cached store also reads its line
# first (read for ownership): 32 B move. The bandwidth is triad's real one;
# the kernels' formulas (docs/outputs.md) count each array once, without
# that read, which makes the memory term of a kernel that writes a
# separate array with cached stores optimistic (docs/co-design.md).
REAL_TRIAD = 32.0 / 24.0

MEASURE_NOTES = [
    "memory bandwidths: STREAM triad x 32/24 (the store's read for ownership moves too); in cache: triad as counted",
    "network: emulated nodes on this host (bench latency and exchange between nodes of one rank)",
    "message.rate_per_s: 1 / the 8 B message time (no separate message-rate benchmark)",
    "counter_rate_per_s: 1 / fetch_and_op_s (one target serves fetch-and-ops one at a time)",
    "atomic_rate_per_s: the best verified locus variant of bench gups, per rank",
]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def g4(v):
    """A number as YAML, to 4 significant digits (.inf for an ideal part)."""
    if isinstance(v, float) and math.isinf(v):
        return ".inf"
    if isinstance(v, int):
        return str(v)
    t = "%.4g" % v
    m, e, x = t.partition("e")
    # YAML 1.1 (PyYAML) reads 2e-06 as a string: the mantissa needs a point
    return (m if "." in m else m + ".0") + e + x


def to_yaml(d):
    """The machine file's text: every number with its unit and meaning in
    a comment, the measured costs as [bytes, seconds] pairs."""
    out = ["# locus machine file (docs/co-design.md, \"Machine files\"): seconds, bytes per second,",
           "# operations per second; costs: measured [bytes, seconds] per operation.",
           "name: %s" % yaml.safe_dump(d["name"], default_style=None).strip().removesuffix("\n...")]
    opened = set()
    for key, unit, meaning in all_keys():
        parts = key.split(".")
        for depth in range(len(parts) - 1):
            sec = ".".join(parts[:depth + 1])
            if sec not in opened:
                opened.add(sec)
                out.append("%s%s:" % ("  " * depth, parts[depth]))
        indent = "  " * (len(parts) - 1)
        out.append("%s%s: %s  # %s%s" % (indent, parts[-1], g4(dig(d, key)), unit + ", " if unit else "",
                                         meaning.split(": ", 1)[-1]))
    if d.get("measured"):
        out.append(yaml.safe_dump({"measured": d["measured"]}, sort_keys=False, width=100).rstrip())
    if d.get("costs"):
        out.append("costs:")
        for scope, ops in d["costs"].items():
            out.append("  %s:" % scope)
            for op, rows in ops.items():
                out.append("    %s: [%s]" % (op, ", ".join("[%d, %s]" % (b, g4(t)) for b, t in rows)))
    return "\n".join(out) + "\n"


def describe(m):
    lines = ["machine %s (%s)" % (m.name, m.path)]
    for key, unit, meaning in all_keys():
        lines.append("  %-40s %-12.4g %-8s %s" % (key, m.get(key), unit, meaning))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="./locus machine", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "output", "machine.yaml"),
                    help="machine file to write (default output/machine.yaml)")
    ap.add_argument("--from-bench", action="store_true", help="read output/bench/ instead of running the benchmarks")
    ap.add_argument("--name", default="this-host", help="the machine's name in the file (default this-host)")
    ap.add_argument("--check", metavar="FILE", help="check a machine file and print it; measure nothing")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)

    def body():
        if args.check:
            print(describe(load_machine(args.check)))
            return 0
        d = measure(args)
        check_machine(d)
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        write_file(args.output, to_yaml(d))
        print(describe(Machine(d, args.output)))
        print("locus machine: wrote %s" % args.output)
        return 0
    return tool_exit(body)

if __name__ == "__main__":
    sys.exit(main())
