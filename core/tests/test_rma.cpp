// The one-sided core at any rank count, with real or emulated nodes
// (--node-size, test_options.hpp): segments, global pointers, every transfer path,
// handles, atomics, teams and the error cases.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>

#if defined(__SANITIZE_ADDRESS__)
// From libasan (sanitizer/allocator_interface.h, not shipped with Debian's g++).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif
#include <unistd.h>

#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"
#include "runtime/runtime_state.hpp"
#include "test_options.hpp"

using locus::GlobalPtr;
using locus::Layout;
using locus::Route;
using locus::Runtime;
using locus::Team;

namespace {

Team& world() {
  return Runtime::current().world();
}

// A byte only (owner, index) determines.
unsigned char pattern(int owner, std::size_t i) {
  return static_cast<unsigned char>((owner * 131 + i * 7 + (i >> 8) * 13) & 0xff);
}

// Memory in use, in KiB. Under AddressSanitizer the resident size grows
// with its quarantine of freed blocks by design, so count live heap bytes
// (quarantine excluded) there; elsewhere the resident set size.
long memory_kib() {
#if defined(__SANITIZE_ADDRESS__)
  return static_cast<long>(__sanitizer_get_current_allocated_bytes() / 1024);
#else
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<long>(sysconf(_SC_PAGESIZE) / 1024);
#endif
}

// Memory mappings of the process: a shared-memory window that is never
// unmapped shows up here whatever the allocator does.
long mapping_count() {
  std::ifstream maps("/proc/self/maps");
  long n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

const Route kRoutes[] = {Route::automatic, Route::mpi};

}  // namespace

TEST(GlobalPtr, IsTriviallyCopyableAndHasArithmetic) {
  static_assert(std::is_trivially_copyable_v<GlobalPtr<double>>);
  locus::Array<double> a(world(), 16);
  GlobalPtr<double> p = a.gptr(0);
  EXPECT_EQ((p + 5).offset, 5 * sizeof(double));
  EXPECT_EQ((p + 5) - p, 5);
  GlobalPtr<double> q = p;
  ++q;
  EXPECT_EQ(q, p + 1);
  EXPECT_EQ(p.at(world().size() - 1).unit, world().size() - 1);
  // A global pointer survives a trip through memory and MPI.
  GlobalPtr<double> r;
  MPI_Bcast(&p, sizeof p, MPI_BYTE, 0, world().comm());
  std::memcpy(&r, &p, sizeof p);
  EXPECT_EQ(r.segment, a.gptr().segment);
}

TEST(GlobalPtr, CanBeStoredInASegmentAndUsedByAnotherUnit) {
  // Every unit publishes a pointer to one of its own elements in unit 0's
  // directory; everyone then reads the directory and follows the pointers.
  const int me = world().rank(), n = world().size();
  locus::Array<double> data(world(), 4);
  data.data()[2] = 10.0 * me + 0.5;
  locus::Array<GlobalPtr<double>> directory(world(), me == 0 ? static_cast<std::size_t>(n) : 0);
  GlobalPtr<double> mine = data.gptr(me) + 2;
  locus::put(directory.gptr(0) + me, &mine, 1);
  locus::barrier(world());
  std::vector<GlobalPtr<double>> all(static_cast<std::size_t>(n));
  locus::get(all.data(), directory.gptr(0), all.size());
  for (int u = 0; u < n; ++u) {
    EXPECT_EQ(all[u].unit, u);
    double v = -1;
    locus::get(&v, all[u], 1);
    EXPECT_EQ(v, 10.0 * u + 0.5);
  }
  locus::barrier(world());
}

TEST(GlobalPtr, LocalMatchesTheNodeMap) {
  locus::Array<int> a(world(), 4);
  const auto& nodes = Runtime::current().node_map();
  int me = world().rank();
  for (int u = 0; u < world().size(); ++u) {
    bool same = nodes.node_of[u] == nodes.node_of[me];
    EXPECT_EQ(a.gptr(u).local() != nullptr, same) << "unit " << u;
    EXPECT_EQ(a.gptr(u).is_local(), same && Runtime::current().settings().locality);
  }
  EXPECT_EQ(a.gptr(me).local(), a.data());
}

TEST(Segments, ZeroAndUnevenContributions) {
  // Unit u contributes u*3 elements: unit 0 nothing at all.
  const int me = world().rank();
  locus::Array<std::int64_t> a(world(), static_cast<std::size_t>(me) * 3);
  for (int i = 0; i < me * 3; ++i) a.data()[i] = 1000 * me + i;
  locus::barrier(world());
  for (int u = 1; u < world().size(); ++u) {
    std::vector<std::int64_t> got(static_cast<std::size_t>(u) * 3);
    locus::get(got.data(), a.gptr(u), got.size());
    for (int i = 0; i < u * 3; ++i) EXPECT_EQ(got[i], 1000 * u + i);
  }
  std::int64_t x = 0;
  locus::get(&x, a.gptr(0), 0);  // nothing to move: fine
  EXPECT_THROW(locus::get(&x, a.gptr(0), 1), locus::Error);
  locus::barrier(world());
}

class Transfer : public ::testing::TestWithParam<Route> {};

TEST_P(Transfer, GetAndPutEverySizeAndOffsetFromEveryUnit) {
  const Route route = GetParam();
  const std::size_t part = (3u << 20) + 64;  // several MiB per unit
  const int me = world().rank(), n = world().size();
  locus::Array<unsigned char> a(world(), part);
  for (std::size_t i = 0; i < part; ++i) a.data()[i] = pattern(me, i);
  locus::barrier(world());
  const std::size_t sizes[] = {0, 1, 4, 7, 8, 16, 4099, 3u << 20};  // 4, 8, 16: the inline copies
  const std::size_t offsets[] = {0, 3, 61};
  std::vector<unsigned char> buf(part);
  for (int u = 0; u < n; ++u)
    for (std::size_t size : sizes)
      for (std::size_t off : offsets) {
        if (off + size > part) continue;
        std::fill(buf.begin(), buf.end(), 0xAA);
        locus::get(buf.data(), a.gptr(u) + static_cast<std::ptrdiff_t>(off), size, route);
        long bad = 0;
        for (std::size_t i = 0; i < size; ++i) bad += buf[i] != pattern(u, off + i);
        EXPECT_EQ(bad, 0) << "get unit " << u << " size " << size << " offset " << off;
        EXPECT_EQ(buf[size], 0xAA) << "get wrote past the end";
      }
  locus::barrier(world());
  // Everyone puts a distinct odd-sized, unaligned block into its right neighbour.
  const int right = (me + 1) % n;
  const std::size_t size = 1000003, off = 5;
  std::vector<unsigned char> mine(size);
  for (std::size_t i = 0; i < size; ++i) mine[i] = pattern(me + 50, i);
  locus::put(a.gptr(right) + static_cast<std::ptrdiff_t>(off), mine.data(), size, route);
  locus::barrier(world());
  const int left = (me + n - 1) % n;
  long bad = 0;
  for (std::size_t i = 0; i < size; ++i) bad += a.data()[off + i] != pattern(left + 50, i);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(a.data()[off - 1], pattern(me, off - 1)) << "put wrote before its block";
  EXPECT_EQ(a.data()[off + size], pattern(me, off + size)) << "put wrote past its block";
  locus::barrier(world());
  // Small puts (the inline copies of 4, 8 and 16 bytes), unaligned, beyond
  // the block above.
  const std::size_t small[] = {4, 8, 16}, at = 2000000 + 3;
  for (std::size_t k = 0; k < 3; ++k)
    locus::put(a.gptr(right) + static_cast<std::ptrdiff_t>(at + 32 * k), mine.data() + 100 * k, small[k],
               route);
  locus::barrier(world());
  for (std::size_t k = 0; k < 3; ++k) {
    long wrong = 0;
    for (std::size_t i = 0; i < small[k]; ++i)
      wrong += a.data()[at + 32 * k + i] != pattern(left + 50, 100 * k + i);
    EXPECT_EQ(wrong, 0) << "put of " << small[k] << " B";
    EXPECT_EQ(a.data()[at + 32 * k + small[k]], pattern(me, at + 32 * k + small[k]))
        << "small put wrote past";
    EXPECT_EQ(a.data()[at + 32 * k - 1], pattern(me, at + 32 * k - 1)) << "small put wrote before";
  }
  locus::barrier(world());
}

TEST_P(Transfer, StridedFacesWithDifferentStridesOnEachSide) {
  const Route route = GetParam();
  const int me = world().rank(), n = world().size();
  // A 2-level layout: 5 rows of 4 blocks of 3 doubles; strides differ per unit.
  auto remote_layout = [](int u) {
    Layout l;
    l.block = 3, l.count = 4, l.stride = 5 + u, l.rows = 5, l.row_stride = 4 * (5 + u) + 2;
    return l;
  };
  Layout mine = remote_layout(me);
  locus::Array<double> a(world(), mine.extent() + 10);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = me * 1e4 + double(i);
  locus::barrier(world());
  Layout local;
  local.block = 3, local.count = 4, local.stride = 3, local.rows = 5, local.row_stride = 12;  // packed
  for (int u = 0; u < n; ++u) {
    Layout rl = remote_layout(u);
    std::vector<double> got(local.extent(), -1.0);
    locus::get(got.data(), local, a.gptr(u) + 2, rl, route);
    long bad = 0;
    for (std::size_t r = 0; r < 5; ++r)
      for (std::size_t c = 0; c < 4; ++c)
        for (std::size_t b = 0; b < 3; ++b)
          bad += got[r * 12 + c * 3 + b] != u * 1e4 + double(2 + r * rl.row_stride + c * rl.stride + b);
    EXPECT_EQ(bad, 0) << "strided get from " << u;
  }
  locus::barrier(world());
  // Put a packed block strided into the right neighbour, non-blocking.
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<double> src(local.extent());
  std::iota(src.begin(), src.end(), 100.0 * me);
  locus::Handle h = locus::put_async(a.gptr(right) + 2, remote_layout(right), src.data(), local, route);
  locus::wait(h);
  locus::barrier(world());
  long bad = 0;
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t c = 0; c < 4; ++c)
      for (std::size_t b = 0; b < 3; ++b)
        bad += a.data()[2 + r * mine.row_stride + c * mine.stride + b] !=
               100.0 * left + double(r * 12 + c * 3 + b);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(a.data()[0], me * 1e4) << "strided put wrote outside its layout";
  locus::barrier(world());
  Layout other = local;
  other.block = 2;
  std::vector<double> tmp(100);
  EXPECT_THROW(locus::get(tmp.data(), other, a.gptr(me), local, route), locus::Error);
}

