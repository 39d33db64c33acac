// Fine-grained one-sided operations: the inline same-node path against the
// MPI route bitwise, the handle-free calls (put_nbi, get_nbi,
// accumulate_nbi, atomic_update, flush per target), and aggregated atomics
// and gets (comm.atomics: aggregate). Each test allocates its segments
// with the atomic mode it names (AtomicMode::mpi or ::aggregate), so one
// binary checks both mechanisms; CTest runs it on real nodes, on emulated
// nodes of 1 and 2 ranks (every other unit, or every other pair, remote),
// with progress processes and with redirection on.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"

using locus::AtomicMode;
using locus::GlobalPtr;
using locus::Op;
using locus::Route;
using locus::Runtime;
using locus::Team;

namespace {

Team& world() {
  return Runtime::current().world();
}

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

template <class T>
T value_of(int owner, std::size_t i) {
  return static_cast<T>(
             static_cast<std::int64_t>(mix(static_cast<std::uint64_t>(owner) * 1000003 + i) % 100000) -
             50000) /
         (std::is_integral_v<T> ? T(1) : T(4));
}

template <class T>
void direct_matches_mpi() {
  const int me = world().rank(), n = world().size();
  constexpr std::size_t kN = 37;
  locus::Array<T> a(world(), kN);
  for (std::size_t i = 0; i < kN; ++i) a.data()[i] = value_of<T>(me, i);
  locus::barrier(world());
  for (int u = 0; u < n; ++u)
    for (std::size_t count : {std::size_t(1), std::size_t(3), kN}) {
      std::vector<T> fast(count), slow(count);
      locus::get(fast.data(), a.gptr(u) + static_cast<std::ptrdiff_t>(kN - count), count);
      locus::get(slow.data(), a.gptr(u) + static_cast<std::ptrdiff_t>(kN - count), count, Route::mpi);
      EXPECT_EQ(std::memcmp(fast.data(), slow.data(), count * sizeof(T)), 0)
          << "unit " << u << " count " << count;
      for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(fast[i], value_of<T>(u, kN - count + i));
    }
  locus::barrier(world());
  // Puts: element i of unit (me + 1) % n written by me, inline where it can.
  const int right = (me + 1) % n;
  for (std::size_t i = 0; i < kN; ++i) {
    const T v = value_of<T>(me + 7, i);
    if (i % 2)
      locus::put(a.gptr(right) + static_cast<std::ptrdiff_t>(i), &v, 1);
    else
      locus::put(a.gptr(right) + static_cast<std::ptrdiff_t>(i), &v, 1, Route::mpi);
  }
  locus::barrier(world());
  const int left = (me + n - 1) % n;
  for (std::size_t i = 0; i < kN; ++i) EXPECT_EQ(a.data()[i], value_of<T>(left + 7, i)) << i;
  locus::barrier(world());
}

TEST(Direct, GetAndPutMatchTheMpiRouteBitwiseForEveryType) {
  direct_matches_mpi<std::int32_t>();
  direct_matches_mpi<std::int64_t>();
  direct_matches_mpi<std::uint64_t>();
  direct_matches_mpi<float>();
  direct_matches_mpi<double>();
}

TEST(Direct, BoundsFreedSegmentAndWrongTeamAreErrors) {
  // The tests run with comm.check on: the inline path steps aside and the
  // general route names the error.
  locus::Array<double> a(world(), 4);
  double x[2] = {0, 0};
  EXPECT_THROW(locus::get(x, a.gptr(0) + 3, 2), locus::Error);
  EXPECT_THROW(locus::put_nbi(a.gptr(0) + 4, x, 1), locus::Error);
  EXPECT_THROW(locus::get_nbi(x, a.gptr(0) + 3, 2), locus::Error);
  EXPECT_THROW(locus::atomic_update(a.gptr(0) + 4, 1.0, Op::sum), locus::Error);
  EXPECT_THROW(locus::fetch_and_op(a.gptr(world().size()), 1.0, Op::sum), locus::Error);
  GlobalPtr<double> wrong_team = a.gptr(0);
  wrong_team.team = 99;
  EXPECT_THROW(locus::get(x, wrong_team, 1), locus::Error);
  EXPECT_THROW(locus::atomic_update(wrong_team, 1.0, Op::sum), locus::Error);
  auto p = locus::allocate<std::int64_t>(world(), 2);
  locus::free(p);
  std::int64_t y = 0;
  EXPECT_THROW(locus::get(&y, p, 1), locus::Error);
  EXPECT_THROW(locus::atomic_update(p, std::int64_t{1}, Op::sum), locus::Error);
  EXPECT_THROW((void)locus::fetch_and_op(p, std::int64_t{1}, Op::sum), locus::Error);
  EXPECT_THROW(locus::flush(world(), world().size()), locus::Error);
  // bxor on a floating-point type is refused on every route.
  EXPECT_THROW(locus::atomic_update(a.gptr(0), 1.0, Op::bxor), locus::Error);
  locus::barrier(world());
}

TEST(Nbi, PutAndGetCompleteAtFlush) {
  const int me = world().rank(), n = world().size();
  constexpr std::size_t kN = 64;
  locus::Array<std::int64_t> a(world(), kN * static_cast<std::size_t>(n));
  std::vector<std::int64_t> src(kN);
  for (std::size_t i = 0; i < kN; ++i) src[i] = me * 100000 + static_cast<std::int64_t>(i);
  // My row in every unit's part, one element at a time and in one call.
  for (int u = 0; u < n; ++u) {
    auto row = a.gptr(u) + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me) * kN);
    if (u % 2)
      locus::put_nbi(row, src.data(), kN);
    else
      for (std::size_t i = 0; i < kN; ++i) locus::put_nbi(row + static_cast<std::ptrdiff_t>(i), &src[i], 1);
  }
  locus::flush(world());
  locus::barrier(world());
  for (int o = 0; o < n; ++o)
    for (std::size_t i = 0; i < kN; ++i)
      ASSERT_EQ(a.data()[static_cast<std::size_t>(o) * kN + i], o * 100000 + static_cast<std::int64_t>(i));
  // Gets of every unit's row 0, completed per target.
  std::vector<std::int64_t> got(kN * static_cast<std::size_t>(n), -1);
  for (int u = 0; u < n; ++u) {
    for (std::size_t i = 0; i < kN; ++i)
      locus::get_nbi(&got[static_cast<std::size_t>(u) * kN + i], a.gptr(u) + static_cast<std::ptrdiff_t>(i),
                     1);
    locus::flush(world(), u);
    for (std::size_t i = 0; i < kN; ++i)
      EXPECT_EQ(got[static_cast<std::size_t>(u) * kN + i], static_cast<std::int64_t>(i));
  }
  locus::barrier(world());
}

