#pragma once
// The machine a run ran on: its description (every summary and output
// carries rank 0's) and the STREAM kernels that measure its memory
// bandwidth.
#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

namespace locus {

// The machine and build of this process, as ordered (key, value) pairs:
// host, cpu_model, cores, memory_gib, compiler, flags, build_type,
// mpi_library, kokkos, hdf5, locus, git_commit. Every output and summary
// carries rank 0's (attribute `machine`, summary section `machine`).
std::vector<std::pair<std::string, std::string>> machine_description();

// STREAM's triad a[i] = b[i] + s c[i] on `n` doubles per array, best of
// `repeats`, in GB/s (24 bytes per element, as STREAM counts). Ranks that
// call it at the same time share the node's bandwidth, as in a run; with
// `comm`, its ranks run every pass together and a pass counts at the
// time of its slowest rank.
double stream_triad_gbs(long n, int repeats, MPI_Comm comm = MPI_COMM_NULL);
// STREAM's scale a[i] = s b[i], the same way (16 bytes per element): the
// traffic of a stencil sweep whose neighbours all come from cache (read
// u, write u_new), so the most such a sweep can reach on this machine.
double stream_scale_gbs(long n, int repeats, MPI_Comm comm = MPI_COMM_NULL);
// A read-only kernel, the sum of b[i] c[i] (16 bytes per element): the
// traffic of kernels that almost only read (spmv).
double stream_read_gbs(long n, int repeats, MPI_Comm comm = MPI_COMM_NULL);

// What the runtime gave Kokkos::initialize (the user's --kokkos-* options
// and the defaults locus added), and the threads per rank it chose; the
// machine descriptor shows them with the execution space, its concurrency
// and the memory space.
void set_kokkos_launch(const std::string& args, const std::string& threads_source,
                       const std::string& binding);

}  // namespace locus
