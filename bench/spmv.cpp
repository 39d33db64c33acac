// spmv benchmark (./locus bench spmv), one run, baseline and locus side by
// side:
//  1. STREAM triad on every rank at once (the bandwidth the traffic model
//     is judged against, measured in the same run);
//  2. every spmv mode on HPCG's 27-point operator and on a random banded
//     matrix, in interleaved rounds (medians): time per product, GFLOP/s,
//     effective GB/s by the traffic model and its fraction of STREAM, the
//     local product alone, and task mode's overlap efficiency
//     (max(T_local, T_comm) + T_remote) / T_task with T_local, T_comm and
//     T_remote from vector mode (where nothing overlaps);
//  3. APSM's ghost-cell benchmark: a ring, a halo of bench.ghost_bytes to
//     each neighbour, then a triad workload sized to L2; the visible
//     communication time = T(exchange + work) - T(work alone), and the
//     fraction of the baseline's bare exchange time hidden, for: two-sided without help
//     (baseline), two-sided with the locus progress thread, and (with
//     progress processes in the run) one-sided puts offloaded to them.
#include "spmv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <tuple>

#include "harness.hpp"
#include "locus/app.hpp"
#include "locus/machine.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"
#include "locus/wait.hpp"

namespace {

using locus::Config;
using locus::Context;
using spmv::gidx;

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "bench";
  app.description = "spmv modes against their MPI baselines, STREAM, and APSM's ghost-cell benchmark";
  auto& s = app.schema;
  const long big = locus::Schema::kNoMax;
  s.string("bench.matrices", "hpcg27,banded",
           "comma list: hpcg27 (27-point, nx^3), banded (random unsymmetric)")
      .integer("bench.nx", 64, 2, big, "hpcg27: grid points per dimension")
      .integer("bench.banded_rows", 400000, 10, big, "banded: rows")
      .integer("bench.bandwidth", 200, 1, big,
               "banded: half bandwidth (wider bands gather x from L2 rather than L1)")
      .integer("bench.per_row", 27, 1, big, "banded: nonzeros per row")
      .string("bench.modes", "vector,overlap,task,thread,rma",
              "comma list of spmv modes (thread needs runtime.progress.thread: true)")
      .integer("bench.products", 20, 1, big, "products per measurement")
      .integer("bench.warmup", 3, 0, big, "untimed products before each measurement")
      .real("bench.settle_ms", 200.0, 0.0, 1e6,
            "after each STREAM measurement, run the local product untimed this long (the products "
            "after a STREAM sweep ran up to 2x slower for about 100 ms on this project's host)")
      .integer("bench.repeats", 5, 1, big, "interleaved rounds (medians reported)")
      .integer("bench.stream_mib", 64, 1, 1 << 20, "STREAM: MiB per array per rank")
      .boolean("bench.ghost", true, "run the ghost-cell benchmark")
      .integer("bench.ghost_bytes", 1 << 20, 8, big, "ghost-cell: halo bytes to each neighbour")
      .integer("bench.ghost_iterations", 40, 1, big, "ghost-cell: exchanges per measurement")
      .integer("bench.l2_kib", 512, 4, 1 << 20,
               "ghost-cell: triad working set (4 arrays) in KiB, sized to L2")
      .real("bench.work_factor", 2.0, 0.1, 100.0,
            "ghost-cell: the workload takes about this many times the exchange alone (calibrated)")
      .boolean("bench.spmv", true, "run the spmv part")
      .string("bench.label", "", "label for the CSV rows (default: real or emulated nodes)");
  bench::add_keys(s, "bench");
  return app;
}

using bench::max_over_ranks;
using bench::split_list;

// Memory bandwidth on every rank at once, best of 5, GB/s per rank: the
// STREAM triad a = b + s c (reported as STREAM counts it, 24 B per element,
// and with the write-allocate the hardware really moves, 32 B), and a
// read-only kernel (sum of b * c, 16 B), closest to spmv's traffic (almost
// all reads). The roofline uses the better of the two real figures.
struct Bandwidth {
  double triad_stream = 0, triad_real = 0, read = 0;
  double best() const { return std::max(triad_real, read); }
};

