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

// The machine and build of this process, as ordered (key, value) pairs:
// host, cpu_model, cores, memory_gib, compiler, flags, build_type,
// mpi_library, kokkos, hdf5, locus, git_commit. Every output and summary
// carries rank 0's (attribute `machine`, summary section `machine`).
std::vector<std::pair<std::string, std::string>> machine_description();

// STREAM's triad a[i] = b[i] + s c[i] on `n` doubles per array, best of
// `repeats`, in GB/s (24 bytes per element, as STREAM counts). Ranks that
// call it at the same time share the node's bandwidth, as in a run.
double stream_triad_gbs(long n, int repeats);
// STREAM's scale a[i] = s b[i], the same way (16 bytes per element): the
// traffic of a stencil sweep whose neighbours all come from cache (read
// u, write u_new), so the most such a sweep can reach on this machine.
double stream_scale_gbs(long n, int repeats);

// What the runtime gave Kokkos::initialize (the user's --kokkos-* options
// and the defaults locus added), and the threads per rank it chose; the
// machine descriptor shows them with the execution space, its concurrency
// and the memory space.
void set_kokkos_launch(const std::string& args, const std::string& threads_source,
                       const std::string& binding);

}  // namespace locus
