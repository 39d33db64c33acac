"""heat3d on 8 simulated ranks (SimGrid SMPI) gives the numbers of the real
MPI run: the SMPI build of heat3d (LOCUS_SMPI=ON, configured and built
here under the build directory's smpi/) run by tools/simulate.py on the
example machine, against this build's heat3d through mpiexec on 8 ranks,
for the p2p halo and locus's message route (comm.halo locus, comm.remote
message, every rank its own node). Steps, final residual, min, max and
centre agree to 1e-12 (only the order of a reduction may differ); the
simulation reports a positive simulated time and the summary says no
output was written. Skipped (77) where smpicxx is not installed."""
import os
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import BUILD, SOURCE, check, run_app, scratch, summary  # noqa: E402

if not shutil.which("smpicxx") or not shutil.which("smpirun"):
    print("SKIP: smpicxx/smpirun not installed (Debian package libsimgrid-dev; ./locus setup installs it)")
    sys.exit(77)

smpi_build = os.path.join(BUILD, "smpi")


def run(cmd, timeout=1500, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    check(p.returncode == 0, "%s failed (exit %d):\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout[-3000:],
                                                               p.stderr[-3000:]))
    return p


if not os.path.exists(os.path.join(smpi_build, "CMakeCache.txt")):
    cfg = ["cmake", "-S", SOURCE, "-B", smpi_build, "-DLOCUS_SMPI=ON", "-DCMAKE_BUILD_TYPE=Release",
           "-DCMAKE_C_COMPILER=smpicc", "-DCMAKE_CXX_COMPILER=smpicxx"]
    if shutil.which("ccache"):
        cfg.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    run(cfg)
run(["cmake", "--build", smpi_build, "--target", "heat3d", "-j", "2"])

deck = os.path.join(SOURCE, "inputs", "simulate", "heat3d.yaml")
work = scratch("smpi_heat3d")
base = ["heat3d.grid.nx=16", "heat3d.grid.ny=16", "heat3d.grid.nz=16", "heat3d.procs=[2, 2, 2]",
        "heat3d.time.max_steps=20", "runtime.node_size=1", "output.dir=" + work]
KEYS = ("steps", "final_residual", "min", "max", "centre")
for halo in (["comm.halo=p2p"], ["comm.halo=locus", "comm.remote=message"]):
    sets = base + halo
    real, _ = run_app("heat3d", deck, 8, sets)
    want = summary(real.stdout)["results"]
    cmd = [sys.executable, os.path.join(SOURCE, "tools", "simulate.py"), deck, "--machine",
           os.path.join(SOURCE, "inputs", "machines", "example.yaml"), "-n", "8", "--out", work]
    for s in sets:
        cmd += ["--set", s]
    sim = run(cmd, timeout=600, env=dict(os.environ, LOCUS_BUILD_DIR=smpi_build))
    got_all = summary(sim.stdout)
    got = got_all["results"]
    for k in KEYS:
        a, b = float(want[k]), float(got[k])
        check(abs(a - b) <= 1e-12 * max(1.0, abs(a)),
              "%s: %s differs: real MPI %r, SMPI %r" % (" ".join(halo), k, want[k], got[k]))
    check(str(got_all.get("output", "")).startswith("none"),
          "the SMPI summary's output should say none was written: %r" % got_all.get("output"))
    block = yaml.safe_load(sim.stdout[sim.stdout.index("\nsimulation:") + 1:])["simulation"]
    check(block["ranks"] == 8 and block["nodes"] == 1, "simulation block: %r" % block)
    check(float(block.get("simulated_time_s", 0)) > 0, "no simulated time in %r" % block)
    check(os.path.exists(os.path.join(work, "heat3d.yaml")), "no summary file in %s" % work)
    print("%s: %s equal; simulated %.6f s, %.1f s wall" % (" ".join(halo), ", ".join(KEYS),
                                                        block["simulated_time_s"], block["wall_s"]))
print("PASS")