Bandwidth measure_bandwidth(MPI_Comm comm, std::size_t mib) {
  const long n = static_cast<long>(mib * 1048576 / 8);
  Bandwidth bw;
  bw.triad_stream = locus::stream_triad_gbs(n, 5, comm);
  bw.triad_real = bw.triad_stream * 32.0 / 24.0;
  bw.read = locus::stream_read_gbs(n, 5, comm);
  return bw;
}

struct ModeFigures {
  std::vector<double> per_product, local, remote, post, wait;
};

// ---- ghost cells

struct Ghost {
  MPI_Comm comm;
  int rank, size;
  std::size_t bytes;
  std::vector<double> sendl, sendr, recvl, recvr;
  std::vector<double> a, b, c, d;
  long work_reps = 1;
};

void triad_work(Ghost& g) {
  const std::size_t n = g.a.size();
  for (long r = 0; r < g.work_reps; ++r) {
    for (std::size_t i = 0; i < n; ++i) g.a[i] = g.b[i] * g.c[i] + g.d[i];
    g.b[r % n] += 1e-300;  // keep the loop from being hoisted
  }
}

void post_ring(Ghost& g, std::vector<MPI_Request>& reqs) {
  const int left = (g.rank + g.size - 1) % g.size, right = (g.rank + 1) % g.size;
  const int count = static_cast<int>(g.bytes / 8);
  reqs.assign(4, MPI_REQUEST_NULL);
  MPI_Irecv(g.recvl.data(), count, MPI_DOUBLE, left, 1, g.comm, &reqs[0]);
  MPI_Irecv(g.recvr.data(), count, MPI_DOUBLE, right, 2, g.comm, &reqs[1]);
  MPI_Isend(g.sendr.data(), count, MPI_DOUBLE, right, 1, g.comm, &reqs[2]);
  MPI_Isend(g.sendl.data(), count, MPI_DOUBLE, left, 2, g.comm, &reqs[3]);
}

// One measurement: iterations of (exchange start, work, exchange end);
// `exchange`/`work` switch the parts. Returns seconds per iteration (max
// over ranks).
double ghost_run(Ghost& g, long iters, bool exchange, bool work, bool thread) {
  std::vector<MPI_Request> reqs;
  MPI_Barrier(g.comm);
  const double t0 = MPI_Wtime();
  for (long it = 0; it < iters; ++it) {
    if (exchange) post_ring(g, reqs);
    std::vector<locus::Handle> hs;
    if (exchange && thread)
      for (MPI_Request r : reqs) hs.push_back(locus::adopt(r));
    if (work) triad_work(g);
    if (exchange) {
      if (thread)
        locus::wait_all(hs);
      else
        locus::wait_all_yielding(reqs);
    }
  }
  return max_over_ranks(g.comm, MPI_Wtime() - t0) / double(iters);
}

// One-sided variant: puts of the halo into the neighbours' segments
// (offloaded to the node's progress process when there is one), work,
// completion, then a notification each way.
struct OneSided {
  locus::Array<double> recv, send;
  locus::Array<std::uint64_t> flags;  // [0]: from left, [1]: from right
  std::uint64_t step = 0;
};

double ghost_run_onesided(Ghost& g, OneSided& os, locus::Team& team, long iters, bool exchange, bool work) {
  const int left = (g.rank + g.size - 1) % g.size, right = (g.rank + 1) % g.size;
  const std::size_t count = g.bytes / 8;
  locus::barrier(team);
  const double t0 = MPI_Wtime();
  for (long it = 0; it < iters; ++it) {
    std::vector<locus::Handle> hs;
    if (exchange) {
      // my right half goes to my right neighbour's "from left" slot, and back
      hs.push_back(locus::put_async(os.recv.gptr(right), os.send.data() + count, count));
      hs.push_back(locus::put_async(os.recv.gptr(left) + count, os.send.data(), count));
    }
    if (work) triad_work(g);
    if (exchange) {
      locus::wait_all(hs);
      ++os.step;
      locus::notify(os.flags.gptr(right), os.step);
      locus::notify(os.flags.gptr(left) + 1, os.step);
      locus::wait_notify(os.flags.data(), os.step);
      locus::wait_notify(os.flags.data() + 1, os.step);
    }
  }
  return max_over_ranks(g.comm, MPI_Wtime() - t0) / double(iters);
}

