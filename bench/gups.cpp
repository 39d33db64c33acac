// HPCC RandomAccess (GUPS) on a table of 64-bit words spread over the
// units, with HPCC's random stream (polynomial 7, HPCC_starts jumps), four
// updates per table word, T[k] ^= r. Variants, one run, interleaved:
//   raw               the limit: CPU atomics (lock xor) on one MPI
//                     shared-memory table, no library in the loop (only
//                     when every rank shares one real node): with the
//                     parts contiguous, T[r & mask] ^= r on the whole
//                     table, the loop of a standalone limit program (as
//                     ../shared/peers/gups_limit.c); the run also times
//                     that standalone loop on its own table (best of 3,
//                     as the program does) and prints raw over it
//   mpi               MPI_Accumulate(BXOR) on an MPI_Win_allocate window
//                     (MPI_Win_create between emulated nodes: shared_table.hpp),
//                     MPI_Win_flush_all after every look-ahead batch
//   hpcc              two-sided with HPCC's buckets: updates bucketed per
//                     destination rank, a full bucket sent with MPI_Isend
//                     (values only), incoming buckets applied while
//                     generating, a done message at the end. Less MPI in
//                     the loop than HPCC 1.5.0's own (the receive tested
//                     every 16 updates, not before each; a send in flight
//                     per destination): 2.5-3x its rate on a 2-core host,
//                     a stronger floor. HPCC's loop as it is runs in its
//                     own MPI job (bench/hpcc_ra.cpp, the peer users run);
//                     ./locus bench gups alternates the two
//   locus             locus::atomic_update(Op::bxor), handle-free: CPU
//                     atomics inline when the team is on one node, else MPI
//                     accumulates (comm.atomics: mpi), flush per look-ahead
//   locus-handle      locus::accumulate_async + wait_all per batch (a
//                     handle per update: the call before atomic_update)
//   locus-aggregated  atomic_update on a table with aggregated atomics:
//                     same node direct, other nodes in batches of
//                     comm.aggregate.records that the owner applies
//   locus-scatter     locus::update_nbi of each look-ahead batch of updates
//                     (indices and values) on the same table: the call
//                     buckets them itself (HPCC's buckets, in the library)
//   locus-getput      locus get, xor, put (not atomic: DASH's benchmark);
//                     races may lose updates, HPCC allows 1 % of the table
// Verification: the table is compared with the expected one, computed by
// every unit for its own part from the whole stream (so a variant that
// moves nothing fails), and HPCC's check: the updates replayed with the
// same variant must give T[k] == k back. GUPS counts the updates executed.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <map>
#include <vector>

#include "harness.hpp"
#include "hpcc_stream.hpp"
#include "locus/app.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"
#include "locus/wait.hpp"
#include "shared_table.hpp"

namespace {

using bench::hpcc::expected_part;
using bench::hpcc::for_each_update;
using bench::hpcc::init_table;
using bench::hpcc::Table;
using bench::hpcc::u64;

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "gups";
  app.description =
      "HPCC RandomAccess (GUPS): the raw CPU-atomic limit, MPI_Accumulate(BXOR), HPCC's two-sided\n"
      "bucketed algorithm, and locus (handle-free atomics, handles, aggregated batches, get+put), one\n"
      "table, one run, interleaved repeats, verified.";
  app.schema.integer("bench.log2_local", 18, 4, 30, "table words per unit, as a power of two")
      .integer("bench.lookahead", 1024, 1, 1024,
               "updates in flight per unit (HPCC: at most 1024): the flush interval of mpi, locus and "
               "locus-handle, and the bucket size of hpcc")
      .integer("bench.repeats", 3, 1, 99, "timed runs per variant (interleaved); the median is reported")
      .string("bench.variants", "raw,mpi,hpcc,locus,locus-handle,locus-aggregated,locus-scatter,locus-getput",
              "comma-separated variants to run (raw needs every rank on one real node)");
  bench::add_keys(app.schema, "gups");
  return app;
}

struct Variant {
  std::string name;
  u64* data = nullptr;                    // my part
  std::function<void(const Table&)> run;  // one pass of my updates
  bool atomic = true;                     // exact table expected
};

