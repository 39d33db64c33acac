// The floor of a neighbour exchange: unit 0 and the last unit each send one
// face of `bytes` to the other every step and wait for the other's, as a
// halo exchange does, by every protocol MPI offers:
//   p2p            MPI_Irecv + MPI_Isend + MPI_Waitall (the baseline, as an
//                  application or osu_bibw writes it; MPI_Waitall polls
//                  inside the library, faster here than a loop of tests)
//   announce-get   the owner packs its face, announces it with an
//                  MPI_Accumulate (replace) on the reader's flag; the reader
//                  fetches it with one MPI_Rget (locus's notified halo
//                  between nodes)
//   put-accflag    MPI_Put into the reader's buffer, MPI_Win_flush, flag by
//                  MPI_Accumulate (locus's put_notify between nodes)
//   put-putflag    the same with the flag written by MPI_Put (not an atomic;
//                  shown for the floor only)
//   tagged         one MPI_Accumulate (replace) of 8-byte words that carry 4
//                  bytes of the face and the step each: data and signal in
//                  one ordered operation
//   tagged-put     the same words by one MPI_Put and a local flush: no
//                  flag, no remote flush. NOT a correct protocol by the MPI
//                  standard (a load concurrent with a put is undefined; it
//                  assumes the transport writes aligned 8-byte words whole,
//                  as NCCL's LL protocol does on its hardware): shown as the
//                  floor of any one-sided exchange on this MPI
//   locus          locus::put_notify + wait_notify on a segment (memcpy and a
//                  release store on one node; put-accflag between nodes)
//   locus-get      locus::notify of the owner's face (written in place in a
//                  segment, as a field is), then locus::get by the reader (a
//                  copy out of the owner's memory on one node, as the
//                  notified halo does; announce-get between nodes)
//   locus-message  a transfer plan with comm.remote: message (MPI_Isend/
//                  MPI_Irecv of the plan's datatypes between nodes, no flag; on
//                  one node the plan copies from shared memory after the
//                  flag, as locus-get)
//   locus-persistent  locus-message's plan with persistent requests
//                  (MPI_Send_init/MPI_Recv_init once, MPI_Startall per
//                  exchange; locus-message posts MPI_Isend/MPI_Irecv)
//   locus-eager    locus-message's plan with eager sends (MPI_Irecv, then a
//                  blocking MPI_Send, which returns at once below the
//                  library's eager limit: no send request to complete)
//   locus-auto     the same plan with comm.remote: auto (the route and the
//                  requests the calibration picks for the face's size)
// Between nodes the run also writes a calibration file for comm.remote: auto
// (output.dir/<output.name>-remote-<mpich|openmpi|other>.yaml: per size,
// locus-message and locus-get, the two routes a plan can take, and
// locus-persistent and locus-eager, the message route's other ways to post).
// Plain MPI protocols use an MPI_Win_allocate window, locked once
// (bench::WindowTable, shared_table.hpp); between
// emulated nodes an MPI_Win_create window over MPI_Alloc_mem memory instead,
// so that they take the library's inter-node path as locus's segment
// windows do (Open MPI would serve an allocated window of ranks that share
// a host with its shared-memory component: 3-9x faster than the network
// path it stands for). Every
// buffer is double-buffered by step parity (a face of step s is overwritten
// at s + 2 only, after the reader has answered step s + 1). Each protocol
// checks every face it receives (its step in every byte), so one that moves
// nothing fails. Columns of a size are measured in interleaved repeats.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <vector>

#include "harness.hpp"
#include "locus/app.hpp"
#include "locus/error.hpp"
#include "locus/plan.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"
#include "locus/version.hpp"
#include "locus/wait.hpp"
#include "shared_table.hpp"