// Same-node one-element get_nbi is queued (detail/lookahead.hpp): the
// data is in place after flush, barrier or a flush of one unit; gets into
// one buffer land in program order, small and large mixed; and a segment
// freed with gets queued from it is read before it goes.
TEST(HandleFree, LookaheadGetsCompleteInOrderAtEveryCompletionPoint) {
  const int me = world().rank(), n = world().size();
  constexpr std::size_t kW = 3 * locus::detail::kLookahead + 5;
  auto fill = [&](locus::Array<std::int64_t>& t) {
    for (std::size_t i = 0; i < kW; ++i) t.data()[i] = 1000 * (me + 1) + static_cast<std::int64_t>(i);
    locus::barrier(world());
  };
  auto expect = [](int u, std::size_t i) { return 1000 * (u + 1) + static_cast<std::int64_t>(i); };
  locus::Array<std::int64_t> t(world(), kW);
  fill(t);
  std::vector<std::int64_t> got(kW);
  for (int way = 0; way < 3; ++way)
    for (int u = 0; u < n; ++u) {
      std::fill(got.begin(), got.end(), -1);
      for (std::size_t i = 0; i < kW; ++i)
        locus::get_nbi(&got[i], t.gptr(u) + static_cast<std::ptrdiff_t>(i), 1);
      if (way == 0) locus::flush(world());
      if (way == 1) locus::flush(world(), u);
      if (way == 2) locus::barrier(world());  // completes same-node gets only
      if (way == 2 && !world().same_node(u)) locus::flush(world(), u);
      for (std::size_t i = 0; i < kW; ++i) EXPECT_EQ(got[i], expect(u, i)) << "way " << way << " unit " << u;
    }
  // One buffer, many gets: the last one issued wins, a large get included.
  const int other = (me + 1) % n;
  std::int64_t one = -1;
  std::int64_t pair[2] = {-1, -1};
  for (std::size_t i = 0; i < kW; ++i)
    locus::get_nbi(&one, t.gptr(other) + static_cast<std::ptrdiff_t>(i), 1);
  locus::get_nbi(&pair[0], t.gptr(other) + 1, 1);
  locus::get_nbi(pair, t.gptr(other) + 4, 2);  // 16 B: copied at once, after the queued ones
  locus::flush(world());
  EXPECT_EQ(one, expect(other, kW - 1));
  EXPECT_EQ(pair[0], expect(other, 4));
  EXPECT_EQ(pair[1], expect(other, 5));
  // Freed with same-node gets queued: they are copied first.
  auto tmp = std::make_unique<locus::Array<std::int64_t>>(world(), kW);
  fill(*tmp);
  std::fill(got.begin(), got.end(), -1);
  const int near = world().same_node(other) ? other : me;
  for (std::size_t i = 0; i < 4; ++i)
    locus::get_nbi(&got[i], tmp->gptr(near) + static_cast<std::ptrdiff_t>(i), 1);
  tmp.reset();
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], expect(near, i));
  locus::barrier(world());
}

