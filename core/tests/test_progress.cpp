// Progress processes and the progress thread: offloaded transfers are
// correct for every size around the threshold, same node and across
// (emulated) nodes, contiguous and strided, into segments and into plain
// buffers (staging, and a transfer larger than the staging area); 1,000
// handles in flight waited in random order; ordering of direct and
// offloaded operations; a server-side failure reaches wait as an Error.
//
// Options (test_options.hpp): --progress-processes=K (default 1),
// --progress-thread, --node-size=N (emulated nodes), --window=dynamic,
// --expect-launcher-binding. Server ranks serve and run no test.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "locus/app.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"
#include "locus/team.hpp"
#include "progress/progress_engine.hpp"
#include "rank_printer.hpp"
#include "test_options.hpp"

using namespace locus;

namespace {

constexpr std::size_t kThreshold = 4096;
constexpr std::size_t kStaging = 64 * 1024;

// The value unit u keeps at element i of its part.
double value(int u, std::size_t i) {
  return 1000.0 * u + static_cast<double>(i) + 0.25;
}

bool servers_on() {
  return Runtime::current().settings().progress.processes_per_node > 0;
}

// A segment of n doubles per unit filled with value(u, i).
Array<double> filled(Team& w, std::size_t n) {
  Array<double> a(w, n);
  for (std::size_t i = 0; i < n; ++i) a.data()[i] = value(w.rank(), i);
  barrier(w);
  return a;
}

}  // namespace

TEST(Progress, GetPutEverySizeAroundThreshold) {
  Team& w = Runtime::current().world();
  const std::size_t n = 16384;  // 128 KiB per unit
  Array<double> src = filled(w, n);
  Array<double> dst(w, n);
  const std::size_t sizes[] = {1, 8, 511, 512, 513, 1024, 4095 / 8 + 1, 8192, 16384};
  for (std::size_t count : sizes) {
    const std::size_t bytes = count * sizeof(double);
    for (int t = 0; t < w.size(); ++t) {
      // get into a segment (zero copy for the server)
      std::fill(dst.data(), dst.data() + n, -1.0);
      Handle h = get_async(dst.data(), src.gptr(t) + 3, std::min(count, n - 3));
      EXPECT_EQ(h.offloaded(), servers_on() && std::min(count, n - 3) * 8 >= kThreshold) << bytes;
      wait(h);
      for (std::size_t i = 0; i < std::min(count, n - 3); ++i)
        EXPECT_EQ(dst.data()[i], value(t, i + 3)) << "get of " << bytes << " B from unit " << t;
    }
    // put my values into the next unit's dst part, from a segment
    barrier(w);
    const int next = (w.rank() + 1) % w.size();
    const std::size_t c = std::min(count, n);
    Handle h = put_async(dst.gptr(next), src.data(), c);
    EXPECT_EQ(h.offloaded(), servers_on() && c * 8 >= kThreshold);
    wait(h);
    barrier(w);
    const int prev = (w.rank() + w.size() - 1) % w.size();
    for (std::size_t i = 0; i < c; ++i)
      EXPECT_EQ(dst.data()[i], value(prev, i)) << "put of " << c * 8 << " B";
    barrier(w);
  }
}

TEST(Progress, BuffersOutsideSegmentsAndLargerThanStaging) {
  Team& w = Runtime::current().world();
  const std::size_t n = 3 * kStaging / 8 + 100;  // larger than the staging area: split
  Array<double> src = filled(w, n);
  Array<double> dst(w, n);
  const int t = (w.rank() + 1) % w.size();
  for (std::size_t count : {std::size_t(600), std::size_t(5000), n}) {
    std::vector<double> buf(count, -1.0);
    Handle h = get_async(buf.data(), src.gptr(t), count);
    wait(h);
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(buf[i], value(t, i)) << "staged get of " << count;
    // put from a plain buffer, overwritten right after put_async returned
    std::vector<double> out(count);
    for (std::size_t i = 0; i < count; ++i) out[i] = -value(w.rank(), i);
    barrier(w);
    Handle p = put_async(dst.gptr(t), out.data(), count);
    if (p.offloaded() && count * 8 <= kStaging) std::fill(out.begin(), out.end(), 0.0);  // already staged
    wait(p);
    barrier(w);
    const int from = (w.rank() + w.size() - 1) % w.size();
    for (std::size_t i = 0; i < count; ++i)
      EXPECT_EQ(dst.data()[i], -value(from, i)) << "staged put of " << count;
    barrier(w);
  }
}