TEST_P(Transfer, LocalAndRemoteMixedInOneWaitAll) {
  const Route route = GetParam();
  const int me = world().rank(), n = world().size();
  const std::size_t part = 4096;
  locus::Array<std::int32_t> a(world(), part);
  for (std::size_t i = 0; i < part; ++i) a.data()[i] = me * 100000 + static_cast<int>(i);
  locus::barrier(world());
  std::vector<std::vector<std::int32_t>> got(static_cast<std::size_t>(n), std::vector<std::int32_t>(part));
  std::vector<locus::Handle> hs;
  for (int u = 0; u < n; ++u) hs.push_back(locus::get_async(got[u].data(), a.gptr(u), part, route));
  locus::wait_all(hs);
  for (const auto& h : hs) EXPECT_TRUE(h.done());
  for (int u = 0; u < n; ++u)
    for (std::size_t i = 0; i < part; i += 97) EXPECT_EQ(got[u][i], u * 100000 + static_cast<int>(i));
  locus::barrier(world());
  // Puts to everyone (into my own slot of their part), completed together.
  std::vector<std::int32_t> v(4, -me - 1);
  hs.clear();
  for (int u = 0; u < n; ++u) hs.push_back(locus::put_async(a.gptr(u) + 4 * me, v.data(), 4, route));
  locus::wait_all(hs);
  locus::barrier(world());
  for (int u = 0; u < n; ++u)
    for (int k = 0; k < 4; ++k) EXPECT_EQ(a.data()[4 * u + k], -u - 1);
  locus::barrier(world());
}

