// Counted requirements (counts.hpp): phases follow the app's timers,
// every thread's counts are summed, formulas are kept once, the one-sided
// calls count what they move where it goes (on real nodes and on emulated
// nodes of one rank), and the run's reduction gives sums and maxima over
// the ranks (app/requirements.hpp).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "app/requirements.hpp"
#include "locus/collective.hpp"
#include "locus/counts.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"
#include "locus/wait.hpp"

using locus::Count;
using locus::count;
using locus::count_phase;
using locus::counted;

namespace {

locus::Team& world() {
  return locus::Runtime::current().world();
}

// Kind k of phase `name` on this rank (0: "outside").
std::uint64_t of(const std::string& name, Count k) {
  return counted(name == "outside" ? 0 : count_phase(name), k);
}

}  // namespace

TEST(Counts, PhasesAreTheInnermostRunningTimer) {
  locus::reset_counts();
  locus::Timers t({"total", "a", "b"});
  count(Count::flops, 7);  // no timer yet
  t.start("total");
  count(Count::flops, 1);
  t.start("a");
  count(Count::flops, 10);
  t.start("b");
  count(Count::flops, 100, Count::messages, 3);
  t.stop("b");
  count(Count::flops, 1000);  // a again
  t.stop("a");
  count(Count::flops, 5);  // total again
  // out of order: b started after a, a stopped first: b stays current
  t.start("a");
  t.start("b");
  t.stop("a");
  count(Count::memory_bytes, 64);
  t.stop("b");
  count(Count::memory_bytes, 2);  // total
  t.stop("total");
  count(Count::flops, 20);  // outside again
  EXPECT_EQ(of("outside", Count::flops), 27u);
  EXPECT_EQ(of("total", Count::flops), 6u);
  EXPECT_EQ(of("a", Count::flops), 1010u);
  EXPECT_EQ(of("b", Count::flops), 100u);
  EXPECT_EQ(of("b", Count::messages), 3u);
  EXPECT_EQ(of("b", Count::memory_bytes), 64u);
  EXPECT_EQ(of("total", Count::memory_bytes), 2u);
  EXPECT_EQ(of("a", Count::memory_bytes), 0u);
  EXPECT_EQ(locus::current_count_phase(), 0);
  // the same name in another Timers is the same phase
  locus::Timers again({"b"});
  again.start("b");
  count(Count::flops, 1);
  again.stop("b");
  EXPECT_EQ(of("b", Count::flops), 101u);
}

TEST(Counts, EveryThreadIsSummed) {
  locus::reset_counts();
  locus::Timers t({"threads"});
  t.start("threads");
  constexpr int kThreads = 4, kEach = 100000;
  std::vector<std::thread> pool;
  for (int i = 0; i < kThreads; ++i)
    pool.emplace_back([i] {
      for (int k = 0; k < kEach; ++k) count(Count::atomic_updates, 1);
      count(Count::flops, static_cast<std::uint64_t>(i + 1));
    });
  count(Count::atomic_updates, 5);  // this thread too
  for (auto& th : pool) th.join();
  t.stop("threads");
  EXPECT_EQ(of("threads", Count::atomic_updates), std::uint64_t(kThreads) * kEach + 5);
  EXPECT_EQ(of("threads", Count::flops), 1u + 2 + 3 + 4);
  // a finished thread's counts stay
  locus::reset_counts();
  std::thread([] { count(Count::flops, 9); }).join();
  EXPECT_EQ(of("outside", Count::flops), 9u);
}

TEST(Counts, FormulasAreKeptOnce) {
  static const char* const kText = "test: 3 per thing";
  for (int i = 0; i < 3; ++i) count(Count::flops, 3, kText);
  count(Count::memory_bytes, 8, "test: 8 bytes per thing");
  int seen = 0;
  for (const auto& [k, text] : locus::count_formulas()) seen += k == Count::flops && text == kText;
  EXPECT_EQ(seen, 1);
}

