// Several threads of every unit call the core at once (MPI_THREAD_MULTIPLE):
// blocking and non-blocking gets and puts, strided transfers, accumulates
// and fetch-and-ops, each thread with its own handles. The results must be
// exact.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"

namespace {

using locus::Array;
using locus::Layout;

constexpr int kThreads = 4;
constexpr std::size_t kSlice = 2048;  // elements per thread (16 KiB: above the offload threshold)
constexpr int kRounds = 50;

locus::Team& world() {
  return locus::Runtime::current().world();
}

double pattern(int unit, std::size_t i) {
  return unit * 1e6 + static_cast<double>(i);
}

// Runs fn(thread index) on kThreads threads; failures are collected, not
// thrown across threads.
void on_threads(const std::function<void(int)>& fn) {
  std::vector<std::thread> ts;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      try {
        fn(t);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
        ++errors;
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(errors.load(), 0);
}

TEST(Threads, ConcurrentGetsPutsAndAtomics) {
  const int me = world().rank(), n = world().size();
  Array<double> src(world(), kThreads * kSlice);
  Array<double> dst(world(), kThreads * kSlice);
  Array<std::int64_t> counter(world(), 1);
  for (std::size_t i = 0; i < src.size(); ++i) src.data()[i] = pattern(me, i);
  std::fill(dst.data(), dst.data() + dst.size(), -1.0);
  counter.data()[0] = 0;
  locus::barrier(world());

  on_threads([&](int t) {
    const int right = (me + 1) % n;
    const std::size_t base = static_cast<std::size_t>(t) * kSlice;
    std::vector<double> got(kSlice);
    for (int r = 0; r < kRounds; ++r) {
      const int from = (me + t + r) % n;
      // non-blocking contiguous get, own handle
      locus::Handle h =
          locus::get_async(got.data(), src.gptr(from) + static_cast<std::ptrdiff_t>(base), kSlice);
      locus::wait(h);
      for (std::size_t i = 0; i < kSlice; i += 101)
        if (got[i] != pattern(from, base + i)) throw locus::Error("get_async returned a wrong value");
      // strided blocking get: every other element
      Layout every_other{1, kSlice / 2, 2, 1, 0}, dense{1, kSlice / 2, 1, 1, 0};
      locus::get(got.data(), dense, src.gptr(from) + static_cast<std::ptrdiff_t>(base), every_other);
      for (std::size_t i = 0; i < kSlice / 2; i += 37)
        if (got[i] != pattern(from, base + 2 * i)) throw locus::Error("strided get returned a wrong value");
      // atomics on one shared counter
      locus::accumulate(counter.gptr(0), std::vector<std::int64_t>{1}.data(), 1, locus::Op::sum);
      (void)locus::fetch_and_op(counter.gptr(n - 1), std::int64_t{2}, locus::Op::sum);
    }
    // my thread's slice of my part goes to the same slice of my right neighbour
    std::vector<locus::Handle> hs;
    hs.push_back(
        locus::put_async(dst.gptr(right) + static_cast<std::ptrdiff_t>(base), src.data() + base, kSlice / 2));
    locus::put(dst.gptr(right) + static_cast<std::ptrdiff_t>(base + kSlice / 2),
               src.data() + base + kSlice / 2, kSlice / 2);
    locus::wait_all(hs);
  });
  locus::flush(world());
  locus::barrier(world());
  if (locus::Runtime::current().settings().progress.processes_per_node > 0) {
    EXPECT_GT(locus::Runtime::current().offloaded(), 0u) << "no transfer went through the progress process";
  }
  const int left = (me + n - 1) % n;
  long bad = 0;
  for (std::size_t i = 0; i < dst.size(); ++i) bad += dst.data()[i] != pattern(left, i);
  EXPECT_EQ(bad, 0) << "puts from " << kThreads << " threads";
  const std::int64_t expect0 = static_cast<std::int64_t>(n) * kThreads * kRounds * (n == 1 ? 3 : 1);
  if (me == 0) {
    EXPECT_EQ(counter.data()[0], expect0) << "accumulates lost";
  }
  if (me == n - 1 && n > 1) {
    EXPECT_EQ(counter.data()[0], 2 * static_cast<std::int64_t>(n) * kThreads * kRounds)
        << "fetch_and_ops lost";
  }
  locus::barrier(world());
}

}  // namespace