TEST_P(Transfer, ManyOutstandingHandles) {
  const Route route = GetParam();
  const int me = world().rank(), n = world().size();
  const std::size_t count = 1000;
  locus::Array<double> a(world(), count);
  for (std::size_t i = 0; i < count; ++i) a.data()[i] = me + i * 1e-3;
  locus::barrier(world());
  const int right = (me + 1) % n;
  std::vector<double> got(count, -1);
  std::vector<locus::Handle> hs;
  for (std::size_t i = 0; i < count; ++i)
    hs.push_back(locus::get_async(&got[i], a.gptr(right) + i, 1, route));
  // Poll a few with test() before completing all.
  for (int spin = 0; spin < 100 && !locus::test(hs[0]); ++spin) {
  }
  locus::wait_all(hs);
  long bad = 0;
  for (std::size_t i = 0; i < count; ++i) bad += got[i] != right + i * 1e-3;
  EXPECT_EQ(bad, 0);
  locus::barrier(world());
}

INSTANTIATE_TEST_SUITE_P(Routes, Transfer, ::testing::ValuesIn(kRoutes),
                         [](const auto& info) { return info.param == Route::mpi ? "mpi" : "automatic"; });

template <class T>
void fetch_add_is_exact(int iterations) {
  const int me = world().rank(), n = world().size();
  locus::Array<T> counter(world(), 1);
  counter.data()[0] = 0;
  locus::barrier(world());
  std::vector<T> seen(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i) seen[i] = locus::fetch_and_op(counter.gptr(0), T(1), locus::Op::sum);
  locus::barrier(world());
  T total = locus::fetch_and_op(counter.gptr(0), T(0), locus::Op::sum);
  EXPECT_EQ(total, T(n) * T(iterations));
  // The returned values are a permutation of 0 .. n*iterations-1.
  std::vector<T> all(seen.size() * static_cast<std::size_t>(n));
  MPI_Allgather(seen.data(), iterations * int(sizeof(T)), MPI_BYTE, all.data(), iterations * int(sizeof(T)),
                MPI_BYTE, world().comm());
  std::sort(all.begin(), all.end());
  long bad = 0;
  for (std::size_t i = 0; i < all.size(); ++i) bad += all[i] != T(i);
  EXPECT_EQ(bad, 0);
  (void)me;
  locus::barrier(world());
}

