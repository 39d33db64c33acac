"""./locus simulate --compute model --compare on 8 simulated ranks (heat3d,
16^3 points per rank, 20 steps, p2p halo, the example machine): the
comparison runs and prints its table; the compute phase's simulated time,
which is only the injected roofline of the kernels' counted flops and
bytes (no host time is charged in that mode), equals ./locus predict's
compute time for the same case to rounding; every phase of the timed loop,
the loop and the figure of merit have a row with a verdict against 20 %.
Then the host-timed variant (--compute measured --compare) gives a compute
time that is not the model's injected one, and a bad LOCUS_SMPI_COMPUTE
stops the run with one error line. Skipped (77) where smpicxx is not
installed."""
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import BUILD, SOURCE, check, run_checked as run, scratch, smpi_heat3d_build  # noqa: E402

smpi_build = smpi_heat3d_build()

deck = os.path.join(SOURCE, "inputs", "simulate", "heat3d.yaml")
machine = os.path.join(SOURCE, "inputs", "machines", "example.yaml")
work = scratch("smpi_compare")
env = dict(os.environ, LOCUS_BUILD_DIR=smpi_build, LOCUS_DEFAULT_BUILD_DIR=os.path.abspath(BUILD))


def simulate(compute, extra_env=None, ok=True):
    cmd = [sys.executable, os.path.join(SOURCE, "tools", "simulate.py"), deck, "--machine", machine, "-n", "8",
           "--per-rank", "16,16,16", "--set", "heat3d.time.max_steps=20", "--compute", compute, "--compare",
           "--out", os.path.join(work, compute), "--predict-work", os.path.join(work, "predict")]
    e = dict(env, **(extra_env or {}))
    return run(cmd, timeout=600, env=e, ok=ok)


model = simulate("model")
text = model.stdout
check("\ncomparison: ./locus predict" in text, "no comparison table in the output:\n" + text[-2000:])
block = yaml.safe_load(text[text.index("\ncomparison:\n") + 1:text.index("comparison: ./locus predict")])
rows = {r["what"]: r for r in block["comparison"]["rows"]}
for what in ("compute", "halo", "reduce", "timed loop", "figure of merit"):
    check(what in rows, "no comparison row for %s: %r" % (what, sorted(rows)))
    check(rows[what]["verdict"] in ("within 20 %", "misses 20 %", "both 0"),
          "%s: verdict %r" % (what, rows[what]["verdict"]))
    check(("  %s " % what) in text, "the table has no line for %s" % what)
c = rows["compute"]
check(c["predicted"] > 0 and c["simulated"] is not None,
      "compute: predicted %r, simulated %r" % (c["predicted"], c["simulated"]))
# the simulated compute phase is the injected roofline (nothing else runs
# in it): the model's, to the clock's rounding
check(abs(c["simulated"] - c["predicted"]) <= 1e-6 * c["predicted"] + 1e-9,
      "compute: injected %.9g s, the model's %.9g s" % (c["simulated"], c["predicted"]))
sim = yaml.safe_load(text[text.index("\nsimulation:\n") + 1:text.index("\ncomparison:\n")])["simulation"]
check(sim["compute"].startswith("model:"), "simulation block's compute: %r" % sim["compute"])
print("model: compute injected %.6g s = predicted %.6g s; halo %s, reduce %s, figure of merit %s" % (
    c["simulated"], c["predicted"], rows["halo"]["verdict"], rows["reduce"]["verdict"],
    rows["figure of merit"]["verdict"]))

# host-timed: the compute phase is this host's CPU time, not the injection
measured = simulate("measured").stdout
block = yaml.safe_load(measured[measured.index("\ncomparison:\n") + 1:measured.index("comparison: ./locus predict")])
m = {r["what"]: r for r in block["comparison"]["rows"]}["compute"]
check(m["simulated"] is not None and m["simulated"] > 0, "measured compute: %r" % m)
check(abs(m["simulated"] - c["simulated"]) > 1e-6 * c["simulated"],
      "the host-timed compute %.9g s equals the injected one" % m["simulated"])

# a bad rate: one error line naming the variable, no hang
cmd = [os.path.join(smpi_build, "apps", "heat3d", "heat3d")]
bad = run(["smpirun", "-np", "2", "-platform", os.path.join(work, "model", "platform.xml"), "-hostfile",
           os.path.join(work, "model", "hostfile"), "--log=root.thres:critical", cmd[0], deck, "--set",
           "heat3d.time.max_steps=2", "--set", "output.dir=" + work], timeout=120,
          env=dict(os.environ, LOCUS_SMPI_COMPUTE="16e9"), ok=False)
check(bad.returncode != 0, "LOCUS_SMPI_COMPUTE=16e9 (no bandwidth) was accepted")
check("LOCUS_SMPI_COMPUTE=16e9: needs F,B" in bad.stderr, "no error naming the variable:\n" + bad.stderr[-2000:])
print("PASS")
