// GoogleTest main for tests that need MPI and Kokkos. Rank 0 prints the
// usual report; the other ranks print their failures.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>

#include <Kokkos_Core.hpp>

#include "locus/runtime.hpp"
#include "locus/team.hpp"
#include "rank_printer.hpp"

int main(int argc, char** argv) {
  int provided = 0;
  locus::prepare_mpi_environment();
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  Kokkos::initialize(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  locus::testing::print_failures_on_every_rank(rank);
  // The one-sided core as apps get it; LOCUS_NODE_SIZE emulates nodes.
  locus::CommSettings settings;
  settings.node_size = locus::effective_node_size(0);
  settings.check = true;
  // LOCUS_WINDOW=dynamic runs the suite on the teams' dynamic windows.
  if (const char* w = std::getenv("LOCUS_WINDOW"); w && std::string(w) == "dynamic")
    settings.window = locus::WindowKind::dynamic;
  // LOCUS_PROGRESS_PROCESSES=k: the last k ranks of every node serve.
  if (const char* k = std::getenv("LOCUS_PROGRESS_PROCESSES")) settings.progress.processes_per_node = std::atoi(k);
  // LOCUS_ASYNC=on|user|auto: redirection (needs LOCUS_PROGRESS_PROCESSES);
  // LOCUS_ASYNC_DATA=0 redirects atomics only (comm.async_ops: atomics).
  if (const char* a = std::getenv("LOCUS_ASYNC"); a && *a) {
    const std::string m = a;
    settings.async.mode = m == "user"   ? locus::AsyncMode::user
                          : m == "auto" ? locus::AsyncMode::automatic
                          : m == "on"   ? locus::AsyncMode::on
                                        : locus::AsyncMode::off;
    const char* d = std::getenv("LOCUS_ASYNC_DATA");
    settings.async.data = !(d && std::string(d) == "0");
  }
  int failed = 0;
  {
    locus::Runtime runtime(MPI_COMM_WORLD, settings);
    if (runtime.is_server()) {
      runtime.serve();
    } else {
      failed = RUN_ALL_TESTS();
    }
  }
  // A failure on any rank fails the test everywhere.
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  Kokkos::finalize();
  MPI_Finalize();
  return failed;
}
