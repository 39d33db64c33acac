#!/usr/bin/python3
"""locus compare-studies: two studies' results side by side.

    ./locus compare-studies A B [--labels NAME_A NAME_B] [--out DIR]

A and B are results directories of `./locus study` (the same study file run
on two machines, with two MPI libraries, two builds, ...). Writes DIR
(default results/compare-<A>-vs-<B>/): report.md with both machine
descriptors, a table per variant and rank count (medians with the min-max
spread of the repeats, and the ratio A/B), and plots: time.png (one colour
per variant, solid A, dashed B) and ratio.png (A time / B time, error bars
from the spreads). Variants and rank counts are matched by name; those only
one side has are listed, not compared.

First it checks that A and B are the same study: the same app, scaling and
metric, and the same problem (global size) at every rank count both have
(study.json, results.csv). A difference there is refused, naming it
(--allow-differences compares anyway, with the differences at the top of
the report); other differences (deck, set keys, swept values, rank counts,
repeats) are warnings, printed and in the report.
"""
import argparse
import csv
import json
import os
import shlex
import statistics
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locuslib import ROOT, UserError  # noqa: E402


def load(results):
    csv_path = os.path.join(results, "results.csv")
    if not os.path.exists(csv_path):
        raise UserError("%s: no results.csv (is it the results directory of ./locus study?)" % results)
    meta = {}
    if os.path.exists(os.path.join(results, "study.json")):
        with open(os.path.join(results, "study.json")) as f:
            meta = json.load(f)
    metric = meta.get("metric", "total")
    col = "timer_%s_max" % metric
    points, fom, over = {}, {}, set()
    fom_unit = ""
    order = list(meta.get("variants", []))
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            v = row["variant"]
            if v not in order:
                order.append(v)
            # the study's own time of the run (time_seconds: its metric, by
            # default the timed loop), else (older studies) the metric's timer
            t = row.get("time_seconds") or row.get(col)
            if row.get("status") != "ok" or not t:
                continue
            key = (v, int(row["ranks"]))
            points.setdefault(key, []).append(float(t))
            if row.get("figure_of_merit"):
                fom.setdefault(key, []).append(float(row["figure_of_merit"]))
                fom_unit = row.get("figure_of_merit_unit") or fom_unit
            if row.get("oversubscribed") in ("1", "True", "true"):
                over.add(int(row["ranks"]))
    if not points:
        raise UserError("%s: no successful runs with a time by metric '%s'" % (results, metric))
    machine = None
    for name in ["machine.yaml"] + sorted(os.listdir(os.path.join(results, "slurm"))
                                          if os.path.isdir(os.path.join(results, "slurm")) else []):
        p = os.path.join(results, name) if name == "machine.yaml" else os.path.join(results, "slurm", name)
        if os.path.basename(p).startswith("machine") and os.path.exists(p):
            with open(p) as f:
                machine = yaml.safe_load(f)
            break
    agg = {k: {"median": statistics.median(x), "min": min(x), "max": max(x), "n": len(x)} for k, x in points.items()}
    sizes = dict((meta.get("sizes") or {}))
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            if row.get("global_size") and row["ranks"] not in sizes:
                sizes[row["ranks"]] = {"global_size": row["global_size"]}
    return {"dir": results, "meta": meta, "metric": metric, "agg": agg, "order": order, "machine": machine,
            "sizes": sizes, "fom": {k: statistics.median(x) for k, x in fom.items()}, "fom_unit": fom_unit,
            "over": over}


def ranks_text(r):
    """'1 rank', '4 ranks'."""
    return "%s rank%s" % (r, "" if str(r) == "1" else "s")


def pair_variants(A, B):
    """When A and B share no variant name (studies of two apps), B's
    variants are matched to A's in order; B is renamed in place. The
    pairs ("A's", "B's"), or [] when names matched."""
    names_a = {v for v, _ in A["agg"]}
    if names_a & {v for v, _ in B["agg"]}:
        return []
    pairs = list(zip(A["order"], B["order"]))
    rename = {b: a for a, b in pairs}
    for key in ("agg", "fom"):
        B[key] = {(rename.get(v, "%s (B)" % v), r): x for (v, r), x in B[key].items()}
    B["order"] = [rename.get(v, "%s (B)" % v) for v in B["order"]]
    return pairs