// Same-node atomic_update is queued too (detail/lookahead.hpp): a later
// blocking atomic of the thread sees every earlier update, in order
// (replace then sum), and a flush publishes the rest.
TEST(HandleFree, LookaheadUpdatesKeepTheThreadsOrder) {
  const int me = world().rank(), n = world().size();
  locus::Array<std::int64_t> a(world(), 2);
  a.data()[0] = a.data()[1] = 0;
  locus::barrier(world());
  const int other = (me + 1) % n;
  if (!world().same_node(other) || !locus::segment_state(a.gptr()).cpu_atomics) GTEST_SKIP();
  // My own element 0: replace then 3 x kLookahead sums, then fetch.
  locus::atomic_update(a.gptr(me), std::int64_t{7}, Op::replace);
  for (unsigned i = 0; i < 3 * locus::detail::kLookahead; ++i)
    locus::atomic_update(a.gptr(me), std::int64_t{1}, Op::sum);
  EXPECT_EQ(locus::fetch_and_op(a.gptr(me), std::int64_t{0}, Op::sum),
            7 + 3 * std::int64_t{locus::detail::kLookahead});
  // Everyone's element 1 at the next unit: sums, visible after flush + barrier.
  for (int i = 0; i < 5; ++i) locus::atomic_update(a.gptr(other) + 1, std::int64_t{1}, Op::sum);
  locus::flush(world());
  locus::barrier(world());
  EXPECT_EQ(a.data()[1], 5);
  locus::barrier(world());
}

class Atomics : public ::testing::TestWithParam<AtomicMode> {};

