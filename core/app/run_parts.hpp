#pragma once
// Internal: the pieces of locus::run (app/run.cpp): the command line, the
// deck, the run's status file and signals, the machine descriptor.
#include <mpi.h>

#include <string>
#include <vector>

#include "locus/app.hpp"
#include "locus/config.hpp"

namespace locus::detail {

struct CommandLine {
  std::string deck;
  std::vector<std::string> overrides;
  bool quiet = false;
  bool help = false;
  bool version = false;
  bool print_config = false;
  bool print_schema = false;
  bool machine = false;
  bool summary_json = false;
  std::string error;
};

// command_line.cpp: the options of every app; --help, --version,
// --print-schema or a command-line error answered by rank 0 (returns the
// exit status).
CommandLine parse_args(int argc, char** argv);
void print_usage(const AppInfo& app, bool full);
int answer_without_deck(const AppInfo& app, const CommandLine& cl, int rank);

// deck.cpp: rank 0 reads the deck and broadcasts it, every rank checks it
// (a bad deck is the same CollectiveError everywhere); the output keys
// checked before any work; a path's file stem.
Config load_everywhere(MPI_Comm comm, const AppInfo& app, const CommandLine& cl);
void check_output_keys(MPI_Comm comm, const Config& c);
std::string stem_of(const std::string& path);

// run_status.cpp: <output.dir>/<output.name>.status (rank 0) and the
// SIGTERM/SIGINT handlers that record a signal in it.
void install_signal_handlers(const std::string& app, int rank);
void start_status(const Config& c, int rank);
void complete_status(int status);
void drop_status();

// machine.cpp: --machine, the machine descriptor and STREAM triad of every
// rank at once, as YAML (rank 0 prints).
void print_machine(const AppInfo& app, int rank, int size);

}  // namespace locus::detail
