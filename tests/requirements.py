"""Counted requirements (issue 52) against hand counts of small cases.

Every expected number is derived here from the problem and from what the
summary reports of the run (process grid, node map, steps, iterations,
tasks, halo entries), never pasted from a run:
  heat3d 4^3      the halo moves exactly the faces of the decomposition,
                  each step, by every strategy: off the node on emulated
                  nodes of one rank, on it when the ranks share a node
                  (mixed at 4 ranks with nodes of 2); p2p sends one
                  message a face, rma issues one MPI call a face; 11 flops
                  and 16 bytes per cell and step; one collective (the
                  change's allreduce) per step and rank
  poisson5pt 8^2  red-black Gauss-Seidel exchanges 2 I + 1 times in I
                  iterations (its residual checks included), Jacobi I + 1;
                  5 flops per point and sweep, 7 per residual check
  spmv            a product moves its halo entries (8 bytes each), by
                  plans (rma mode) or messages (vector mode, one per reader)
  tensor_contract NXTASK: one fetch-and-add per chunk handed out and one
                  final one per unit; the flops are the DGEMMs'
The HDF5 dataset `requirements` holds every rank's row: its columns add up
to the summary's sums.

usage: requirements.py RANKS
"""
import math
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check, run_app, scratch, summary  # noqa: E402

KINDS = ["bytes_on_node", "bytes_off_node", "messages", "rma_ops", "atomic_updates", "atomic_fetches", "flops",
         "memory_bytes", "collectives"]


def block_span(n, p, c):
    """Extent of block c when n points are split into p blocks (decomp.cpp)."""
    base, rem = divmod(n, p)
    return base + (1 if c < rem else 0)


