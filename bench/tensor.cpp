// tensor_contract benchmark (./locus bench tensor), one run:
//  1. DGEMM efficiency: OpenBLAS's own DGEMM on one large matrix (every
//     rank at once, one thread each) against the app's task loop on the
//     CCSD-like term per tile size (extent = 2 tiles per index: DGEMMs of
//     tile^2 x tile^2 x tile^2), and the loop's overhead: counter, gets,
//     waits, sorts and accumulates as a share of the loop's time;
//  2. NXTASK: fetch-and-add latency with every unit hammering the counter,
//     counter on the first and on the last unit, and while the counter's
//     owner computes a long DGEMM without MPI calls (the delay Casper
//     removes; on emulated nodes the fetch goes through MPI);
//  3. NXTASK against static round-robin on a block-sparse (unbalanced)
//     problem, interleaved repeats.
#include "tensor.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include "harness.hpp"
#include "locus/app.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"

extern "C" void openblas_set_num_threads(int);

namespace {

using locus::Config;
using locus::Context;
using namespace tensor_contract;

locus::AppInfo bench_app_info() {
  locus::AppInfo app;
  app.name = "bench";
  app.description = "tensor_contract: DGEMM efficiency per tile size, NXTASK latency, NXTASK vs static";
  auto& s = app.schema;
  const long big = locus::Schema::kNoMax;
  s.integer("bench.dgemm_n", 1536, 64, 1 << 15, "the large reference DGEMM: n x n x n")
      .string("bench.tiles", "8,12,16,24,32",
              "tile sizes of the efficiency sweep (CCSD-like term, 2 tiles per index)")
      .integer("bench.repeats", 3, 1, big, "repeats (medians / best reported)")
      .integer("bench.fetches", 2000, 10, big, "NXTASK: fetch-and-adds per unit per measurement")
      .real("bench.busy_seconds", 0.2, 0.0, 60.0, "NXTASK: how long the counter's owner computes without MPI")
      .integer("bench.sparse_extent", 24, 2, big,
               "NXTASK vs static: extent of the block-sparse CCSD-like term (j: one full tile and one of an "
               "eighth)")
      .integer("bench.sparse_tile", 8, 1, big, "NXTASK vs static: its tile size")
      .integer("bench.sparse_irreps", 2, 1, 8, "NXTASK vs static: irreps (block sparsity)")
      .integer(
          "bench.sort_cache_mb", 128, 0, 1 << 20,
          "DGEMM efficiency: sorted operand blocks kept per rank, MiB (tensor_contract.sort_cache_mb; 0: "
          "every operand sorted for every pair)")
      .string("bench.parts", "dgemm,nxtask,balance", "which parts to run")
      .string("bench.label", "", "label for the CSV rows (default: real or emulated nodes)");
  bench::add_keys(s, "bench");
  return app;
}

using bench::max_over_ranks;
using bench::split_list;

Problem ccsd(long extent, long tile, int irreps) {
  Problem p;
  parse_contraction(preset_contraction("ccsd"), p.con);
  for (char ch : std::string("abijck")) p.index[ch] = IndexSpec{extent, std::min(tile, extent)};
  p.irreps = irreps;
  p.values = Values::random;
  return p;
}

void busy_dgemm(double seconds) {
  const int n = 256;
  std::vector<double> a(n * n, 1.0), b(n * n, 0.5), c(n * n, 0.0);
  const double t0 = MPI_Wtime();
  while (MPI_Wtime() - t0 < seconds)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0,
                c.data(), n);
}

// What every part reads and adds to: the run's units, the long-format
// figures (part, case, figure, value: the CSV, appended run after run) and
// the goal verdicts.
struct Run {
  Context& ctx;
  MPI_Comm comm;
  locus::Team& world;
  bool root;
  int units;
  long repeats;
  std::string label;
  bench::Table figures;
  std::vector<std::pair<std::string, bool>> goals;
  SortChecks sorts_checked;  // the sort kinds checked against the reference so far
  void figure(const std::string& part, const std::string& cs, const std::string& fig, double v) {
    figures.row({label, units, part, cs, fig, v});
  }
};

