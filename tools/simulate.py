#!/usr/bin/python3
"""./locus simulate: a deck on a simulated machine (SimGrid's SMPI).

    ./locus simulate DECK --machine M.yaml -n RANKS [--set key=value]...
                     [--per-rank SIZE] [--host-gflops G] [--compute measured|model|none]
                     [--compare] [--predict-work DIR] [--summary-file FILE] [--out DIR]
                     [--dry-run]

Runs the SMPI build of the deck's app (build-smpi/, ./locus build --smpi:
heat3d, poisson5pt, spmv) with smpirun on RANKS simulated ranks, on the
platform tools/smpi_platform.py generates from the machine file
(cores_per_node ranks per node). Every rank runs in this one process; the
timers and the figure of merit of the app's summary are simulated time.

Compute (--compute): measured (the default): SMPI times the CPU time each
rank spends between MPI calls and charges it to the simulated core scaled
by host/target speed: simulated = measured x G / core_gflops, with G
(--host-gflops) this host's GFLOP/s per core (default: the machine file's
core_gflops, i.e. a simulated core as fast as this host's). model: no host
time is charged; every kernel's counted flops and memory bytes are charged
as ./locus predict's roofline for the same case, max(flops / core_gflops,
bytes / a rank's memory bandwidth) (the app's timers inject them,
LOCUS_SMPI_COMPUTE), so that what still differs from the prediction is the
network. none: no compute charged (communication alone). The network:
latency + size / bandwidth of the machine file (SMPI's bandwidth and
latency factors set to 1).

--compare runs ./locus predict for the same case (deck, --set, machine
file, ranks on nodes of min(RANKS, cores_per_node), --per-rank as weak
scaling, else the deck's problem as strong scaling) and prints, per phase
of the timed loop, for the loop and for the figure of merit: predicted,
simulated (slowest rank), their difference relative to the simulation and
whether it is within 20 %. --compute model and --compare need the default
build (the prediction's counting runs, kept in output/predict).

Prints the app's summary, then a block `simulation:` (ranks, nodes,
machine, simulated time, wall time of the simulation, files); writes the
summary with that block to --summary-file (default DIR/<app>.yaml, DIR =
--out, default output/simulate/<machine>-<RANKS>), with the platform.xml
and hostfile it used.

Exit status: the app's (0 when its verdict passed); 2 for a bad option or
machine file.
"""
import argparse
import os
import re
import resource
import shlex
import subprocess
import sys
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locuslib import ROOT, UserError, deck_sections, parse_summary, write_file  # noqa: E402
from smpi_platform import MachineSpec, nodes_for, write_platform  # noqa: E402

APPS = ("heat3d", "poisson5pt", "spmv")
# Libraries with process-wide state that every simulated rank needs its own
# copy of (SMPI privatizes the app itself; Kokkos keeps its initialisation
# in its core library): those of the app's libraries whose names hold one
# of these (SMPI fails on a name the app does not load).
PRIVATE_LIBS = ("kokkoscore",)


def private_libs(exe):
    """The names (as the loader sees them) of the app's libraries to privatize."""
    try:
        p = subprocess.run(["ldd", exe], capture_output=True, text=True, timeout=60)
    except OSError:
        return []
    names = [line.split()[0] for line in p.stdout.splitlines() if "=>" in line]
    return [n for n in names if any(k in n for k in PRIVATE_LIBS)]


def smpi_build_dir():
    return os.environ.get("LOCUS_BUILD_DIR", os.path.join(ROOT, "build-smpi"))


def deck_app(deck):
    keys = deck_sections(deck)
    for k in keys:
        if k in APPS:
            return k
    if "tensor_contract" in keys:
        raise UserError("%s: tensor_contract is not in the SMPI build (its one-sided atomics need shared "
                        "memory and threads SMPI does not give): simulate heat3d, poisson5pt or spmv" % deck)
    raise UserError("%s: no top-level section naming an app of the SMPI build (%s)" % (deck, ", ".join(APPS)))


