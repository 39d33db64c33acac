#pragma once
// Internal: how locus::run starts Kokkos (kokkos_start.cpp).
#include <string>
#include <vector>

namespace locus {

// The --kokkos-* options of the command line (they go to Kokkos) and the
// rest (they go to locus's own parser).
struct SplitArgs {
  std::vector<std::string> kokkos;
  std::vector<char*> rest;
};

SplitArgs split_kokkos_args(int argc, char** argv);

// True when ARGS hold option NAME (alone or as NAME=value).
bool has_option(const std::vector<std::string>& args, const std::string& name);

// Before MPI_Init. With the OpenMP backend, when the threads per rank the
// user asked for times the launcher's ranks on this node exceed its CPUs
// and OMP_WAIT_POLICY is unset, the process starts again (execv of
// itself, same arguments) with OMP_WAIT_POLICY=passive: OpenMP runtimes
// read the policy only when they load, and threads spinning at barriers
// would take the cores the other ranks need. Returns when nothing is to
// be done or the exec failed.
void passive_wait_if_oversubscribed(int argc, char** argv);

namespace detail {
// The ranks the launcher put on this node, read before MPI_Init: MPICH's
// Hydra (MPI_LOCALNRANKS), Open MPI, Slurm; 1 when no launcher says.
int launcher_ranks_on_node();
// The threads per rank the user asked for: --kokkos-num-threads (or
// --kokkos-threads), KOKKOS_NUM_THREADS, OMP_NUM_THREADS; 0 for none.
long asked_threads(int argc, char** argv);
// passive_wait_if_oversubscribed's test: more than one thread asked for,
// and more than CPUS (the rank's mask) or, times the launcher's ranks on
// this node, more than ONLINE.
bool oversubscribed_at_launch(int argc, char** argv, long cpus, long online);
}  // namespace detail

struct KokkosStart {
  std::string error;  // an option Kokkos did not take
  bool help = false;
};

// Collective. Starts Kokkos with the user's --kokkos-* options and
// KOKKOS_* variables (Kokkos reads them itself), adding when the user
// gave none: threads per rank = the CPUs this rank may run on / the ranks
// on its node (a rank per core gets one thread), and on every rank but the
// first --kokkos-disable-warnings (Kokkos' start-up warnings once per job,
// not once per rank).
KokkosStart start_kokkos(const std::string& app_name, std::vector<std::string> args, int rank);

}  // namespace locus
