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
    for cmd in ("setup", "build", "run", "test", "bench", "lint"):
        check(cmd in p.stdout, "help lists %s" % cmd)
        q = run(cmd, "--help")
        check(q.returncode == 0 and q.stdout.startswith("usage: ./locus " + cmd),
              "%s --help: %r %r" % (cmd, q.stdout[:80], q.stderr))
    p = run()
    # no command is a mistake (exit 2), with the usage on stderr
    check(p.returncode == 2 and p.stderr.startswith("usage: ./locus COMMAND"), "no arguments shows usage, exit 2")
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
    p = run("bench", "latencyy")
    check(p.returncode != 0 and "did you mean 'latency'?" in p.stderr, "bench did-you-mean: " + p.stderr)
    # ./locus study without a file lists every ready study
    q = run("study")
    for f in sorted(os.listdir(os.path.join(SOURCE, "inputs", "studies"))):
        if f.endswith(".yaml"):
            check("inputs/studies/" + f in q.stdout + q.stderr, "./locus study lists %s" % f)
    p = run("version", "--help")
    check(p.returncode == 0 and p.stdout.startswith("usage: ./locus version"), "version --help: %r" % p.stdout)
    p = run("lint", "--help")
    check(p.stdout.count("usage:") == 1, "lint --help prints its usage once: %r" % p.stdout[:300])
    p = run("build", "--fast")
    check(p.returncode != 0 and "unknown option --fast" in p.stderr, p.stderr)
    # The packages are installed (this build needed them): setup says nothing.
    p = run("setup")
    check(p.returncode == 0 and p.stdout == "" and p.stderr == "", "setup is quiet: %r %r" % (p.stdout, p.stderr))
    # --version, without a build
    p = run("--version")
    check(p.returncode == 0 and p.stdout.startswith("locus ") and "(" in p.stdout, "--version: %r" % p.stdout)
    # help and validate --list neither build nor install
    env = dict(os.environ, LOCUS_BUILD_DIR="/nonexistent/locus-build")
    for args in (("run", "--help"), ("validate", "--list"), ("study", "--help"), ("bench", "--help")):
        q = subprocess.run([LOCUS] + list(args), capture_output=True, text=True, timeout=60, env=env)
        check(q.returncode == 0 and q.stdout, "%s: %r" % (" ".join(args), q.stderr))
    check(not os.path.exists("/nonexistent/locus-build"), "help built something")
    # -n1, '--set key value', through a symbolic link to ./locus, from elsewhere
    scratch = os.path.join(os.environ.get("LOCUS_BUILD_DIR", "/tmp"), "scratch", "driver")
    os.makedirs(scratch, exist_ok=True)
    link = os.path.join(scratch, "locus-link")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(LOCUS, link)
    q = subprocess.run([link, "run", "-n1", "--set", "heat3d.grid.nx", "20", "--print-config"], capture_output=True,
                       text=True, timeout=300, cwd=scratch)
    check(q.returncode == 0 and "nx: 20" in q.stdout, "-n1 / --set key value / symlink: %r" % q.stderr[-500:])
    # launchers: quoted options work; a bad one is one line, no traceback
    q = run("run", "-n", "1", "--launcher", "mpiexec -bind-to core", "--print-config")
    check(q.returncode == 0 and "heat3d:" in q.stdout, "--launcher 'mpiexec -bind-to core': %r" % q.stderr[-500:])
    q = run("run", "-n", "1", "--launcher", "nosuchlauncher -x", "--print-config")
    check(q.returncode != 0 and "nosuchlauncher: command not found" in q.stderr and "Traceback" not in q.stderr,
          "bad launcher: %r" % q.stderr)
    q = run("run", "-n", "1", "--launcher", "'unbalanced", "--print-config")
    check(q.returncode != 0 and "No closing quotation" in q.stderr and "Traceback" not in q.stderr, q.stderr)
    mpiexec = os.environ.get("LOCUS_MPIEXEC", "mpiexec")
    quoted = mpiexec + (" --bind-to core" if "openmpi" in mpiexec else " -bind-to core")
    q = subprocess.run([LOCUS, "validate", "heat3d_steady", "-n", "1"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, LOCUS_MPIEXEC=quoted))
    check(q.returncode == 0 and "PASS" in q.stdout and "Traceback" not in q.stderr,
          "validate with LOCUS_MPIEXEC='%s': %r" % (quoted, q.stderr[-800:]))
    # a site file: its launcher is used; a mistake names the file, line and key
    site = os.path.join(scratch, "site.yaml")
    with open(site, "w") as f:
        f.write("launcher: %s -n {n}\nslurm:\n  partition: debug\n" % os.environ.get("LOCUS_MPIEXEC", "mpiexec"))
    q = run("run", "-n", "1", "--site", site, "--print-config")
    check(q.returncode == 0 and "heat3d:" in q.stdout, "--site with a launcher template: %r" % q.stderr[-500:])
    with open(site, "w") as f:
        f.write("launcher: mpiexec\nslurm:\n  acount: x\n")
    q = run("run", "-n", "1", "--site", site, "--print-config")
    check(q.returncode != 0 and "site.yaml:3: slurm.acount: unknown slurm key (did you mean 'account'?)" in q.stderr
          and "Traceback" not in q.stderr, "bad site file: %r" % q.stderr)
    # without Debian's tools (LOCUS_NO_SETUP): what is missing, by name
    bindir = os.path.join(scratch, "bin")
    os.makedirs(bindir, exist_ok=True)
    for tool in ("bash", "dirname", "readlink", "grep", "cat", "tr", "id", "nproc", "awk", "mkdir", "env"):
        dst = os.path.join(bindir, tool)
        if not os.path.lexists(dst):
            os.symlink("/usr/bin/" + tool if os.path.exists("/usr/bin/" + tool) else "/bin/" + tool, dst)
    q = subprocess.run([LOCUS, "build"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PATH=bindir, LOCUS_NO_SETUP="1",
                                LOCUS_BUILD_DIR=os.path.join(scratch, "nobuild")))
    check(q.returncode != 0 and "- cmake" in q.stderr and "an MPI" in q.stderr and "Traceback" not in q.stderr,
          "LOCUS_NO_SETUP without cmake: %r" % q.stderr)
    # A build that fails says so and exits non-zero, also when the last
    # build in the directory succeeded (its status file says 0): a macro
    # named like the core's namespace breaks every core source, after a
    # configure that passes.
    broken = os.path.join(scratch, "broken-build")
    benv = dict(os.environ, LOCUS_BUILD_DIR=broken, CXXFLAGS="-Dlocus=1")
    benv.pop("LOCUS_TEST_KEEP_BUILD", None)
    for attempt in ("first", "after a successful one"):
        q = subprocess.run([LOCUS, "build"], capture_output=True, text=True, timeout=300, env=benv)
        check(q.returncode != 0 and "locus: error: build failed" in q.stderr and "build done" not in q.stderr,
              "a failed build (%s): rc %d, %r" % (attempt, q.returncode, q.stderr[-600:]))
        with open(os.path.join(broken, ".locus-build-status"), "w") as f:
            f.write("0\n")
    # The line a study or validate names as a failed run's cause, under
    # each launcher: the app's error, else the launcher's own reason.
    sys.path.insert(0, os.path.join(SOURCE, "tools"))
    from locuslib import app_error
    hydra = ("heat3d: error: deck.yaml:3: heat3d.grid.nx: must be >= 2 (got 1)\n"
             "===================\n= BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n= EXIT CODE: 2\n")
    check(app_error(hydra, 2).startswith("heat3d: error: deck.yaml:3"), "app_error, Hydra: %r" % app_error(hydra, 2))
    srun = "srun: error: vm: task 0: Exited with exit code 2\nspmv: error: m.mtx:7: bad entry\n"
    check(app_error(srun, 2) == "spmv: error: m.mtx:7: bad entry", "app_error, srun: %r" % app_error(srun, 2))
    box = ("-" * 74 + "\nYour job has requested more processes than the ppr for\nthis topology can support:\n\n"
           "  App: heat3d\n" + "-" * 74 + "\n")
    check(app_error(box, 1) == "Your job has requested more processes than the ppr for this topology can support:",
          "app_error, Open MPI's box: %r" % app_error(box, 1))
    print("driver: help, errors, quiet setup, --version, launchers, symlink, -n1, --set key value, "
          "LOCUS_NO_SETUP checks, failed builds, failed-run causes verified")


main()
