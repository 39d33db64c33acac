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
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/runtime.hpp"
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
  locus::add_common_keys(app.schema, "overlap");
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

}  // namespace

int main(int argc, char** argv) {
  static const locus::AppInfo app = app_info();
  return locus::run(argc, argv, app, [](locus::Context& ctx) {
    const auto& c = ctx.config();
    locus::Team& world = ctx.runtime().world();
    locus::collective_require(
        ctx.comm(), world.size() >= 2,
        "overlap: needs at least 2 application units (got " + std::to_string(world.size()) + ")");
    const bool mpi = c.string("bench.variant") == "mpi";
    const long min_size = c.integer("bench.min_size"), max_size = c.integer("bench.max_size");
    const long repeats = c.integer("bench.repeats");
    const long trials = c.integer("bench.trials");
    const double per_point = c.real("bench.time_per_point");
    const bool smb = c.boolean("bench.smb");
    const auto& prog = ctx.runtime().settings().progress;
    const bool mpich_async = std::getenv("MPIR_CVAR_ASYNC_PROGRESS") &&
                             std::string(std::getenv("MPIR_CVAR_ASYNC_PROGRESS")) == "1";
    std::string label = c.string("bench.label");
    if (label.empty()) {
      if (mpi)
        label = mpich_async ? "MPI_Rget + MPICH async" : "MPI_Rget";
      else if (prog.processes_per_node > 0)
        label = "locus + progress proc";
      else if (prog.thread)
        label = "locus + progress thread";
      else
        label = mpich_async ? "locus + MPICH async" : "locus direct";
    }
    const bool same_node = world.same_node(1);
    const std::string placement = same_node ? "same node" : "inter-node (emulated)";

    // Memory: a segment (locus) or an MPI_Win_allocate window (MPI); the
    // origin buffer is in a segment too (zero copy for a server).
    const auto bytes = static_cast<std::size_t>(max_size);
    locus::Array<char> seg(world, bytes);
    locus::Array<char> dst(world, bytes);
    std::memset(seg.data(), world.rank() + 1, bytes);
    MPI_Win win = MPI_WIN_NULL;
    char* win_base = nullptr;
    if (mpi) {
      MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, ctx.comm(), &win_base, &win);
      std::memset(win_base, world.rank() + 1, bytes);
      MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    }
    locus::barrier(world);

    // start/finish one get of n bytes from unit 1
    MPI_Request req = MPI_REQUEST_NULL;
    locus::Handle h;
    auto start = [&](long n) {
      if (mpi)
        MPI_Rget(dst.data(), static_cast<int>(n), MPI_BYTE, 1, 0, static_cast<int>(n), MPI_BYTE, win, &req);
      else
        h = locus::get_async(dst.data(), seg.gptr(1), static_cast<std::size_t>(n));
    };
    auto finish = [&]() {
      if (mpi)
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      else
        locus::wait(h);
    };
    // mean seconds per call of f over `iters`, median over repeats
    auto timed = [&](long iters, const std::function<void()>& f) {
      std::vector<double> t;
      for (long r = 0; r < repeats; ++r) {
        const double t0 = MPI_Wtime();
        for (long i = 0; i < iters; ++i) f();
        t.push_back((MPI_Wtime() - t0) / static_cast<double>(iters));
      }
      return locus::median(std::move(t));
    };

    std::vector<std::pair<long, Point>> rows;
    double small_latency = 0.0;
    if (world.rank() == 0) {
      // Blocking 8-byte get on the direct path (never offloaded).
      std::vector<char> b8(8);
      for (int i = 0; i < 100; ++i) locus::get(b8.data(), seg.gptr(1), 8);
      small_latency = timed(std::max(100L, static_cast<long>(per_point / 5e-6)),
                            [&] { locus::get(b8.data(), seg.gptr(1), 8); }) *
                      1e6;
      // The work loop's speed, for the first work length.
      const double unit = timed(5, [] { work(100000); }) / 100000.0;
      for (long size = min_size; smb && size <= max_size; size *= 4) {
        for (int i = 0; i < 5; ++i) start(size), finish();
        const double probe = timed(5, [&] {
          start(size);
          finish();
        });
        const long iters = std::clamp(static_cast<long>(per_point / std::max(probe, 1e-7)), 5L, 5000L);
        // One SMB search per trial; on a noisy machine the stop point
        // varies, so the trial with the median availability is reported.
        std::vector<Point> tries;
        for (long trial = 0; trial < trials; ++trial) {
          Point q;
          q.base = timed(iters, [&] {
            start(size);
            finish();
          });
          long w = std::max(1L, static_cast<long>(q.base / 8.0 / unit));
          for (int step = 0; step < 40; ++step, w *= 2) {
            q.iter = timed(iters, [&] {
              start(size);
              work(w);
              finish();
            });
            q.work_steps = w;
            if (q.iter > 1.5 * q.base) break;
          }
          q.work = timed(iters, [&] { work(q.work_steps); });
          q.overhead = std::max(0.0, q.iter - q.work);
          q.availability = 1.0 - q.overhead / q.base;
          tries.push_back(q);
        }
        std::sort(tries.begin(), tries.end(),
                  [](const Point& a, const Point& b) { return a.availability < b.availability; });
        const Point p = tries[tries.size() / 2];
        rows.emplace_back(size, p);
      }
    }
    // The others wait here, entering MPI often (MPICH's RMA needs the target to).
    locus::barrier_yielding(ctx.comm());

    if (world.rank() == 0) {
      std::printf("\n%s, %s: unit 0 gets from unit 1 (%d units%s; %s)\n", label.c_str(), placement.c_str(),
                  world.size(), ctx.runtime().server_ranks().empty() ? "" : " + progress processes",
                  ctx.runtime().progress_description().c_str());
      if (smb)
        std::printf("%10s %12s %12s %12s %12s %8s\n", "bytes", "latency_us", "work_us", "iter_us",
                    "overhead_us", "avail");
      for (const auto& [size, p] : rows)
        std::printf("%10ld %12.2f %12.2f %12.2f %12.2f %7.1f%%\n", size, p.base * 1e6, p.work * 1e6,
                    p.iter * 1e6, p.overhead * 1e6, 100.0 * p.availability);
      std::printf("blocking 8 B get: %.2f us\n", small_latency);
      const std::filesystem::path dir = c.string("output.dir");
      std::filesystem::create_directories(dir);
      const bool append = c.boolean("bench.csv_append");
      int all_ranks = 0;
      MPI_Comm_size(MPI_COMM_WORLD, &all_ranks);
      // Appends (or starts, with its header) one of the two CSV files.
      auto open_csv = [&](const char* name, const char* header) {
        const auto file = dir / name;
        const bool fresh = !append || !std::filesystem::exists(file);
        std::ofstream out(file, fresh ? std::ios::trunc : std::ios::app);
        if (fresh) out << header;
        return out;
      };
      const std::string variant = '"' + label + "\",\"" + placement + "\"," + std::to_string(world.size()) +
                                  ',' + std::to_string(all_ranks) + ',';
      // The MPI library of the run (a quoted CSV field: Open MPI's line has
      // commas), so tables of two libraries' runs tell them apart.
      std::string library = locus::mpi_library();
      library.erase(std::remove(library.begin(), library.end(), '"'), library.end());
      open_csv("overlap_small.csv", "variant,placement,units,ranks,blocking8_us,mpi\n")
          << variant << small_latency << ",\"" << library << "\"\n";
      if (smb) {
        std::ofstream csv = open_csv("overlap.csv",
                                     "variant,placement,units,ranks,bytes,latency_us,work_us,iter_us,"
                                     "overhead_us,availability,blocking8_us,mpi\n");
        for (const auto& [size, p] : rows)
          csv << variant << size << ',' << p.base * 1e6 << ',' << p.work * 1e6 << ',' << p.iter * 1e6 << ','
              << p.overhead * 1e6 << ',' << p.availability << ',' << small_latency << ",\"" << library
              << "\"\n";
      }
    }
    if (mpi) {
      MPI_Win_unlock_all(win);
      MPI_Win_free(&win);
    }
    return 0;
  });
}
