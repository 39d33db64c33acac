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

#include "locus/collective.hpp"
#include "locus/config.hpp"
#include "locus/error.hpp"
#include "locus/mpi_env.hpp"
#include "locus/runtime.hpp"
#include "locus/settings.hpp"

namespace locus {

struct AppInfo {
  std::string name;         // e.g. "heat3d"; also the deck's top section
  std::string description;  // one line for --help
  Schema schema;            // app keys plus add_common_keys()
};

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
  // Whether this rank shows a progress line: rank 0, not --quiet, stderr a
  // terminal.
  bool show_progress() const;
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

// Runs `main` as the app `app`; returns the process exit status.
int run(int argc, char** argv, const AppInfo& app, const std::function<int(Context&)>& main);

}  // namespace locus
