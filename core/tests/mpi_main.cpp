// GoogleTest main for tests that need MPI and Kokkos. Rank 0 prints the
// usual report; the other ranks print their failures.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <stdexcept>

#include "locus/app.hpp"
#include "locus/team.hpp"
#include "rank_printer.hpp"
#include "test_options.hpp"

int main(int argc, char** argv) {
  int provided = 0;
  locus::prepare_mpi_environment();
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  Kokkos::initialize(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  locus::testing::print_failures_on_every_rank(rank);
  // The one-sided core as apps get it, with what this registration checks
  // given on its command line (test_options.hpp: --node-size, --window,
  // --progress-processes, --async, --async-ops, ...).
  locus::CommSettings defaults;
  defaults.node_size = locus::effective_node_size(0);
  defaults.check = true;
  locus::CommSettings settings;
  try {
    settings = locus::testing::parse_test_options(argc, argv, defaults).settings;
  } catch (const std::invalid_argument& e) {
    if (rank == 0) std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    Kokkos::finalize();
    MPI_Finalize();
    return 2;
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
