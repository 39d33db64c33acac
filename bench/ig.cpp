// Index-gather (Bale's `ig`): a table of 64-bit words spread over the
// units; every unit reads M words at random global indices into a local
// array. Variants, one run, interleaved repeats:
//   raw               the limit: loads from one MPI shared-memory table, no
//                     library in the loop (only when every rank shares one
//                     real node)
//   mpi-get           MPI_Get of one word per index on an MPI_Win_allocate
//                     window (MPI_Win_create between emulated nodes:
//                     shared_table.hpp), MPI_Win_flush_all per look-ahead batch
//   alltoallv         two-sided: indices bucketed per owner, MPI_Alltoall of
//                     the counts, MPI_Alltoallv of the indices, the owners
//                     look them up, MPI_Alltoallv of the values back
//   locus             locus::get_nbi per index (inline loads on one node,
//                     MPI_Get between nodes), flush per look-ahead batch
//   locus-aggregated  get_nbi on a table with aggregated atomics
//                     (comm.atomics: aggregate): requests to other nodes
//                     travel in batches, the owner answers in batches
//   locus-gather      one locus::gather_nbi of every index on the same
//                     table: the call buckets the indices itself (loads on
//                     my node, requests in the same batches to others)
// Every variant's result is checked word by word (table[g] is a function of
// g). The rate is million indices gathered per second over all units.
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <map>
#include <vector>

#include "harness.hpp"
#include "locus/app.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"
#include "locus/wait.hpp"
#include "shared_table.hpp"

namespace {

using u64 = std::uint64_t;

u64 word_of(u64 g) {
  return (g + 1) * 0x9E3779B97F4A7C15ull;
}

u64 mix(u64 x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "ig";
  app.description =
      "Index-gather (Bale's ig): every unit reads M random words of a distributed table; raw shared-memory\n"
      "loads, MPI_Get per word, MPI_Alltoallv, locus get_nbi (direct), locus aggregated and\n"
      "locus::gather_nbi, verified.";
  app.schema.integer("bench.log2_local", 18, 4, 30, "table words per unit, as a power of two")
      .integer("bench.log2_requests", 18, 4, 28, "indices each unit gathers, as a power of two")
      .integer("bench.lookahead", 1024, 1, 1 << 20, "gets in flight per unit before a flush (mpi-get, locus)")
      .integer("bench.repeats", 3, 1, 99, "timed runs per variant (interleaved); the median is reported")
      .string("bench.variants", "raw,mpi-get,alltoallv,locus,locus-aggregated,locus-gather",
              "comma-separated variants to run (raw needs every rank on one real node)");
  bench::add_keys(app.schema, "ig");
  return app;
}

const std::vector<std::string> kVariants = {"raw",   "mpi-get",          "alltoallv",
                                            "locus", "locus-aggregated", "locus-gather"};

// The table (its words a function of their global index) and my requests.
struct Problem {
  u64 local = 0, total = 0;
  int shift = 0;
  u64 lookahead = 0;
  long repeats = 0;
  std::vector<u64> index;  // my requests (global indices)
};

Problem read_problem(const locus::Config& c, int units, int me) {
  Problem s;
  s.shift = static_cast<int>(c.integer("bench.log2_local"));
  s.local = u64(1) << s.shift;
  s.total = s.local * static_cast<u64>(units);
  s.lookahead = static_cast<u64>(c.integer("bench.lookahead"));
  s.repeats = c.integer("bench.repeats");
  const u64 m = u64(1) << c.integer("bench.log2_requests");
  s.index.resize(m);
  for (u64 i = 0; i < m; ++i)
    s.index[i] = mix(i * static_cast<u64>(units) + static_cast<u64>(me) + 12345) % s.total;
  return s;
}

// The same table in every form a variant reads, filled with my words.
struct Tables {
  Tables(locus::Team& world, const Problem& s)
      : mpi(world.comm(), s.local, locus::Runtime::current().node_map().emulated_size > 0),
        raw(world.comm(), s.local),
        own(s.local),
        table(world, s.local),
        agg(world, s.local, locus::AsyncHint::follow, locus::AtomicMode::aggregate) {
    const u64 first = static_cast<u64>(world.rank()) * s.local;
    for (u64* t : {mpi.data(), raw.data(), own.data(), table.data(), agg.data()})
      if (t)
        for (u64 i = 0; i < s.local; ++i) t[i] = word_of(first + i);
    MPI_Win_sync(mpi.win());
    raw.sync();
    locus::barrier(world);
  }
  bench::WindowTable<u64> mpi;
  bench::NodeTable<u64> raw;
  std::vector<u64> own;
  locus::Array<u64> table, agg;
};

// The variants' gathers into `out`, one function each.
class Gathers {
 public:
  Gathers(locus::Team& world, const Problem& s, Tables& t, std::vector<u64>& out)
      : world_(world), s_(s), t_(t), out_(out), P_(static_cast<std::size_t>(world.size())) {}

