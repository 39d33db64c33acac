// OSU-style one-sided latency and bandwidth: put, get, accumulate and
// fetch_and_op from unit 0 to the last unit, for plain MPI windows
// (MPI_Win_create, MPI_Win_allocate, MPI_Win_create_dynamic) and for locus
// with locality off (all MPI RMA) and on (memcpy on the same node), in one
// run, with the locus/MPI ratios. Blocking semantics everywhere: each
// operation is complete (flushed) before the next starts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"
#include "locus/wait.hpp"

namespace {

using locus::Context;

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "latency";
  app.description =
      "OSU-style one-sided latency/bandwidth: plain MPI windows (create, allocate, dynamic)\n"
      "against locus with locality off and on, unit 0 -> last unit, in one run.";
  const long big = locus::Schema::kNoMax;
  app.schema.integer("bench.min_size", 1, 1, big, "smallest message in bytes (powers of two up to max)")
      .integer("bench.max_size", 4 << 20, 1, big, "largest message in bytes")
      .integer("bench.iterations", 2000, 1, big, "timed operations per size (fewer for large messages)")
      .integer("bench.warmup", 100, 0, big, "untimed operations before each measurement")
      .integer("bench.repeats", 5, 1, 99, "measurements per size; the median is reported")
      .integer("bench.volume_mib", 256, 1, big, "cap on bytes moved per measurement (MiB)");
  locus::add_common_keys(app.schema, "latency");
  return app;
}

struct Params {
  long min_size, max_size, iterations, warmup, repeats, volume;
};

// One column's operation at one size, and its measurements so far.
struct Timed {
  std::string column;
  std::function<void()> op;
  std::vector<double> us;  // mean microseconds per operation, one per repeat
};

// Interleaved repeats: every column of one (op, size) is warmed up, then
// each repeat times every column once, in turn, so that a drift of the
// host (its memory bandwidth moves 2x between minutes here) falls on all
// columns alike. The median of the repeats is reported.
void time_interleaved(const Params& p, long size, std::vector<Timed>& cols) {
  long iters = std::max(10L, std::min(p.iterations, p.volume / std::max(size, 1L)));
  for (auto& c : cols)
    for (long i = 0; i < std::min(p.warmup, iters); ++i) c.op();
  for (long r = 0; r < p.repeats; ++r)
    for (auto& c : cols) {
      double t0 = MPI_Wtime();
      for (long i = 0; i < iters; ++i) c.op();
      c.us.push_back((MPI_Wtime() - t0) / static_cast<double>(iters) * 1e6);
    }
}

// A plain MPI window of `bytes` at every rank, locked once (passive target,
// as locus does), exposing `base`.
struct MpiWindow {
  std::string kind;
  MPI_Win win = MPI_WIN_NULL;
  MPI_Aint target_disp = 0;  // where the target's memory is
  std::vector<char> owned;   // for MPI_Win_create / dynamic

  MpiWindow(const std::string& k, MPI_Comm comm, std::size_t bytes, int target) : kind(k) {
    if (k == "allocate") {
      void* base = nullptr;
      MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm, &base, &win);
      std::memset(base, 0, bytes);
    } else if (k == "create") {
      owned.assign(bytes, 0);
      MPI_Win_create(owned.data(), static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm, &win);
    } else {
      owned.assign(bytes, 0);
      MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &win);
      MPI_Win_attach(win, owned.data(), static_cast<MPI_Aint>(bytes));
      MPI_Aint a = 0;
      MPI_Get_address(owned.data(), &a);
      MPI_Bcast(&a, 1, MPI_AINT, target, comm);
      target_disp = a;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  }
  ~MpiWindow() {
    MPI_Win_unlock_all(win);
    if (kind == "dynamic") MPI_Win_detach(win, owned.data());
    MPI_Win_free(&win);
  }
};

struct Row {
  std::string op;
  long size;
  std::map<std::string, double> us;  // column -> microseconds
};

const std::vector<std::string> kColumns = {"mpi_create", "mpi_allocate", "mpi_dynamic", "locus_off",
                                           "locus_on"};

