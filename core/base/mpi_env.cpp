// The MPI environment and thread level (mpi_env.hpp).
#include "locus/mpi_env.hpp"

#include <mpi.h>

#include <cstdlib>

#include "locus/error.hpp"
#include "locus/version.hpp"

namespace locus {

void prepare_mpi_environment() {
#ifdef OPEN_MPI
  setenv("OMPI_MCA_osc", "sm,ucx", 0);
#endif
}

int mpi_thread_level() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided;
}

std::string thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "thread level " + std::to_string(level);
}

void require_thread_level(int needed, const std::string& feature, int provided) {
  if (provided < needed)
    throw Error(feature + " needs " + thread_level_name(needed) + ", but the MPI library provides only " +
                thread_level_name(provided) + " (" + mpi_library() + ")");
}

}  // namespace locus
