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
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "harness.hpp"
#include "locus/app.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
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
  bench::add_keys(app.schema, "latency");
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

// What the origin moves, and where: the plain MPI windows and the locus
// segment at the target, and the origin's buffers.
struct Setup {
  int target = 0;
  bool same_node = false;
  std::vector<std::unique_ptr<MpiWindow>> windows;
  locus::Array<char>* seg = nullptr;
  std::vector<char> src, dst;
  std::int64_t one = 1, old = 0;
};

// The plain MPI windows' operation `op` of s bytes, one column each.
void mpi_columns(Setup& u, const std::string& op, long s, std::vector<Timed>& cols) {
  const int n = static_cast<int>(s), cnt = n / 8, target = u.target;
  for (auto& w : u.windows) {
    MPI_Win win = w->win;
    MPI_Aint disp = w->target_disp;
    std::function<void()> f;
    if (op == "put")
      f = [&u, n, target, win, disp] {
        MPI_Put(u.src.data(), n, MPI_BYTE, target, disp, n, MPI_BYTE, win);
        MPI_Win_flush(target, win);
      };
    else if (op == "get")
      f = [&u, n, target, win, disp] {
        MPI_Get(u.dst.data(), n, MPI_BYTE, target, disp, n, MPI_BYTE, win);
        MPI_Win_flush(target, win);
      };
    else if (op == "accumulate")
      f = [&u, cnt, target, win, disp] {
        MPI_Accumulate(u.src.data(), cnt, MPI_DOUBLE, target, disp, cnt, MPI_DOUBLE, MPI_SUM, win);
        MPI_Win_flush(target, win);
      };
    else
      f = [&u, target, win, disp] {
        MPI_Fetch_and_op(&u.one, &u.old, MPI_INT64_T, target, disp, MPI_SUM, win);
        MPI_Win_flush(target, win);
      };
    cols.push_back({"mpi_" + w->kind, f, {}});
  }
}

// locus, on a segment: locality off (Route::mpi) and on (automatic).
// Atomics take one path whatever the locality (CPU atomics when the team
// is on one node, else MPI accumulates): same numbers.
void locus_columns(Setup& u, const std::string& op, long s, std::vector<Timed>& cols) {
  const locus::GlobalPtr<char> at = u.seg->gptr(u.target);
  auto t8 = at.cast<std::int64_t>();
  auto td = at.cast<double>();
  for (auto [col, route] :
       {std::pair{"locus_off", locus::Route::mpi}, {"locus_on", locus::Route::automatic}}) {
    auto r = route;
    std::function<void()> f;
    // The global pointer is made once, as a user holding one would (DART's
    // benchmark passes a dart_gptr_t likewise): the column times the call.
    if (op == "put")
      f = [&u, at, s, r] { locus::put(at, u.src.data(), s, r); };
    else if (op == "get")
      f = [&u, at, s, r] { locus::get(u.dst.data(), at, s, r); };
    else if (op == "accumulate")
      f = [&u, td, s] {
        locus::accumulate(td, reinterpret_cast<const double*>(u.src.data()), s / 8, locus::Op::sum);
      };
    else
      f = [t8] { locus::fetch_and_op(t8, std::int64_t(1), locus::Op::sum); };
    cols.push_back({col, f, {}});
  }
  // The hardware limit of an atomic: a CPU fetch-and-add on the target's
  // word in shared memory, no library in the loop.
  if (op == "fetch_and_op" && u.same_node) {
    std::int64_t* word = t8.local();
    cols.push_back({"cpu_atomic",
                    [word] {
                      __atomic_fetch_add(word, std::int64_t(1), __ATOMIC_ACQ_REL);
                      asm volatile("" ::: "memory");
                    },
                    {}});
  }
}

// Every (op, size) of the run, its columns timed interleaved (origin only).
std::vector<Row> measure(const Params& p, Setup& u) {
  std::vector<Row> rows;
  for (long s = p.min_size; s <= p.max_size; s *= 2)
    for (const std::string op : {"put", "get", "accumulate", "fetch_and_op"}) {
      if (op == "accumulate" && s < 8) continue;
      if (op == "fetch_and_op" && s != 8) continue;
      // A plain memcpy of the same size, interleaved with the others: the
      // bandwidth reference of this row.
      std::vector<Timed> cols;
      cols.push_back({"memcpy",
                      [&u, s] {
                        std::memcpy(u.dst.data(), u.src.data(), static_cast<std::size_t>(s));
                        asm volatile("" ::: "memory");
                      },
                      {}});
      mpi_columns(u, op, s, cols);
      locus_columns(u, op, s, cols);
      time_interleaved(p, s, cols);
      Row row{op, s, {}};
      for (auto& c : cols) row.us[c.column] = locus::median(std::move(c.us));
      rows.push_back(std::move(row));
    }
  return rows;
}