  std::function<void()> operator[](const std::string& name) {
    if (name == "raw") return [this] { raw(); };
    if (name == "mpi-get") return [this] { mpi_get(); };
    if (name == "alltoallv") return [this] { alltoallv(); };
    if (name == "locus") return [this] { locus_gather(t_.table, true); };
    if (name == "locus-gather")
      return [this] {
        locus::gather_nbi(out_.data(), t_.agg.gptr(), s_.local, s_.index.data(), out_.size());
        locus::flush(world_);
      };
    return [this] { locus_gather(t_.agg, false); };
  }

 private:
  u64 owner(u64 g) const { return g >> s_.shift; }
  u64 offset(u64 g) const { return g & (s_.local - 1); }

  void raw() {
    for (std::size_t i = 0; i < out_.size(); ++i)
      out_[i] = t_.raw.parts()[owner(s_.index[i])][offset(s_.index[i])];
  }

  void mpi_get() {
    for (std::size_t i = 0; i < out_.size(); ++i) {
      const u64 g = s_.index[i];
      MPI_Get(&out_[i], 1, MPI_UINT64_T, static_cast<int>(owner(g)), static_cast<MPI_Aint>(offset(g)), 1,
              MPI_UINT64_T, t_.mpi.win());
      if ((i + 1) % s_.lookahead == 0) MPI_Win_flush_all(t_.mpi.win());
    }
    MPI_Win_flush_all(t_.mpi.win());
  }

  // Indices bucketed per owner, the counts and the indices exchanged, the
  // owners look them up, the values sent back.
  void alltoallv() {
    const u64 m = out_.size();
    scount_.assign(P_, 0);
    rcount_.assign(P_, 0);
    sdisp_.assign(P_, 0);
    rdisp_.assign(P_, 0);
    sidx_.resize(m);
    sval_.resize(m);
    slot_of_.resize(m);
    for (u64 i = 0; i < m; ++i) ++scount_[owner(s_.index[i])];
    for (std::size_t p = 0, d = 0; p < P_; ++p) sdisp_[p] = static_cast<int>(d), d += scount_[p];
    std::vector<int> fillpos = sdisp_;
    for (u64 i = 0; i < m; ++i) {
      const auto at = static_cast<u64>(fillpos[owner(s_.index[i])]++);
      sidx_[at] = offset(s_.index[i]);
      slot_of_[at] = i;
    }
    MPI_Alltoall(scount_.data(), 1, MPI_INT, rcount_.data(), 1, MPI_INT, world_.comm());
    int n = 0;
    for (std::size_t p = 0; p < P_; ++p) rdisp_[p] = n, n += rcount_[p];
    ridx_.resize(static_cast<std::size_t>(n));
    rval_.resize(static_cast<std::size_t>(n));
    MPI_Alltoallv(sidx_.data(), scount_.data(), sdisp_.data(), MPI_UINT64_T, ridx_.data(), rcount_.data(),
                  rdisp_.data(), MPI_UINT64_T, world_.comm());
    for (std::size_t k = 0; k < ridx_.size(); ++k) rval_[k] = t_.own[ridx_[k]];
    MPI_Alltoallv(rval_.data(), rcount_.data(), rdisp_.data(), MPI_UINT64_T, sval_.data(), scount_.data(),
                  sdisp_.data(), MPI_UINT64_T, world_.comm());
    for (u64 k = 0; k < m; ++k) out_[slot_of_[k]] = sval_[k];
  }

  void locus_gather(const locus::Array<u64>& t, bool batches) {
    const locus::GlobalPtr<u64> base = t.gptr();
    // A countdown, not (i + 1) % lookahead: a 64-bit division per get costs
    // more than an inline same-node get.
    std::size_t left = s_.lookahead;
    for (std::size_t i = 0; i < out_.size(); ++i) {
      const u64 g = s_.index[i];
      locus::get_nbi(&out_[i], base.at(static_cast<int>(owner(g))) + static_cast<std::ptrdiff_t>(offset(g)),
                     1);
      if (batches && --left == 0) {
        locus::flush(world_);
        left = s_.lookahead;
      }
    }
    locus::flush(world_);
  }

