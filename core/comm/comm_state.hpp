#pragma once
// Internal: what the comm layer keeps while a runtime exists, owned by
// the Runtime (runtime/runtime_state.hpp) and reached through the core's
// state (mem/core_state.hpp, `comm`): redirection's mode and profile, the
// plans' route choices, and each team's aggregator.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "locus/async.hpp"
#include "locus/plan.hpp"
#include "locus/settings.hpp"
#include "mem/core_state.hpp"

namespace locus::detail {

class Aggregator;

// Redirection (async.hpp): the served team's mode and the communication-
// ratio profile of comm.async: auto.
struct AsyncState {
  AsyncSettings settings;
  bool on = false;              // the served team's segments are redirected
  double start = 0;             // MPI_Wtime at runtime start
  double window_start = 0;      // start of the current profile interval
  std::uint64_t window_ns = 0;  // comm_ns at window_start
  // Nanoseconds spent in the core's communication calls, counted only
  // while g_direct.measuring (transfer.hpp, CommScope).
  std::atomic<std::uint64_t> comm_ns{0};
  std::vector<AsyncDecision> log;
  // auto: the CR each phase name had the last time it ran (a profile
  // window that covered exactly that phase), and the current window's phases.
  std::map<std::string, double> history_on, history_off;  // by the mode the phase ran in
  std::string window_phase;
  int window_phases = 0;
};

struct CommState {
  AsyncState async;
  RemoteRoutes routes;  // the plans' route choices (plan.cpp, remote_routes())
  // team id -> its aggregator (aggregate.hpp), made at the team's first
  // segment with comm.atomics: aggregate; null before.
  std::vector<std::unique_ptr<Aggregator>> aggregators;
  CommState();
  ~CommState();
};

// The comm layer's state; Error when there is no runtime.
inline CommState& comm_state() {
  return *core().comm;
}
inline CommState* comm_state_if_any() noexcept {
  CoreState* c = core_if_any();
  return c ? c->comm : nullptr;
}

// Redirection (async.cpp): the runtime's start and end (runtime construction /
// destruction) and the state new segments start in.
void async_start(const CommSettings& s);
void async_stop();
// The state new segments start in (set_async's last value).
bool async_default_on();

// The team's aggregator, or nullptr (aggregate.cpp).
Aggregator* aggregator_of(const Team& team) noexcept;
// Makes the team's aggregator if it has none (collective over the team).
void ensure_aggregator(Team& team);
// Destroys the team's aggregator (after its shutdown, when the team goes).
void drop_aggregator(const Team& team);
// Frees every segment of the team and its aggregator (segment.cpp): the
// runtime's CoreState::release_team.
void release_team(Team& team);

}  // namespace locus::detail
