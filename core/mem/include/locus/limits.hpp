#pragma once
// Memory and thread limits a job runs under, checked before anything big is
// allocated or started.
//
// Batch systems limit a job in ways MemAvailable does not show: an address
// space limit per process (RLIMIT_AS, `ulimit -v`), a data limit
// (RLIMIT_DATA, `ulimit -d`: private writable mappings), and a control
// group's memory limit (cgroup v2 memory.max, v1 memory.limit_in_bytes) for
// all processes of the job on a node. MPI_Win_allocate_shared under such a
// limit fails inside MPICH with an error stack (one rank) or hangs (ranks
// that succeeded wait for the one that did not), and a private allocation
// ends in std::bad_alloc after the work before it: these checks run first
// and end every rank with one message naming what and which limit.
#include <string>

#include "locus/team.hpp"

namespace locus {

// Bytes this process may still map (RLIMIT_AS minus its address space now)
// and still allocate privately (the smaller of that and RLIMIT_DATA minus
// its data size now); -1 when unlimited. `what` says which limit.
double address_space_headroom(std::string& what);
double private_headroom(std::string& what);
// Bytes the control group of this process may still use (its limit, or the
// smallest of its ancestors', minus its usage); -1 when there is none.
// LOCUS_CGROUP_ROOT (tests) replaces /sys/fs/cgroup.
double cgroup_headroom(std::string& what);
// Cores of this node (online CPUs).
int node_cores();

// Collective over the team, before a phase allocates: every unit says how
// many bytes it is about to hold in segments (`shared`: MPI shared memory,
// mapped by every process of its node) and in private memory. Every unit
// throws the same CollectiveError "<what>: needs ..." when the node's units
// together exceed the node's available memory, its cgroup limit or
// /dev/shm, or when one process would exceed its address-space or data
// limit (each process maps all its node's shared parts).
void require_memory(Team& team, double shared, double private_bytes, const std::string& what);

// Collective: `threads` threads per unit (of which `what` is the key) are
// refused, on every unit, above the node's cores, or when their stacks do
// not fit the address-space limit (`stack` bytes each; 0: RLIMIT_STACK or
// 8 MiB).
void require_threads(MPI_Comm comm, long threads, const std::string& what, double stack = 0);

}  // namespace locus