// The large DGEMM on every rank at once, GFLOP/s per rank.
class LargeDgemm {
 public:
  LargeDgemm(MPI_Comm comm, int n)
      : comm_(comm),
        n_(n),
        a_(std::size_t(n) * n, 1.0),
        b_(std::size_t(n) * n, 0.5),
        c_(std::size_t(n) * n, 0.0) {}
  double operator()() {
    MPI_Barrier(comm_);
    const double t0 = MPI_Wtime();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n_, n_, n_, 1.0, a_.data(), n_, b_.data(), n_, 0.0,
                c_.data(), n_);
    return 2.0 * double(n_) * n_ * n_ / max_over_ranks(comm_, MPI_Wtime() - t0) / 1e9;
  }

 private:
  MPI_Comm comm_;
  int n_;
  std::vector<double> a_, b_, c_;
};

// memcpy of one block's bytes (tile^4 doubles) into one destination block,
// every rank at once, counted like the sort: 16 B per element (read and
// write). Two sources: the same block again and again (`cached`: at tile
// 24 source and destination, 2 x 2.7 MB, stay in the 8 MiB L3), and a
// different block each time from a pool larger than the caches
// (`streamed`). The sort reads a block of a tensor of tens of MB (fetched,
// or read in place in a segment) and writes a destination the task loop
// reuses: the second is the same cache state, so the goal compares the
// sort with it; the first is reported beside it.
struct MemcpyGbs {
  double cached = 0, streamed = 0;
};

MemcpyGbs memcpy_gbs(MPI_Comm comm, std::vector<double>& pool, std::vector<double>& mdst) {
  const std::size_t block = mdst.size(), blocks = pool.size() / block;
  const long reps = std::max<long>(1, long((64u << 20) / (block * 8)));
  const double bytes = 16.0 * double(block) * double(reps);
  MemcpyGbs out;
  MPI_Barrier(comm);
  double t0 = MPI_Wtime();
  for (long i = 0; i < reps; ++i) {
    std::memcpy(mdst.data(), pool.data(), block * sizeof(double));
    pool[std::size_t(i) % block] += 1.0;  // keep the copies alive
  }
  out.cached = bytes / max_over_ranks(comm, MPI_Wtime() - t0) / 1e9;
  MPI_Barrier(comm);
  t0 = MPI_Wtime();
  for (long i = 0; i < reps; ++i) {
    const double* src = pool.data() + (std::size_t(i) % (blocks - 1) + 1) * block;  // never block 0
    std::memcpy(mdst.data(), src, block * sizeof(double));
    mdst[std::size_t(i) % block] += 1.0;
  }
  out.streamed = bytes / max_over_ranks(comm, MPI_Wtime() - t0) / 1e9;
  return out;
}

// Doubles of the streamed memcpy's source pool: at least 64 MiB (eight
// times the L3) and three blocks.
std::size_t memcpy_pool(std::size_t block) {
  return std::max<std::size_t>(3, (64u << 20) / 8 / block + 1) * block;
}

// One tile size of the sweep: the task loop's rate against the large
// DGEMM of the same round, its overhead, the sort against memcpy (medians).
struct TileResult {
  double rate, frac, ov, sort_rate, sort_frac, sort_frac_cached;
  LoopStats keep;
};