// Every unit sends `per_unit` updates of op to pseudo-random elements of
// every unit (so some go inline, some by MPI or in batches); the totals
// must come out exactly.
template <class T>
void exact_totals(AtomicMode mode, Op op, std::size_t per_unit) {
  const int me = world().rank(), n = world().size();
  constexpr std::size_t kWords = 257;
  locus::Array<T> a(world(), kWords, locus::AsyncHint::follow, mode);
  const T init = op == Op::min ? T(1000000) : op == Op::max ? T(-1000000) : T(0);
  for (std::size_t i = 0; i < kWords; ++i) a.data()[i] = init;
  locus::barrier(world());
  auto value = [](int from, std::size_t k) {
    return static_cast<T>(mix(static_cast<std::uint64_t>(from) * 7919 + k) % 1000);
  };
  auto where = [&](int from, std::size_t k) {
    return mix(static_cast<std::uint64_t>(from) * 104729 + k + 1) % (kWords * static_cast<std::size_t>(n));
  };
  for (std::size_t k = 0; k < per_unit; ++k) {
    const std::uint64_t g = where(me, k);
    auto p = a.gptr(static_cast<int>(g / kWords)) + static_cast<std::ptrdiff_t>(g % kWords);
    if (k % 3 == 0) {
      const T v = value(me, k);
      locus::accumulate_nbi(p, &v, 1, op);
    } else {
      locus::atomic_update(p, value(me, k), op);
    }
  }
  locus::flush(world());    // completes my updates (aggregated: applied at their targets)
  locus::barrier(world());  // ... and everyone else's
  std::vector<T> expect(kWords, init);
  for (int from = 0; from < n; ++from)
    for (std::size_t k = 0; k < per_unit; ++k) {
      const std::uint64_t g = where(from, k);
      if (static_cast<int>(g / kWords) != me) continue;
      T& e = expect[g % kWords];
      const T v = value(from, k);
      if constexpr (std::is_integral_v<T>) {
        if (op == Op::bxor) e ^= v;
      }
      if (op == Op::sum) e += v;
      if (op == Op::min) e = v < e ? v : e;
      if (op == Op::max) e = v > e ? v : e;
    }
  long bad = 0;
  for (std::size_t i = 0; i < kWords; ++i) bad += a.data()[i] != expect[i];
  EXPECT_EQ(bad, 0) << "op " << static_cast<int>(op) << ", " << sizeof(T) << "-byte type";
  locus::barrier(world());
}

TEST_P(Atomics, ExactTotalsForEveryTypeAndOpWithBuffersFillingMidRun) {
  // 3000 updates per unit: more than one batch (comm.aggregate.records,
  // 1024 by default) to every destination.
  exact_totals<std::int32_t>(GetParam(), Op::sum, 3000);
  exact_totals<std::int64_t>(GetParam(), Op::bxor, 3000);
  exact_totals<std::uint64_t>(GetParam(), Op::bxor, 3000);
  exact_totals<std::int64_t>(GetParam(), Op::max, 1000);
  exact_totals<double>(GetParam(), Op::sum, 3000);  // small integers: exact in any order
  exact_totals<float>(GetParam(), Op::min, 1000);
}

TEST_P(Atomics, FetchAndOpAndCompareAndSwapMixedWithUpdates) {
  const int me = world().rank(), n = world().size();
  locus::Array<std::int64_t> a(world(), 2, locus::AsyncHint::follow, GetParam());
  a.data()[0] = 0;
  a.data()[1] = -1;
  locus::barrier(world());
  // Every unit takes 200 tickets from every unit's counter, fetch-and-add
  // and plain updates interleaved: the tickets a unit got are distinct.
  std::vector<std::int64_t> mine;
  for (int k = 0; k < 200; ++k)
    for (int u = 0; u < n; ++u) {
      mine.push_back(locus::fetch_and_op(a.gptr(u), std::int64_t{1}, Op::sum));
      locus::atomic_update(a.gptr(u), std::int64_t{1000000}, Op::sum);
    }
  // One winner per unit's word 1.
  int wins = 0;
  for (int u = 0; u < n; ++u)
    wins += locus::compare_and_swap(a.gptr(u) + 1, std::int64_t{-1}, std::int64_t{me}) == -1;
  locus::flush(world());
  locus::barrier(world());
  EXPECT_EQ(a.data()[0], 200 * n * 1000001LL);
  EXPECT_GE(a.data()[1], 0);
  EXPECT_LT(a.data()[1], n);
  int total_wins = 0;
  MPI_Allreduce(&wins, &total_wins, 1, MPI_INT, MPI_SUM, world().comm());
  EXPECT_EQ(total_wins, n);
  // Tickets: the low part (mod 1000000) counts fetches before mine.
  for (std::int64_t t : mine) EXPECT_LT(t % 1000000, 200 * n);
  locus::barrier(world());
}