TEST(Atomics, FetchAndAddTenThousandPerUnit) {
  fetch_add_is_exact<std::int64_t>(10000);
}
TEST(Atomics, FetchAndAddInt32AndDouble) {
  fetch_add_is_exact<std::int32_t>(2000);
  fetch_add_is_exact<double>(2000);
}

TEST(Atomics, AccumulateSumMinMaxReplace) {
  const int me = world().rank(), n = world().size();
  locus::Array<double> a(world(), 4);
  if (me == 0) a.data()[0] = 0, a.data()[1] = 1e9, a.data()[2] = -1e9, a.data()[3] = -1;
  locus::barrier(world());
  double v = me + 1.5;
  locus::accumulate(a.gptr(0) + 0, &v, 1, locus::Op::sum);
  locus::accumulate(a.gptr(0) + 1, &v, 1, locus::Op::min);
  locus::accumulate(a.gptr(0) + 2, &v, 1, locus::Op::max);
  locus::accumulate(a.gptr(0) + 3, &v, 1, locus::Op::replace);
  locus::barrier(world());
  double got[4];
  locus::get(got, a.gptr(0), 4);
  EXPECT_EQ(got[0], n * (n + 1) / 2.0 + n * 0.5);
  EXPECT_EQ(got[1], 1.5);
  EXPECT_EQ(got[2], n + 0.5);
  EXPECT_GE(got[3], 1.5);  // some unit's value
  EXPECT_LE(got[3], n + 0.5);
  locus::barrier(world());
  // Vector accumulate of int64 into everyone.
  locus::Array<std::int64_t> b(world(), 3);
  std::fill(b.data(), b.data() + 3, 0);
  locus::barrier(world());
  std::int64_t add[3] = {1, me, 10};
  for (int u = 0; u < n; ++u) locus::accumulate(b.gptr(u), add, 3, locus::Op::sum);
  locus::barrier(world());
  EXPECT_EQ(b.data()[0], n);
  EXPECT_EQ(b.data()[1], n * (n - 1) / 2);
  EXPECT_EQ(b.data()[2], 10 * n);
  locus::barrier(world());
}

