#pragma once
// Asynchronous progress for non-blocking one-sided transfers.
//
// Progress processes (runtime.progress.processes_per_node = k > 0; the
// DART design of ../shared/papers/dart-async-progress-processes.md): the
// last k ranks of every node (real or emulated) leave the application —
// the world team never sees them — and run a server loop until the
// application finalizes. They take part in every world-team segment
// allocation with zero bytes, so they map every segment of their node, and
// they hold the world team's dynamic window, so they can move data between
// any segment on their node and any segment anywhere.
//
// An application unit hands a non-blocking get/put of at least
// runtime.progress.threshold bytes on a world-team segment to its server
// through a single-producer/single-consumer ring in shared memory (no MPI
// message); the command carries what the paper's Table I carries (kind,
// target unit, team, origin and target offsets, size, segment, same-node
// flag) plus a completion slot that the origin polls in wait/test. The
// server executes commands by memcpy (same node, comm.locality on) or
// MPI_Get/MPI_Put on the dynamic window, flushes each target once per
// batch (when its rings run dry or an origin waits), and idles by the
// policy spin | yield | sleep. Origin buffers outside any segment go
// through the unit's staging area in the shared bootstrap memory.
//
// Ordering (what locus guarantees, with or without servers): an operation
// is ordered after another one only when the other has completed (wait,
// a true test, or flush(team)). Two operations in flight at the same time
// may complete in any order, as MPI RMA operations may.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace locus {

enum class IdlePolicy { spin, yield, sleep };

struct ProgressSettings {
  int processes_per_node = 0;           // k: servers per node (0: none)
  std::size_t threshold = 4096;         // offload non-blocking transfers of >= this many bytes
  std::size_t staging = 4u << 20;       // per-unit staging area for buffers outside segments
  IdlePolicy idle = IdlePolicy::sleep;  // what an idle server does
  int linger_us = 500;                  // sleep policy: keep polling this long after the last command
  int max_sleep_us = 5000;              // sleep policy: longest nap (commands wake it at once)
  bool bind = true;                     // pin units and servers to CPUs (when the launcher did not)
  bool thread = false;                  // progress thread per unit
  int thread_interval_us = 20;          // the thread's polling interval
};

std::string idle_policy_name(IdlePolicy p);
// Throws Error for anything but spin, yield, sleep.
IdlePolicy parse_idle_policy(const std::string& s);

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
