// heat3d halo-exchange time per step for every strategy (p2p, rma, locus,
// locus-nb, locus-barrier) on the same grid and ranks, in one run, with
// ratios, after checking that each one fills the ghosts with the
// neighbours' values. The
// exchange is exactly the one heat3d calls each step (barrier included for
// the one-sided strategies); the stencil is left out so that only
// communication is timed.
#include "locus/halo.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "harness.hpp"
#include "heat3d.hpp"
#include "locus/app.hpp"
#include "locus/cpu.hpp"
#include "locus/decomp.hpp"
#include "locus/field.hpp"
#include "locus/kokkos.hpp"
#include "locus/machine.hpp"
#include "locus/profile.hpp"
#include "locus/version.hpp"
#include "locus/wait.hpp"

namespace {

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "halo";
  app.description =
      "heat3d halo exchange per step for p2p, rma, locus, locus-nb and locus-barrier on one grid, in one "
      "run, each checked to move the right values.";
  const long big = locus::Schema::kNoMax;
  app.schema.integer("bench.nx", 128, 1, big, "global grid points in x")
      .integer("bench.ny", 128, 1, big, "global grid points in y")
      .integer("bench.nz", 128, 1, big, "global grid points in z")
      .dims("bench.procs", "process grid [px, py, pz], or auto")
      .integer("bench.exchanges", 200, 1, big, "timed exchanges per measurement")
      .integer("bench.repeats", 7, 1, 99, "measurements per strategy (interleaved); the median is reported")
      .boolean("bench.roofline", true, "measure heat3d's step against the memory roofline")
      .integer("bench.roofline_n", 0, 0, big,
               "roofline grid: points per dimension per rank; 0: the halo's grid (bench.nx, ny, nz over the "
               "same process grid). Its fields must be out of the last-level cache for a memory figure "
               "(256: two fields of 134 MB per rank)")
      .integer("bench.roofline_steps", 10, 1, big, "roofline: timed steps per measurement")
      .integer("bench.roofline_repeats", 7, 1, 99,
               "roofline: measurements of the kernel, the reference kernel and STREAM triad and scale "
               "(interleaved); medians");
  bench::add_keys(app.schema, "halo");
  return app;
}

// A value no two cells share: its global index (ghosts hold the value of
// the global cell they mirror).
double cell_value(const locus::CartDecomp& dc, long i, long j, long k) {
  const auto& o = dc.offset();
  const auto& g = dc.global();
  return static_cast<double>(((o[2] + k - 1) * g[1] + (o[1] + j - 1)) * g[0] + (o[0] + i - 1));
}

// Fills the interior with cell_value and every ghost with -1.
void fill_distinct(locus::GridField& f, const locus::CartDecomp& dc) {
  const auto& n = dc.local();
  auto v = f.view();
  for (long k = 0; k < n[2] + 2; ++k)
    for (long j = 0; j < n[1] + 2; ++j)
      for (long i = 0; i < n[0] + 2; ++i) {
        const bool interior = i >= 1 && i <= n[0] && j >= 1 && j <= n[1] && k >= 1 && k <= n[2];
        v(k, j, i) = interior ? cell_value(dc, i, j, k) : -1.0;
      }
}

// Ghost cells of faces that border another rank that do not hold the
// neighbour's value (face interiors only: edges and corners are not
// exchanged).
long wrong_ghosts(const locus::GridField& f, const locus::CartDecomp& dc) {
  const auto& n = dc.local();
  const auto v = f.view();
  long bad = 0;
  for (int d = 0; d < 3; ++d)
    for (int side = 0; side < 2; ++side) {
      if (dc.neighbor(d, side ? 1 : -1) == MPI_PROC_NULL) continue;
      const long layer = side ? n[d] + 1 : 0;
      for (long k = 1; k <= n[2]; ++k)
        for (long j = 1; j <= n[1]; ++j)
          for (long i = 1; i <= n[0]; ++i) {
            std::array<long, 3> c{i, j, k};
            if (c[d] != 1) continue;  // one pass over the face
            c[d] = layer;
            bad += v(c[2], c[1], c[0]) != cell_value(dc, c[0], c[1], c[2]);
          }
    }
  return bad;
}