double median(std::vector<double> v) {
  return locus::median(v);
}

// What every part reads and adds to: the long-format figures (the CSV,
// appended run after run), the goals, the tables for the JSON.
struct Run {
  Context& ctx;
  MPI_Comm comm;
  locus::Team& world;
  bool root, emulated, thread_on;
  std::string label;
  Bandwidth bw;
  bench::Table figures;
  std::vector<std::tuple<std::string, bool, std::string>> goals;  // name, met, note
  std::vector<std::pair<std::string, bench::Table>> tables;
  bool failed = false;
  void figure(const std::string& part, const std::string& cs, const std::string& variant,
              const std::string& fig, double value) {
    figures.row({label, ctx.size(), part, cs, variant, fig, value});
  }
};

spmv::GeneratorSpec generator(const Config& c, MPI_Comm comm, const std::string& mname) {
  spmv::GeneratorSpec g;
  if (mname == "hpcg27") {
    g.kind = "hpcg27";
    g.nx = g.ny = g.nz = c.integer("bench.nx");
  } else if (mname == "banded") {
    g.kind = "banded";
    g.n = c.integer("bench.banded_rows");
    g.bandwidth = c.integer("bench.bandwidth");
    g.per_row = c.integer("bench.per_row");
    g.seed = 1;
  } else {
    locus::collective_require(comm, false,
                              c.locate("bench.matrices") + ": unknown matrix " + mname + " (hpcg27, banded)");
  }
  return g;
}

// One matrix in every mode: its operators, vectors and the figures of the
// interleaved rounds. ops[k] is mode k's operator. All of them share one
// copy of the matrix (the first operator's), so that the modes differ in
// their communication only, not in where their matrix lies in memory.
// ys: one y per operator (in the memory space the products write).
struct MatrixRun {
  std::vector<std::string> modes;
  std::vector<std::unique_ptr<spmv::Operator>> ops;
  std::vector<spmv::Vector> ys;
  std::vector<ModeFigures> fig;
  std::vector<double> local_only, local_fraction, round_stream;
  double bytes = 0, lbytes = 0, nnz = 0;
  spmv::MatrixInfo info;
};

void set_up(Run& run, const std::string& mname, MatrixRun& m) {
  const Config& c = run.ctx.config();
  spmv::RowBlock raw = spmv::generate(run.comm, generator(c, run.comm, mname), m.info);
  const std::vector<gidx> starts = spmv::partition(run.comm, raw, true);
  const spmv::RowBlock rows = spmv::redistribute(run.comm, raw, starts);
  raw = spmv::RowBlock{};
  m.ops.push_back(std::make_unique<spmv::Operator>(run.world, rows, starts, spmv::parse_mode(m.modes[0]), 1));
  for (std::size_t k = 1; k < m.modes.size(); ++k)
    m.ops.push_back(std::make_unique<spmv::Operator>(*m.ops[0], spmv::parse_mode(m.modes[k])));
  const gidx n = m.ops[0]->rows();
  std::vector<double> xin(static_cast<std::size_t>(n));
  for (gidx i = 0; i < n; ++i)
    xin[i] = spmv::hash_uniform(7, static_cast<std::uint64_t>(m.ops[0]->first() + i));
  for (std::size_t k = 0; k < m.ops.size(); ++k) m.ys.emplace_back("bench::y", static_cast<std::size_t>(n));
  m.fig.assign(m.modes.size(), {});
  double b = m.ops[0]->model_bytes(), lb = m.ops[0]->local_model_bytes(), z = double(m.ops[0]->nnz());
  MPI_Allreduce(&b, &m.bytes, 1, MPI_DOUBLE, MPI_SUM, run.comm);
  MPI_Allreduce(&lb, &m.lbytes, 1, MPI_DOUBLE, MPI_SUM, run.comm);
  MPI_Allreduce(&z, &m.nnz, 1, MPI_DOUBLE, MPI_SUM, run.comm);
  for (auto& op : m.ops) op->set_x(xin.data());
  for (std::size_t k = 0; k < m.ops.size(); ++k) m.ops[k]->apply(m.ys[k].data());  // warm-up
}

