#pragma once
// locus::run: the one entry point of every locus app.
//
// It initialises MPI (MPI_THREAD_MULTIPLE requested) and Kokkos, parses the
// command line, reads the deck on rank 0, broadcasts it and checks it on
// every rank against the app's schema, calls the app, and turns errors into
// a clean exit: a CollectiveError is printed once and every rank returns 1;
// any other Error is printed by the rank that raised it and aborts the job,
// so nothing ever hangs.
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "locus/config.hpp"
#include "locus/error.hpp"
#include "locus/runtime.hpp"

namespace locus {

struct AppInfo {
  std::string name;         // e.g. "heat3d"; also the deck's top section
  std::string description;  // one line for --help
  Schema schema;            // app keys plus add_common_keys()
};

// Keys every app has: name, output.*, runtime.node_size, comm.locality,
// comm.check.
void add_common_keys(Schema& schema, const std::string& app_name);

// What the app gets from the runtime.
class Context {
 public:
  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const Config& config() const { return config_; }
  const AppInfo& app() const { return *app_; }
  // The run's name: deck key `name`, else the deck's file stem.
  const std::string& run_name() const { return run_name_; }
  // --quiet: no progress line.
  bool quiet() const { return quiet_; }
  // --summary json: the final summary as JSON instead of YAML.
  bool summary_json() const { return summary_json_; }
  // Processor name of every rank (index = rank).
  const std::vector<std::string>& node_names() const { return runtime_->node_map().hosts; }
  const std::string& command_line() const { return command_line_; }
  // The one-sided core: node map, world team, segments.
  Runtime& runtime() const { return *runtime_; }

 private:
  friend int run(int, char**, const AppInfo&, const std::function<int(Context&)>&);
  // run's steps: the run's own communicator, name and command line; the
  // deck's run (the runtime, then the app or a progress process's loop).
  Context(const AppInfo& app, int argc, char** argv, bool quiet, bool summary_json);
  int run_deck(const std::string& deck, bool print_config, const std::function<int(Context&)>& main);
  int run_app(const std::function<int(Context&)>& main);
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  Config config_;
  const AppInfo* app_ = nullptr;
  std::string run_name_;
  bool quiet_ = false;
  bool summary_json_ = false;
  std::string command_line_;
  Runtime* runtime_ = nullptr;
};

// The core's settings from the common keys (runtime.node_size or env
// LOCUS_NODE_SIZE, comm.locality, comm.check).
CommSettings comm_settings(const Config& config);

// Call before MPI_Init (locus::run does). With Open MPI it selects the
// one-sided components that work for locus's windows (OMPI_MCA_osc=sm,ucx:
// Open MPI 4.1's default selection fails MPI_Win_create and
// MPI_Win_create_dynamic on one-process communicators); an OMPI_MCA_osc
// already set wins. Nothing with other MPI libraries.
void prepare_mpi_environment();

// Runs `main` as the app `app`; returns the process exit status.
int run(int argc, char** argv, const AppInfo& app, const std::function<int(Context&)>& main);

// Collective: when `ok` is false on any rank, every rank throws the same
// CollectiveError carrying the message of the lowest failing rank.
void collective_require(MPI_Comm comm, bool ok, const std::string& msg);

// The thread support MPI_Init_thread gave this process.
int mpi_thread_level();
// Throws Error naming `feature` when the MPI library's thread support is
// below `needed` (e.g. MPI_THREAD_MULTIPLE for a progress thread).
void require_thread_level(int needed, const std::string& feature, int provided = mpi_thread_level());
std::string thread_level_name(int level);

// Throws a CollectiveError on every rank if fn() throws Error on any rank.
void collectively(MPI_Comm comm, const std::function<void()>& fn);

}  // namespace locus