def parse(argv):
    ap = argparse.ArgumentParser(prog="./locus simulate", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("deck", help="the deck (heat3d, poisson5pt or spmv)")
    ap.add_argument("--machine", required=True, help="machine file (YAML), e.g. inputs/machines/example.yaml")
    ap.add_argument("-n", "--ranks", type=int, required=True, help="simulated ranks")
    ap.add_argument("--set", "-s", action="append", default=[], metavar="KEY=VALUE", help="a deck key")
    ap.add_argument("--per-rank", metavar="SIZE",
                    help="the problem per rank, as ./locus run --per-rank (weak scaling)")
    ap.add_argument("--host-gflops", type=float,
                    help="GFLOP/s of one core of this host (default: the machine file's core_gflops)")
    ap.add_argument("--compute", choices=("measured", "model", "none"), default="measured",
                    help="measured: CPU time between MPI calls, scaled (default); model: the kernels' counted "
                         "flops and bytes as the machine model's roofline; none: no compute charged")
    ap.add_argument("--compare", action="store_true",
                    help="also predict the same case (./locus predict) and print predicted against simulated")
    ap.add_argument("--predict-work", default=os.path.join(ROOT, "output", "predict"),
                    help="where the prediction's counting runs are kept and reused (default output/predict, "
                         "as ./locus predict)")
    ap.add_argument("--summary-file", help="where the summary and simulation block go (YAML)")
    ap.add_argument("--out", help="directory of the platform, host file and summary")
    ap.add_argument("--dry-run", action="store_true", help="print the smpirun line and exit")
    ap.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.ranks < 1:
        raise UserError("-n: needs a positive number of ranks (got %d)" % a.ranks)
    if a.host_gflops is not None and not a.host_gflops > 0:
        raise UserError("--host-gflops: needs a positive number (got %g)" % a.host_gflops)
    for kv in a.set:
        if "=" not in kv:
            raise UserError("--set: needs key=value (got '%s')" % kv)
    if not os.path.isfile(a.deck):
        raise UserError("deck %s not found" % a.deck)
    return a


def per_rank_sets(app, ranks, deck, size, sets):
    """The deck keys of SIZE per rank (the study's weak-scaling rule; its
    process grid is asked of the default build's process_grid)."""
    env = dict(os.environ, LOCUS_BUILD_DIR=os.environ.get("LOCUS_DEFAULT_BUILD_DIR", os.path.join(ROOT, "build")))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "study.py"), "--per-rank-sets", app, str(ranks),
                        deck, size] + sets, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise UserError(p.stderr.strip().replace("locus: error: ", ""))
    return [line for line in p.stdout.splitlines() if line.strip()]


# The deck keys of a problem per rank (./locus predict's weak scaling
# reads the per-rank problem from them).
SIZE_KEYS = {"heat3d": ("heat3d.grid.nx", "heat3d.grid.ny", "heat3d.grid.nz"), "poisson5pt": ("poisson5pt.grid.n",),
             "spmv": ("spmv.matrix.nx", "spmv.matrix.ny", "spmv.matrix.nz")}
AGREE = 0.20  # the agreement asked of the model and the simulation