int run(Context& ctx) {
  const auto& c = ctx.config();
  Params p{c.integer("bench.min_size"), c.integer("bench.max_size"), c.integer("bench.iterations"),
           c.integer("bench.warmup"),   c.integer("bench.repeats"),  c.integer("bench.volume_mib") << 20};
  locus::collective_require(ctx.comm(), ctx.size() >= 2,
                            "latency: needs at least 2 ranks (origin and target)");
  locus::Team& world = ctx.runtime().world();
  const int origin = 0, target = ctx.size() - 1;
  const bool same_node = world.same_node(target);
  const bool me = ctx.rank() == origin;
  const std::size_t bytes = static_cast<std::size_t>(p.max_size);

  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::vector<Row> rows;
  auto row = [&](const std::string& op, long size) -> Row& {
    for (auto& r : rows)
      if (r.op == op && r.size == size) return r;
    rows.push_back({op, size, {}});
    return rows.back();
  };
  std::vector<long> sizes;
  for (long s = p.min_size; s <= p.max_size; s *= 2) sizes.push_back(s);

  // All windows at once (plain MPI ones, then the locus segment), so the
  // columns of one size can be measured interleaved.
  std::vector<std::unique_ptr<MpiWindow>> windows;
  for (const std::string kind : {"create", "allocate", "dynamic"})
    windows.push_back(std::make_unique<MpiWindow>(kind, world.comm(), bytes, target));
  locus::Array<char> seg(world, bytes);
  std::memset(seg.data(), 0, bytes);
  locus::barrier(world);
  if (me) {
    auto t8 = seg.gptr(target).cast<std::int64_t>();
    auto td = seg.gptr(target).cast<double>();
    std::int64_t one = 1, old = 0;
    for (long s : sizes) {
      const int n = static_cast<int>(s), cnt = n / 8;
      for (const std::string op : {"put", "get", "accumulate", "fetch_and_op"}) {
        if (op == "accumulate" && s < 8) continue;
        if (op == "fetch_and_op" && s != 8) continue;
        // A plain memcpy of the same size, interleaved with the others: the
        // bandwidth reference of this row.
        std::vector<Timed> cols;
        cols.push_back({"memcpy", [&] {
                          std::memcpy(dst.data(), src.data(), static_cast<std::size_t>(s));
                          asm volatile("" ::: "memory");
                        }, {}});
        for (auto& w : windows) {
          MPI_Win win = w->win;
          MPI_Aint disp = w->target_disp;
          std::function<void()> f;
          if (op == "put")
            f = [&, win, disp] {
              MPI_Put(src.data(), n, MPI_BYTE, target, disp, n, MPI_BYTE, win);
              MPI_Win_flush(target, win);
            };
          else if (op == "get")
            f = [&, win, disp] {
              MPI_Get(dst.data(), n, MPI_BYTE, target, disp, n, MPI_BYTE, win);
              MPI_Win_flush(target, win);
            };
          else if (op == "accumulate")
            f = [&, win, disp] {
              MPI_Accumulate(src.data(), cnt, MPI_DOUBLE, target, disp, cnt, MPI_DOUBLE, MPI_SUM, win);
              MPI_Win_flush(target, win);
            };
          else
            f = [&, win, disp] {
              MPI_Fetch_and_op(&one, &old, MPI_INT64_T, target, disp, MPI_SUM, win);
              MPI_Win_flush(target, win);
            };
          cols.push_back({"mpi_" + w->kind, f, {}});
        }
        // locus, on a segment: locality off (Route::mpi) and on (automatic).
        // Atomics take one path whatever the locality (CPU atomics when the
        // team is on one node, else MPI accumulates): same numbers.
        for (auto [col, route] :
             {std::pair{"locus_off", locus::Route::mpi}, {"locus_on", locus::Route::automatic}}) {
          auto r = route;
          std::function<void()> f;
          if (op == "put")
            f = [&, r] { locus::put(seg.gptr(target), src.data(), s, r); };
          else if (op == "get")
            f = [&, r] { locus::get(dst.data(), seg.gptr(target), s, r); };
          else if (op == "accumulate")
            f = [&] { locus::accumulate(td, reinterpret_cast<const double*>(src.data()), s / 8, locus::Op::sum); };
          else
            f = [&] { locus::fetch_and_op(t8, std::int64_t(1), locus::Op::sum); };
          cols.push_back({col, f, {}});
        }
        // The hardware limit of an atomic: a CPU fetch-and-add on the
        // target's word in shared memory, no library in the loop.
        if (op == "fetch_and_op" && same_node) {
          std::int64_t* word = t8.local();
          cols.push_back({"cpu_atomic", [word] {
                            __atomic_fetch_add(word, std::int64_t(1), __ATOMIC_ACQ_REL);
                            asm volatile("" ::: "memory");
                          }, {}});
        }
        time_interleaved(p, s, cols);
        for (auto& c : cols) row(op, s).us[c.column] = locus::median(std::move(c.us));
      }
    }
  }
  locus::barrier(world);
  windows.clear();

  if (!me) return 0;
  // ---- report (rank 0)
  const std::string placement = same_node ? "same-node" : "inter-node";
  std::printf("# locus latency benchmark: unit %d -> unit %d (%s%s), median of %ld repeats\n", origin, target,
              placement.c_str(), ctx.runtime().node_map().emulated_size ? ", emulated nodes" : "", p.repeats);
  if (ctx.runtime().node_map().emulated_size)
    std::printf("# note: emulated nodes are locus's view only: the raw MPI windows (mpi_*) still reach the\n"
                "# target through shared memory. For both on the network path run with MPICH's\n"
                "# MPIR_CVAR_NOLOCAL=1 (./locus bench latency does).\n");
  std::printf("# columns measured interleaved: each repeat times every column once, in turn\n");
  std::printf("# microseconds per blocking operation (flushed); bandwidth in MB/s for locus_on\n");
  std::printf("%-13s %9s %11s %12s %11s %10s %10s %9s %10s %10s %10s\n", "op", "bytes", "mpi_create",
              "mpi_allocate", "mpi_dynamic", "locus_off", "locus_on", "memcpy", "alloc/on", "dyn/off",
              "MB/s_on");
  std::string csv_path = c.string("output.dir") + "/" + c.string("output.name") + "_" + placement + ".csv";
  std::filesystem::create_directories(c.string("output.dir"));
  std::ofstream csv(csv_path);
  csv << "placement,op,bytes";
  for (const auto& col : kColumns) csv << "," << col << "_us";
  csv << ",memcpy_us,cpu_atomic_us,ratio_allocate_over_locus_on,ratio_locus_off_over_dynamic\n";
  for (const auto& r : rows) {
    auto get = [&](const std::string& col) { return r.us.count(col) ? r.us.at(col) : NAN; };
    double ratio_on = get("mpi_allocate") / get("locus_on");
    double ratio_off = get("locus_off") / get("mpi_dynamic");
    double mbs = static_cast<double>(r.size) / get("locus_on");
    std::printf("%-13s %9ld %11.3f %12.3f %11.3f %10.3f %10.4f %9.4f %10.1f %10.3f %10.0f", r.op.c_str(),
                r.size, get("mpi_create"), get("mpi_allocate"), get("mpi_dynamic"), get("locus_off"),
                get("locus_on"), get("memcpy"), ratio_on, ratio_off, mbs);
    if (r.us.count("cpu_atomic")) std::printf("   (cpu_atomic %.4f us)", get("cpu_atomic"));
    std::printf("\n");
    csv << placement << "," << r.op << "," << r.size;
    for (const auto& col : kColumns) csv << "," << get(col);
    csv << "," << get("memcpy") << "," << get("cpu_atomic") << "," << ratio_on << "," << ratio_off << "\n";
  }

  // The goals of the issue, measured in this run.
  auto find = [&](const std::string& op, long s) -> const Row* {
    for (const auto& r : rows)
      if (r.op == op && r.size == s) return &r;
    return nullptr;
  };
  YAML::Node goals;
  if (const Row* g8 = find("get", 8)) {
    double speedup = g8->us.at("mpi_allocate") / g8->us.at("locus_on");
    double overhead = g8->us.at("locus_off") / g8->us.at("mpi_dynamic");
    goals["get_8B_mpi_allocate_over_locus_on"] = locus::yaml_number(std::round(speedup * 10) / 10);
    if (same_node) goals["get_8B_goal_20x"] = speedup >= 20 ? "met" : "missed";
    goals["get_8B_locus_off_over_mpi_dynamic"] = locus::yaml_number(std::round(overhead * 1000) / 1000);
    goals["get_8B_goal_within_10pct"] = overhead <= 1.10 ? "met" : "missed";
  }
  if (same_node) {
    // Fine-grained goals on one node: an 8 B blocking get and put within
    // 1.5x of a memcpy of 8 B, fetch_and_op within 2x of a CPU atomic.
    auto two = [](double v) { return locus::yaml_number(std::round(v * 100) / 100); };
    for (const char* op : {"get", "put"})
      if (const Row* r = find(op, 8)) {
        const double q = r->us.at("locus_on") / r->us.at("memcpy");
        goals[std::string(op) + "_8B_locus_on_over_memcpy"] = two(q);
        goals[std::string(op) + "_8B_goal_le_1.5x_memcpy"] = q <= 1.5 ? "met" : "missed";
      }
    if (const Row* r = find("fetch_and_op", 8); r && r->us.count("cpu_atomic")) {
      const double q = r->us.at("locus_on") / r->us.at("cpu_atomic");
      goals["fetch_and_op_locus_on_over_cpu_atomic"] = two(q);
      goals["fetch_and_op_goal_le_2x_cpu_atomic"] = q <= 2.0 ? "met" : "missed";
    }
    double worst = HUGE_VAL;
    for (const auto& r : rows)
      if ((r.op == "get" || r.op == "put") && r.size >= (1 << 20))
        worst = std::min(worst, r.us.at("memcpy") / r.us.at("locus_on"));
    if (std::isfinite(worst)) {
      goals["min_locus_on_bandwidth_fraction_of_memcpy_1MiB_up"] =
          locus::yaml_number(std::round(worst * 1000) / 1000);
      goals["bandwidth_goal_90pct"] = worst >= 0.9 ? "met" : "missed";
    }
  }
  if (!same_node) {
    // Core v2's goals between nodes: locus within 1.1x of MPI on an
    // MPI_Win_allocate window at 8 B, within 1.2x from 64 KiB up. Single
    // sizes swing +-25 % here (locus_off and locus_on take the same path
    // between nodes and differ by that much), so the verdict is on the
    // median ratio over the sizes, and the worst size is shown next to it.
    std::vector<double> small, large;
    for (const auto& r : rows) {
      if (r.op != "get" && r.op != "put") continue;
      double q = r.us.at("locus_on") / r.us.at("mpi_allocate");
      if (r.size == 8) small.push_back(q);
      if (r.size >= (64 << 10)) large.push_back(q);
    }
    auto two = [](double v) { return locus::yaml_number(std::round(v * 100) / 100); };
    if (!small.empty()) {
      double worst = *std::max_element(small.begin(), small.end());
      goals["locus_on_over_mpi_allocate_8B_worst_of_get_put"] = two(worst);
      goals["goal_8B_within_1.1x"] = worst <= 1.1 ? "met" : "missed";
    }
    if (!large.empty()) {
      double worst = *std::max_element(large.begin(), large.end());
      double med = locus::median(large);
      goals["locus_on_over_mpi_allocate_64KiB_up_median"] = two(med);
      goals["locus_on_over_mpi_allocate_64KiB_up_worst_size"] = two(worst);
      goals["goal_64KiB_up_within_1.2x"] = med <= 1.2 ? "met" : "missed";
    }
  }
  std::printf("\nlocus_bench:\n  benchmark: latency\n  placement: %s\n  csv: %s\n", placement.c_str(),
              std::filesystem::absolute(csv_path).c_str());
  YAML::Emitter e;
  e << goals;
  std::string text = e.c_str();
  std::printf("  goals:\n");
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::printf("    %s\n", text.substr(pos, nl - pos).c_str());
    pos = nl + 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, app_info(), run);
}