namespace {

using locus::Context;
using u64 = std::uint64_t;

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "exchange";
  app.description =
      "The floor of a neighbour exchange: one face each way per step between unit 0 and the\n"
      "last unit, by MPI two-sided, by each MPI-3 RMA protocol, and by locus (put_notify, and\n"
      "notify + get as the notified halo does). put-putflag and tagged-put are not correct by\n"
      "the MPI standard (they assume whole 8-byte writes): they show the floor, nothing more.";
  const long big = locus::Schema::kNoMax;
  app.schema.integer("bench.min_size", 8, 8, 1 << 20, "smallest face in bytes (powers of four up to max)")
      .integer("bench.max_size", 4096, 8, 1 << 20, "largest face in bytes")
      .integer("bench.steps", 2000, 1, big, "exchanges per measurement")
      .integer("bench.repeats", 5, 1, 99, "interleaved measurements per size; the median is reported");
  bench::add_keys(app.schema, "exchange");
  return app;
}

const std::vector<std::string> kColumns = {"p2p",           "announce-get",     "put-accflag", "put-putflag",
                                           "tagged",        "tagged-put",       "locus",       "locus-get",
                                           "locus-message", "locus-persistent", "locus-eager", "locus-auto"};

// Window layout (bytes), max face F: [0, 2F) receive buffers by parity,
// [2F, 4F) send buffers by parity, [4F, 4F + 16F) tagged words by parity
// (accumulated ones first, put ones 4F further), then one flag per protocol.
struct Layout {
  std::size_t face;
  std::size_t recv(int parity) const { return parity * face; }
  std::size_t send(int parity) const { return 2 * face + parity * face; }
  std::size_t tagged(int parity) const { return 4 * face + parity * 8 * face; }
  std::size_t tagged_put(int parity) const { return tagged(parity) + 4 * face; }
  std::size_t flag(int k) const { return 20 * face + 8 * static_cast<std::size_t>(k); }
  std::size_t bytes() const { return 20 * face + 64; }
};

// Rows of the table: per face size, microseconds per exchange by column.
struct Row {
  long size;
  std::map<std::string, double> us;
  bool auto_message = false;  // the route comm.remote: auto took
};

// The calibration comm.remote: auto reads (RemoteSettings::message_for):
// per size, the plan's two routes between nodes. Returns its path.
std::string write_calibration(const Context& ctx, const std::vector<Row>& rows, long steps, long repeats) {
  const auto& c = ctx.config();
  const std::string cal = std::filesystem::absolute(c.string("output.dir") + "/" + c.string("output.name") +
                                                    "-remote-" + locus::mpi_flavour() + ".yaml")
                              .string();
  std::ofstream f(cal);
  f << "# comm.remote calibration: time per exchange (one face each way) by the two routes of a\n"
    << "# transfer plan between nodes, and by the message route with persistent requests and with\n"
    << "# eager sends (comm.remote_requests), written by ./locus bench exchange (median of " << repeats
    << " interleaved repeats of " << steps << " exchanges)\n"
    << "library: \"" << locus::mpi_library() << "\"\n"
    << "placement: " << (ctx.runtime().node_map().emulated_size ? "emulated nodes" : "nodes") << "\n"
    << "points:\n";
  for (const auto& r : rows)
    f << "  - {bytes: " << r.size << ", message_us: " << r.us.at("locus-message")
      << ", rma_us: " << r.us.at("locus-get") << ", persistent_us: " << r.us.at("locus-persistent")
      << ", eager_us: " << r.us.at("locus-eager") << "}\n";
  if (!f) throw locus::Error("exchange: cannot write " + cal);
  return cal;
}