TEST_P(Atomics, FlushToOneUnitMakesTheUpdatesVisibleThere) {
  const int me = world().rank(), n = world().size();
  if (n < 2) GTEST_SKIP() << "needs two units";
  locus::Array<std::uint64_t> a(world(), 8, locus::AsyncHint::follow, GetParam());
  locus::Array<std::uint64_t> flag(world(), 1);
  for (int i = 0; i < 8; ++i) a.data()[i] = 0;
  flag.data()[0] = 0;
  locus::barrier(world());
  for (int round = 1; round <= 20; ++round) {
    if (me == 0) {
      for (int i = 0; i < 8; ++i) locus::atomic_update(a.gptr(n - 1) + i, std::uint64_t(round), Op::sum);
      locus::flush(world(), n - 1);  // applied there before the flag moves
      locus::notify(flag.gptr(n - 1), static_cast<std::uint64_t>(round));
    } else if (me == n - 1) {
      locus::wait_notify(flag.data(), static_cast<std::uint64_t>(round));
      // Every update of rounds 1..round is here (later rounds may be too).
      const std::uint64_t want = static_cast<std::uint64_t>(round) * (round + 1) / 2;
      for (int i = 0; i < 8; ++i)
        ASSERT_GE(__atomic_load_n(&a.data()[i], __ATOMIC_ACQUIRE), want) << "round " << round;
    }
  }
  locus::barrier(world());
  if (me == n - 1) {
    for (int i = 0; i < 8; ++i) EXPECT_EQ(a.data()[i], 210u);
  }
  locus::barrier(world());
}

TEST_P(Atomics, IndexGatherOfRandomWords) {
  const int me = world().rank(), n = world().size();
  constexpr std::size_t kWords = 1000, kReads = 5000;
  locus::Array<std::uint64_t> a(world(), kWords, locus::AsyncHint::follow, GetParam());
  for (std::size_t i = 0; i < kWords; ++i) a.data()[i] = mix(static_cast<std::uint64_t>(me) * kWords + i);
  locus::barrier(world());
  std::vector<std::uint64_t> got(kReads, 0), at(kReads);
  for (std::size_t k = 0; k < kReads; ++k) {
    at[k] = mix(k * 31 + static_cast<std::size_t>(me)) % (kWords * static_cast<std::size_t>(n));
    locus::get_nbi(&got[k],
                   a.gptr(static_cast<int>(at[k] / kWords)) + static_cast<std::ptrdiff_t>(at[k] % kWords), 1);
  }
  locus::flush(world());
  long bad = 0;
  for (std::size_t k = 0; k < kReads; ++k) {
    if (got[k] != mix(at[k]) && bad < 3) {
      std::uint64_t again = 0;
      locus::get(&again,
                 a.gptr(static_cast<int>(at[k] / kWords)) + static_cast<std::ptrdiff_t>(at[k] % kWords), 1);
      ADD_FAILURE() << "read " << k << " of unit " << at[k] / kWords << " word " << at[k] % kWords << ": got "
                    << got[k] << ", want " << mix(at[k]) << ", blocking get now " << again << " local? "
                    << a.gptr(static_cast<int>(at[k] / kWords)).is_local();
    }
    bad += got[k] != mix(at[k]);
  }
  EXPECT_EQ(bad, 0);
  locus::barrier(world());
}

