#include "locus/async.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "comm/comm_state.hpp"
#include "locus/rma.hpp"
#include "locus/wait.hpp"
#include "progress/progress_engine.hpp"
#include "xfer/transfer.hpp"

namespace locus {

namespace detail {
namespace {
AsyncState& async_state() {
  return comm_state().async;
}
}  // namespace

void async_start(const CommSettings& s) {
  AsyncState& a = async_state();
  a.settings = s.async;
  // on: from the start. user and auto start off and decide at the first
  // phase point (ghosts that poll before then slowed the whole run down
  // on an over-subscribed node, even after they stopped: measured).
  a.on = s.async.mode == AsyncMode::on;
  a.start = a.window_start = MPI_Wtime();
  a.comm_ns.store(0);
  a.window_ns = 0;
  g_direct.measuring.store(s.async.mode == AsyncMode::automatic);
}

void add_comm_ns(std::uint64_t ns) {
  async_state().comm_ns.fetch_add(ns, std::memory_order_relaxed);
}

void async_stop() {
  g_direct.measuring.store(false);
}

bool async_default_on() {
  return async_state().on;
}
}  // namespace detail

bool async_enabled(const Team& team) {
  return team.served() && detail::comm_state().async.on;
}

void set_async(Team& team, bool on) {
  if (on && !team.served())
    throw Error(
        "set_async: redirection needs progress processes serving the team (the world team with "
        "runtime.progress.processes_per_node >= 1)");
  // The symmetric point: nothing of this team in flight anywhere.
  flush(team);
  barrier(team);
  if (!team.served()) return;
  detail::SegmentTable& segments = detail::core().segments;
  segments.for_each(team.id(), [on](SegmentInfo& seg) {
    seg.redirect = on && seg.own != MPI_WIN_NULL && seg.hint != AsyncHint::never && !seg.aggregate;
  });
  segments.refresh(team.id());
  detail::comm_state().async.on = on;
  detail::progress_engine()->notify_servers(detail::Control::async, team.id(), on ? 1 : 0);
  barrier(team);
}

const std::vector<AsyncDecision>& async_log() {
  static const std::vector<AsyncDecision> none;
  const detail::CommState* s = detail::comm_state_if_any();
  return s ? s->async.log : none;
}

namespace {

// comm.async: auto at a phase point: redirection on or off for PHASE from
// the profile (mean CR of the window that ended, ELAPSED: rank 0's time
// since the window started), the phases' history and the hysteresis; WHY
// says how it was decided.
bool auto_decision(detail::AsyncState& a, const std::string& phase, double forced_cr, double elapsed,
                   double mean_cr, char* why, std::size_t why_size) {
  // Every unit has the same CRs and rank 0's elapsed time: all decide alike.
  const bool ready = forced_cr >= 0 || elapsed >= a.settings.interval;
  if (!ready) {
    std::snprintf(why, why_size, "auto: kept (%.2f s of profile, interval %.2f s)", elapsed,
                  a.settings.interval);
    ++a.window_phases;
    return a.on;
  }
  // A window that covered one phase is that phase's profile, kept by
  // the mode it ran in (the CR depends on it: a communication-heavy
  // phase that waits on busy ghosts has a high CR with redirection on
  // and a low one without). A phase seen before is judged by its own
  // profile -- with redirection on if there is one (off above high),
  // else without (on below low) -- so a repeating sequence is not one
  // phase late at each change of kind; a new phase by the window that
  // just ended, with the hysteresis. A forced CR is used as it is.
  if (a.window_phases == 1 && !a.window_phase.empty())
    (a.on ? a.history_on : a.history_off)[a.window_phase] = mean_cr;
  bool on = a.on;
  const auto with_on = a.history_on.find(phase), with_off = a.history_off.find(phase);
  if (forced_cr < 0 && with_on != a.history_on.end()) {
    on = with_on->second <= a.settings.high;
    std::snprintf(why, why_size, "auto: phase %s had CR %.2f with redirection on (high %.2f): %s",
                  phase.c_str(), with_on->second, a.settings.high, on ? "on" : "off");
  } else if (forced_cr < 0 && with_off != a.history_off.end()) {
    on = with_off->second < a.settings.low;
    std::snprintf(why, why_size, "auto: phase %s had CR %.2f with redirection off (low %.2f): %s",
                  phase.c_str(), with_off->second, a.settings.low, on ? "on" : "off");
  } else if (a.on && mean_cr > a.settings.high) {
    on = false;
    std::snprintf(why, why_size, "auto: CR %.2f > high %.2f: off", mean_cr, a.settings.high);
  } else if (!a.on && mean_cr < a.settings.low) {
    on = true;
    std::snprintf(why, why_size, "auto: CR %.2f < low %.2f: on", mean_cr, a.settings.low);
  } else {
    std::snprintf(why, why_size, "auto: CR %.2f within [%.2f, %.2f] or same side: kept %s", mean_cr,
                  a.settings.low, a.settings.high, a.on ? "on" : "off");
  }
  a.window_start = MPI_Wtime();
  a.window_ns = a.comm_ns.load();
  a.window_phase = phase;
  a.window_phases = 1;
  return on;
}

}  // namespace

void phase_point(Team& team, const std::string& phase, double forced_cr) {
  auto& a = detail::comm_state().async;
  flush(team);
  barrier(team);
  const double now = MPI_Wtime();
  const double mine_elapsed = now - a.window_start;
  const double comm = static_cast<double>(a.comm_ns.load() - a.window_ns) * 1e-9;
  double mine = forced_cr >= 0 ? forced_cr : (mine_elapsed > 0 ? std::min(1.0, comm / mine_elapsed) : 0.0);
  // Rank 0's clock for the log and the interval: the log is the same on
  // every unit (it goes into the output file's metadata, which parallel
  // HDF5 needs identical everywhere) and every unit decides alike.
  double clock[2] = {now - a.start, mine_elapsed};
  locus::yielding::bcast(clock, 2, MPI_DOUBLE, 0, team.comm());
  const double elapsed = clock[1];
  AsyncDecision d;
  d.time = clock[0];
  d.phase = phase;
  d.cr.resize(static_cast<std::size_t>(team.size()));
  locus::yielding::allgather(&mine, 1, MPI_DOUBLE, d.cr.data(), 1, MPI_DOUBLE, team.comm());
  for (double c : d.cr) d.mean_cr += c;
  d.mean_cr /= static_cast<double>(d.cr.size());
  bool on = a.on;
  char why[200];
  switch (a.settings.mode) {
    case AsyncMode::off:
      std::snprintf(why, sizeof why, "off");
      break;
    case AsyncMode::on:
      std::snprintf(why, sizeof why, "on");
      break;
    case AsyncMode::user: {
      const auto& ph = a.settings.on_phases;
      on = std::find(ph.begin(), ph.end(), phase) != ph.end();
      std::snprintf(why, sizeof why, "user: phase %s is %s comm.async_phases", phase.c_str(),
                    on ? "in" : "not in");
      break;
    }
    case AsyncMode::automatic:
      on = auto_decision(a, phase, forced_cr, elapsed, d.mean_cr, why, sizeof why);
      break;
  }
  if (on != a.on) set_async(team, on);
  d.on = a.on;
  d.why = why;
  a.log.push_back(std::move(d));
}

}  // namespace locus