TEST(Atomics, StridedAndNonBlockingAccumulateAndBxor) {
  const int me = world().rank(), n = world().size();
  // Every unit adds 1 + me into a column (every 4th element) of every unit,
  // non-blocking, then XORs a pattern into element 0 of unit 0.
  locus::Array<std::int64_t> a(world(), 4 * 16);
  std::fill(a.data(), a.data() + a.size(), 0);
  locus::barrier(world());
  const Layout column{1, 16, 4, 1, 0}, dense{1, 16, 1, 1, 0};
  std::vector<std::int64_t> ones(16, 1 + me);
  std::vector<locus::Handle> hs;
  for (int u = 0; u < n; ++u)
    hs.push_back(locus::accumulate_async(a.gptr(u) + 1, column, ones.data(), dense, locus::Op::sum));
  locus::wait_all(hs);
  const std::int64_t bits = std::int64_t(1) << (me % 60);
  locus::Handle x = locus::accumulate_async(a.gptr(0) + 2, &bits, 1, locus::Op::bxor);
  locus::wait(x);
  locus::barrier(world());
  const std::int64_t sum = static_cast<std::int64_t>(n) * (n + 1) / 2;
  long bad = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    bad += a.data()[4 * i + 1] != sum;
    bad += a.data()[4 * i + 3] != 0;
  }
  EXPECT_EQ(bad, 0);
  if (me == 0) {
    std::int64_t expect = 0;
    for (int u = 0; u < n; ++u) expect ^= std::int64_t(1) << (u % 60);
    EXPECT_EQ(a.data()[2], expect);
  }
  const double d = 1.0;
  EXPECT_THROW(locus::accumulate(locus::Array<double>(world(), 1).gptr(0), &d, 1, locus::Op::bxor),
               locus::Error);
  locus::barrier(world());
}

TEST(Handles, SpentMovedAndDestroyed) {
  const int me = world().rank(), n = world().size();
  const int right = (me + 1) % n;
  locus::Array<double> a(world(), 64);
  std::fill(a.data(), a.data() + a.size(), -1.0);
  locus::barrier(world());
  std::vector<double> v(8, me + 0.5);
  locus::Handle h = locus::put_async(a.gptr(right), v.data(), 8);
  EXPECT_TRUE(h.live());
  locus::Handle moved = std::move(h);
  EXPECT_FALSE(h.live());
  EXPECT_THROW(locus::wait(h), locus::Error);  // moved from
  locus::wait(moved);
  EXPECT_THROW(locus::wait(moved), locus::Error);  // spent
  EXPECT_THROW((void)locus::test(moved), locus::Error);
  locus::Handle never;
  EXPECT_THROW(locus::wait(never), locus::Error);
  {
    // Destroyed while in flight: the put still completes.
    locus::Handle dropped = locus::put_async(a.gptr(right) + 8, v.data(), 8);
  }
  // Assigned over while in flight: the first put completes too.
  locus::Handle reused = locus::put_async(a.gptr(right) + 16, v.data(), 8);
  reused = locus::put_async(a.gptr(right) + 24, v.data(), 8);
  locus::wait(reused);
  locus::barrier(world());
  const int left = (me + n - 1) % n;
  long bad = 0;
  for (std::size_t i = 0; i < 32; ++i) bad += a.data()[i] != left + 0.5;
  EXPECT_EQ(bad, 0);
  locus::barrier(world());
}

TEST(Atomics, CompareAndSwapHasOneWinner) {
  const int me = world().rank(), n = world().size();
  locus::Array<std::int32_t> flag(world(), 1);
  locus::Array<double> dflag(world(), 1);
  flag.data()[0] = 0;
  dflag.data()[0] = 0.0;
  locus::barrier(world());
  std::int32_t old = locus::compare_and_swap(flag.gptr(n - 1), 0, me + 1);
  double dold = locus::compare_and_swap(dflag.gptr(0), 0.0, me + 0.25);
  int won = old == 0, dwon = dold == 0.0;
  MPI_Allreduce(MPI_IN_PLACE, &won, 1, MPI_INT, MPI_SUM, world().comm());
  MPI_Allreduce(MPI_IN_PLACE, &dwon, 1, MPI_INT, MPI_SUM, world().comm());
  EXPECT_EQ(won, 1);
  EXPECT_EQ(dwon, 1);
  locus::barrier(world());
  std::int32_t final_value = locus::fetch_and_op(flag.gptr(n - 1), 0, locus::Op::sum);
  EXPECT_GE(final_value, 1);
  EXPECT_LE(final_value, n);
  // Replace returns the previous value.
  locus::barrier(world());
  if (me == 0) {
    std::int32_t prev = locus::fetch_and_op(flag.gptr(n - 1), std::int32_t(-7), locus::Op::replace);
    EXPECT_EQ(prev, final_value);
  }
  locus::barrier(world());
}