// gather_nbi: the same words as one get_nbi per index, for a table of a
// power-of-two size per unit (shift) and of another (division), 8- and
// 4-byte elements, indices in every unit and repeated; and a call with an
// index past the table is an Error on that unit, before anything moves.
template <class T>
void gather_matches_get(AtomicMode mode, std::size_t per_unit, std::size_t reads) {
  const int me = world().rank(), n = world().size();
  locus::Array<T> a(world(), per_unit + 3, locus::AsyncHint::follow, mode);  // the table from element 3 on
  for (std::size_t i = 0; i < per_unit + 3; ++i) a.data()[i] = static_cast<T>(mix(me * 1000003ull + i) >> 8);
  locus::barrier(world());
  const std::uint64_t total = per_unit * static_cast<std::uint64_t>(n);
  std::vector<std::uint64_t> index(reads);
  for (std::size_t k = 0; k < reads; ++k) index[k] = mix(k * 17 + static_cast<std::size_t>(me)) % total;
  index[0] = total - 1;
  if (reads > 1) index[1] = index[0];
  std::vector<T> bulk(reads, T{}), each(reads, T{});
  locus::gather_nbi(bulk.data(), a.gptr() + 3, per_unit, index.data(), reads);
  for (std::size_t k = 0; k < reads; ++k)
    locus::get_nbi(
        &each[k],
        a.gptr(static_cast<int>(index[k] / per_unit)) + 3 + static_cast<std::ptrdiff_t>(index[k] % per_unit),
        1);
  locus::flush(world());
  long bad = 0;
  for (std::size_t k = 0; k < reads; ++k) {
    const int u = static_cast<int>(index[k] / per_unit);
    const T want = static_cast<T>(mix(u * 1000003ull + 3 + index[k] % per_unit) >> 8);
    bad += bulk[k] != want;
    bad += each[k] != want;
  }
  EXPECT_EQ(bad, 0) << per_unit << " elements of " << sizeof(T) << " bytes per unit";
  locus::barrier(world());
}

TEST_P(Atomics, GatherNbiMatchesGetNbi) {
  gather_matches_get<std::uint64_t>(GetParam(), 1024, 5000);
  gather_matches_get<std::uint64_t>(GetParam(), 1000, 3000);
  gather_matches_get<std::int32_t>(GetParam(), 777, 3000);
  gather_matches_get<double>(GetParam(), 64, 1);
}

// update_nbi: every unit scatters `reads` updates over a table of
// per_unit elements per unit (power of two and not; repeated indices); the
// totals come out exactly, as expected from every unit's stream.
template <class T>
void scatter_totals(AtomicMode mode, std::size_t per_unit, std::size_t count, Op op) {
  const int me = world().rank(), n = world().size();
  locus::Array<T> a(world(), per_unit + 1, locus::AsyncHint::follow, mode);  // the table from element 1 on
  for (std::size_t i = 0; i <= per_unit; ++i) a.data()[i] = T(0);
  locus::barrier(world());
  const std::uint64_t total = per_unit * static_cast<std::uint64_t>(n);
  auto index_of = [&](int from, std::size_t k) {
    return mix(k * 29 + static_cast<std::size_t>(from) * 7) % total;
  };
  auto value_of = [&](int from, std::size_t k) { return static_cast<T>(mix(k + 1000u * from) % 1000); };
  std::vector<std::uint64_t> index(count);
  std::vector<T> value(count);
  for (std::size_t k = 0; k < count; ++k) {
    index[k] = index_of(me, k);
    value[k] = value_of(me, k);
  }
  locus::update_nbi(a.gptr() + 1, per_unit, index.data(), value.data(), count, op);
  locus::flush(world());
  locus::barrier(world());
  std::vector<T> expect(per_unit, T(0));
  for (int from = 0; from < n; ++from)
    for (std::size_t k = 0; k < count; ++k) {
      const std::uint64_t g = index_of(from, k);
      if (g / per_unit != static_cast<std::uint64_t>(me)) continue;
      T& e = expect[g % per_unit];
      if constexpr (std::is_integral_v<T>) {
        if (op == Op::bxor) e ^= value_of(from, k);
      }
      if (op == Op::sum) e += value_of(from, k);
    }
  long bad = a.data()[0] != T(0);
  for (std::size_t i = 0; i < per_unit; ++i) bad += a.data()[i + 1] != expect[i];
  EXPECT_EQ(bad, 0) << per_unit << " elements of " << sizeof(T) << " bytes per unit";
  locus::barrier(world());
}

