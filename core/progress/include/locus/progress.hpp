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

}  // namespace locus
