#pragma once
// Build provenance, recorded in every output file.
#include <string>
#include <utility>
#include <vector>

namespace locus {

const char* version();     // locus version, e.g. "0.1.0"
const char* git_commit();  // commit of the source tree at build time ("unknown" outside git; "-dirty" suffix)
std::string mpi_library();  // MPI_Get_library_version, first line
// The MPI library family liblocus was built with (from its mpi.h): "mpich",
// "openmpi" or "other"; names the comm.remote calibration files.
const char* mpi_flavour();
std::string iso_date_now();  // UTC, ISO 8601

}  // namespace locus