// heat3d's step on the global grid `global` over the process grid `procs`
// (the app's solver with the p2p halo; its compute timer), the plain reference kernel
// on the same block, and STREAM triad on arrays of the block's size, all
// ranks at once, interleaved; the slowest rank of each measurement counts.
// The roofline is the triad bandwidth at 16 B per cell update (STREAM's
// convention: read u, write u_new; neighbours come from cache). STREAM
// scale, measured beside it, has exactly that traffic and so gives the
// most a sweep can reach with this machine's caches.
struct Roofline {
  bool ran = false;
  std::string grid;                        // points per rank, "NXxNYxNZ"
  double node_field_mb = 0, cache_mb = 0;  // both fields of this node's ranks; the last-level cache
  bool in_cache() const { return node_field_mb <= cache_mb; }
  double kernel_mcells = 0, reference_mcells = 0, triad_gbs = 0, scale_gbs = 0;
  std::string stores;  // the kernel's stores, as the solver chose them (rank 0's)
  double fraction() const { return kernel_mcells * 16e6 / (triad_gbs * 1e9); }
  // STREAM scale moves what a sweep moves at best (read u, write u_new).
  double scale_fraction() const { return scale_gbs / triad_gbs; }
  double fraction_of_scale() const { return kernel_mcells * 16e6 / (scale_gbs * 1e9); }
  double reference_fraction() const { return reference_mcells * 16e6 / (triad_gbs * 1e9); }
};

Roofline measure_roofline(locus::Context& ctx, const std::array<long, 3>& global, const locus::Dims& procs,
                          long steps, long repeats) {
  MPI_Comm comm = ctx.comm();
  heat3d::Problem p;
  p.n = global;
  p.init = heat3d::Init::Sine;
  p.dt = p.dt_limit();
  locus::Timers timers({"halo", "compute", "reduce"});
  heat3d::Solver solver(ctx.runtime().world(), p, procs, "p2p", timers);
  solver.initialize();
  solver.step();  // the first step checks the kernel against the reference
  // then heat3d.kernel.streaming_stores: auto times cached and streaming stores
  for (int s = 0; s < heat3d::Solver::kTuneSteps; ++s) solver.step();
  const auto& ln = solver.decomp().local();
  const double cells = double(ln[0]) * double(ln[1]) * double(ln[2]);
  Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace> ru("ru", ln[2] + 2, ln[1] + 2, ln[0] + 2),
      rv("rv", ln[2] + 2, ln[1] + 2, ln[0] + 2);
  Kokkos::deep_copy(ru, solver.field().view());
  const double rx = 1.0 / (p.h(0) * p.h(0)), ry = 1.0 / (p.h(1) * p.h(1)), rz = 1.0 / (p.h(2) * p.h(2));
  const long triad_n = std::max<long>(long(cells), 1L << 22);
  std::vector<double> kernel, reference, triad, scale;
  for (long r = 0; r < repeats; ++r) {
    locus::barrier_yielding(comm);
    const double c0 = timers.seconds("compute");
    for (long s = 0; s < steps; ++s) solver.step();
    kernel.push_back(bench::max_over_ranks(comm, (timers.seconds("compute") - c0) / double(steps)));
    locus::barrier_yielding(comm);
    double t0 = MPI_Wtime();
    for (long s = 0; s < steps; ++s) {
      heat3d::reference_step(ru, rv, ln, rx, ry, rz, p.dt * p.k0);
      std::swap(ru, rv);
    }
    reference.push_back(bench::max_over_ranks(comm, (MPI_Wtime() - t0) / double(steps)));
    locus::barrier_yielding(comm);
    // The same bandwidth on every rank at once: the slowest rank's.
    double gbs = locus::stream_triad_gbs(triad_n, 2);
    locus::allreduce_yielding(MPI_IN_PLACE, &gbs, 1, MPI_DOUBLE, MPI_MIN, comm);
    triad.push_back(gbs);
    locus::barrier_yielding(comm);
    gbs = locus::stream_scale_gbs(triad_n, 2);
    locus::allreduce_yielding(MPI_IN_PLACE, &gbs, 1, MPI_DOUBLE, MPI_MIN, comm);
    scale.push_back(gbs);
  }
  Roofline rl;
  rl.ran = true;
  {
    // the two fields of every rank on this node against the last-level cache
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int on_node = 1;
    MPI_Comm_size(node, &on_node);
    MPI_Comm_free(&node);
    const auto& cpu = locus::cpu::features();
    rl.node_field_mb = 2.0 * 8.0 * cells * on_node / 1e6;
    rl.cache_mb = double(cpu.l3 ? cpu.l3 : cpu.l2) / 1e6;
  }
  rl.grid = std::to_string(ln[0]) + "x" + std::to_string(ln[1]) + "x" + std::to_string(ln[2]);
  rl.kernel_mcells = cells / locus::median(kernel) / 1e6;
  rl.reference_mcells = cells / locus::median(reference) / 1e6;
  rl.triad_gbs = locus::median(triad);
  rl.scale_gbs = locus::median(scale);
  rl.stores = solver.stores_report();
  return rl;
}

