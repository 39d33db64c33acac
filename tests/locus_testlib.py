"""Helpers for locus's Python test drivers (run by CTest with Debian's python3).

CTest passes LOCUS_BUILD_DIR, LOCUS_SOURCE_DIR and LOCUS_MPIEXEC in the
environment (see cmake/LocusTesting.cmake).
"""
import os
import subprocess
import sys
import time

import yaml

BUILD = os.environ.get("LOCUS_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "build"))
SOURCE = os.environ.get("LOCUS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
MPIEXEC = os.environ.get("LOCUS_MPIEXEC", "mpiexec")
# The sanitizer build's tests run with ASAN_OPTIONS, which
# cmake/LocusTesting.cmake sets there and only there.
SANITIZER_BUILD = "ASAN_OPTIONS" in os.environ
sys.path.insert(0, os.path.join(SOURCE, "tools"))
from locuslib import IDLE_YIELD_LIB  # noqa: E402


def full_coverage(ranks):
    """Whether a test runs its every case at this rank count. The drivers
    trim the cases that do not depend on the rank count above 2 ranks (4
    ranks over-subscribe a 2-core host) only where such launches are slow:
    without the suite's idle-yield library (tools/idle_yield.cpp, preloaded
    by cmake/LocusTesting.cmake; not in the sanitizer build), where a
    4-rank launch waits a scheduler time slice per MPI collective."""
    preloaded = os.environ.get("LD_PRELOAD", "").split(":")
    return ranks <= 2 or any(os.path.basename(x) == IDLE_YIELD_LIB for x in preloaded)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def app_path(app):
    return os.path.join(BUILD, "apps", app, app)


def run_app(app, deck, ranks, sets=(), extra=(), timeout=300, expect_ok=True, env=None):
    """Runs an app through mpiexec; returns (CompletedProcess, seconds)."""
    cmd = [MPIEXEC, "-n", str(ranks), app_path(app), deck]
    for s in sets:
        cmd += ["--set", s]
    cmd += list(extra)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        fail("timed out after %ss: %s" % (timeout, " ".join(cmd)))
    dt = time.monotonic() - t0
    if expect_ok and p.returncode != 0:
        fail("exit %d: %s\n--- stdout\n%s\n--- stderr\n%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p, dt


def summary(stdout):
    """The locus_summary block an app prints at the end."""
    doc = yaml.safe_load(stdout[stdout.index("locus_summary:"):])
    return doc["locus_summary"]


def scratch(name):
    """A fresh directory under the current (CTest) working directory."""
    import shutil
    path = os.path.abspath(os.path.join("scratch", name))
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def shm_in_use(name):
    """Some live process has /dev/shm/NAME open or mapped (another job's
    window: ctest -j and other users run MPICH jobs too)."""
    path = "/dev/shm/" + name
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/maps" % pid) as f:
                if path in f.read():
                    return True
            for fd in os.listdir("/proc/%s/fd" % pid):
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) == path:
                    return True
        except OSError:
            continue
    return False


def shm_orphans(new):
    """Of the /dev/shm files NEW (created since a run started), those that
    stay behind with no live process using them: what the run leaked, not
    the windows of tests running beside it (ctest -j)."""
    t0 = time.monotonic()
    left = set(new)
    while left and time.monotonic() - t0 < 3:
        left = {f for f in left if os.path.exists("/dev/shm/" + f)}
        time.sleep(0.1)
    return {f for f in left if os.path.exists("/dev/shm/" + f) and not shm_in_use(f)}


def run_checked(cmd, timeout=1500, env=None, ok=True):
    """A command's CompletedProcess; with OK, a failure (non-zero exit) is
    the test's, with the end of its output."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if ok:
        check(p.returncode == 0, "%s failed (exit %d):\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout[-3000:],
                                                                   p.stderr[-3000:]))
    return p


def smpi_heat3d_build():
    """The SMPI build of heat3d (LOCUS_SMPI=ON) under the build directory's
    smpi/, configured once and brought up to date; exits 77 (skipped) where
    smpicxx/smpirun are not installed."""
    import shutil
    if not shutil.which("smpicxx") or not shutil.which("smpirun"):
        print("SKIP: smpicxx/smpirun not installed (Debian package libsimgrid-dev; ./locus setup installs it)")
        sys.exit(77)
    build = os.path.join(BUILD, "smpi")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        cfg = ["cmake", "-S", SOURCE, "-B", build, "-DLOCUS_SMPI=ON", "-DCMAKE_BUILD_TYPE=Release",
               "-DCMAKE_C_COMPILER=smpicc", "-DCMAKE_CXX_COMPILER=smpicxx"]
        if shutil.which("ccache"):
            cfg.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        run_checked(cfg)
    run_checked(["cmake", "--build", build, "--target", "heat3d", "-j", "2"])
    return build
