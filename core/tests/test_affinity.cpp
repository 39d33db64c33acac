// Placement of application units and progress processes on CPUs
// (runtime.progress.bind: auto), the pure part: detail::place_on_cpus.
#include <gtest/gtest.h>

#include "progress/progress_layout.hpp"

using locus::detail::HostRank;
using locus::detail::place_on_cpus;

namespace {
HostRank unit() {
  return HostRank{};
}
HostRank server(std::vector<int> serves) {
  HostRank r;
  r.server = true;
  r.serves = std::move(serves);
  return r;
}
}  // namespace

// Two emulated nodes of (unit, server) on two cores: each server goes to
// the other node's unit's core, never onto the core of the unit it serves.
TEST(Placement, EmulatedNodesOnTwoCores) {
  const auto p = place_on_cpus({0, 1}, {unit(), server({0}), unit(), server({2})});
  EXPECT_EQ(p, (std::vector<int>{0, 1, 1, 0}));
}

// One unit and its server: a core each.
TEST(Placement, UnitAndServer) {
  EXPECT_EQ(place_on_cpus({4, 7}, {unit(), server({0})}), (std::vector<int>{4, 7}));
}

// Enough cores: every rank alone, units first, servers on the free cores.
TEST(Placement, SpareCoresGoToServers) {
  const auto p =
      place_on_cpus({0, 1, 2, 3, 4, 5}, {unit(), unit(), server({0, 1}), unit(), unit(), server({3, 4})});
  EXPECT_EQ(p, (std::vector<int>{0, 1, 5, 2, 3, 4}));
}

// A server whose units cover every core: least loaded core, last on a tie.
TEST(Placement, ServerOfAllUnits) {
  EXPECT_EQ(place_on_cpus({0, 1}, {unit(), unit(), server({0, 1})}), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(place_on_cpus({0, 1, 2}, {unit(), unit(), unit(), unit(), server({0, 1, 2, 3})}),
            (std::vector<int>{0, 1, 2, 0, 2}));
}

// More units than cores: they wrap around; servers still avoid their units.
TEST(Placement, OversubscribedUnitsWrap) {
  const auto p = place_on_cpus({2, 3}, {unit(), unit(), unit(), server({0, 2})});
  EXPECT_EQ(p, (std::vector<int>{2, 3, 2, 3}));
}

// Two servers per node split the node's units and avoid their own ones.
TEST(Placement, TwoServersPerNode) {
  const auto p = place_on_cpus({0, 1, 2}, {unit(), unit(), server({0}), server({1})});
  EXPECT_EQ(p, (std::vector<int>{0, 1, 2, 2}));
}

TEST(Placement, NoCpus) {
  EXPECT_EQ(place_on_cpus({}, {unit(), server({0})}), (std::vector<int>{-1, -1}));
}
