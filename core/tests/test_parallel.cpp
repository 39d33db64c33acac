// Decomposition, halo exchange and HDF5 I/O at any rank count.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>

#include "locus/app.hpp"
#include "locus/decomp.hpp"
#include "locus/halo.hpp"
#include "locus/io.hpp"
#include "locus/profile.hpp"
#include "locus/staging.hpp"

namespace fs = std::filesystem;
using locus::CartDecomp;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// A value only the global position determines.
double tag(long x, long y, long z) {
  return 1e6 * double(z) + 1e3 * double(y) + double(x);
}

void fill_interior(const locus::Field3D& f, const CartDecomp& dc) {
  const auto& n = dc.local();
  const auto& o = dc.offset();
  for (long k = 1; k <= n[2]; ++k)
    for (long j = 1; j <= n[1]; ++j)
      for (long i = 1; i <= n[0]; ++i) f(k, j, i) = tag(o[0] + i - 1, o[1] + j - 1, o[2] + k - 1);
}

std::string scratch(const std::string& name) {
  std::string dir = "locus_test_io";
  if (world_rank() == 0) fs::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  // registrations that run at once (node sizes, staging) write apart
  const auto& s = locus::Runtime::current().settings();
  return dir + "/" + name + "_np" + std::to_string(world_size()) + "_ns" + std::to_string(s.node_size) +
         (locus::staging_active() ? "_staged" : "") + ".h5";
}

}  // namespace

TEST(BlockSpan, SpreadsRemainderOverFirstBlocks) {
  EXPECT_EQ(locus::block_span(10, 3, 0).count, 4);
  EXPECT_EQ(locus::block_span(10, 3, 1).count, 3);
  EXPECT_EQ(locus::block_span(10, 3, 2).start, 7);
  long total = 0;
  for (int c = 0; c < 7; ++c) {
    auto s = locus::block_span(23, 7, c);
    EXPECT_EQ(s.start, total);
    total += s.count;
  }
  EXPECT_EQ(total, 23);
}

TEST(CartDecomp, BlocksTileTheGlobalGrid) {
  for (auto procs :
       {locus::Dims{0, 0, 0}, locus::Dims{world_size(), 1, 1}, locus::Dims{1, 1, world_size()}}) {
    CartDecomp dc(MPI_COMM_WORLD, {13, 7, 5}, procs, "test.procs");
    long volume = dc.local()[0] * dc.local()[1] * dc.local()[2];
    MPI_Allreduce(MPI_IN_PLACE, &volume, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(volume, 13 * 7 * 5);
    for (int d = 0; d < 3; ++d) {
      bool low_edge = dc.coords()[d] == 0, high_edge = dc.coords()[d] == dc.procs()[d] - 1;
      EXPECT_EQ(dc.neighbor(d, -1) == MPI_PROC_NULL, low_edge);
      EXPECT_EQ(dc.neighbor(d, +1) == MPI_PROC_NULL, high_edge);
    }
  }
}

TEST(CartDecomp, AutoPutsMostBlocksOnZ) {
  CartDecomp dc(MPI_COMM_WORLD, {8, 8, 8}, {0, 0, 0}, "test.procs");
  EXPECT_GE(dc.procs()[2], dc.procs()[0]);
  EXPECT_EQ(dc.procs()[0] * dc.procs()[1] * dc.procs()[2], world_size());
}

TEST(CartDecomp, WrongProcessGridIsACollectiveError) {
  try {
    CartDecomp dc(MPI_COMM_WORLD, {8, 8, 8}, {world_size() + 1, 1, 1}, "test.procs");
    FAIL() << "no error";
  } catch (const locus::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("test.procs: process grid"), std::string::npos) << e.what();
  }
  try {
    CartDecomp dc(MPI_COMM_WORLD, {8, 8, 1}, {1, 1, world_size()}, "test.procs");
    if (world_size() > 1) FAIL() << "no error";
  } catch (const locus::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("blocks in dimension z"), std::string::npos) << e.what();
  }
}

