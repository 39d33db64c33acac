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
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import SOURCE, check, run_app, run_checked as run, scratch, smpi_heat3d_build, summary  # noqa: E402

smpi_build = smpi_heat3d_build()

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