TEST(Progress, StridedInAndOutOfSegments) {
  Team& w = Runtime::current().world();
  // A 64 x 64 plane per unit; get column block [8, 40) of rows 0..63.
  const std::size_t nx = 64, ny = 64;
  Array<double> src = filled(w, nx * ny);
  Array<double> seg(w, nx * ny);
  const Layout remote{32, ny, nx, 1, 0};
  const Layout local{32, ny, 32, 1, 0};  // packed
  const int t = (w.rank() + 1) % w.size();
  std::vector<double> plain(32 * ny, -1.0);
  Handle a = get_async(plain.data(), local, src.gptr(t) + 8, remote);
  Handle b = get_async(seg.data() + 8, remote, src.gptr(t) + 8, remote);
  EXPECT_EQ(a.offloaded(), servers_on());
  wait(b);
  wait(a);
  for (std::size_t j = 0; j < ny; ++j)
    for (std::size_t i = 0; i < 32; ++i) {
      EXPECT_EQ(plain[j * 32 + i], value(t, j * nx + 8 + i));
      EXPECT_EQ(seg.data()[j * nx + 8 + i], value(t, j * nx + 8 + i));
    }
  barrier(w);
}

TEST(Progress, ThousandHandlesWaitedInRandomOrder) {
  Team& w = Runtime::current().world();
  const std::size_t chunk = 640;  // 5 KiB: above the threshold
  const std::size_t handles = 1000;
  Array<double> src = filled(w, chunk * 8);
  Array<double> dst(w, chunk * handles);
  std::vector<Handle> hs;
  for (std::size_t k = 0; k < handles; ++k) {
    const int t =
        static_cast<int>((static_cast<std::size_t>(w.rank()) + k) % static_cast<std::size_t>(w.size()));
    hs.push_back(
        get_async(dst.data() + k * chunk, src.gptr(t) + static_cast<std::ptrdiff_t>((k % 8) * chunk), chunk));
  }
  std::vector<std::size_t> order(handles);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(42u + static_cast<unsigned>(w.rank())));
  for (std::size_t k : order) {
    if (k % 3 == 0) {
      while (!test(hs[k])) {
      }
    } else {
      wait(hs[k]);
    }
    EXPECT_TRUE(hs[k].done());
  }
  for (std::size_t k = 0; k < handles; ++k) {
    const int t =
        static_cast<int>((static_cast<std::size_t>(w.rank()) + k) % static_cast<std::size_t>(w.size()));
    for (std::size_t i = 0; i < chunk; ++i)
      EXPECT_EQ(dst.data()[k * chunk + i], value(t, (k % 8) * chunk + i)) << "handle " << k;
  }
  barrier(w);
}

// What locus documents: an operation is ordered after another one once the
// other has completed (wait, a true test, or flush).
TEST(Progress, OrderingOfDirectAndOffloadedOperations) {
  Team& w = Runtime::current().world();
  const std::size_t n = 4096;  // 32 KiB
  Array<double> a(w, n);
  std::fill(a.data(), a.data() + n, 0.0);
  barrier(w);
  const int t = (w.rank() + 1) % w.size();
  const std::size_t base = 0;
  // Each unit writes only into its right neighbour's part.
  std::vector<double> big(n, 1.0 + w.rank());
  Array<double> big_seg(w, n);
  std::fill(big_seg.data(), big_seg.data() + n, 2.0 + w.rank());
  for (int round = 0; round < 10; ++round) {
    // offloaded put, completed, then a direct small put over its start
    Handle h = put_async(a.gptr(t) + static_cast<std::ptrdiff_t>(base), big.data(), n);
    wait(h);
    const double mark = -1.0 - round;
    put(a.gptr(t), &mark, 1);
    std::vector<double> back(n);
    get(back.data(), a.gptr(t), n);  // direct, blocking
    EXPECT_EQ(back[0], mark);
    EXPECT_EQ(back[n - 1], 1.0 + w.rank());
    // direct put, then an offloaded get sees it
    put(a.gptr(t) + 5, &mark, 1);
    std::vector<double> again(n);
    Handle g = get_async(again.data(), a.gptr(t), n);
    wait(g);
    EXPECT_EQ(again[5], mark);
    // an offloaded put completed by flush(team): a direct get sees it
    Handle f = put_async(a.gptr(t), big_seg.data(), n);
    flush(w);
    get(back.data(), a.gptr(t), n);
    EXPECT_EQ(back[7], 2.0 + w.rank());
    EXPECT_TRUE(test(f));
  }
  barrier(w);
}