// HPCC MPIRandomAccess's buckets of values per destination rank, sent when
// full with MPI_Isend; incoming buckets applied while generating (tested
// every 16 updates); a zero-length message says "done".
class Buckets {
 public:
  Buckets(MPI_Comm comm, u64 bucket, u64* table) : comm_(comm), bucket_(bucket), table_(table) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    out_.assign(static_cast<std::size_t>(size_), {});
    for (auto& b : out_) b.reserve(bucket);
    sending_.assign(static_cast<std::size_t>(size_), {});
    send_req_.assign(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
    in_.resize(bucket);
  }
  void run(const Table& tb) {
    done_from_ = 0;
    MPI_Irecv(in_.data(), static_cast<int>(bucket_), MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, comm_,
              &recv_);
    u64 polls = 0;
    for_each_update(tb, [&](u64 g, u64 v) {
      const u64 dest = tb.owner(g);
      if (dest == static_cast<u64>(rank_)) {
        table_[tb.offset(g)] ^= v;
      } else {
        auto& b = out_[dest];
        b.push_back(v);
        if (b.size() == bucket_) send(static_cast<int>(dest));
      }
      if ((++polls & 15) == 0) poll(tb, false);
    });
    for (int d = 0; d < size_; ++d)
      if (d != rank_) {
        if (!out_[static_cast<std::size_t>(d)].empty()) send(d);
        wait_send(d);
        MPI_Send(nullptr, 0, MPI_UINT64_T, d, kDone, comm_);
      }
    while (done_from_ < size_ - 1) poll(tb, true);
    MPI_Cancel(&recv_);
    MPI_Wait(&recv_, MPI_STATUS_IGNORE);
  }

 private:
  static constexpr int kData = 1, kDone = 2;
  void wait_send(int d) {
    if (send_req_[static_cast<std::size_t>(d)] != MPI_REQUEST_NULL)
      locus::wait_yielding(send_req_[static_cast<std::size_t>(d)]);
  }
  void send(int d) {
    wait_send(d);
    std::swap(sending_[static_cast<std::size_t>(d)], out_[static_cast<std::size_t>(d)]);
    out_[static_cast<std::size_t>(d)].clear();
    auto& s = sending_[static_cast<std::size_t>(d)];
    MPI_Isend(s.data(), static_cast<int>(s.size()), MPI_UINT64_T, d, kData, comm_,
              &send_req_[static_cast<std::size_t>(d)]);
  }
  void poll(const Table& tb, bool yield) {
    unsigned spins = 0;
    for (;;) {
      int flag = 0;
      MPI_Status st;
      MPI_Test(&recv_, &flag, &st);
      if (!flag) {
        if (yield) locus::relax(spins);
        return;
      }
      if (st.MPI_TAG == kDone) {
        ++done_from_;
      } else {
        int n = 0;
        MPI_Get_count(&st, MPI_UINT64_T, &n);
        for (int i = 0; i < n; ++i)
          table_[tb.offset(tb.index(in_[static_cast<std::size_t>(i)]))] ^= in_[static_cast<std::size_t>(i)];
      }
      MPI_Irecv(in_.data(), static_cast<int>(bucket_), MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, comm_,
                &recv_);
      if (yield) return;
    }
  }
  MPI_Comm comm_;
  u64 bucket_;
  u64* table_;
  int rank_ = 0, size_ = 1, done_from_ = 0;
  std::vector<std::vector<u64>> out_, sending_;
  std::vector<MPI_Request> send_req_;
  std::vector<u64> in_;
  MPI_Request recv_ = MPI_REQUEST_NULL;
};

const std::vector<std::string> kVariants = {
    "raw", "mpi", "hpcc", "locus", "locus-handle", "locus-aggregated", "locus-scatter", "locus-getput"};

Table read_table(const locus::Config& c, const locus::Team& world) {
  Table tb;
  tb.shift = static_cast<int>(c.integer("bench.log2_local"));
  tb.local = u64(1) << tb.shift;
  tb.total = tb.local * static_cast<u64>(world.size());
  tb.mask = (tb.total & (tb.total - 1)) == 0 ? tb.total - 1 : 0;
  tb.rank = world.rank();
  return tb;
}