TEST_P(Atomics, UpdateNbiGivesExactTotals) {
  scatter_totals<std::uint64_t>(GetParam(), 1024, 6000, Op::bxor);
  scatter_totals<std::int32_t>(GetParam(), 333, 4000, Op::sum);
  scatter_totals<double>(GetParam(), 100, 3000, Op::sum);  // small integers: exact in any order
  locus::Array<double> d(world(), 4, locus::AsyncHint::follow, GetParam());
  const std::uint64_t at[1] = {0};
  const double one[1] = {1.0};
  EXPECT_THROW(locus::update_nbi(d.gptr(), 4, at, one, 1, Op::bxor), locus::Error);  // bxor on a double
  const std::uint64_t past[1] = {4 * static_cast<std::uint64_t>(world().size())};
  EXPECT_THROW(locus::update_nbi(d.gptr(), 4, past, one, 1, Op::sum), locus::Error);
  locus::flush(world());
  locus::barrier(world());
}

TEST_P(Atomics, GatherNbiIndexPastTheTableIsAnError) {
  const int n = world().size();
  locus::Array<std::uint64_t> a(world(), 100, locus::AsyncHint::follow, GetParam());
  std::uint64_t out[3] = {7, 7, 7};
  const std::uint64_t past[3] = {0, 100 * static_cast<std::uint64_t>(n), 1};
  try {
    locus::gather_nbi(out, a.gptr(), 100, past, 3);
    ADD_FAILURE() << "no error";
  } catch (const locus::Error& e) {
    EXPECT_NE(std::string(e.what()).find("index[1]"), std::string::npos) << e.what();
  }
  EXPECT_EQ(out[0], 7u);  // checked before anything moved
  const std::uint64_t fine[1] = {0};
  EXPECT_THROW(locus::gather_nbi(out, a.gptr() + 1, 100, fine, 1), locus::Error);  // 100 from element 1
  locus::flush(world());
  locus::barrier(world());
}

// Requests of every kind, on two segments and of two sizes, interleaved
// to the same destinations: an aggregated batch then holds many short runs
// (a new one at every change of kind, segment, size or op), and the
// replies must still reach their requests in order.
TEST_P(Atomics, InterleavedKindsSegmentsAndSizes) {
  const int me = world().rank(), n = world().size();
  constexpr std::size_t kWords = 300, kOps = 4000;
  locus::Array<std::uint64_t> wide(world(), kWords, locus::AsyncHint::follow, GetParam());
  locus::Array<std::int32_t> narrow(world(), kWords, locus::AsyncHint::follow, GetParam());
  locus::Array<std::int64_t> sums(world(), 1, locus::AsyncHint::follow, GetParam());
  for (std::size_t i = 0; i < kWords; ++i) {
    wide.data()[i] = mix(static_cast<std::uint64_t>(me) * kWords + i);
    narrow.data()[i] = static_cast<std::int32_t>(me * 100000 + static_cast<int>(i));
  }
  sums.data()[0] = 0;
  locus::barrier(world());
  std::vector<std::uint64_t> got_wide(kOps, 0);
  std::vector<std::int32_t> got_narrow(kOps, 0);
  for (std::size_t k = 0; k < kOps; ++k) {
    const int u =
        static_cast<int>(mix(k * 13 + static_cast<std::size_t>(me)) % static_cast<std::uint64_t>(n));
    const auto i = static_cast<std::ptrdiff_t>(mix(k * 7 + 1) % kWords);
    switch (k % 4) {
      case 0:
        locus::get_nbi(&got_wide[k], wide.gptr(u) + i, 1);
        break;
      case 1:
        locus::get_nbi(&got_narrow[k], narrow.gptr(u) + i, 1);
        break;
      case 2:
        locus::atomic_update(sums.gptr(u), std::int64_t{1}, Op::sum);
        locus::get_nbi(&got_narrow[k], narrow.gptr(u) + i, 1);
        break;
      default:
        locus::get_nbi(&got_wide[k], wide.gptr(u) + i, 1);
        locus::get_nbi(&got_narrow[k], narrow.gptr(u) + i, 1);
        break;
    }
  }
  locus::flush(world());
  long bad = 0;
  for (std::size_t k = 0; k < kOps; ++k) {
    const int u =
        static_cast<int>(mix(k * 13 + static_cast<std::size_t>(me)) % static_cast<std::uint64_t>(n));
    const std::size_t i = mix(k * 7 + 1) % kWords;
    if (k % 4 == 0 || k % 4 == 3) bad += got_wide[k] != mix(static_cast<std::uint64_t>(u) * kWords + i);
    if (k % 4 != 0) bad += got_narrow[k] != static_cast<std::int32_t>(u * 100000 + static_cast<int>(i));
  }
  EXPECT_EQ(bad, 0);
  locus::barrier(world());
  std::int64_t mine = 0;
  for (int from = 0; from < n; ++from)
    for (std::size_t k = 2; k < kOps; k += 4)
      mine += static_cast<int>(mix(k * 13 + static_cast<std::size_t>(from)) %
                               static_cast<std::uint64_t>(n)) == me;
  EXPECT_EQ(sums.data()[0], mine);
  locus::barrier(world());
}