// A get from the next unit while this one computes without calling MPI
// (the unit's own wait would otherwise complete it): the progress thread
// completes it within 5 s. With `paused_first`, the thread is paused for
// the first 0.2 s (Runtime::pause_progress_thread) and must complete
// nothing in them, then resumed.
void thread_completes_get(bool paused_first) {
  Runtime& rt = Runtime::current();
  Team& w = rt.world();
  Array<double> a = filled(w, 1024);
  std::vector<double> buf(1024);
  const int t = (w.rank() + 1) % w.size();
  if (paused_first) rt.pause_progress_thread(true);
  const std::uint64_t before = rt.thread_completions();
  Handle h = get_async(buf.data(), a.gptr(t), 1024);
  if (paused_first) {
    for (const double t0 = MPI_Wtime(); MPI_Wtime() - t0 < 0.2;) {
      // compute, no MPI call on this thread
    }
    EXPECT_EQ(rt.thread_completions(), before) << "a paused thread completed a request";
    rt.pause_progress_thread(false);
  }
  const double t0 = MPI_Wtime();
  while (rt.thread_completions() == before && MPI_Wtime() - t0 < 5.0) {
    // compute, no MPI call on this thread
  }
  EXPECT_GT(rt.thread_completions(), before) << "the thread completed nothing in 5 s";
  wait(h);
  EXPECT_EQ(buf[1023], value(t, 1023));
  barrier(w);
}

TEST(Progress, ThreadCompletesWhileTheUnitComputes) {
  if (!Runtime::current().settings().progress.thread) GTEST_SKIP() << "no progress thread";
  thread_completes_get(false);
}

TEST(Progress, PausedThreadCompletesNothingUntilResumed) {
  if (!Runtime::current().settings().progress.thread) GTEST_SKIP() << "no progress thread";
  thread_completes_get(true);
}

// An application's own two-sided requests, adopted: the thread (when on)
// completes them while the unit computes; with or without it, wait_all
// completes them and the data arrives.
TEST(Progress, AdoptedTwoSidedRequests) {
  Runtime& rt = Runtime::current();
  Team& w = rt.world();
  const int right = (w.rank() + 1) % w.size(), left = (w.rank() + w.size() - 1) % w.size();
  std::vector<double> out(4096), in(4096, -1.0);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = w.rank() * 10000.0 + double(i);
  MPI_Request r[2];
  MPI_Irecv(in.data(), 4096, MPI_DOUBLE, left, 77, w.comm(), &r[0]);
  MPI_Isend(out.data(), 4096, MPI_DOUBLE, right, 77, w.comm(), &r[1]);
  const std::uint64_t before = rt.thread_completions();
  std::vector<Handle> hs;
  hs.push_back(locus::adopt(r[0]));
  hs.push_back(locus::adopt(r[1]));
  hs.push_back(locus::adopt(MPI_REQUEST_NULL));  // already complete
  if (rt.settings().progress.thread) {
    const double t0 = MPI_Wtime();
    while (rt.thread_completions() < before + 2 && MPI_Wtime() - t0 < 5.0) {
      // compute, no MPI call on this thread
    }
    EXPECT_GE(rt.thread_completions(), before + 2) << "the thread did not complete the adopted requests";
  }
  wait_all(hs);
  EXPECT_EQ(in[0], left * 10000.0);
  EXPECT_EQ(in[4095], left * 10000.0 + 4095);
  for (auto& h : hs) EXPECT_FALSE(h.live());
  EXPECT_THROW(wait(hs[0]), locus::Error);  // spent
  barrier(w);
}

