// Redirection calibration (./locus bench calibrate; Casper's offline
// preprocessing). For each operation kind -- get, put, accumulate,
// fetch-and-op; contiguous and strided; blocking and non-blocking; every
// unit to the next one (all-to-all) or every unit to node 0 (all-to-one-
// node) -- every unit alternates a computation without MPI calls with a
// burst of operations, for a sweep of computation lengths, once with
// redirection off and once on (interleaved), measuring the time per
// iteration and the communication ratio CR (time in the burst over the
// iteration's time) in each mode. Redirection wins when the targets
// compute long (a direct operation waits for the target to enter MPI),
// loses when they communicate (the ghost serves every unit of its node and
// takes CPU time). The crossover of a kind is the computation length at
// which both take the same time (interpolated); the CRs there are the
// thresholds as the auto mode measures them: HIGH is the CR with
// redirection on (above it, switch off), LOW the CR with it off (below
// it, switch on). The file holds the medians over the kinds.
//
// Run it as the apps run with redirection: emulated or real nodes of a unit
// and at least one progress process (the driver starts 4 ranks, nodes of 2).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "harness.hpp"
#include "locus/app.hpp"
#include "locus/async.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"

namespace {

using locus::Context;

locus::AppInfo info() {
  locus::AppInfo app;
  app.name = "calibrate";
  app.description =
      "redirection calibration: the communication ratio at which redirected and direct operations "
      "take the same time, per operation kind; writes a thresholds file for comm.adapt.thresholds";
  auto& s = app.schema;
  s.string("bench.compute_us", "0,10,30,100,300,1000,3000,10000",
           "computation lengths of the sweep (microseconds)")
      .integer("bench.ops", 16, 1, 1 << 20, "operations per burst")
      .integer("bench.bytes", 8192, 8, 1 << 24, "bytes per get/put/accumulate (fetch-and-op: 8)")
      .integer("bench.iterations", 40, 1, 1 << 20, "compute + burst iterations per point and mode")
      .string("bench.kinds", "get,put,acc,fop", "operation kinds")
      .string("bench.thresholds", "", "write the thresholds file here (empty: do not write)")
      .real("bench.margin", 0.1, 0.0, 0.5, "the least hysteresis: high - low is at least this");
  bench::add_keys(s, "calibrate");
  return app;
}

// Computes for `us` microseconds without entering MPI.
void compute(double us) {
  if (us <= 0) return;
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<long>(us * 1000));
  volatile double x = 1.0;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 64; ++i) x = x * 1.0000001 + 1e-9;
}

struct Kind {
  std::string op;  // get, put, acc, fop
  bool strided, blocking, to_one_node;
  std::string name() const {
    return op +
           (op == "fop" ? ""
            : strided   ? "_strided"
                        : "_contig") +
           (blocking ? "_blocking" : "_nonblocking") + (to_one_node ? "_to_one_node" : "_all_to_all");
  }
};

struct Point {
  double compute_us, cr_off, cr_on, t_off, t_on;
};

// Where redirection starts to win for one kind: the computation length and
// the CRs there.
struct Crossing {
  std::string kind;
  double compute_us, low, high;
};

std::vector<Kind> read_kinds(const locus::Config& c) {
  std::vector<Kind> kinds;
  for (const auto& op : bench::split_list(c.string("bench.kinds")))
    for (bool strided : {false, true})
      for (bool blocking : {true, false})
        for (bool one : {false, true}) {
          if (op == "fop" && strided) continue;
          if (op != "get" && op != "put" && op != "acc" && op != "fop")
            throw locus::CollectiveError(c.locate("bench.kinds") + ": unknown kind " + op);
          kinds.push_back({op, strided, blocking, one});
        }
  return kinds;
}

// A burst of `ops` operations of one kind from this unit, and the
// compute + burst iterations of one point of the sweep.
class Bursts {
 public:
  Bursts(locus::Team& w, long ops, std::size_t n, long iterations)
      : w_(w),
        ops_(ops),
        n_(n),
        iterations_(iterations),
        seg_(w, 2 * n * static_cast<std::size_t>(ops) + 16),  // room for a strided layout (stride 2)
        counters_(w, 1),
        buf_(2 * n * static_cast<std::size_t>(ops) + 16, 1.0) {}

