// Same-node accumulate runs by hardware transactions (core/mem/htm.hpp):
// the same values as one CPU atomic per element, and atomic per element
// when threads apply runs to the same elements at once, with transactions
// and with plain CPU atomics mixed. On a CPU without RTM (or with it hidden
// by LOCUS_CPU_HIDE=rtm, as one CTest registration runs this) every run takes
// the atomics and the same checks hold; no XBEGIN is issued. The fallback is
// also tested in every run by hiding RTM inside the test.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "locus/detail/lookahead.hpp"
#include "mem/htm.hpp"

using locus::Op;
using locus::detail::cpu_apply;
using locus::detail::cpu_has_rtm;
using locus::detail::htm_counts;
using locus::detail::plain_update;
using locus::detail::PrefetchedBatch;
using locus::detail::transactional_run;
using locus::detail::TransactionalBatch;

namespace {

struct HtmCountsDelta {
  std::uint64_t commits = 0, aborts = 0;
};
void scattered_xor(std::vector<std::uint64_t>& t, std::uint64_t seed, std::size_t n);

// One run of `dst` op= `v` by transactions (atomics where they abort).
template <class T>
void run(Op op, T* dst, const T* v, std::size_t n) {
  plain_update<T>(op, [&](auto plain) {
    transactional_run(dst, v, n, plain, [op](T* a, T x) { cpu_apply(a, x, op, std::memory_order_relaxed); });
  });
}

void same_values_as_cpu_atomics();
TEST(Htm, SameValuesAsCpuAtomics) {
  same_values_as_cpu_atomics();
}

void same_values_as_cpu_atomics() {
  const std::size_t n = 1000;  // 15 chunks of 64 doubles and a partial one
  for (Op op : {Op::sum, Op::min, Op::max, Op::replace}) {
    std::vector<double> a(n), b(n), v(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = b[i] = 0.25 * double(i % 13) - 1.0;
      v[i] = 0.5 * double(i % 7) - 1.5;
    }
    run(op, a.data(), v.data(), n);
    for (std::size_t i = 0; i < n; ++i) cpu_apply(&b[i], v[i], op);
    EXPECT_EQ(a, b) << "op " << int(op);
  }
  std::vector<std::uint64_t> x(300, 0x5555), y(300, 0x5555), w(300);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = i * 0x9e3779b97f4a7c15ULL;
  run(Op::bxor, x.data(), w.data(), x.size());
  for (std::size_t i = 0; i < y.size(); ++i) cpu_apply(&y[i], w[i], Op::bxor);
  EXPECT_EQ(x, y);
}

// Hides RTM for the scope (LOCUS_CPU_HIDE=rtm), restoring the variable after.
class HiddenRtm {
 public:
  HiddenRtm() {
    const char* old = std::getenv("LOCUS_CPU_HIDE");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("LOCUS_CPU_HIDE", "rtm", 1);
    locus::cpu::reset_for_tests();
  }
  ~HiddenRtm() {
    if (had_)
      setenv("LOCUS_CPU_HIDE", old_.c_str(), 1);
    else
      unsetenv("LOCUS_CPU_HIDE");
    locus::cpu::reset_for_tests();
  }

