#pragma once
// Units, nodes and teams of the one-sided core.
//
// A Runtime (one per process, created by locus::run) knows the node map —
// real nodes from MPI_Comm_split_type(SHARED), or *emulated* nodes of N
// consecutive ranks (`runtime.node_size`, env LOCUS_NODE_SIZE) so that the
// inter-node paths run on one host — and owns the world team. Every team has
// one MPI dynamic window, created once and opened with
// lock_all(MPI_MODE_NOCHECK), into which its segments are attached, and a
// node communicator over which the segments' shared-memory windows live.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "locus/error.hpp"
#include "locus/progress.hpp"
#include "locus/segment_table.hpp"
#include "locus/settings.hpp"

namespace locus {

namespace detail {
class ProgressEngine;
class ProgressThread;
class Aggregator;
}  // namespace detail

struct NodeMap {
  std::vector<int> node_of;        // world unit -> node index
  std::vector<std::string> hosts;  // world unit -> processor name
  int emulated_size = 0;           // 0: real nodes
  int nodes() const;
  // "node 0: units 0-1 (vm); node 1: ..." one line per node.
  std::string describe() const;
};

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
  // The team's dynamic window (always in a lock_all epoch).
  MPI_Win window() const { return win_; }
  // True when progress processes serve this team (the world team with
  // runtime.progress.processes_per_node > 0): its window includes them
  // and its segments' shared memory is mapped by them.
  bool served() const { return shm_comm_ != node_comm_; }
  // The communicator segments' shared-memory windows are allocated on:
  // node_comm(), plus the node's progress processes when served().
  MPI_Comm shm_comm() const { return shm_comm_; }
  // Collective: units with the same colour form a new team, ordered as here.
  std::unique_ptr<Team> split(int color) const;
  // The batches of aggregated atomics and gets (aggregate.hpp), made at the
  // team's first segment with comm.atomics: aggregate; nullptr before.
  detail::Aggregator* aggregator() const { return agg_.get(); }
  void set_aggregator(std::unique_ptr<detail::Aggregator> a);

 private:
  friend class Runtime;
  friend int next_segment_id(Team&);
  // With a window and shm_comm from the progress engine, the team is served.
  Team(MPI_Comm comm, int id, int world_rank, const std::vector<int>& node_of_world,
       MPI_Win served_window = MPI_WIN_NULL, MPI_Comm shm_comm = MPI_COMM_NULL);
  MPI_Comm comm_ = MPI_COMM_NULL, node_comm_ = MPI_COMM_NULL, shm_comm_ = MPI_COMM_NULL;
  int id_ = 0, rank_ = 0, size_ = 0;
  std::vector<int> world_unit_;  // team unit -> world unit
  std::vector<int> node_rank_;   // team unit -> rank in node_comm_ or -1
  MPI_Win win_ = MPI_WIN_NULL;
  int next_segment_ = 1;
  const std::vector<int>* node_of_world_ = nullptr;
  std::unique_ptr<detail::Aggregator> agg_;
};

class Runtime {
 public:
  // Collective over comm. Without progress processes every rank of comm is
  // an application unit. With settings.progress.processes_per_node = k > 0
  // the last k ranks of every node become progress processes: on them
  // is_server() is true and serve() runs the server loop; the others form
  // the application (app_comm(), the world team).
  Runtime(MPI_Comm comm, const CommSettings& settings);
  ~Runtime();  // collective (servers included)
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The runtime of this process; Error when none exists.
  static Runtime& current();
  static bool exists();

  // This process is a progress process: call serve() and nothing else.
  bool is_server() const { return server_; }
  // Runs the server loop until the application units destroy their
  // Runtime; returns the exit status.
  int serve();
  // The application units (comm itself without progress processes).
  MPI_Comm app_comm() const { return app_comm_; }
  // Ranks (in the comm the Runtime was built on) of the application units
  // and of the progress processes.
  const std::vector<int>& app_ranks() const { return app_ranks_; }
  const std::vector<int>& server_ranks() const { return server_ranks_; }
  // With progress processes: the CPU each rank (of the comm the Runtime was
  // built on) was bound to, -1 where none (runtime.progress.bind), and
  // "auto" or why the ranks were left unbound; empty without servers.
  const std::vector<int>& bound_cpus() const { return bound_cpus_; }
  const std::string& binding() const { return binding_; }
  // Transfers this unit has handed to its progress process so far.
  std::uint64_t offloaded() const;
  // Requests the progress thread (if on) has completed so far.
  std::uint64_t thread_completions() const;
  // "progress processes: ranks 1, 3 (1 per node; threshold 4096 B, idle
  // yield); progress thread: off" for summaries and provenance.
  std::string progress_description() const;

  Team& world() { return *world_; }
  // The application units on my node (real or emulated).
  Team& node() { return *node_; }
  const NodeMap& node_map() const { return nodes_; }
  const CommSettings& settings() const { return settings_; }

  // Team registry (for global pointers naming a team by id).
  Team& team(int id) const;
  void add_team(Team* t);
  void remove_team(int id);
  int max_team_id() const { return max_team_id_; }

  // The translation table (segment_table.hpp): (team id, segment id) ->
  // segment. Lookups are thread-safe; add/take happen in the collective
  // allocate/free, which must not run while other threads of the unit use
  // the core.
  SegmentInfo& segment(int team, int id) const;
  SegmentInfo* find_segment(int team, int id) const { return segments_.find(team, id); }
  void add_segment(std::unique_ptr<SegmentInfo> s) { segments_.add(std::move(s)); }
  std::unique_ptr<SegmentInfo> take_segment(int team, int id) { return segments_.take(team, id); }
  std::size_t segment_count() const { return segments_.count(); }
  // Calls fn once for every window the team's segments use for RMA (the
  // dynamic window once, or each segment's own).
  template <class Fn>
  void for_each_window(int team, Fn&& fn) const {
    MPI_Win last = MPI_WIN_NULL;
    segments_.for_each(team, [&](const SegmentInfo& seg) {
      if (seg.rma != last && seg.rma != MPI_WIN_NULL) fn(last = seg.rma);
    });
  }
  // Calls fn(SegmentInfo&) for every segment of the team (collective
  // operations only: not while other threads of the unit use the core).
  template <class Fn>
  void for_each_segment(int team, Fn&& fn) {
    segments_.for_each(team, fn);
  }
  // Collective over the team: frees every segment still allocated on it.
  void release_segments(int team);
  // The segment of `team` whose part of mine holds [p, p + bytes), or nullptr.
  const SegmentInfo* segment_containing(int team, const void* p, std::size_t bytes) const;

 private:
  detail::SegmentTable segments_;
  CommSettings settings_;
  NodeMap nodes_;
  std::vector<Team*> teams_;  // team id -> team (nullptr: none here)
  int max_team_id_ = 0;
  std::unique_ptr<Team> world_;
  std::unique_ptr<Team> node_;
  bool server_ = false;
  MPI_Comm app_comm_ = MPI_COMM_NULL;
  std::vector<int> app_ranks_, server_ranks_;
  std::vector<int> bound_cpus_;
  std::string binding_;
  std::unique_ptr<detail::ProgressEngine> engine_;
  std::unique_ptr<detail::ProgressThread> thread_;
};

// The node size to use: the deck's value when > 0, else LOCUS_NODE_SIZE,
// else 0 (real nodes). Throws Error for a malformed LOCUS_NODE_SIZE.
int effective_node_size(long from_deck);

}  // namespace locus
