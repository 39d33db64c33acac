#pragma once
// Target-side redirection (Casper's asynchronous progress), adaptive.
//
// With progress processes (runtime.progress.processes_per_node = k >= 1)
// every application unit has one *main* progress process on its node (its
// "ghost", round-robin over the node's k). The ghost maps the node's part
// of every segment and exposes it in the segment's own MPI window (one
// range from the lowest part of the node to the end of the highest,
// displacement unit 1), so that unit u's byte x is the ghost's byte
// ghost_disp[u] + x. With redirection on for a segment:
//
//   * get / put (contiguous, strided, index lists in plans) to a unit on
//     another node go to the target's ghost (comm.async_ops: all, the
//     default; `atomics` leaves them direct): they complete while the
//     target computes outside MPI (the ghost keeps MPI progressing);
//     same-node transfers stay memcpy on shared memory;
//   * every atomic (accumulate, fetch_and_op, compare_and_swap, notify) on
//     the segment, local origins included, goes to the target's ghost. MPI
//     makes accumulates atomic only per target process, so all of them
//     must reach the same process: one main ghost per target, never split
//     by segment (Casper removed that), and the mode changes only at a
//     collective point with nothing in flight.
//
// The mode of a run is comm.async (env LOCUS_ASYNC overrides):
//   off   never redirected (the baseline);  on    always (from the start);
//   user  on in the phases named by comm.async_phases, off in the others;
//   auto  by the communication ratio CR = Tcomm / (Tcomm + Tcomp) each unit
//         measured in the core's communication calls since the last
//         decision: off above comm.adapt.high, on below comm.adapt.low
//         (low < high: hysteresis), not before comm.adapt.interval seconds
//         of profile. Every unit's CR is exchanged at the phase point and
//         rank 0's decision (on the mean) is applied by all at once. A
//         phase name seen before is judged by its own last profile (a
//         window that covered just that phase): with redirection on, off
//         above high; else, on below low. So a repeating sequence is not
//         one phase late at each change of kind.
// user and auto start off; the first phase point decides.
#include <optional>
#include <string>
#include <vector>

#include "locus/settings.hpp"
#include "locus/team.hpp"

namespace locus {

// Collective over the team (only a team served by progress processes, the
// world team, can redirect). Completes every outstanding operation of the
// team (flush + barrier: the "symmetric" point), then switches redirection
// for all its segments and tells the progress processes. Segments
// allocated later start in the new state.
void set_async(Team& team, bool on);
// Whether the team's operations are redirected now.
bool async_enabled(const Team& team);

// One phase point (collective): a flush of every outstanding operation and
// a barrier, then the mode's decision for the phase that starts here:
// user -> on iff `phase` is in comm.async_phases; auto -> by the measured
// CR (forced_cr >= 0 replaces every unit's measurement: deterministic
// tests); on/off -> unchanged. Records a log entry in every mode.
void phase_point(Team& team, const std::string& phase, double forced_cr = -1.0);

struct AsyncDecision {
  double time = 0;         // seconds since the runtime started
  std::string phase;       // the phase that starts here
  std::vector<double> cr;  // each unit's communication ratio over the profile interval
  double mean_cr = 0;
  bool on = false;  // redirection during the phase
  std::string why;  // "user: phase comp", "auto: CR 0.72 > high 0.60", ...
};
// The log of phase points of this runtime (the same on every unit).
const std::vector<AsyncDecision>& async_log();

}  // namespace locus