 private:
  bool had_ = false;
  std::string old_;
};

// Runs of sums: the values, and the transactions counted.
HtmCountsDelta sum_runs() {
  std::vector<double> a(4096, 0.0), v(4096, 1.0);
  const auto before = htm_counts();
  for (int r = 0; r < 10; ++r) run(Op::sum, a.data(), v.data(), a.size());
  const auto after = htm_counts();
  for (double x : a) EXPECT_EQ(x, 10.0);
  return {after.commits - before.commits, after.aborts - before.aborts};
}

TEST(Htm, CommitsWhereTheCpuHasRtm) {
  if (!cpu_has_rtm())
    GTEST_SKIP() << "this CPU has no RTM"
                 << (locus::cpu::features().hidden.empty() ? "" : " (hidden by LOCUS_CPU_HIDE)")
                 << ": the transactional path cannot run; the fallback is tested by the other Htm tests";
  const HtmCountsDelta d = sum_runs();
  EXPECT_GT(d.commits, 0u) << "RTM reported but no transaction committed";
  std::printf("RTM present: %llu transactions committed, %llu aborted\n",
              static_cast<unsigned long long>(d.commits), static_cast<unsigned long long>(d.aborts));
}

// The fallback on any CPU: with RTM hidden, no transaction is attempted
// (none committed, none aborted) and the values are the same.
TEST(Htm, HiddenRtmTakesTheAtomics) {
  HiddenRtm hide;
  ASSERT_FALSE(cpu_has_rtm());
  const HtmCountsDelta d = sum_runs();
  EXPECT_EQ(d.commits, 0u);
  EXPECT_EQ(d.aborts, 0u) << "a transaction was attempted with RTM hidden";
  std::vector<std::uint64_t> a(500, 3), b(500, 3);
  const auto before = htm_counts();
  scattered_xor(a, 9, 4000);
  EXPECT_EQ(htm_counts().commits, before.commits);
  EXPECT_EQ(htm_counts().aborts, before.aborts) << "a batch transaction was attempted with RTM hidden";
  std::uint64_t r = 9;
  for (std::size_t i = 0; i < 4000; ++i) {
    r = r * 6364136223846793005ULL + 1442695040888963407ULL;
    b[(r >> 33) % b.size()] ^= r;
  }
  EXPECT_EQ(a, b);
}

TEST(Htm, SameValuesWithRtmHidden) {
  HiddenRtm hide;
  same_values_as_cpu_atomics();
}

// Three threads add to the same 1024 doubles at once: two by runs
// (transactions), one by one CPU atomic per element. Every addition of 1
// must survive: a lost update leaves an element short.
TEST(Htm, AtomicAgainstTransactionsAndAtomics) {
  const std::size_t n = 1024;
  const int rounds = 3000;
  std::vector<double> a(n, 0.0), ones(n, 1.0);
  std::atomic<int> go{0};
  auto by_runs = [&] {
    while (go.load() == 0) {
    }
    for (int r = 0; r < rounds; ++r) run(Op::sum, a.data(), ones.data(), n);
  };
  auto by_atomics = [&] {
    while (go.load() == 0) {
    }
    for (int r = 0; r < rounds; ++r)
      for (std::size_t i = 0; i < n; ++i) cpu_apply(&a[i], 1.0, Op::sum, std::memory_order_relaxed);
  };
  std::thread t1(by_runs), t2(by_runs), t3(by_atomics);
  go.store(1);
  t1.join();
  t2.join();
  t3.join();
  std::size_t short_ = 0;
  for (double x : a) short_ += x != 3.0 * rounds;
  EXPECT_EQ(short_, 0u) << "elements that lost an update";
}

// Scattered single elements in batches (update_nbi's same-node part):
// the same table as one CPU atomic per update, repeated indices included,
// and no update lost with three threads at once (two by batches, one by
// atomics) on a small table where batches conflict often.
void scattered_xor(std::vector<std::uint64_t>& t, std::uint64_t seed, std::size_t n) {
  auto atomic = [](std::uint64_t* a, std::uint64_t v) {
    cpu_apply(a, v, Op::bxor, std::memory_order_relaxed);
  };
  plain_update<std::uint64_t>(Op::bxor, [&](auto plain) {
    TransactionalBatch<std::uint64_t, decltype(plain), decltype(atomic)> batch(plain, atomic);
    std::uint64_t r = seed;
    for (std::size_t i = 0; i < n; ++i) {
      r = r * 6364136223846793005ULL + 1442695040888963407ULL;
      batch.add(&t[(r >> 33) % t.size()], r);
    }
  });
}

TEST(Htm, ScatteredBatchesAsCpuAtomics) {
  std::vector<std::uint64_t> a(1000, 7), b(1000, 7);
  scattered_xor(a, 1, 12345);  // 771 full batches and a partial one; indices repeat
  std::uint64_t r = 1;
  for (std::size_t i = 0; i < 12345; ++i) {
    r = r * 6364136223846793005ULL + 1442695040888963407ULL;
    cpu_apply(&b[(r >> 33) % b.size()], r, Op::bxor);
  }
  EXPECT_EQ(a, b);
}

// The pipeline without transactions applies every update once, in the
// order added (an operation that does not commute shows it), for fewer,
// as many and more updates than its depth, and again after a flush.
TEST(Htm, PrefetchedPipelineAppliesInOrder) {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(15), std::size_t(16), std::size_t(17),
                        std::size_t(1000)}) {
    std::vector<std::uint64_t> got(7, 1), want(7, 1);
    std::size_t calls = 0;
    auto step = [&calls](std::uint64_t* a, std::uint64_t v) {
      *a = *a * 3 + v;  // order-sensitive
      ++calls;
    };
    {
      PrefetchedBatch<std::uint64_t, decltype(step)> batch(step);
      for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t i = 0; i < n; ++i) batch.add(&got[(i * 5 + pass) % got.size()], i + 100 * pass);
        if (pass == 0) batch.flush();
      }
    }  // the destructor flushes the second pass
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t& a = want[(i * 5 + pass) % want.size()];
        a = a * 3 + i + 100 * pass;
      }
    EXPECT_EQ(calls, 2 * n) << n << " updates a pass";
    EXPECT_EQ(got, want) << n << " updates a pass";
  }
}

TEST(Htm, ScatteredBatchesLoseNoUpdate) {
  std::vector<std::uint64_t> t(256, 0), want(256, 0);
  const std::size_t n = 200000;
  auto by_atomics = [&] {
    std::uint64_t r = 3;
    for (std::size_t i = 0; i < n; ++i) {
      r = r * 6364136223846793005ULL + 1442695040888963407ULL;
      cpu_apply(&t[(r >> 33) % t.size()], r, Op::bxor, std::memory_order_relaxed);
    }
  };
  std::thread t1([&] { scattered_xor(t, 1, n); }), t2([&] { scattered_xor(t, 2, n); }), t3(by_atomics);
  t1.join();
  t2.join();
  t3.join();
  scattered_xor(want, 1, n);
  scattered_xor(want, 2, n);
  std::uint64_t r = 3;
  for (std::size_t i = 0; i < n; ++i) {
    r = r * 6364136223846793005ULL + 1442695040888963407ULL;
    want[(r >> 33) % want.size()] ^= r;
  }
  EXPECT_EQ(t, want) << "an update was lost";
}

}  // namespace
