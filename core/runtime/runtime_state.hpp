#pragma once
// Internal: the process-wide state of the one-sided core, held by the
// Runtime (one per process) instead of by globals of its own files: the
// segment records, the redirection state and its profile, the cache of
// MPI datatypes for strided transfers, what the transfer plans chose, the
// progress engine and the progress thread. It lives from the Runtime's
// constructor to its destructor; state() outside that is an Error.
//
// What stays process-wide, and why: g_direct and g_measure_comm
// (direct.hpp), because the inline path reads them without a call;
// t_lookahead (direct.hpp), because it is per thread; the
// output being written and the runtime's signal text (reaper.hpp,
// runtime.cpp), because a signal handler can read only static storage;
// the Kokkos start-up record (version.cpp), because Kokkos starts before
// the Runtime and ends after it.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "locus/async.hpp"
#include "locus/datatype.hpp"
#include "locus/plan.hpp"
#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/settings.hpp"
#include "mem/segment_table.hpp"
#include "progress/progress_engine.hpp"
#include "progress/progress_thread.hpp"

namespace locus::detail {

// Redirection (async.hpp): the served team's mode and the communication-
// ratio profile of comm.async: auto.
struct AsyncState {
  AsyncSettings settings;
  bool on = false;              // the served team's segments are redirected
  double start = 0;             // MPI_Wtime at runtime start
  double window_start = 0;      // start of the current profile interval
  std::uint64_t window_ns = 0;  // comm_ns at window_start
  // Nanoseconds spent in the core's communication calls, counted only
  // while g_measure_comm (transfer.hpp, CommScope).
  std::atomic<std::uint64_t> comm_ns{0};
  std::vector<AsyncDecision> log;
  // auto: the CR each phase name had the last time it ran (a profile
  // window that covered exactly that phase), and the current window's phases.
  std::map<std::string, double> history_on, history_off;  // by the mode the phase ran in
  std::string window_phase;
  int window_phases = 0;
};

// MPI datatypes of strided layouts, built once (rma.cpp layout_type) and
// freed with the runtime, before MPI_Finalize.
struct TypeCache {
  using Key = std::tuple<Layout, std::size_t, MPI_Datatype>;
  std::mutex m;
  std::map<Key, Datatype> types;
};

struct RuntimeState {
  SegmentTable segments;
  AsyncState async;
  TypeCache types;
  RemoteRoutes routes;  // the plans' route choices (plan.cpp, remote_routes())
  std::unique_ptr<ProgressEngine> engine;
  std::unique_ptr<ProgressThread> thread;
};

// The current runtime's state; Error when there is no runtime.
RuntimeState& state();
// The same, or nullptr.
RuntimeState* state_if_any() noexcept;

// The segment record of (team, id); Error naming it when it is not
// allocated (freed, or a stale global pointer).
SegmentInfo& segment(int team, int id);
// The segment of `team` whose part of mine holds [p, p + bytes), or nullptr.
const SegmentInfo* segment_containing(int team, const void* p, std::size_t bytes);
// The team's dynamic window (always in a lock_all epoch).
MPI_Win team_window(const Team& team);

}  // namespace locus::detail