// The table (microseconds per exchange and ratios over p2p), the best
// conforming RMA protocol per size, comm.remote: auto against the better of
// p2p and that protocol, and, between nodes, the calibration file.
void report(const Context& ctx, const std::vector<Row>& rows, int last, bool same_node, long steps,
            long repeats) {
  const auto& c = ctx.config();
  const std::string placement = same_node ? "same-node" : "inter-node";
  std::printf(
      "# locus exchange benchmark: unit 0 <-> unit %d (%s%s), %ld exchanges, median of %ld "
      "interleaved repeats\n",
      last, placement.c_str(), ctx.runtime().node_map().emulated_size ? ", emulated nodes" : "", steps,
      repeats);
  std::printf("# microseconds per exchange (one face each way, both received); x: over p2p\n");
  bench::Table t;
  t.data_column("placement");
  t.column("bytes", "bytes", "%8ld");
  for (const auto& col : kColumns) t.column(col + "_us", col, " %12.3f");
  for (const auto& col : kColumns)
    if (col != "p2p") t.column(col + "_over_p2p", col + "/p2p", " %14.2f", bench::Table::Shown::text_only);
  for (const auto& r : rows) {
    std::vector<bench::Cell> cells{placement, r.size};
    for (const auto& col : kColumns) cells.emplace_back(r.us.at(col));
    for (const auto& col : kColumns)
      if (col != "p2p") cells.push_back(bench::Cell::ratio(bench::ratio(r.us, col, "p2p")));
    t.row(std::move(cells));
  }
  t.print();
  bench::Report rep(c, "exchange", "_" + placement);
  rep.table(t);
  rep.text("placement", placement);
  rep.paths();
  // The best one-sided protocol against two-sided, per size (the floors
  // put-putflag and tagged-put included, as before).
  rep.section("best_rma_over_p2p");
  for (const auto& r : rows) {
    std::string best;
    double b = HUGE_VAL;
    for (const auto& col : kColumns)
      if (col != "p2p" && col.rfind("locus", 0) != 0 && r.us.at(col) < b) b = r.us.at(col), best = col;
    rep.text(std::to_string(r.size) + "_protocol", best);
    rep.figure(std::to_string(r.size) + "_ratio", b / r.us.at("p2p"), "%.2f");
  }
  rep.end_section();
  // comm.remote: auto against the better of p2p and the best conforming RMA
  // protocol (put-putflag and tagged-put are floors, not protocols).
  rep.section("remote_auto");
  bool all_met = true;
  for (const auto& r : rows) {
    double best = r.us.at("p2p");
    for (const char* col : {"announce-get", "put-accflag", "tagged"}) best = std::min(best, r.us.at(col));
    const double ratio = r.us.at("locus-auto") / best;
    all_met = all_met && ratio <= 1.05;
    rep.text(std::to_string(r.size) + "_route", r.auto_message ? "message" : "rma");
    rep.figure(std::to_string(r.size) + "_auto_over_best", ratio, "%.2f");
  }
  rep.end_section();
  if (!same_node) rep.text("calibration", write_calibration(ctx, rows, steps, repeats));
  rep.goals();
  rep.goal("goal_auto_within_1.05x_of_best_at_every_size", all_met);
  rep.verification(true);
  rep.finish();
}

// Unit 0's and the last unit's side of every protocol: the window, the
// segments, the buffers, and the count of faces that arrived wrong. Every
// protocol exchanges N bytes at step S.
struct Exchange {
  locus::Team& world;
  int peer;
  bool active;
  Layout L;
  // The plain MPI protocols' window (freed when the Exchange goes, collectively)
  bench::WindowTable<char> table;
  char* mem;
  MPI_Win win;
  // [0, 2F): put_notify targets by parity; [2F, 4F): packed faces by parity
  locus::Array<char> seg;
  locus::Array<u64> flag;  // put_notify's, locus-get's, the plans' (message, auto, persistent, eager)
  std::vector<char> face, in;
  std::vector<u64> words;
  std::vector<MPI_Request> p2p_req = std::vector<MPI_Request>(2);
  long bad = 0;

  Exchange(locus::Team& team, int rank, int last, long max_size, bool emulated)
      : world(team),
        peer(rank == 0 ? last : 0),
        active(rank == 0 || rank == last),
        // Faces rounded up to 8 bytes in the layout: flags and tagged words stay aligned.
        L{(static_cast<std::size_t>(max_size) + 7) / 8 * 8},
        table(team.comm(), L.bytes(), emulated),
        mem(table.data()),
        win(table.win()),
        face(L.face),
        in(L.face),
        words(2 * L.face) {
    std::memset(mem, 0, L.bytes());
    MPI_Win_sync(win);
    seg = locus::Array<char>(world, 4 * L.face);
    flag = locus::Array<u64>(world, 6);
    std::fill(flag.data(), flag.data() + 6, 0);
    locus::barrier(world);
  }