// Producer/consumer without barriers: every unit sends to its right
// neighbour each step and receives from its left one, double-buffered by
// step parity. A unit's progress depends only on its left neighbour, so
// around a ring of n it may run up to n - 1 steps ahead of its right one:
// the consumer acknowledges every step (a flag back to its producer), and
// the producer writes step s only after the ack of step s - 2.
TEST(Notified, PutNotifyRingWithoutBarriers) {
  const int me = world().rank(), n = world().size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const std::size_t count = 1000;
  locus::Array<double> inbox(world(), 2 * count);
  locus::Array<std::uint64_t> flag(world(), 2);  // [0]: data from the left, [1]: ack from the right
  flag.data()[0] = flag.data()[1] = 0;
  locus::barrier(world());
  std::vector<double> out(count);
  long bad = 0;
  for (std::uint64_t step = 1; step <= 200; ++step) {
    const std::size_t parity = step % 2;
    for (std::size_t i = 0; i < count; ++i) out[i] = me * 1e6 + static_cast<double>(step) * 1e3 + i;
    if (step > 2) locus::wait_notify(flag.data() + 1, step - 2);
    locus::put_notify(inbox.gptr(right) + static_cast<std::ptrdiff_t>(parity * count), out.data(), count,
                      flag.gptr(right), step);
    locus::wait_notify(flag.data(), step);
    const double* in = inbox.data() + parity * count;
    for (std::size_t i = 0; i < count; ++i) bad += in[i] != left * 1e6 + static_cast<double>(step) * 1e3 + i;
    locus::notify(flag.gptr(left) + 1, step);
  }
  EXPECT_EQ(bad, 0);
  locus::barrier(world());
}

// Run by core.rank_failure only (--fail-on-rank=r): fails on rank r alone,
// then meets the others in a barrier.
TEST(Harness, FailureOnOneRankIsPrinted) {
  const int r = locus::testing::test_options().fail_on_rank;
  if (r < 0) GTEST_SKIP() << "only for core.rank_failure (--fail-on-rank)";
  EXPECT_NE(world().rank(), r) << "deliberate failure on rank " << world().rank();
  locus::barrier(world());
}

TEST(Teams, SplitAndAllocatePerTeam) {
  const int me = world().rank();
  auto team = world().split(me % 2);
  EXPECT_EQ(team->size(), (world().size() + 1 - me % 2) / 2);
  EXPECT_EQ(team->rank(), me / 2);
  EXPECT_NE(team->id(), world().id());
  locus::Array<int> a(*team, 8);
  for (int i = 0; i < 8; ++i) a.data()[i] = me * 10 + i;
  locus::barrier(*team);
  EXPECT_EQ(a.gptr().team, team->id());
  for (int u = 0; u < team->size(); ++u) {
    int got[8];
    locus::get(got, a.gptr(u), 8);
    int world_unit = u * 2 + me % 2;
    for (int i = 0; i < 8; ++i) EXPECT_EQ(got[i], world_unit * 10 + i);
  }
  // Node ranks within the team agree with the node map.
  const auto& nodes = Runtime::current().node_map();
  for (int u = 0; u < team->size(); ++u)
    EXPECT_EQ(team->same_node(u), nodes.node_of[u * 2 + me % 2] == nodes.node_of[me]);
  locus::barrier(*team);
}

TEST(Teams, NodeTeamHoldsMyNodesUnits) {
  Team& node = Runtime::current().node();
  const auto& nodes = Runtime::current().node_map();
  int mine = 0;
  for (int u = 0; u < world().size(); ++u) mine += nodes.node_of[u] == nodes.node_of[world().rank()];
  EXPECT_EQ(node.size(), mine);
  // Everyone in it is on my node: all transfers take the shared-memory path.
  locus::Array<int> a(node, 1);
  a.data()[0] = world().rank();
  locus::barrier(node);
  for (int u = 0; u < node.size(); ++u) {
    EXPECT_TRUE(node.same_node(u));
    EXPECT_NE(a.gptr(u).local(), nullptr);
  }
  locus::barrier(node);
}

