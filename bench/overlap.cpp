// SMB-style host overhead and application availability of a non-blocking
// get (Doerfler & Brightwell; the method of the DART progress-process
// paper, section III.A), unit 0 from unit 1, 1 KiB to 4 MiB.
//
// For each size: base_t = time of (start get; wait), the transfer time.
// Then for work loops of growing length: iter_t = time of (start get; work;
// wait) and work_t = time of the work alone, until iter_t > 1.5 base_t.
// At that point overhead = iter_t - work_t and availability =
// 1 - overhead / base_t: the share of the transfer time the CPU was free.
//
// One run measures one variant (bench.variant plus the runtime.* keys);
// `./locus bench overlap` runs them all, same node and emulated inter-node,
// and prints the combined table (tools/bench_table.py). Every run also
// times a blocking 8-byte get (the cost servers might add to small
// operations; bench.smb: false measures only that). The search runs
// bench.trials times per size and the trial with the median availability
// is reported. Rows are appended to <output.dir>/overlap.csv, the 8-byte
// latency of every run to <output.dir>/overlap_small.csv.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "harness.hpp"
#include "locus/app.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"
#include "locus/version.hpp"
#include "locus/wait.hpp"

namespace {

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "overlap";
  app.description =
      "SMB overhead/availability of a non-blocking get, unit 0 from unit 1: plain MPI_Rget or\n"
      "locus get_async (direct, progress processes, progress thread: the runtime.* keys).";
  const long big = locus::Schema::kNoMax;
  app.schema
      .choice("bench.variant", "locus", {"mpi", "locus"},
              "mpi: MPI_Rget/MPI_Wait on an MPI_Win_allocate window; locus: get_async/wait")
      .string("bench.label", "", "variant name in the table and CSV (default: derived from the settings)")
      .integer("bench.min_size", 1024, 1, big, "smallest get in bytes (x4 up to max)")
      .integer("bench.max_size", 4 << 20, 1, big, "largest get in bytes")
      .integer("bench.repeats", 5, 1, 99, "measurements per point; medians are reported")
      .integer("bench.trials", 3, 1, 99,
               "whole searches per size (base_t, growing work, stop point); the trial with the median "
               "availability is reported")
      .real("bench.time_per_point", 0.02, 1e-4, 10.0, "seconds of iterations per measurement")
      .boolean("bench.smb", true,
               "run the SMB search per size; false: only the blocking 8-byte get (for repeated latency runs)")
      .boolean("bench.csv_append", true,
               "append to <output.dir>/overlap.csv and overlap_small.csv (else overwrite)");
  bench::add_keys(app.schema, "overlap");
  return app;
}

// A dependent floating-point chain: n steps, not optimised away.
volatile double g_seed = 1.0;
volatile double g_sink = 0.0;
void work(long n) {
  double x = g_seed;
  for (long i = 0; i < n; ++i) x = x * 0.999999 + 1e-6 * static_cast<double>(i & 7);
  g_sink = g_sink + x;
}

struct Point {
  double base = 0, iter = 0, work = 0, overhead = 0, availability = 0;
  long work_steps = 0;
};

// What one run measures: the variant (a label), its sizes and effort.
struct Settings {
  bool mpi = false, smb = true;
  long min_size = 0, max_size = 0, repeats = 0, trials = 0;
  double per_point = 0;
  std::string label, placement;
};

Settings read_settings(const locus::Context& ctx) {
  const auto& c = ctx.config();
  Settings s;
  s.mpi = c.string("bench.variant") == "mpi";
  s.min_size = c.integer("bench.min_size");
  s.max_size = c.integer("bench.max_size");
  s.repeats = c.integer("bench.repeats");
  s.trials = c.integer("bench.trials");
  s.per_point = c.real("bench.time_per_point");
  s.smb = c.boolean("bench.smb");
  const auto& prog = ctx.runtime().settings().progress;
  const bool mpich_async =
      std::getenv("MPIR_CVAR_ASYNC_PROGRESS") && std::string(std::getenv("MPIR_CVAR_ASYNC_PROGRESS")) == "1";
  s.label = c.string("bench.label");
  if (s.label.empty()) {
    if (s.mpi)
      s.label = mpich_async ? "MPI_Rget + MPICH async" : "MPI_Rget";
    else if (prog.processes_per_node > 0)
      s.label = "locus + progress proc";
    else if (prog.thread)
      s.label = "locus + progress thread";
    else
      s.label = mpich_async ? "locus + MPICH async" : "locus direct";
  }
  s.placement = ctx.runtime().world().same_node(1) ? "same node" : "inter-node (emulated)";
  return s;
}

