// locus::run, the life of a process: MPI and Kokkos start, the command
// line, the deck read on rank 0 and broadcast, the runtime, the app, the
// error handling and the end.
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>

#include "app/kokkos_start.hpp"
#include "app/run_parts.hpp"
#include "io/reaper.hpp"
#include "locus/app.hpp"
#include "locus/async.hpp"
#include "locus/console.hpp"
#include "locus/cpu.hpp"
#include "locus/io.hpp"
#include "locus/kokkos.hpp"
#include "locus/version.hpp"
#include "locus/wait.hpp"

namespace locus {

namespace {

using namespace detail;

// Starts Kokkos. A --kokkos-* option Kokkos does not take, --kokkos-help
// and --machine end the process here: then Kokkos and MPI are finalized
// and the exit status returned.
std::optional<int> start_kokkos_or_finish(const AppInfo& app, const std::vector<std::string>& kokkos_args,
                                          bool machine, int rank, int size) {
  const KokkosStart ks = start_kokkos(app.name, kokkos_args, rank);
  if (ks.error.empty() && !ks.help && !machine) return std::nullopt;
  if (!ks.error.empty() && rank == 0) {
    std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), ks.error.c_str());
    std::fprintf(stderr, "try '%s --kokkos-help'\n", app.name.c_str());
  }
  if (ks.error.empty() && !ks.help) print_machine(app, rank, size);
  Kokkos::finalize();
  MPI_Finalize();
  return ks.error.empty() ? 0 : 2;
}

// Kokkos, then MPI, end; returns STATUS.
int finish(int status) {
  Kokkos::finalize();
  if (detail::output_abandoned()) {
    // An output whose write failed could not be closed (HDF5 would hang in
    // mismatched collectives); HDF5's MPI_Finalize hook would try again and
    // hang. Every rank knows (the failure was collective): end here.
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(status == 0 ? 1 : status);
  }
  MPI_Finalize();
  return status;
}

}  // namespace

Context::Context(const AppInfo& app, int argc, char** argv, bool quiet, bool summary_json)
    : app_(&app), quiet_(quiet), summary_json_(summary_json) {
  yielding::comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  for (int i = 0; i < argc; ++i) {
    if (i) command_line_ += ' ';
    command_line_ += argv[i];
  }
}

// The deck is loaded: --print-config, or the run.
bool Context::show_progress() const {
  return rank_ == 0 && !quiet_ && stderr_is_terminal();
}

int Context::run_deck(const std::string& deck, bool print_config, const std::function<int(Context&)>& main) {
  check_output_keys(comm_, config_);
  run_name_ = config_.string("name").empty() ? stem_of(deck) : config_.string("name");
  if (print_config) {
    if (rank_ == 0) std::fputs(config_.yaml().c_str(), stdout);
    return 0;
  }
  RunSignals* signals = RunSignals::current();
  if (signals) signals->start_status(config_);
  const int status = run_app(main);
  if (signals) signals->complete_status(status);
  return status;
}

// The runtime over the run's ranks; a progress process serves, an
// application unit runs `main`, which sees the application units only.
int Context::run_app(const std::function<int(Context&)>& main) {
  CommSettings settings;
  collectively(comm_, [&] { settings = comm_settings(config_); });
  Runtime runtime(comm_, settings);
  if (runtime.is_server()) return runtime.serve();
  MPI_Comm all = comm_;
  comm_ = runtime.app_comm();
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  runtime_ = &runtime;
  struct Restore {  // the run's own communicator again, also when main throws
    Context& c;
    MPI_Comm all;
    ~Restore() {
      c.runtime_ = nullptr;
      c.comm_ = all;
      MPI_Comm_rank(all, &c.rank_);
      MPI_Comm_size(all, &c.size_);
    }
  } restore{*this, all};
  return main(*this);
}

int run(int argc, char** argv, const AppInfo& app, const std::function<int(Context&)>& main) {
  // The output watcher rank 0 starts (reaper.cpp): no MPI, no deck.
  if (argc == 4 && std::strcmp(argv[1], "--locus-reap-output") == 0)
    return detail::reap_output(argv[2], argv[3]);
  detail::set_reaper_capable();
  passive_wait_if_oversubscribed(argc, argv);
  int provided = 0;
  prepare_mpi_environment();
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  RunSignals signals(app.name, rank);
  // A bad LOCUS_CPU_HIDE / LOCUS_CPU_CACHE (locus/cpu.hpp): one message, every
  // rank ends (the variables may differ between ranks: agree first).
  {
    const std::string& cpu_error = cpu::features().error;
    int bad = cpu_error.empty() ? 0 : 1, any = 0;
    locus::yielding::allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
      int first = bad ? rank : size, who = 0;
      locus::yielding::allreduce(&first, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (rank == who) std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), cpu_error.c_str());
      MPI_Finalize();
      return 2;
    }
  }

  SplitArgs split = split_kokkos_args(argc, argv);
  CommandLine cl = parse_args(static_cast<int>(split.rest.size()) - 1, split.rest.data());
  const bool kokkos_help = has_option(split.kokkos, "--kokkos-help");
  if (kokkos_help && cl.error == "no deck given") cl.error.clear();
  if (cl.help || cl.version || cl.print_schema || !cl.error.empty()) {
    const int status = answer_without_deck(app, cl, rank);
    MPI_Finalize();
    return status;
  }
  if (const std::optional<int> status = start_kokkos_or_finish(app, split.kokkos, cl.machine, rank, size))
    return *status;
  int status = 1;
  {
    Context ctx(app, argc, argv, cl.quiet, cl.summary_json);
    try {
      ctx.config_ = load_everywhere(ctx.comm_, app, cl);
      status = ctx.run_deck(cl.deck, cl.print_config, main);
    } catch (const CollectiveError& e) {
      // Errors the runtime raises about a deck key get the key's place.
      std::string msg = e.what();
      const std::string key = "runtime.progress.processes_per_node";
      if (msg.rfind(key + ": ", 0) == 0) msg = ctx.config_.locate(key) + msg.substr(key.size());
      if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), msg.c_str());
      signals.drop_status();
      status = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: error on rank %d: %s\n", app.name.c_str(), rank, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_free(&ctx.comm_);
  }
  return finish(status);
}

}  // namespace locus