  locus::Team& world_;
  const Problem& s_;
  Tables& t_;
  std::vector<u64>& out_;
  std::size_t P_;
  // alltoallv's buffers, kept between runs
  std::vector<int> scount_, rcount_, sdisp_, rdisp_;
  std::vector<u64> sidx_, ridx_, rval_, sval_, slot_of_;
};

struct Measured {
  bench::Samples seconds;
  std::map<std::string, long> wrong;  // words gathered wrong (first repeat), over all units
};

// Every variant timed in interleaved repeats (the slowest unit's time); the
// first repeat's result checked word by word.
Measured measure(locus::Team& world, const Problem& s, const std::vector<std::string>& names,
                 Tables& tables) {
  std::vector<u64> out(s.index.size());
  Gathers gathers(world, s, tables, out);
  Measured m;
  m.seconds = bench::interleave(s.repeats, names, [&](const std::string& name, long rep) {
    const std::function<void()> gather = gathers[name];
    std::fill(out.begin(), out.end(), 0);
    locus::barrier(world);
    const double t0 = MPI_Wtime();
    gather();
    locus::barrier(world);  // applies aggregated requests until every unit is done
    const double t = bench::max_over_ranks(world.comm(), MPI_Wtime() - t0);
    if (rep == 0) {
      long bad = 0;
      for (std::size_t i = 0; i < out.size(); ++i) bad += out[i] != word_of(s.index[i]);
      locus::allreduce_yielding(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, world.comm());
      m.wrong[name] = bad;
    }
    return t;
  });
  return m;
}

// The table, the CSV and JSON, the summary with its ratios and goals (rank 0).
int report(locus::Context& ctx, const Problem& s, const std::vector<std::string>& names, const Measured& m) {
  const auto& c = ctx.config();
  const int P = ctx.runtime().world().size();
  const bool same_node = bench::all_same_node(ctx.runtime().world());
  const bool over_subscribed = !bench::oversubscription_note().empty();
  std::printf(
      "# locus index-gather (Bale ig): table 2^%ld words per unit x %d units, 2^%ld requests per unit, "
      "look-ahead %" PRIu64 ", %s%s%s\n",
      c.integer("bench.log2_local"), P, c.integer("bench.log2_requests"), s.lookahead,
      same_node ? "same node" : "multi-node",
      ctx.runtime().node_map().emulated_size ? " (emulated nodes)" : "",
      bench::oversubscription_note().c_str());
  std::map<std::string, double> rate;  // million indices gathered per second, all units
  for (const auto& n : names)
    rate[n] = static_cast<double>(s.index.size()) * P / locus::median(m.seconds.at(n)) / 1e6;
  bench::Table t;
  t.data_column("placement").data_column("units");
  t.column("variant", "variant", "%-17s")
      .column("mindex_per_s", "Mindex/s", " %12.2f")
      .column("over_raw", "/raw", " %8s")
      .column("over_alltoallv", "/alltoallv", " %10s")
      .column("over_mpi_get", "/mpi-get", " %8s")
      .column("wrong", "wrong words", " %12ld")
      .column("verdict", "verdict", "%s", bench::Table::Shown::data_only)
      .column("verdict_text", "verdict", "  %s", bench::Table::Shown::text_only);
  bool failed = false;
  for (const auto& n : names) {
    const bool ok = m.wrong.at(n) == 0;
    failed = failed || !ok;
    t.row({same_node ? "same-node" : "multi-node", P, n, rate[n],
           bench::Cell::ratio(bench::ratio(rate, n, "raw")),
           bench::Cell::ratio(bench::ratio(rate, n, "alltoallv")),
           bench::Cell::ratio(bench::ratio(rate, n, "mpi-get")), m.wrong.at(n), ok ? "PASS" : "FAIL",
           ok ? "PASS (every word checked)" : "FAIL"});
  }
  t.print();
  bench::Report r(c, "ig");
  r.table(t);
  r.paths();
  r.text("over_subscribed", over_subscribed ? "yes" : "no");
  for (const char* v : {"locus", "locus-aggregated", "locus-gather"})
    for (const char* b : {"raw", "alltoallv", "mpi-get"})
      if (rate.count(v) && rate.count(b)) r.figure(std::string(v) + "_over_" + b, bench::ratio(rate, v, b));
  if (!over_subscribed) {
    r.goals();
    if (same_node && rate.count("locus") && rate.count("raw"))
      r.goal("goal_locus_ge_half_raw", bench::ratio(rate, "locus", "raw") >= 0.5);
    // Aggregated: the better of get_nbi per index and gather_nbi (both
    // travel in the same batches), named.
    const std::string best = bench::best_of(rate, {"locus-aggregated", "locus-gather"});
    if (!same_node && !best.empty() && rate.count("alltoallv")) {
      r.text("aggregated_best", best);
      r.goal("goal_aggregated_ge_alltoallv", bench::ratio(rate, best, "alltoallv") >= 1.0);
    }
  }
  r.verification(!failed);
  r.finish();
  return failed ? 1 : 0;
}

int run(locus::Context& ctx) {
  locus::Team& world = ctx.runtime().world();
  const Problem s = read_problem(ctx.config(), world.size(), world.rank());
  Tables tables(world, s);
  const std::vector<std::string> names =
      bench::chosen_variants(ctx, "bench.variants", kVariants, tables.raw.available());
  const Measured m = measure(world, s, names, tables);
  return ctx.rank() == 0 ? report(ctx, s, names, m) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, app_info(), run);
}