// Unit 0's non-blocking get of n bytes from unit 1: MPI_Rget on an
// MPI_Win_allocate window, or locus get_async from a segment (the origin
// buffer is in a segment too: zero copy for a server).
class Getter {
 public:
  Getter(locus::Team& world, const Settings& s)
      : mpi_(s.mpi),
        seg_(world, static_cast<std::size_t>(s.max_size)),
        dst_(world, static_cast<std::size_t>(s.max_size)) {
    const auto bytes = static_cast<std::size_t>(s.max_size);
    std::memset(seg_.data(), world.rank() + 1, bytes);
    if (mpi_) {
      MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, world.comm(), &win_base_, &win_);
      std::memset(win_base_, world.rank() + 1, bytes);
      MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
    }
    locus::barrier(world);
  }
  ~Getter() {
    if (mpi_) {
      MPI_Win_unlock_all(win_);
      MPI_Win_free(&win_);
    }
  }
  Getter(const Getter&) = delete;
  Getter& operator=(const Getter&) = delete;

  void start(long n) {
    if (mpi_)
      MPI_Rget(dst_.data(), static_cast<int>(n), MPI_BYTE, 1, 0, static_cast<int>(n), MPI_BYTE, win_, &req_);
    else
      h_ = locus::get_async(dst_.data(), seg_.gptr(1), static_cast<std::size_t>(n));
  }
  void finish() {
    if (mpi_)
      MPI_Wait(&req_, MPI_STATUS_IGNORE);
    else
      locus::wait(h_);
  }
  // Blocking 8-byte get on the direct path (never offloaded).
  void get8(char* b8) { locus::get(b8, seg_.gptr(1), 8); }

 private:
  bool mpi_;
  locus::Array<char> seg_, dst_;
  MPI_Win win_ = MPI_WIN_NULL;
  char* win_base_ = nullptr;
  MPI_Request req_ = MPI_REQUEST_NULL;
  locus::Handle h_;
};

// Mean seconds per call of f over `iters`, median over repeats.
double timed(long repeats, long iters, const std::function<void()>& f) {
  std::vector<double> t;
  for (long r = 0; r < repeats; ++r) {
    const double t0 = MPI_Wtime();
    for (long i = 0; i < iters; ++i) f();
    t.push_back((MPI_Wtime() - t0) / static_cast<double>(iters));
  }
  return locus::median(std::move(t));
}

// One SMB search at one size: base_t, then work loops of growing length
// until iter_t > 1.5 base_t.
Point smb_search(const Settings& s, Getter& g, long size, long iters, double unit) {
  Point q;
  q.base = timed(s.repeats, iters, [&] {
    g.start(size);
    g.finish();
  });
  long w = std::max(1L, static_cast<long>(q.base / 8.0 / unit));
  for (int step = 0; step < 40; ++step, w *= 2) {
    q.iter = timed(s.repeats, iters, [&] {
      g.start(size);
      work(w);
      g.finish();
    });
    q.work_steps = w;
    if (q.iter > 1.5 * q.base) break;
  }
  q.work = timed(s.repeats, iters, [&] { work(q.work_steps); });
  q.overhead = std::max(0.0, q.iter - q.work);
  q.availability = 1.0 - q.overhead / q.base;
  return q;
}

