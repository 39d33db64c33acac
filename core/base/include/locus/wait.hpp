#pragma once
// Waiting for MPI requests without starving other ranks.
//
// MPICH (ch4:ucx) busy-polls inside MPI_Wait, MPI_Barrier and friends. With
// more ranks than cores, the rank that must make progress for us may be
// waiting for our core, and every synchronisation then costs a scheduler
// time slice (milliseconds). These loops test the request and, after a short
// spin, give the core away with sched_yield(); on an idle core the yield
// returns at once, so they cost nothing when ranks <= cores.
#include <mpi.h>

#include <vector>

namespace locus {

// One step of every locus polling loop: after a short spin (`spins`
// counts the loop's unsuccessful polls), give the core away.
void relax(unsigned& spins);
// The same for loops that poll memory a producer on another node writes:
// every fourth poll also drives MPI progress on `comm` (an MPI library that
// applies accumulates by active messages needs this process in MPI).
void relax_with_progress(unsigned& spins, MPI_Comm comm);

void wait_yielding(MPI_Request& req);
void wait_all_yielding(std::vector<MPI_Request>& reqs);
// The same, one request after the other, each polled by MPI_Test: cheaper
// per poll than MPI_Testall, and as fast as MPI_Waitall when the requests
// that complete first come first (sends before receives: a transfer
// plan's order). With a receive first it is slower (MPICH, 8 KiB: 2.4
// against 1.9 us per exchange).
void wait_each_yielding(std::vector<MPI_Request>& reqs);

// MPI_Barrier and MPI_Allreduce done with their non-blocking forms and a
// yielding wait.
void barrier_yielding(MPI_Comm comm);
void allreduce_yielding(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);

}  // namespace locus
