"""A study through a real Slurm (the slurm.daemons fixture: slurmctld, slurmd
and munged from tools/slurm_local.py in a scratch directory): the same
study run here and through `--scheduler slurm` gives the same results.csv
rows (run ids, status, verdicts, computed results; only timings differ);
every Slurm run ran inside a job (srun); --dry-run writes the batch scripts
and nothing else; a study interrupted while its jobs are queued follows the
same jobs again instead of resubmitting; finished studies are not re-run."""
import csv
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import BUILD, SOURCE, check  # noqa: E402

SKIP = 77
conf = os.path.join(BUILD, "scratch", "slurm", "slurm.conf")
if not os.path.exists(conf):
    print("SKIP: no private Slurm (the slurm.daemons fixture did not start it)")
    sys.exit(SKIP)
env = dict(os.environ, SLURM_CONF=conf, LOCUS_SLURM_POLL="0.5")
env.pop("LOCUS_LAUNCHER", None)
scratch = os.path.join(BUILD, "scratch", "slurm_study")
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
study = os.path.join(scratch, "tiny.yaml")
with open(study, "w") as f:
    f.write("""app: heat3d
deck: inputs/heat3d/default.yaml
scaling: strong
ranks: [1, 2]
repeats: 1
timeout: 120
set:
  heat3d.grid.nx: 12
  heat3d.grid.ny: 10
  heat3d.grid.nz: 8
  heat3d.time.max_steps: 3000
sweep:
  comm.halo: [p2p, locus]
  heat3d.procs: [auto, [2, 1, 1]]   # [2, 1, 1] cannot run on 1 rank: failed in both
""")
TOOL = [sys.executable, os.path.join(SOURCE, "tools", "study.py"), study]


def study_run(args, **kw):
    p = subprocess.run(TOOL + args, capture_output=True, text=True, env=env, timeout=600, **kw)
    return p


def rows(results):
    with open(os.path.join(results, "results.csv")) as f:
        return {r["run_id"]: r for r in csv.DictReader(f)}


# --dry-run: the scripts, nothing else
dry = os.path.join(scratch, "dry")
p = study_run(["--scheduler", "slurm", "--dry-run", "--results", dry])
check(p.returncode == 0, "dry run failed:\n" + p.stdout + p.stderr)
made = sorted(os.path.relpath(x, dry) for x in glob.glob(os.path.join(dry, "**"), recursive=True) if os.path.isfile(x))
check(made == ["slurm/locus-tiny-np1.sbatch", "slurm/locus-tiny-np2.sbatch"], "dry run wrote %s" % made)
text = open(os.path.join(dry, "slurm", "locus-tiny-np2.sbatch")).read()
for want in ("#SBATCH --ntasks=2", "#SBATCH --nodes=1", "LOCUS_LAUNCHER=srun", "--execute"):
    check(want in text, "batch script lacks %s:\n%s" % (want, text))
check(subprocess.run(["squeue", "-h"], capture_output=True, text=True, env=env).stdout.strip() == "",
      "the dry run submitted jobs")

# the same study here
local = os.path.join(scratch, "local")
p = study_run(["--results", local])
check(p.returncode == 1, "local study: expected exit 1 (one failing variant), got %d:\n%s" % (p.returncode, p.stderr))

# through Slurm, interrupted right after submitting, then followed again
sl = os.path.join(scratch, "slurm")
a = subprocess.Popen(TOOL + ["--scheduler", "slurm", "--results", sl], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, env=env)
t0 = time.monotonic()
jobs_file = os.path.join(sl, "slurm", "jobs.json")
while time.monotonic() - t0 < 60:
    if os.path.exists(jobs_file) and len(json.load(open(jobs_file))) == 2:
        break
    time.sleep(0.05)
a.send_signal(signal.SIGINT)
out, err = a.communicate(timeout=60)
check(a.returncode == 130, "interrupted study: exit %d\n%s\n%s" % (a.returncode, out, err))
check("Traceback" not in err and "same command" in err, "interrupted study:\n" + err)
first = json.load(open(jobs_file))
p = study_run(["--scheduler", "slurm", "--results", sl])
check(p.returncode == 1, "slurm study: expected exit 1 (one failing variant), got %d:\n%s\n%s" % (
    p.returncode, p.stdout, p.stderr))
check("submitted job" not in p.stdout, "the resumed study submitted again:\n" + p.stdout)
check(json.load(open(jobs_file)) == first, "the resumed study changed the jobs")

lr, sr = rows(local), rows(sl)
check(sorted(lr) == sorted(sr) and len(lr) == 8, "run ids differ: %s vs %s" % (sorted(lr), sorted(sr)))
timing = ("per_s", "seconds", "time", "validity_reason")  # the reason states the measured time
compared = 0
for rid, l in lr.items():
    s = sr[rid]
    for col in l:
        if col.startswith("timer_") or any(t in col for t in timing) or col == "figure_of_merit":
            continue
        check(l[col] == s.get(col), "%s: %s differs: here %r, Slurm %r" % (rid, col, l[col], s.get(col)))
        compared += 1
verdicts = sorted(r["verdict"] or r["status"] for r in sr.values())
check(verdicts.count("pass") == 6, "expected 6 passing runs, got %s" % verdicts)
for rid in sr:
    rec = json.load(open(os.path.join(sl, "runs", rid, "run.json")))
    check(rec["job"] in first, "%s did not run inside a job of this study (job '%s')" % (rid, rec["job"]))
# machine descriptors: measured here and inside a Slurm job; both reports show them
mach = glob.glob(os.path.join(sl, "slurm", "machine-*.yaml"))
check(len(mach) >= 1 and "stream_triad_gbs_total" in open(mach[0]).read(), "no machine descriptor from a job")
for res in (local, sl):
    rep = open(os.path.join(res, "report.md")).read()
    check("## Machine" in rep and "STREAM triad" in rep and "mpi_library" in rep, "%s: report has no machine" % res)
# the two side by side
cmp_dir = os.path.join(scratch, "compare")
p = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "compare_studies.py"), local, sl, "--labels",
                    "here", "slurm", "--out", cmp_dir], capture_output=True, text=True, timeout=120)
check(p.returncode == 0 and "6 points compared" in p.stdout, "compare-studies: %s %s" % (p.stdout, p.stderr))
rep = open(os.path.join(cmp_dir, "report.md")).read()
times, _, fom = rep.partition("## Figure of merit")
check("| here | slurm |" in rep and times.count("| halo=") == 6 and fom.count("| halo=") == 6 and
      os.path.exists(os.path.join(cmp_dir, "ratio.png")), "compare-studies report:\n" + rep)
# finished: nothing to submit
p = study_run(["--scheduler", "slurm", "--results", sl])
check("submitted job" not in p.stdout and p.stdout.count("done before") == 8, "finished study re-ran:\n" + p.stdout)
print("Slurm study: 8 rows identical to the local study (%d cells compared, timings left out), verdicts %s; "
      "dry run wrote 2 scripts only; an interrupted study followed its 2 jobs again" % (compared, verdicts))