// Every size (x4 steps): bench.trials searches; on a noisy machine the stop
// point varies, so the trial with the median availability is reported.
std::vector<std::pair<long, Point>> smb_sizes(const Settings& s, Getter& g) {
  std::vector<std::pair<long, Point>> rows;
  // The work loop's speed, for the first work length.
  const double unit = timed(s.repeats, 5, [] { work(100000); }) / 100000.0;
  for (long size = s.min_size; s.smb && size <= s.max_size; size *= 4) {
    for (int i = 0; i < 5; ++i) g.start(size), g.finish();
    const double probe = timed(s.repeats, 5, [&] {
      g.start(size);
      g.finish();
    });
    const long iters = std::clamp(static_cast<long>(s.per_point / std::max(probe, 1e-7)), 5L, 5000L);
    std::vector<Point> tries;
    for (long trial = 0; trial < s.trials; ++trial) tries.push_back(smb_search(s, g, size, iters, unit));
    std::sort(tries.begin(), tries.end(),
              [](const Point& a, const Point& b) { return a.availability < b.availability; });
    rows.emplace_back(size, tries[tries.size() / 2]);
  }
  return rows;
}

// The table and the two CSV files (appended to unless bench.csv_append is
// false), the JSON summary (rank 0).
void report(const locus::Context& ctx, const Settings& s, const std::vector<std::pair<long, Point>>& rows,
            double small_latency) {
  const auto& c = ctx.config();
  const locus::Team& world = ctx.runtime().world();
  std::printf("\n%s, %s: unit 0 gets from unit 1 (%d units%s; %s)\n", s.label.c_str(), s.placement.c_str(),
              world.size(), ctx.runtime().server_ranks().empty() ? "" : " + progress processes",
              ctx.runtime().progress_description().c_str());
  int all_ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &all_ranks);
  // The MPI library of the run, so tables of two libraries' runs tell
  // them apart.
  std::string library = locus::mpi_library();
  library.erase(std::remove(library.begin(), library.end(), '"'), library.end());
  bench::Table t;
  for (const char* k : {"variant", "placement", "units", "ranks"}) t.data_column(k);
  t.column("bytes", "bytes", "%10ld")
      .column("latency_us", "latency_us", " %12.2f")
      .column("work_us", "work_us", " %12.2f")
      .column("iter_us", "iter_us", " %12.2f")
      .column("overhead_us", "overhead_us", " %12.2f")
      .column("availability", "avail", " %8s")
      .data_column("blocking8_us")
      .data_column("mpi");
  for (const auto& [size, p] : rows) {
    char avail[32];
    std::snprintf(avail, sizeof avail, "%7.1f%%", 100.0 * p.availability);
    t.row({s.label, s.placement, world.size(), all_ranks, size, p.base * 1e6, p.work * 1e6, p.iter * 1e6,
           p.overhead * 1e6, bench::Cell::as(p.availability, avail), small_latency, library});
  }
  if (s.smb) t.print_header();
  for (std::size_t i = 0; i < t.rows(); ++i) t.print_row(i);
  std::printf("blocking 8 B get: %.2f us\n", small_latency);
  const bool append = c.boolean("bench.csv_append");
  bench::Report r(c, "overlap");
  bench::Table small;
  for (const char* k : {"variant", "placement", "units", "ranks", "blocking8_us", "mpi"})
    small.data_column(k);
  small.row({s.label, s.placement, world.size(), all_ranks, small_latency, library});
  small.write_csv(c.string("output.dir") + "/overlap_small.csv", append);
  if (s.smb) r.table(t, append);
  r.paths();
  r.text("label", s.label);
  r.text("placement", s.placement);
  r.text("progress", ctx.runtime().progress_description());
  r.figure("get_8B_us", small_latency, "%.2f");
  r.finish();
}

int run(locus::Context& ctx) {
  locus::Team& world = ctx.runtime().world();
  locus::collective_require(
      ctx.comm(), world.size() >= 2,
      "overlap: needs at least 2 application units (got " + std::to_string(world.size()) + ")");
  const Settings s = read_settings(ctx);
  Getter g(world, s);
  std::vector<std::pair<long, Point>> rows;
  double small_latency = 0.0;
  if (world.rank() == 0) {
    std::vector<char> b8(8);
    for (int i = 0; i < 100; ++i) g.get8(b8.data());
    small_latency =
        timed(s.repeats, std::max(100L, static_cast<long>(s.per_point / 5e-6)), [&] { g.get8(b8.data()); }) *
        1e6;
    rows = smb_sizes(s, g);
  }
  // The others wait here, entering MPI often (MPICH's RMA needs the target to).
  locus::barrier_yielding(ctx.comm());
  if (world.rank() == 0) report(ctx, s, rows, small_latency);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, app_info(), run);
}
