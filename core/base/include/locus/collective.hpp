#pragma once
// Collective checks: a condition that fails on any rank becomes the same
// CollectiveError on every rank, so no rank waits for another that gave up.
#include <mpi.h>

#include <functional>
#include <string>

#include "locus/error.hpp"

namespace locus {

// Collective: when `ok` is false on any rank, every rank throws the same
// CollectiveError carrying the message of the lowest failing rank.
void collective_require(MPI_Comm comm, bool ok, const std::string& msg);

// Throws a CollectiveError on every rank if fn() throws Error on any rank.
void collectively(MPI_Comm comm, const std::function<void()>& fn);

// out[i] = the sum of in[i] over the ranks before mine (0 on rank 0), for
// i < n: MPI_Exscan with rank 0's result defined, with a yielding wait
// (wait.hpp). The SMPI build gathers every rank's values and adds them up
// locally instead: SimGrid's exscan sends from every rank to every later
// one (O(ranks^2) messages, most of spmv's simulated set-up at 1,024
// ranks).
void exscan_sum(MPI_Comm comm, const long long* in, long long* out, int n);

// MPI_Alltoallv, with a yielding wait (wait.hpp). The SMPI build posts a
// receive and a send only for the ranks with a non-zero count (SimGrid
// 3.32's alltoallv sends to every rank, empty or not: O(ranks^2) messages
// per call, most of the set-up of transfer plans and of spmv's send lists
// at 1,024 simulated ranks).
void alltoallv(const void* send, const int* scount, const int* sdispl, void* recv, const int* rcount,
               const int* rdispl, MPI_Datatype type, MPI_Comm comm);

}  // namespace locus