  // Collective: the wrong faces of every unit.
  long close() {
    long bad_all = 0;
    MPI_Allreduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, world.comm());
    locus::barrier(world);
    return bad_all;
  }

  void fill(std::size_t n, u64 s) { std::memset(face.data(), static_cast<int>(s & 0xff), n); }
  // Every byte is checked, without an early exit: the loop vectorizes, so
  // the check costs a small, equal part of every column. (A loop that
  // stops at the first wrong byte runs a byte per cycle, more than the
  // exchange itself from 2 KiB, and its speed varied with where the
  // compiler placed each column's copy: up to 1.4x between two columns
  // doing the same MPI calls.)
  void verify(const char* p, std::size_t n, u64 s) {
    const auto want = static_cast<unsigned char>(s & 0xff);
    unsigned char diff = 0;
    for (std::size_t i = 0; i < n; ++i)
      diff |= static_cast<unsigned char>(static_cast<unsigned char>(p[i]) ^ want);
    if (diff != 0) ++bad;
  }
  u64* flag_at(int k) { return reinterpret_cast<u64*>(mem + L.flag(k)); }

  void p2p(std::size_t n, u64 s) {
    const int size = static_cast<int>(n);
    fill(n, s);
    MPI_Irecv(in.data(), size, MPI_BYTE, peer, 7, world.comm(), &p2p_req[0]);
    MPI_Isend(face.data(), size, MPI_BYTE, peer, 7, world.comm(), &p2p_req[1]);
    MPI_Waitall(2, p2p_req.data(), MPI_STATUSES_IGNORE);
    verify(in.data(), n, s);
  }

  void announce_get(std::size_t n, u64 s) {
    const int size = static_cast<int>(n);
    const int par = static_cast<int>(s % 2);
    fill(n, s);
    std::memcpy(mem + L.send(par), face.data(), n);
    std::atomic_thread_fence(std::memory_order_release);
    MPI_Accumulate(&s, 1, MPI_UINT64_T, peer, L.flag(0), 1, MPI_UINT64_T, MPI_REPLACE, win);
    MPI_Win_flush_local(peer, win);
    locus::wait_notify(flag_at(0), s);
    MPI_Request q;
    MPI_Rget(in.data(), size, MPI_BYTE, peer, L.send(par), size, MPI_BYTE, win, &q);
    locus::wait_yielding(q);
    verify(in.data(), n, s);
  }

  void put_then(std::size_t n, u64 s, int k, bool atomic_flag) {
    const int size = static_cast<int>(n);
    const int par = static_cast<int>(s % 2);
    fill(n, s);
    MPI_Put(face.data(), size, MPI_BYTE, peer, L.recv(par), size, MPI_BYTE, win);
    MPI_Win_flush(peer, win);
    if (atomic_flag)
      MPI_Accumulate(&s, 1, MPI_UINT64_T, peer, L.flag(k), 1, MPI_UINT64_T, MPI_REPLACE, win);
    else
      MPI_Put(&s, 8, MPI_BYTE, peer, L.flag(k), 8, MPI_BYTE, win);
    MPI_Win_flush_local(peer, win);
    locus::wait_notify(flag_at(k), s);
    verify(mem + L.recv(par), n, s);
  }

  // Tagged words: 4 bytes of the face and the low 32 bits of the step
  // each; `put` writes them by MPI_Put, else by MPI_Accumulate (replace).
  void tagged_exchange(std::size_t n, u64 s, bool put) {
    const int nwords = static_cast<int>((n + 3) / 4);
    const int par = static_cast<int>(s % 2);
    fill(n, s);
    for (int w = 0; w < nwords; ++w) {
      std::uint32_t payload = 0;
      std::memcpy(&payload, face.data() + 4 * w, std::min<std::size_t>(4, n - 4 * w));
      words[w] = (s << 32) | payload;
    }
    const std::size_t at = put ? L.tagged_put(par) : L.tagged(par);
    if (put)
      MPI_Put(words.data(), nwords, MPI_UINT64_T, peer, at, nwords, MPI_UINT64_T, win);
    else
      MPI_Accumulate(words.data(), nwords, MPI_UINT64_T, peer, at, nwords, MPI_UINT64_T, MPI_REPLACE, win);
    MPI_Win_flush_local(peer, win);
    const u64* t = reinterpret_cast<const u64*>(mem + at);
    unsigned spins = 0;
    for (int w = nwords - 1; w >= 0;) {
      if ((__atomic_load_n(&t[w], __ATOMIC_ACQUIRE) >> 32) == (s & 0xffffffffu)) {
        --w;
        continue;
      }
      locus::relax_with_progress(spins, world.comm());
    }
    for (int w = 0; w < nwords; ++w) {
      const auto payload = static_cast<std::uint32_t>(t[w]);
      std::memcpy(in.data() + 4 * w, &payload, std::min<std::size_t>(4, n - 4 * w));
    }
    verify(in.data(), n, s);
  }

  void locus_put(std::size_t n, u64 s) {
    const int par = static_cast<int>(s % 2);
    fill(n, s);
    locus::put_notify(seg.gptr(peer) + static_cast<std::ptrdiff_t>(par * L.face), face.data(), n,
                      flag.gptr(peer), s);
    locus::wait_notify(flag.data(), s);
    verify(seg.data() + par * L.face, n, s);
  }

  void locus_get(std::size_t n, u64 s) {
    const std::size_t off = 2 * L.face + static_cast<std::size_t>(s % 2) * L.face;
    // the face lives in the segment (as a field does): written in place
    std::memset(seg.data() + off, static_cast<int>(s & 0xff), n);
    locus::notify(flag.gptr(peer) + 1, s);
    locus::wait_notify(flag.data() + 1, s);
    locus::get(in.data(), seg.gptr(peer) + static_cast<std::ptrdiff_t>(off), n);
    verify(in.data(), n, s);
  }

  // A plan (collective: every unit builds it; only the two active units
  // have an entry): the peer's face of one parity, in place in its
  // segment, into `in`.
  locus::GetPlan<char> plan_of(locus::RemoteMode mode, std::size_t n, std::size_t parity) {
    std::vector<locus::PlanEntry> e;
    if (active)
      e.push_back(locus::PlanEntry{peer, locus::Side::contiguous(0, n),
                                   locus::Side::contiguous(2 * L.face + parity * L.face, n)});
    return locus::GetPlan<char>(seg.gptr(), std::move(e), locus::Route::local, mode);
  }

  void planned(locus::GetPlan<char>* plans, std::size_t n, u64 s, int k) {
    const std::size_t off = 2 * L.face + static_cast<std::size_t>(s % 2) * L.face;
    std::memset(seg.data() + off, static_cast<int>(s & 0xff), n);
    locus::GetPlan<char>& plan = plans[s % 2];
    if (!plan.message(peer)) {  // one-sided: announce, then fetch
      locus::notify(flag.gptr(peer) + k, s);
      locus::wait_notify(flag.data() + k, s);
    }
    plan.execute(in.data());
    verify(in.data(), n, s);
  }
};