// A field is a View in the apps' memory space: in a segment (other units
// reach it by gptr) on the direct path, a Kokkos allocation outside
// segments when transfers stage (--staging=always), where a global pointer
// is an error. Either way the view, data() and the HDF5 copy are the same
// block.
TEST(Field, InASegmentOnlyWhenTransfersAreDirect) {
  locus::Team& world = locus::Runtime::current().world();
  CartDecomp dc(world.comm(), {6, 5, 4}, {0, 0, 0}, "test.procs");
  locus::GridField gf(world, dc);
  const bool staged = locus::staging_active();
  EXPECT_EQ(gf.in_segment(), !staged);
  EXPECT_EQ(gf.view().data(), gf.data());
  EXPECT_EQ(gf.view().extent(0), std::size_t(dc.local()[2] + 2));
  EXPECT_EQ(gf.view().extent(2), std::size_t(dc.local()[0] + 2));
  EXPECT_EQ(locus::host_copy(gf).data(), gf.data()) << "a host memory space needs no copy";
  if (staged) {
    try {
      (void)gf.gptr(world.rank());
      FAIL() << "a field outside segments gave a global pointer";
    } catch (const locus::Error& e) {
      EXPECT_NE(std::string(e.what()).find("outside segments"), std::string::npos) << e.what();
    }
  } else {
    EXPECT_EQ(gf.gptr(world.rank()).local(), gf.data());
  }
  // host_fill writes through the host view into the field.
  locus::host_fill(gf, [&](const auto& h) { Kokkos::deep_copy(h, 2.5); });
  long wrong = 0;
  for (std::size_t c = 0; c < gf.shape().cells(); ++c) wrong += gf.data()[c] != 2.5;
  EXPECT_EQ(wrong, 0);
}

class Halo : public ::testing::TestWithParam<std::string> {};