// Every form of the table a variant updates.
struct Tables {
  Tables(locus::Team& world, const Table& tb, u64 lookahead)
      : mpi(world.comm(), tb.local, locus::Runtime::current().node_map().emulated_size > 0),
        raw(world.comm(), tb.local),
        hpcc(tb.local),
        buckets(world.comm(), lookahead, hpcc.data()),
        table(world, tb.local),
        agg(world, tb.local, locus::AsyncHint::follow, locus::AtomicMode::aggregate) {}
  // Memory synchronisation for every table, then a barrier that also
  // applies aggregated batches (locus::barrier).
  void sync(locus::Team& world) const {
    MPI_Win_sync(mpi.win());
    raw.sync();
    locus::barrier(world);
  }
  bench::WindowTable<u64> mpi;  // the baseline: accumulates flushed per batch
  bench::NodeTable<u64> raw;    // the limit: one shared-memory table on the host, CPU atomics
  std::vector<u64> hpcc;
  Buckets buckets;
  locus::Array<u64> table, agg;
};

// locus-scatter: each look-ahead batch of updates (indices and values)
// in one update_nbi.
Variant scatter_variant(locus::Team& world, Tables& t, u64 lookahead) {
  return {"locus-scatter", t.agg.data(), [&t, &world, lookahead](const Table& tb) {
            std::vector<u64> index, value;
            index.reserve(lookahead);
            value.reserve(lookahead);
            auto scatter = [&] {
              locus::update_nbi(t.agg.gptr(), tb.local, index.data(), value.data(), index.size(),
                                locus::Op::bxor);
              index.clear();
              value.clear();
            };
            for_each_update(tb, [&](u64 g, u64 v) {
              index.push_back(g);
              value.push_back(v);
              if (index.size() == lookahead) scatter();
            });
            scatter();
            locus::flush(world);
          }};
}

// raw: CPU atomics on the node's shared table, no library in the loop.
Variant raw_variant(Tables& t) {
  return {"raw", t.raw.data(), [&t](const Table& tb) {
            if (u64* const whole = tb.mask ? t.raw.contiguous(tb.local) : nullptr) {
              // one array, one mask, one locked xor per update
              for_each_update(tb,
                              [whole](u64 g, u64 v) { __atomic_fetch_xor(whole + g, v, __ATOMIC_RELAXED); });
              return;
            }
            for_each_update(tb, [&](u64 g, u64 v) {
              __atomic_fetch_xor(t.raw.parts()[tb.owner(g)] + tb.offset(g), v, __ATOMIC_RELAXED);
            });
          }};
}

// One pass of my updates per variant, on its own table.
std::vector<Variant> variants(locus::Team& world, Tables& t, u64 lookahead, bool cpu) {
  std::vector<Variant> all;
  all.push_back(raw_variant(t));
  all.push_back({"mpi", t.mpi.data(), [&t, lookahead](const Table& tb) {
                   std::vector<u64> vals(lookahead);
                   u64 k = 0;
                   for_each_update(tb, [&](u64 g, u64 v) {
                     vals[k] = v;
                     MPI_Accumulate(&vals[k], 1, MPI_UINT64_T, static_cast<int>(tb.owner(g)),
                                    static_cast<MPI_Aint>(tb.offset(g)), 1, MPI_UINT64_T, MPI_BXOR,
                                    t.mpi.win());
                     if (++k == lookahead) {
                       MPI_Win_flush_all(t.mpi.win());
                       k = 0;
                     }
                   });
                   MPI_Win_flush_all(t.mpi.win());
                 }});
  all.push_back({"hpcc", t.hpcc.data(), [&t](const Table& tb) { t.buckets.run(tb); }});
  all.push_back({"locus", t.table.data(), [&t, &world, lookahead, cpu](const Table& tb) {
                   const locus::GlobalPtr<u64> base = t.table.gptr();
                   u64 k = 0;
                   for_each_update(tb, [&](u64 g, u64 v) {
                     locus::atomic_update(
                         base.at(static_cast<int>(tb.owner(g))) + static_cast<std::ptrdiff_t>(tb.offset(g)),
                         v, locus::Op::bxor);
                     if (++k == lookahead) {
                       if (!cpu) locus::flush(world);
                       k = 0;
                     }
                   });
                   locus::flush(world);
                 }});
  all.push_back({"locus-handle", t.table.data(), [&t, lookahead](const Table& tb) {
                   std::vector<u64> vals(lookahead);
                   std::vector<locus::Handle> hs;
                   hs.reserve(lookahead);
                   for_each_update(tb, [&](u64 g, u64 v) {
                     vals[hs.size()] = v;
                     auto p = t.table.gptr(static_cast<int>(tb.owner(g))) +
                              static_cast<std::ptrdiff_t>(tb.offset(g));
                     hs.push_back(locus::accumulate_async(p, &vals[hs.size()], 1, locus::Op::bxor));
                     if (hs.size() == lookahead) {
                       locus::wait_all(hs);
                       hs.clear();
                     }
                   });
                   locus::wait_all(hs);
                 }});
  all.push_back({"locus-aggregated", t.agg.data(), [&t, &world](const Table& tb) {
                   const locus::GlobalPtr<u64> base = t.agg.gptr();
                   for_each_update(tb, [&](u64 g, u64 v) {
                     locus::atomic_update(
                         base.at(static_cast<int>(tb.owner(g))) + static_cast<std::ptrdiff_t>(tb.offset(g)),
                         v, locus::Op::bxor);
                   });
                   locus::flush(world);
                 }});
  all.push_back(scatter_variant(world, t, lookahead));
  all.push_back({"locus-getput", t.table.data(),
                 [&t](const Table& tb) {
                   for_each_update(tb, [&](u64 g, u64 v) {
                     auto p = t.table.gptr(static_cast<int>(tb.owner(g))) +
                              static_cast<std::ptrdiff_t>(tb.offset(g));
                     u64 x = 0;
                     locus::get(&x, p, 1);
                     x ^= v;
                     locus::put(p, &x, 1);
                   });
                 },
                 false});
  return all;
}

