"""tensor_contract's counted requirements from its task structure, for
./locus predict (docs/co-design.md, "Predictions").

A rank of tensor_contract counts what the tasks it ran need: every pair of
A and B blocks of a task is one tile product (flops, memory bytes), each
operand block is read in place when it is on the rank's node (comm.locality
on) and fetched by a get otherwise, sorted into matrix layout unless it
already is (a block read in place is sorted once and kept while the sort
cache holds it; a cache too small for all of them is replayed block by
block, its least recently used block leaving first), and the task's C
block is sorted and accumulated into its owner, with one 8-byte mark of
the task's completion. TaskPlan enumerates
the tasks, pairs and block owners of a deck's problem at any rank count
and node size the way apps/tensor_contract/tensor.cpp builds them (tiles,
block sparsity by irreps, round-robin or block-cyclic owners, the task
order), and turns a schedule (which unit ran each task) into per-unit
features: tasks, pairs, flops, bytes, operand and accumulate transfers by
where they go. The counts are linear in those features; the coefficients
are fitted on counting runs whose schedules they recorded (the HDF5
dataset `task_unit`).

A static schedule (task k on unit k mod units) is known in advance, so the
busiest rank's counts follow exactly. NXTASK's schedule is not: which rank
asks for the next task depends on timing, so the busiest rank of one run
is not that of the next. Without a schedule the plan gives the mean
rank's expected features (every task equally likely on every unit)."""
import numpy as np
import yaml

import study
from locuslib import UserError, dig

COLUMNS = ["one", "tasks", "pairs", "flops", "product_bytes", "sorted_elements",
           "gets_off", "get_elements_off", "gets_on", "get_elements_on",
           "acc_off", "acc_elements_off", "acc_on", "acc_elements_on", "acc_own", "acc_elements_own",
           "marks_off", "marks_on", "marks_own", "fetches", "acc_mpi", "marks_mpi", "fetches_mpi"]
COL = {c: i for i, c in enumerate(COLUMNS)}

# Per kind, the features its count can follow (the fewest that fit every
# counted rank exactly are taken): "on" is another unit of the same node,
# "own" the unit itself, "off" another node; "mpi" the atomic calls that go
# through MPI (all of them when the team spans nodes, comm.atomics mpi;
# none on one node with comm.locality on: CPU atomics).
CANDIDATES = {
    "flops": ["flops"],
    "memory_bytes": ["product_bytes", "sorted_elements"],
    "atomic_fetches": ["fetches", "one"],
    "atomic_updates": ["acc_elements_off", "acc_elements_on", "acc_elements_own", "marks_off", "marks_on",
                       "marks_own"],
    "rma_ops": ["gets_off", "gets_on", "acc_mpi", "marks_mpi", "fetches_mpi", "acc_off", "marks_off"],
    "bytes_off_node": ["get_elements_off", "acc_elements_off", "marks_off"],
    "bytes_on_node": ["get_elements_on", "acc_elements_on", "acc_elements_own", "marks_on", "marks_own"],
    "messages": ["one", "tasks"],
    "collectives": ["one"],
}


def applies(config):
    """None when the task model describes the deck's runs, else why not."""
    if str(dig(config, "tensor_contract.phases") or "").strip():
        return "a multiphase run (tensor_contract.phases)"
    if int(dig(config, "runtime.progress.processes_per_node") or 0) > 0:
        return "progress processes (the units are not the ranks)"
    if str(dig(config, "comm.atomics")) == "aggregate":
        return "comm.atomics aggregate (updates to other nodes travel in batches)"
    return None


def _overrides(text, what):
    out = {}
    for part in str(text or "").split(","):
        part = part.strip()
        if not part:
            continue
        k, eq, v = part.partition("=")
        if not eq or len(k.strip()) != 1 or not v.strip().isdigit() or int(v) < 1:
            raise UserError("tensor_contract.%s: expected index=value pairs like \"a=40,i=20\" (got '%s')" % (
                what, part))
        out[k.strip()] = int(v)
    return out


