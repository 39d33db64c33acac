"""The driver's messages (issue 33): no command is an error; a misspelt
command suggests the right one; a directory or an app-less deck says what
it is; --bind next to the launcher's own binding is one line; --dry-run
prints the launch line (with the over-subscription warning, and the sizes
--per-rank gives); the --help texts name the options they take."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import BUILD, SOURCE, check  # noqa: E402

LOCUS = os.path.join(SOURCE, "locus")


def run(*args, env=None):
    return subprocess.run([LOCUS] + list(args), capture_output=True, text=True, timeout=300, cwd=SOURCE,
                          env=dict(os.environ, **(env or {})))


def lines(text):
    # (without the driver's OpenBLAS note, which it prints on some CPUs when
    # the suite is run by ctest itself rather than by ./locus test)
    return [l for l in text.splitlines() if l.strip() and "OpenBLAS chose its" not in l]


p = run()
check(p.returncode != 0 and "which command?" in p.stderr, "./locus alone: %d %r" % (p.returncode, p.stderr[-300:]))
p = run("rnu")
check(p.returncode != 0 and lines(p.stderr) == ["locus: error: unknown command 'rnu' (did you mean run?); "
                                                "./locus help lists the commands"], "rnu: %r" % p.stderr)
p = run("run", "inputs")
check(p.returncode != 0 and "inputs is a directory, not a deck" in p.stderr, "directory: %r" % p.stderr)
p = run("run", "inputs/examples/empty.yaml", "--dry-run")
check(p.returncode != 0 and "has no top-level section naming an app" in p.stderr and "heat3d: {}" in p.stderr,
      "app-less deck: %r" % p.stderr)

# the bind clash: one line, before anything starts
mpiexec = os.environ.get("LOCUS_MPIEXEC", "mpiexec")
own = "--bind-to" if "openmpi" in mpiexec else "-bind-to"
p = run("run", "-n", "2", "--launcher", "mpiexec %s core" % own, "--bind", "core", "--dry-run")
check(p.returncode != 0 and len(lines(p.stderr)) == 1 and
      ("--bind core and the launcher's own %s" % own) in p.stderr, "bind clash: %r" % p.stderr)

# --dry-run: the launch line, nothing run; over-subscription is said
p = run("run", "-n", "64", "--dry-run", "--set", "heat3d.grid.nx=20")
check(p.returncode == 0 and " -n 64 " in p.stdout and "apps/heat3d/heat3d" in p.stdout and
      "heat3d.grid.nx=20" in p.stdout, "dry run: %r %r" % (p.stdout, p.stderr))
check("64 ranks on" in p.stderr and "over-subscribed" in p.stderr, "over-subscription warning: %r" % p.stderr)
# --per-rank: heat3d 16^3 per rank on 4 ranks (process grid 1 x 2 x 2)
p = run("run", "-n", "4", "--per-rank", "16,16,16", "--dry-run")
check(p.returncode == 0 and "heat3d.grid.nx=16" in p.stdout and "heat3d.grid.ny=32" in p.stdout and
      "heat3d.grid.nz=32" in p.stdout, "--per-rank heat3d: %r %r" % (p.stdout, p.stderr))
p = run("run", "inputs/poisson5pt/default.yaml", "-n", "4", "--per-rank", "100", "--dry-run")
check(p.returncode == 0 and "poisson5pt.grid.n=200" in p.stdout, "--per-rank poisson5pt: %r %r" % (p.stdout, p.stderr))
p = run("run", "-n", "2", "--per-rank", "16,x", "--dry-run")
check(p.returncode != 0 and "--per-rank" in p.stderr and "Traceback" not in p.stderr, "bad --per-rank: %r" % p.stderr)

# one overwrite rule: every shipped deck of every app sets output.overwrite
# (re-running a README command replaces its own output, and says so)
import glob  # noqa: E402
import yaml  # noqa: E402
decks = [d for app in ("heat3d", "poisson5pt", "spmv", "tensor_contract")
         for d in glob.glob(os.path.join(SOURCE, "inputs", app, "*.yaml")) +
         glob.glob(os.path.join(SOURCE, "validation", app, "*.yaml"))]
missing = [os.path.relpath(d, SOURCE) for d in decks
           if ((yaml.safe_load(open(d)) or {}).get("output") or {}).get("overwrite") is not True]
check(len(decks) > 15 and not missing, "shipped decks without output.overwrite: true: %s" % missing)

# the reference problems: small, medium and large for every app, each a
# deck its app loads (docs/reference-problems.md has their figures)
for app in ("heat3d", "poisson5pt", "spmv", "tensor_contract"):
    for size in ("small", "medium", "large"):
        deck = os.path.join(SOURCE, "inputs", app, size + ".yaml")
        q = subprocess.run([os.path.join(BUILD, "apps", app, app), deck, "--print-config"], capture_output=True,
                           text=True)
        check(q.returncode == 0, "reference deck %s: %s" % (deck, q.stderr))

# --help texts
p = run("test", "--help")
check("--mpi" in p.stdout, "test --help omits --mpi")
p = run("study", "--help")
check(all(o in p.stdout for o in ("--launcher", "--site", "--mpi", "tensor_contract")), "study --help: %s" % p.stdout)
p = run("bench", "--help")
check("all of the above except calibrate" in p.stdout and "latency       about  7 min" in p.stdout, "bench --help")
p = run("run", "--help")
check(all(o in p.stdout for o in ("--dry-run", "--per-rank", "figure_of_merit", "not checked")), "run --help")
print("driver messages: no command, did you mean, directory, app-less deck, bind clash, --dry-run, "
      "over-subscription, --per-rank, --help texts")