TEST(Progress, ServerFailureReachesWait) {
  if (!servers_on()) GTEST_SKIP() << "no progress processes";
  Team& w = Runtime::current().world();
  Array<double> a = filled(w, 1024);
  std::vector<double> buf(2048);
  const int t = (w.rank() + 1) % w.size();
  // comm.check is off here, so the origin does not check bounds; the
  // server does, and the error must come back through wait().
  Handle h = get_async(buf.data(), a.gptr(t) + 512, 1024);
  if (!h.offloaded()) {  // no ASSERT before a collective: the others would wait for us
    ADD_FAILURE() << "a get of 8 KiB was not offloaded";
    barrier(w);
    return;
  }
  try {
    wait(h);
    ADD_FAILURE() << "an out-of-bounds offloaded get completed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run past the end"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("progress process"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(h.done());
  // The server carries on.
  Handle ok = get_async(buf.data(), a.gptr(t), 1024);
  wait(ok);
  EXPECT_EQ(buf[1023], value(t, 1023));
  barrier(w);
}

// runtime.progress.bind: auto (the default). mpiexec here binds nothing, so
// every rank is pinned to the CPU the summary reports, and a server does
// not share a CPU with a unit it serves unless its units fill every CPU.
TEST(Progress, ServersAreBoundAwayFromTheirUnits) {
  if (!servers_on()) GTEST_SKIP() << "no progress processes";
  const Runtime& rt = Runtime::current();
  // --expect-launcher-binding: mpiexec -bind-to core ran us, and locus must
  // leave the launcher's placement alone.
  if (locus::testing::test_options().expect_launcher_binding) {
    EXPECT_EQ(rt.binding().rfind("not bound (the launcher", 0), 0u) << rt.binding();
    for (int c : rt.bound_cpus()) EXPECT_EQ(c, -1);
    return;
  }
  if (rt.binding() != "auto") {
    EXPECT_EQ(rt.binding().rfind("not bound", 0), 0u) << rt.binding();
    GTEST_SKIP() << rt.binding();
  }
  int me = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::vector<int>& cpus = rt.bound_cpus();
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const int server = detail::progress_engine()->my_server_rank();
  if (cpus.size() != static_cast<std::size_t>(size) || sched_getaffinity(0, sizeof mask, &mask) != 0 ||
      server < 0) {  // no ASSERT before the collective below
    ADD_FAILURE() << "bound_cpus has " << cpus.size() << " entries for " << size
                  << " ranks, or sched_getaffinity failed, or no server (" << server << ")";
    barrier(Runtime::current().world());
    return;
  }
  EXPECT_EQ(CPU_COUNT(&mask), 1);
  EXPECT_TRUE(CPU_ISSET(cpus[static_cast<std::size_t>(me)], &mask));
  const std::set<int> distinct(cpus.begin(), cpus.end());
  Team& node = Runtime::current().node();
  const int k = rt.settings().progress.processes_per_node;
  int served = 0;  // units of my node my server serves
  for (int u = 0; u < node.size(); ++u) served += u % k == node.rank() % k ? 1 : 0;
  if (served < static_cast<int>(distinct.size())) {
    EXPECT_NE(cpus[static_cast<std::size_t>(server)], cpus[static_cast<std::size_t>(me)])
        << "server rank " << server << " shares CPU " << cpus[static_cast<std::size_t>(me)]
        << " with its unit";
  }
  barrier(Runtime::current().world());
}

int main(int argc, char** argv) {
  int provided = 0;
  locus::prepare_mpi_environment();
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  Kokkos::initialize(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  CommSettings defaults;
  defaults.node_size = effective_node_size(0);
  defaults.check = false;  // the server's own checks are under test
  defaults.progress.processes_per_node = 1;
  defaults.progress.threshold = kThreshold;
  defaults.progress.staging = kStaging;
  CommSettings settings;
  try {
    settings = locus::testing::parse_test_options(argc, argv, defaults).settings;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    Kokkos::finalize();
    MPI_Finalize();
    return 2;
  }
  int failed = 0;
  {
    Runtime runtime(MPI_COMM_WORLD, settings);
    if (runtime.is_server()) {
      runtime.serve();
    } else {
      locus::testing::print_failures_on_every_rank(runtime.world().rank());
      if (runtime.world().rank() == 0) {
        std::printf("%d units; %s\n", runtime.world().size(), runtime.progress_description().c_str());
      }
      failed = RUN_ALL_TESTS();
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  Kokkos::finalize();
  MPI_Finalize();
  return failed;
}
