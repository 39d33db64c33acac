#pragma once
// Teams of the one-sided core: an ordered group of units with a
// communicator, a node communicator over which its segments' shared-memory
// windows live, and (internal: the core's state) an MPI dynamic window,
// opened once with lock_all(MPI_MODE_NOCHECK), for segments allocated with
// comm.window: dynamic. The Runtime (runtime.hpp) owns the world team.
#include <mpi.h>

#include <memory>
#include <vector>

#include "locus/error.hpp"

namespace locus {

class Runtime;

class Team {
 public:
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int id() const { return id_; }
  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // This team's units on my node, and the rank there of any unit on my node
  // (-1 for units on other nodes).
  MPI_Comm node_comm() const { return node_comm_; }
  int node_rank(int unit) const { return node_rank_[static_cast<std::size_t>(unit)]; }
  bool same_node(int unit) const { return node_rank(unit) >= 0; }
  // True when progress processes serve this team (the world team with
  // runtime.progress.processes_per_node > 0): its window includes them
  // and its segments' shared memory is mapped by them.
  bool served() const { return shm_comm_ != node_comm_; }
  // The communicator segments' shared-memory windows are allocated on:
  // node_comm(), plus the node's progress processes when served().
  MPI_Comm shm_comm() const { return shm_comm_; }
  // Collective: units with the same colour form a new team, ordered as here.
  std::unique_ptr<Team> split(int color) const;

 private:
  friend class Runtime;
  friend int next_segment_id(Team&);
  // With shm_comm from the progress engine, the team is served (and the
  // runtime gives it the engine's window); otherwise it opens its own.
  Team(MPI_Comm comm, int id, int world_rank, const std::vector<int>& node_of_world,
       MPI_Comm shm_comm = MPI_COMM_NULL);
  MPI_Comm comm_ = MPI_COMM_NULL, node_comm_ = MPI_COMM_NULL, shm_comm_ = MPI_COMM_NULL;
  int id_ = 0, rank_ = 0, size_ = 0;
  std::vector<int> world_unit_;  // team unit -> world unit
  std::vector<int> node_rank_;   // team unit -> rank in node_comm_ or -1
  int next_segment_ = 1;
  const std::vector<int>* node_of_world_ = nullptr;
};

}  // namespace locus