using Halos = std::map<std::string, std::unique_ptr<locus::HaloExchange<double>>>;

// Microseconds per exchange of every strategy (the slowest rank sets the
// pace of a step), repeats interleaved so that machine noise hits all alike.
bench::Samples measure_exchanges(locus::Team& world, locus::GridField& field,
                                 const std::vector<std::string>& names, Halos& halos, long exchanges,
                                 long repeats) {
  for (const auto& s : names)
    for (int i = 0; i < 10; ++i) halos[s]->exchange(field);  // warm-up
  return bench::interleave(repeats, names, [&](const std::string& s, long) {
    locus::barrier_yielding(world.comm());
    double t0 = MPI_Wtime();
    for (long i = 0; i < exchanges; ++i) halos[s]->exchange(field);
    return bench::max_over_ranks(world.comm(), (MPI_Wtime() - t0) / static_cast<double>(exchanges) * 1e6);
  });
}

// Each strategy must move the right data: distinct values per cell, ghosts
// checked after one exchange (a halo that moves nothing fails). Wrong
// ghosts per strategy, over all ranks.
std::map<std::string, long> check_ghosts(locus::Team& world, locus::GridField& field,
                                         const locus::CartDecomp& dc, const std::vector<std::string>& names,
                                         Halos& halos) {
  std::map<std::string, long> wrong;
  for (const auto& s : names) {
    fill_distinct(field, dc);
    locus::barrier(world);
    halos[s]->exchange(field);
    long bad = wrong_ghosts(field, dc);
    locus::allreduce_yielding(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, world.comm());
    wrong[s] = bad;
  }
  return wrong;
}