TileResult time_tile(Run& run, LargeDgemm& large, long tile) {
  Problem p = ccsd(2 * tile, tile, 1);
  Schedule sched;
  sched.sort_cache_bytes = static_cast<std::size_t>(run.ctx.config().integer("bench.sort_cache_mb")) << 20;
  std::vector<double> rates, overheads, fractions, sort_fracs, sort_fracs_cached, sort_gbs;
  TileResult out{};
  const std::size_t block = std::size_t(tile) * tile * tile * tile;
  std::vector<double> pool(memcpy_pool(block), 1.0), mdst(block, 0.0);
  for (long r = 0; r < run.repeats; ++r) {
    const double round_peak = large();
    const MemcpyGbs round_memcpy = memcpy_gbs(run.comm, pool, mdst);
    TiledTensor A(run.world, p, p.con.a, 0), B(run.world, p, p.con.b, 1), C(run.world, p, p.con.c, 2);
    PhaseResult res = contract(run.world, p, sched, A, B, C, run.sorts_checked);
    double flops = 0;
    MPI_Allreduce(&res.stats.flops, &flops, 1, MPI_DOUBLE, MPI_SUM, run.comm);
    rates.push_back(flops / res.seconds / 1e9 / run.units);
    fractions.push_back(rates.back() / round_peak);
    const LoopStats& st = res.stats;
    const double ov = (st.get + st.wait + st.sort + st.accumulate + st.nxtask) / st.total;
    overheads.push_back(max_over_ranks(run.comm, ov));
    const double sgbs = st.sort > 0 ? st.sort_bytes / st.sort / 1e9 : 0.0;
    double slow = sgbs;  // the slowest rank's sort bandwidth
    MPI_Allreduce(MPI_IN_PLACE, &slow, 1, MPI_DOUBLE, MPI_MIN, run.comm);
    sort_gbs.push_back(slow);
    sort_fracs.push_back(slow / round_memcpy.streamed);
    sort_fracs_cached.push_back(slow / round_memcpy.cached);
    out.keep = st;
  }
  out.sort_frac = locus::median(sort_fracs);
  out.sort_frac_cached = locus::median(sort_fracs_cached);
  out.sort_rate = locus::median(sort_gbs);
  out.rate = locus::median(rates);
  out.ov = locus::median(overheads);
  out.frac = locus::median(fractions);  // against the large DGEMM of the same round
  return out;
}

bench::Table dgemm_table() {
  bench::Table t;
  t.column("tile", "tile", "%6ld")
      .column("dgemm_dim", "dgemm_dim", " %10ld")
      .column("gflop_per_s_per_rank", "GFLOP/s/rank", " %14.2f")
      .column("fraction_of_large", "of_large", " %12s")
      .column("overhead_fraction", "overhead", " %10s")
      .column("get_wait_fraction", "get+wait", " %10s")
      .column("sort_fraction", "sort", " %10s")
      .column("accumulate_fraction", "acc", " %10s")
      .column("nxtask_fraction", "nxtask", " %10s")
      .column("sorts_kept_fraction", "kept", " %7s")
      .column("sort_gb_per_s", "sort_GB/s", " %12.2f")
      .column("sort_fraction_of_memcpy", "of_memcpy", " %10s")
      .column("sort_fraction_of_cached_memcpy", "of_cached", " %10s");
  return t;
}

// A fraction as the DGEMM table shows it: "%9.1f%%" (or "%11.0f%%").
bench::Cell percent(double f, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, 100 * f);
  return bench::Cell::as(f, buf);
}

// 1. DGEMM efficiency per tile size against OpenBLAS on one large matrix;
// the large DGEMM is measured again next to every tile size's run (the
// host's speed drifts).
bench::Table dgemm_part(Run& run) {
  const Config& c = run.ctx.config();
  const int n = static_cast<int>(c.integer("bench.dgemm_n"));
  LargeDgemm large(run.comm, n);
  std::vector<double> peaks;
  for (long r = 0; r < run.repeats; ++r) peaks.push_back(large());
  const double peak = locus::median(peaks);
  run.figure("dgemm", std::to_string(n), "gflop_per_s_per_rank", peak);
  bench::Table t = dgemm_table();
  if (run.root) {
    std::printf(
        "\n## DGEMM efficiency: OpenBLAS %d^3 on every rank at once: %.2f GFLOP/s per rank (median; "
        "of_large: median of per-round ratios, the large DGEMM rerun next to each run; sort at 16 B per "
        "element: of_memcpy against memcpy of one block from a pool larger than the caches into one block, "
        "of_cached against memcpy of the same block again, both rerun next to each run)\n",
        n, peak);
    t.print_header();
  }
  for (const std::string& ts : split_list(c.string("bench.tiles"))) {
    const long tile = std::stol(ts);
    const TileResult x = time_tile(run, large, tile);
    const LoopStats& k = x.keep;
    t.row({tile, tile * tile, x.rate, percent(x.frac, "%11.0f%%"), percent(x.ov, "%9.1f%%"),
           percent((k.get + k.wait) / k.total, "%9.1f%%"), percent(k.sort / k.total, "%9.1f%%"),
           percent(k.accumulate / k.total, "%9.1f%%"), percent(k.nxtask / k.total, "%9.1f%%"),
           percent(double(k.sorts_kept) / double(std::max<gidx>(1, k.sorts + k.sorts_kept)), "%6.0f%%"),
           x.sort_rate, percent(x.sort_frac, "%9.0f%%"), percent(x.sort_frac_cached, "%9.0f%%")});
    if (run.root) t.print_row(t.rows() - 1);
    run.figure("dgemm", ts, "gflop_per_s_per_rank", x.rate);
    run.figure("dgemm", ts, "fraction_of_large", x.frac);
    run.figure("dgemm", ts, "overhead_fraction", x.ov);
    run.figure("sort", ts, "gb_per_s_per_rank", x.sort_rate);
    run.figure("sort", ts, "fraction_of_memcpy", x.sort_frac);
    run.figure("sort", ts, "fraction_of_cached_memcpy", x.sort_frac_cached);
    if (tile >= 24 && tile <= 30)
      run.goals.push_back({"tile_" + ts + "_sort_ge_80pct_of_memcpy", x.sort_frac >= 0.8});
    if (tile >= 32) run.goals.push_back({"tile_" + ts + "_ge_80pct_of_large_dgemm", x.frac >= 0.8});
    if (tile >= 24 && tile <= 30 && run.units == 2)
      run.goals.push_back({"tile_" + ts + "_overhead_le_10pct_2_ranks", x.ov <= 0.10});
  }
  return t;
}