// get, put, fetch-and-op and an accumulate to every unit: the bytes on my
// node or off it, MPI calls only where the route is MPI.
TEST(Counts, OneSidedCallsCountWhatTheyMove) {
  const int n = world().size();
  constexpr std::size_t kN = 5;
  locus::Array<double> a(world(), kN);
  locus::Array<std::int64_t> c(world(), 1);
  c.data()[0] = 0;
  locus::barrier(world());
  const bool locality = locus::Runtime::current().settings().locality;
  for (int u = 0; u < n; ++u) {
    locus::reset_counts();
    std::vector<double> v(kN, 1.0);
    locus::get(v.data(), a.gptr(u), kN);
    const bool near = world().same_node(u);
    EXPECT_EQ(of("outside", near ? Count::bytes_on_node : Count::bytes_off_node), kN * 8) << "get from " << u;
    EXPECT_EQ(of("outside", near ? Count::bytes_off_node : Count::bytes_on_node), 0u);
    EXPECT_EQ(of("outside", Count::rma_ops), near && locality ? 0u : 1u) << "get from " << u;
    locus::reset_counts();
    locus::fetch_and_op(c.gptr(u), std::int64_t(1), locus::Op::sum);
    EXPECT_EQ(of("outside", Count::atomic_fetches), 1u);
    const bool cpu = locus::segment_state(c.gptr(u).team, c.gptr(u).segment).cpu_atomics && near;
    EXPECT_EQ(of("outside", Count::rma_ops), cpu ? 0u : 1u) << "fetch_and_op at " << u;
    locus::reset_counts();
    locus::accumulate(a.gptr(u), v.data(), 2, locus::Op::sum);
    EXPECT_EQ(of("outside", Count::atomic_updates), 2u);
    EXPECT_EQ(of("outside", near ? Count::bytes_on_node : Count::bytes_off_node), 16u);
  }
  locus::barrier(world());
}

// Rank r counts r + 1 flops in phase "work": the sum and the maximum over
// the ranks, and every rank's row in the dataset's columns.
TEST(Counts, TheRunsRequirementsAreSumsAndMaxima) {
  locus::reset_counts();
  const int me = world().rank(), n = world().size();
  locus::Timers t({"total", "work"});
  t.start("total");
  t.start("work");
  count(Count::flops, static_cast<std::uint64_t>(me + 1));
  t.stop("work");
  t.stop("total");
  const locus::detail::Requirements r = locus::detail::gather_requirements(t, world().comm());
  const YAML::Node flops = r.summary["phases"]["work"]["flops"];
  ASSERT_TRUE(flops.IsDefined());
  EXPECT_EQ(flops["sum"].as<std::uint64_t>(), std::uint64_t(n) * (n + 1) / 2);
  EXPECT_EQ(flops["max"].as<std::uint64_t>(), std::uint64_t(n));
  EXPECT_FALSE(r.summary["phases"]["total"]["flops"].IsDefined());  // zero everywhere: left out
  EXPECT_EQ(r.summary["all_phases"]["flops"]["sum"].as<std::uint64_t>(), std::uint64_t(n) * (n + 1) / 2);
  // total, work, outside: 8 kinds each, then the footprint
  ASSERT_EQ(r.row.size(), 3 * locus::kCountKinds + 3);
  EXPECT_EQ(r.row[locus::kCountKinds + static_cast<unsigned>(Count::flops)], double(me + 1));
  EXPECT_EQ(r.columns.substr(0, 20), "total.bytes_on_node,");
  EXPECT_NE(r.columns.find("work.flops"), std::string::npos);
  // the footprint: this process holds segments of the tests above at least
  locus::Array<double> big(world(), 1000);
  const locus::detail::Requirements r2 = locus::detail::gather_requirements(t, world().comm());
  EXPECT_GE(r2.summary["segment_peak_bytes"]["max"].as<std::uint64_t>(), 8000u);
  EXPECT_EQ(r2.row.back(), r2.row[r2.row.size() - 3] + r2.row[r2.row.size() - 2]);
}