void report_roofline(const Roofline& roof, bench::Report& r) {
  r.section("roofline");
  r.text("grid_per_rank", roof.grid);
  r.text("execution_space", locus::ExecSpace::name());
  r.text("stores", roof.stores);
  r.figure("fields_mb_per_node", roof.node_field_mb, "%.1f", "u and u_new of every rank on the node");
  r.figure("last_level_cache_mb", roof.cache_mb, "%.1f");
  r.figure("stream_triad_gbs_per_rank", roof.triad_gbs, "%.2f");
  r.figure("roofline_mcells_per_rank", roof.triad_gbs * 1e9 / 16 / 1e6, "%.1f", "triad at 16 B per update");
  r.figure("kernel_mcells_per_rank", roof.kernel_mcells, "%.1f");
  r.figure("kernel_fraction", roof.fraction());
  r.figure("reference_mcells_per_rank", roof.reference_mcells, "%.1f");
  r.figure("reference_fraction", roof.reference_fraction());
  // The goal's convention counts 16 B per update and triad's 24 B per
  // element; with write-allocate the step really moves 24 B (u read, u_new
  // read for ownership and written back) and triad 32 B. A step at
  // triad's real bandwidth is then 16/24 x 32/24 = 0.889 of the roofline
  // (with streaming stores the step moves 16 B and may reach 1.333).
  const bool streaming = roof.stores.rfind("streaming", 0) == 0;
  const double moved = streaming ? 16.0 : 24.0;  // bytes per update really moved
  r.figure("real_bandwidth_ceiling", (32.0 / 24.0) * (16.0 / moved), "%.3f",
           streaming ? "a step at triad's real bandwidth: 16 B moved (streaming stores) vs triad's 32 B"
                     : "a step at triad's real bandwidth, both with write-allocate (24 B vs 32 B moved)");
  r.figure("kernel_fraction_of_real_bandwidth", roof.fraction() / ((32.0 / 24.0) * (16.0 / moved)), "%.3f",
           streaming ? "16 B per update against triad at 32 B per element"
                     : "24 B per update against triad at 32 B per element");
  // The same limit measured: STREAM scale has a sweep's traffic exactly.
  r.figure("stream_scale_gbs_per_rank", roof.scale_gbs, "%.2f");
  r.figure("scale_fraction", roof.scale_fraction(), "%.3f",
           "STREAM scale (a sweep's traffic) over the roofline: what a sweep can reach");
  r.figure("kernel_fraction_of_scale", roof.fraction_of_scale(), "%.3f");
}

// The table, its CSV and JSON, the speedups and goals (rank 0).
void report(const locus::Context& ctx, const locus::CartDecomp& dc, const std::vector<std::string>& names,
            const bench::Samples& samples, const std::map<std::string, long>& wrong, const Roofline& roof) {
  const auto& c = ctx.config();
  std::map<std::string, double> median;
  for (auto& [name, v] : samples) median[name] = locus::median(v);
  const auto& pg = dc.procs();
  const bool same_node = bench::all_same_node(ctx.runtime().world());
  const std::string placement = same_node ? "same-node" : "multi-node";
  long face_bytes = 0;
  for (int d = 0; d < 3; ++d)
    if (pg[d] > 1) face_bytes = std::max(face_bytes, 8 * dc.local()[(d + 1) % 3] * dc.local()[(d + 2) % 3]);
  std::printf("# locus halo benchmark: %ldx%ldx%ld grid, process grid %dx%dx%d, %d ranks, %s%s\n",
              dc.global()[0], dc.global()[1], dc.global()[2], pg[0], pg[1], pg[2], ctx.size(),
              placement.c_str(), ctx.runtime().node_map().emulated_size ? " (emulated nodes)" : "");
  std::printf(
      "# microseconds per exchange (slowest rank), median of %ld x %ld exchanges; largest face %ld bytes\n",
      c.integer("bench.repeats"), c.integer("bench.exchanges"), face_bytes);
  bench::Table t;
  for (const char* k : {"placement", "ranks", "nx", "ny", "nz", "px", "py", "pz"}) t.data_column(k);
  t.column("strategy", "strategy", "%-14s")
      .column("us_per_exchange", "us/exchange", " %12.2f")
      .column("rma_over_this", "rma/this", " %10.2f")
      .column("p2p_over_this", "p2p/this", " %10.2f")
      .column("wrong_ghosts", "wrong ghosts", " %14ld", bench::Table::Shown::text_only);
  for (const auto& s : names)
    t.row({placement, ctx.size(), dc.global()[0], dc.global()[1], dc.global()[2], pg[0], pg[1], pg[2], s,
           median[s], bench::ratio(median, "rma", s), bench::ratio(median, "p2p", s), wrong.at(s)});
  t.print();
  long all_wrong = 0;
  for (const auto& [name, bad] : wrong) all_wrong += bad;
  const double vs_rma = bench::ratio(median, "rma", "locus"), vs_p2p = bench::ratio(median, "p2p", "locus");
  bench::Report r(c, "halo", "_" + placement);
  r.table(t);
  r.text("placement", placement);
  r.paths();
  r.figure("locus_speedup_over_rma", vs_rma, "%.2f");
  r.figure("locus_speedup_over_p2p", vs_p2p, "%.2f");
  r.figure("wrong_ghosts", static_cast<double>(all_wrong), "%.0f");
  if (roof.ran) report_roofline(roof, r);
  // Same node: locality makes locus memcpy-fast; across nodes the notified
  // halo must stay within 10 % of MPI two-sided.
  r.goals();
  if (same_node) {
    r.goal("goal_2x_over_rma", vs_rma >= 2.0);
    r.goal("goal_at_least_p2p", vs_p2p >= 1.0);
    r.goal("goal_le_0.2x_p2p", vs_p2p >= 5.0);
  } else {
    // between nodes (comm.remote): never slower than MPI two-sided
    r.goal("goal_le_p2p", vs_p2p >= 1.0);
  }
  // A step faster than STREAM scale (a sweep's exact traffic) read part of
  // its fields from cache: the grid is too small for a memory figure.
  // Fields that fit in the last-level cache give no memory figure at all.
  if (roof.ran && roof.in_cache() && !r.quick())
    r.not_judged("goal_kernel_ge_0.8_triad_roofline",
                 "the fields fit in the last-level cache: raise bench.nx/ny/nz or set bench.roofline_n");
  else if (roof.ran)
    r.sized_goal("goal_kernel_ge_0.8_triad_roofline", roof.fraction() >= 0.8,
                 roof.fraction_of_scale() > 1.0 ? "faster than STREAM scale: the fields are partly in cache "
                                                  "(raise bench.nx/ny/nz or set bench.roofline_n)"
                                                : "");
  r.finish();
}