// 2. NXTASK: fetch-and-add latency with every unit hammering the counter,
// and while the counter's owner computes without MPI; counter on the first
// and on the last unit.
void nxtask_part(Run& run) {
  const Config& c = run.ctx.config();
  const long fetches = c.integer("bench.fetches");
  locus::Array<std::uint64_t> counter(run.world, 1);
  counter.data()[0] = 0;
  locus::barrier(run.world);
  if (run.root)
    std::printf("\n## NXTASK: fetch-and-add latency (us, median of %ld), every unit hammering\n",
                run.repeats);
  for (int owner_last = 0; owner_last < 2; ++owner_last) {
    const int owner = owner_last ? run.units - 1 : 0;
    std::vector<double> lat, lat_busy;
    for (long r = 0; r < run.repeats; ++r) {
      locus::barrier(run.world);
      double t0 = MPI_Wtime();
      for (long i = 0; i < fetches; ++i)
        locus::fetch_and_op(counter.gptr(owner), std::uint64_t(1), locus::Op::sum);
      lat.push_back(max_over_ranks(run.comm, (MPI_Wtime() - t0) / double(fetches)));
      // the owner computes without MPI; the others fetch meanwhile
      locus::barrier(run.world);
      double mine = 0;
      if (run.ctx.rank() == owner && run.units > 1) {
        busy_dgemm(c.real("bench.busy_seconds"));
      } else {
        const long n = std::max(10L, fetches / 10);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; ++i)
          locus::fetch_and_op(counter.gptr(owner), std::uint64_t(1), locus::Op::sum);
        mine = (MPI_Wtime() - t0) / double(n);
      }
      lat_busy.push_back(max_over_ranks(run.comm, mine));
    }
    const char* name = owner_last ? "last" : "first";
    const double l = locus::median(lat) * 1e6, lb = locus::median(lat_busy) * 1e6;
    if (run.root)
      std::printf("counter on the %-5s unit: %8.2f us all hammering; %8.2f us while the owner computes%s\n",
                  name, l, lb, run.units == 1 ? " (1 rank: no other unit)" : "");
    run.figure("nxtask", name, "latency_us", l);
    run.figure("nxtask", name, "latency_owner_busy_us", lb);
  }
}

