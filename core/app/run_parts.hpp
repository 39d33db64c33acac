#pragma once
// Internal: the pieces of locus::run (app/run.cpp): the command line, the
// deck, the run's status file and signals, the machine descriptor.
#include <mpi.h>

#include <csignal>
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

// run_status.cpp: the SIGTERM/SIGINT handlers and the run's status file,
// <output.dir>/<output.name>.status (rank 0), which records a signal.
// locus::run owns the record for the whole run; the handlers reach it
// through one process-wide pointer (current()), and without one they
// only remove the unfinished output and exit.
class RunSignals {
 public:
  // Installs the handlers and points them at this record.
  RunSignals(const std::string& app, int rank);
  ~RunSignals();
  RunSignals(const RunSignals&) = delete;
  RunSignals& operator=(const RunSignals&) = delete;
  // The record of the running run, or nullptr.
  static RunSignals* current() noexcept;
  // Rank 0: the status file says "running" (creating output.dir if
  // needed); from now on a signal is recorded in it.
  void start_status(const Config& c);
  // Rank 0: the app returned `status`.
  void complete_status(int status);
  // Rank 0, after a collective error: the status file as it was before
  // this run (another run's, whose output this run may have been refused
  // for), or none (nor the directory this run created for it, when empty):
  // an error leaves no file behind and takes none away.
  void drop_status();
  // The handler's part (async-signal-safe): the status file and the message.
  void on_signal(int sig) const noexcept;

 private:
  int rank_ = 0;
  char msg_[2][256]{};  // SIGTERM's, SIGINT's
  // What the handler writes: the status file, its temporary, its texts.
  char status_path_[4096]{}, sig_tmp_[4096]{}, sig_text_[2][128]{};
  volatile std::sig_atomic_t active_ = 0;  // a signal is recorded only while the run runs
  std::string path_;                       // empty: none (not rank 0, or no run)
  std::string before_, mine_;              // the status file before this run, and what it wrote
  std::string created_dir_;                // output.dir, when this run created it
};

// machine.cpp: --machine, the machine descriptor and STREAM triad of every
// rank at once, as YAML (rank 0 prints).
void print_machine(const AppInfo& app, int rank, int size);

}  // namespace locus::detail
