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
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"
#include "tensor.hpp"

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
      .string("bench.tiles", "8,12,16,24,32", "tile sizes of the efficiency sweep (CCSD-like term, 2 tiles per index)")
      .integer("bench.repeats", 3, 1, big, "repeats (medians / best reported)")
      .integer("bench.fetches", 2000, 10, big, "NXTASK: fetch-and-adds per unit per measurement")
      .real("bench.busy_seconds", 0.2, 0.0, 60.0, "NXTASK: how long the counter's owner computes without MPI")
      .integer("bench.sparse_extent", 24, 2, big,
               "NXTASK vs static: extent of the block-sparse CCSD-like term (j: one full tile and one of an eighth)")
      .integer("bench.sparse_tile", 8, 1, big, "NXTASK vs static: its tile size")
      .integer("bench.sparse_irreps", 2, 1, 8, "NXTASK vs static: irreps (block sparsity)")
      .string("bench.parts", "dgemm,nxtask,balance", "which parts to run")
      .string("bench.label", "", "label for the CSV rows (default: real or emulated nodes)");
  locus::add_common_keys(s, "bench");
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
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
}

int bench_run(Context& ctx) {
  const Config& c = ctx.config();
  MPI_Comm comm = ctx.comm();
  locus::Team& world = ctx.runtime().world();
  const bool root = ctx.rank() == 0;
  const int units = ctx.size();
  openblas_set_num_threads(1);
  const bool emulated = ctx.runtime().node_map().emulated_size > 0;
  std::string label = c.string("bench.label");
  if (label.empty()) label = emulated ? "emulated nodes" : "real nodes";
  const std::string dir = c.string("output.dir");
  if (root) std::filesystem::create_directories(dir);
  const std::string csv_path = dir + "/" + c.string("output.name") + ".csv";
  std::ofstream csv;
  if (root) {
    const bool fresh = !std::filesystem::exists(csv_path);
    csv.open(csv_path, std::ios::app);
    if (fresh) csv << "placement,ranks,part,case,figure,value\n";
  }
  auto row = [&](const std::string& part, const std::string& cs, const std::string& fig, double v) {
    if (root) csv << label << "," << units << "," << part << "," << cs << "," << fig << "," << v << "\n";
  };
  const std::vector<std::string> parts = split_list(c.string("bench.parts"));
  auto wants = [&](const char* p) { return std::find(parts.begin(), parts.end(), p) != parts.end(); };
  const long repeats = c.integer("bench.repeats");
  std::vector<std::string> goals;
  if (root)
    std::printf("# tensor_contract benchmark, %d ranks, %s%s\n", units, label.c_str(),
                bench::oversubscription_note().c_str());

  if (wants("dgemm")) {
    const int n = static_cast<int>(c.integer("bench.dgemm_n"));
    std::vector<double> a(std::size_t(n) * n, 1.0), b(std::size_t(n) * n, 0.5), cc(std::size_t(n) * n, 0.0);
    // the large DGEMM on every rank at once, GFLOP/s per rank; measured
    // again next to every tile size's run (the host's speed drifts)
    auto large_dgemm = [&]() {
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0,
                  cc.data(), n);
      return 2.0 * double(n) * n * n / max_over_ranks(comm, MPI_Wtime() - t0) / 1e9;
    };
    std::vector<double> peaks;
    for (long r = 0; r < repeats; ++r) peaks.push_back(large_dgemm());
    const double peak = locus::median(peaks);
    row("dgemm", std::to_string(n), "gflop_per_s_per_rank", peak);
    if (root) {
      std::printf("\n## DGEMM efficiency: OpenBLAS %d^3 on every rank at once: %.2f GFLOP/s per rank (median; "
                  "of_large: median of per-round ratios, the large DGEMM rerun next to each run)\n", n, peak);
      std::printf("%6s %10s %14s %12s %10s %10s %10s %10s %10s %12s %10s\n", "tile", "dgemm_dim", "GFLOP/s/rank",
                  "of_large", "overhead", "get+wait", "sort", "acc", "nxtask", "sort_GB/s", "of_memcpy");
    }
    for (const std::string& ts : split_list(c.string("bench.tiles"))) {
      const long tile = std::stol(ts);
      Problem p = ccsd(2 * tile, tile, 1);
      Schedule sched;
      std::vector<double> rates, overheads, fractions, sort_fracs, sort_gbs;
      LoopStats keep;
      // memcpy of one block's bytes (tile^4 doubles), every rank at once,
      // counted like the sort: 16 B per element (read and write).
      const std::size_t block = std::size_t(tile) * tile * tile * tile;
      std::vector<double> msrc(block, 1.0), mdst(block, 0.0);
      auto memcpy_gbs = [&]() {
        const long reps = std::max<long>(1, long((64u << 20) / (block * 8)));
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        for (long i = 0; i < reps; ++i) {
          std::memcpy(mdst.data(), msrc.data(), block * sizeof(double));
          msrc[std::size_t(i) % block] += 1.0;  // keep the copies alive
        }
        return 16.0 * double(block) * double(reps) / max_over_ranks(comm, MPI_Wtime() - t0) / 1e9;
      };
      for (long r = 0; r < repeats; ++r) {
        const double round_peak = large_dgemm();
        const double round_memcpy = memcpy_gbs();
        TiledTensor A(world, p, p.con.a, 0), B(world, p, p.con.b, 1), C(world, p, p.con.c, 2);
        PhaseResult res = contract(world, p, sched, A, B, C);
        double flops = 0;
        MPI_Allreduce(&res.stats.flops, &flops, 1, MPI_DOUBLE, MPI_SUM, comm);
        rates.push_back(flops / res.seconds / 1e9 / units);
        fractions.push_back(rates.back() / round_peak);
        const LoopStats& st = res.stats;
        const double ov = (st.get + st.wait + st.sort + st.accumulate + st.nxtask) / st.total;
        overheads.push_back(max_over_ranks(comm, ov));
        const double sgbs = st.sort > 0 ? st.sort_bytes / st.sort / 1e9 : 0.0;
        double slow = sgbs;  // the slowest rank's sort bandwidth
        MPI_Allreduce(MPI_IN_PLACE, &slow, 1, MPI_DOUBLE, MPI_MIN, comm);
        sort_gbs.push_back(slow);
        sort_fracs.push_back(slow / round_memcpy);
        keep = st;
      }
      const double sort_frac = locus::median(sort_fracs), sort_rate = locus::median(sort_gbs);
      const double rate = locus::median(rates), ov = locus::median(overheads);
      const double frac = locus::median(fractions);  // against the large DGEMM of the same round
      if (root)
        std::printf("%6ld %10ld %14.2f %11.0f%% %9.1f%% %9.1f%% %9.1f%% %9.1f%% %9.1f%% %12.2f %9.0f%%\n", tile,
                    tile * tile, rate, 100 * frac, 100 * ov, 100 * (keep.get + keep.wait) / keep.total,
                    100 * keep.sort / keep.total, 100 * keep.accumulate / keep.total, 100 * keep.nxtask / keep.total,
                    sort_rate, 100 * sort_frac);
      row("dgemm", ts, "gflop_per_s_per_rank", rate);
      row("dgemm", ts, "fraction_of_large", frac);
      row("dgemm", ts, "overhead_fraction", ov);
      row("sort", ts, "gb_per_s_per_rank", sort_rate);
      row("sort", ts, "fraction_of_memcpy", sort_frac);
      if (tile >= 24 && tile <= 30)
        goals.push_back("tile_" + ts + "_sort_ge_80pct_of_memcpy: " + std::string(sort_frac >= 0.8 ? "met" : "missed"));
      if (tile >= 32) goals.push_back("tile_" + ts + "_ge_80pct_of_large_dgemm: " + (frac >= 0.8 ? "met" : "missed"));
      if (tile >= 24 && tile <= 30 && units == 2)
        goals.push_back("tile_" + ts + "_overhead_le_10pct_2_ranks: " + std::string(ov <= 0.10 ? "met" : "missed"));
    }
  }

  if (wants("nxtask")) {
    const long fetches = c.integer("bench.fetches");
    locus::Array<std::uint64_t> counter(world, 1);
    counter.data()[0] = 0;
    locus::barrier(world);
    if (root)
      std::printf("\n## NXTASK: fetch-and-add latency (us, median of %ld), every unit hammering\n", repeats);
    for (int owner_last = 0; owner_last < 2; ++owner_last) {
      const int owner = owner_last ? units - 1 : 0;
      std::vector<double> lat, lat_busy;
      for (long r = 0; r < repeats; ++r) {
        locus::barrier(world);
        double t0 = MPI_Wtime();
        for (long i = 0; i < fetches; ++i) locus::fetch_and_op(counter.gptr(owner), std::uint64_t(1), locus::Op::sum);
        lat.push_back(max_over_ranks(comm, (MPI_Wtime() - t0) / double(fetches)));
        // the owner computes without MPI; the others fetch meanwhile
        locus::barrier(world);
        double mine = 0;
        if (ctx.rank() == owner && units > 1) {
          busy_dgemm(c.real("bench.busy_seconds"));
        } else {
          const long n = std::max(10L, fetches / 10);
          t0 = MPI_Wtime();
          for (long i = 0; i < n; ++i) locus::fetch_and_op(counter.gptr(owner), std::uint64_t(1), locus::Op::sum);
          mine = (MPI_Wtime() - t0) / double(n);
        }
        lat_busy.push_back(max_over_ranks(comm, mine));
      }
      const char* name = owner_last ? "last" : "first";
      const double l = locus::median(lat) * 1e6, lb = locus::median(lat_busy) * 1e6;
      if (root)
        std::printf("counter on the %-5s unit: %8.2f us all hammering; %8.2f us while the owner computes%s\n", name,
                    l, lb, units == 1 ? " (1 rank: no other unit)" : "");
      row("nxtask", name, "latency_us", l);
      row("nxtask", name, "latency_owner_busy_us", lb);
    }
  }

  if (wants("balance")) {
    Problem p = ccsd(c.integer("bench.sparse_extent"), c.integer("bench.sparse_tile"),
                     static_cast<int>(c.integer("bench.sparse_irreps")));
    // uneven tasks: j has one full tile and one of an eighth, and j varies
    // fastest over the tasks, so on an even unit count static round-robin
    // hands the big ones to the same units
    const gidx jt = p.index['j'].tile;
    p.index['j'].extent = jt + std::max<gidx>(1, jt / 8);
    std::vector<double> tn, ts;
    double imbalance[2] = {0, 0};
    for (long r = 0; r < repeats; ++r)
      for (int st = 0; st < 2; ++st) {
        Schedule sched;
        sched.scheduling = st ? Scheduling::static_rr : Scheduling::nxtask;
        TiledTensor A(world, p, p.con.a, 0), B(world, p, p.con.b, 1), C(world, p, p.con.c, 2);
        PhaseResult res = contract(world, p, sched, A, B, C);
        (st ? ts : tn).push_back(res.seconds);
        double busy = res.stats.dgemm + res.stats.sort, mx = max_over_ranks(comm, busy), sum = 0;
        MPI_Allreduce(&busy, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
        imbalance[st] = sum > 0 ? mx * units / sum : 1.0;
      }
    const double a = locus::median(tn), b = locus::median(ts);
    if (root) {
      std::printf("\n## NXTASK vs static, unbalanced block-sparse CCSD-like term (extent %ld, tile %ld, %ld irreps; j: "
                  "tiles %ld and %ld)\n",
                  c.integer("bench.sparse_extent"), c.integer("bench.sparse_tile"), c.integer("bench.sparse_irreps"),
                  long(jt), long(p.index['j'].extent - jt));
      std::printf("nxtask %.2f ms (work imbalance %.2f), static %.2f ms (imbalance %.2f): nxtask %.2fx\n", a * 1e3,
                  imbalance[0], b * 1e3, imbalance[1], b / a);
    }
    row("balance", "nxtask", "ms", a * 1e3);
    row("balance", "static", "ms", b * 1e3);
    if (units > 1) goals.push_back("nxtask_beats_static_block_sparse: " + std::string(a < b ? "met" : "missed"));
  }
  if (root) {
    std::printf("\nlocus_bench:\n  benchmark: tensor\n  placement: %s\n  csv: %s\n", label.c_str(),
                std::filesystem::absolute(csv_path).c_str());
    if (!goals.empty()) {
      std::printf("  goals:\n");
      for (const auto& g : goals) std::printf("    %s\n", g.c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, bench_app_info(), bench_run);
}