struct Measured {
  bench::Samples seconds;
  std::map<std::string, long> wrong, replay_wrong;  // words wrong after the updates, after the replay
};

// Every chosen variant timed in interleaved repeats (the slowest unit's
// time); the first repeat checked against the expected table, then
// replayed (HPCC's check: the replay undoes every update).
Measured measure(locus::Team& world, const Table& tb, long repeats, const std::vector<Variant*>& chosen,
                 const Tables& tables) {
  const std::vector<u64> expected = expected_part(tb, world.size());
  std::map<std::string, Variant*> by_name;
  std::vector<std::string> names;
  for (Variant* v : chosen) by_name[v->name] = v, names.push_back(v->name);
  Measured m;
  m.seconds = bench::interleave(repeats, names, [&](const std::string& name, long rep) {
    Variant* v = by_name[name];
    init_table(v->data, tb);
    tables.sync(world);
    const double t0 = MPI_Wtime();
    v->run(tb);
    tables.sync(world);  // every update of every unit is complete
    const double t = bench::max_over_ranks(world.comm(), MPI_Wtime() - t0);
    if (rep > 0) return t;
    long bad = 0;
    for (u64 i = 0; i < tb.local; ++i) bad += v->data[i] != expected[i];
    tables.sync(world);  // every unit has read its part before anyone replays
    v->run(tb);
    tables.sync(world);
    long back = 0;
    for (u64 i = 0; i < tb.local; ++i) back += v->data[i] != static_cast<u64>(tb.rank) * tb.local + i;
    long counts[2] = {bad, back};
    locus::allreduce_yielding(MPI_IN_PLACE, counts, 2, MPI_LONG, MPI_SUM, world.comm());
    m.wrong[name] = counts[0];
    m.replay_wrong[name] = counts[1];
    return t;
  });
  return m;
}

