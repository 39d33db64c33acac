// Before MPI_Init: the ranks a launcher put on this node and the threads
// the user asked for, which decide whether locus starts the process again
// with OMP_WAIT_POLICY=passive (kokkos_start.cpp).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "app/kokkos_start.hpp"

using locus::detail::asked_threads;
using locus::detail::launcher_ranks_on_node;
using locus::detail::oversubscribed_at_launch;

namespace {
// The launcher and thread variables unset for the test's scope.
struct CleanEnv {
  const std::vector<std::string> names{"MPI_LOCALNRANKS",           "OMPI_COMM_WORLD_LOCAL_SIZE",
                                       "SLURM_STEP_TASKS_PER_NODE", "SLURM_NODEID",
                                       "KOKKOS_NUM_THREADS",        "OMP_NUM_THREADS"};
  std::vector<std::pair<std::string, std::string>> saved;
  CleanEnv() {
    for (const auto& n : names)
      if (const char* v = getenv(n.c_str())) saved.emplace_back(n, v);
    for (const auto& n : names) unsetenv(n.c_str());
  }
  ~CleanEnv() {
    for (const auto& n : names) unsetenv(n.c_str());
    for (const auto& [n, v] : saved) setenv(n.c_str(), v.c_str(), 1);
  }
};

struct Args {
  std::vector<std::string> store;
  std::vector<char*> argv;
  explicit Args(std::vector<std::string> a) : store(std::move(a)) {
    store.insert(store.begin(), "app");
    for (auto& s : store) argv.push_back(s.data());
    argv.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(argv.size()) - 1; }
  char** data() { return argv.data(); }
};
}  // namespace

TEST(Launch, RanksOnNodeFromEachLauncher) {
  CleanEnv env;
  EXPECT_EQ(launcher_ranks_on_node(), 1);
  setenv("MPI_LOCALNRANKS", "3", 1);  // Hydra
  EXPECT_EQ(launcher_ranks_on_node(), 3);
  unsetenv("MPI_LOCALNRANKS");
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  EXPECT_EQ(launcher_ranks_on_node(), 2);
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  // Slurm: this node's entry of the compressed list
  setenv("SLURM_STEP_TASKS_PER_NODE", "4(x2),3,1(x2)", 1);
  const std::pair<const char*, int> expect[] = {{"0", 4}, {"1", 4}, {"2", 3}, {"3", 1}, {"4", 1}};
  for (const auto& [node, tasks] : expect) {
    setenv("SLURM_NODEID", node, 1);
    EXPECT_EQ(launcher_ranks_on_node(), tasks) << "node " << node;
  }
  setenv("SLURM_NODEID", "7", 1);  // beyond the list: nothing known
  EXPECT_EQ(launcher_ranks_on_node(), 1);
}

TEST(Launch, ThreadsAskedFor) {
  CleanEnv env;
  Args none({"deck.yaml"});
  EXPECT_EQ(asked_threads(none.argc(), none.data()), 0);
  setenv("OMP_NUM_THREADS", "4,2", 1);  // nested levels: the first
  EXPECT_EQ(asked_threads(none.argc(), none.data()), 4);
  setenv("KOKKOS_NUM_THREADS", "3", 1);  // Kokkos' own variable first
  EXPECT_EQ(asked_threads(none.argc(), none.data()), 3);
  Args eq({"deck.yaml", "--kokkos-num-threads=2"}), sep({"--kokkos-threads", "5", "deck.yaml"});
  EXPECT_EQ(asked_threads(eq.argc(), eq.data()), 2);  // the command line before both
  EXPECT_EQ(asked_threads(sep.argc(), sep.data()), 5);
}

TEST(Launch, OversubscribedOnlyWhenThreadsTimesRanksExceedTheCpus) {
  CleanEnv env;
  Args two({"deck.yaml", "--kokkos-num-threads=2"}), one({"deck.yaml", "--kokkos-num-threads=1"});
  EXPECT_FALSE(oversubscribed_at_launch(two.argc(), two.data(), 2, 2));  // 1 rank x 2 threads, 2 cores
  setenv("MPI_LOCALNRANKS", "2", 1);
  EXPECT_TRUE(oversubscribed_at_launch(two.argc(), two.data(), 2, 2));   // 2 x 2 on 2 cores
  EXPECT_FALSE(oversubscribed_at_launch(two.argc(), two.data(), 4, 4));  // 2 x 2 on 4
  EXPECT_FALSE(oversubscribed_at_launch(one.argc(), one.data(), 1, 1));  // one thread never spins
  unsetenv("MPI_LOCALNRANKS");
  EXPECT_TRUE(oversubscribed_at_launch(two.argc(), two.data(), 1, 8));  // a mask of one CPU
  Args none({"deck.yaml"});  // no threads asked for: locus fits them to the cores
  EXPECT_FALSE(oversubscribed_at_launch(none.argc(), none.data(), 1, 1));
}