def prediction_argv(a, spec, app):
    """./locus predict's arguments for the case simulated: the same deck,
    sets and machine file, RANKS on nodes of min(RANKS, cores_per_node)."""
    rpn = min(int(spec.get("cores_per_node")), a.ranks)
    if a.ranks % rpn:
        raise UserError("--compare/--compute model: %d ranks do not fill nodes of %d (cores_per_node of %s): "
                        "the prediction needs whole nodes" % (a.ranks, rpn, a.machine))
    argv = [a.deck, "--machine", a.machine, "--nodes", str(a.ranks // rpn), "--ranks-per-node", str(rpn),
            "--work", a.predict_work]
    if a.per_rank:
        dims = [x for x in a.per_rank.replace("x", ",").split(",") if x.strip()]
        if len(dims) != len(SIZE_KEYS[app]):
            raise UserError("--per-rank %s: %s takes %d number(s) per rank" % (a.per_rank, app, len(SIZE_KEYS[app])))
        for k, v in zip(SIZE_KEYS[app], dims):
            argv += ["--set", "%s=%s" % (k, v.strip())]
    else:
        argv += ["--scaling", "strong"]
    for kv in a.set:
        argv += ["--set", kv]
    return argv


def predict_case(a, spec, app):
    """./locus predict's result (its dict) for the case simulated; its
    counting runs use the default build."""
    import predict
    pa = predict.parse_args(prediction_argv(a, spec, app))
    saved = os.environ.get("LOCUS_BUILD_DIR")
    os.environ["LOCUS_BUILD_DIR"] = os.environ.get("LOCUS_DEFAULT_BUILD_DIR") or os.path.join(ROOT, "build")
    try:
        r = predict.predict(pa)
    except RuntimeError as e:
        raise UserError("the prediction for --compare/--compute model failed: %s" % e)
    finally:
        if saved is None:
            os.environ.pop("LOCUS_BUILD_DIR", None)
        else:
            os.environ["LOCUS_BUILD_DIR"] = saved
    return r


def injected_rates(spec, r):
    """(F, B): FLOP/s and memory bytes/s of one rank in the prediction r
    (the core's rate; its cache's or its share of the node's bandwidth)."""
    return float(spec.get("core_gflops")) * 1e9, float(r["bandwidth_Bps_per_rank"])


def comparison(r, summary):
    """Rows (what, predicted, simulated, relative difference or None,
    verdict) of the prediction r against the simulated summary: the timed
    loop's phases (slowest rank), the loop and the figure of merit."""
    timers = (summary or {}).get("timers_seconds") or {}
    rows = []
    for ph, v in r["phases"].items():
        sim = timers.get(ph, {}).get("max") if isinstance(timers.get(ph), dict) else None
        rows.append((ph, v["seconds"], None if sim is None else float(sim)))
    fom = ((summary or {}).get("results") or {}).get("figure_of_merit") or {}
    rows.append(("timed loop", r["loop_seconds"], float(fom["seconds"]) if fom.get("seconds") else None))
    if r.get("figure_of_merit") and fom.get("value") is not None:
        rows.append(("figure of merit", r["figure_of_merit"]["value"], float(fom["value"])))
    out = []
    for what, pred, sim in rows:
        if sim is None:
            out.append((what, pred, None, None, "not simulated"))
        elif sim == 0:
            out.append((what, pred, sim, None, "both 0" if pred == 0 else "simulated 0"))
        else:
            d = (pred - sim) / sim
            out.append((what, pred, sim, d, "within %d %%" % round(100 * AGREE) if abs(d) <= AGREE
                        else "misses %d %%" % round(100 * AGREE)))
    return out


def comparison_text(r, rows, compute):
    fom_unit = (r.get("figure_of_merit") or {}).get("unit", "")
    lines = ["comparison: ./locus predict (%d node(s) x %d, %s scaling) against the simulation (compute %s)" % (
        r["nodes"], r["ranks_per_node"], r["scaling"], compute),
        "  %-16s %14s %14s %10s  %s" % ("", "predicted", "simulated", "pred/sim-1", "verdict")]
    for what, pred, sim, d, verdict in rows:
        unit = fom_unit if what == "figure of merit" else "s"
        lines.append("  %-16s %14s %14s %10s  %s" % (
            what, "%.4g %s" % (pred, unit) if unit == "s" else "%.4g" % pred,
            "-" if sim is None else ("%.4g %s" % (sim, unit) if unit == "s" else "%.4g" % sim),
            "-" if d is None else "%+.1f %%" % (100 * d), verdict))
    if fom_unit:
        lines.append("  (figure of merit in %s)" % fom_unit)
    return "\n".join(lines) + "\n"


def smpirun_line(a, spec, app, xml, hosts, sets):
    exe = os.path.abspath(os.path.join(smpi_build_dir(), "apps", app, app))
    if not a.dry_run and not os.path.exists(exe):
        raise UserError("no SMPI build of %s (looked for %s; run ./locus build --smpi)" % (app, exe))
    host_gflops = a.host_gflops or spec.get("core_gflops")
    libs = private_libs(exe) if os.path.exists(exe) else []
    cfg = ["smpi/host-speed:%.6gf" % (host_gflops * 1e9), "smpi/bw-factor:0:1", "smpi/lat-factor:0:1",
           "smpi/display-timing:yes", "smpi/coll-selector:mpich",
           # MPICH's choices without its SMP-aware allreduce, bcast and reduce:
           # those first gather every rank's host over a ring on each new
           # communicator (SMPI's Comm::init_smp, O(ranks^2) messages: most of
           # the set-up at 1,024 ranks)
           "smpi/allreduce:rdb", "smpi/bcast:binomial_tree", "smpi/reduce:binomial",
           # no TCP acknowledgement flows on the reverse links (SimGrid's
           # cross-traffic): an HPC network's protocol is not TCP, the machine
           # model has no such term, and with it SimGrid 3.32's bandwidth
           # solver crashes in spmv's set-up from 256 ranks on (MaxMin::do_solve)
           "network/crosstraffic:0",
           "smpi/simulate-computation:%s" % ("yes" if a.compute == "measured" else "no")]
    if a.compute == "model":
        # MPI_Wtime adds no time of its own (SMPI's default adds 10 ns a call):
        # a phase's time is then exactly its injected compute and its MPI
        cfg.append("smpi/wtime:0")
    if libs:
        cfg.append("smpi/privatize-libs:%s" % ";".join(libs))
    cmd = ["smpirun", "-np", str(a.ranks), "-platform", xml, "-hostfile", hosts]
    cmd += ["--cfg=%s" % c for c in cfg]
    # SimGrid's own lines: only warnings and errors, and the timing
    cmd += ["--log=root.thres:warning", "--log=smpi_utils.thres:info", "--log=smpi.thres:info"]
    cmd += [exe, os.path.abspath(a.deck)]
    for kv in sets:
        cmd += ["--set", no_blanks(kv)]
    for word in cmd:
        if any(c.isspace() for c in word):
            raise UserError("smpirun passes no argument with blanks to the app (it splits them): %r" % word)
    return cmd


def no_blanks(kv):
    """key=[2, 2, 2] as key=[2,2,2]: smpirun splits arguments at blanks; a
    YAML flow list needs none."""
    key, value = kv.split("=", 1)
    if value.strip().startswith("["):
        value = re.sub(r"\s*,\s*", ",", value.strip())
    return key + "=" + value


TIMING = [("simulated_time_s", re.compile(r"Simulated time: ([0-9.eE+-]+) seconds")),
          ("simulation_wall_s", re.compile(r"The simulation took ([0-9.eE+-]+) seconds")),
          ("application_compute_s", re.compile(r"([0-9.eE+-]+) seconds were actual computation"))]


def compute_text(a, spec, r):
    if a.compute == "measured":
        return "measured CPU time x %g / %g GFLOP/s" % (a.host_gflops or spec.get("core_gflops"),
                                                        spec.get("core_gflops"))
    if a.compute == "model":
        f, b = injected_rates(spec, r)
        return ("model: max(flops / %.6g GFLOP/s, memory bytes / %.6g GB/s) per phase, injected "
                "(no host time)" % (f / 1e9, b / 1e9))
    return "none charged"


def run(a):
    spec = MachineSpec(a.machine)
    app = deck_app(a.deck)
    sets = list(a.set)
    if a.per_rank:
        sets = per_rank_sets(app, a.ranks, a.deck, a.per_rank, sets) + sets
    out = os.path.abspath(a.out or os.path.join(ROOT, "output", "simulate", "%s-%d" % (spec.name, a.ranks)))
    xml, hosts = write_platform(spec, a.ranks, out)
    # the run's own output directory (status file) beside the platform
    sets = ["output.dir=%s" % out] + sets
    cmd = smpirun_line(a, spec, app, xml, hosts, sets)
    if a.dry_run:
        print(" ".join(shlex.quote(c) for c in cmd))
        return 0
    if a.check:
        return 0
    env = dict(os.environ)
    env.pop("LOCUS_SMPI_COMPUTE", None)
    r = predict_case(a, spec, app) if a.compare or a.compute == "model" else None
    if a.compute == "model":
        rates = injected_rates(spec, r)
        env["LOCUS_SMPI_COMPUTE"] = "%.17g,%.17g" % rates
    print("locus: simulating %s on %d rank(s), %d node(s) of %s (%s)" % (
        app, a.ranks, nodes_for(spec, a.ranks), spec.name, a.machine), file=sys.stderr)
    t0 = time.time()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # in DIR: what smpirun leaves behind (its unrolled host file) stays there
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=out, env=env)
    stdout, stderr = p.communicate()
    wall = time.time() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    timing = {}
    kept = []
    for line in stderr.splitlines():
        hit = False
        for key, rx in TIMING:
            m = rx.search(line)
            if m:
                timing[key], hit = float(m.group(1)), True
        if not hit:
            kept.append(line)
    if kept:
        sys.stderr.write("\n".join(kept) + "\n")
    sim = {"ranks": a.ranks, "nodes": nodes_for(spec, a.ranks), "cores_per_node": int(spec.get("cores_per_node")),
           "machine": os.path.abspath(a.machine), "platform": xml, "hostfile": hosts,
           "compute": compute_text(a, spec, r),
           "exit_status": p.returncode}
    sim.update(timing)
    # this host's time for the whole smpirun: wall clock, and CPU (user +
    # system: what a loaded host does not inflate), and its peak memory
    sim["wall_s"] = round(wall, 2)
    sim["cpu_s"] = round(cpu, 2)
    sim["max_rss_MiB"] = round(r1.ru_maxrss / 1024.0, 1)
    sim["command"] = " ".join(shlex.quote(c) for c in cmd)
    block = yaml.safe_dump({"simulation": sim}, sort_keys=False, width=1000)
    table = ""
    if a.compare:
        rows = comparison(r, parse_summary(stdout))
        block += yaml.safe_dump({"comparison": {
            "prediction": {"nodes": r["nodes"], "ranks_per_node": r["ranks_per_node"], "scaling": r["scaling"],
                           "counting_ranks": r["counting_ranks"], "dominant": r["dominant"]},
            "agreement_asked": AGREE,
            "rows": [{"what": w, "predicted": float(pv), "simulated": sv, "relative_difference": d, "verdict": v}
                     for w, pv, sv, d, v in rows]}}, sort_keys=False, width=1000)
        table = comparison_text(r, rows, a.compute)
    sys.stdout.write(stdout)
    sys.stdout.write(block)
    sys.stdout.write(table)
    summary_file = a.summary_file or os.path.join(out, "%s.yaml" % app)
    write_file(summary_file, stdout + block)
    print("locus: summary and simulation times in %s" % summary_file, file=sys.stderr)
    return p.returncode


def main(argv=None):
    try:
        a = parse(sys.argv[1:] if argv is None else argv)
        if a.check:
            MachineSpec(a.machine)
            deck_app(a.deck)
            return 0
        return run(a)
    except UserError as e:
        print("locus: error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
