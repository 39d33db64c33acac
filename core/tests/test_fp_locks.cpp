// Same-node floating-point atomics under stripe locks (comm.fp_locks:
// core/mem/stripe_locks.hpp). Every unit adds to every unit's part at once,
// by every call that reaches the locked paths: runs of accumulate_async
// and accumulate_nbi that cross the 4 KiB stripes, single atomic_update
// and fetch_and_op, and compare-and-swap loops on elements that others add
// to meanwhile. The values are whole numbers, so the sums are exact in any
// order: one lost update leaves an element short. CTest runs it with
// --fp-locks on one node (1, 2, 4 ranks), on emulated nodes of 2 with
// aggregated atomics (the owner applies other nodes' records under the
// same locks), and without --fp-locks (the compare-and-swap loops), so
// both mechanisms give the same exact values.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"
#include "mem/stripe_locks.hpp"
#include "test_options.hpp"

using locus::AtomicMode;
using locus::Op;
using locus::Runtime;
using locus::Team;

namespace {

Team& world() {
  return Runtime::current().world();
}

// Elements per part: three stripes of doubles and a partial fourth.
constexpr std::size_t kN = 3 * (std::size_t(1) << locus::detail::kStripeShift) / sizeof(double) + 37;
constexpr int kRounds = 24;

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

// What origin `o` does to target `u` in round r: a run [first, first + len)
// of +1 by accumulate_async, a run of +2 by accumulate_nbi, +4 on one
// element by atomic_update and +8 on another by fetch_and_op.
struct Round {
  std::size_t first, len, nbi_first, nbi_len, single, fetched;
};
Round round_of(int o, int u, int r) {
  const std::uint64_t h = mix((static_cast<std::uint64_t>(o) * 131 + static_cast<std::uint64_t>(u)) * 977 +
                              static_cast<std::uint64_t>(r));
  Round x{};
  x.first = h % kN;
  x.len = 1 + (h >> 12) % (kN - x.first);
  x.nbi_first = (h >> 24) % kN;
  x.nbi_len = 1 + (h >> 36) % std::min<std::size_t>(700, kN - x.nbi_first);
  x.single = (h >> 44) % kN;
  x.fetched = (h >> 52) % kN;
  return x;
}

void concurrent_adds(AtomicMode mode) {
  const int me = world().rank(), n = world().size();
  locus::Array<double> a(world(), kN, locus::AsyncHint::follow, mode);
  EXPECT_EQ(locus::segment_state(a.gptr()).fp_locks, locus::testing::test_options().settings.fp_locks);
  for (std::size_t i = 0; i < kN; ++i) a.data()[i] = 0.0;
  locus::barrier(world());
  const std::vector<double> ones(kN, 1.0), twos(kN, 2.0);
  for (int r = 0; r < kRounds; ++r)
    for (int k = 0; k < n; ++k) {
      const int u = (me + k) % n;  // everyone starts with a different target
      const Round x = round_of(me, u, r);
      auto at = [&](std::size_t i) { return a.gptr(u) + static_cast<std::ptrdiff_t>(i); };
      locus::Handle h = locus::accumulate_async(at(x.first), ones.data(), x.len, Op::sum);
      locus::accumulate_nbi(at(x.nbi_first), twos.data(), x.nbi_len, Op::sum);
      locus::atomic_update(at(x.single), 4.0, Op::sum);
      const double old = locus::fetch_and_op(at(x.fetched), 8.0, Op::sum);
      EXPECT_GE(old, 0.0);
      locus::wait(h);
    }
  locus::flush(world());
  locus::barrier(world());
  std::vector<double> want(kN, 0.0);
  for (int o = 0; o < n; ++o)
    for (int r = 0; r < kRounds; ++r) {
      const Round x = round_of(o, me, r);
      for (std::size_t i = x.first; i < x.first + x.len; ++i) want[i] += 1.0;
      for (std::size_t i = x.nbi_first; i < x.nbi_first + x.nbi_len; ++i) want[i] += 2.0;
      want[x.single] += 4.0;
      want[x.fetched] += 8.0;
    }
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kN; ++i) wrong += a.data()[i] != want[i];
  EXPECT_EQ(wrong, 0u) << "elements of unit " << me << " lost updates";
  locus::barrier(world());
}

TEST(FpLocks, ConcurrentRunsAndElementsLoseNoUpdate) {
  concurrent_adds(AtomicMode::automatic);
}

TEST(FpLocks, AggregatedRecordsLoseNoUpdate) {
  concurrent_adds(AtomicMode::aggregate);
}

// Compare-and-swap increments of one double on every unit, while the
// others add to it: the swaps take the stripe lock, so no add slips in
// between a swap's compare and its store.
TEST(FpLocks, CompareAndSwapAgainstAdds) {
  const int me = world().rank(), n = world().size();
  // aggregated: on emulated nodes, other nodes' swaps and adds are records
  // the owner applies under the same locks (MPI's own atomics need not be
  // atomic across a double's sum and a 64-bit swap)
  locus::Array<double> a(world(), 8, locus::AsyncHint::follow, AtomicMode::aggregate);
  for (int i = 0; i < 8; ++i) a.data()[i] = 0.0;
  locus::barrier(world());
  constexpr int kEach = 100;
  for (int k = 0; k < kEach; ++k)
    for (int u = 0; u < n; ++u) {
      const auto p = a.gptr(u) + 3;
      if ((me + k) % 2) {
        locus::atomic_update(p, 1.0, Op::sum);
        locus::flush(world(), u);
      } else {
        double seen = 0.0;
        for (;;) {
          const double got = locus::compare_and_swap(p, seen, seen + 1.0);
          if (got == seen) break;
          seen = got;
        }
      }
    }
  locus::flush(world());
  locus::barrier(world());
  EXPECT_EQ(a.data()[3], double(kEach * n));
  locus::barrier(world());
}

// The pieces of a run: consecutive, covering it, each within the stripe of
// its elements' first bytes (an element across a boundary goes with its
// first byte).
TEST(FpLocks, PiecesFollowTheStripes) {
  using locus::detail::kStripeShift;
  std::vector<char> area(locus::detail::kStripeArea, 0);
  for (std::uint64_t offset : {0ull, 8ull, 4090ull, 4096ull, 12284ull})
    for (std::size_t esize : {4u, 8u})
      for (std::size_t n : {1u, 511u, 512u, 513u, 3000u}) {
        std::size_t next = 0;
        locus::detail::locked_pieces(area.data(), offset, esize, n, [&](std::size_t k, std::size_t m) {
          EXPECT_EQ(k, next);
          ASSERT_GT(m, 0u);
          const std::uint64_t s = (offset + k * esize) >> kStripeShift;
          EXPECT_EQ((offset + (k + m - 1) * esize) >> kStripeShift, s) << offset << " " << esize << " " << n;
          if (k + m < n) {
            EXPECT_EQ((offset + (k + m) * esize) >> kStripeShift, s + 1);
          }
          next = k + m;
        });
        EXPECT_EQ(next, n);
      }
  for (char c : area) EXPECT_EQ(c, 0) << "a lock was left held";
}

}  // namespace
