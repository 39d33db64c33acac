#pragma once
// Internal: the state of the one-sided core as the layers below the
// runtime reach it. The Runtime (runtime/runtime.cpp) owns every part and
// attaches this record for its lifetime: one pointer per process, the
// only way a lower layer finds the runtime's state. A layer uses only the
// parts of its own layer and of the layers below it; the parts of higher
// layers are declared here by name only.
#include <mpi.h>

#include <vector>

#include "locus/node_map.hpp"
#include "locus/settings.hpp"
#include "mem/segment_table.hpp"

namespace locus {
class Team;
namespace detail {

class ProgressEngine;  // progress/progress_engine.hpp
class ProgressThread;  // progress/progress_thread.hpp
struct TypeCache;      // xfer/transfer.hpp
struct CommState;      // comm/comm_state.hpp

struct CoreState {
  // config and mem
  const CommSettings* settings = nullptr;
  const NodeMap* nodes = nullptr;
  SegmentTable segments;
  Team* world = nullptr;
  std::vector<Team*> teams;      // team id -> live team (null: freed)
  std::vector<MPI_Win> windows;  // team id -> its dynamic window (lock_all epoch)
  int max_team_id = 0;
  // Frees a team's segments and what the comm layer keeps for it, before
  // the team's window goes (set by the runtime: comm/segment.cpp).
  void (*release_team)(Team& team) = nullptr;
  // xfer, progress, comm (null: not in this runtime)
  TypeCache* types = nullptr;
  ProgressEngine* engine = nullptr;
  ProgressThread* thread = nullptr;
  CommState* comm = nullptr;
};

// The attached state; Error when no runtime exists.
CoreState& core();
// The same, or nullptr.
CoreState* core_if_any() noexcept;
// The runtime attaches its state at construction and detaches it (nullptr)
// at destruction.
void attach_core(CoreState* state) noexcept;

// The segment record of (team, id); Error naming it when it is not
// allocated (freed, or a stale global pointer).
SegmentInfo& segment(int team, int id);
// The segment of `team` whose part of mine holds [p, p + bytes), or nullptr.
const SegmentInfo* segment_containing(int team, const void* p, std::size_t bytes);
// The team by id; Error when it does not exist.
Team& team(int id);
// A team enters the registry when made (with its dynamic window) and
// leaves it when destroyed (team.cpp).
void register_team(Team& team, MPI_Win window);
void unregister_team(const Team& team);
// The team's dynamic window (always in a lock_all epoch).
MPI_Win team_window(const Team& team);

}  // namespace detail
}  // namespace locus