bench::Table table(const std::vector<Row>& rows, const std::string& placement) {
  bench::Table t;
  t.data_column("placement");
  t.column("op", "op", "%-13s").column("bytes", "bytes", " %9ld");
  const char* formats[] = {" %11.3f", " %12.3f", " %11.3f", " %10.3f", " %10.4f"};
  for (std::size_t i = 0; i < kColumns.size(); ++i) t.column(kColumns[i] + "_us", kColumns[i], formats[i]);
  t.column("memcpy_us", "memcpy", " %9.4f")
      .data_column("cpu_atomic_us")
      .column("ratio_allocate_over_locus_on", "alloc/on", " %10.1f")
      .column("ratio_locus_off_over_dynamic", "dyn/off", " %10.3f")
      .column("mb_per_s_locus_on", "MB/s_on", " %10.0f", bench::Table::Shown::text_only)
      .column("cpu_atomic_note", "", "%s", bench::Table::Shown::text_only);
  for (const auto& r : rows) {
    auto get = [&](const std::string& col) { return r.us.count(col) ? r.us.at(col) : NAN; };
    std::vector<bench::Cell> cells = {placement, r.op, r.size};
    for (const auto& col : kColumns) cells.emplace_back(get(col));
    char note[64] = "";
    if (r.us.count("cpu_atomic"))
      std::snprintf(note, sizeof note, "   (cpu_atomic %.4f us)", get("cpu_atomic"));
    for (bench::Cell c : {bench::Cell(get("memcpy")), bench::Cell(get("cpu_atomic")),
                          bench::Cell(get("mpi_allocate") / get("locus_on")),
                          bench::Cell(get("locus_off") / get("mpi_dynamic")),
                          bench::Cell(static_cast<double>(r.size) / get("locus_on")), bench::Cell(note)})
      cells.push_back(c);
    t.row(cells);
  }
  return t;
}

const Row* find(const std::vector<Row>& rows, const std::string& op, long s) {
  for (const auto& r : rows)
    if (r.op == op && r.size == s) return &r;
  return nullptr;
}

std::string rounded(double v, double scale) {
  return locus::Tree::shortest(std::round(v * scale) / scale);
}

// Fine-grained goals on one node: an 8 B blocking get and put within 1.5x
// of a memcpy of 8 B, fetch_and_op within 2x of a CPU atomic, large
// transfers at 90 % of memcpy's bandwidth.
void same_node_goals(const std::vector<Row>& rows, bench::Report& r) {
  for (const char* op : {"get", "put"})
    if (const Row* row = find(rows, op, 8)) {
      const double q = row->us.at("locus_on") / row->us.at("memcpy");
      r.text(std::string(op) + "_8B_locus_on_over_memcpy", rounded(q, 100));
      r.goal(std::string(op) + "_8B_goal_le_1.5x_memcpy", q <= 1.5);
    }
  if (const Row* row = find(rows, "fetch_and_op", 8); row && row->us.count("cpu_atomic")) {
    const double q = row->us.at("locus_on") / row->us.at("cpu_atomic");
    r.text("fetch_and_op_locus_on_over_cpu_atomic", rounded(q, 100));
    r.goal("fetch_and_op_goal_le_2x_cpu_atomic", q <= 2.0);
  }
  double worst = HUGE_VAL;
  for (const auto& row : rows)
    if ((row.op == "get" || row.op == "put") && row.size >= (1 << 20))
      worst = std::min(worst, row.us.at("memcpy") / row.us.at("locus_on"));
  if (std::isfinite(worst)) {
    r.text("min_locus_on_bandwidth_fraction_of_memcpy_1MiB_up", rounded(worst, 1000));
    r.goal("bandwidth_goal_90pct", worst >= 0.9);
  }
}