// 3. NXTASK against static round-robin on a block-sparse (unbalanced)
// problem, interleaved repeats.
void balance_part(Run& run) {
  const Config& c = run.ctx.config();
  Problem p = ccsd(c.integer("bench.sparse_extent"), c.integer("bench.sparse_tile"),
                   static_cast<int>(c.integer("bench.sparse_irreps")));
  // uneven tasks: j has one full tile and one of an eighth, and j varies
  // fastest over the tasks, so on an even unit count static round-robin
  // hands the big ones to the same units
  const gidx jt = p.index['j'].tile;
  p.index['j'].extent = jt + std::max<gidx>(1, jt / 8);
  double imbalance[2] = {0, 0};
  const bench::Samples seconds =
      bench::interleave(run.repeats, {"nxtask", "static"}, [&](const std::string& name, long) {
        const int st = name == "static";
        Schedule sched;
        sched.scheduling = st ? Scheduling::static_rr : Scheduling::nxtask;
        TiledTensor A(run.world, p, p.con.a, 0), B(run.world, p, p.con.b, 1), C(run.world, p, p.con.c, 2);
        PhaseResult res = contract(run.world, p, sched, A, B, C, run.sorts_checked);
        double busy = res.stats.dgemm + res.stats.sort, mx = max_over_ranks(run.comm, busy), sum = 0;
        MPI_Allreduce(&busy, &sum, 1, MPI_DOUBLE, MPI_SUM, run.comm);
        imbalance[st] = sum > 0 ? mx * run.units / sum : 1.0;
        return res.seconds;
      });
  const double a = locus::median(seconds.at("nxtask")), b = locus::median(seconds.at("static"));
  if (run.root) {
    std::printf(
        "\n## NXTASK vs static, unbalanced block-sparse CCSD-like term (extent %ld, tile %ld, %ld irreps; j: "
        "tiles %ld and %ld)\n",
        c.integer("bench.sparse_extent"), c.integer("bench.sparse_tile"), c.integer("bench.sparse_irreps"),
        long(jt), long(p.index['j'].extent - jt));
    std::printf("nxtask %.2f ms (work imbalance %.2f), static %.2f ms (imbalance %.2f): nxtask %.2fx\n",
                a * 1e3, imbalance[0], b * 1e3, imbalance[1], b / a);
  }
  run.figure("balance", "nxtask", "ms", a * 1e3);
  run.figure("balance", "static", "ms", b * 1e3);
  if (run.units > 1) run.goals.push_back({"nxtask_beats_static_block_sparse", a < b});
}

// What the acc column measures: how same-node accumulates were applied
// (comm.htm, comm.fp_locks), with why.
std::string accumulates_line(Context& ctx) {
  const locus::CommSettings& cs = ctx.runtime().settings();
  return "comm.htm " + cs.htm_why + "; comm.fp_locks " + cs.fp_locks_why;
}

int bench_run(Context& ctx) {
  const Config& c = ctx.config();
  openblas_set_num_threads(1);
  Run run{ctx,
          ctx.comm(),
          ctx.runtime().world(),
          ctx.rank() == 0,
          ctx.size(),
          c.integer("bench.repeats"),
          c.string("bench.label"),
          {},
          {},
          {}};
  if (run.label.empty())
    run.label = ctx.runtime().node_map().emulated_size > 0 ? "emulated nodes" : "real nodes";
  for (const char* k : {"placement", "ranks", "part", "case", "figure", "value"}) run.figures.data_column(k);
  const std::vector<std::string> parts = split_list(c.string("bench.parts"));
  auto wants = [&](const char* p) { return std::find(parts.begin(), parts.end(), p) != parts.end(); };
  if (run.root) {
    std::printf("# tensor_contract benchmark, %d ranks, %s%s\n", run.units, run.label.c_str(),
                bench::oversubscription_note().c_str());
    std::printf("# same-node accumulates: %s\n", accumulates_line(ctx).c_str());
  }
  bench::Table dgemm;
  if (wants("dgemm")) dgemm = dgemm_part(run);
  if (wants("nxtask")) nxtask_part(run);
  if (wants("balance")) balance_part(run);
  if (!run.root) return 0;
  bench::Report r(c, "tensor");
  r.table(run.figures, true);  // appended: the driver's runs go into one CSV
  r.data("dgemm", dgemm);
  r.text("placement", run.label);
  r.text("accumulates", accumulates_line(ctx));
  r.paths();
  if (!run.goals.empty()) {
    r.goals();
    for (const auto& [name, met] : run.goals) r.goal(name, met);
  }
  r.finish();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, bench_app_info(), bench_run);
}