TEST_P(Halo, FillsEveryInnerGhostFaceAndNothingElse) {
  locus::Team& world = locus::Runtime::current().world();
  for (auto procs :
       {locus::Dims{0, 0, 0}, locus::Dims{world_size(), 1, 1}, locus::Dims{1, world_size(), 1}}) {
    // Uneven: neighbours' blocks differ in size.
    CartDecomp dc(world.comm(), {9, 7, 11}, procs, "test.procs");
    locus::GridField gf(world, dc);
    auto& f = gf.view();
    Kokkos::deep_copy(f, -1.0);
    fill_interior(f, dc);
    auto halo = locus::make_halo<double>(GetParam(), dc, world);
    EXPECT_EQ(halo->name(), GetParam());
    halo->exchange(gf);
    const auto& n = dc.local();
    const auto& o = dc.offset();
    long wrong = 0;
    for (int d = 0; d < 3; ++d)
      for (int side = 0; side < 2; ++side) {
        bool inner = dc.neighbor(d, side ? 1 : -1) != MPI_PROC_NULL;
        long layer = side ? n[d] + 1 : 0;
        // Walk the face: the two other dimensions over the interior.
        int a = (d + 1) % 3, b = (d + 2) % 3;
        for (long p = 1; p <= n[a]; ++p)
          for (long q = 1; q <= n[b]; ++q) {
            long idx[3];
            idx[d] = layer;
            idx[a] = p;
            idx[b] = q;
            double expect = inner ? tag(o[0] + idx[0] - 1, o[1] + idx[1] - 1, o[2] + idx[2] - 1) : -1.0;
            if (f(idx[2], idx[1], idx[0]) != expect) ++wrong;
          }
      }
    EXPECT_EQ(wrong, 0) << GetParam();
    // Interior untouched, corners and edges of the ghost layer untouched.
    long changed = 0;
    for (long k = 0; k < long(f.extent(0)); ++k)
      for (long j = 0; j < long(f.extent(1)); ++j)
        for (long i = 0; i < long(f.extent(2)); ++i) {
          int ghosts = (k == 0 || k == long(f.extent(0)) - 1) + (j == 0 || j == long(f.extent(1)) - 1) +
                       (i == 0 || i == long(f.extent(2)) - 1);
          if (ghosts >= 2 && f(k, j, i) != -1.0) ++changed;
          if (ghosts == 0 && f(k, j, i) != tag(o[0] + i - 1, o[1] + j - 1, o[2] + k - 1)) ++changed;
        }
    EXPECT_EQ(changed, 0) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, Halo, ::testing::ValuesIn(locus::halo_strategies()));

// 2D float fields (z extent 1, no z ghosts), both one-sided directions,
// with and without in-place synchronisation: the ghost faces that border
// another rank get the neighbour's boundary values, nothing else changes.
TEST_P(Halo, TwoDimensionalFloatFieldsInEveryDirection) {
  locus::Team& world = locus::Runtime::current().world();
  int d2[2] = {0, 0};
  MPI_Dims_create(world_size(), 2, d2);
  for (auto procs :
       {locus::Dims{d2[1], d2[0], 1}, locus::Dims{world_size(), 1, 1}, locus::Dims{1, world_size(), 1}})
    for (auto direction : {locus::Direction::get, locus::Direction::put})
      for (bool in_place : {false, true}) {
        CartDecomp dc(world.comm(), {9, 7, 1}, procs, "test.procs", 2);
        locus::GridFieldT<float> gf(world, dc, {1, 1, 0});
        const auto& s = gf.shape();
        ASSERT_EQ(s.cells(), std::size_t((dc.local()[0] + 2) * (dc.local()[1] + 2)));
        const auto& n = dc.local();
        const auto& o = dc.offset();
        float* f = gf.data();
        auto value = [&](long i, long j) { return float(1000 * (o[1] + j) + (o[0] + i)); };
        for (long j = 0; j <= n[1] + 1; ++j)
          for (long i = 0; i <= n[0] + 1; ++i) {
            bool interior = i >= 1 && i <= n[0] && j >= 1 && j <= n[1];
            f[s.offset(i, j, 0)] = interior ? value(i, j) : -1.0f;
          }
        auto halo = locus::make_halo<float>(GetParam(), dc, world, {direction, in_place, {1, 1, 0}});
        halo->exchange(gf);
        long wrong = 0;
        for (long j = 0; j <= n[1] + 1; ++j)
          for (long i = 0; i <= n[0] + 1; ++i) {
            const bool xghost = (i == 0 || i == n[0] + 1) && j >= 1 && j <= n[1];
            const bool yghost = (j == 0 || j == n[1] + 1) && i >= 1 && i <= n[0];
            float expect = -1.0f;
            if (xghost && dc.neighbor(0, i == 0 ? -1 : 1) != MPI_PROC_NULL) expect = value(i, j);
            if (yghost && dc.neighbor(1, j == 0 ? -1 : 1) != MPI_PROC_NULL) expect = value(i, j);
            if (i >= 1 && i <= n[0] && j >= 1 && j <= n[1]) expect = value(i, j);
            if (f[s.offset(i, j, 0)] != expect) ++wrong;
          }
        EXPECT_EQ(wrong, 0) << GetParam() << (direction == locus::Direction::put ? " put" : " get")
                            << (in_place ? " in place" : "") << " procs " << procs[0] << "x" << procs[1];
      }
}

TEST(HaloPlan, DecomposedDimensionWithoutGhostsIsAnError) {
  locus::Team& world = locus::Runtime::current().world();
  if (world_size() < 2) GTEST_SKIP() << "needs a decomposed dimension";
  CartDecomp dc(world.comm(), {8, 8, 1}, {world_size(), 1, 1}, "test.procs", 2);
  EXPECT_THROW(locus::make_halo<float>("locus", dc, world, {locus::Direction::put, true, {0, 1, 0}}),
               locus::Error);
}

TEST(HaloPlan, UnknownStrategyIsAnError) {
  locus::Team& world = locus::Runtime::current().world();
  CartDecomp dc(world.comm(), {4, 4, 4}, {0, 0, 0}, "test.procs");
  EXPECT_THROW(locus::make_halo<double>("carrier-pigeon", dc, world), locus::Error);
}

TEST(H5, FieldRoundTripsThroughAnotherDecomposition) {
  std::string path = scratch("roundtrip");
  {
    CartDecomp dc(MPI_COMM_WORLD, {7, 5, 6}, {world_size(), 1, 1}, "test.procs");
    locus::GridField gf(locus::Runtime::current().world(), dc);
    auto& f = gf.view();
    fill_interior(f, dc);
    locus::H5Output out(MPI_COMM_WORLD, path, true);
    out.write_field("field", gf, dc);
    out.write_root_vector("history",
                          world_rank() == 0 ? std::vector<double>{1, 2, 3} : std::vector<double>{});
    out.write_rank_rows("rows", {double(world_rank()), 7.0});
    out.attribute("", "note", std::string("hello"));
    out.attribute("", "step", 42L);
    out.attribute("", "dt", 0.25);
    EXPECT_TRUE(fs::exists(path + ".tmp") || world_rank() != 0);
    out.commit();
  }
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  CartDecomp dc(MPI_COMM_WORLD, {7, 5, 6}, {1, 1, world_size()}, "test.procs");
  // read into a host field (read_field takes a host view; the same type as
  // GridField on a host build)
  locus::GridFieldT<double, Kokkos::HostSpace> gg(locus::Runtime::current().world(), dc);
  auto& g = gg.view();
  locus::H5Input in(MPI_COMM_WORLD, path);
  in.read_field("field", g, dc);
  long wrong = 0;
  const auto& n = dc.local();
  const auto& o = dc.offset();
  for (long k = 1; k <= n[2]; ++k)
    for (long j = 1; j <= n[1]; ++j)
      for (long i = 1; i <= n[0]; ++i)
        if (g(k, j, i) != tag(o[0] + i - 1, o[1] + j - 1, o[2] + k - 1)) ++wrong;
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(in.read_vector("history"), (std::vector<double>{1, 2, 3}));
  auto rows = in.read_vector("rows");
  ASSERT_EQ(rows.size(), 2u * world_size());
  for (int r = 0; r < world_size(); ++r) EXPECT_EQ(rows[2 * r], double(r));
  EXPECT_EQ(in.string_attribute("note"), "hello");
  EXPECT_EQ(in.integer_attribute("step"), 42);
  EXPECT_EQ(in.real_attribute("dt"), 0.25);
}

TEST(H5, ReadingIntoAnotherGridIsACollectiveError) {
  std::string path = scratch("shape");
  {
    CartDecomp dc(MPI_COMM_WORLD, {4, 4, 4}, {0, 0, 0}, "test.procs");
    locus::GridField f(locus::Runtime::current().world(), dc);
    locus::H5Output out(MPI_COMM_WORLD, path, true);
    out.write_field("field", f, dc);
    out.commit();
  }
  CartDecomp dc(MPI_COMM_WORLD, {4, 4, 5}, {0, 0, 0}, "test.procs");
  locus::GridFieldT<double, Kokkos::HostSpace> g(locus::Runtime::current().world(), dc);
  locus::H5Input in(MPI_COMM_WORLD, path);
  try {
    in.read_field("field", g.view(), dc);
    FAIL() << "no error";
  } catch (const locus::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("but the run's grid is 4x4x5"), std::string::npos) << e.what();
  }
}