  // Iterations of compute + burst with redirection `on`: (iteration time of
  // the slowest unit, mean CR over the units).
  std::pair<double, double> measure(const Kind& k, double us, bool on) {
    locus::set_async(w_, on);
    double in_comm = 0;
    const double t0 = MPI_Wtime();
    for (long it = 0; it < iterations_; ++it) {
      compute(us);
      const double b = MPI_Wtime();
      burst(k);
      in_comm += MPI_Wtime() - b;
    }
    const double t = (MPI_Wtime() - t0) / double(iterations_);
    locus::barrier(w_);
    const double tmax = bench::max_over_ranks(w_.comm(), t);
    double cr = in_comm / double(iterations_) / t, cr_sum = 0;
    MPI_Allreduce(&cr, &cr_sum, 1, MPI_DOUBLE, MPI_SUM, w_.comm());
    return std::make_pair(tmax, cr_sum / w_.size());
  }

 private:
  void burst(const Kind& k) {
    const int target = k.to_one_node ? 0 : (w_.rank() + 1) % w_.size();
    const locus::Layout dense{n_, 1, 0, 1, 0}, spaced{1, n_, 2, 1, 0}, packed{1, n_, 1, 1, 0};
    std::vector<locus::Handle> hs;
    for (long i = 0; i < ops_; ++i) {
      const auto off = static_cast<std::size_t>(i) * 2 * n_;
      auto dst = seg_.gptr(target) + off;
      double* local = buf_.data() + off;
      const locus::Layout& rl = k.strided ? spaced : dense;
      const locus::Layout& ll = k.strided ? packed : dense;
      if (k.op == "fop") {
        locus::fetch_and_op(counters_.gptr(target), std::int64_t{1}, locus::Op::sum);
      } else if (k.op == "acc") {
        if (k.blocking)
          locus::accumulate(dst, rl, local, ll, locus::Op::sum);
        else
          hs.push_back(locus::accumulate_async(dst, rl, local, ll, locus::Op::sum));
      } else if (k.op == "get") {
        if (k.blocking)
          locus::get(local, ll, dst, rl, locus::Route::local);
        else
          hs.push_back(locus::get_async(local, ll, dst, rl, locus::Route::local));
      } else {
        if (k.blocking)
          locus::put(dst, rl, local, ll, locus::Route::local);
        else
          hs.push_back(locus::put_async(dst, rl, local, ll, locus::Route::local));
      }
    }
    locus::wait_all(hs);
    if (k.op == "put") locus::flush(w_);
  }

  locus::Team& w_;
  long ops_;
  std::size_t n_;
  long iterations_;
  locus::Array<double> seg_;
  locus::Array<std::int64_t> counters_;
  std::vector<double> buf_;
};

// Along the computation length (the sweep's order): the last change from
// "off wins" to "on wins"; interpolated on log(t_on / t_off).
Crossing crossing(const std::string& kind, const std::vector<Point>& pts) {
  const auto gain = [](const Point& p) { return std::log(p.t_on / p.t_off); };  // < 0: on wins
  if (std::all_of(pts.begin(), pts.end(), [&](const Point& p) { return gain(p) < 0; }))
    return {kind, pts.front().compute_us, pts.front().cr_off, pts.front().cr_on};  // on always wins
  for (std::size_t i = pts.size() - 1; i > 0; --i)
    if (gain(pts[i - 1]) >= 0 && gain(pts[i]) < 0) {
      const Point &lo = pts[i - 1], &hi = pts[i];
      const double f = gain(lo) / (gain(lo) - gain(hi));
      return {kind, lo.compute_us + f * (hi.compute_us - lo.compute_us),
              lo.cr_off + f * (hi.cr_off - lo.cr_off), lo.cr_on + f * (hi.cr_on - lo.cr_on)};
    }
  return {kind, pts.back().compute_us, pts.back().cr_off, pts.back().cr_on};  // on never wins here
}

// The medians over the kinds, at least `margin` of hysteresis between them.
std::pair<double, double> thresholds(const std::vector<Crossing>& crossings, double margin) {
  std::vector<double> lows, highs;
  for (const auto& x : crossings) lows.push_back(x.low), highs.push_back(x.high);
  std::sort(lows.begin(), lows.end());
  std::sort(highs.begin(), highs.end());
  double low = std::clamp(lows[lows.size() / 2], 0.01, 0.95),
         high = std::clamp(highs[highs.size() / 2], 0.02, 0.99);
  if (high - low < margin) {
    const double mid = (low + high) / 2;
    low = std::max(0.01, mid - margin / 2);
    high = std::min(0.99, mid + margin / 2);
  }
  return {low, high};
}

