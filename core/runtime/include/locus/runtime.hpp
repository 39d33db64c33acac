#pragma once
// The runtime of the one-sided core: one per process, made by locus::run
// (app.hpp) or directly by a program that runs MPI itself. It knows the
// node map, owns the world team and the node team, starts the progress
// processes and the progress thread, and holds the core's state.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "locus/node_map.hpp"
#include "locus/settings.hpp"
#include "locus/team.hpp"

namespace locus {

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
  // Pauses this unit's progress thread (runtime.progress.thread: it sleeps
  // until resumed, and the application's own waits complete its requests)
  // or resumes it; nothing without one. Local. For comparisons inside one
  // run: a benchmark's variants without the thread beside those with it.
  void pause_progress_thread(bool pause);
  // "progress processes: ranks 1, 3 (1 per node; threshold 4096 B, idle
  // yield); progress thread: off" for summaries and provenance.
  std::string progress_description() const;

  Team& world() { return *world_; }
  // The application units on my node (real or emulated).
  Team& node() { return *node_; }
  const NodeMap& node_map() const { return nodes_; }
  const CommSettings& settings() const { return settings_; }

  // A live team by id (global pointers name their team by id); Error
  // when it does not exist.
  Team& team(int id) const;

 private:
  void start_progress(MPI_Comm comm, const std::vector<int>& node_of, const std::vector<std::string>& hosts);
  // The state of every layer (runtime/runtime_state.hpp), attached for the
  // layers below while the runtime lives.
  struct State;
  std::unique_ptr<State> state_;
  CommSettings settings_;
  NodeMap nodes_;
  std::unique_ptr<Team> world_;
  std::unique_ptr<Team> node_;
  bool server_ = false;
  MPI_Comm app_comm_ = MPI_COMM_NULL;
  std::vector<int> app_ranks_, server_ranks_;
  std::vector<int> bound_cpus_;
  std::string binding_;
};

}  // namespace locus