// The local product, untimed, for `seconds` (every rank stops together).
// After a STREAM sweep of 3 x 64 MiB on both ranks, the products on this
// project's host started up to 2x slower and took about 100 ms to recover
// (hpcg27 64^3 and banded, two ranks; one process alone showed no
// such thing): before settling was added, the mode whose round followed
// the sweep read 10-18 % slower than the others.
void settle(Run& run, MatrixRun& m, double seconds) {
  const double t0 = MPI_Wtime();
  for (int go = seconds > 0; go;) {
    m.ops[0]->apply_local(m.ys[0].data());
    go = MPI_Wtime() - t0 < seconds;
    locus::allreduce_yielding(MPI_IN_PLACE, &go, 1, MPI_INT, MPI_MIN, run.comm);
  }
}

// Interleaved rounds: every mode's products, then the local part alone
// (same data, no communication) and the memory bandwidth right next to it
// (the host's drifts), then settle(). Each round first runs bench.warmup
// products untimed.
void time_modes(Run& run, MatrixRun& m) {
  const Config& c = run.ctx.config();
  const long products = c.integer("bench.products"), warmup = c.integer("bench.warmup");
  const std::size_t bw_mib = static_cast<std::size_t>(c.integer("bench.stream_mib"));
  const double settle_s = c.real("bench.settle_ms") / 1e3;
  settle(run, m, settle_s);  // after the run's first STREAM measurement or the last matrix's rounds
  std::vector<std::string> names = m.modes;
  names.push_back("local-only");
  bench::interleave(c.integer("bench.repeats"), names, [&](const std::string& name, long) {
    // The progress thread (runtime.progress.thread) runs only for the
    // thread mode: with 2 ranks on 2 cores it takes CPU time from every
    // other mode's products (1.5x at 48^3 on the Intel host).
    run.ctx.runtime().pause_progress_thread(name != "thread");
    if (name == "local-only") {
      for (long p = 0; p < warmup; ++p) m.ops[0]->apply_local(m.ys[0].data());
      locus::barrier(run.world);
      const double t0 = MPI_Wtime();
      for (long p = 0; p < products; ++p) m.ops[0]->apply_local(m.ys[0].data());
      const double tl = max_over_ranks(run.comm, MPI_Wtime() - t0) / double(products);
      m.local_only.push_back(tl);
      const double round_bw = measure_bandwidth(run.comm, bw_mib).best();
      m.local_fraction.push_back(m.lbytes / tl / 1e9 / (round_bw * run.ctx.size()));
      m.round_stream.push_back(round_bw);
      settle(run, m, settle_s);
      m.ops[0]->apply(m.ys[0].data());  // leave the baseline's y complete
      return tl;
    }
    const std::size_t k =
        static_cast<std::size_t>(std::find(m.modes.begin(), m.modes.end(), name) - m.modes.begin());
    spmv::Operator& op = *m.ops[k];
    for (long p = 0; p < warmup; ++p) {
      op.x();
      op.apply(m.ys[k].data());
    }
    op.reset_times();
    locus::barrier(run.world);
    const double t0 = MPI_Wtime();
    for (long p = 0; p < products; ++p) {
      op.x();
      op.apply(m.ys[k].data());
    }
    const double t = max_over_ranks(run.comm, MPI_Wtime() - t0) / double(products);
    const spmv::ModeTimes& mt = op.times();
    m.fig[k].per_product.push_back(t);
    m.fig[k].local.push_back(max_over_ranks(run.comm, mt.local) / double(products));
    m.fig[k].remote.push_back(max_over_ranks(run.comm, mt.remote) / double(products));
    m.fig[k].post.push_back(max_over_ranks(run.comm, mt.post) / double(products));
    m.fig[k].wait.push_back(max_over_ranks(run.comm, mt.wait) / double(products));
    return t;
  });
  run.ctx.runtime().pause_progress_thread(false);
}