class TaskPlan:
    """The tasks of a deck's contraction at UNITS units on emulated nodes
    of NODE_SIZE consecutive units (0: one node)."""

    def __init__(self, config, sets, units, node_size):
        val = dict(sets)
        get = lambda k: yaml.safe_load(str(val[k])) if k in val else dig(config, k)  # noqa: E731
        text = str(get("tensor_contract.contraction") or "ccsd")
        text = study.CONTRACTIONS.get(text, text)
        left, _, right = text.partition("=")
        a, _, b = right.partition("*")
        self.c, self.a, self.b = ("".join(ch for ch in s if ch.isalpha()) for s in (left, a, b))
        ext = _overrides(get("tensor_contract.extents"), "extents")
        til = _overrides(get("tensor_contract.tiles"), "tiles")
        idx = sorted(set(self.a + self.b + self.c))
        self.extent = {ch: ext.get(ch, int(get("tensor_contract.extent"))) for ch in idx}
        self.tile = {ch: til.get(ch, int(get("tensor_contract.tile"))) for ch in idx}
        self.irreps = int(get("tensor_contract.symmetry.irreps") or 1)
        self.cyclic = str(get("tensor_contract.distribution")) == "block-cyclic"
        self.cyclic_block = int(get("tensor_contract.cyclic_block") or 1)
        self.static = str(get("tensor_contract.scheduling")) == "static"
        self.chunk = int(get("tensor_contract.counter.chunk") or 1)
        self.skip_first = bool(get("tensor_contract.counter.skip_first"))
        self.strided = str(get("tensor_contract.accumulate")) == "strided"
        self.locality = str(get("comm.locality")).lower() not in ("off", "false", "0")
        self.cache_bytes = int(get("tensor_contract.sort_cache_mb") or 0) << 20
        self.units, self.node_size = int(units), int(node_size)
        self.counter = 0 if str(get("tensor_contract.counter.owner")) == "first" else self.units - 1
        # CPU atomics on the node only when the team is on one node
        # (core/comm/segment.cpp, comm.atomics mpi)
        self.cpu_atomics = self.locality and (not self.node_size or self.units <= self.node_size)
        self.contracted = "".join(ch for ch in self.a if ch not in self.c)
        self.ext_a = "".join(ch for ch in self.c if ch in self.a)
        self.ext_b = "".join(ch for ch in self.c if ch in self.b)
        self.sizes = {ch: np.minimum(self.tile[ch], self.extent[ch] - self.tile[ch] * np.arange(self._nt(ch)))
                      for ch in idx}
        self.A, self.B, self.C = (self._blocks(s) for s in (self.a, self.b, self.c))
        self._pairs()

    def _nt(self, ch):
        return -(-self.extent[ch] // self.tile[ch])

    def node_of(self, unit):
        return unit // self.node_size if self.node_size else np.zeros_like(unit)

    def node_units(self, unit):
        """Units on UNIT's node."""
        if not self.node_size:
            return np.full_like(unit, self.units)
        first = (unit // self.node_size) * self.node_size
        return np.minimum(first + self.node_size, self.units) - first

    def _blocks(self, idx):
        """{lookup: tile tuple -> block id or -1, tiles, owner, size} of a
        tensor with indices IDX (TiledTensor: the last index fastest)."""
        shape = [self._nt(ch) for ch in idx]
        tiles = np.indices(shape).reshape(len(idx), -1).T
        label = np.zeros(len(tiles), dtype=np.int64)
        for i in range(len(idx)):
            label ^= tiles[:, i] % self.irreps
        nonzero = label == 0
        ids = np.cumsum(nonzero) - 1
        lookup = np.where(nonzero, ids, -1).reshape(shape)
        tiles = tiles[nonzero]
        n = np.arange(len(tiles))
        owner = ((n // self.cyclic_block) if self.cyclic else n) % self.units
        size = np.ones(len(tiles), dtype=np.int64)
        for i, ch in enumerate(idx):
            size *= self.sizes[ch][tiles[:, i]]
        return {"lookup": lookup, "tiles": tiles, "owner": owner, "size": size, "idx": idx}

    def _pairs(self):
        """Every task's pairs (T x K: the contracted indices' tile
        combinations, odometer order) and their shapes."""
        tc = self.C["tiles"]
        self.tasks = len(tc)
        kshape = [self._nt(ch) for ch in self.contracted]
        combo = np.indices(kshape).reshape(len(kshape), -1).T if kshape else np.zeros((1, 0), dtype=np.int64)

        def ids(t, idx):
            sel = []
            for ch in idx:
                if ch in self.contracted:
                    sel.append(combo[:, self.contracted.index(ch)][None, :])
                else:
                    sel.append(tc[:, self.c.index(ch)][:, None])
            return t["lookup"][tuple(sel)]
        self.pa = np.broadcast_to(ids(self.A, self.a), (self.tasks, len(combo)))
        self.pb = np.broadcast_to(ids(self.B, self.b), (self.tasks, len(combo)))
        self.valid = (self.pa >= 0) & (self.pb >= 0)
        m = np.ones(self.tasks)
        n = np.ones(self.tasks)
        k = np.ones(len(combo))
        for ch in self.ext_a:
            m *= self.sizes[ch][tc[:, self.c.index(ch)]]
        for ch in self.ext_b:
            n *= self.sizes[ch][tc[:, self.c.index(ch)]]
        for j, ch in enumerate(self.contracted):
            k *= self.sizes[ch][combo[:, j]]
        mm, nn, kk = m[:, None], n[:, None], k[None, :]
        v = self.valid
        self.task_pairs = v.sum(axis=1).astype(float)
        self.task_flops = np.where(v, 2 * mm * nn * kk, 0.0).sum(axis=1)
        self.task_product_bytes = np.where(v, 8 * (mm * kk + kk * nn + 2 * mm * nn), 0.0).sum(axis=1)
        self.sort_a = self.a != self.ext_a + self.contracted
        self.sort_b = self.b != self.contracted + self.ext_b
        self.sort_c = not self.strided and self.ext_a + self.ext_b != self.c
        # accumulates per task: one (sorted), or one per combination of C's
        # outer indices (strided: Loop::accumulate_strided)
        if self.strided:
            cmat = self.ext_a + self.ext_b
            pos = len(self.c) - 1 if cmat[-1] == self.c[-1] else len(self.c)
            pos -= min(2, pos)
            outer = np.ones(self.tasks)
            for i in range(pos):
                outer *= self.sizes[self.c[i]][tc[:, i]]
            self.task_accs = outer
        else:
            self.task_accs = np.ones(self.tasks)
        self.slots, self.holds = self._cache_slots()
        # caches that keep some of the blocks, not all: replayed (_replay)
        self.partial = (self.slots > 0) & ~self.holds
        self._mean, self._static = None, None

    def _cache_slots(self):
        """Per unit, the slots of its sort cache (SortedBlocks: as many as
        the budget holds, at most its node's blocks of A and B, the ones it
        reads in place; none below two) and whether they hold every such
        block."""
        units = np.arange(self.units)
        if not self.locality:
            zero = np.zeros(self.units, dtype=np.int64)
            return zero, zero.astype(bool)
        slot = 8 * max(int(self.A["size"].max(initial=0)), int(self.B["size"].max(initial=0)))
        budget = self.cache_bytes // slot if slot else 0
        nodes = int(self.node_of(units).max()) + 1
        wanted = sum(np.bincount(self.node_of(t["owner"]), minlength=nodes) for t in (self.A, self.B))
        n = np.minimum(wanted, budget)
        n = np.where(n >= 2, n, 0)
        return n[self.node_of(units)], ((n >= 2) & (n >= wanted))[self.node_of(units)]

    def _replay(self, unit, tasks):
        """Elements UNIT sorts from the blocks it reads in place when it runs
        TASKS (increasing ids) with a sort cache that holds only some of
        them: SortedBlocks replayed, the same accesses in the same order (a
        task's pairs in odometer order, A's block then B's) against a cache
        of the same slots that evicts the least recently used block."""
        from collections import OrderedDict
        node = self.node_of(np.array([unit]))[0]
        keys = []
        for which, t, ids, sort in ((0, self.A, self.pa, self.sort_a), (1, self.B, self.pb, self.sort_b)):
            ids = ids[tasks]
            use = self.valid[tasks] & sort
            if use.any():
                use &= self.node_of(t["owner"][np.where(ids >= 0, ids, 0)]) == node
            keys.append(np.where(use, 2 * ids + which, -1))
        order = np.stack(keys, axis=-1).ravel()  # task, pair, then A before B
        order = order[order >= 0]
        size = (self.A["size"], self.B["size"])
        cache, slots, sorted_elements = OrderedDict(), int(self.slots[unit]), 0
        for k in order.tolist():
            if k in cache:
                cache.move_to_end(k)
                continue
            sorted_elements += int(size[k & 1][k >> 1])
            if len(cache) == slots:
                cache.popitem(last=False)
            cache[k] = None
        return float(sorted_elements)

    # ------------------------------------------------------------ features

    def features(self, task_unit):
        """(units x len(COLUMNS)) features of a schedule: TASK_UNIT[k] is
        the unit that ran task k."""
        U = self.units
        e = np.asarray(task_unit, dtype=np.int64)
        if len(e) != self.tasks or np.any(e < 0) or np.any(e >= U):
            raise ValueError("a schedule of %d tasks on %d units was expected" % (self.tasks, U))
        f = np.zeros((U, len(COLUMNS)))
        add = lambda col, units, w: np.add.at(f[:, COL[col]], units, w)  # noqa: E731
        f[:, COL["one"]] = 1.0
        add("tasks", e, 1.0)
        add("pairs", e, self.task_pairs)
        add("flops", e, self.task_flops)
        add("product_bytes", e, self.task_product_bytes)
        en = self.node_of(e)
        holds = self.holds
        ee = np.broadcast_to(e[:, None], self.pa.shape)[self.valid]
        for t, ids, sort in ((self.A, self.pa, self.sort_a), (self.B, self.pb, self.sort_b)):
            ids = ids[self.valid]
            own = t["owner"][ids]
            size = t["size"][ids].astype(float)
            same = self.node_of(own) == self.node_of(ee)
            inplace = same & self.locality
            off = ~same
            on = same & ~inplace
            add("gets_off", ee[off], 1.0)
            add("get_elements_off", ee[off], size[off])
            add("gets_on", ee[on], 1.0)
            add("get_elements_on", ee[on], size[on])
            if sort:
                add("sorted_elements", ee[~inplace], size[~inplace])
                kept = inplace & holds[ee]
                once = inplace & ~holds[ee] & ~self.partial[ee]
                add("sorted_elements", ee[once], size[once])
                if np.any(kept):
                    key = np.unique(ee[kept] * len(t["size"]) + ids[kept])
                    add("sorted_elements", key // len(t["size"]), t["size"][key % len(t["size"])].astype(float))
        for u in np.flatnonzero(self.partial):
            f[u, COL["sorted_elements"]] += self._replay(u, np.flatnonzero(e == u))
        csize = self.C["size"].astype(float)
        if self.sort_c:
            add("sorted_elements", e, csize)
        cown = self.C["owner"]
        for name, target, n, elems in (("acc", cown, self.task_accs, csize),
                                       ("marks", np.arange(self.tasks) % U, np.ones(self.tasks), None)):
            cls = self._classes(target, e, en)
            for where, mask in cls.items():
                add("%s_%s" % (name, where), e[mask], n[mask])
                if elems is not None:
                    add("acc_elements_%s" % where, e[mask], elems[mask])
            mpi = ~(cls["own"] | cls["on"]) | (not self.cpu_atomics)
            add("%s_mpi" % name, e[mpi], n[mpi])
        if not self.static:
            chunks = np.zeros(U)
            first = np.unique(e * (self.tasks // self.chunk + 2) + np.arange(self.tasks) // self.chunk)
            np.add.at(chunks, first // (self.tasks // self.chunk + 2), 1.0)
            if self.skip_first:
                chunks -= (np.arange(U) * self.chunk < self.tasks)
            f[:, COL["fetches"]] = chunks + 1.0
            units = np.arange(U)
            mpi = (self.node_of(units) != self.node_of(np.array([self.counter]))[0]) | (not self.cpu_atomics)
            f[:, COL["fetches_mpi"]] = np.where(mpi, f[:, COL["fetches"]], 0.0)
        return f

    def _classes(self, target, e, en):
        own = target == e
        same = self.node_of(target) == en
        return {"own": own, "on": same & ~own, "off": ~same}

    def static_schedule(self):
        return np.arange(self.tasks) % self.units

    def static_features(self):
        """features() of the static schedule (kept: every kind asks)."""
        if self._static is None:
            self._static = self.features(self.static_schedule())
        return self._static

    def expected_mean(self):
        """The mean unit's expected features when every task is equally
        likely on every unit (NXTASK: no schedule known in advance; kept:
        every kind asks)."""
        if self._mean is None:
            self._mean = self._expected_mean()
        return self._mean

    def _expected_mean(self):
        U = self.units
        f = np.zeros(len(COLUMNS))
        f[COL["one"]] = 1.0
        f[COL["tasks"]] = self.tasks / U
        f[COL["pairs"]] = self.task_pairs.sum() / U
        f[COL["flops"]] = self.task_flops.sum() / U
        f[COL["product_bytes"]] = self.task_product_bytes.sum() / U
        per = self.tasks / U  # tasks per unit
        holds = float(np.mean(self.holds))
        partial = float(np.mean(self.partial))
        for t, ids, sort in ((self.A, self.pa, self.sort_a), (self.B, self.pb, self.sort_b)):
            ids = ids[self.valid]
            own = t["owner"][ids]
            size = t["size"][ids].astype(float)
            pn = self.node_units(own) / U  # P(the task runs on the owner's node)
            p_in = pn if self.locality else 0.0
            f[COL["gets_off"]] += np.sum(1 - pn) / U
            f[COL["get_elements_off"]] += np.sum(size * (1 - pn)) / U
            f[COL["gets_on"]] += np.sum(pn - p_in) / U
            f[COL["get_elements_on"]] += np.sum(size * (pn - p_in)) / U
            if sort:
                f[COL["sorted_elements"]] += np.sum(size * (1 - p_in)) / U
                f[COL["sorted_elements"]] += (1 - holds - partial) * np.sum(size * p_in) / U
                if holds and self.locality:
                    # a block used by u of the T tasks is used at least once by a
                    # unit of its node that ran `per` of them with probability
                    # 1 - (1 - u/T)^per; its node's units read it in place
                    uses = np.bincount(ids, minlength=len(t["size"])).astype(float)
                    nu = self.node_units(t["owner"]).astype(float)
                    seen = 1 - (1 - uses / self.tasks) ** per
                    f[COL["sorted_elements"]] += holds * np.sum(nu * seen * t["size"]) / U
        if partial:
            # caches that keep some blocks: replayed on one schedule drawn
            # the way the mean assumes (every task equally likely on every
            # unit; a fixed seed), averaged over those units
            draw = np.random.default_rng(0).integers(0, U, self.tasks)
            kept = [self._replay(u, np.flatnonzero(draw == u)) for u in np.flatnonzero(self.partial)]
            f[COL["sorted_elements"]] += partial * float(np.mean(kept))
        csize = self.C["size"].astype(float)
        if self.sort_c:
            f[COL["sorted_elements"]] += csize.sum() / U
        for name, target, n, elems in (("acc", self.C["owner"], self.task_accs, csize),
                                       ("marks", np.arange(self.tasks) % U, np.ones(self.tasks), None)):
            pn = self.node_units(target) / U
            for where, p in (("own", np.full(self.tasks, 1.0 / U)), ("on", pn - 1.0 / U), ("off", 1 - pn)):
                f[COL["%s_%s" % (name, where)]] += np.sum(n * p) / U
                if elems is not None:
                    f[COL["acc_elements_%s" % where]] += np.sum(elems * p) / U
            f[COL["%s_mpi" % name]] += np.sum(n * (1 - pn if self.cpu_atomics else 1.0)) / U
        if not self.static:
            chunks = -(-self.tasks // self.chunk)
            if self.skip_first:
                chunks -= min(U, chunks)
            f[COL["fetches"]] = chunks / U + 1.0
            near = self.node_units(np.array([self.counter]))[0] / U  # P(a unit is on the counter's node)
            f[COL["fetches_mpi"]] = f[COL["fetches"]] * ((1 - near) if self.cpu_atomics else 1.0)
        return f


def fit(kind, feats, counts):
    """Coefficients (len(COLUMNS)) of one kind: the fewest of its candidate
    features that give every counted unit its count exactly, else the
    closest fit of them all. FEATS: rows of features, COUNTS: the counts."""
    import itertools
    x, y = np.asarray(feats, float), np.asarray(counts, float)
    scale = max(1.0, float(np.max(np.abs(y)))) if len(y) else 1.0
    cand = [COL[c] for c in CANDIDATES.get(kind, COLUMNS)]
    best = None
    for r in range(1, len(cand) + 1):
        for cols in itertools.combinations(cand, r):
            cols = list(cols)
            c, *_ = np.linalg.lstsq(x[:, cols], y, rcond=None)
            coef = np.zeros(x.shape[1])
            coef[cols] = c
            worst = float(np.max(np.abs(x @ coef - y))) / scale if len(y) else 0.0
            if worst <= 1e-9:
                return coef, True
            if best is None or worst < best[0]:
                best = (worst, coef)
    return best[1], False