void write_thresholds(const std::string& file, const Context& ctx, double low, double high,
                      const std::vector<Crossing>& crossings) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::ofstream f(file);
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  f << "# locus redirection thresholds (comm.adapt.thresholds) for " << host << ", written " << date << "\n"
    << "# by: ./locus bench calibrate   (" << ctx.runtime().world().size() << " units, "
    << ctx.runtime().progress_description() << bench::oversubscription_note() << ")\n"
    << "# auto mode: redirection on below low, off above high. Per operation kind: the computation\n"
    << "# length (us) where redirected and direct took the same time, and the CRs there.\n"
    << "low: " << low << "\nhigh: " << high << "\ncrossovers:\n";
  for (const auto& x : crossings)
    f << "  " << x.kind << ": {compute_us: " << x.compute_us << ", low: " << x.low << ", high: " << x.high
      << "}\n";
  if (!f) throw locus::Error("calibrate: cannot write " + file);
}

bench::Table points_table() {
  bench::Table t;
  t.column("kind", "kind", "%-40s")
      .column("compute_us", "compute_us", " %10.0f")
      .column("cr_off", "CR_off", " %8.3f")
      .column("cr_on", "CR_on", " %8.3f")
      .column("t_off_us", "t_off_us", " %12.1f")
      .column("t_on_us", "t_on_us", " %12.1f")
      .column("on_over_off", "on/off", " %8.2f");
  return t;
}

}  // namespace

int run(Context& ctx) {
  const auto& c = ctx.config();
  locus::Team& w = ctx.runtime().world();
  if (!w.served() || w.size() < 2)
    throw locus::CollectiveError(
        "calibrate: needs at least 2 units and progress processes (e.g. 4 ranks with runtime.node_size=2 and "
        "runtime.progress.processes_per_node=1)");
  std::vector<double> sweep;
  for (const auto& s : bench::split_list(c.string("bench.compute_us"))) sweep.push_back(std::stod(s));
  const long ops = c.integer("bench.ops"), iters = c.integer("bench.iterations");
  const std::size_t n = static_cast<std::size_t>(c.integer("bench.bytes")) / sizeof(double);
  const std::vector<Kind> kinds = read_kinds(c);
  Bursts bursts(w, ops, n, iters);
  const bool root = ctx.rank() == 0;
  bench::Table table = points_table();
  if (root) {
    std::printf(
        "# redirection calibration: %d units, %zu B per operation, %ld per burst, %ld iterations per point; "
        "%s%s\n",
        w.size(), n * sizeof(double), ops, iters, ctx.runtime().progress_description().c_str(),
        bench::oversubscription_note().c_str());
    table.print_header();
  }
  std::vector<Crossing> crossings;
  for (const Kind& k : kinds) {
    std::vector<Point> pts;
    for (double us : sweep) {
      const auto off = bursts.measure(k, us, false);
      const auto on = bursts.measure(k, us, true);
      pts.push_back({us, off.second, on.second, off.first, on.first});
      table.row({k.name(), us, off.second, on.second, off.first * 1e6, on.first * 1e6, on.first / off.first});
      if (root) table.print_row(table.rows() - 1);
    }
    crossings.push_back(crossing(k.name(), pts));
    const Crossing& x = crossings.back();
    if (root)
      std::printf("%-40s crossover at %.0f us of computation: CR off %.3f (low), CR on %.3f (high)\n",
                  k.name().c_str(), x.compute_us, x.low, x.high);
  }
  locus::set_async(w, false);
  const double margin = c.real("bench.margin");
  const auto [low, high] = thresholds(crossings, margin);
  if (!root) return 0;
  std::printf("\nmedians over %zu kinds: thresholds low %.3f, high %.3f (hysteresis at least %.2f)\n",
              crossings.size(), low, high, margin);
  const std::string file = c.string("bench.thresholds");
  if (!file.empty()) {
    write_thresholds(file, ctx, low, high, crossings);
    std::printf("wrote %s\n", file.c_str());
  }
  bench::Report r(c, "calibrate");
  r.table(table);
  r.paths();
  r.figure("low", low);
  r.figure("high", high);
  r.figure("margin", margin, "%.2f");
  r.text("thresholds_file", file.empty() ? "none" : file);
  r.section("crossovers");
  for (const auto& x : crossings) r.figure(x.kind + "_compute_us", x.compute_us, "%.0f");
  r.end_section();
  r.finish();
  return 0;
}

int main(int argc, char** argv) {
  return locus::run(argc, argv, info(), run);
}