// The same y in every mode, on every rank.
bool same_y(MPI_Comm comm, const MatrixRun& m) {
  bool same = true;
  auto y0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m.ys[0]);
  for (std::size_t k = 1; k < m.ys.size(); ++k) {
    auto yk = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m.ys[k]);
    same = same && std::equal(yk.data(), yk.data() + yk.size(), y0.data(),
                              [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; });
  }
  int all_same = same ? 1 : 0, everywhere = 0;
  MPI_Allreduce(&all_same, &everywhere, 1, MPI_INT, MPI_MIN, comm);
  return everywhere != 0;
}

bench::Table modes_table(Run& run, const std::string& mname, const MatrixRun& m,
                         std::map<std::string, double>& med) {
  const double stream = run.bw.best();
  bench::Table t;
  t.column("mode", "mode", "%-9s")
      .column("us_per_product", "us/product", " %12.1f")
      .column("gflop_per_s", "GFLOP/s", " %9.3f")
      .column("gb_per_s", "GB/s", " %9.2f")
      .column("stream_fraction", "%roof", " %8s")
      .column("local_us", "local_us", " %10.1f")
      .column("remote_us", "remote_us", " %10.1f")
      .column("post_us", "post_us", " %10.1f")
      .column("wait_us", "wait_us", " %10.1f")
      .column("vector_over_this", "/vector", " %9s")
      .column("overlap_over_this", "/overlap", " %9s");
  for (std::size_t k = 0; k < m.modes.size(); ++k) med[m.modes[k]] = median(m.fig[k].per_product);
  for (std::size_t k = 0; k < m.modes.size(); ++k) {
    const double t_ = med[m.modes[k]];
    const double gbs = m.bytes / t_ / 1e9, roof = gbs / (stream * run.ctx.size());
    char pct[32];
    std::snprintf(pct, sizeof pct, "%7.1f%%", 100 * roof);
    t.row({m.modes[k], t_ * 1e6, 2 * m.nnz / t_ / 1e9, gbs, bench::Cell::as(roof, pct),
           median(m.fig[k].local) * 1e6, median(m.fig[k].remote) * 1e6, median(m.fig[k].post) * 1e6,
           median(m.fig[k].wait) * 1e6, bench::Cell::ratio(bench::ratio(med, "vector", m.modes[k])),
           bench::Cell::ratio(bench::ratio(med, "overlap", m.modes[k]))});
    run.figure("spmv", mname, m.modes[k], "us_per_product", t_ * 1e6);
    run.figure("spmv", mname, m.modes[k], "gb_per_s", gbs);
    run.figure("spmv", mname, m.modes[k], "stream_fraction", roof);
  }
  return t;
}