using Protocols = std::map<std::string, std::function<void(u64)>>;

// Microseconds per exchange by column (the median of interleaved repeats)
// into ROW. STEP: per protocol, growing across sizes and repeats. Repeat r
// starts at column r (mod the columns), so that no column always runs
// after the same one: protocols that run the same code (locus-message and
// locus-auto when auto picks messages) read 3-4 % apart at 8 B when the
// order was fixed.
void time_columns(const Protocols& op, std::map<std::string, u64>& step, long steps, long repeats, Row& row) {
  std::map<std::string, std::vector<double>> t;
  // Looked up once per measurement, not per exchange.
  for (const auto& col : kColumns) {  // warm-up
    const auto& f = op.at(col);
    u64& st = step[col];
    for (int i = 0; i < 20; ++i) f(++st);
  }
  const std::size_t ncol = std::size(kColumns);
  for (long r = 0; r < repeats; ++r)
    for (std::size_t c = 0; c < ncol; ++c) {
      const auto& col = kColumns[(c + static_cast<std::size_t>(r)) % ncol];
      const auto& f = op.at(col);
      u64& st = step[col];
      double t0 = MPI_Wtime();
      for (long i = 0; i < steps; ++i) f(++st);
      t[col].push_back((MPI_Wtime() - t0) / static_cast<double>(steps) * 1e6);
    }
  for (auto& [col, v] : t) row.us[col] = locus::median(std::move(v));
}

