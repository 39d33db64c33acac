// Transfer plans: index lists, strided and contiguous sides, gets and puts,
// same-node (memcpy) and remote (MPI) entries, built once and executed many
// times.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "locus/plan.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"

namespace {

using locus::Layout;
using locus::PlanEntry;
using locus::Side;

locus::Team& world() {
  return locus::Runtime::current().world();
}

double value(int unit, std::size_t i, int step) {
  return unit * 1e6 + static_cast<double>(i) + 0.25 * step;
}

TEST(Plans, IndexListGetsFromEveryUnit) {
  const int me = world().rank(), n = world().size();
  const std::size_t part = 1000;
  locus::Array<double> x(world(), part);
  // A wish list per unit, as spmv's halo: unsorted, with runs and gaps.
  std::mt19937 rng(7u + static_cast<unsigned>(me));
  std::vector<std::vector<std::size_t>> wish(static_cast<std::size_t>(n));
  std::vector<PlanEntry> entries;
  std::size_t at = 0;
  for (int u = 0; u < n; ++u) {
    auto& w = wish[static_cast<std::size_t>(u)];
    for (std::size_t k = 0; k < 60; ++k) w.push_back(rng() % (part - 3));
    w.push_back(part - 3);  // the last block of 3 elements
    entries.push_back(PlanEntry{u, Side::contiguous(at, w.size() * 3), Side::indexed(0, w, 3)});
    at += w.size() * 3;
  }
  locus::GetPlan<double> plan(x.gptr(), entries);
  EXPECT_EQ(plan.remote_entries(),
            static_cast<std::size_t>(std::count_if(entries.begin(), entries.end(), [&](const PlanEntry& e) {
              return !x.gptr(e.unit).is_local();
            })));
  std::vector<double> halo(at, -1.0);
  for (int step = 0; step < 5; ++step) {
    for (std::size_t i = 0; i < part; ++i) x.data()[i] = value(me, i, step);
    locus::barrier(world());
    plan.execute(halo.data());
    long bad = 0;
    std::size_t k = 0;
    for (int u = 0; u < n; ++u)
      for (std::size_t i : wish[static_cast<std::size_t>(u)])
        for (std::size_t b = 0; b < 3; ++b) bad += halo[k++] != value(u, i + b, step);
    EXPECT_EQ(bad, 0) << "step " << step;
    locus::barrier(world());
  }
}

TEST(Plans, StridedPutsIntoTheNextUnit) {
  const int me = world().rank(), n = world().size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  locus::Array<double> grid(world(), 10 * 12);
  std::fill(grid.data(), grid.data() + grid.size(), -1.0);
  // My 10 values go into column 3 (every 12th element) of my right neighbour.
  std::vector<double> col(10);
  for (std::size_t i = 0; i < 10; ++i) col[i] = value(me, i, 0);
  locus::PutPlan<double> plan(
      grid.gptr(), {PlanEntry{right, Side::contiguous(0, 10), Side::strided(3, Layout{1, 10, 12, 1, 0})}});
  locus::barrier(world());
  plan.execute(col.data());
  locus::barrier(world());
  long bad = 0;
  for (std::size_t r = 0; r < 10; ++r)
    for (std::size_t c = 0; c < 12; ++c)
      bad += grid.data()[r * 12 + c] != (c == 3 ? value(left, r, 0) : -1.0);
  EXPECT_EQ(bad, 0);
  locus::barrier(world());
}

TEST(Plans, BadEntriesAreClearErrors) {
  locus::Array<double> x(world(), 16);
  EXPECT_THROW(
      locus::GetPlan<double>(x.gptr(), {PlanEntry{0, Side::contiguous(0, 4), Side::contiguous(14, 4)}}),
      locus::Error);
  EXPECT_THROW(
      locus::GetPlan<double>(x.gptr(), {PlanEntry{0, Side::contiguous(0, 4), Side::contiguous(0, 5)}}),
      locus::Error);
  EXPECT_THROW(locus::GetPlan<double>(
                   x.gptr(), {PlanEntry{world().size(), Side::contiguous(0, 1), Side::contiguous(0, 1)}}),
               locus::Error);
  locus::barrier(world());
}

// The message route (comm.remote) moves exactly what the RMA route moves:
// index-list gets with two entries per pair (tags), strided puts, and a
// plan executed into two different local buffers (its requests rebuilt).
// Pairs on other nodes, and only those, go by message.
TEST(Plans, MessageRouteMovesWhatRmaMoves) {
  const int me = world().rank(), n = world().size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const std::size_t part = 64;
  locus::Array<double> x(world(), part);
  std::vector<PlanEntry> gets;
  std::size_t at = 0;
  for (int u = 0; u < n; ++u)
    for (std::size_t k = 0; k < 2; ++k) {  // two entries from every unit
      std::vector<std::size_t> idx{k, 7 + k, 31, 63 - k};
      gets.push_back(PlanEntry{u, Side::contiguous(at, idx.size()), Side::indexed(0, idx)});
      at += idx.size();
    }
  for (locus::RemoteMode mode : {locus::RemoteMode::message, locus::RemoteMode::automatic}) {
    locus::GetPlan<double> rma(x.gptr(), gets), plan(x.gptr(), gets, locus::Route::automatic, mode);
    for (int u = 0; u < n; ++u) {
      if (mode == locus::RemoteMode::message) {
        EXPECT_EQ(plan.message(u), !world().same_node(u)) << "unit " << u;
      }
      // the public decision is the plan's: 2 entries of 4 doubles each way
      EXPECT_EQ(plan.message(u), locus::message_route(world().id(), u, 64.0, mode)) << "unit " << u;
      EXPECT_FALSE(locus::message_route(world().id(), u, 64.0, locus::RemoteMode::rma)) << "unit " << u;
    }
    std::vector<double> want(at), got[2] = {std::vector<double>(at, -1), std::vector<double>(at, -2)};
    for (int step = 0; step < 4; ++step) {
      for (std::size_t i = 0; i < part; ++i) x.data()[i] = value(me, i, step);
      locus::barrier(world());
      rma.execute(want.data());
      plan.execute(got[step % 2].data());
      locus::barrier(world());
      EXPECT_EQ(got[step % 2], want) << "step " << step;
    }
    // strided puts into the right neighbour's column 3
    locus::Array<double> grid(world(), 10 * 12);
    std::fill(grid.data(), grid.data() + grid.size(), -1.0);
    std::vector<double> col(10);
    for (std::size_t i = 0; i < 10; ++i) col[i] = value(me, i, 9);
    locus::PutPlan<double> put(
        grid.gptr(), {PlanEntry{right, Side::contiguous(0, 10), Side::strided(3, Layout{1, 10, 12, 1, 0})}},
        locus::Route::automatic, mode);
    locus::barrier(world());
    put.execute(col.data());
    locus::barrier(world());
    long bad = 0;
    for (std::size_t r = 0; r < 10; ++r)
      for (std::size_t c = 0; c < 12; ++c)
        bad += grid.data()[r * 12 + c] != (c == 3 ? value(left, r, 9) : -1.0);
    EXPECT_EQ(bad, 0);
    locus::barrier(world());
  }
}

// Persistent requests on the message route: the same data as a one-sided
// plan, each unit posting its own way (unit 0 persistent, the others
// immediate: a persistent send matches any receive), from more local
// buffers than a plan keeps request sets for (the oldest is recycled), and
// after switching back to immediate requests.
TEST(Plans, PersistentRequestsMoveWhatRmaMoves) {
  const int me = world().rank(), n = world().size();
  const std::size_t part = 32;
  locus::Array<double> x(world(), part);
  std::vector<PlanEntry> gets;
  std::size_t at = 0;
  for (int u = 0; u < n; ++u) {
    gets.push_back(PlanEntry{u, Side::contiguous(at, 5), Side::strided(1, Layout{1, 5, 6, 1, 0})});
    at += 5;
  }
  locus::GetPlan<double> rma(x.gptr(), gets),
      plan(x.gptr(), gets, locus::Route::automatic, locus::RemoteMode::message);
  plan.persistent_requests(me == 0);
  bool remote = false;
  for (int u = 0; u < n; ++u) remote = remote || !world().same_node(u);
  EXPECT_EQ(plan.persistent_requests(), me == 0 && remote);
  std::vector<std::vector<double>> bufs(7, std::vector<double>(at, -1.0));
  std::vector<double> want(at);
  for (int step = 0; step < 16; ++step) {
    if (step == 12) plan.persistent_requests(false);
    for (std::size_t i = 0; i < part; ++i) x.data()[i] = value(me, i, step);
    locus::barrier(world());
    rma.execute(want.data());
    std::vector<double>& got = bufs[static_cast<std::size_t>(step) % bufs.size()];
    plan.execute(got.data());
    locus::barrier(world());
    EXPECT_EQ(got, want) << "step " << step;
  }
  EXPECT_FALSE(plan.persistent_requests());
}

// Eager sends on the message route, in get and put plans: each unit posts
// its own way (unit 0 eager, unit 1 persistent, the others immediate: any
// send matches any receive), and every way moves what RMA moves. A plan
// whose pairs move more than kEagerMaxBytes takes immediate requests when
// asked for eager ones.
TEST(Plans, EagerSendsMoveWhatRmaMoves) {
  using locus::RemoteRequests;
  const int me = world().rank(), n = world().size();
  const std::size_t part = 32;
  locus::Array<double> x(world(), part), y(world(), part);
  std::vector<PlanEntry> gets, puts;
  std::size_t at = 0;
  for (int u = 0; u < n; ++u) {
    gets.push_back(PlanEntry{u, Side::contiguous(at, 5), Side::strided(1, Layout{1, 5, 6, 1, 0})});
    // my five elements into my slot of every unit's y (slot me * 6)
    puts.push_back(
        PlanEntry{u, Side::contiguous(at, 5), Side::contiguous(static_cast<std::size_t>(me) * 6, 5)});
    at += 5;
  }
  if (n > 5) GTEST_SKIP() << "the put slots fit 5 units";
  const auto mode = locus::RemoteMode::message;
  locus::GetPlan<double> rma(x.gptr(), gets), get(x.gptr(), gets, locus::Route::automatic, mode);
  locus::PutPlan<double> put(y.gptr(), puts, locus::Route::automatic, mode);
  const RemoteRequests way = me == 0   ? RemoteRequests::eager
                             : me == 1 ? RemoteRequests::persistent
                                       : RemoteRequests::immediate;
  get.requests(way);
  put.requests(way);
  bool remote = false;
  for (int u = 0; u < n; ++u) remote = remote || !world().same_node(u);
  EXPECT_EQ(get.requests(), remote ? way : RemoteRequests::immediate);
  std::vector<double> want(at), got(at), mine(at);
  for (int step = 0; step < 8; ++step) {
    for (std::size_t i = 0; i < part; ++i) x.data()[i] = value(me, i, step);
    std::fill(y.data(), y.data() + part, -1.0);
    for (std::size_t i = 0; i < at; ++i) mine[i] = value(me, i, step + 100);
    locus::barrier(world());
    rma.execute(want.data());
    get.execute(got.data());
    put.execute(mine.data());
    locus::barrier(world());
    EXPECT_EQ(got, want) << "step " << step;
    for (int u = 0; u < n; ++u)
      for (std::size_t k = 0; k < 5; ++k)
        EXPECT_EQ(y.data()[static_cast<std::size_t>(u) * 6 + k],
                  value(u, static_cast<std::size_t>(me) * 5 + k, step + 100))
            << "step " << step << " from unit " << u;
  }
  // more than kEagerMaxBytes per pair: eager is not taken
  locus::Array<char> big(world(), 8192);
  std::vector<PlanEntry> whole;
  for (int u = 0; u < n; ++u)
    whole.push_back(PlanEntry{u, Side::contiguous(0, 8192), Side::contiguous(0, 8192)});
  locus::GetPlan<char> large(big.gptr(), {whole[static_cast<std::size_t>((me + 1) % n)]},
                             locus::Route::automatic, mode);
  large.requests(RemoteRequests::eager);
  EXPECT_NE(large.requests(), RemoteRequests::eager);
  locus::barrier(world());
}

// Units that build one collective plan with different routes get an error
// together (not a hang).
TEST(Plans, DisagreeingRoutesAreAnErrorOnEveryUnit) {
  if (world().size() < 2) GTEST_SKIP() << "needs two units";
  locus::Array<double> x(world(), 8);
  const int me = world().rank();
  const locus::RemoteMode mode = me == 0 ? locus::RemoteMode::message : locus::RemoteMode::automatic;
  std::vector<PlanEntry> e{
      PlanEntry{(me + 1) % world().size(), Side::contiguous(0, 2), Side::contiguous(0, 2)}};
  try {
    locus::GetPlan<double> plan(x.gptr(), e, locus::Route::automatic, mode);
    ADD_FAILURE() << "no error";
  } catch (const locus::Error& err) {
    EXPECT_NE(std::string(err.what()).find("different routes"), std::string::npos) << err.what();
  }
  locus::barrier(world());
}

}  // namespace
