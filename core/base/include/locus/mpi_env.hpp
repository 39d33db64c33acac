#pragma once
// The MPI environment: what to set before MPI_Init, and the thread level
// MPI gave.
#include <string>

namespace locus {

// Call before MPI_Init (locus::run does). With Open MPI it selects the
// one-sided components that work for locus's windows (OMPI_MCA_osc=sm,ucx:
// Open MPI 4.1's default selection fails MPI_Win_create and
// MPI_Win_create_dynamic on one-process communicators); an OMPI_MCA_osc
// already set wins. Nothing with other MPI libraries.
void prepare_mpi_environment();

// The thread support MPI_Init_thread gave this process.
int mpi_thread_level();
// Throws Error naming `feature` when the MPI library's thread support is
// below `needed` (e.g. MPI_THREAD_MULTIPLE for a progress thread).
void require_thread_level(int needed, const std::string& feature, int provided = mpi_thread_level());
std::string thread_level_name(int level);

}  // namespace locus
