// Target-side redirection (locus/async.hpp).
//
//  * Atomicity across switches: every unit does LOCUS_ASYNC_COUNT (default
//    10,000) fetch-and-adds on one counter, in rounds; redirection is
//    switched at a collective point between rounds. The counter ends at the
//    exact total and the returned values are a permutation of 0..total-1.
//    Also accumulates (sum) and compare-and-swap chains.
//  * Data: get, put, strided and plan transfers to every unit give the same
//    bytes with redirection on and off.
//  * Policies: user (phase names) and auto with a forced CR sequence give
//    the expected on/off decisions, deterministically.
//
// Options (test_options.hpp, read by mpi_main.cpp): --progress-processes=K
// (k >= 1), --async=on|user|auto, --async-ops=atomics (atomics only),
// --node-size=N (emulated nodes); environment LOCUS_ASYNC_COUNT. Server
// ranks serve and run no test.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "locus/async.hpp"
#include "locus/plan.hpp"
#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"
#include "locus/team.hpp"

using namespace locus;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

}  // namespace

TEST(Async, FetchAndAddAtomicAcrossSwitches) {
  Team& w = Runtime::current().world();
  const int ops = env_int("LOCUS_ASYNC_COUNT", 10000);
  const int rounds = 10;
  Array<std::int64_t> counter(w, 1);
  counter.data()[0] = 0;
  barrier(w);
  // The counter lives on the last unit (on another emulated node than unit 0).
  const GlobalPtr<std::int64_t> c = counter.gptr(w.size() - 1);
  std::vector<std::int64_t> got;
  got.reserve(static_cast<std::size_t>(ops));
  for (int r = 0; r < rounds; ++r) {
    set_async(w, r % 2 == 0);  // on, off, on, ...
    EXPECT_EQ(async_enabled(w), r % 2 == 0);
    const int mine = ops / rounds + (r < ops % rounds ? 1 : 0);
    for (int i = 0; i < mine; ++i) got.push_back(fetch_and_op(c, std::int64_t{1}, Op::sum));
  }
  set_async(w, false);
  barrier(w);
  const std::int64_t total = static_cast<std::int64_t>(ops) * w.size();
  if (w.rank() == w.size() - 1) {
    EXPECT_EQ(counter.data()[0], total);
  }
  // Every returned value once: a permutation of 0 .. total-1.
  std::vector<std::int64_t> all(static_cast<std::size_t>(total));
  MPI_Allgather(got.data(), ops, MPI_INT64_T, all.data(), ops, MPI_INT64_T, w.comm());
  std::sort(all.begin(), all.end());
  for (std::int64_t i = 0; i < total; ++i) ASSERT_EQ(all[static_cast<std::size_t>(i)], i);
  // Each unit's own values increase (its operations are ordered).
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
}

TEST(Async, AccumulateAndCompareAndSwapAcrossSwitches) {
  Team& w = Runtime::current().world();
  Array<double> sum(w, 8);
  Array<std::int64_t> chain(w, 1);
  std::fill(sum.data(), sum.data() + 8, 0.0);
  chain.data()[0] = 0;
  barrier(w);
  const int rounds = 6, per = 50;
  for (int r = 0; r < rounds; ++r) {
    set_async(w, r % 3 != 1);
    std::vector<double> v(8);
    for (int k = 0; k < 8; ++k) v[static_cast<std::size_t>(k)] = 1.0 + k;
    for (int i = 0; i < per; ++i)
      for (int t = 0; t < w.size(); ++t) accumulate(sum.gptr(t), v.data(), 8, Op::sum);
    // A chain of compare-and-swaps on unit 0: each unit increments by CAS.
    for (int i = 0; i < per; ++i) {
      std::int64_t seen = 0;
      for (;;) {
        const std::int64_t old = compare_and_swap(chain.gptr(0), seen, seen + 1);
        if (old == seen) break;
        seen = old;
      }
    }
  }
  set_async(w, false);
  barrier(w);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(sum.data()[k], double(rounds * per * w.size()) * (1.0 + k));
  if (w.rank() == 0) {
    EXPECT_EQ(chain.data()[0], std::int64_t(rounds) * per * w.size());
  }
}

