#pragma once
// Internal: roles, communicators and CPU placement of a job with progress
// processes (design: locus/progress.hpp).
#include <mpi.h>

#include <string>
#include <vector>

#include "locus/progress.hpp"

namespace locus {

namespace detail {

// Kinds of command (and of control message to a server).
enum class CommandKind : std::uint32_t { get = 1, put = 2 };

// Roles and communicators of a job with progress processes. Built
// collectively over all ranks of `comm` by the Runtime.
struct ProgressLayout {
  bool server = false;
  std::vector<int> app_ranks;          // app unit -> rank in the original comm
  std::vector<int> server_ranks;       // servers' ranks in the original comm
  std::vector<int> server_node;        // server -> node index
  std::vector<int> app_node;           // app unit -> node index
  MPI_Comm app_comm = MPI_COMM_NULL;   // the application units
  MPI_Comm full_comm = MPI_COMM_NULL;  // apps first (in order), then servers
  MPI_Comm node_full = MPI_COMM_NULL;  // my node: its apps first, then its servers
  int node = 0;                        // my node index
  int node_apps = 0;                   // application units on my node
  int node_servers = 0;                // servers on my node
  int node_index = 0;                  // my rank in node_full
};

// Which of its node's servers serves the node's `unit_in_node`-th unit:
// round-robin, the one rule the engine and the CPU placement share.
inline int server_in_node(int unit_in_node, int servers_per_node) {
  return unit_in_node % servers_per_node;
}

// Computes the layout; throws CollectiveError (on every rank) when a node
// has no more than k ranks.
ProgressLayout make_progress_layout(MPI_Comm comm, const std::vector<int>& node_of, int k);

// CPU placement with progress processes (runtime.progress.bind: auto).
// One host's ranks in rank order: an application unit, or a server and the
// host-local indices (into `ranks`) of the units it serves.
struct HostRank {
  bool server = false;
  std::vector<int> serves;
};
// The CPU for each rank: units take `cpus` in order (wrapping around when
// there are more units than CPUs); each server takes the least loaded CPU
// that none of its own units runs on (any CPU when there is none), the
// last such in `cpus` on a tie (away from unit 0, which also writes the
// summaries). A server that shares a core with the unit it serves would
// take that unit's compute time exactly while the unit's transfers are in
// flight.
std::vector<int> place_on_cpus(const std::vector<int>& cpus, const std::vector<HostRank>& ranks);

struct Binding {
  std::vector<int> cpu;  // per rank of the comm: the CPU it is bound to, -1 if not bound
  std::string how;       // "auto", or why nothing was bound
};
// Collective over `comm` (the comm the layout was built on): binds every
// rank by place_on_cpus, host by host, unless the launcher bound the ranks
// already (their affinity masks differ or hold a single CPU).
Binding bind_progress_layout(MPI_Comm comm, const ProgressLayout& layout);

class ProgressEngine;

// The engine of this process (nullptr without progress processes).
ProgressEngine* progress_engine();

}  // namespace detail

}  // namespace locus