def differences(A, B, la, lb):
    """(refused, warnings): what makes A and B different studies, and what
    only differs in extent. Each as one line naming both sides."""
    hard, soft = [], []
    ma, mb = A["meta"], B["meta"]

    def differ(key, what, into):
        va, vb = ma.get(key), mb.get(key)
        if va is None or vb is None:
            if va != vb:
                soft.append("%s: only %s has one, not checked" % (what, la if vb is None else lb))
            return
        if va != vb:
            into.append("%s: %s %s, %s %s" % (what, la, json.dumps(va), lb, json.dumps(vb)))

    differ("app", "app", hard)
    differ("scaling", "scaling", hard)
    if A["metric"] != B["metric"]:
        hard.append("metric: %s times '%s', %s '%s'" % (la, A["metric"], lb, B["metric"]))
    if ma.get("scaling") == mb.get("scaling") == "weak":  # a strong study has no weak_size
        differ("weak_size", "weak_size (problem per rank)", hard)
    sa, sb = A["sizes"], B["sizes"]
    if not sa or not sb:
        soft.append("problem sizes: %s records none, not checked" % (la if not sa else lb))
    for r in sorted(set(sa) & set(sb), key=int):
        ga, gb = sa[r].get("global_size"), sb[r].get("global_size")
        if ga != gb:
            hard.append("global size at %s: %s %s, %s %s" % (ranks_text(r), la, ga, lb, gb))
    for key, what in (("deck", "deck"), ("set", "set keys"), ("sweep", "swept keys and values"),
                      ("ranks", "rank counts"), ("points", "nodes x ranks per node"), ("repeats", "repeats")):
        differ(key, what, soft)
    return hard, soft


def shade_oversubscribed(ax, A, B, la, lb, ranks):
    """A grey band over the rank counts either side ran over-subscribed
    (more ranks than cores), named in the legend."""
    over = sorted(r for r in ranks if r in A["over"] or r in B["over"])
    if not over:
        return
    who = " and ".join(lab for side, lab in ((A, la), (B, lb)) if side["over"] & set(over))
    ax.axvspan(over[0] / 2 ** 0.25, over[-1] * 2 ** 0.25, color="0.85", zorder=0,
               label="over-subscribed (%s)" % who)


def rank_axis(ax, ranks):
    ax.set_xscale("log", base=2)
    ax.set_xticks(ranks)
    ax.set_xticklabels([str(r) for r in ranks])
    ax.set_xlabel("ranks")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def plot_time(plt, A, B, la, lb, variants, ranks, colour):
    """Both studies' times, A solid and B dashed, median and min-max."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for v in variants:
        for side, lab, style in ((A, la, "-o"), (B, lb, "--s")):
            pts = [(r, side["agg"][(v, r)]) for r in ranks if (v, r) in side["agg"]]
            if not pts:
                continue
            xs = [r for r, _ in pts]
            ys = [a["median"] for _, a in pts]
            err = [[a["median"] - a["min"] for _, a in pts], [a["max"] - a["median"] for _, a in pts]]
            ax.errorbar(xs, ys, yerr=err, fmt=style, capsize=3, color=colour[v], label="%s: %s" % (lab, v))
    ax.set_yscale("log")
    ax.set_ylabel("%s time, slowest rank [s]" % A["metric"])
    ax.set_title("%s (solid) vs %s (dashed), median and min-max" % (la, lb), fontsize=10)
    shade_oversubscribed(ax, A, B, la, lb, ranks)
    rank_axis(ax, ranks)
    return fig


def plot_ratio(plt, A, B, la, lb, variants, ranks, colour):
    """A's time over B's per point, with the ratio's range over the repeats."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for v in variants:
        ks = [(v, r) for r in ranks if (v, r) in A["agg"] and (v, r) in B["agg"]]
        if not ks:
            continue
        xs = [k[1] for k in ks]
        ys = [A["agg"][k]["median"] / B["agg"][k]["median"] for k in ks]
        lo = [A["agg"][k]["min"] / B["agg"][k]["max"] for k in ks]
        hi = [A["agg"][k]["max"] / B["agg"][k]["min"] for k in ks]
        ax.errorbar(xs, ys, yerr=[[y - l for y, l in zip(ys, lo)], [h - y for y, h in zip(ys, hi)]], fmt="-o",
                    capsize=3, color=colour[v], label=v)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_ylabel("time %s / time %s" % (la, lb))
    ax.set_title("above 1: %s is faster" % lb, fontsize=10)
    shade_oversubscribed(ax, A, B, la, lb, ranks)
    rank_axis(ax, ranks)
    return fig