int run(locus::Context& ctx) {
  const auto& c = ctx.config();
  locus::Team& world = ctx.runtime().world();
  locus::CartDecomp dc(world.comm(), {c.integer("bench.nx"), c.integer("bench.ny"), c.integer("bench.nz")},
                       c.dims("bench.procs"), "bench.procs");
  locus::GridField field(world, dc);
  Kokkos::deep_copy(field.view(), 1.0);
  const std::vector<std::string> names = locus::halo_strategies();
  Halos halos;
  for (const auto& s : names) halos[s] = locus::make_halo<double>(s, dc, world);
  const bench::Samples samples =
      measure_exchanges(world, field, names, halos, c.integer("bench.exchanges"), c.integer("bench.repeats"));
  const std::map<std::string, long> wrong = check_ghosts(world, field, dc, names, halos);
  long all_wrong = 0;
  for (const auto& [name, bad] : wrong) all_wrong += bad;
  Roofline roof;
  if (c.boolean("bench.roofline")) {
    // the halo's grid, or roofline_n^3 points per rank over the same process grid
    const long rn = c.integer("bench.roofline_n");
    const locus::Dims pg = dc.procs();
    const std::array<long, 3> global =
        rn > 0 ? std::array<long, 3>{rn * pg[0], rn * pg[1], rn * pg[2]}
               : std::array<long, 3>{dc.global()[0], dc.global()[1], dc.global()[2]};
    roof = measure_roofline(ctx, global, pg, c.integer("bench.roofline_steps"),
                            c.integer("bench.roofline_repeats"));
  }
  if (ctx.rank() != 0) return all_wrong == 0 ? 0 : 1;
  report(ctx, dc, names, samples, wrong, roof);
  if (all_wrong != 0) std::fprintf(stderr, "halo: %ld ghost cells wrong after an exchange\n", all_wrong);
  return all_wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, app_info(), run);
}
