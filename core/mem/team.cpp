// Teams (team.hpp) and their registry in the core's state.
#include "locus/team.hpp"

#include <algorithm>

#include "locus/collective.hpp"
#include "locus/wait.hpp"
#include "mem/core_state.hpp"
#include "mem/shared_pages.hpp"

namespace locus {

namespace detail {

void register_team(Team& team, MPI_Win window) {
  CoreState& st = core();
  const auto id = static_cast<std::size_t>(team.id());
  if (st.teams.size() <= id) {
    st.teams.resize(id + 1, nullptr);
    st.windows.resize(id + 1, MPI_WIN_NULL);
  }
  st.teams[id] = &team;
  st.windows[id] = window;
  st.max_team_id = std::max(st.max_team_id, team.id());
}

void unregister_team(const Team& team) {
  CoreState& st = core();
  const auto id = static_cast<std::size_t>(team.id());
  if (id < st.teams.size() && st.teams[id] == &team) {
    st.teams[id] = nullptr;
    st.windows[id] = MPI_WIN_NULL;
  }
}

MPI_Win team_window(const Team& team) {
  return core().windows[static_cast<std::size_t>(team.id())];
}

}  // namespace detail

Team::Team(MPI_Comm comm, int id, int world_rank, const std::vector<int>& node_of_world, MPI_Comm shm_comm)
    : comm_(comm), id_(id) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  node_of_world_ = &node_of_world;
  world_unit_.resize(static_cast<std::size_t>(size_));
  locus::yielding::allgather(&world_rank, 1, MPI_INT, world_unit_.data(), 1, MPI_INT, comm_);
  int my_node = node_of_world[static_cast<std::size_t>(world_rank)];
  MPI_Comm_split(comm_, my_node, rank_, &node_comm_);
  // Rank in node_comm_ of every same-node unit: split keeps team order.
  node_rank_.assign(static_cast<std::size_t>(size_), -1);
  int next = 0;
  for (int u = 0; u < size_; ++u)
    if (node_of_world[static_cast<std::size_t>(world_unit_[static_cast<std::size_t>(u)])] == my_node)
      node_rank_[static_cast<std::size_t>(u)] = next++;
  shm_comm_ = shm_comm != MPI_COMM_NULL ? shm_comm : node_comm_;
  // The team's dynamic window: segments are attached to it as they are
  // allocated. A served team uses the progress engine's window (apps
  // first, so team unit = window rank), which the runtime sets.
  MPI_Win win = MPI_WIN_NULL;
  if (!served()) {
    MPI_Win_create_dynamic(MPI_INFO_NULL, comm_, &win);
    detail::open_epoch(win);
  }
  detail::register_team(*this, win);
}

Team::~Team() {
  if (!collective_cleanup_allowed()) return;  // a local error: the job aborts next
  // Segments still allocated on this team go with it (collectively: a team
  // is destroyed by all its units together).
  detail::CoreState* core = detail::core_if_any();
  if (core && core->release_team) core->release_team(*this);
  MPI_Win win = core ? detail::team_window(*this) : MPI_WIN_NULL;
  if (win != MPI_WIN_NULL && !served()) {
    detail::close_epoch(win);
    MPI_Win_free(&win);
  }
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (core) detail::unregister_team(*this);
}

std::unique_ptr<Team> Team::split(int color) const {
  detail::CoreState& core = detail::core();
  int id = core.max_team_id + 1;
  // Every member of this team agrees on the new id; disjoint new teams may
  // share it, which is fine: a unit belongs to only one of them.
  locus::yielding::allreduce(MPI_IN_PLACE, &id, 1, MPI_INT, MPI_MAX, comm_);
  MPI_Comm sub;
  MPI_Comm_split(comm_, color, rank_, &sub);
  return std::unique_ptr<Team>(new Team(sub, id, core.world->rank(), *node_of_world_));
}

int next_segment_id(Team& t) {
  return t.next_segment_++;
}

}  // namespace locus