// The standalone limit program's loop, in this run: the whole table
// (tb.total words, a power of two) in one shared-memory window on rank 0,
// initialised word by word in turn by the ranks, each rank its share of
// HPCC's stream XORed in with CPU atomics, no library in the loop; the
// best of three passes (what the program reports). GUPS, or 0 where it
// cannot run (ranks on several nodes, a table not a power of two).
double standalone_limit(MPI_Comm comm, const Table& tb) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0, size = 0, rank = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  double gups = 0.0;
  if (node_size == size && tb.mask) {
    u64* table = nullptr;
    MPI_Win win = MPI_WIN_NULL;
    MPI_Win_allocate_shared(static_cast<MPI_Aint>(rank == 0 ? tb.total * sizeof(u64) : 0), sizeof(u64),
                            MPI_INFO_NULL, node, &table, &win);
    MPI_Aint bytes = 0;
    int disp = 0;
    MPI_Win_shared_query(win, 0, &bytes, &disp, &table);
    for (u64 i = static_cast<u64>(rank); i < tb.total; i += static_cast<u64>(size)) table[i] = i;
    const u64 mine = 4 * tb.total / static_cast<u64>(size), mask = tb.total - 1;
    double best = 1e300;
    for (int pass = 0; pass < 3; ++pass) {
      u64 r = bench::hpcc::stream_start(static_cast<std::int64_t>(mine * static_cast<u64>(rank)));
      locus::barrier_yielding(comm);
      const double t0 = MPI_Wtime();
      for (u64 i = 0; i < mine; ++i) {
        r = bench::hpcc::next_random(r);
        __atomic_fetch_xor(table + (r & mask), r, __ATOMIC_RELAXED);
      }
      locus::barrier_yielding(comm);
      best = std::min(best, MPI_Wtime() - t0);
    }
    gups = static_cast<double>(4 * tb.total) / best / 1e9;
    MPI_Win_free(&win);
  }
  MPI_Comm_free(&node);
  return gups;
}

void print_header(const locus::Context& ctx, const Table& tb, u64 lookahead, bool same_node, bool cpu) {
  const auto& c = ctx.config();
  const double updates = 4.0 * static_cast<double>(tb.total);
  const locus::CommSettings& cs = ctx.runtime().settings();
  std::printf(
      "# locus GUPS (HPCC RandomAccess): table 2^%ld words per unit x %d units = %" PRIu64
      " words (%.1f MiB), %.0f updates, look-ahead %" PRIu64 ", %s%s; locus atomics: %s\n",
      c.integer("bench.log2_local"), ctx.runtime().world().size(), tb.total,
      static_cast<double>(tb.total) * 8 / 1048576.0, updates, lookahead,
      same_node ? "same node" : "multi-node",
      ctx.runtime().node_map().emulated_size ? " (emulated nodes)" : "",
      cpu ? "CPU atomics (one-node team)" : "MPI accumulates on the segment window (comm.atomics: mpi)");
  std::printf(
      "# locus-aggregated: batches of %zu records, %d in flight per pair (at most %zu updates buffered "
      "per destination), applied by %s\n",
      cs.aggregate.records, cs.aggregate.slots,
      cs.aggregate.records * static_cast<std::size_t>(cs.aggregate.slots + 2),
      cs.aggregate.applier == locus::AggregateApplier::progress ? "the progress processes" : "the owners");
}