TEST(H5, ExistingOutputIsNotOverwritten) {
  std::string path = scratch("exists");
  {
    locus::H5Output out(MPI_COMM_WORLD, path, true);
    out.attribute("", "generation", 1L);
    out.commit();
  }
  try {
    locus::H5Output out(MPI_COMM_WORLD, path, false);
    FAIL() << "no error";
  } catch (const locus::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("exists; set output.overwrite: true"), std::string::npos);
  }
  locus::H5Input in(MPI_COMM_WORLD, path);
  EXPECT_EQ(in.integer_attribute("generation"), 1);
}

TEST(H5, AnUncommittedOutputLeavesNoFile) {
  std::string path = scratch("aborted");
  if (world_rank() == 0) fs::remove(path);
  try {
    locus::H5Output out(MPI_COMM_WORLD, path, true);
    out.attribute("", "half", 1L);
    locus::collective_require(MPI_COMM_WORLD, world_rank() != 0, "rank 0 fails mid-write");
  } catch (const locus::CollectiveError& e) {
    EXPECT_EQ(std::string(e.what()), "rank 0 fails mid-write");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(Timers, ReduceGivesMinAvgMax) {
  locus::Timers t({"a", "b"});
  t.start("a");
  t.stop("a");
  auto stats = locus::reduce_timers(t, MPI_COMM_WORLD);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_LE(stats[0].min, stats[0].avg);
  EXPECT_LE(stats[0].avg, stats[0].max);
  EXPECT_EQ(stats[1].max, 0.0);
  EXPECT_THROW(t.stop("b"), locus::Error);
  EXPECT_THROW(t.start("c"), locus::Error);
  EXPECT_EQ(locus::gather_timers(t, MPI_COMM_WORLD).size(), 2u * world_size());
}

TEST(Timers, WithinNamesTheTimersAround) {
  locus::Timers t({"total", "setup", "solve", "compute", "residual", "parts"});
  t.start("total");
  t.start("setup");
  t.start("residual");
  t.stop("residual");
  t.stop("setup");
  t.start("solve");
  t.start("compute");
  t.stop("compute");
  t.start("residual");
  t.stop("residual");
  t.add("parts", 0.25);  // added while solve runs: within solve
  t.stop("solve");
  t.stop("total");
  EXPECT_TRUE(t.within("total").empty());
  EXPECT_EQ(t.within("setup"), std::vector<std::string>{"total"});
  EXPECT_EQ(t.within("compute"), std::vector<std::string>{"solve"});
  EXPECT_EQ(t.within("residual"), (std::vector<std::string>{"setup", "solve"}));
  EXPECT_EQ(t.within("parts"), std::vector<std::string>{"solve"});
  const auto stats = locus::reduce_timers(t, MPI_COMM_WORLD);
  EXPECT_EQ(stats[3].within, std::vector<std::string>{"solve"});
}

// The entry `key` of map `t` (nullptr when absent).
const locus::Tree* entry(const locus::Tree& t, const std::string& key) {
  for (const auto& [k, v] : t.entries())
    if (k == key) return &v;
  return nullptr;
}
double number(const locus::Tree& t, const std::string& key) {
  const locus::Tree* v = entry(t, key);
  return v ? std::stod(v->text()) : -1.0;
}

TEST(Timers, FigureOfMeritIsTheTimersSlowestRank) {
  locus::Timers t({"loop"});
  locus::RepeatTimes reps;
  // rank r's loop takes r + 1 repeats of 0.5 s ... measured elsewhere
  for (int i = 0; i <= world_rank(); ++i) reps.add(0.5 + 0.25 * world_rank());
  t.add("loop", 1.0 + world_rank());
  const locus::Tree f = locus::figure_of_merit("work per second", 6.0, "W/s", t, "loop", "the loop",
                                               MPI_COMM_WORLD, reps, "step");
  EXPECT_EQ(number(f, "seconds"), double(world_size()));
  ASSERT_NE(entry(f, "timer"), nullptr);
  EXPECT_EQ(entry(f, "timer")->text(), "loop");
  EXPECT_EQ(number(f, "value"), locus::rate(6.0, double(world_size())));
  // the repeats only when every rank counted as many
  EXPECT_EQ(entry(f, "repeats") != nullptr, world_size() == 1);
  locus::RepeatTimes same;
  same.add(0.5 + world_rank());
  same.add(0.25);
  const locus::Tree g =
      locus::figure_of_merit("w", 1.0, "W/s", t, "loop", "the loop", MPI_COMM_WORLD, same, "step");
  const locus::Tree* r = entry(g, "repeats");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(number(*r, "count"), 2.0);
  EXPECT_EQ(number(*r, "seconds_min"), 0.25);
  EXPECT_EQ(number(*r, "seconds_max"), 0.5 + world_size() - 1);
  EXPECT_EQ(number(*r, "seconds_mean"), double(world_size()) / 2.0);
}

TEST(Summary, ShortNumbers) {
  EXPECT_EQ(locus::Tree(1e-12).text(), "1e-12");
  EXPECT_EQ(locus::Tree(0.1).text(), "0.1");
}

TEST(Summary, TreeKeepsOrderAndCopies) {
  locus::Tree t = locus::Tree::map();
  t["b"] = 2;
  t["a"] = "x";
  t["a"] = true;  // set again: keeps its place
  t["list"].push_back(0.5);
  t["list"].push_back("two");
  t["grid"] = locus::Tree::flow_list(std::vector<int>{2, 1});
  locus::Tree copy = t;
  copy["b"] = 3;  // a copy, not an alias
  EXPECT_EQ(t["b"].text(), "2");
  EXPECT_EQ(t.yaml(), "b: 2\na: true\nlist:\n  - 0.5\n  - two\ngrid: [2, 1]\n");
  EXPECT_EQ(t.json(), "{\n  \"b\": 2,\n  \"a\": true,\n  \"list\": [0.5, \"two\"],\n  \"grid\": [2, 1]\n}\n");
  EXPECT_TRUE(locus::Tree().is_null());
  EXPECT_EQ(locus::Tree::map().yaml(), "{}\n");
  locus::Tree scalar = 1.5;
  EXPECT_THROW(scalar["k"], locus::Error);
  EXPECT_THROW(t.push_back(1), locus::Error);
}

TEST(Runtime, ThreadLevelIsRequestedAndChecked) {
  // locus::run and this test's main ask for MPI_THREAD_MULTIPLE; MPICH gives it.
  EXPECT_NO_THROW(locus::require_thread_level(MPI_THREAD_SERIALIZED, "a test"));
  try {
    locus::require_thread_level(MPI_THREAD_MULTIPLE, "the progress thread", MPI_THREAD_FUNNELED);
    FAIL() << "no error";
  } catch (const locus::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the progress thread needs MPI_THREAD_MULTIPLE, but the MPI library "
                                         "provides only MPI_THREAD_FUNNELED"),
              std::string::npos)
        << e.what();
  }
}
