#pragma once
// Small helpers the benchmarks share.
#include <mpi.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "locus/wait.hpp"

namespace bench {

// "a,b,,c" -> {a, b, c}
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// The largest v over the ranks of comm (a time: the slowest rank's).
inline double max_over_ranks(MPI_Comm comm, double v) {
  double out = 0;
  locus::allreduce_yielding(&v, &out, 1, MPI_DOUBLE, MPI_MAX, comm);
  return out;
}

// " (OVER-SUBSCRIBED: P processes on C cores)" when the job has more
// processes than the machine has cores, else "".
inline std::string oversubscription_note() {
  int processes = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores == 0 || static_cast<unsigned>(processes) <= cores) return "";
  return " (OVER-SUBSCRIBED: " + std::to_string(processes) + " processes on " + std::to_string(cores) + " cores)";
}

}  // namespace bench
