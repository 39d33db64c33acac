#!/usr/bin/python3
"""OpenBLAS's kernel set, named and corrected (apps/tensor_contract/app.cpp,
blas_core; ./locus, blas_coretype).

OpenBLAS chooses its kernels when it loads, from the CPU model; one older
than the CPU falls back to generic kernels (Debian 12's 0.3.21 runs its
SSE3 "Prescott" kernels on an Intel Xeon of family 6 model 207). Checked:

  * OPENBLAS_CORETYPE=Prescott, set by the user: the summary's
    results.kernels.blas_core names Prescott and the variable; a
    blas_warning naming the kernel set to use exactly when this CPU has
    AVX2 and FMA (SkylakeX with AVX-512 F, BW, DQ and VL, else Haswell);
    nothing on stderr (the user chose);
  * OPENBLAS_CORETYPE unset, the app started by mpiexec: the summary names
    OpenBLAS's own choice; one warning line on stderr exactly when that
    choice is a set without AVX2 on a CPU with AVX2 and FMA;
  * the same deck through ./locus run with the variable unset: where
    OpenBLAS's own choice is behind the CPU the driver says so and the app
    runs SkylakeX's (AVX-512 F, BW, DQ, VL) or Haswell's kernels (AVX2,
    FMA), else it leaves OpenBLAS alone; a user's OPENBLAS_CORETYPE stands.

On a CPU whose OpenBLAS knows it, the warnings must be absent, so the test
holds on any CPU.

    tensor_contract_blas.py
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

OUT = scratch("tensor_contract_blas")
DECK = os.path.join(SOURCE, "inputs", "tensor_contract", "small.yaml")
SETS = ["tensor_contract.extent=16", "tensor_contract.tile=8", "output.dir=" + OUT]
# written out here, independently of apps/tensor_contract/openblas_cores_without_avx2.txt (the list the
# app and ./locus share), so that a name dropped from that list fails this test
OLD = {"Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2", "Penryn", "Dunnington",
       "Nehalem", "Athlon", "Opteron", "Opteron(SSE3)", "Barcelona", "Nano", "Bobcat", "Sandybridge",
       "Bulldozer", "Piledriver", "Steamroller", "Excavator", "Unknown"}
WARN = "tensor_contract: warning: OpenBLAS chose"


def env_without_coretype(**extra):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env.update(extra)
    return env


def own_choice():
    """OpenBLAS's own kernel set on this CPU (no OPENBLAS_CORETYPE)."""
    code = ("import ctypes\nlib = ctypes.CDLL('libopenblas.so.0')\n"
            "lib.openblas_get_corename.restype = ctypes.c_char_p\nprint(lib.openblas_get_corename().decode())")
    p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, env=env_without_coretype(),
                       timeout=60)
    check(p.returncode == 0, "openblas_get_corename: %s" % p.stderr)
    return p.stdout.strip()


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def kernels(stdout):
    return summary(stdout)["results"]["kernels"]


def main():
    flags = cpu_flags()
    avx2 = "avx2" in flags
    avx512 = {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags
    # one rule for the app's suggestion and the driver's choice
    suggest = "SkylakeX" if avx512 else "Haswell" if avx2 and "fma" in flags else ""
    own = own_choice()
    behind = own in OLD and bool(suggest)
    print("OpenBLAS's own choice: %s; CPU: avx2 %s, avx512 %s; behind: %s" % (own, avx2, avx512, behind))

    # the user's choice, an old kernel set
    p, _ = run_app("tensor_contract", DECK, 1, SETS, env=env_without_coretype(OPENBLAS_CORETYPE="Prescott"))
    k = kernels(p.stdout)
    check(k["blas_core"] == "Prescott (OPENBLAS_CORETYPE=Prescott)", "blas_core: %r" % k.get("blas_core"))
    if suggest:
        check("OPENBLAS_CORETYPE=" + suggest in k.get("blas_warning", ""),
              "Prescott kernels on an AVX2 CPU: no warning naming %s: %r" % (suggest, k.get("blas_warning")))
    else:
        check("blas_warning" not in k, "a warning on a CPU without AVX2: %r" % k.get("blas_warning"))
    check(WARN not in p.stderr, "a warning on stderr although the user set OPENBLAS_CORETYPE: %s" % p.stderr)

    # OpenBLAS's own choice, the app started directly
    p, _ = run_app("tensor_contract", DECK, 1, SETS, env=env_without_coretype())
    k = kernels(p.stdout)
    check(k["blas_core"] == own + " (OpenBLAS's own choice)", "blas_core: %r (own: %s)" % (k.get("blas_core"), own))
    check(p.stderr.count(WARN) == (1 if behind else 0), "stderr warning (expected: %s): %s" % (behind, p.stderr))
    check(("blas_warning" in k) == behind, "summary warning (expected: %s): %r" % (behind, k.get("blas_warning")))

    # through the driver
    locus = os.path.join(SOURCE, "locus")
    cmd = [locus, "run", DECK, "-n", "1"] + [a for s in SETS for a in ("--set", s)]
    q = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env_without_coretype())
    check(q.returncode == 0, "./locus run: exit %d\n%s" % (q.returncode, q.stderr))
    k = kernels(q.stdout)
    want = suggest
    if own in OLD and want:
        check(k["blas_core"] == "%s (OPENBLAS_CORETYPE=%s)" % (want, want), "driver: blas_core %r" % k["blas_core"])
        check("OpenBLAS chose its %s kernels on this CPU; OPENBLAS_CORETYPE=%s" % (own, want) in q.stderr,
              "driver: no note: %s" % q.stderr)
        check("blas_warning" not in k and WARN not in q.stderr, "driver: still a warning: %s" % q.stderr)
    else:
        check(k["blas_core"] == own + " (OpenBLAS's own choice)", "driver changed OpenBLAS: %r" % k["blas_core"])
        check("OPENBLAS_CORETYPE=" not in q.stderr, "driver: a note without cause: %s" % q.stderr)
    q = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=env_without_coretype(OPENBLAS_CORETYPE="Haswell" if avx2 else "Prescott"))
    check(q.returncode == 0, "./locus run (user's OPENBLAS_CORETYPE): exit %d\n%s" % (q.returncode, q.stderr))
    mine = "Haswell" if avx2 else "Prescott"
    check(kernels(q.stdout)["blas_core"] == "%s (OPENBLAS_CORETYPE=%s)" % (mine, mine),
          "the user's OPENBLAS_CORETYPE did not stand: %r" % kernels(q.stdout)["blas_core"])
    check("OpenBLAS chose its" not in q.stderr, "driver note although the user chose: %s" % q.stderr)
    # an app that calls no BLAS: no note (the variable is set all the same)
    q = subprocess.run([locus, "run", os.path.join(SOURCE, "inputs", "heat3d", "default.yaml"), "--dry-run"],
                       capture_output=True, text=True, timeout=300, env=env_without_coretype())
    check(q.returncode == 0 and "OpenBLAS" not in q.stderr, "heat3d through the driver: %s" % q.stderr)
    print("tensor_contract.blas: OK")


if __name__ == "__main__":
    main()