// A target that computes outside locus (here: sleeps) while others
// aggregate to it. comm.aggregate.applier: progress: its progress process
// applies and answers, so the origins' updates, fetch, get and flush
// complete in far less than the target's 2 s. owner: the target applies at
// its progress points only, so the origins wait until it wakes (0.5 s).
// Either way the totals are exact when it comes back.
TEST(Applier, ATargetOutsideLocusHoldsUpItsOriginsOnlyWhenItApplies) {
  const bool by_server = Runtime::current().settings().aggregate.applier == locus::AggregateApplier::progress;
  const double sleep_s = by_server ? 2.0 : 0.5;
  const int me = world().rank(), n = world().size(), target = n - 1;
  bool one_node = true;
  for (int u = 0; u < n; ++u) one_node = one_node && world().same_node(u);
  if (one_node) GTEST_SKIP() << "one node: nothing is aggregated";
  constexpr int kWords = 64, kUpdates = 6400;  // 100 per word, several batches
  locus::Array<std::int64_t> a(world(), kWords, locus::AsyncHint::follow, AtomicMode::aggregate);
  for (int i = 0; i < kWords; ++i) a.data()[i] = 0;
  locus::barrier(world());
  const bool origin = !world().same_node(target);
  const double start = MPI_Wtime();
  double took = 0.0;
  if (me == target) {
    std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));  // no locus, no MPI
  } else if (origin) {
    for (int k = 0; k < kUpdates; ++k)
      locus::atomic_update(a.gptr(target) + k % kWords, std::int64_t{1}, Op::sum);
    const std::int64_t old = locus::fetch_and_op(a.gptr(target) + 1, std::int64_t{0}, Op::sum);
    std::int64_t seen = -1;
    locus::get_nbi(&seen, a.gptr(target) + 2, 1);
    locus::flush(world(), target);
    took = MPI_Wtime() - start;
    // My own updates came first in my stream: both answers include them.
    EXPECT_GE(old, kUpdates / kWords);
    EXPECT_GE(seen, kUpdates / kWords);
  }
  // The target enters locus again (owner: it applies its origins' batches
  // here, so they can finish their flush) before anything else waits.
  locus::barrier(world());
  double slowest = 0.0;
  int origins = 0;
  const int one = origin ? 1 : 0;
  MPI_Allreduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, world().comm());
  MPI_Allreduce(&one, &origins, 1, MPI_INT, MPI_SUM, world().comm());
  if (by_server) {
    EXPECT_LT(slowest, 1.0) << "an origin's updates and flush took " << slowest
                            << " s while the target slept 2 s: they waited for it";
  } else {
    EXPECT_GT(slowest, 0.4) << "an origin's flush took " << slowest
                            << " s while the target slept 0.5 s: who applied its updates?";
  }
  locus::barrier(world());
  if (me == target) {
    for (int i = 0; i < kWords; ++i) EXPECT_EQ(a.data()[i], std::int64_t{kUpdates / kWords} * origins) << i;
  }
  locus::barrier(world());
}

INSTANTIATE_TEST_SUITE_P(Modes, Atomics, ::testing::Values(AtomicMode::mpi, AtomicMode::aggregate),
                         [](const ::testing::TestParamInfo<AtomicMode>& i) {
                           return std::string(i.param == AtomicMode::mpi ? "mpi" : "aggregate");
                         });

}  // namespace