def faces(grid, procs):
    """(rank, neighbour, face elements) of every face a rank exchanges: the
    Cartesian ranks (x fastest), no periodic boundary; the face of
    dimension d is the block's extent in the other two."""
    px, py, pz = procs
    for rank in range(px * py * pz):
        c = [rank % px, rank // px % py, rank // (px * py)]
        local = [block_span(grid[k], procs[k], c[k]) for k in range(3)]
        for d in range(3):
            for side in (-1, 1):
                nc = list(c)
                nc[d] += side
                if 0 <= nc[d] < procs[d]:
                    nb = (nc[2] * py + nc[1]) * px + nc[0]
                    yield rank, nb, math.prod(local[k] for k in range(3) if k != d)


def exchange_bytes(grid, procs, node_of, esize):
    """(on-node bytes, off-node bytes, faces) of one exchange, over every rank."""
    on = off = n = 0
    for rank, nb, elements in faces(grid, procs):
        if node_of[rank] == node_of[nb]:
            on += elements * esize
        else:
            off += elements * esize
        n += 1
    return on, off, n


def req(s, phase, kind, stat="sum"):
    return ((s["requirements"]["phases"].get(phase) or {}).get(kind) or {}).get(stat, 0)


def expect(s, phase, kind, want, what):
    got = req(s, phase, kind)
    check(got == want, "%s: %s %s is %s, hand count %s" % (what, phase, kind, got, want))


def check_dataset(path, s):
    """The dataset's rows add up to the summary's sums, column by column."""
    with h5py.File(path, "r") as f:
        d = f["requirements"]
        cols = d.attrs["columns"].split(",")
        rows = d[...]
    check(rows.shape == (s["ranks"], len(cols)), "requirements dataset shape %s" % (rows.shape,))
    for j, c in enumerate(cols):
        total = int(round(rows[:, j].sum()))
        if "." in c:
            phase, kind = c.split(".")
            want = req(s, phase, kind)
        else:
            want = s["requirements"][c]["sum"]
        check(total == want, "%s: column %s sums to %d, the summary says %d" % (path, c, total, want))


def app_run(app, deck, ranks, out, name, sets):
    d = os.path.join(out, name)
    p, _ = run_app(app, deck, ranks, list(sets) + ["output.dir=" + d, "output.name=" + app], extra=["-q"])
    s = summary(p.stdout)
    check_dataset(os.path.join(d, app + ".h5"), s)
    return s


def node_sizes(ranks):
    return [0, 1] + ([2] if ranks >= 4 else [])


def heat3d(ranks, out):
    deck = os.path.join(SOURCE, "inputs", "heat3d", "default.yaml")
    grid = [4, 4, 4]
    base = ["heat3d.grid.nx=4", "heat3d.grid.ny=4", "heat3d.grid.nz=4", "heat3d.time.max_steps=6",
            "heat3d.time.tolerance=0", "heat3d.validation.mode=none", "output.xdmf=false"]
    for ns in node_sizes(ranks):
        for halo in ("p2p", "rma", "locus"):
            what = "heat3d %s, node size %d, %d ranks" % (halo, ns, ranks)
            s = app_run("heat3d", deck, ranks, out, "heat3d_%s_%d" % (halo, ns),
                        base + ["comm.halo=" + halo, "runtime.node_size=%d" % ns])
            steps = s["results"]["steps"]
            procs = s["results"]["process_grid"]
            on, off, nfaces = exchange_bytes(grid, procs, s["node_map"]["node_of_unit"], 8)
            expect(s, "halo", "bytes_on_node", steps * on, what)
            expect(s, "halo", "bytes_off_node", steps * off, what)
            for kind in ("bytes_on_node", "bytes_off_node"):  # nothing else moves data
                want = req(s, "halo", kind)
                got = (s["requirements"]["all_phases"].get(kind) or {}).get("sum", 0)
                check(got == want, "%s: %s %d in all phases, %d in the halo" % (what, kind, got, want))
            if halo == "p2p":
                expect(s, "halo", "messages", steps * nfaces, what)
                expect(s, "halo", "rma_ops", 0, what)
            if halo == "rma":  # MPI_Get of each face, Route::mpi: on the node too
                expect(s, "halo", "rma_ops", steps * nfaces, what)
                expect(s, "halo", "messages", 0, what)
            cells = math.prod(grid)
            expect(s, "compute", "flops", 11 * cells * steps, what)
            expect(s, "compute", "memory_bytes", 16 * cells * steps, what)
            # one allreduce of the largest change a step, on every rank
            expect(s, "reduce", "collectives", steps * ranks, what)
            if halo == "p2p" and "segment" in str(s["results"]["kernels"]["fields"]):
                # two fields with ghosts in segments: the largest block's
                largest = max(math.prod(block_span(grid[k], procs[k], c[k]) + 2 for k in range(3))
                              for c in [(x, y, z) for x in range(procs[0]) for y in range(procs[1])
                                        for z in range(procs[2])])
                got = s["requirements"]["segment_peak_bytes"]["max"]
                check(got == 2 * 8 * largest, "%s: segment peak %d, two fields %d" % (what, got, 16 * largest))
            print("%s: %d steps x (%d on, %d off the node) bytes, the faces of %s" % (what, steps, on, off, procs))


def poisson5pt(ranks, out):
    deck = os.path.join(SOURCE, "inputs", "poisson5pt", "default.yaml")
    n, iters, every = 8, 20, 10
    base = ["poisson5pt.grid.n=%d" % n, "poisson5pt.solver.max_iterations=%d" % iters,
            "poisson5pt.solver.tolerance=0", "poisson5pt.solver.check_every=%d" % every, "output.xdmf=false"]
    for ns in (0, 1):
        for method, flops, exchanges in (("gauss-seidel", 5, 2 * iters + 1), ("jacobi", 5, iters + 1)):
            what = "poisson5pt %s p2p, node size %d, %d ranks" % (method, ns, ranks)
            s = app_run("poisson5pt", deck, ranks, out, "poisson_%s_%d" % (method, ns),
                        base + ["comm.halo=p2p", "poisson5pt.solver.method=" + method,
                                "runtime.node_size=%d" % ns])
            check(s["results"]["iterations"] == iters, "%s: %s iterations" % (what, s["results"]["iterations"]))
            px, py = s["results"]["process_grid"]
            on, off, nfaces = exchange_bytes([n, n, 1], [px, py, 1], s["node_map"]["node_of_unit"], 8)
            if nfaces == 0:
                exchanges = 0  # one rank: nothing to exchange, no exchange called
            expect(s, "halo", "bytes_on_node", exchanges * on, what)
            expect(s, "halo", "bytes_off_node", exchanges * off, what)
            expect(s, "halo", "messages", exchanges * nfaces, what)
            expect(s, "compute", "flops", flops * n * n * iters, what)
            expect(s, "compute", "memory_bytes", 3 * 8 * n * n * iters, what)
            checks = 1 + iters // every + (1 if iters % every else 0)  # the initial one, then every k
            expect(s, "residual", "flops", 7 * n * n * checks, what)
            print("%s: %d exchanges x (%d on, %d off the node) bytes" % (what, exchanges, on, off))


def spmv(ranks, out):
    deck = os.path.join(SOURCE, "inputs", "spmv", "default.yaml")
    base = ["spmv.matrix.nx=12", "spmv.matrix.ny=12", "spmv.matrix.nz=12", "spmv.repetitions=5"]
    for mode in ("rma", "vector"):
        what = "spmv %s, node size 1, %d ranks" % (mode, ranks)
        d = "spmv_%s" % mode
        s = app_run("spmv", deck, ranks, out, d, base + ["spmv.mode=" + mode, "runtime.node_size=1"])
        products = s["results"]["product"]["products"]
        halo = s["results"]["halo"]["halo_entries"]
        expect(s, "products", "bytes_off_node", products * halo * 8, what)
        expect(s, "products", "bytes_on_node", 0, what)
        expect(s, "products", "flops", products * 2 * s["results"]["matrix"]["nonzeros"], what)
        if mode == "vector":  # one message to every reader of my entries
            with h5py.File(os.path.join(out, d, "spmv.h5"), "r") as f:
                cols = f["halo"].attrs["columns"].split(",")
                readers = int(f["halo"][:, cols.index("readers")].sum())
            expect(s, "products", "messages", products * readers, what)
        print("%s: %d products x %d halo entries x 8 bytes" % (what, products, halo))


def tensor_contract(ranks, out):
    deck = os.path.join(SOURCE, "inputs", "tensor_contract", "default.yaml")
    base = ["tensor_contract.extent=16", "runtime.node_size=1"]
    for chunk, skip in ((1, "false"), (2, "true")):
        what = "tensor_contract nxtask chunk %d skip_first %s, %d ranks" % (chunk, skip, ranks)
        s = app_run("tensor_contract", deck, ranks, out, "tensor_%d" % chunk,
                    base + ["tensor_contract.counter.chunk=%d" % chunk, "tensor_contract.counter.skip_first=" + skip])
        tasks, phases = s["results"]["tasks"], s["results"]["phases"]
        check(phases == 1, "%s: one phase expected, %s" % (what, phases))
        first = ranks * chunk if skip == "true" else 0  # taken without the counter
        hits = -(-max(0, tasks - first) // chunk) + ranks  # chunks handed out, then every unit's last call
        expect(s, "contract", "atomic_fetches", hits, what)
        check(s["requirements"]["all_phases"]["atomic_fetches"]["sum"] == hits, "%s: fetches elsewhere" % what)
        gflop = float(s["results"]["gflop"])
        got = req(s, "contract", "flops")
        check(abs(got - gflop * 1e9) <= 1e-9 * got + 1, "%s: %d flops, the DGEMMs' %s GFLOP" % (what, got, gflop))
        print("%s: %d tasks, %d counter calls" % (what, tasks, hits))
    s = app_run("tensor_contract", deck, ranks, out, "tensor_static",
                base + ["tensor_contract.scheduling=static"])
    expect(s, "contract", "atomic_fetches", 0, "tensor_contract static, %d ranks" % ranks)


def main():
    ranks = int(sys.argv[1])
    out = scratch("requirements_np%d" % ranks)
    heat3d(ranks, out)
    poisson5pt(ranks, out)
    spmv(ranks, out)
    tensor_contract(ranks, out)
    print("requirements: every count equals its hand count")


main()