// The yielding collectives (wait.hpp; alltoallv and exscan_sum in
// collective.hpp) give what the blocking MPI calls
// give, on every rank; locus::yielding's set-up collectives are not
// counted, the apps' loop reductions (allreduce_yielding,
// barrier_yielding) one collective each.
TEST(Counts, YieldingCollectivesMatchMpiAndOnlyLoopReductionsCount) {
  locus::reset_counts();
  const MPI_Comm comm = world().comm();
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const long long r = rank, n = size;

  long long sum = 0, mx = 0, red = -1;
  locus::yielding::allreduce(&r, &sum, 1, MPI_LONG_LONG, MPI_SUM, comm);
  locus::yielding::allreduce(&r, &mx, 1, MPI_LONG_LONG, MPI_MAX, comm);
  locus::yielding::reduce(&r, &red, 1, MPI_LONG_LONG, MPI_SUM, 0, comm);
  EXPECT_EQ(sum, n * (n - 1) / 2);
  EXPECT_EQ(mx, n - 1);
  if (rank == 0) {
    EXPECT_EQ(red, n * (n - 1) / 2);
  }

  long long word = rank == 0 ? 4242 : -1;
  locus::yielding::bcast(&word, 1, MPI_LONG_LONG, 0, comm);
  EXPECT_EQ(word, 4242);

  std::vector<long long> all(static_cast<std::size_t>(size), -1), gathered(all);
  locus::yielding::allgather(&r, 1, MPI_LONG_LONG, all.data(), 1, MPI_LONG_LONG, comm);
  locus::yielding::gather(&r, 1, MPI_LONG_LONG, gathered.data(), 1, MPI_LONG_LONG, 0, comm);
  for (int u = 0; u < size; ++u) {
    EXPECT_EQ(all[static_cast<std::size_t>(u)], u);
    if (rank == 0) {
      EXPECT_EQ(gathered[static_cast<std::size_t>(u)], u);
    }
  }

  // alltoall: unit u sends 100 * u + d to unit d
  std::vector<int> one(static_cast<std::size_t>(size)), got(one);
  for (int d = 0; d < size; ++d) one[static_cast<std::size_t>(d)] = 100 * rank + d;
  locus::yielding::alltoall(one.data(), 1, MPI_INT, got.data(), 1, MPI_INT, comm);
  for (int u = 0; u < size; ++u) EXPECT_EQ(got[static_cast<std::size_t>(u)], 100 * u + rank);

  std::vector<int> counts(static_cast<std::size_t>(size)), displs(counts);
  for (int u = 0; u < size; ++u) counts[static_cast<std::size_t>(u)] = u + 1;
  for (int u = 1; u < size; ++u)
    displs[static_cast<std::size_t>(u)] = displs[static_cast<std::size_t>(u) - 1] + u;
  const int total = size * (size + 1) / 2;
  std::vector<int> mine(static_cast<std::size_t>(rank) + 1, 7 * rank),
      everyone(static_cast<std::size_t>(total));
  locus::yielding::allgatherv(mine.data(), rank + 1, MPI_INT, everyone.data(), counts.data(), displs.data(),
                              MPI_INT, comm);
  for (int u = 0; u < size; ++u)
    for (int k = 0; k <= u; ++k) EXPECT_EQ(everyone[static_cast<std::size_t>(displs[u] + k)], 7 * u);

  // alltoallv: unit u sends u + 1 copies of 1000 * u + d to unit d
  std::vector<int> scount(static_cast<std::size_t>(size), rank + 1), sdispl(static_cast<std::size_t>(size));
  for (int d = 0; d < size; ++d) sdispl[static_cast<std::size_t>(d)] = d * (rank + 1);
  std::vector<int> out(static_cast<std::size_t>(size * (rank + 1)));
  for (int d = 0; d < size; ++d)
    for (int k = 0; k <= rank; ++k) out[static_cast<std::size_t>(d * (rank + 1) + k)] = 1000 * rank + d;
  std::vector<int> in(static_cast<std::size_t>(total), -1);
  locus::alltoallv(out.data(), scount.data(), sdispl.data(), in.data(), counts.data(), displs.data(), MPI_INT,
                   comm);
  for (int u = 0; u < size; ++u)
    for (int k = 0; k <= u; ++k) EXPECT_EQ(in[static_cast<std::size_t>(displs[u] + k)], 1000 * u + rank);

  long long before = -1;
  locus::exscan_sum(comm, &r, &before, 1);
  EXPECT_EQ(before, r * (r - 1) / 2);  // 0 on rank 0

  locus::yielding::barrier(comm);
  EXPECT_EQ(of("outside", Count::collectives), 0u);

  long long loop = 0;
  locus::allreduce_yielding(&r, &loop, 1, MPI_LONG_LONG, MPI_SUM, comm);
  locus::barrier_yielding(comm);
  EXPECT_EQ(loop, n * (n - 1) / 2);
  EXPECT_EQ(of("outside", Count::collectives), 2u);
}