TEST(Segments, FreeInAnyOrder) {
  auto p1 = locus::allocate<int>(world(), 10);
  auto p2 = locus::allocate<double>(world(), 0);
  auto p3 = locus::allocate<char>(world(), 100);
  std::size_t before = locus::detail::core().segments.count();
  locus::free(p2);
  locus::free(p1);
  locus::free(p3);
  EXPECT_EQ(locus::detail::core().segments.count(), before - 3);
}

TEST(Segments, TenThousandAllocateFreeCyclesDoNotGrow) {
  if (world().size() > 2) GTEST_SKIP() << "run at 1 and 2 ranks (each cycle synchronises)";
  auto cycle = [](int times) {
    for (int i = 0; i < times; ++i) {
      locus::Array<double> a(world(), 1000 + static_cast<std::size_t>(i % 7));
      a.data()[0] = i;
    }
  };
  cycle(1000);  // warm-up: MPI's internal pools reach their steady size
  long before = memory_kib(), maps_before = mapping_count();
  cycle(10000);
  long growth[2] = {memory_kib() - before, mapping_count() - maps_before};
  MPI_Allreduce(MPI_IN_PLACE, growth, 2, MPI_LONG, MPI_MAX, world().comm());
  EXPECT_LT(growth[0], 2048) << "memory grew by " << growth[0] << " KiB over 10,000 cycles";
  EXPECT_LT(growth[1], 16) << growth[1] << " more memory mappings after 10,000 cycles";
}

TEST(Errors, OutOfRangePointer) {
  locus::Array<double> a(world(), 10);
  double x[4];
  EXPECT_THROW(locus::get(x, a.gptr(0) + 8, 4), locus::Error);
  EXPECT_THROW(locus::put(a.gptr(0) + 10, x, 1), locus::Error);
  EXPECT_THROW(locus::get(x, a.gptr(world().size()), 1), locus::Error);
  try {
    locus::get(x, a.gptr(0) + 8, 4);
  } catch (const locus::Error& e) {
    EXPECT_NE(std::string(e.what()).find("run past the end of unit 0's part (80 bytes)"), std::string::npos)
        << e.what();
  }
  locus::barrier(world());
}

TEST(Errors, FreedSegment) {
  auto p = locus::allocate<int>(world(), 4);
  locus::free(p);
  int x = 0;
  try {
    locus::get(&x, p, 1);
    FAIL() << "no error";
  } catch (const locus::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not allocated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(locus::free(p), locus::Error);
}

TEST(Errors, AllocationsTooLargeForTheNodeOrOverflowing) {
  const int me = world().rank();
  // Only unit 0 asks for too much: every unit must get the same error, and
  // the core must stay usable afterwards.
  try {
    locus::Array<double> huge(world(), me == 0 ? std::size_t(1) << 50 : 16);
    ADD_FAILURE() << "an 8 PiB allocation succeeded";
  } catch (const locus::CollectiveError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("need 8388608.0 GiB of shared memory, but the node has"), std::string::npos) << what;
  }
  try {
    locus::Array<double> wraps(world(), me == world().size() - 1 ? ~std::size_t(0) / 4 : 16);
    ADD_FAILURE() << "an overflowing allocation succeeded";
  } catch (const locus::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("overflow a 64-bit size"), std::string::npos) << e.what();
  }
  locus::Array<double> fine(world(), 16);
  fine.data()[0] = me;
  locus::barrier(world());
  double got = -1;
  locus::get(&got, fine.gptr((me + 1) % world().size()), 1);
  EXPECT_EQ(got, (me + 1) % world().size());
  locus::barrier(world());
}

TEST(Errors, MismatchedCollectiveCalls) {
  if (world().size() < 2) GTEST_SKIP() << "needs two units to disagree";
  const int me = world().rank();
  try {
    if (me == 0)
      locus::allocate<double>(world(), 4);
    else
      locus::allocate<int>(world(), 4);
    FAIL() << "no error";
  } catch (const locus::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("mismatched collective call"), std::string::npos) << e.what();
  }
  auto a = locus::allocate<int>(world(), 4);
  auto b = locus::allocate<int>(world(), 4);
  try {
    locus::free(me == 0 ? a : b);
    FAIL() << "no error";
  } catch (const locus::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("units free different segments"), std::string::npos) << e.what();
  }
  locus::free(a);
  locus::free(b);
}