// The table, the CSV and JSON, the summary with its ratios and goals (rank 0).
int report(const locus::Context& ctx, const Table& tb, const std::vector<Variant*>& chosen, const Measured& m,
           double standalone) {
  const double updates = 4.0 * static_cast<double>(tb.total);
  const double limit = 0.01 * static_cast<double>(tb.total);
  const bool same_node = bench::all_same_node(ctx.runtime().world());
  const bool over_subscribed = !bench::oversubscription_note().empty();
  std::map<std::string, double> gups;
  for (Variant* v : chosen) gups[v->name] = updates / locus::median(m.seconds.at(v->name)) / 1e9;
  bench::Table t;
  t.data_column("placement").data_column("units").data_column("table_words");
  t.column("variant", "variant", "%-17s")
      .column("gups", "GUPS", " %10.6f")
      .column("over_raw", "/raw", " %8s")
      .column("over_hpcc", "/hpcc", " %8s")
      .column("over_mpi", "/mpi", " %8s")
      .column("wrong", "wrong words", " %12ld")
      .column("replay_wrong", "replay wrong", " %12ld")
      .column("verdict", "verdict", "%s", bench::Table::Shown::data_only)
      .column("rule", "rule", "%s", bench::Table::Shown::data_only)
      .column("verdict_text", "verdict", "  %s", bench::Table::Shown::text_only);
  bool failed = false;
  for (Variant* v : chosen) {
    const long bad = m.wrong.at(v->name), back = m.replay_wrong.at(v->name);
    const bool ok = v->atomic ? bad == 0 && back == 0 : bad <= limit && back <= limit;
    failed = failed || !ok;
    const std::string pass = ok ? "PASS" : "FAIL";
    t.row({same_node ? "same-node" : "multi-node", ctx.runtime().world().size(), static_cast<long>(tb.total),
           v->name, gups[v->name], bench::Cell::ratio(bench::ratio(gups, v->name, "raw")),
           bench::Cell::ratio(bench::ratio(gups, v->name, "hpcc")),
           bench::Cell::ratio(bench::ratio(gups, v->name, "mpi")), bad, back, pass,
           v->atomic ? "exact" : "HPCC: <= 1 %", pass + (v->atomic ? " (exact)" : " (HPCC: <= 1 %)")});
  }
  t.print();
  std::printf(
      "verdict rule: atomic variants must leave the exact expected table and replay (0 wrong words); "
      "locus-getput is not atomic and may lose updates: HPCC's rule allows 1 %% of the table (%.0f words) "
      "wrong after the updates and after the replay\n",
      limit);
  bench::Report r(ctx.config(), "gups");
  r.table(t);
  r.paths();
  r.text("over_subscribed", over_subscribed ? "yes" : "no");
  r.figure("rule_wrong_words_allowed", limit, "%.0f");
  if (standalone > 0) {
    r.figure("standalone_limit_gups", standalone, "%.6f",
             "the limit program's loop: one shared table, lock xor, best of 3 (same run)");
    if (gups.count("raw"))
      r.figure("raw_over_standalone_limit", gups["raw"] / standalone, "%.3f",
               "the raw column against it: ~1 when the column is the limit");
  }
  for (const char* v : {"locus", "locus-aggregated", "locus-scatter"})
    for (const char* b : {"raw", "hpcc", "mpi"})
      if (gups.count(v) && gups.count(b)) r.figure(std::string(v) + "_over_" + b, bench::ratio(gups, v, b));
  // Goals (not judged over-subscribed): one node, locus >= 50 % of the raw
  // CPU-atomic rate and >= 3x HPCC's bucketed two-sided algorithm; between
  // nodes, aggregated >= 1.5x HPCC's.
  if (!over_subscribed) {
    r.goals();
    // One node: the best locus variant (named) against the raw column and
    // against HPCC's buckets.
    const std::string fastest = bench::best_of(gups, {"locus", "locus-aggregated", "locus-scatter"});
    if (same_node && !fastest.empty()) r.text("locus_best", fastest);
    if (same_node && !fastest.empty() && gups.count("raw"))
      r.goal("goal_locus_ge_half_raw", bench::ratio(gups, fastest, "raw") >= 0.5);
    if (same_node && !fastest.empty() && gups.count("hpcc"))
      r.goal("goal_locus_ge_3x_hpcc", bench::ratio(gups, fastest, "hpcc") >= 3.0);
    // Aggregated: the better of atomic_update per update and update_nbi
    // (both travel in the same batches), named.
    const std::string best = bench::best_of(gups, {"locus-aggregated", "locus-scatter"});
    if (!same_node && !best.empty() && gups.count("hpcc")) {
      r.text("aggregated_best", best);
      r.goal("goal_aggregated_ge_1_5x_hpcc", bench::ratio(gups, best, "hpcc") >= 1.5);
    }
  }
  r.verification(!failed);
  r.finish();
  return failed ? 1 : 0;
}

int run(locus::Context& ctx) {
  const auto& c = ctx.config();
  locus::Team& world = ctx.runtime().world();
  const Table tb = read_table(c, world);
  const u64 lookahead = static_cast<u64>(c.integer("bench.lookahead"));
  Tables tables(world, tb, lookahead);
  // The variants asked for; every rank reads the same deck, so a bad name
  // is the same error everywhere.
  const std::vector<std::string> names =
      bench::chosen_variants(ctx, "bench.variants", kVariants, tables.raw.available());
  const bool cpu = locus::segment_state(tables.table.gptr()).cpu_atomics;
  std::vector<Variant> all = variants(world, tables, lookahead, cpu);
  std::vector<Variant*> chosen;
  for (const std::string& name : names)
    chosen.push_back(
        &*std::find_if(all.begin(), all.end(), [&](const Variant& v) { return v.name == name; }));
  const Measured m = measure(world, tb, c.integer("bench.repeats"), chosen, tables);
  const double standalone = tables.raw.available() ? standalone_limit(world.comm(), tb) : 0.0;
  if (ctx.rank() != 0) return 0;
  print_header(ctx, tb, lookahead, bench::all_same_node(world), cpu);
  return report(ctx, tb, chosen, m, standalone);
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, app_info(), run);
}
