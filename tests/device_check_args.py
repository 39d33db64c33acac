#!/usr/bin/python3
"""./locus device-check's argument errors and its no-device path, without a
CUDA Kokkos: each bad argument exits 2 with a message naming it; a fake
CUDA Kokkos without nvcc_wrapper is refused; with --no-build on an empty
build directory the missing binaries are failures (exit 1), and where no
GPU is present the runs are said to be skipped for want of one.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check  # noqa: E402

LOCUS = os.path.join(SOURCE, "locus")


def run(*args):
    p = subprocess.run([LOCUS, "device-check"] + list(args), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def expect(code, needle, *args):
    rc, out = run(*args)
    check(rc == code and needle in out,
          "device-check %s: expected exit %d and '%s', got exit %d:\n%s" % (" ".join(args), code, needle, rc, out))


tmp = tempfile.mkdtemp(prefix="device_check_args.")
try:
    missing = os.path.join(tmp, "no-such-kokkos")
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    fake = os.path.join(tmp, "fake-cuda-kokkos")
    os.makedirs(os.path.join(fake, "lib", "cmake", "Kokkos"))
    with open(os.path.join(fake, "lib", "cmake", "Kokkos", "KokkosConfig.cmake"), "w") as f:
        f.write("set(Kokkos_DEVICES SERIAL;CUDA)\nset(Kokkos_ARCH HOPPER90)\n")
    build = os.path.join(tmp, "build")

    rc, out = run("--help")
    check(rc == 0 and "--kokkos-root DIR" in out and "cuobjdump" in out, "--help:\n" + out)
    expect(2, "required: --kokkos-root")
    expect(2, "--kokkos-root %s: no such directory" % missing, "--kokkos-root", missing)
    expect(2, "--kokkos-root %s: not a Kokkos installation" % empty, "--kokkos-root", empty)
    expect(2, "--arch: an architecture such as sm_90", "--kokkos-root", fake, "--arch", "ampere")
    expect(2, "-n/--ranks: a positive number of ranks (got 0)", "--kokkos-root", fake, "-n", "0")
    expect(2, "--cuobjdump %s: no such file" % missing, "--kokkos-root", fake, "--cuobjdump", missing)
    expect(2, "a CUDA Kokkos without bin/nvcc_wrapper", "--kokkos-root", fake, "--build-dir", build)
    rc, out = run("--kokkos-root", fake, "--build-dir", build, "--no-build")
    check(rc == 1 and "devices SERIAL;CUDA" in out and "FAILED: heat3d: no binary" in out,
          "--no-build on an empty build directory: exit %d:\n%s" % (rc, out))
    if not shutil.which("nvidia-smi"):
        check("runs skipped: no device found (nvidia-smi not found)" in out and "skipped (no device)" in out,
              "no GPU: the runs must be said to be skipped:\n" + out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("device-check arguments: ok")