TEST(Async, TransfersSameBytesOnAndOff) {
  Team& w = Runtime::current().world();
  const std::size_t n = 4096;
  Array<double> src(w, n), dst(w, n);
  for (std::size_t i = 0; i < n; ++i) src.data()[i] = 1000.0 * w.rank() + double(i);
  for (bool on : {true, false, true}) {
    set_async(w, on);
    for (int t = 0; t < w.size(); ++t) {
      std::vector<double> a(n, -1), b(n / 4, -1);
      get(a.data(), src.gptr(t), n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], 1000.0 * t + double(i)) << "get on=" << on;
      Handle h = get_async(a.data(), src.gptr(t) + 7, 1000);
      wait(h);
      for (std::size_t i = 0; i < 1000; ++i) ASSERT_EQ(a[i], 1000.0 * t + double(i + 7)) << "get_async";
      // every 4th element
      get(b.data(), Layout{1, n / 4, 1, 1, 0}, src.gptr(t), Layout{1, n / 4, 4, 1, 0});
      for (std::size_t i = 0; i < n / 4; ++i) ASSERT_EQ(b[i], 1000.0 * t + double(4 * i)) << "strided";
    }
    // put my rank into my slot of the next unit's dst, blocking and async
    const int next = (w.rank() + 1) % w.size();
    std::vector<double> mine(64, double(w.rank()) + (on ? 0.5 : 0.25));
    put(dst.gptr(next) + 64 * static_cast<std::size_t>(w.rank() % 8), mine.data(), 64);
    Handle h = put_async(dst.gptr(next) + 1024, mine.data(), 64);
    wait(h);
    flush(w);
    barrier(w);
    const int prev = (w.rank() + w.size() - 1) % w.size();
    for (std::size_t i = 0; i < 64; ++i) {
      ASSERT_EQ(dst.data()[64 * static_cast<std::size_t>(prev % 8) + i], double(prev) + (on ? 0.5 : 0.25));
      ASSERT_EQ(dst.data()[1024 + i], double(prev) + (on ? 0.5 : 0.25));
    }
    // a plan of index lists from every unit
    std::vector<PlanEntry> entries;
    for (int t = 0; t < w.size(); ++t) {
      std::vector<std::size_t> idx;
      for (std::size_t k = 0; k < 16; ++k) idx.push_back(3 * k + 1);
      entries.push_back(
          PlanEntry{t, Side::contiguous(static_cast<std::size_t>(t) * 16, 16), Side::indexed(0, idx)});
    }
    std::vector<double> out(static_cast<std::size_t>(w.size()) * 16, -1);
    GetPlan<double> plan(src.gptr(), entries);
    plan.execute(out.data());
    for (int t = 0; t < w.size(); ++t)
      for (std::size_t k = 0; k < 16; ++k)
        ASSERT_EQ(out[static_cast<std::size_t>(t) * 16 + k], 1000.0 * t + double(3 * k + 1)) << "plan";
    barrier(w);
  }
  set_async(w, false);
}

TEST(Async, NeverHintKeepsASegmentDirect) {
  Team& w = Runtime::current().world();
  Array<std::int64_t> followed(w, 1), kept(w, 1, AsyncHint::never);
  set_async(w, true);
  EXPECT_TRUE(segment_state(followed.gptr()).redirected);
  EXPECT_FALSE(segment_state(kept.gptr()).redirected);
  // Both stay atomic: fetch-and-adds on each from every unit.
  followed.data()[0] = 0;
  kept.data()[0] = 0;
  barrier(w);
  for (int i = 0; i < 200; ++i) {
    fetch_and_op(followed.gptr(0), std::int64_t{1}, Op::sum);
    fetch_and_op(kept.gptr(0), std::int64_t{1}, Op::sum);
  }
  set_async(w, false);
  EXPECT_FALSE(segment_state(followed.gptr()).redirected);
  barrier(w);
  if (w.rank() == 0) {
    EXPECT_EQ(followed.data()[0], 200 * w.size());
    EXPECT_EQ(kept.data()[0], 200 * w.size());
  }
}

TEST(Async, UserAndForcedAutoDecisions) {
  Team& w = Runtime::current().world();
  const AsyncMode mode = Runtime::current().settings().async.mode;
  const std::size_t before = async_log().size();
  if (mode == AsyncMode::user) {
    for (const char* ph : {"comp", "comm", "comm", "comp"}) phase_point(w, ph);
    const auto& log = async_log();
    ASSERT_EQ(log.size(), before + 4);
    const bool want[] = {true, false, false, true};
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(log[before + i].on, want[i]) << log[before + i].why;
      EXPECT_EQ(async_enabled(w), i == 3 ? true : async_enabled(w));
    }
  } else if (mode == AsyncMode::automatic) {
    set_async(w, true);
    // low 0.3, high 0.6: hysteresis between them
    const double cr[] = {0.9, 0.5, 0.2, 0.45, 0.7, 0.1};
    const bool want[] = {false, false, true, true, false, true};
    for (double x : cr) phase_point(w, "p", x);
    const auto& log = async_log();
    ASSERT_EQ(log.size(), before + 6);
    for (std::size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(log[before + i].on, want[i]) << i << ": " << log[before + i].why;
      EXPECT_DOUBLE_EQ(log[before + i].mean_cr, cr[i]);
      EXPECT_EQ(log[before + i].cr.size(), static_cast<std::size_t>(w.size()));
    }
    EXPECT_TRUE(async_enabled(w));
  } else {
    GTEST_SKIP() << "--async=" << async_mode_name(mode) << ": policies need user or auto";
  }
}
