// process_grid RANKS NDIMS: the process grid locus chooses for RANKS ranks
// in NDIMS (2 or 3) dimensions when a deck leaves procs at auto
// (auto_process_grid, MPI_Dims_create), printed as "px py pz". The study
// driver's weak-scaling rules ask it, so that they and the apps share one
// factorisation.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "locus/decomp.hpp"

namespace {

// A whole number in [low, high] from text, or -1.
long parse(const char* text, long low, long high) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  return *text && *end == '\0' && v >= low && v <= high ? v : -1;
}

}  // namespace

int main(int argc, char** argv) {
  const long ranks = argc == 3 ? parse(argv[1], 1, 1L << 24) : -1;
  const long ndims = argc == 3 ? parse(argv[2], 2, 3) : -1;
  if (ranks < 0 || ndims < 0) {
    std::fprintf(stderr, "usage: process_grid RANKS NDIMS   (RANKS >= 1, NDIMS 2 or 3)\n");
    return 2;
  }
  MPI_Init(nullptr, nullptr);
  const locus::Dims d = locus::auto_process_grid(static_cast<int>(ranks), static_cast<int>(ndims));
  std::printf("%d %d %d\n", d[0], d[1], d[2]);
  MPI_Finalize();
  return 0;
}
