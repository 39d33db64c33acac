#pragma once
// Asynchronous progress for non-blocking one-sided transfers.
//
// Progress processes (runtime.progress.processes_per_node = k > 0; the
// design of H. Zhou et al., "Asynchronous progress design for a MPI-based
// PGAS one-sided communication system", DART): the last k ranks of every
// node (real or emulated) leave the application — the world team never
// sees them — and run a server loop until the application finalizes. They
// take part in every world-team segment allocation with zero bytes, so
// they map every segment of their node, and they are ranks of the window
// the units reach the segment through (its own window, comm.window:
// segment, the default; or the world team's dynamic window, comm.window:
// dynamic), so they can move data between any segment on their node and
// any segment anywhere.
//
// An application unit hands a non-blocking get/put of at least
// runtime.progress.threshold bytes on a world-team segment to its server
// through a single-producer/single-consumer ring in shared memory (no MPI
// message); the command carries what the paper's Table I carries (kind,
// target unit, team, origin and target offsets, size, segment, same-node
// flag) plus a completion slot that the origin polls in wait/test. The
// server executes commands by memcpy (same node, comm.locality on) or
// MPI_Rget/MPI_Rput on the segment's window (as above), flushes each target once per
// batch (when its rings run dry or an origin waits), and idles by the
// policy spin | yield | sleep. Origin buffers outside any segment go
// through the unit's staging area in the shared bootstrap memory.
//
// Ordering (what locus guarantees, with or without servers): an operation
// is ordered after another one only when the other has completed (wait,
// a true test, or flush(team)). Two operations in flight at the same time
// may complete in any order, as MPI RMA operations may.
#include "locus/settings.hpp"  // ProgressSettings, IdlePolicy