// Task mode's overlap efficiency (max(T_local, T_comm) + T_remote) / T_task
// with T_local, T_comm and T_remote from vector mode (nothing overlaps).
void task_efficiency(Run& run, const std::string& mname, const MatrixRun& m,
                     std::map<std::string, double>& med) {
  const std::size_t iv = std::find(m.modes.begin(), m.modes.end(), "vector") - m.modes.begin();
  const std::size_t it = std::find(m.modes.begin(), m.modes.end(), "task") - m.modes.begin();
  if (iv >= m.modes.size() || it >= m.modes.size()) return;
  const double tloc = median(m.fig[iv].local), trem = median(m.fig[iv].remote);
  const double tcomm = median(m.fig[iv].post) + median(m.fig[iv].wait);
  const double eff = (std::max(tloc, tcomm) + trem) / med["task"];
  if (run.root)
    std::printf(
        "task overlap efficiency (max(T_local %.1f, T_comm %.1f) + T_remote %.1f) / T_task %.1f = %.2f%s\n",
        tloc * 1e6, tcomm * 1e6, trem * 1e6, med["task"] * 1e6, eff,
        run.emulated ? (eff >= 0.9 ? " (goal >= 0.9 on emulated nodes: met)" : " (goal >= 0.9: MISSED)")
                     : "");
  run.figure("spmv", mname, "task", "overlap_efficiency", eff);
  if (run.emulated) run.goals.emplace_back(mname + "_task_overlap_efficiency_ge_0.9", eff >= 0.9, "");
}

// 2. One matrix in every mode.
void spmv_matrix(Run& run, const std::string& mname, const std::vector<std::string>& modes) {
  MatrixRun m;
  m.modes = modes;
  set_up(run, mname, m);
  time_modes(run, m);
  const bool everywhere = same_y(run.comm, m);
  run.failed = run.failed || !everywhere;
  const double tl = median(m.local_only), lfrac = median(m.local_fraction), mstream = median(m.round_stream);
  std::map<std::string, double> med;
  const bench::Table t = modes_table(run, mname, m, med);
  if (run.root) {
    std::printf("\n## %s: %s, %.0f nonzeros, %.1f MB by the traffic model per product\n", mname.c_str(),
                m.info.source.c_str(), m.nnz, m.bytes / 1e6);
    t.print();
    std::printf(
        "local part alone: %.1f us, %.2f GB/s; bandwidth next to it %.2f GB/s per rank; fraction (median of "
        "rounds) %.0f%% (goal >= 80%%: %s)%s\n",
        tl * 1e6, m.lbytes / tl / 1e9, mstream, 100 * lfrac, lfrac >= 0.8 ? "met" : "MISSED",
        lfrac > 1.0 ? "; above the memory model: the matrix is partly in cache, not a memory figure (raise "
                      "bench.nx or bench.banded_rows)"
                    : "");
    std::printf("y bitwise identical in every mode: %s\n", everywhere ? "yes" : "NO");
  }
  run.tables.emplace_back("spmv_" + mname, t);
  run.figure("spmv", mname, "local-only", "stream_fraction", lfrac);
  run.goals.emplace_back(mname + "_local_stream_fraction_ge_0.8", lfrac >= 0.8,
                         lfrac > 1.0 ? "above 100 %: the matrix is partly in cache" : "");
  task_efficiency(run, mname, m, med);
  if (med.count("rma") && med.count("overlap") && !run.emulated)
    run.goals.emplace_back(mname + "_rma_no_slower_than_overlap_same_node", med["rma"] <= med["overlap"],
                           std::to_string(med["overlap"] / med["rma"]).substr(0, 4) + "x");
  // Between nodes (comm.remote): the one-sided mode no slower than the
  // two-sided vector mode.
  if (med.count("rma") && med.count("vector") && run.emulated)
    run.goals.emplace_back(mname + "_rma_le_vector_between_nodes", med["rma"] <= med["vector"],
                           std::to_string(med["rma"] / med["vector"]).substr(0, 4) + "x vector");
}

// ---- 3. ghost cells

struct GhostVariant {
  std::string name;
  bool thread = false, onesided = false;
};