// Core v2's goals between nodes: locus within 1.1x of MPI on an
// MPI_Win_allocate window at 8 B, within 1.2x from 64 KiB up. Single sizes
// swing +-25 % here (locus_off and locus_on take the same path between
// nodes and differ by that much), so the verdict is on the median ratio
// over the sizes, and the worst size is shown next to it.
void inter_node_goals(const std::vector<Row>& rows, bench::Report& r) {
  std::vector<double> small, large;
  for (const auto& row : rows) {
    if (row.op != "get" && row.op != "put") continue;
    double q = row.us.at("locus_on") / row.us.at("mpi_allocate");
    if (row.size == 8) small.push_back(q);
    if (row.size >= (64 << 10)) large.push_back(q);
  }
  if (!small.empty()) {
    double worst = *std::max_element(small.begin(), small.end());
    r.text("locus_on_over_mpi_allocate_8B_worst_of_get_put", rounded(worst, 100));
    r.goal("goal_8B_within_1.1x", worst <= 1.1);
  }
  if (!large.empty()) {
    double worst = *std::max_element(large.begin(), large.end());
    r.text("locus_on_over_mpi_allocate_64KiB_up_median", rounded(locus::median(large), 100));
    r.text("locus_on_over_mpi_allocate_64KiB_up_worst_size", rounded(worst, 100));
    r.goal("goal_64KiB_up_within_1.2x", locus::median(large) <= 1.2);
  }
}

// The table, its CSV and JSON, and the goals of the issue measured in
// this run (rank 0).
void report(const Context& ctx, const Params& p, const Setup& u, const std::vector<Row>& rows) {
  const std::string placement = u.same_node ? "same-node" : "inter-node";
  std::printf("# locus latency benchmark: unit %d -> unit %d (%s%s), median of %ld repeats\n", 0, u.target,
              placement.c_str(), ctx.runtime().node_map().emulated_size ? ", emulated nodes" : "", p.repeats);
  if (ctx.runtime().node_map().emulated_size)
    std::printf(
        "# note: emulated nodes are locus's view only: the raw MPI windows (mpi_*) still reach the\n"
        "# target through shared memory. For both on the network path run with MPICH's\n"
        "# MPIR_CVAR_NOLOCAL=1 (./locus bench latency does).\n");
  std::printf("# columns measured interleaved: each repeat times every column once, in turn\n");
  std::printf("# microseconds per blocking operation (flushed); bandwidth in MB/s for locus_on\n");
  const bench::Table t = table(rows, placement);
  t.print();
  bench::Report r(ctx.config(), "latency", "_" + placement);
  r.table(t);
  r.text("placement", placement);
  r.paths();
  r.goals();
  if (const Row* g8 = find(rows, "get", 8)) {
    double speedup = g8->us.at("mpi_allocate") / g8->us.at("locus_on");
    double overhead = g8->us.at("locus_off") / g8->us.at("mpi_dynamic");
    r.text("get_8B_mpi_allocate_over_locus_on", rounded(speedup, 10));
    if (u.same_node) r.goal("get_8B_goal_20x", speedup >= 20);
    r.text("get_8B_locus_off_over_mpi_dynamic", rounded(overhead, 1000));
    r.goal("get_8B_goal_within_10pct", overhead <= 1.10);
  }
  if (u.same_node) same_node_goals(rows, r);
  if (!u.same_node) inter_node_goals(rows, r);
  r.finish();
}

int run(Context& ctx) {
  const auto& c = ctx.config();
  Params p{c.integer("bench.min_size"), c.integer("bench.max_size"), c.integer("bench.iterations"),
           c.integer("bench.warmup"),   c.integer("bench.repeats"),  c.integer("bench.volume_mib") << 20};
  locus::collective_require(ctx.comm(), ctx.size() >= 2,
                            "latency: needs at least 2 ranks (origin and target)");
  locus::Team& world = ctx.runtime().world();
  const std::size_t bytes = static_cast<std::size_t>(p.max_size);
  Setup u;
  u.target = ctx.size() - 1;
  u.same_node = world.same_node(u.target);
  u.src.assign(bytes, 1);
  u.dst.assign(bytes, 0);
  // All windows at once (plain MPI ones, then the locus segment), so the
  // columns of one size can be measured interleaved.
  for (const std::string kind : {"create", "allocate", "dynamic"})
    u.windows.push_back(std::make_unique<MpiWindow>(kind, world.comm(), bytes, u.target));
  locus::Array<char> seg(world, bytes);
  u.seg = &seg;
  std::memset(seg.data(), 0, bytes);
  locus::barrier(world);
  std::vector<Row> rows;
  if (ctx.rank() == 0) rows = measure(p, u);
  locus::barrier(world);
  u.windows.clear();
  if (ctx.rank() == 0) report(ctx, p, u, rows);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, app_info(), run);
}