def plot(A, B, la, lb, variants, common, out):
    """time and ratio (PNG and SVG in out); their names."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cmap = plt.get_cmap("tab10")
    colour = {v: cmap(i % 10) for i, v in enumerate(variants)}
    ranks = sorted(set(r for _, r in common))
    files = []
    for name, draw in (("time", plot_time), ("ratio", plot_ratio)):
        fig = draw(plt, A, B, la, lb, variants, ranks, colour)
        for ext in ("png", "svg"):
            fig.savefig(os.path.join(out, "%s.%s" % (name, ext)), dpi=110, bbox_inches="tight")
        plt.close(fig)
        files.append(name)
    return files


def machine_lines(A, B, la, lb):
    """The two machines side by side."""
    lines = ["## Machines", "", "| | %s | %s |" % (la, lb), "|---|---|---|"]
    ma, mb = A["machine"] or {}, B["machine"] or {}
    for k in list(ma) + [k for k in mb if k not in ma]:
        if k == "app":
            continue
        fa, fb = ma.get(k, "–"), mb.get(k, "–")
        fa = ", ".join(map(str, fa)) if isinstance(fa, list) else fa
        fb = ", ".join(map(str, fb)) if isinstance(fb, list) else fb
        lines.append("| %s | %s | %s |" % (k, fa, fb))
    if not ma or not mb:
        lines.append("")
        lines.append("(a side without machine.yaml was run before locus recorded machines)")
    return lines


def fom_lines(A, B, la, lb, common):
    """The figure of merit per point (median of the repeats), higher is better."""
    keys = [k for k in common if k in A["fom"] and k in B["fom"]]
    if not keys:
        return []
    unit_a, unit_b = A["fom_unit"], B["fom_unit"]
    head = unit_a if unit_a == unit_b else "%s / %s" % (unit_a, unit_b)
    lines = ["", "## Figure of merit (%s, median of the repeats; higher is better)" % head, "",
             "| variant | ranks | %s | %s | %s / %s |" % (la, lb, la, lb), "|---|---:|---:|---:|---:|"]
    for k in keys:
        fa, fb = A["fom"][k], B["fom"][k]
        lines.append("| %s | %d | %.4g | %.4g | %s |" % (k[0], k[1], fa, fb, "%.2f" % (fa / fb) if fb else "–"))
    if unit_a != unit_b:
        lines.append("\n(the two apps' figures of merit count different work: the ratio compares rates, "
                     "not the same quantity)")
    return lines


def write_report(A, B, la, lb, hard, soft, common, only, files, out):
    """out/report.md: the command, the differences, machines, times, plots."""
    lines = ["# %s vs %s" % (la, lb), "",
             "A: `%s`, B: `%s`; metric: `%s` time of the slowest rank, median of the repeats with the "
             "min-max spread. Regenerate (from any directory): `%s compare-studies %s %s --out %s%s`" % (
                 A["dir"], B["dir"], A["metric"], shlex.quote(os.path.join(ROOT, "locus")),
                 shlex.quote(A["dir"]), shlex.quote(B["dir"]), shlex.quote(out),
                 " --allow-differences" if hard else ""), ""]
    if hard or soft:
        lines += ["## Differences between A and B", ""]
        lines += ["- **%s** (compared anyway: --allow-differences)" % d for d in hard]
        lines += ["- %s" % d for d in soft] + [""]
    lines += machine_lines(A, B, la, lb)
    lines += ["", "## Times", "", "| variant | ranks | %s [s] | %s [s] | %s / %s |" % (la, lb, la, lb),
              "|---|---:|---:|---:|---:|"]
    for k in common:
        a, b = A["agg"][k], B["agg"][k]
        lines.append("| %s | %d | %.4g (%.3g–%.3g, n=%d) | %.4g (%.3g–%.3g, n=%d) | %.2f (%.2f–%.2f) |" % (
            k[0], k[1], a["median"], a["min"], a["max"], a["n"], b["median"], b["min"], b["max"], b["n"],
            a["median"] / b["median"], a["min"] / b["max"], a["max"] / b["min"]))
    lines += fom_lines(A, B, la, lb, common)
    if only:
        lines += ["", "Only in one of them (not compared): " + ", ".join(
            "%s at %s (%s)" % (v, ranks_text(r), la if (v, r) in A["agg"] else lb) for v, r in only)]
    lines += [""] + ["![%s](%s.png)\n" % (f, f) for f in files]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(prog="./locus compare-studies", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="results directory A")
    ap.add_argument("b", help="results directory B")
    ap.add_argument("--labels", nargs=2, metavar=("NAME_A", "NAME_B"), help="names of A and B in tables and plots")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--allow-differences", action="store_true",
                    help="compare studies of different apps, scalings or problem sizes anyway (the "
                         "differences head the report; variants with no name in common are matched in "
                         "order). The metric must be the same")
    args = ap.parse_args()
    try:
        A, B = load(os.path.abspath(args.a)), load(os.path.abspath(args.b))
        la, lb = args.labels or (os.path.basename(A["dir"].rstrip("/")), os.path.basename(B["dir"].rstrip("/")))
        if la == lb:
            la, lb = la + " (A)", lb + " (B)"
        hard, soft = differences(A, B, la, lb)
        if hard and not args.allow_differences:
            raise UserError("A and B are not the same study:\n  " + "\n  ".join(hard) +
                            "\n(--allow-differences compares them anyway)")
        for d in hard + soft:
            print("warning: A and B differ: %s" % d, file=sys.stderr)
        if A["metric"] != B["metric"]:
            raise UserError("A times '%s' and B '%s': compare the same metric" % (A["metric"], B["metric"]))
        pairs = pair_variants(A, B) if args.allow_differences else []
        if pairs:
            soft.append("variants matched in order (no name in common): " +
                        ", ".join("%s %s = %s %s" % (la, a, lb, b) for a, b in pairs))
            print("warning: A and B differ: %s" % soft[-1], file=sys.stderr)
        out = os.path.abspath(args.out or os.path.join("results", "compare-%s-vs-%s" % (
            os.path.basename(A["dir"].rstrip("/")), os.path.basename(B["dir"].rstrip("/")))))
        os.makedirs(out, exist_ok=True)
        variants = A["order"] + [v for v in B["order"] if v not in A["order"]]
        common = sorted(set(A["agg"]) & set(B["agg"]), key=lambda k: (variants.index(k[0]), k[1]))
        only = sorted(set(A["agg"]) ^ set(B["agg"]), key=lambda k: (variants.index(k[0]), k[1]))
        if not common:
            raise UserError("A and B have no variant and rank count in common")
        files = plot(A, B, la, lb, variants, common, out)
        write_report(A, B, la, lb, hard, soft, common, only, files, out)
        print("comparison: %s/report.md (%d points compared%s)" % (out, len(common),
                                                                 ", %d in one only" % len(only) if only else ""))
        return 0
    except UserError as e:
        print("locus compare-studies: error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