// The ring and its triad workload, calibrated: the work takes
// bench.work_factor times the bare exchange.
void set_up_ghost(Run& run, Ghost& g) {
  const Config& c = run.ctx.config();
  g.comm = run.comm;
  g.rank = run.ctx.rank();
  g.size = run.ctx.size();
  g.bytes = static_cast<std::size_t>(c.integer("bench.ghost_bytes")) / 8 * 8;
  const std::size_t count = g.bytes / 8;
  g.sendl.assign(count, 1.0);
  g.sendr.assign(count, 2.0);
  g.recvl.assign(count, 0.0);
  g.recvr.assign(count, 0.0);
  const std::size_t wn = static_cast<std::size_t>(c.integer("bench.l2_kib")) * 1024 / 32;
  g.a.assign(wn, 0.0);
  g.b.assign(wn, 1.0);
  g.c.assign(wn, 0.5);
  g.d.assign(wn, 0.25);
  const long iters = c.integer("bench.ghost_iterations");
  const double tcomm_probe = ghost_run(g, iters, true, false, false);
  g.work_reps = 1;
  const double one = ghost_run(g, 20, false, true, false);
  g.work_reps = std::max(1L, static_cast<long>(c.real("bench.work_factor") * tcomm_probe / one));
  MPI_Bcast(&g.work_reps, 1, MPI_LONG, 0, run.comm);
}

void ghost_part(Run& run) {
  const Config& c = run.ctx.config();
  Ghost g;
  set_up_ghost(run, g);
  const std::size_t count = g.bytes / 8;
  const long iters = c.integer("bench.ghost_iterations");
  const bool servers = run.world.served();
  std::vector<GhostVariant> vars{{"two-sided (baseline)"}};
  if (run.thread_on) vars.push_back({"two-sided + progress thread", true});
  std::unique_ptr<OneSided> os;
  if (servers || !run.world.same_node((g.rank + 1) % g.size)) {
    os = std::make_unique<OneSided>();
    os->recv = locus::Array<double>(run.world, 2 * count);
    os->send = locus::Array<double>(run.world, 2 * count);
    os->flags = locus::Array<std::uint64_t>(run.world, 2);
    std::fill(os->flags.data(), os->flags.data() + 2, 0);
    std::fill(os->send.data(), os->send.data() + 2 * count, 3.0);
    locus::barrier(run.world);
    vars.push_back({servers ? "one-sided + progress processes" : "one-sided (locus, direct)", false, true});
  }
  // Interleaved: the work alone, then every variant's bare exchange and
  // exchange + work.
  std::map<std::string, std::vector<double>> both, comm_only;
  std::vector<double> work_only;
  locus::Runtime& rt = run.ctx.runtime();
  for (long rep = 0; rep < c.integer("bench.repeats"); ++rep) {
    rt.pause_progress_thread(true);
    work_only.push_back(ghost_run(g, iters, false, true, false));
    for (const GhostVariant& v : vars) {
      rt.pause_progress_thread(!v.thread);  // the thread runs only for its own variant
      if (v.onesided) {
        comm_only[v.name].push_back(ghost_run_onesided(g, *os, run.world, iters, true, false));
        both[v.name].push_back(ghost_run_onesided(g, *os, run.world, iters, true, true));
      } else {
        comm_only[v.name].push_back(ghost_run(g, iters, true, false, v.thread));
        both[v.name].push_back(ghost_run(g, iters, true, true, v.thread));
      }
    }
  }
  rt.pause_progress_thread(false);
  const double tw = median(work_only);
  if (run.root)
    std::printf(
        "\n## ghost cells (APSM 5.2): ring of %d, %zu B to each neighbour, triad on %ld KiB x %ld; "
        "work alone %.1f us\n",
        g.size, g.bytes, c.integer("bench.l2_kib"), g.work_reps, tw * 1e6);
  bench::Table t;
  t.column("variant", "variant", "%-32s")
      .column("exchange_us", "exchange_us", " %12.1f")
      .column("exchange_work_us", "ex+work_us", " %12.1f")
      .column("visible_us", "visible_us", " %12.1f")
      .column("hidden_fraction", "hidden", " %9s");
  // hidden: the share of the baseline's bare exchange (the communication
  // a user wants hidden) that no longer shows: 1 - visible / T_exchange
  const double texchange = median(comm_only[vars[0].name]);
  double hidden_thread = -1, hidden_base = -1;
  for (const GhostVariant& v : vars) {
    const double tc = median(comm_only[v.name]), tb = median(both[v.name]);
    const double visible = std::max(0.0, tb - tw);
    const double hidden = texchange > 0 ? std::max(0.0, 1.0 - visible / texchange) : 0.0;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%8.0f%%", 100 * hidden);
    t.row({v.name, tc * 1e6, tb * 1e6, visible * 1e6, bench::Cell::as(hidden, pct)});
    run.figure("ghost", std::to_string(g.bytes), v.name, "exchange_us", tc * 1e6);
    run.figure("ghost", std::to_string(g.bytes), v.name, "visible_us", visible * 1e6);
    run.figure("ghost", std::to_string(g.bytes), v.name, "hidden_fraction", hidden);
    if (v.thread) hidden_thread = hidden;
    if (v.name == vars[0].name) hidden_base = hidden;
  }
  if (run.root) t.print();
  run.tables.emplace_back("ghost", t);
  if (hidden_thread >= 0)
    run.goals.emplace_back(
        std::string("ghost_progress_thread_hides_ge_80pct") + (run.emulated ? "" : "_(real node)"),
        hidden_thread >= 0.8,
        std::to_string(int(std::round(100 * hidden_thread))) + "% vs baseline " +
            std::to_string(int(std::round(100 * hidden_base))) + "%");
}

