#!/usr/bin/python3
"""A benchmark's smoke test: run it, then check fields of the JSON summary
it wrote (bench/harness.hpp: <output.dir>/<output.name>.json).

    bench_summary.py JSON [--expect FIELD[=REGEX]]... [--absent FIELD]... -- COMMAND...

COMMAND must exit 0 (its output is shown when it does not). Then every
FIELD must be in JSON's "locus_bench" tree: a path of keys joined by
'/' (keys may hold dots: goals/goal_8B_within_1.1x), where
rows[KEY=VALUE,...] picks the first table row whose KEYs have those
VALUEs, e.g. rows[variant=locus-getput]/verdict. Without =REGEX the field must be a
finite number; with it, its text must match REGEX entirely (met|missed).
An --absent FIELD must not be there (rows[KEY=VALUE]: no such row).
The JSON is removed before the run, so a stale one cannot pass.
"""
import json
import math
import os
import re
import subprocess
import sys

ROW = re.compile(r"^(\w+)\[([^\]]*)\]$")


def fail(msg):
    print("bench_summary: FAIL: " + msg)
    sys.exit(1)


def parse_args(argv):
    if "--" not in argv or argv.index("--") < 1:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    ours, command = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    path, expects, absents = ours[0], [], []
    rest = ours[1:]
    while rest:
        if rest[0] not in ("--expect", "--absent") or len(rest) < 2:
            print("bench_summary: unknown arguments %s" % rest, file=sys.stderr)
            sys.exit(2)
        (expects if rest[0] == "--expect" else absents).append(rest[1])
        rest = rest[2:]
    return path, expects, absents, command


def lookup(tree, field):
    """The value at a '/'-joined path (rows[k=v] selects a row), or raise KeyError."""
    node = tree
    for part in field.split("/"):
        m = ROW.match(part)
        if m:
            want = [kv.split("=", 1) for kv in m.group(2).split(",")]
            hits = [r for r in node[m.group(1)] if all(str(r.get(k)) == v for k, v in want)]
            if not hits:
                raise KeyError("no row with %s" % m.group(2))
            node = hits[0]
        else:
            if not isinstance(node, dict) or part not in node:
                raise KeyError(part)
            node = node[part]
    return node


def check(tree, expect):
    # the first '=' outside a row selector's brackets ends the field
    depth, cut = 0, -1
    for i, ch in enumerate(expect):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "=" and depth == 0:
            cut = i
            break
    field, sep, pattern = (expect, "", "") if cut < 0 else (expect[:cut], "=", expect[cut + 1:])
    try:
        value = lookup(tree, field)
    except (KeyError, TypeError) as e:
        fail("%s: missing (%s)" % (field, e))
    if sep:
        if not re.fullmatch(pattern, str(value)):
            fail("%s is %r, expected /%s/" % (field, value, pattern))
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        fail("%s is %r, expected a number" % (field, value))
    return "%s = %s" % (field, value)


def main():
    path, expects, absents, command = parse_args(sys.argv[1:])
    if os.path.exists(path):
        os.remove(path)
    p = subprocess.run(command, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stdout.write(p.stdout)
        sys.stdout.write(p.stderr)
        fail("the benchmark exited with %d" % p.returncode)
    try:
        with open(path) as f:
            tree = json.load(f)["locus_bench"]
    except (OSError, ValueError, KeyError) as e:
        sys.stdout.write(p.stdout)
        fail("%s: no JSON summary (%s)" % (path, e))
    for e in expects:
        print("ok: " + check(tree, e))
    for field in absents:
        try:
            value = lookup(tree, field)
        except (KeyError, TypeError):
            print("ok: %s absent" % field)
            continue
        fail("%s is there (%r), expected it absent" % (field, value))
    print("bench_summary: %d field(s) of %s checked" % (len(expects) + len(absents), path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