// One face size, every protocol (collective: the plans).
Row measure(Exchange& x, long size, std::map<std::string, u64>& step, long steps, long repeats) {
  const std::size_t n = static_cast<std::size_t>(size);
  Protocols op;
  op["p2p"] = [&](u64 s) { x.p2p(n, s); };
  op["announce-get"] = [&](u64 s) { x.announce_get(n, s); };
  op["put-accflag"] = [&](u64 s) { x.put_then(n, s, 1, true); };
  op["put-putflag"] = [&](u64 s) { x.put_then(n, s, 2, false); };
  op["tagged"] = [&](u64 s) { x.tagged_exchange(n, s, false); };
  op["tagged-put"] = [&](u64 s) { x.tagged_exchange(n, s, true); };
  op["locus"] = [&](u64 s) { x.locus_put(n, s); };
  op["locus-get"] = [&](u64 s) { x.locus_get(n, s); };
  locus::GetPlan<char> by_message[2] = {x.plan_of(locus::RemoteMode::message, n, 0),
                                        x.plan_of(locus::RemoteMode::message, n, 1)};
  locus::GetPlan<char> by_auto[2] = {x.plan_of(locus::RemoteMode::automatic, n, 0),
                                     x.plan_of(locus::RemoteMode::automatic, n, 1)};
  locus::GetPlan<char> by_persistent[2] = {x.plan_of(locus::RemoteMode::message, n, 0),
                                           x.plan_of(locus::RemoteMode::message, n, 1)};
  locus::GetPlan<char> by_eager[2] = {x.plan_of(locus::RemoteMode::message, n, 0),
                                      x.plan_of(locus::RemoteMode::message, n, 1)};
  for (int k = 0; k < 2; ++k) {
    by_message[k].requests(locus::RemoteRequests::immediate);
    by_persistent[k].requests(locus::RemoteRequests::persistent);
    by_eager[k].requests(locus::RemoteRequests::eager);
  }
  op["locus-message"] = [&](u64 s) { x.planned(by_message, n, s, 2); };
  op["locus-persistent"] = [&](u64 s) { x.planned(by_persistent, n, s, 4); };
  op["locus-eager"] = [&](u64 s) { x.planned(by_eager, n, s, 5); };
  op["locus-auto"] = [&](u64 s) { x.planned(by_auto, n, s, 3); };
  Row row{size, {}};
  row.auto_message = by_auto[0].message(x.peer);
  if (x.active) time_columns(op, step, steps, repeats, row);
  return row;
}

int run(Context& ctx) {
  const auto& c = ctx.config();
  const long min_size = c.integer("bench.min_size"), max_size = c.integer("bench.max_size");
  const long steps = c.integer("bench.steps"), repeats = c.integer("bench.repeats");
  locus::collective_require(ctx.comm(), ctx.size() >= 2, "exchange: needs at least 2 ranks");
  locus::collective_require(
      ctx.comm(), min_size <= max_size,
      c.locate("bench.min_size") + ": larger than bench.max_size (" + std::to_string(max_size) + ")");
  locus::Team& world = ctx.runtime().world();
  const int last = ctx.size() - 1;
  const bool same_node = world.same_node(last);
  Exchange x(world, ctx.rank(), last, max_size, ctx.runtime().node_map().emulated_size > 0);

  std::map<std::string, u64> step;  // per protocol, growing across sizes and repeats
  std::vector<Row> rows;
  for (long size = min_size; size <= max_size; size *= 4)
    rows.push_back(measure(x, size, step, steps, repeats));
  const long bad_all = x.close();
  locus::collective_require(
      ctx.comm(), bad_all == 0,
      "exchange: " + std::to_string(bad_all) + " faces arrived wrong (a protocol is broken)");
  if (ctx.rank() != 0) return 0;
  report(ctx, rows, last, same_node, steps, repeats);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, app_info(), run);
}