void report(Run& run) {
  bench::Report r(run.ctx.config(), "spmv");
  r.table(run.figures, true);  // appended: the driver's runs go into one CSV
  for (const auto& [key, t] : run.tables) r.data(key, t);
  r.text("placement", run.label);
  r.paths();
  if (!run.goals.empty()) {
    r.goals();
    for (const auto& [name, met, note] : run.goals) r.goal(name, met, note);
  }
  r.verification(!run.failed, "y differs between modes");
  r.finish();
}

int run(Context& ctx) {
  const Config& c = ctx.config();
  Run run{ctx,
          ctx.comm(),
          ctx.runtime().world(),
          ctx.rank() == 0,
          ctx.runtime().node_map().emulated_size > 0,
          ctx.runtime().settings().progress.thread,
          c.string("bench.label"),
          {},
          {},
          {},
          {}};
  if (run.label.empty()) run.label = run.emulated ? "emulated nodes" : "real nodes";
  for (const char* k : {"placement", "ranks", "part", "case", "variant", "figure", "value"})
    run.figures.data_column(k);
  // 1. STREAM on every rank at once
  run.bw = measure_bandwidth(run.comm, static_cast<std::size_t>(c.integer("bench.stream_mib")));
  if (run.root)
    std::printf(
        "# spmv benchmark, %d ranks, %s%s\n# memory bandwidth per rank, all ranks at once: STREAM triad %.2f "
        "GB/s (24 B/element; %.2f with write-allocate), read-only %.2f GB/s; roofline: %.2f GB/s\n",
        ctx.size(), run.label.c_str(), bench::oversubscription_note().c_str(), run.bw.triad_stream,
        run.bw.triad_real, run.bw.read, run.bw.best());
  run.figure("stream", "triad", "-", "gb_per_s_per_rank", run.bw.triad_stream);
  run.figure("stream", "triad_write_allocate", "-", "gb_per_s_per_rank", run.bw.triad_real);
  run.figure("stream", "read", "-", "gb_per_s_per_rank", run.bw.read);
  if (c.boolean("bench.spmv")) {
    std::vector<std::string> modes = split_list(c.string("bench.modes"));
    modes.erase(std::remove_if(modes.begin(), modes.end(),
                               [&](const std::string& m) { return m == "thread" && !run.thread_on; }),
                modes.end());
    for (const std::string& mname : split_list(c.string("bench.matrices"))) spmv_matrix(run, mname, modes);
  }
  if (c.boolean("bench.ghost")) ghost_part(run);
  if (run.root) report(run);
  return run.failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, app_info(), run);
}
