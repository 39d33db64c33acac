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
// yielding wait, each counted as one of the phase's collectives
// (Count::collectives: the apps' reductions in their timed loops).
void barrier_yielding(MPI_Comm comm);
void allreduce_yielding(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);

// The blocking collectives of set-up, checks and reports (every one locus
// calls outside a counted reduction), done with their non-blocking forms
// and a yielding wait, not counted. Same arguments as the MPI calls. On 4
// ranks over 2 cores a blocking collective cost a scheduler slice (7-9
// ms each, MPICH 4.0.2): 73 allreduces alone took 0.4-0.5 s of a heat3d
// start-up. The SMPI build calls the blocking forms (see wait.cpp).
namespace yielding {
void barrier(MPI_Comm comm);
void allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
void reduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm);
void bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
void gather(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
            int root, MPI_Comm comm);
void allgather(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
               MPI_Comm comm);
void allgatherv(const void* send, int scount, MPI_Datatype stype, void* recv, const int* rcounts,
                const int* displs, MPI_Datatype rtype, MPI_Comm comm);
void alltoall(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
              MPI_Comm comm);
// MPI_Comm_dup by MPI_Comm_idup: the one communicator constructor with a
// non-blocking form. Over-subscribed (4 ranks, 2 cores, MPICH 4.0.2) a
// blocking MPI_Comm_dup cost 11 ms; a heat3d start-up makes nine.
void comm_dup(MPI_Comm comm, MPI_Comm* out);
}  // namespace yielding
// (alltoallv and exscan: locus::alltoallv and locus::exscan_sum,
// collective.hpp, which yield too.)

}  // namespace locus
