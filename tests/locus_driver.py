"""The ./locus driver: every subcommand has --help, bad commands and options
fail with a clear message, and `setup` is quiet when nothing is missing."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check  # noqa: E402

LOCUS = os.path.join(SOURCE, "locus")


def run(*args):
    return subprocess.run([LOCUS] + list(args), capture_output=True, text=True, timeout=120)


def main():
    p = run("help")
    check(p.returncode == 0, "./locus help: %s" % p.stderr)
    for cmd in ("setup", "build", "run", "test", "bench"):
        check(cmd in p.stdout, "help lists %s" % cmd)
        q = run(cmd, "--help")
        check(q.returncode == 0 and q.stdout.startswith("usage: ./locus " + cmd),
              "%s --help: %r %r" % (cmd, q.stdout[:80], q.stderr))
    p = run()
    check(p.returncode == 0 and p.stdout.startswith("usage: ./locus COMMAND"), "no arguments shows usage")
    p = run("frobnicate")
    check(p.returncode != 0 and "unknown command 'frobnicate'" in p.stderr, "unknown command: " + p.stderr)
    p = run("run", "no/such/deck.yaml")
    check(p.returncode != 0 and "deck no/such/deck.yaml not found" in p.stderr, p.stderr)
    p = run("run", "-n", "zero")
    check(p.returncode != 0 and "-n needs a positive number of ranks" in p.stderr, p.stderr)
    p = run("run", "--bogus")
    check(p.returncode != 0 and "unknown option --bogus" in p.stderr, p.stderr)
    p = run("bench", "nothing")
    check(p.returncode != 0 and "unknown benchmark 'nothing'" in p.stderr, p.stderr)
    p = run("build", "--fast")
    check(p.returncode != 0 and "unknown option --fast" in p.stderr, p.stderr)
    # The packages are installed (this build needed them): setup says nothing.
    p = run("setup")
    check(p.returncode == 0 and p.stdout == "" and p.stderr == "", "setup is quiet: %r %r" % (p.stdout, p.stderr))
    print("driver: help, errors and quiet setup verified")


main()
